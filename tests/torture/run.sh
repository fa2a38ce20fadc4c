#!/bin/sh
# tests/torture/run.sh - every damaged copy of every fixture must fail cleanly.
#
# usage: sh tests/torture/run.sh TINSPECT
#
# For each fixtures/*.pt and *.ckpt, fixtures/gguf/*.gguf, fixtures/npy/*.npy,
# fixtures/npy/*.npz (and fixtures/training_args*.bin) it writes damaged copies
# (tests/torture/mutate.py, or head/dd when there is no python3): the file cut
# at every length in its first and last 64 bytes and at 40 more; data.pkl cut
# short inside a whole zip; and 20 copies with a few bytes changed, most of
# them inside data.pkl. Each copy goes through `TINSPECT FILE --json` (the
# changed ones also through `--json --records` and the text output with
# `--depth 2 --records`) and through `TINSPECT scan --json`, each killed after
# 10 seconds. The DCP folders fixtures/dcp and fixtures/dcp_v22 are damaged
# one file at a time (dcp_copies: .metadata and each .distcp cut and changed)
# and each copy also goes through `TINSPECT convert --force DIR -o
# OUT.safetensors`, which reads every tensor from its chunks.
#
# tests/torture/runner.c (built here with cc) runs them and judges each run:
# it passes when it exits 0 with a whole document on stdout and nothing but
# warnings on stderr, or exits 3 with exactly one line on stderr that starts
# with 'tinspect: ' (after warnings, if any), or exits 1 refusing a dangerous
# pickle (a damaged global name) in one line; scan may exit 0, 1 or 3, always
# with its JSON report. Anything else fails: a sanitizer report, 4 (an I/O or
# resource error from a damaged byte), the timeout, a signal.
#
# Environment: TORTURE_SEED (default 1) picks the damage; TORTURE_JOBS (default:
# the number of CPUs) runs fixtures in parallel; TORTURE_KEEP=DIR copies the
# inputs that fail there; PYTHON names the interpreter for mutate.py (PYTHON=none:
# head and dd only); CC the compiler for the runner (default cc).
# TORTURE_SAMPLE=N runs the CLI on one run in N (the same ones for the same
# seed), and TORTURE_REPLAY=PREFIX gives every copy to the in-process fuzz
# harnesses PREFIXcheckpoint and PREFIXscan (zips), PREFIXgguf, PREFIXnpy and
# PREFIXdcp (each .metadata), one process for all copies of a fixture: make
# asan uses both, because the sanitized program takes ~50-100 ms to start.
# Prints 'N passed, M failed' and exits 1 when anything failed.

set -u

if [ $# -ne 1 ]; then
	echo "usage: sh tests/torture/run.sh TINSPECT" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/${1#./} ;;
esac
if [ ! -x "$bin" ]; then
	echo "torture: '$1' is not an executable" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2

seed=${TORTURE_SEED:-1}
jobs=${TORTURE_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
case $jobs in '' | *[!0-9]* | 0) jobs=2 ;; esac
[ "$jobs" -gt 8 ] && jobs=8
sample=${TORTURE_SAMPLE:-1}
case $sample in '' | *[!0-9]* | 0) sample=1 ;; esac
sample_args=
[ "$sample" -gt 1 ] && sample_args="$sample $seed"

python=
[ "${PYTHON:-}" = none ] || for p in "${PYTHON:-}" /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
	if [ -n "$p" ] && [ -x "$p" ]; then
		python=$p
		break
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-torture.XXXXXX") || exit 2
shards=
# Background jobs of a script ignore SIGINT, so stop the shards by hand.
trap 'rm -rf "$work"' EXIT
trap 'kill $shards 2>/dev/null; exit 130' INT
trap 'kill $shards 2>/dev/null; exit 143' TERM

# ---- making damaged copies without python: head and dd ----

# cut_lengths SIZE: every length below 64, every length in the last 64, 40 spread.
cut_lengths() {
	awk -v n="$1" 'BEGIN {
		for (i = 0; i < 64 && i < n; i++) print i
		for (i = n - 64; i < n; i++) if (i >= 64) print i
		for (i = 1; i <= 40; i++) print int(n * i / 41)
	}' | sort -n -u
}

# data_pkl_range FILE: "START END" of the first record's payload when it is */data.pkl
# (torch.save writes data.pkl first), ending at the next zip signature.
data_pkl_range() {
	od -An -v -tu1 "$1" | awk '
		{ for (i = 1; i <= NF; i++) b[n++] = $i }
		n > 65536 { exit }
		END {
			if (n < 30 || b[0] != 80 || b[1] != 75 || b[2] != 3 || b[3] != 4) exit
			nlen = b[26] + 256 * b[27]; xlen = b[28] + 256 * b[29]
			name = ""
			for (i = 30; i < 30 + nlen && i < n; i++) name = name sprintf("%c", b[i])
			if (name !~ /\/data\.pkl$/) exit
			start = 30 + nlen + xlen
			for (i = start; i + 3 < n; i++)
				if (b[i] == 80 && b[i+1] == 75 && ((b[i+2] == 7 && b[i+3] == 8) || (b[i+2] == 3 && b[i+3] == 4) || (b[i+2] == 1 && b[i+3] == 2))) break
			print start, i
		}'
}

mutate_without_python() {
	src=$1 dest=$2
	stem=$(basename "$src" .pt)
	size=$(wc -c <"$src" | tr -d ' ')
	for n in $(cut_lengths "$size"); do
		head -c "$n" "$src" >"$dest/$stem.cut.$n.pt"
	done
	range=$(data_pkl_range "$src")
	[ -n "$range" ] || range="0 $size"
	# k offset value: copies 0-4 anywhere, 5-19 inside data.pkl.
	awk -v seed="$seed" -v stem="$stem" -v size="$size" -v range="$range" 'BEGIN {
		split(range, r, " ")
		s = 0; for (i = 1; i <= length(stem); i++) s = s * 31 + index("abcdefghijklmnopqrstuvwxyz0123456789_", substr(stem, i, 1))
		srand(seed * 7919 + s % 1000003)
		for (k = 0; k < 20; k++) {
			lo = k < 5 ? 0 : r[1]; hi = k < 5 ? size : r[2]
			if (hi <= lo) { lo = 0; hi = size }
			flips = 1 + int(rand() * 4)
			for (f = 0; f < flips; f++) print k, lo + int(rand() * (hi - lo)), int(rand() * 256)
		}
	}' | while read -r k offset value; do
		out=$dest/$stem.flip.$k.pt
		[ -f "$out" ] || cp "$src" "$out"
		# The byte as an octal escape in the format: the only portable way to print any byte.
		# shellcheck disable=SC2059
		printf "\\$(printf %03o "$value")" | dd of="$out" bs=1 seek="$offset" conv=notrunc 2>/dev/null
	done
}

# ---- DCP folders: each file of the folder damaged in turn, with head and dd ----

# dcp_copies SRC DEST: damaged copies of the DCP folder SRC, each a folder
# DEST/STEM.FILE.cut.N or DEST/STEM.FILE.flip.K: .metadata cut at every
# length of cut_lengths and 20 times with a few bytes changed; each data
# file cut at 40 lengths and 10 times with bytes changed.
dcp_copies() {
	src=$1 dest=$2
	stem=$(basename "$src")
	for part in "$src"/.metadata "$src"/*.distcp; do
		name=$(basename "$part")
		size=$(wc -c <"$part" | tr -d ' ')
		if [ "$name" = .metadata ]; then
			lengths=$(cut_lengths "$size") flips=20
		else
			lengths=$(awk -v n="$size" 'BEGIN { for (i = 1; i <= 40; i++) print int(n * i / 41) }' | sort -n -u)
			flips=10
		fi
		for n in $lengths; do
			cp -R "$src" "$dest/$stem.$name.cut.$n"
			head -c "$n" "$part" >"$dest/$stem.$name.cut.$n/$name"
		done
		awk -v seed="$seed" -v size="$size" -v flips="$flips" -v salt="${#name}$size" 'BEGIN {
			srand(seed * 7919 + salt % 1000003)
			for (k = 0; k < flips; k++)
				for (f = 1 + int(rand() * 4); f > 0; f--) print k, int(rand() * size), int(rand() * 256)
		}' | while read -r k offset value; do
			out=$dest/$stem.$name.flip.$k
			[ -d "$out" ] || cp -R "$src" "$out"
			# shellcheck disable=SC2059
			printf "\\$(printf %03o "$value")" | dd of="$out/$name" bs=1 seek="$offset" conv=notrunc 2>/dev/null
		done
	done
}

# ---- running ----

# The runs and their judgement: tests/torture/runner.c, built here (one
# process per run instead of the shell's five to eight).
runner=$work/runner
${CC:-cc} -std=c11 -O2 -Wall -Wextra -Werror -o "$runner" tests/torture/runner.c || {
	echo "torture: cannot build tests/torture/runner.c" >&2
	exit 2
}

# run_list: every line of $dir/list through the runner (a sample under
# TORTURE_SAMPLE); adds to passed and failed and prints the failures.
run_list() {
	"$runner" "$bin" "$dir" $sample_args <"$dir/list" >"$dir/report" || {
		echo "FAIL the runner stopped on $fixture"
		failed=$((failed + 1))
		return
	}
	grep -v '^count ' "$dir/report"
	# shellcheck disable=SC2046
	set -- $(grep '^count ' "$dir/report")
	passed=$((passed + ${2:-0}))
	failed=$((failed + ${3:-1}))
	[ -s "$dir/failed" ] || return
	if [ -n "$python" ]; then
		echo "  reproduce: $python tests/torture/mutate.py --seed $seed DIR $fixture && $bin DIR/NAME ARGS"
	else
		echo "  reproduce: PYTHON=none TORTURE_SEED=$seed TORTURE_KEEP=DIR sh tests/torture/run.sh $bin keeps it in DIR"
	fi
	if [ -n "${TORTURE_KEEP:-}" ]; then
		mkdir -p "$TORTURE_KEEP" && sort -u "$dir/failed" | while read -r f; do cp -R "$f" "$TORTURE_KEEP/"; done
	fi
}

# replay HARNESS FILE...: the in-process harness (TORTURE_REPLAY prefix) on
# every copy; one process for all of them.
replay() {
	h=$1
	shift
	[ -n "${TORTURE_REPLAY:-}" ] || return 0
	if "$TORTURE_REPLAY$h" "$@" >"$dir/replay.log" 2>&1; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		last=$(grep '^replay ' "$dir/replay.log" | tail -n 1)
		echo "FAIL replay-$h on copies of $fixture: ${last#replay }"
		grep -v '^replay ' "$dir/replay.log" | head -n 40 | sed 's/^/  | /'
	fi
}

# shard J: the fixtures whose position modulo $jobs is J, one at a time.
shard() {
	j=$1 passed=0 failed=0 i=0
	for fixture in fixtures/*.pt fixtures/*.ckpt fixtures/gguf/*.gguf fixtures/npy/*.npy fixtures/npy/*.npz fixtures/training_args.bin fixtures/training_args_py311.bin; do
		i=$((i + 1))
		[ $((i % jobs)) -eq "$j" ] || continue
		dir=$work/shard$j
		rm -rf "$dir"
		mkdir -p "$dir/in"
		if [ -n "$python" ]; then
			"$python" tests/torture/mutate.py --seed "$seed" "$dir/in" "$fixture" >/dev/null ||
				{ echo "FAIL mutate.py could not damage $fixture"; failed=$((failed + 1)); continue; }
		else
			mutate_without_python "$fixture" "$dir/in"
		fi
		for file in "$dir"/in/*.pt; do
			printf '%s\t--json\n%s\tscan\n' "$file" "$file"
			case $fixture:$file in
			*.pt:*.flip.* | *.ckpt:*.flip.*)
				printf '%s\t--json\t--records\n%s\t--depth\t2\t--records\n' "$file" "$file"
				;;
			*.flip.*) # --records lists a torch zip's records: a usage error for any other file
				printf '%s\t--depth\t2\n' "$file"
				;;
			esac
		done >"$dir/list"
		run_list
		case $fixture in
		*.gguf) replay gguf "$dir"/in/*.pt ;;
		*.npy | *.npz) replay npy "$dir"/in/*.pt ;;
		*)
			replay checkpoint "$dir"/in/*.pt
			replay scan "$dir"/in/*.pt
			;;
		esac
	done
	# DCP folders: inspected, scanned and converted (which assembles every tensor from its chunks)
	for fixture in fixtures/dcp fixtures/dcp_v22; do
		i=$((i + 1))
		[ $((i % jobs)) -eq "$j" ] || continue
		dir=$work/shard$j
		rm -rf "$dir"
		mkdir -p "$dir/in"
		dcp_copies "$fixture" "$dir/in"
		for file in "$dir"/in/*; do
			printf '%s\t--json\n%s\tscan\n%s\tconvert\n' "$file" "$file" "$file"
		done >"$dir/list"
		run_list
		replay dcp "$dir"/in/*/.metadata
	done
	echo "$passed $failed" >"$work/count$j"
}

[ -n "$python" ] || echo "torture: no python3: cuts and byte flips by head and dd, no data.pkl cuts" >&2
j=0
while [ "$j" -lt "$jobs" ]; do
	shard "$j" >"$work/log$j" 2>&1 &
	shards="$shards $!"
	j=$((j + 1))
done
wait

total_passed=0 total_failed=0 j=0
while [ "$j" -lt "$jobs" ]; do
	cat "$work/log$j"
	if [ -f "$work/count$j" ]; then
		read -r p f <"$work/count$j"
	else
		echo "FAIL shard $j did not finish"
		p=0 f=1
	fi
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + f))
	j=$((j + 1))
done
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
