#!/bin/sh
# fuzz/run.sh - replay the crash fixtures, then fuzz each harness for a while.
#
# usage: sh fuzz/run.sh HARNESS...      (make fuzz: pickle checkpoint safetensors model scan)
#
# Needs build/fuzz/fuzz_HARNESS (the libFuzzer binaries) and the corpora and
# dictionaries of fuzz/seeds.py in build/fuzz/; `make fuzz` makes both.
#
# 1. Every fixtures/crashes/HARNESS-* runs through its harness once: each one
#    is an input that once crashed, and must not any more.
# 2. Each harness fuzzes build/fuzz/corpus/HARNESS/ (new inputs are added
#    there) for FUZZ_SECONDS seconds (default 60; 0 stops after step 1),
#    with the limits below. Its log is build/fuzz/HARNESS.log; a crash,
#    leak, timeout or out-of-memory leaves the input in
#    build/fuzz/crashes/HARNESS-*, and the end of the log (the stack) is
#    printed.
#
# Environment: FUZZ_SECONDS; FUZZ_FLAGS, more libFuzzer flags (-jobs=2,
# -seed=N, -only_ascii=1 ...).
# Exits 1 when a crash fixture still crashes or a harness found something.

set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.." || exit 2

if [ $# -eq 0 ]; then
	echo "usage: sh fuzz/run.sh HARNESS..." >&2
	exit 2
fi
seconds=${FUZZ_SECONDS:-60}
case $seconds in '' | *[!0-9]*)
	echo "fuzz: FUZZ_SECONDS must be a number of seconds, not '$seconds'" >&2
	exit 2
	;;
esac
out=build/fuzz
mkdir -p "$out/crashes"
# A harness aborts on a broken promise; UBSan stops at the first report, with its stack.
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export UBSAN_OPTIONS

for h in "$@"; do
	if [ ! -x "$out/fuzz_$h" ]; then
		echo "fuzz: no $out/fuzz_$h (make fuzz builds it)" >&2
		exit 2
	fi
done

# A harness that crashes exits without removing its scratch folder
# (fuzz_common.h): remove those of processes that are gone.
sweep_scratch() {
	for d in /tmp/tinspect-fuzz-*; do
		[ -d "$d" ] || continue
		kill -0 "${d##*-}" 2>/dev/null || rm -rf "$d"
	done
}
trap sweep_scratch EXIT

# ---- 1. the crash fixtures ----
failed=0
for h in "$@"; do
	n=0
	for f in fixtures/crashes/"$h"-*; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		if ! "$out/fuzz_$h" "$f" >"$out/replay.log" 2>&1; then
			echo "FAIL fixtures: $f still crashes fuzz_$h:"
			grep -E 'ERROR|SUMMARY|runtime error|broken promise|^ *#[0-9]+ ' "$out/replay.log" |
				grep -vE 'fuzzer::|libc\.so|libc_start|nptl|[( ]_start |__sanitizer_print|libFuzzer: deadly' |
				head -25 | sed 's/^/  /'
			failed=$((failed + 1))
		fi
	done
	echo "fuzz: $h: $n crash fixtures replayed"
done
if [ "$failed" -ne 0 ]; then
	echo "fuzz: $failed crash fixtures still crash: fix them before fuzzing for more"
	exit 1
fi

# ---- 2. fuzzing ----
if [ "$seconds" -eq 0 ]; then
	echo "fuzz: FUZZ_SECONDS=0: crash fixtures only"
	exit 0
fi
found=0
for h in "$@"; do
	corpus=$out/corpus/$h
	mkdir -p "$corpus"
	dict=
	[ -f "$out/dict/$h.dict" ] && dict=-dict=$out/dict/$h.dict
	echo "fuzz: $h for ${seconds}s (log: $out/$h.log)"
	# -rss_limit_mb also bounds one malloc (-malloc_limit_mb defaults to it).
	# shellcheck disable=SC2086 # FUZZ_FLAGS and dict are lists of words
	"$out/fuzz_$h" "$corpus" $dict -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
		-artifact_prefix="$out/crashes/$h-" -print_final_stats=1 ${FUZZ_FLAGS:-} >"$out/$h.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		found=$((found + 1))
		echo "FAIL $h: libFuzzer exited $rc; the end of $out/$h.log:"
		grep -vE '^#[0-9]+.*(NEW|REDUCE|pulse|RELOAD)|NEW_FUNC' "$out/$h.log" | tail -60 | sed 's/^/  /'
		echo "  reproduce: $out/fuzz_$h INPUT"
		echo "  minimize: $out/fuzz_$h -minimize_crash=1 -runs=20000 -exact_artifact_path=MIN INPUT"
	else
		# "Done 39233 runs in 21 second(s)", then the last status line: coverage, corpus, speed
		grep -E '^Done [0-9]+ runs' "$out/$h.log" | sed "s/^Done/  $h: nothing found in/"
		grep -E '^#[0-9]+.*DONE' "$out/$h.log" | tail -1 | sed "s/^#[0-9]*[[:space:]]*DONE[[:space:]]*/  $h: /"
	fi
done
if [ "$found" -ne 0 ]; then
	echo "fuzz: $found of $# harnesses found a problem: see above; each input becomes fixtures/crashes/HARNESS-NAME (fuzz/README.md)"
	exit 1
fi
echo "fuzz: $# harnesses ran ${seconds}s each and found nothing"
