"""memshim_run.py - shared plumbing of the conformance scripts that measure
memory (memory_ops.py, memory_optim.py, memory_conformance.py,
export_conformance.py).

build_shim() compiles tests/tools/memshim.c (the team's LD_PRELOAD allocation
tracker) into a fresh temporary directory; run_worker() runs one measurement in
a child python under LD_PRELOAD with one thread and returns the JSON object the
child prints on its last stdout line. In the child, Shim() reads the counters
and uniq_bytes() sizes tensors as their storages. need_torch() is a script's
first step: PyTorch importable, else the script again under $PYTHON, else a skip.
"""
import ctypes
import gc
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHIM_SRC = os.path.join(ROOT, "tests", "tools", "memshim.c")


def need_torch(modules, skipped):
    """Imports modules ("torch", "torchvision"); when one fails (not installed, or a broken
    install), runs this script again, once, under $PYTHON (default /usr/bin/python3), or
    prints skipped (its %s: this interpreter) and exits 0."""
    try:
        for name in modules:
            __import__(name)
    except Exception:
        target = os.environ.get("PYTHON", "/usr/bin/python3")
        if (not os.environ.get("_TINSPECT_CONF_REEXEC") and os.path.exists(target)
                and os.path.realpath(target) != os.path.realpath(sys.executable)):
            os.environ["_TINSPECT_CONF_REEXEC"] = "1"
            os.execv(target, [target] + sys.argv)
        print(skipped % sys.executable)
        sys.exit(0)


def uniq_bytes(tensors):
    """Bytes of the storages under tensors (None entries skipped), each storage counted once
    at the largest size seen: a tied weight or a view adds nothing."""
    seen = {}
    for t in tensors:
        if t is None:
            continue
        s = t.storage()
        seen[s.data_ptr()] = max(seen.get(s.data_ptr(), 0), s.nbytes())
    return sum(seen.values())


def build_shim():
    """Compile memshim.c into a new temp dir; returns (tmpdir, path of memshim.so)."""
    tmp = tempfile.mkdtemp(prefix="memshim-")
    so = os.path.join(tmp, "memshim.so")
    cc = os.environ.get("CC", "cc")
    subprocess.check_call([cc, "-O2", "-shared", "-fPIC", "-o", so, SHIM_SRC, "-ldl"])
    return tmp, so


def child_env(so):
    env = dict(os.environ)
    env["LD_PRELOAD"] = so
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    env["MEMSHIM_ACTIVE"] = "1"
    return env


def run_worker(so, script, args, timeout=900):
    p = subprocess.run([sys.executable, script, "--worker"] + list(args), env=child_env(so),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=timeout)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": "exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[-3:])}
    return json.loads(lines[-1])


def baseline(shim):
    """One thread; the lazy library buffers (BLAS, oneDNN, the autograd engine)
    made by a small backward; then the live bytes every peak is measured above.
    Import what else allocates on import (torchvision) before calling it."""
    import torch
    torch.set_num_threads(1)
    a = torch.randn(64, 64, requires_grad=True)
    (a @ a).relu().sum().backward()
    del a
    return shim.live()


class Shim:
    def __init__(self):
        lib = ctypes.CDLL(None)
        try:
            lib.memshim_live.restype = ctypes.c_longlong
            lib.memshim_peak.restype = ctypes.c_longlong
        except AttributeError:
            raise SystemExit("memshim is not preloaded (run the script without --worker)")
        self.lib = lib

    def live(self, collect=True):
        if collect:
            gc.collect()
        return self.lib.memshim_live()

    def peak(self):
        return self.lib.memshim_peak()

    def reset(self):
        self.lib.memshim_reset()


def mb(n):
    return "%.2fMB" % (n / 1048576.0)
