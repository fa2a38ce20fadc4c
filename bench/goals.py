#!/usr/bin/env python3
"""
The goals of `make bench`: each measure script records every figure it holds
to a goal here, and bench.sh ends with one table of them all.

As a module (the measure scripts):

    from goals import record
    record("inspect 20k: tinspect / unzip of data.pkl", 1.42, "x", "<=", 1.5)

appends one JSON line {"figure", "value", "unit", "op", "goal", "met"} to the
file named by BENCH_GOALS (nothing when it is unset: a script run alone only
prints). The comparison is done here, once, so a script cannot print "ok"
beside a missed goal.

As a command (bench.sh, bench/quick.sh):

    python3 bench/goals.py table FILE [--slack K]
        prints the table (figure, measured, goal, met or MISSED) and exits 1
        when a goal is missed; with --slack K a figure fails only when it is
        more than K times past its goal (bench/quick.sh's guard, K = 2).
    python3 bench/goals.py readme FILE README.md
        rewrites README.md's speed table (between the markers
        <!-- bench:begin --> and <!-- bench:end -->) from FILE, so the README
        says what a `make bench` run measured. bench/results.jsonl is the
        committed run; tests/docs/run.sh checks the README still matches it.

Needs only the standard library.
"""
import json
import os
import sys

def met(op, value, goal, slack=1.0):
    """Whether value meets goal; with slack K > 1, whether it is within K times past it."""
    if op == "<=":
        return value <= goal * slack
    return value * slack >= goal


def record(figure, value, unit, op, goal, note=""):
    """Holds one figure to its goal; returns whether it is met. Appends to $BENCH_GOALS."""
    if op not in ("<=", ">="):
        raise ValueError("goal operator must be <= or >=")
    ok = met(op, value, goal)
    path = os.environ.get("BENCH_GOALS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"figure": figure, "value": value, "unit": unit, "op": op,
                                "goal": goal, "met": ok, "note": note}) + "\n")
    return ok


def fmt(v, unit):
    if unit == "%":
        return "%.0f %%" % v
    if unit == "x":
        return "%.2fx" % v if v < 10 else "%.0fx" % v
    if unit == "ms":
        return "%.1f ms" % v
    if unit == "MB":
        return "%.1f MB" % v
    if unit == "MB/s":
        return "%.0f MB/s" % v
    return "%g %s" % (v, unit)


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                rows.append(json.loads(line))
    return rows


def header(path):
    """The '# ' comment lines of a results file: the machine and its load."""
    with open(path) as f:
        return [l[2:].rstrip("\n") for l in f if l.startswith("# ")]


def table_lines(rows, slack=1.0, markdown=False):
    out = []
    if markdown:
        out.append("| figure | measured | goal | |")
        out.append("|---|---|---|---|")
    else:
        w = max([len(r["figure"]) for r in rows] + [6])
        out.append("%-*s  %12s  %14s  %s" % (w, "figure", "measured", "goal", ""))
    for r in rows:
        ok = met(r["op"], r["value"], r["goal"], slack)
        verdict = ("met" if ok else "MISSED") if slack == 1.0 else \
            ("within %gx" % slack if ok else "MORE THAN %gx PAST" % slack)
        goal = "%s %s" % (r["op"].replace("<=", "≤").replace(">=", "≥"), fmt(r["goal"], r["unit"]))
        if markdown:
            out.append("| %s | %s | %s | %s |" % (r["figure"], fmt(r["value"], r["unit"]), goal,
                                                 "met" if ok else "**missed**"))
        else:
            out.append("%-*s  %12s  %14s  %s" % (w, r["figure"], fmt(r["value"], r["unit"]), goal, verdict))
    return out


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def readme_block(path):
    rows = load(path)
    lines = [BEGIN, ""]
    lines += ["Measured by `make bench` (%s)." % "; ".join(header(path))] if header(path) else []
    lines += [""] + table_lines(rows, markdown=True) + ["", END]
    return "\n".join(lines)


def main(argv):
    if len(argv) >= 2 and argv[0] == "table":
        slack = 1.0
        if "--slack" in argv:
            slack = float(argv[argv.index("--slack") + 1])
        rows = load(argv[1])
        if not rows:
            print("bench: no goal was measured")
            return 1
        print("\n".join(table_lines(rows, slack)))
        missed = [r for r in rows if not met(r["op"], r["value"], r["goal"], slack)]
        print("%d of %d goals %s" % (len(rows) - len(missed), len(rows),
                                     "met" if slack == 1.0 else "within %gx" % slack))
        return 1 if missed else 0
    if len(argv) == 3 and argv[0] in ("readme", "readme-check"):
        with open(argv[2]) as f:
            text = f.read()
        if BEGIN not in text or END not in text:
            print("bench: %s has no %s ... %s section" % (argv[2], BEGIN, END), file=sys.stderr)
            return 2
        a, rest = text.split(BEGIN, 1)
        _, b = rest.split(END, 1)
        new = a + readme_block(argv[1]) + b
        if argv[0] == "readme-check":
            if new != text:
                print("bench: %s's speed table differs from %s (run bench/goals.py readme)"
                      % (argv[2], argv[1]), file=sys.stderr)
                return 1
            return 0
        with open(argv[2], "w") as f:
            f.write(new)
        return 0
    print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
