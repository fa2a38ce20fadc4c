#!/bin/sh
# bench/quick.sh - a guard against speed regressions, for CI: at most a minute.
#
#   sh bench/quick.sh [./tinspect]
#
# Measures, whole processes taking turns, medians (bench/measure_quick.py):
# start-up against /bin/true, inspect --json and scan of a checkpoint of 20,000
# small tensors against unzip (the pickle; the zip directory), shapes of
# ResNet-50 and memory of GPT-2 small against tinspect's own start-up. Each is
# held to its goal with a slack of 2: it fails only when a figure is more than
# twice past its goal (a regression, not a noisy timer). `make bench` holds the
# same figures to the goals themselves. Exits 0 or 1; 2 when it cannot run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tinspect=${1:-./tinspect}
if [ ! -x "$tinspect" ]; then
	echo "quick bench: $tinspect is not an executable (run make first)" >&2
	exit 2
fi
for tool in python3 unzip; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "quick bench: $tool is not installed" >&2
		exit 2
	fi
done
exec python3 "$here/measure_quick.py" --tinspect "$tinspect" --cache "${BENCH_CACHE:-$here/.cache}"
