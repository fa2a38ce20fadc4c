#!/usr/bin/env bash
# Benchmark tinspect against unzip and torch.load(map_location='meta'), then
# `tinspect shapes` against PyTorch's meta-device forward of ResNet-50, and
# `tinspect memory` against a measured PyTorch training step.
#
#   bash bench/bench.sh [./tinspect]         (make bench)
#
# Environment: PYTHON (interpreter with torch; default /usr/bin/python3),
#              RUNS (best-of count; default 5),
#              BENCH_CACHE (default bench/.cache, git-ignored).
# The checkpoints are generated once with torch and cached; without torch
# they cannot be generated, and the script says so and skips that part. The
# model descriptions for `shapes` need only the standard library
# (bench/gen_models.py), so that part always runs, less the PyTorch side.
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
checkpoints=1
if [ $missing = 1 ]; then
	if [ $have_torch = 0 ]; then
		echo "bench: the benchmark checkpoints are not cached in $cache and cannot be"
		echo "bench: generated without torch (set PYTHON=...); checkpoint benchmark not run"
		checkpoints=0
	else
		"$PYTHON" "$here/gen.py" "$cache" || exit 1
	fi
fi

echo "tinspect: $tinspect; $(nproc 2>/dev/null || echo '?') cores; best of $RUNS runs; output to /dev/null"
status=0
# Every figure held to a goal is recorded here (bench/goals.py) and shown in one
# table at the end; a missed goal makes the run exit 1.
BENCH_GOALS=$(mktemp) || exit 2
export BENCH_GOALS
trap 'rm -f "$BENCH_GOALS"' EXIT
load_before=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
"$mpy" "$here/measure_startup.py" --tinspect "$tinspect" || status=1
extra=
[ $have_torch = 0 ] && extra=--no-torch
if [ $checkpoints = 1 ]; then
	for f in $files; do
		"$mpy" "$here/measure.py" --tinspect "$tinspect" --python "$PYTHON" \
			--runs "$RUNS" $extra "$f" || status=1
	done
fi

# shapes: descriptions are written (or found up to date) by gen_models.py
"$mpy" "$here/gen_models.py" "$cache" >/dev/null || exit 1
"$mpy" "$here/measure_shapes.py" --tinspect "$tinspect" --python "$PYTHON" \
	--runs "$RUNS" $extra "$cache" || status=1
"$mpy" "$here/measure_check.py" --tinspect "$tinspect" --python "$PYTHON" --runs "$RUNS" $extra "$cache" || status=1  # check: ResNet-50 against torch.load + load_state_dict

# memory: mlp100.json (gen_models.py) and fixtures/models/gpt2_small.json against
# a measured PyTorch training step on the CPU (and, for --fit, a computed search)
"$mpy" "$here/measure_memory.py" --tinspect "$tinspect" --python "$PYTHON" \
	--runs "$RUNS" $extra "$cache" || status=1

# a 70B Hugging Face config.json (fixtures/hf/Llama-3.1-70B): describe, and memory
# (describe + prefill + decode step) under 100 ms
"$mpy" "$here/measure_hf.py" --tinspect "$tinspect" --runs "$RUNS" "$cache" || status=1

# remote reads over nginx on localhost: a sharded safetensors model (requests and
# bytes a shard) and a 3 GB pytorch_model.bin (requests), each against one curl
# making the same requests (skipped, saying so, without nginx or curl)
"$mpy" "$here/measure_remote.py" --tinspect "$tinspect" --python "$PYTHON" --runs "$RUNS" "$cache" || status=1

# convert (vit_l_16.pt from gen.py; skipped, saying so, when it is missing) and the
# random fills randn and rand against torch.randn and torch.rand (need no checkpoint)
"$mpy" "$here/measure_convert.py" --tinspect "$tinspect" --python "$PYTHON" \
	--runs "$RUNS" $extra "$cache" || status=1
"$mpy" "$here/measure_diff.py" --tinspect "$tinspect" --python "$PYTHON" --runs "$RUNS" $extra "$cache" || status=1
"$mpy" "$here/measure_stats.py" --tinspect "$tinspect" --python "$PYTHON" --runs "$RUNS" $extra "$cache" || status=1  # inspect --device cpu on vit_l_16.pt against torch.load + the same statistics
"$mpy" "$here/measure_run.py" --tinspect "$tinspect" --python "$PYTHON" --runs 3 $extra || status=1  # run: ResNet-50 and GPT-2 forward against PyTorch CPU

# The goals, one table. The run is kept as bench/results.jsonl (its first lines
# say the machine and its load) and README.md's speed table is rewritten from it.
load_after=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
results=$here/results.jsonl
{
	echo "# $(date -u +%Y-%m-%d), $(nproc 2>/dev/null || echo '?') cores, load average $load_before before and $load_after after, best of $RUNS runs$([ $have_torch = 0 ] && echo ', PyTorch side skipped')"
	cat "$BENCH_GOALS"
} >"$results.tmp" && mv "$results.tmp" "$results"
echo
echo "== goals (load average $load_before before, $load_after after)"
"$mpy" "$here/goals.py" table "$results" || status=1
if [ -f "$here/../README.md" ] && "$mpy" "$here/goals.py" readme "$results" "$here/../README.md"; then
	echo "bench: README.md's speed table rewritten from this run ($results)"
fi
[ $status = 0 ] || echo "bench: a goal was missed or a measurement failed"
exit $status
