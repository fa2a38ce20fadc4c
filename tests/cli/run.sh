#!/bin/sh
# tests/cli/run.sh - run tinspect on each case in tests/cli/cases and compare
# its stdout, stderr and exit status with the expected ones (git t/, jq shtest).
#
# usage: sh tests/cli/run.sh [--regen] TINSPECT
#
# Each line of tests/cli/cases is `NAME EXIT ARGUMENTS...`; the case passes when
# `TINSPECT ARGUMENTS...`, run from the repo root, exits EXIT and writes exactly
# expected/NAME.out and expected/NAME.err. A case that exits 3 or 4 must also
# write exactly one line to stderr, starting with 'tinspect: '. After the cases:
# no hostile fixture made /tmp/tinspect_pwned, every fixtures/broken/*.pt has a
# case, every expected file has a case, and every option that --help shows is
# in man/tinspect.1.
#
# --regen rewrites the expected files from TINSPECT's output (the exit status
# is still checked). Read each changed file before committing it: the
# expected files are what the tests hold tinspect to.
# Prints 'N passed, M failed' and exits 1 when anything failed.

set -u
set -f # the cases' arguments are words, never globs

regen=false
if [ "${1:-}" = --regen ]; then
	regen=true
	shift
fi
if [ $# -ne 1 ]; then
	echo "usage: sh tests/cli/run.sh [--regen] TINSPECT" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/${1#./} ;;
esac
if [ ! -x "$bin" ]; then
	echo "cli: '$1' is not an executable" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2
cases=tests/cli/cases
expected=tests/cli/expected
pwned=/tmp/tinspect_pwned # what fixtures/broken/os_system.pt would create

# Messages from strerror() and sort orders must not depend on the caller's locale.
LC_ALL=C
export LC_ALL
# `tinspect memory` on the CPU assumes the instruction set oneDNN would use here (cpuid, at most
# ONEDNN_MAX_CPU_ISA) and names it: the expected outputs are AVX2's, which every x86-64 machine
# this project's PyTorch measurements were taken on has (an AVX-512 one is held to it by this cap).
ONEDNN_MAX_CPU_ISA=AVX2
export ONEDNN_MAX_CPU_ISA

work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-cli.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

passed=0
failed=0
pass() {
	passed=$((passed + 1))
}
fail() {
	failed=$((failed + 1))
	echo "FAIL $1"
}

# same NAME KIND: compare expected/NAME.KIND with what the run wrote; show a diff.
same() {
	if [ ! -f "$expected/$1.$2" ]; then
		echo "  no $expected/$1.$2 (write it with --regen, then read it)"
		return 1
	fi
	if ! cmp -s "$expected/$1.$2" "$work/$2"; then
		echo "  std$2 differs (--- expected, +++ got):"
		diff -u "$expected/$1.$2" "$work/$2" | sed '1,2d; s/^/  /'
		return 1
	fi
	return 0
}

# one_error_line: stderr is a single line 'tinspect: ...'.
one_error_line() {
	lines=$(awk 'END { print NR }' "$work/err")
	newlines=$(wc -l <"$work/err" | tr -d ' ')
	first=$(head -n 1 "$work/err")
	if [ "$lines" != 1 ] || [ "$newlines" != 1 ] || [ "${first#tinspect: }" = "$first" ]; then
		echo "  an error must be one line on stderr starting with 'tinspect: '; got $lines lines:"
		sed 's/^/  | /' "$work/err"
		return 1
	fi
	return 0
}

if $regen; then
	rm -f "$expected"/*.out "$expected"/*.err
	mkdir -p "$expected"
fi
rm -f "$pwned"
# A FIFO for the cases that check no command waits on one (a fixed path, as the
# expected messages name it; several checkouts may share it).
fifo=/tmp/tinspect-cli.fifo
[ -p "$fifo" ] || { rm -f "$fifo" && mkfifo "$fifo"; } || exit 2
# A command that hangs (on the FIFO, say) fails its case instead of the run.
limit=
command -v timeout >/dev/null 2>&1 && limit="timeout 60"

# The cases run in parallel (CLI_JOBS, default the number of CPUs), a block
# of the cases file (lines between blank lines) at a time, in order within
# it: a case may read what an earlier case of its block wrote. Each block
# has its own scratch folder and log; the logs are printed in file order.
jobs=${CLI_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
case $jobs in '' | *[!0-9]* | 0) jobs=2 ;; esac
[ "$jobs" -gt 8 ] && jobs=8
blocks=$(awk -v dir="$work" '
	/^[[:space:]]*$/ { if (open) { close(file); open = 0; k++ } next }
	{ file = dir "/block." (k + 0); print >file; open = 1 }
	END { print k + open }' "$cases")

# run_block K: the cases of block K; writes log.K and count.K.
top=$work
run_block() {
	block=$1 # the cases' arguments replace $1
	work=$top/run.$block
	mkdir -p "$work"
	passed=0 failed=0
	while read -r name want args; do
		case $name in '' | '#'*) continue ;; esac
		eval "set -- $args"
		$limit "$bin" "$@" >"$work/out" 2>"$work/err" </dev/null
		got=$?
		if $regen; then
			cp "$work/out" "$expected/$name.out"
			cp "$work/err" "$expected/$name.err"
		fi
		if {
			ok=true
			if [ "$got" != "$want" ]; then
				echo "  exit status $got, want $want"
				ok=false
			fi
			same "$name" out || ok=false
			same "$name" err || ok=false
			case $want in 3 | 4) one_error_line || ok=false ;; esac
			$ok
		} >"$work/report"; then
			pass
		else
			fail "$name: tinspect $args"
			cat "$work/report"
		fi
	done <"$top/block.$block"
	echo "$passed $failed" >"$top/count.$block"
}

shards=
j=0
while [ "$j" -lt "$jobs" ]; do
	(
		k=$j
		while [ "$k" -lt "$blocks" ]; do
			run_block "$k" >"$top/log.$k" 2>&1
			k=$((k + jobs))
		done
	) &
	shards="$shards $!"
	j=$((j + 1))
done
trap 'kill $shards 2>/dev/null; exit 130' INT
trap 'kill $shards 2>/dev/null; exit 143' TERM
wait
k=0
while [ "$k" -lt "$blocks" ]; do
	cat "$work/log.$k" 2>/dev/null
	if [ -f "$work/count.$k" ]; then
		read -r p f <"$work/count.$k"
		passed=$((passed + p))
		failed=$((failed + f))
	else
		fail "block $k of $cases did not finish"
	fi
	k=$((k + 1))
done

# Names are unique: each names its expected files.
names=$(awk '$1 !~ /^#/ && NF { print $1 }' "$cases")
seen=" $(echo "$names" | tr '\n' ' ')"
for name in $(echo "$names" | sort | uniq -d); do
	fail "$name: two cases have this name"
done

# No hostile pickle may run its payload.
if [ -e "$pwned" ]; then
	fail "no_code_execution: $pwned exists: a pickle's global was called"
else
	pass
fi

# Every broken fixture has a case, so a new one cannot go untested.
missing=
set +f
for f in fixtures/broken/*; do
	grep -qE "[[:space:]]$f([[:space:]]|\$)" "$cases" || missing="$missing $f"
done
set -f
if [ -n "$missing" ]; then
	fail "broken_fixtures_have_cases: no case in $cases for:$missing"
else
	pass
fi

# Every expected file belongs to a case (a renamed case leaves none behind).
orphans=
set +f
for f in "$expected"/*.out "$expected"/*.err; do
	[ -e "$f" ] || continue
	base=${f##*/}
	case $seen in *" ${base%.*} "*) ;; *) orphans="$orphans $f" ;; esac
done
set -f
if [ -n "$orphans" ]; then
	fail "expected_files_have_cases: remove or rename:$orphans"
else
	pass
fi

# Every option --help shows is documented in the man page. mdoc writes --json
# as `Fl -json` and \- for a dash; read it back as the option.
man=man/tinspect.1
if [ ! -f "$man" ]; then
	fail "man_page_documents_options: $man does not exist; it must document every option --help shows"
else
	{ "$bin" --help; "$bin" inspect --help; "$bin" shapes --help; "$bin" params --help; "$bin" convert --help; "$bin" materialize --help; "$bin" cache --help; } >"$work/help" 2>&1
	sed -e 's/\\-/-/g' -e 's/Fl /-/g' "$man" >"$work/man"
	options=$({
		grep -oE -- '--[a-z][a-z0-9-]*' "$work/help"
		grep -oE -- '(^|[][[:space:],|])-[a-zA-Z]([][[:space:],|]|$)' "$work/help" | tr -d '][ ,|'
	} | sort -u)
	undocumented=
	for o in $options; do
		grep -qE -- "(^|[^a-zA-Z0-9-])$o([^a-zA-Z0-9-]|\$)" "$work/man" || undocumented="$undocumented $o"
	done
	if [ -z "$options" ]; then
		fail "man_page_documents_options: found no options in '$1 --help' and '$1 inspect --help'"
	elif [ -n "$undocumented" ]; then
		fail "man_page_documents_options: --help shows options that $man does not document:$undocumented"
	else
		pass
	fi
fi

# Every --help ends with the one exit-status table, and the man page's EXIT
# STATUS lists the same codes with the same words.
table_bad=
for c in "" inspect shapes params materialize convert scan; do
	"$bin" $c --help >"$work/help1" 2>&1
	awk '/^exit status \(every command\):$/ { on = 1 } on' "$work/help1" >"$work/table"
	if [ ! -s "$work/table" ] || [ "$(tail -n 1 "$work/help1")" != "$(tail -n 1 "$work/table")" ]; then
		table_bad="$table_bad '${c:-tinspect}'"
	elif [ -n "${first_table:-}" ] && ! cmp -s "$work/table" "$first_table"; then
		table_bad="$table_bad '${c:-tinspect}'"
	fi
	[ -n "${first_table:-}" ] || { cp "$work/table" "$work/table0"; first_table=$work/table0; }
done
for code in 0 1 2 3 4 5; do
	words=$(grep -E "^  $code  " "$work/table0" | sed -E "s/^  $code  //; s/:.*//")
	awk '/^\.Sh EXIT STATUS/ { on = 1; next } /^\.Sh / { on = 0 } on' "$man" | grep -qF -- "$words" ||
		table_bad="$table_bad man:$code"
done
if [ -n "$table_bad" ]; then
	fail "exit_status_table: not the same table in every --help and the man page:$table_bad"
else
	pass
fi

# Every command's --json document begins with "schema": 1 (run's has times in it,
# so no expected file can hold it).
schema_bad=
while read -r words; do
	# shellcheck disable=SC2086 # the arguments are words
	"$bin" $words >"$work/json" 2>/dev/null
	[ "$(sed -n 2p "$work/json")" = '  "schema": 1,' ] || schema_bad="$schema_bad '$words'"
done <<'JSON'
fixtures/tied.pt --json
shapes tests/cli/models/example.json --bind N=2 --json
params tests/cli/models/example.json --json
memory tests/cli/models/example.json --bind N=2 --json
check tests/cli/models/check_small.json fixtures/check/ok.pt --json
diff fixtures/diff/base.pt fixtures/diff/perturbed.pt --json
scan fixtures/tied.pt --json
ops --json
run tests/cli/models/conv_seq.json --bind N=2 --bind T=9 --fill ones --input x=ones --threads 1 --json
JSON
if [ -n "$schema_bad" ]; then
	fail "json_schema_first: no '\"schema\": 1' first in:$schema_bad"
else
	pass
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
