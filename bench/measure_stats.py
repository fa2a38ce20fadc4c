#!/usr/bin/env python3
"""
Measures `tinspect FILE --device cpu` (every tensor read, its statistics and
checksum computed) on the 1.2 GB vit_l_16.pt against what a user would run
in Python for the same answers, in the same run.

    python3 bench/measure_stats.py --tinspect ./tinspect [--python /usr/bin/python3]
                                   [--runs 3] [--no-torch] CACHE_DIR

CACHE_DIR holds vit_l_16.pt (gen.py writes it; skipped, saying so, when it
is missing). Timed (whole process, best of N, the page cache warm after one
untimed run, or dropped before each run when /proc/sys/vm/drop_caches is
writable):
  - cat FILE > /dev/null                     the read throughput (the floor)
  - tinspect FILE --device cpu               every statistic of every tensor
  - Python: torch.load(map_location='cpu'), then per tensor the finite values'
    min, max, mean and std in float64, NaN and inf counts and the zeros
    (skipped with --no-torch; no checksum, which would only add to it)
Only the standard library is used on the measuring side.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402
from measure import bench_args, best_of as _best_of, can_drop  # noqa: E402

TORCH_STATS = """import sys, torch
sd = torch.load(sys.argv[1], map_location="cpu")
bad = []
for name, t in sd.items():
    f = t[t.isfinite()].double()
    if f.numel():
        lo, hi, mean = f.min().item(), f.max().item(), f.mean().item()
        std = f.std().item() if f.numel() > 1 else float("nan")
    nan, inf = int(t.isnan().sum()), int(t.isinf().sum())
    zeros = int((t == 0).sum()) / max(t.numel(), 1)
    if nan or inf:
        bad.append(name)
print(len(sd), bad)"""


def main():
    o = bench_args(3, tinspect_required=True)
    path = os.path.join(o.cache, "vit_l_16.pt")
    if not os.path.exists(path):
        print("stats: %s is not cached (bench/gen.py writes it): not run" % path)
        return 0
    size = os.path.getsize(path)
    cold = can_drop()
    rows = [
        ("cat FILE > /dev/null", ["cat", path]),
        ("tinspect FILE --device cpu", [o.tinspect, path, "--device", "cpu"]),
    ]
    if not o.no_torch:
        rows.append(("PyTorch: torch.load + finite min/max/mean/std, NaN/inf, zeros", [o.python, "-c", TORCH_STATS,
                                                                                      path]))
    print("stats: vit_l_16.pt, %.2f GB, best of %d, %s page cache" % (
        size / 1e9, o.runs, "cold (dropped before each run)" if cold else "warm (cannot drop it)"))
    times = {label: _best_of(argv, o.runs, cold, who="measure_stats") for label, argv in rows}
    for label, _ in rows:
        t = times[label]
        line = "  %-62s %8.0f ms  %7.0f MB/s" % (label, t * 1e3, size / t / 1e6)
        if label.startswith("tinspect"):
            share = 100 * times[rows[0][0]] / t
            record("inspect --device cpu: share of cat's %s-cache throughput" % ("cold" if cold else "warm"), share,
                   "%", ">=", 60)
            line += "  %.0f%% of cat's throughput (goal 60%%)" % share
        if label.startswith("PyTorch"):
            line += "  tinspect %.2fx faster" % (t / times[rows[1][0]])
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
