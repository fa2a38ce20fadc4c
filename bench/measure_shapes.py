#!/usr/bin/env python3
"""
Measures `tinspect shapes` on the descriptions that gen_models.py writes, and
PyTorch's meta-device forward of the same ResNet-50, and prints a table and
ratios.

    python3 bench/measure_shapes.py --tinspect ./tinspect [--python /usr/bin/python3]
                                    [--runs 5] [--no-torch] CACHE_DIR

CACHE_DIR holds resnet50.json, chain1k.json and chain10k.json.

The method is measure.py's (its helpers are imported): wall time is the best
of N runs of fork/exec/wait of the process itself, after one untimed warm-up
run; peak RSS is GNU time's %M where it works, else wait4()'s ru_maxrss.

The PyTorch baseline is what a user of torch 1.13 writes: 1.13 has no
`with torch.device("meta")`, so torchvision.models.resnet50() is built (and
randomly initialised) on the CPU, moved with .to("meta"), put in eval mode and
called on torch.empty(1, 3, 224, 224, device="meta") under no_grad. Two more
rows show the imports alone and imports plus building without the forward;
the split into build and forward is also timed inside the process
(perf_counter), since differences of best-of-N process times are noisy.

Needs only the Python standard library (torch for the baseline).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402
from measure import GNU_TIME, bench_args, mb, measure, ms, rss_gnu_time  # noqa: E402

TORCH_IMPORT = "import torch, torchvision"
TORCH_BUILD = TORCH_IMPORT + "\nm = torchvision.models.resnet50().to('meta').eval()"
TORCH_FORWARD = TORCH_BUILD + """
with torch.no_grad():
    y = m(torch.empty(1, 3, 224, 224, device='meta'))
assert tuple(y.shape) == (1, 1000)"""
# the same, timed inside the process: prints "build_s forward_s"
TORCH_INPROCESS = """import time, torch, torchvision
t0 = time.perf_counter()
m = torchvision.models.resnet50().to('meta').eval()
t1 = time.perf_counter()
with torch.no_grad():
    y = m(torch.empty(1, 3, 224, 224, device='meta'))
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)"""


def torch_inprocess(python, runs):
    """Best in-process (build, forward) seconds over `runs` runs, or None."""
    best = None
    for _ in range(runs):
        p = subprocess.run([python, "-c", TORCH_INPROCESS], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if p.returncode != 0:
            return None
        b, f = (float(x) for x in p.stdout.split())
        best = (b, f) if best is None else (min(best[0], b), min(best[1], f))
    return best


def main():
    a = bench_args(5)

    ti = a.tinspect
    if not a.no_torch and subprocess.run(
            [a.python, "-c", TORCH_IMPORT], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        print("measure_shapes: torch and torchvision are not importable with %s: "
              "skipping the PyTorch side" % a.python)
        a.no_torch = True
    resnet = os.path.join(a.cache, "resnet50.json")
    chain1k = os.path.join(a.cache, "chain1k.json")
    chain10k = os.path.join(a.cache, "chain10k.json")

    rss_method = "wait4"
    if os.access(GNU_TIME, os.X_OK) and rss_gnu_time(["/bin/true"]) is not None:
        rss_method = "time"
    res = {}
    failed = []

    def row(label, argv):
        t, cpu, rss, rc, err = measure(argv, a.runs, rss_method)
        res[label] = (t, cpu, rss, rc)
        note = ""
        if rc != 0:
            failed.append(label)
            note = "FAILED exit %d: %s" % (rc, err.decode(errors="replace").strip()[:160])
        print("   %-34s %s %s %12s  %s" % (label, ms(t), ms(cpu), mb(rss) if rc == 0 else "n/a",
                                         note))
        sys.stdout.flush()

    def time_of(label, cpu=False):
        t, c, _, rc = res.get(label, (None, None, 0, 1))
        return (c if cpu else t) if rc == 0 else None

    def rss_of(label):
        _, _, rss, rc = res.get(label, (None, None, 0, 1))
        return rss if rc == 0 else None

    header = "   %-34s %12s %12s %12s" % ("command", "best wall", "best CPU", "peak RSS")

    print("== tinspect shapes: %s (%.1f kB)" % (resnet, os.path.getsize(resnet) / 1e3))
    print("   peak RSS via %s; CPU is user + system time from wait4(); load average "
          "%.1f on %d cores" % ("/usr/bin/time -f %M" if rss_method == "time"
                                else "wait4() ru_maxrss (floor: this Python's own RSS)",
                                os.getloadavg()[0], os.cpu_count() or 0))
    print(header)
    row("tinspect shapes (table)", [ti, "shapes", resnet, "--bind", "N=1"])
    row("tinspect shapes --json", [ti, "shapes", resnet, "--json", "--bind", "N=1"])
    if not a.no_torch:
        row("torch meta forward (resnet50)", [a.python, "-c", TORCH_FORWARD])
        row("  (import torch, torchvision)", [a.python, "-c", TORCH_IMPORT])
        row("  (imports + build, .to(meta))", [a.python, "-c", TORCH_BUILD])
    row("  (floor: /bin/true)", ["/bin/true"])

    print("   ratios:")
    tt, tj, tf = (time_of("tinspect shapes (table)"), time_of("tinspect shapes --json"),
                  time_of("torch meta forward (resnet50)"))
    if a.no_torch:
        print("     torch forward / tinspect        : skipped (torch not importable)")
    elif tf is not None:
        cf = time_of("torch meta forward (resnet50)", cpu=True)
        for label, t, c in (("table", tt, time_of("tinspect shapes (table)", cpu=True)),
                            ("--json", tj, time_of("tinspect shapes --json", cpu=True))):
            if t:
                r = tf / t
                ok = record("shapes ResNet-50: torch meta forward / tinspect %s" % label, r, "x", ">=", 20)
                print("     torch forward / tinspect %-6s : %8.1fx wall, %.1fx CPU  (goal >= 20x)"
                      "  %s" % (label, r, cf / c if c else float("inf"),
                                "ok" if ok else "BELOW GOAL"))
        inproc = torch_inprocess(a.python, a.runs)
        if inproc is not None:
            # differences of best-of-N process times are noisy on a busy
            # machine; perf_counter inside the process is not
            print("     (torch, timed inside the process, best of %d: build + .to(meta) "
                  "%.1f ms, forward %.1f ms)" % (a.runs, inproc[0] * 1e3, inproc[1] * 1e3))
            if tt:
                print("     (that forward alone, in a warm process / tinspect table, whole "
                      "process: %.1fx)" % (inproc[1] / tt))

    print("== tinspect shapes: long graphs, %s and %s" % (chain1k, chain10k))
    print(header)
    row("tinspect shapes chain1k (table)", [ti, "shapes", chain1k, "--bind", "N=1"])
    row("tinspect shapes chain10k (table)", [ti, "shapes", chain10k, "--bind", "N=1"])
    row("tinspect shapes chain1k --json", [ti, "shapes", chain1k, "--json", "--bind", "N=1"])
    row("tinspect shapes chain10k --json", [ti, "shapes", chain10k, "--json", "--bind", "N=1"])
    row("  (floor: tinspect --version)", [ti, "--version"])
    floor = rss_of("  (floor: tinspect --version)")
    print("   ratios (memory is linear when bytes/step from 0 to 1k and from 1k to 10k agree;")
    print("   0 steps is the floor, tinspect --version):")
    for kind in ("(table)", "--json"):
        t1, t10 = time_of("tinspect shapes chain1k " + kind), time_of("tinspect shapes chain10k " + kind)
        r1, r10 = rss_of("tinspect shapes chain1k " + kind), rss_of("tinspect shapes chain10k " + kind)
        if None in (t1, t10, r1, r10):
            continue
        c1 = time_of("tinspect shapes chain1k " + kind, cpu=True)
        c10 = time_of("tinspect shapes chain10k " + kind, cpu=True)
        ok = record("shapes chain of 10k steps %s" % kind, t10 * 1e3, "ms", "<=", 100)
        print("     %-7s 10k steps: %.1f ms wall, %.1f ms CPU (goal well under 100 ms) %s; "
              "%.2f us/step wall, %.2f CPU from 1k to 10k"
              % (kind, t10 * 1e3, c10 * 1e3, "ok" if ok else "ABOVE GOAL",
                 (t10 - t1) / 9000 * 1e6, (c10 - c1) / 9000 * 1e6))
        line = "     %-7s RSS 10k/1k: %.2fx (%s / %s); %.0f bytes/step from 1k to 10k" % (
            kind, r10 / r1, mb(r10), mb(r1), (r10 - r1) / 9000)
        if floor:
            line += ", %.0f from 0 to 1k" % ((r1 - floor) / 1000)
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
