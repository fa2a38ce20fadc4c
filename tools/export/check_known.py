#!/usr/bin/env python3
"""Check the exporter's static list of known types and ops against tinspect.

usage: check_known.py TINSPECT

Fails (exit 1) when tinspect_export.known names a module type or operator
that `TINSPECT ops --json` does not list; says which tinspect knows that the
list lacks (those are exported as opaque until added). PYTHON_OPS (the
Python-level steps of traced models) are checked too.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tinspect_export.known import KNOWN_MODULES, KNOWN_OPS, PYTHON_OPS  # noqa: E402


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    p = subprocess.run([argv[1], "ops", "--json"], capture_output=True, text=True)
    if p.returncode:
        print("check_known: %s ops --json failed: %s" % (argv[1], p.stderr.strip()), file=sys.stderr)
        return 1
    listed = json.loads(p.stdout)
    ops = {o["name"] for o in listed["ops"]}
    modules = {m["type"] for m in listed["modules"]}
    bad = 0
    for what, mine, theirs in (("module type", KNOWN_MODULES, modules), ("operator", KNOWN_OPS | PYTHON_OPS, ops)):
        for name in sorted(mine - theirs):
            print("check_known: tinspect does not know the %s %s" % (what, name))
            bad += 1
        for name in sorted(theirs - mine):
            print("check_known: note: tinspect knows the %s %s, which the exporter's list lacks" % (what, name))
    for name in sorted(PYTHON_OPS - ops):
        print("check_known: tinspect does not know the Python-level operator %s" % name)
        bad += 1
    print("check_known: %d module types, %d operators, %d Python-level; %d unknown to tinspect" % (
        len(KNOWN_MODULES), len(KNOWN_OPS), len(PYTHON_OPS), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
