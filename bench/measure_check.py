#!/usr/bin/env python3
"""
Measures `tinspect check` of ResNet-50 (320 state_dict tensors) against its
checkpoint, and the Python that a CI job would otherwise run, and prints a
table and ratios.

    python3 bench/measure_check.py --tinspect ./tinspect [--python /usr/bin/python3]
                                   [--runs 5] [--no-torch] CACHE_DIR

CACHE_DIR holds (each written once with torch, if missing, through NAME.tmp
and a rename, so an interrupted run leaves no half file behind):

  check_resnet50.json  tools/export/tinspect-export torchvision.models:resnet50
                       --input x=N,3,224,224: the description a user of
                       `check` makes (not gen_models.py's hand-written
                       resnet50.json, which the shapes benchmark reads)
  resnet50.pt          torch.save(torchvision.models.resnet50().state_dict()),
                       320 tensors, 25.6 M values, about 103 MB
  resnet50_fc10.pt     the same with fc resized to 10 classes
                       (resnet50(num_classes=10)): a failing PR's checkpoint,
                       two size mismatches (fc.weight and fc.bias)

The method is measure_shapes.py's (measure.py's helpers are imported): wall
time is the best of N runs of fork/exec/wait of the process itself, output to
/dev/null, after one untimed warm-up run (which also puts the checkpoint in the
page cache for both sides); CPU time is user + system from wait4(); peak RSS
is GNU time's %M where it works, else wait4()'s ru_maxrss. The failing check
is expected to exit 1 (tinspect) and the Python to raise RuntimeError, which
it catches, checks for "size mismatch for fc.weight" and then exits 0.

PyTorch's side is what a CI job runs to ask whether the checkpoint still loads:
one process doing

    import torch, torchvision
    m = torchvision.models.resnet50()
    m.load_state_dict(torch.load(path))

Two more rows break it down (the imports alone; imports plus building the
model); torch.load and load_state_dict alone are also timed inside a warm
process (perf_counter), since differences of best-of-N process times are noisy.

Needs only the Python standard library (torch and torchvision to generate the
files and for the baseline). With --no-torch, only tinspect is timed, and only
when the cached files exist; else the script says so and skips.
"""
import json
import os
import subprocess
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from goals import record  # noqa: E402
from measure import GNU_TIME, bench_args, mb, measure, ms, rss_gnu_time  # noqa: E402

EXPORTER = os.path.join(ROOT, "tools", "export", "tinspect-export")
GOAL = 50

TORCH_IMPORT = "import sys, torch, torchvision"
TORCH_BUILD = TORCH_IMPORT + "\nm = torchvision.models.resnet50()"
TORCH_FULL = TORCH_BUILD + "\nm.load_state_dict(torch.load(sys.argv[1]))"
TORCH_FAIL = TORCH_BUILD + """
try:
    m.load_state_dict(torch.load(sys.argv[1]))
except RuntimeError as e:
    assert "size mismatch for fc.weight" in str(e), str(e)
    sys.exit(0)
sys.exit("load_state_dict did not raise")"""
# timed inside the process: prints "build_s load_s load_state_dict_s"
TORCH_INPROCESS = """import sys, time, torch, torchvision
t0 = time.perf_counter()
m = torchvision.models.resnet50()
t1 = time.perf_counter()
sd = torch.load(sys.argv[1])
t2 = time.perf_counter()
m.load_state_dict(sd)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)"""

GEN_CHECKPOINTS = """import os, sys, torch, torchvision
for path, classes in ((sys.argv[1], 1000), (sys.argv[2], 10)):
    if os.path.exists(path):
        continue
    torch.save(torchvision.models.resnet50(num_classes=classes).state_dict(), path + ".tmp")
    os.replace(path + ".tmp", path)"""


def generate(python, desc, good, bad):
    """Writes whichever of the three files is missing; False on failure."""
    if not os.path.exists(desc):
        tmp = desc + ".tmp"
        if os.path.exists(tmp):
            os.unlink(tmp)
        p = subprocess.run([python, EXPORTER, "torchvision.models:resnet50",
                            "--input", "x=N,3,224,224", "-o", tmp],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            print("measure_check: tinspect-export failed (exit %d):\n%s"
                  % (p.returncode, p.stdout.decode(errors="replace")))
            return False
        os.replace(tmp, desc)
    if not (os.path.exists(good) and os.path.exists(bad)):
        p = subprocess.run([python, "-c", GEN_CHECKPOINTS, good, bad],
                           stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            print("measure_check: writing the ResNet-50 checkpoints failed (exit %d)"
                  % p.returncode)
            return False
    return True


def check_json(ti, desc, ckpt):
    """tinspect check --json's document and exit status, once, untimed."""
    p = subprocess.run([ti, "check", desc, ckpt, "--json"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        return json.loads(p.stdout), p.returncode
    except ValueError:
        return None, p.returncode


def torch_inprocess(python, path, runs):
    """Best in-process (build, torch.load, load_state_dict) seconds, or None."""
    best = None
    for _ in range(runs):
        p = subprocess.run([python, "-c", TORCH_INPROCESS, path], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        if p.returncode != 0:
            return None
        v = [float(x) for x in p.stdout.split()]
        best = v if best is None else [min(x, y) for x, y in zip(best, v)]
    return best


def main():
    a = bench_args(5)

    ti = a.tinspect
    if not a.no_torch and subprocess.run(
            [a.python, "-c", TORCH_IMPORT], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        print("measure_check: torch and torchvision are not importable with %s: "
              "skipping the PyTorch side" % a.python)
        a.no_torch = True
    desc = os.path.join(a.cache, "check_resnet50.json")
    good = os.path.join(a.cache, "resnet50.pt")
    bad = os.path.join(a.cache, "resnet50_fc10.pt")
    have = all(os.path.exists(f) for f in (desc, good, bad))
    if not have:
        if a.no_torch:
            print("measure_check: %s, resnet50.pt and resnet50_fc10.pt are not all cached in %s "
                  "and cannot be made without torch (set PYTHON=...): check benchmark not run"
                  % (os.path.basename(desc), a.cache))
            return 0
        os.makedirs(a.cache, exist_ok=True)
        if not generate(a.python, desc, good, bad):
            return 1

    # what the two checks answer, once, before timing them
    failed = []
    doc, rc = check_json(ti, desc, good)
    if rc != 0 or not doc or not doc.get("loads"):
        print("measure_check: FAILED: tinspect check %s %s exits %d, not 0 with loads: true"
              % (desc, good, rc))
        return 1
    ntensors = doc.get("matched")
    doc, rc = check_json(ti, desc, bad)
    mism = [m.get("key", m.get("name")) if isinstance(m, dict) else m
            for m in (doc or {}).get("size_mismatches", [])]
    if rc != 1 or not doc or doc.get("loads") is not False or not mism:
        print("measure_check: FAILED: tinspect check %s %s exits %d, not 1 with size mismatches"
              % (desc, bad, rc))
        return 1

    rss_method = "wait4"
    if os.access(GNU_TIME, os.X_OK) and rss_gnu_time(["/bin/true"]) is not None:
        rss_method = "time"
    res = {}

    def row(label, argv, expect=0):
        t, cpu, rss, rc, err = measure(argv, a.runs, rss_method, expect)
        res[label] = (t, cpu, rss, rc == expect)
        note = ""
        if rc != expect:
            failed.append(label)
            note = "FAILED exit %d (expected %d): %s" % (
                rc, expect, err.decode(errors="replace").strip()[:160])
        elif expect:
            note = "(exit %d, as expected)" % expect
        print("   %-40s %s %s %12s  %s" % (label, ms(t), ms(cpu), mb(rss) if rc == expect else "n/a",
                                         note))
        sys.stdout.flush()

    def time_of(label, cpu=False):
        t, c, _, ok = res.get(label, (None, None, 0, False))
        return (c if cpu else t) if ok else None

    def ratio(py, tlabel):
        tp, tt = time_of(py), time_of(tlabel)
        cp, ct = time_of(py, cpu=True), time_of(tlabel, cpu=True)
        if tp is None or not tt:
            return
        r = tp / tt
        ok = record("check ResNet-50: python / %s" % tlabel.strip(), r, "x", ">=", GOAL)
        print("     python / %-32s: %8.1fx wall, %.1fx CPU  (goal >= %dx)  %s"
              % (tlabel, r, cp / ct if ct else float("inf"), GOAL,
                 "ok" if ok else "BELOW GOAL"))

    header = "   %-40s %12s %12s %12s" % ("command", "best wall", "best CPU", "peak RSS")
    print("== tinspect check: %s (%.1f kB, tinspect-export) against %s (%s, %s tensors)"
          % (desc, os.path.getsize(desc) / 1e3, good, mb(os.path.getsize(good)), ntensors))
    print("   peak RSS via %s; CPU is user + system time from wait4(); load average "
          "%.1f on %d cores" % ("/usr/bin/time -f %M" if rss_method == "time"
                                else "wait4() ru_maxrss (floor: this Python's own RSS)",
                                os.getloadavg()[0], os.cpu_count() or 0))
    print(header)
    row("tinspect check (table)", [ti, "check", desc, good])
    row("tinspect check --json", [ti, "check", desc, good, "--json"])
    if not a.no_torch:
        row("python: torch.load + load_state_dict", [a.python, "-c", TORCH_FULL, good])
        row("  (import torch, torchvision)", [a.python, "-c", TORCH_IMPORT])
        row("  (imports + build resnet50())", [a.python, "-c", TORCH_BUILD])
    row("  (floor: tinspect --version)", [ti, "--version"])
    print("   ratios:")
    if a.no_torch:
        print("     python / tinspect check: skipped (torch not importable)")
    else:
        ratio("python: torch.load + load_state_dict", "tinspect check (table)")
        ratio("python: torch.load + load_state_dict", "tinspect check --json")
        inproc = torch_inprocess(a.python, good, a.runs)
        if inproc is not None:
            print("     (python, timed inside the process, best of %d: build resnet50() %.1f ms, "
                  "torch.load %.1f ms, load_state_dict %.1f ms)"
                  % (a.runs, inproc[0] * 1e3, inproc[1] * 1e3, inproc[2] * 1e3))
            t = time_of("tinspect check (table)")
            if t:
                print("     (torch.load + load_state_dict alone, in a warm process / tinspect "
                      "check, whole process: %.1fx)" % ((inproc[1] + inproc[2]) / t))

    print("== tinspect check, failing: %s (%s; fc resized to 10 classes: size mismatch for %s)"
          % (bad, mb(os.path.getsize(bad)), ", ".join(str(m) for m in mism)))
    print(header)
    row("tinspect check (table)  [fails]", [ti, "check", desc, bad], expect=1)
    row("tinspect check --json  [fails]", [ti, "check", desc, bad, "--json"], expect=1)
    if not a.no_torch:
        row("python: load_state_dict raises  [fails]", [a.python, "-c", TORCH_FAIL, bad])
        print("   ratios:")
        ratio("python: load_state_dict raises  [fails]", "tinspect check (table)  [fails]")
        ratio("python: load_state_dict raises  [fails]", "tinspect check --json  [fails]")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
