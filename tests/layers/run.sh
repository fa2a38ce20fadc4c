#!/bin/sh
# tests/layers/run.sh - the dependencies of src/ run one way (LAYERS) and no
# files depend on each other in a ring, except what tests/layers/known lists
# (check.py says how it reads them). Run after the build: the rings of calls
# are read from build/src's objects.
#
# usage: sh tests/layers/run.sh
# First the check proves it can fail: on tests/layers/selftest, a tree with a
# deliberate break and a deliberate ring, it must report both.
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
failed=0

out=$("$py" "$here/check.py" --root "$here/selftest" 2>&1)
if [ $? = 1 ] && printf '%s\n' "$out" | grep -q "src/low/b.c:1: includes top/a.h (top): low may not include top" &&
	printf '%s\n' "$out" | grep -q "ring of files that include each other: low/c <-> low/d"; then
	echo "layers self-test: the deliberate break and ring are found"
else
	echo "FAIL layers self-test: check.py did not report the deliberate break and ring:"
	printf '%s\n' "$out"
	failed=1
fi

"$py" "$here/check.py" --root "$here/../.." || failed=1
exit $failed
