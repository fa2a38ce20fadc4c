#!/usr/bin/env bash
# Benchmark tinspect against unzip and torch.load(map_location='meta').
#
#   bash bench/bench.sh [./tinspect]         (make bench)
#
# Environment: PYTHON (interpreter with torch; default /usr/bin/python3),
#              RUNS (best-of count; default 5),
#              BENCH_CACHE (default bench/.cache, git-ignored).
# The checkpoints are generated once with torch and cached; without torch
# they cannot be generated, and the script says so and exits 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tinspect=${1:-./tinspect}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-5}
cache=${BENCH_CACHE:-$here/.cache}

if [ ! -x "$tinspect" ]; then
	echo "bench: $tinspect is not an executable (run make first)" >&2
	exit 2
fi
# measure.py needs only the standard library: any python3 will do.
if command -v "$PYTHON" >/dev/null 2>&1; then
	mpy=$PYTHON
else
	mpy=python3
fi

have_torch=1
if ! "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
	have_torch=0
	echo "bench: torch is not importable with $PYTHON: skipping the PyTorch side"
fi

files=
for f in vit_l_16.pt small20k.pt; do
	files="$files $cache/$f"
done
missing=0
for f in $files; do [ -f "$f" ] || missing=1; done
if [ $missing = 1 ]; then
	if [ $have_torch = 0 ]; then
		echo "bench: the benchmark checkpoints are not cached in $cache and cannot be"
		echo "bench: generated without torch (set PYTHON=...); benchmark not run"
		exit 0
	fi
	"$PYTHON" "$here/gen.py" "$cache" || exit 1
fi

echo "tinspect: $tinspect; $(nproc 2>/dev/null || echo '?') cores; best of $RUNS runs; output to /dev/null"
status=0
for f in $files; do
	extra=
	[ $have_torch = 0 ] && extra=--no-torch
	"$mpy" "$here/measure.py" --tinspect "$tinspect" --python "$PYTHON" \
		--runs "$RUNS" $extra "$f" || status=1
done
exit $status
