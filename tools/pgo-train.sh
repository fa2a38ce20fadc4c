#!/bin/sh
# tools/pgo-train.sh - the training run of the profile-guided build (Makefile: PGO).
#
#   sh tools/pgo-train.sh build/pgo/tinspect
#
# Runs the instrumented program as users run it most: inspect (a table, --json)
# and scan of the bundled checkpoints (torch zip, TorchScript, legacy, safetensors;
# the 1,200-tensor big_index.pt several times, a large state dict's share). The
# counts it leaves (build/prof/FILE.gcda) tell gcc what is hot. Only the
# fixtures are read, never the benchmark's files, and a missing one stops it:
# a renamed fixture must not quietly shrink the training. What it does not run (run,
# memory, shapes, ...) is compiled as without a profile, as it was before.
# Exits 1 when the program cannot run at all; a command's own exit status (a
# scan's verdict) is not judged. Runs without address randomisation where
# setarch can turn it off: a few counts follow where memory lands, and with the
# same counts each time an edit recompiles only what it changed.
set -u
t=${1:?usage: pgo-train.sh PROGRAM}
if [ -z "${PGO_TRAIN_FIXED:-}" ] && setarch -R true 2>/dev/null; then
	PGO_TRAIN_FIXED=1 exec setarch -R sh "$0" "$@"
fi
f=fixtures
set -- $f/big_index.pt $f/resnet18_small.pt $f/long_binget.pt $f/training_ckpt.pt \
	$f/module_zip.pt $f/legacy_module.pt $f/legacy_state_dict.pt $f/dtypes.pt \
	$f/jit_cnn_traced.pt $f/diff/views.safetensors
for p; do
	[ -f "$p" ] || { echo "pgo-train.sh: $p is missing" >&2; exit 1; }
done
"$t" --version >/dev/null || exit 1
for i in 1 2 3 4 5 6 7 8; do
	"$t" $f/big_index.pt --json >/dev/null
done
for p; do
	"$t" "$p" >/dev/null 2>&1
	"$t" "$p" --json >/dev/null 2>&1
	"$t" scan -q "$p" >/dev/null 2>&1
done
exit 0
