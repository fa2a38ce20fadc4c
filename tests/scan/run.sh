#!/bin/sh
# tests/scan/run.sh - check `tinspect scan` on the hostile corpus in
# fixtures/malicious/ (written by fixtures/gen_malicious.py), and check that
# inspect and convert refuse what scan calls dangerous.
#
# usage: sh tests/scan/run.sh TINSPECT
#
# For each line `FILE<TAB>VERDICT<TAB>TEXT` of fixtures/malicious/expected.tsv:
#   scan:FILE    `TINSPECT scan fixtures/malicious/FILE` ends with the line
#                'fixtures/malicious/FILE: verdict: VERDICT (N findings)', prints
#                TEXT, and exits 0 for safe, 1 for unknown, suspicious and
#                dangerous, 3 for unreadable.
#   refuse:FILE  for each dangerous FILE, `TINSPECT FILE` and
#                `TINSPECT convert FILE -o OUT` exit 1 (refused without --trust)
#                and leave no OUT, nor anything else, behind.
# Then: one scan of every file at once prints each file's verdict line and
# exits 1; every file in fixtures/malicious/ has a line in expected.tsv; and
# /tmp/tinspect_pwned, which every payload would create, never appears.
# Prints 'N passed, M failed' and exits 1 when anything failed.

set -u
set -f # file names are words, never globs

if [ $# -ne 1 ]; then
	echo "usage: sh tests/scan/run.sh TINSPECT" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/${1#./} ;;
esac
if [ ! -x "$bin" ]; then
	echo "scan: '$1' is not an executable" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2
dir=fixtures/malicious
expected=$dir/expected.tsv
not_read="zip_pickle_in_readme.pt zip_pickle_in_data_record.pt nested_archive.pt"
pwned=/tmp/tinspect_pwned # what every payload in the corpus would create
tab=$(printf '\t')

LC_ALL=C
export LC_ALL

work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-scan.XXXXXX") || exit 2
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

# A file left over from an earlier run would hide one made by this run.
rm -f "$pwned"
if [ -e "$pwned" ]; then
	fail "setup: cannot remove $pwned, so this run could not tell whether a payload ran"
	echo "$passed passed, $failed failed"
	exit 1
fi
if [ ! -f "$expected" ]; then
	fail "setup: no $expected (run /usr/bin/python3 fixtures/gen_malicious.py)"
	echo "$passed passed, $failed failed"
	exit 1
fi

# status_for VERDICT: the exit status `tinspect scan` gives a file with that verdict.
status_for() {
	case $1 in
	safe) echo 0 ;;
	unknown | suspicious | dangerous) echo 1 ;;
	unreadable) echo 3 ;;
	*) echo "?" ;;
	esac
}

# has_verdict_line PATH VERDICT FILE: FILE holds 'PATH: verdict: VERDICT (N findings)'.
# With --last, that line must be FILE's last non-empty line.
has_verdict_line() {
	if [ "$1" = --last ]; then
		shift
		awk 'NF { last = $0 } END { print last }' "$3" >"$work/last"
		set -- "$1" "$2" "$work/last"
	fi
	awk -v p="$1: verdict: $2 (" '
		index($0, p) == 1 && substr($0, length(p) + 1) ~ /^[0-9]+ findings?\)$/ { found = 1 }
		END { exit !found }' "$3"
}

# show FILE: indent a command's output under a failure.
show() {
	sed -e 's/^/  | /' "$1" | head -n 40
}

all=
mkdir "$work/convert"
while IFS=$tab read -r file verdict needle; do
	case $file in '' | '#'*) continue ;; esac
	case $file in */* | *[!A-Za-z0-9._-]*)
		fail "$expected: '$file' is not a plain file name"
		continue
		;;
	esac
	path=$dir/$file
	want=$(status_for "$verdict")
	if [ "$want" = "?" ] || [ -z "$needle" ]; then
		fail "$expected: line for $file: want FILE, a verdict (safe, unknown, suspicious, dangerous, unreadable) and a text, tab-separated"
		continue
	fi
	if [ ! -f "$path" ]; then
		fail "scan:$file: $path does not exist (run /usr/bin/python3 fixtures/gen_malicious.py)"
		continue
	fi
	all="$all $path"
	printf '%s\t%s\n' "$path" "$verdict" >>"$work/verdicts"

	"$bin" scan "$path" >"$work/out" 2>"$work/err" </dev/null
	got=$?
	if {
		ok=true
		if [ "$got" != "$want" ]; then
			echo "  exit status $got, want $want ($verdict)"
			ok=false
		fi
		if ! has_verdict_line --last "$path" "$verdict" "$work/out"; then
			echo "  the last line is not '$path: verdict: $verdict (N findings)'"
			ok=false
		fi
		if ! grep -qF -- "$needle" "$work/out"; then
			echo "  the output does not contain '$needle'"
			ok=false
		fi
		$ok || { echo "  stdout:"; show "$work/out"; echo "  stderr:"; show "$work/err"; }
		$ok
	} >"$work/report"; then
		pass
	else
		fail "scan:$file: tinspect scan $path"
		cat "$work/report"
	fi

	[ "$verdict" = dangerous ] || continue
	# inspect and convert judge the pickle they read (data.pkl, a legacy or
	# bare pickle); a payload only scan reaches (TorchScript's constants.pkl,
	# a record torch never opens, an archive inside a record) cannot run
	# through them, so their refusal is not asked for.
	case " $not_read " in *" $file "*) continue ;; esac
	# Without --trust, commands that read a file refuse a dangerous one.
	"$bin" "$path" >"$work/out" 2>"$work/err" </dev/null
	got=$?
	if [ "$got" = 1 ]; then
		pass
	else
		fail "refuse:$file: tinspect $path exited $got, want 1 (refused: dangerous)"
		show "$work/err"
	fi
	"$bin" convert "$path" -o "$work/convert/out.safetensors" >"$work/out" 2>"$work/err" </dev/null
	got=$?
	left=$(ls -A "$work/convert")
	if [ "$got" = 1 ] && [ -z "$left" ]; then
		pass
	else
		fail "refuse:$file: tinspect convert $path -o OUT exited $got, want 1 and no file written (found: ${left:-nothing})"
		show "$work/err"
	fi
	rm -rf "$work/convert" && mkdir "$work/convert"
done <"$expected"

# One scan of every file: exit 1 (there are dangerous files), each file's verdict line.
if [ -n "$all" ]; then
	# shellcheck disable=SC2086 # $all is a list of plain file names (checked above)
	"$bin" scan $all >"$work/out" 2>"$work/err" </dev/null
	got=$?
	if {
		ok=true
		if [ "$got" != 1 ]; then
			echo "  exit status $got, want 1"
			ok=false
		fi
		while IFS=$tab read -r path verdict; do
			if ! has_verdict_line "$path" "$verdict" "$work/out"; then
				echo "  no line '$path: verdict: $verdict (N findings)'"
				ok=false
			fi
		done <"$work/verdicts"
		$ok
	} >"$work/report"; then
		pass
	else
		fail "scan_all: tinspect scan with all $(wc -l <"$work/verdicts" | tr -d ' ') files"
		cat "$work/report"
	fi
fi

# Every file in the corpus has a line, so a new one cannot go untested.
missing=
set +f
for f in "$dir"/*; do
	base=${f##*/}
	case $base in README.md | expected.tsv) continue ;; esac
	awk -F "$tab" -v f="$base" '$1 == f { found = 1 } END { exit !found }' "$expected" || missing="$missing $base"
done
set -f
if [ -n "$missing" ]; then
	fail "corpus_has_expectations: no line in $expected for:$missing"
else
	pass
fi

# No payload ran.
if [ -e "$pwned" ]; then
	fail "no_code_execution: $pwned exists: a pickle's payload was executed"
else
	pass
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
