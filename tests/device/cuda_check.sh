#!/bin/sh
# cuda_check.sh - tinspect's CUDA paths against a real GPU and PyTorch 2.x, in one run.
#
# Usage (on a machine with an NVIDIA GPU and a python3 that has torch with CUDA):
#     sh tests/device/cuda_check.sh [TINSPECT] [OUTDIR]
#
#  1. materialize --device cuda --verify: every fill policy on a description,
#     and checkpoints' own bytes, uploaded and read back (checksums compared);
#  2. stats_conformance.py --device cuda: inspect --device cuda's statistics
#     against torch.load(map_location='cuda') computing on the GPU;
#  3. memory_conformance.py --device cuda: `tinspect memory --device cuda`
#     against torch.cuda.max_memory_allocated for the memory corpus (default
#     bindings, then --full), written to OUTDIR/memory_cuda*.json so that
#     `memory_conformance.py --measured FILE` can compare later builds with
#     the same measurements on a machine without a GPU.
# Prints one line per check; exits 1 if any failed.
set -u
BIN=${1:-./tinspect}
OUTDIR=${2:-${OUT:-/tmp/tinspect-cuda-check}}
mkdir -p "$OUTDIR"
PY=${PYTHON:-python3}
fails=0
check() { # NAME CMD...
	name=$1
	shift
	if "$@" >"$OUTDIR/last.log" 2>&1; then
		echo "ok   $name"
	else
		echo "FAIL $name: $(tail -n 3 "$OUTDIR/last.log" | tr '\n' ' ')"
		fails=$((fails + 1))
	fi
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
"$PY" -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())' 2>&1

for fill in empty zeros ones full:0.5 rand randn uniform:-1,1 normal:0,0.02 arange init; do
	check "materialize resnet18.json --fill $fill --device cuda --verify" \
		"$BIN" materialize fixtures/models/resnet18.json --fill "$fill" --device cuda --verify -q
done
for f in fixtures/resnet18_small.pt fixtures/views.pt fixtures/stats.pt fixtures/training_ckpt.pt; do
	check "materialize $f --device cuda --verify" "$BIN" materialize "$f" --device cuda --verify -q
done
check "materialize resnet18.json --device cuda:1 fails (one GPU)" \
	sh -c '! "$0" materialize fixtures/models/resnet18.json --fill zeros --device cuda:1 -q' "$BIN"

"$PY" tests/conformance/stats_conformance.py "$BIN" --device cuda || fails=$((fails + 1))

PYTHONUNBUFFERED=1 "$PY" tests/conformance/memory_conformance.py "$BIN" --device cuda \
	--json "$OUTDIR/memory_cuda.json" || fails=$((fails + 1))
PYTHONUNBUFFERED=1 "$PY" tests/conformance/memory_conformance.py "$BIN" --device cuda --full \
	--json "$OUTDIR/memory_cuda_full.json" || fails=$((fails + 1))

echo "cuda check: $fails failed"
[ "$fails" -eq 0 ]
