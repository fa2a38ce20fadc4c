#!/bin/sh
# fuzz/replay.sh - the harnesses without libFuzzer, on the crash fixtures and
# on the fixtures themselves (make fuzz-replay, for make asan).
#
# usage: sh fuzz/replay.sh PREFIX      (make passes build/asan/fuzz-replay-)
#
# PREFIXHARNESS is fuzz/replay.c linked with that harness under ASan and
# UBSan. Each harness gets every fixtures/crashes/HARNESS-* (inputs that once
# crashed it) and the fixtures its corpus is seeded from, read as they are
# (the pickle harness has no plain-file fixtures: only its crash files).
# Prints 'N passed, M failed' (one per harness) and exits 1 when any failed.

set -u
if [ $# -ne 1 ]; then
	echo "usage: sh fuzz/replay.sh PREFIX" >&2
	exit 2
fi
case $1 in
/*) prefix=$1 ;;
*) prefix=$(pwd)/${1#./} ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 2
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export UBSAN_OPTIONS

log=$(mktemp "${TMPDIR:-/tmp}/tinspect-replay.XXXXXX") || exit 2

# inputs HARNESS: the fixture files for a harness, one per line.
inputs() {
	case $1 in
	checkpoint) ls fixtures/*.pt fixtures/broken/* ;;
	safetensors) find fixtures/safetensors -type f ! -name '*.py' ! -name '*.md' | sort ;;
	model) ls fixtures/models/*.json tests/cli/models/*.json ;;
	scan) ls fixtures/*.pt fixtures/broken/* fixtures/malicious/* ;;
	dcp) ls fixtures/dcp*/.metadata fixtures/dcp_broken/*/.metadata ;;
	gguf) find fixtures/gguf -name '*.gguf' | sort ;;
	npy) ls fixtures/npy/*.npy fixtures/npy/*.npz fixtures/npy/broken/* ;;
	esac
	for f in fixtures/crashes/"$1"-*; do
		[ -f "$f" ] && echo "$f"
	done
}

# A harness that crashes exits without removing its scratch folder
# (fuzz_common.h): remove those of processes that are gone.
sweep_scratch() {
	for d in /tmp/tinspect-fuzz-*; do
		[ -d "$d" ] || continue
		kill -0 "${d##*-}" 2>/dev/null || rm -rf "$d"
	done
}
trap 'rm -f "$log"; sweep_scratch' EXIT

passed=0
failed=0
for h in pickle checkpoint safetensors model scan dcp gguf npy http; do
	bin=$prefix$h
	if [ ! -x "$bin" ]; then
		echo "FAIL $h: no $bin"
		failed=$((failed + 1))
		continue
	fi
	files=$(inputs "$h")
	if [ -z "$files" ]; then
		passed=$((passed + 1))
		continue
	fi
	n=$(echo "$files" | wc -l | tr -d ' ')
	# shellcheck disable=SC2086 # fixture names have no blanks
	if "$bin" $files >"$log" 2>&1; then
		echo "replay: $h: $n files"
		passed=$((passed + 1))
	else
		last=$(grep '^replay ' "$log" | tail -1)
		echo "FAIL $h: ${last#replay }"
		grep -vE '^replay ' "$log" | head -60 | sed 's/^/  /'
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
