#!/usr/bin/env python3
"""
Measures whole-process wall time (best of N) and peak RSS of the commands
that bench.sh compares, for one checkpoint, and prints a table and ratios.

    python3 bench/measure.py --tinspect ./tinspect [--python /usr/bin/python3]
                             [--runs 5] [--no-torch] FILE

Wall time is time.perf_counter() around fork/exec/wait of the process itself
(no shell in between); peak RSS is the child's own ru_maxrss from wait4(2),
so no /usr/bin/time is needed. Each command runs once untimed first (page
cache warm-up). Output goes to /dev/null.

Needs only the Python standard library.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goals import record  # noqa: E402


def run_once(argv):
    """One run: wall time, the child's CPU time (user + system), its peak RSS in bytes
    (wait4's ru_maxrss, KiB on Linux), exit status and standard error."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # read stderr before waiting (avoids a pipe stall); then wait4 for rusage
    err = p.stderr.read()
    p.stderr.close()
    _, status, ru = os.wait4(p.pid, 0)
    t = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else (status >> 8)
    return t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, rc, err


GNU_TIME = "/usr/bin/time"


def rss_gnu_time(argv, expect=0):
    """Peak RSS in bytes via GNU time -f %M of a command expected to exit `expect` (GNU
    time exits with the command's status), or None if unusable."""
    fd, out = tempfile.mkstemp(prefix="measure-rss-")
    os.close(fd)
    try:
        p = subprocess.run([GNU_TIME, "-f", "%M", "-o", out] + argv,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if p.returncode != expect:
            return None
        with open(out) as f:
            return int(f.read().strip().splitlines()[-1]) * 1024
    except Exception:
        return None
    finally:
        os.unlink(out)


# A process's peak resident set moves with where address-space randomisation puts its libraries:
# the pages mapped around each fault in their code differ. tinspect inspecting vit_l_16 peaks
# between 3.13 and 3.41 MB over 20 runs (3.30 MB every time under setarch -R), /bin/true between
# 0.97 and 1.09 MB, so the peak of each side is the median of this many runs, not their maximum.
RSS_RUNS = 5


def measure(argv, runs, rss_method, expect=0):
    """Best wall and best CPU time over `runs` runs after a warm-up, for a command
    expected to exit `expect`; peak RSS: the median over those runs, or over RSS_RUNS
    more by GNU time (rss_method "time"). -> (best, cpu, peak, rc, err); best None when
    it failed."""
    run_once(argv)                          # warm-up
    best, cpu, peaks, rc, err = None, None, [], 0, b""
    for _ in range(runs):
        t, c, rss, rc, err = run_once(argv)
        if rc != expect:
            return None, None, 0, rc, err
        best = t if best is None else min(best, t)
        cpu = c if cpu is None else min(cpu, c)
        peaks.append(rss)
    if rss_method == "time":
        vals = [rss_gnu_time(argv, expect) for _ in range(RSS_RUNS)]
        if all(v is not None for v in vals):
            peaks = vals
    return best, cpu, sorted(peaks)[len(peaks) // 2], rc, err


DROP = "/proc/sys/vm/drop_caches"


def can_drop():
    """Whether the page cache can be dropped (root): cold-cache timings."""
    try:
        with open(DROP, "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def drop_caches():
    os.sync()
    with open(DROP, "w") as f:
        f.write("3\n")


def best_of(argv, runs, cold=False, ok=(0,), cleanup=None, who="measure"):
    """Best wall time of `runs` runs: each after dropping the page cache when cold, else
    after one untimed warm-up run; cleanup() after each. Exits naming `who` when the
    command's status is not in ok."""
    best = None
    for i in range(runs + (0 if cold else 1)):
        if cold:
            drop_caches()
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t = time.perf_counter() - t0
        if p.returncode not in ok:
            sys.exit("%s: %s failed (exit %d): %s" % (who, " ".join(argv[:3]), p.returncode,
                                                     p.stderr.decode(errors="replace").strip()))
        if cleanup:
            cleanup()
        if cold or i > 0:
            best = t if best is None or t < best else best
    return best


def bench_args(runs, tinspect_required=False):
    """The arguments every measure_*.py takes: CACHE (where bench/gen.py writes the files),
    --tinspect, --python, --runs and --no-torch."""
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    if tinspect_required:
        ap.add_argument("--tinspect", required=True)
    else:
        ap.add_argument("--tinspect", default="./tinspect")
    ap.add_argument("--python", default=os.environ.get("PYTHON", "/usr/bin/python3"))
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--no-torch", action="store_true")
    return ap.parse_args()


def mb(n):
    return "%.1f MB" % (n / 1e6) if n >= 1e5 else "%.1f kB" % (n / 1e3)


def ms(t):
    return "%9.1f ms" % (t * 1e3) if t is not None else "      n/a   "


def data_pkl_size(path):
    with zipfile.ZipFile(path) as z:
        for i in z.infolist():
            if i.filename.endswith("/data.pkl") or i.filename == "data.pkl":
                return i.file_size, len(z.infolist())
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--tinspect", default="./tinspect")
    ap.add_argument("--python", default=os.environ.get("PYTHON", "/usr/bin/python3"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()

    f = a.file
    name = os.path.basename(f)
    fsize = os.path.getsize(f)
    pkl, nrec = data_pkl_size(f)
    print("== %s" % f)
    print("   file %s (%d bytes), data.pkl %s (%d bytes), %d zip records"
          % (mb(fsize), fsize, mb(pkl), pkl, nrec))

    cmds = [
        ("tinspect --json", [a.tinspect, f, "--json"]),
        ("tinspect (table)", [a.tinspect, f]),
        ("unzip -p data.pkl", ["unzip", "-p", f, "*/data.pkl"]),
        ("tinspect scan -q", [a.tinspect, "scan", "-q", f]),
    ]
    if not a.no_torch:
        cmds.append(("torch.load meta", [a.python, "-c",
                     "import sys, torch; torch.load(sys.argv[1], map_location='meta')", f]))
        # PyTorch's own safety check: the weights_only unpickler, which refuses what it does not allow.
        cmds.append(("torch.load weights_only", [a.python, "-c",
                     "import sys, torch; torch.load(sys.argv[1], map_location='meta', weights_only=True)", f]))
        cmds.append(("  (python: import torch)", [a.python, "-c", "import torch"]))
    cmds.append(("  (floor: /bin/true)", ["/bin/true"]))

    # ru_maxrss from wait4 counts the forked copy of this Python process too
    # (Linux carries maxrss across exec), so it has a floor of our own RSS;
    # GNU time forks from a tiny process and has a floor of ~1-2 MB.
    rss_method = "wait4"
    if os.access(GNU_TIME, os.X_OK) and rss_gnu_time(["/bin/true"]) is not None:
        rss_method = "time"
    print("   peak RSS via %s" % ("/usr/bin/time -f %M" if rss_method == "time"
                                   else "wait4() ru_maxrss (floor: this Python's own RSS)"))
    res = {}
    print("   %-26s %12s %12s  %s" % ("command", "best wall", "peak RSS", ""))
    for label, argv in cmds:
        t, _, rss, rc, err = measure(argv, a.runs, rss_method)
        res[label] = (t, rss, rc)
        note = "" if rc == 0 else "FAILED exit %d: %s" % (
            rc, err.decode(errors="replace").strip()[:120])
        print("   %-26s %s %12s  %s" % (label, ms(t), mb(rss) if rc == 0 else "n/a", note))
        sys.stdout.flush()

    def ratio(x, y):
        tx, ty = res.get(x, (None,))[0], res.get(y, (None,))[0]
        if tx is None or ty is None or ty == 0:
            return None
        return tx / ty

    tj = res["tinspect --json"]
    print("   ratios:")
    r = ratio("torch.load meta", "tinspect --json")
    if r is not None:
        ok = record("inspect %s: torch.load meta / tinspect --json" % name, r, "x", ">=", 100)
        print("     torch.load / tinspect --json : %8.1fx  (goal >= 100x)  %s"
              % (r, "ok" if ok else "BELOW GOAL"))
        r2 = ratio("torch.load meta", "tinspect (table)")
        if r2 is not None:
            print("     torch.load / tinspect table  : %8.1fx" % r2)
        t_imp = res.get("  (python: import torch)", (None,))[0]
        t_load = res["torch.load meta"][0]
        if t_imp is not None and t_load is not None and tj[0]:
            print("     (torch.load minus import torch: %.1f ms, %.1fx tinspect)"
                  % ((t_load - t_imp) * 1e3, (t_load - t_imp) / tj[0]))
    elif a.no_torch:
        print("     torch.load / tinspect        : skipped (torch not importable)")
    r = ratio("torch.load weights_only", "tinspect scan -q")
    if r is not None:
        print("     torch weights_only / scan    : %8.1fx" % r)
    r = ratio("tinspect --json", "unzip -p data.pkl")
    if r is not None:
        ok = record("inspect %s: tinspect --json / unzip of data.pkl" % name, r, "x", "<=", 1.5)
        print("     tinspect --json / unzip      : %8.2fx  (goal <= 1.5x)  %s"
              % (r, "ok" if ok else "ABOVE GOAL"))
        r = ratio("tinspect (table)", "unzip -p data.pkl")
        if r is not None:
            print("     tinspect table / unzip       : %8.2fx" % r)
    if tj[2] == 0 and pkl:
        floor = res["  (floor: /bin/true)"][1]
        print("     tinspect --json peak RSS     : %s = %.2fx data.pkl (%s); "
              "above the /bin/true floor: %s = %.2fx"
              % (mb(tj[1]), tj[1] / pkl, mb(pkl), mb(tj[1] - floor),
                 (tj[1] - floor) / pkl))
        # the ceiling: 4x the pickle plus 2 MB, above what an empty process holds
        record("inspect %s: peak RSS above /bin/true, MB" % name, (tj[1] - floor) / 1e6, "MB", "<=",
               (4 * pkl + 2e6) / 1e6, "4x data.pkl + 2 MB")
    ok = all(v[2] == 0 for v in res.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
