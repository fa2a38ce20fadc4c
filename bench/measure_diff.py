#!/usr/bin/env python3
"""
Measures `tinspect diff` on two ~1 GB checkpoints against the disk's read
throughput and against what a CI job would run in Python, in the same run.

    python3 bench/measure_diff.py --tinspect ./tinspect [--python /usr/bin/python3]
                                  [--runs 3] [--no-torch] CACHE_DIR

CACHE_DIR gets diff_a.pt and diff_b.pt once (torch, only to generate them):
256 float32 tensors of 2^20 elements each (1 GiB a file); in diff_b.pt every
other tensor has a small perturbation in every element, so half the data
takes the comparison's full path and half the identical-bytes path.

Timed (whole process, best of N):
  - cat A B > /dev/null            the read throughput of the disk (the floor)
  - tinspect diff A B              names, shapes, dtypes, ties: no data read
  - tinspect diff --values A B     every byte of both read and compared
  - Python: torch.load both, then for each tensor torch.equal and
    (a-b).abs().max()              (skipped with --no-torch)
The page cache is dropped before every run when /proc/sys/vm/drop_caches is
writable (root): cold-cache disk throughput. Otherwise every run is warm
(after one untimed warm-up) and the report says so. Only the standard
library is used on the measuring side.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402
from measure import bench_args, best_of as _best_of, can_drop  # noqa: E402

TENSORS = 256
ELEMENTS = 1 << 20

GEN = """import sys, torch
torch.manual_seed(0)
a = {"layer%%d.weight" %% i: torch.randn(%d) for i in range(%d)}
b = {k: (v + 1e-6 * torch.randn_like(v)) if i %% 2 else v for i, (k, v) in enumerate(a.items())}
torch.save(a, sys.argv[1])
torch.save(b, sys.argv[2])""" % (ELEMENTS, TENSORS)

TORCH_DIFF = """import sys, torch
a = torch.load(sys.argv[1])
b = torch.load(sys.argv[2])
worst = 0.0
for k, x in a.items():
    y = b[k]
    if not torch.equal(x, y):
        worst = max(worst, (x.double() - y.double()).abs().max().item())
print(worst)"""


def main():
    o = bench_args(3, tinspect_required=True)
    a, b = os.path.join(o.cache, "diff_a.pt"), os.path.join(o.cache, "diff_b.pt")
    if not (os.path.exists(a) and os.path.exists(b)):
        if o.no_torch:
            print("diff: %s and %s are not cached and torch is missing: not run" % (a, b))
            return 0
        os.makedirs(o.cache, exist_ok=True)
        subprocess.run([o.python, "-c", GEN, a + ".tmp", b + ".tmp"], check=True)
        os.rename(a + ".tmp", a)
        os.rename(b + ".tmp", b)
    size = os.path.getsize(a) + os.path.getsize(b)
    cold = can_drop()
    runs = o.runs
    rows = [
        ("cat A B > /dev/null", ["sh", "-c", 'cat "$0" "$1" >/dev/null', a, b], (0,)),
        ("tinspect diff A B", [o.tinspect, "diff", a, b], (0, 1)),
        ("tinspect diff --values A B", [o.tinspect, "diff", "--values", a, b], (0, 1)),
    ]
    if not o.no_torch:
        rows.append(("PyTorch: torch.load x2, torch.equal, (a-b).abs().max()", [o.python, "-c", TORCH_DIFF, a, b],
                     (0,)))
    print("diff: 2 x %.2f GB (%d float32 tensors of %d elements each), best of %d, %s page cache" % (
        size / 2e9, TENSORS, ELEMENTS, runs, "cold (dropped before each run)" if cold else "warm (cannot drop it)"))
    times = {}
    for label, argv, ok in rows:
        times[label] = _best_of(argv, runs, cold, ok, who="measure_diff")
    disk = size / times[rows[0][0]]
    for label, _, _ in rows:
        t = times[label]
        line = "  %-56s %8.0f ms  %7.0f MB/s" % (label, t * 1e3, size / t / 1e6)
        if label.startswith("tinspect diff --values"):
            share = 100 * (size / t) / disk
            record("diff --values: share of cat's %s-cache throughput" % ("cold" if cold else "warm"), share, "%",
                   ">=", 70)
            line += "  %.0f%% of cat's throughput (goal 70%%)" % share
        if label.startswith("PyTorch"):
            line += "  tinspect --values %.2fx faster" % (t / times[rows[2][0]])
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
