#!/bin/sh
# tests/ci/run.sh - hold tinspect's JUnit XML to tests/ci/junit.xsd, the
# dialect that GitHub's, GitLab's and Jenkins' test reporters read.
#
# usage: sh tests/ci/run.sh TINSPECT
#
# 1. sample: the unit tests' sample document (every outcome, every escape,
#    invalid UTF-8, two suites; tests/unit/test_ci_report.c) validates. The
#    unit-test binary is UNIT_TESTS, ./build/unit-tests unless set; it writes
#    the document to the path in CI_REPORT_SAMPLE.
# 2. commands: each `TINSPECT ... --junit OUT` in the list below exits as
#    listed and leaves an OUT that validates.
# 3. negative controls: documents the schema must reject are rejected, so a
#    schema (or an xmllint) that admits anything cannot pass this test.
# Prints 'N passed, M failed' and exits 1 when anything failed.

set -u
set -f # command lines are split into words, never globbed

if [ $# -ne 1 ]; then
	echo "usage: sh tests/ci/run.sh TINSPECT" >&2
	exit 2
fi
case $1 in
/*) bin=$1 ;;
*) bin=$(pwd)/${1#./} ;;
esac
if [ ! -x "$bin" ]; then
	echo "ci: '$1' is not an executable" >&2
	exit 2
fi
unit=${UNIT_TESTS:-./build/unit-tests}
case $unit in
/*) ;;
*) unit=$(pwd)/${unit#./} ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2
schema=tests/ci/junit.xsd

LC_ALL=C
export LC_ALL

work=$(mktemp -d "${TMPDIR:-/tmp}/tinspect-ci.XXXXXX") || exit 2
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

if ! command -v xmllint >/dev/null 2>&1; then
	fail "setup: no xmllint (install libxml2-utils: sh tools/install-deps.sh test)"
	echo "$passed passed, $failed failed"
	exit 1
fi

# valid NAME FILE: FILE validates against the schema; xmllint's words when it does not.
valid() {
	if xmllint --noout --schema "$schema" "$2" >"$work/xmllint.out" 2>&1; then
		pass
	else
		fail "$1: $2 does not validate against $schema:"
		sed 's/^/    /' "$work/xmllint.out"
	fi
}

# invalid NAME FILE: the schema rejects FILE (a negative control).
invalid() {
	if xmllint --noout --schema "$schema" "$2" >"$work/xmllint.out" 2>&1; then
		fail "$1: the schema accepts a document it must reject:"
		sed 's/^/    /' "$2"
	elif grep -q 'fails to validate' "$work/xmllint.out"; then
		pass
	else
		# Rejected, but not by validation (the schema did not load, say): no control at all.
		fail "$1: xmllint failed for another reason than validation:"
		sed 's/^/    /' "$work/xmllint.out"
	fi
}

# 1. The unit tests' sample document.
if [ ! -x "$unit" ]; then
	fail "sample: '$unit' is not an executable (make build/unit-tests)"
elif ! CI_REPORT_SAMPLE=$work/sample.xml "$unit" --filter 'ci_report/*' >"$work/unit.out" 2>&1; then
	fail "sample: the ci_report unit tests failed:"
	sed 's/^/    /' "$work/unit.out"
elif [ ! -s "$work/sample.xml" ]; then
	fail "sample: the unit tests wrote no $work/sample.xml"
else
	valid sample "$work/sample.xml"
fi

# 2. tinspect's own reports. One line per case, `NAME STATUS ARGS...`: the
# command `TINSPECT ARGS` must exit STATUS and write a valid report to the
# word OUT (replaced by a file in a scratch folder). Arguments are split at
# blanks, so no argument may hold one.
commands() {
	echo "check_ok 0 check tests/cli/models/check_small.json fixtures/check/ok.pt --junit OUT"
	echo "check_bad 1 check tests/cli/models/check_small.json fixtures/check/bad.pt --junit OUT"
	echo "check_gates 1 check tests/cli/models/check_small.json fixtures/check/ok.pt --dtype float16 --max-params 9 --junit OUT"
	echo "check_shapes 1 check tests/cli/models/check_small.json fixtures/check/ok.pt --input x=2x5 --junit OUT"
	echo "check_memory 1 check tests/cli/models/check_small.json fixtures/check/ok.pt --device-memory 256B --bind N=64 --junit OUT"
	echo "check_unreadable 4 check tests/cli/models/check_small.json fixtures/check/no_such.pt --junit OUT"
	echo "check_manifest 4 check --manifest tests/cli/models/check_manifest.json --junit OUT --format github"
	echo "diff_same 0 diff fixtures/diff/plain.pt fixtures/diff/same.safetensors --values --junit OUT"
	echo "diff_changed 1 diff fixtures/diff/base.pt fixtures/diff/changed.pt --values --junit OUT"
	echo "diff_unreadable 4 diff fixtures/diff/base.pt fixtures/diff/no_such.pt --junit OUT"
}
commands >"$work/commands"
while read -r name want args; do
	out=$work/$name.xml
	set -- # the command line, rebuilt with OUT replaced
	for word in $args; do
		if [ "$word" = OUT ]; then
			set -- "$@" "$out"
		else
			set -- "$@" "$word"
		fi
	done
	"$bin" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr"
	got=$?
	if [ "$got" != "$want" ]; then
		fail "$name: exit status $got, want $want: tinspect $args"
		sed 's/^/    /' "$work/$name.stderr"
	elif [ ! -s "$out" ]; then
		fail "$name: no report written: tinspect $args"
	else
		valid "$name" "$out"
	fi
done <"$work/commands"

# 3. Negative controls: each must be rejected by validation.
control() {
	cat >"$work/$1.xml"
	invalid "$1" "$work/$1.xml"
}
control testcase_without_name <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="1" failures="0" errors="0" skipped="0" time="0.000">
  <testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="0.000">
    <testcase classname="s" time="0.000"/>
  </testsuite>
</testsuites>
EOF
control count_not_a_number <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="one" failures="0" errors="0" skipped="0" time="0.000">
</testsuites>
EOF
control time_with_a_decimal_comma <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="0" failures="0" errors="0" skipped="0" time="0,500">
</testsuites>
EOF
control two_outcomes_in_one_testcase <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="1" failures="1" errors="1" skipped="0" time="0.000">
  <testsuite name="s" tests="1" failures="1" errors="1" skipped="0" time="0.000">
    <testcase name="c" classname="s" time="0.000">
      <failure message="m" type="t"/>
      <error message="m" type="t"/>
    </testcase>
  </testsuite>
</testsuites>
EOF
control failure_outside_a_testcase <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="0" failures="1" errors="0" skipped="0" time="0.000">
  <testsuite name="s" tests="0" failures="1" errors="0" skipped="0" time="0.000">
    <failure message="m" type="t"/>
  </testsuite>
</testsuites>
EOF
control two_suites_with_one_name <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="n" tests="0" failures="0" errors="0" skipped="0" time="0.000">
  <testsuite name="s" tests="0" failures="0" errors="0" skipped="0" time="0.000"/>
  <testsuite name="s" tests="0" failures="0" errors="0" skipped="0" time="0.000"/>
</testsuites>
EOF

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
