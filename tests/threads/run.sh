#!/bin/sh
# tests/threads/run.sh - the commands that do not compute with BLAS start as
# plain C programs: no BLAS (or Fortran runtime) mapped, no libzip (nor the
# libcrypto it links) unless it inflates, no thread but the main one.
#
# usage: sh tests/threads/run.sh TINSPECT
#
# tests/threads/probe.c is built into an LD_PRELOAD library that counts
# pthread_create calls and, at exit, lists the BLAS-like libraries in
# /proc/self/maps. Each command line below (NAME, expected exit, WHAT,
# arguments) runs under it; WHAT is what the probe must report:
#   plain     no thread started, no BLAS or libzip mapped
#   no-blas   no BLAS or libzip mapped (threads allowed)
#   blas      a BLAS mapped: `run` must open one, so a probe that sees
#             nothing fails here instead of passing everything
#   threads   at least one thread started (run --threads 2)
#   zip       libzip mapped: a compressed npz is inflated by it
# Prints 'N passed, M failed' and exits 1 when anything failed.

set -u
set -f # command lines are split into words, never globbed

if [ $# -ne 1 ]; then
	echo "usage: sh tests/threads/run.sh TINSPECT" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/${1#./} ;;
esac
if [ ! -x "$bin" ]; then
	echo "threads: '$1' is not an executable" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
if ! ${CC:-cc} -shared -fPIC -O1 -Wall -Wextra -Werror -o "$tmp/probe.so" "$here/probe.c" -ldl; then
	echo "threads: cannot build the probe" >&2
	exit 2
fi

passed=0
failed=0
while read -r name code what args; do
	case $name in '' | '#'*) continue ;; esac
	rm -f "$tmp/report"
	# shellcheck disable=SC2086 # the arguments are words
	TI_PROBE_OUT="$tmp/report" LD_PRELOAD="$tmp/probe.so" "$bin" $args >"$tmp/out" 2>"$tmp/err"
	rc=$?
	report=$(cat "$tmp/report" 2>/dev/null)
	set -- $report
	threads=${2:-?} maps=${4:-?}
	ok=1
	why=
	if [ "$rc" != "$code" ]; then
		ok=0 why="exit $rc, expected $code: $(head -n 1 "$tmp/err")"
	elif [ -z "$report" ]; then
		ok=0 why="the probe wrote nothing"
	else
		case $what in
		plain) [ "$threads" = 0 ] && [ "$maps" = 0 ] || { ok=0 why="$report"; } ;;
		no-blas) [ "$maps" = 0 ] || { ok=0 why="$report"; } ;;
		blas) [ "$maps" != 0 ] || { ok=0 why="no BLAS mapped: $report"; } ;;
		zip) case $report in *libzip.*) ;; *) ok=0 why="libzip not mapped: $report" ;; esac ;;
		threads) [ "$threads" != 0 ] || { ok=0 why="no thread started: $report"; } ;;
		*) ok=0 why="unknown expectation '$what'" ;;
		esac
	fi
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL $name: $why"
	fi
done <<'CASES'
# NAME            EXIT WHAT     ARGUMENTS
version           0    plain    --version
help              0    plain    --help
inspect           0    plain    inspect fixtures/resnet18_small.pt
inspect_json      0    plain    fixtures/training_ckpt.pt --json
inspect_records   0    plain    fixtures/tied.pt --json --records
inspect_cpu       0    no-blas  fixtures/resnet18_small.pt --device cpu
scan              0    plain    scan fixtures/resnet18_small.pt
scan_dangerous    1    plain    scan fixtures/malicious/checkpoint_hidden_payload.pt
shapes            0    plain    shapes fixtures/models/resnet50.json --bind N=8
params            0    plain    params fixtures/models/gpt2_small.json
memory            0    plain    memory fixtures/models/gpt2_small.json --bind B=1 --bind T=128 --mode train --optimizer adam
memory_fit        0    plain    memory fixtures/models/resnet18.json --mode train --optimizer adam --fit N --device-memory 24GiB
check             0    plain    check tests/cli/models/check_small.json fixtures/check/ok.pt
diff              1    plain    diff fixtures/diff/base.pt fixtures/diff/perturbed.pt
diff_values       1    plain    diff fixtures/diff/base.pt fixtures/diff/perturbed.pt --values
ops               0    plain    ops
ops_glob          0    plain    ops layer_norm*
npz_compressed    0    zip      fixtures/npy/compressed.npz
run_blas          0    blas     run tests/cli/models/conv_seq.json --bind N=2 --bind T=9 --fill ones --input x=ones --threads 1
run_threads       0    threads  run tests/cli/models/conv_seq.json --bind N=2 --bind T=9 --fill ones --input x=ones --threads 2
CASES

# Without libzip, an entry that needs inflating is a one-line error and exit 3
# (unreadable), never a crash: the library is opened only when it is needed.
TINSPECT_LIBZIP=none "$bin" fixtures/npy/compressed.npz >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 3 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "libzip is not loaded" "$tmp/err"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "FAIL npz_without_libzip: exit $rc: $(cat "$tmp/err")"
fi

echo "$passed passed, $failed failed"
[ $failed = 0 ]
