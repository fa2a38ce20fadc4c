#!/usr/bin/env python3
"""
Start-up: `tinspect --version` against /bin/true, whole processes, taking
turns, median of N (default 41) each: what every command pays before it
reads a byte. The goal is at most 2 ms more than /bin/true.

    python3 bench/measure_startup.py --tinspect ./tinspect [--runs 41]

Needs only the standard library.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402

GOAL_MS = 2.0


def medians(cmds, runs):
    """Median wall time in seconds of each argv in cmds, run in turn runs times after one warm-up."""
    times = [[] for _ in cmds]
    for r in range(runs + 1):
        for i, argv in enumerate(cmds):
            t0 = time.perf_counter()
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r:
                times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinspect", default="./tinspect")
    ap.add_argument("--runs", type=int, default=41)
    a = ap.parse_args()
    tv, tt = medians([[a.tinspect, "--version"], ["/bin/true"]], a.runs)
    extra = (tv - tt) * 1e3
    ok = record("start-up: tinspect --version minus /bin/true", extra, "ms", "<=", GOAL_MS)
    print("start-up: tinspect --version %.2f ms, /bin/true %.2f ms (medians of %d, taking turns): "
          "+%.2f ms (goal <= %.0f ms)  %s" % (tv * 1e3, tt * 1e3, a.runs, extra, GOAL_MS,
                                              "ok" if ok else "ABOVE GOAL"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
