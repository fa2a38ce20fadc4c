#!/usr/bin/python3
"""
Conformance test: what `tinspect convert` and `tinspect materialize -o` write,
loaded by real PyTorch.

Usage:  /usr/bin/python3 tests/conformance/convert_conformance.py [./tinspect] [-v] [--only SUBSTR]

Checks, each a case that passes or fails:

  roundtrip:tied.pt:tie  tied.pt through safetensors: the tie is written once,
                      as "tie.decoder.weight" in __metadata__, and read back as one
                      storage. (Every fixture through every writer path, bit for
                      bit: tests/conformance/roundtrip_conformance.py.)
  weights_only        every .pt this script has tinspect write loads with
                      torch.load(weights_only=True) (checked as each is read).
  dtype:DT            a torch.save'd checkpoint of random bit patterns and
                      special values (NaN with payloads, +-inf, -0.0,
                      subnormals, ties to even, overflow) of every floating
                      dtype, with int and bool tensors, through --dtype DT,
                      against torch's own .to(DT), bit for bit; ints and bools
                      unchanged.
  init:MODEL          materialize fixtures/models/MODEL.json --fill init -o X.pt;
                      torchvision's MODEL loads it with load_state_dict(strict=True);
                      Conv and Linear weights and biases lie within PyTorch's
                      default bounds (kaiming_uniform_(a=sqrt(5)):
                      1/sqrt(fan_in)) and fill them; BatchNorm weight/var ones,
                      bias/mean zeros, num_batches_tracked 0.
  tie:materialize     a description with a tied weight written with -o shares
                      one storage in torch.
  seed                same --seed: identical files; another seed: other data;
                      randn has mean ~0 and std ~1, rand lies in [0, 1).
  interrupt:SIG       `convert big.pt -o out.pt` on a 300 MB checkpoint,
                      killed mid-write with SIGTERM, SIGINT or SIGKILL: out.pt
                      does not exist and big.pt is unchanged; after SIGTERM and
                      SIGINT no temporary file is left; after SIGKILL the
                      temporary .out.pt.tinspect-XXXXXX may remain (reported,
                      then removed).
  outfile:*           an existing OUT is refused without --force (exit 2,
                      untouched) and replaced with it; OUT == IN is refused
                      (exit 2), by another spelling or a hard link too.

Prints one line per case and ends with "N passed, M failed"; exits 1 if any
failed. Prints "skipped" and exits 0 when torch is not importable.
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

try:
    import torch
except Exception:  # ImportError, or a broken install
    target = os.environ.get("PYTHON", "/usr/bin/python3")
    if (not os.environ.get("_TINSPECT_CONVERT_REEXEC") and os.path.exists(target)
            and os.path.realpath(target) != os.path.realpath(sys.executable)):
        os.environ["_TINSPECT_CONVERT_REEXEC"] = "1"
        os.execv(target, [target] + sys.argv)
    print("convert conformance: skipped (torch is not importable with %s)" % sys.executable)
    sys.exit(0)

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "fixtures")

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}



class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Runner:
    def __init__(self, binary, tmp, verbose):
        self.binary = binary
        self.tmp = tmp
        self.verbose = verbose
        self.written_pt = 0

    def run(self, *args, expect=0):
        p = subprocess.run([self.binary] + [str(a) for a in args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"))
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        if expect is not None and p.returncode != expect:
            raise Failure("tinspect %s: exit %d, want %d: %s" % (" ".join(map(str, args)), p.returncode, expect,
                                                                  err.strip() or out.strip()))
        return p.returncode, out, err

    def path(self, name):
        return os.path.join(self.tmp, name)

    def load(self, path):
        """What tinspect wrote, as torch reads it: weights_only=True must work (check b)."""
        try:
            obj = torch.load(path, weights_only=True)
        except Exception as e:
            raise Failure("torch.load(%s, weights_only=True): %s: %s" % (os.path.basename(path),
                                                                         type(e).__name__, e))
        self.written_pt += 1
        return obj


# ---- helpers ----

def holds_tensor(obj, memo):
    """Whether a container holds a tensor somewhere (memoized: shared_values.pt shares its dicts 2^N ways)."""
    if isinstance(obj, torch.Tensor):
        return True
    if not isinstance(obj, (dict, list, tuple)):
        return False
    if id(obj) not in memo:
        memo[id(obj)] = False  # cycles hold nothing new
        items = obj.values() if isinstance(obj, dict) else obj
        memo[id(obj)] = any(holds_tensor(v, memo) for v in items)
    return memo[id(obj)]


def flatten(obj, prefix=None, out=None, memo=None):
    """name -> tensor, with tinspect's naming: dotted paths through dicts, lists and tuples."""
    if out is None:
        out, memo = {}, {}
    if isinstance(obj, torch.Tensor):
        out["(root)" if prefix is None else prefix] = obj  # torch.save(tensor): tinspect's name for the root
    elif not holds_tensor(obj, memo):
        pass
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, "%s.%s" % (prefix, k) if prefix is not None and prefix != "" else str(k), out, memo)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flatten(v, "%s.%d" % (prefix, i) if prefix is not None and prefix != "" else str(i), out, memo)
    return out


def raw(t):
    """A tensor's elements as bytes, row-major, whatever its layout."""
    t = t.detach().reshape(-1).contiguous()
    if t.is_complex():
        t = torch.view_as_real(t).reshape(-1).contiguous()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if t.numel() == 0:
        return b""
    return t.view(torch.uint8).numpy().tobytes()


def same_storage(a, b):
    return a.storage().data_ptr() == b.storage().data_ptr()


def compare(want, got, what):
    """want, got: name -> tensor. Names, dtypes, shapes and bytes."""
    check(list(got) == list(want) or set(got) == set(want),
          "%s: names differ: missing %s, extra %s" % (what, sorted(set(want) - set(got))[:5],
                                                    sorted(set(got) - set(want))[:5]))
    for name, a in want.items():
        b = got[name]
        check(b.dtype == a.dtype, "%s: '%s' is %s, want %s" % (what, name, b.dtype, a.dtype))
        check(tuple(b.shape) == tuple(a.shape), "%s: '%s' has shape %s, want %s" % (what, name, tuple(b.shape),
                                                                                   tuple(a.shape)))
        if raw(a) != raw(b):
            ra, rb = raw(a), raw(b)
            at = next(i for i in range(min(len(ra), len(rb))) if ra[i] != rb[i]) if len(ra) == len(rb) else -1
            raise Failure("%s: '%s' differs from byte %d" % (what, name, at))


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- (a) and (b): the tie through safetensors ----

def tied_fixture_case(r):
    """tied.pt explicitly: the two names of the tied weight share one storage after the round trip."""
    st, pt = r.path("tied_check.safetensors"), r.path("tied_check.pt")
    r.run("convert", os.path.join(FIXTURES, "tied.pt"), "-o", st, "-q")
    r.run("convert", st, "-o", pt, "-q")
    sd = r.load(pt)
    check(same_storage(sd["embed.weight"], sd["decoder.weight"]), "embed.weight and decoder.weight no longer share")
    check(not same_storage(sd["embed.weight"], sd["decoder.bias"]), "decoder.bias shares embed.weight's storage")
    with open(st, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    check(header.get("__metadata__", {}).get("tie.decoder.weight") == "embed.weight",
          "safetensors header lacks tie.decoder.weight: %s" % header.get("__metadata__"))
    check("decoder.weight" not in header, "the tie was written twice in the safetensors file")
    return "tie kept through safetensors metadata"


# ---- (c): --dtype against torch's .to() ----

def special_values():
    s = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), -float("nan"),
         65504.0, 65519.0, 65520.0, 65536.0, 1e5, -1e5, 3.0e38, 3.4028234663852886e38, 1e300, -1e-300,
         1.17549435e-38, 1e-40, 1.4e-45, 5e-324, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -14,
         6e-8, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -24,
         1 + 3 * 2.0 ** -24, 1 + 2.0 ** -11 + 2.0 ** -40, 0.1, 1 / 3, 2.0 ** 127 * 1.9999999]
    return torch.tensor(s, dtype=torch.float64)


def random_bits(dtype, n, gen):
    width = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
             torch.float64: torch.int64}[dtype]
    info = torch.iinfo(width)
    return torch.randint(info.min, info.max, (n,), dtype=width, generator=gen).view(dtype)


def dtype_source(r):
    path = r.path("dtype_source.pt")
    if os.path.exists(path):
        return path, torch.load(path)
    gen = torch.Generator().manual_seed(1234)
    sd = {}
    for dt, name in ((torch.float32, "f32"), (torch.float64, "f64"), (torch.float16, "f16"),
                     (torch.bfloat16, "bf16")):
        sd[name + ".special"] = special_values().to(dt)
        sd[name + ".bits"] = random_bits(dt, 50000, gen)            # NaN payloads, subnormals, everything
        sd[name + ".normal"] = (torch.randn(4096, generator=gen, dtype=torch.float64) *
                                torch.logspace(-30, 30, 4096, dtype=torch.float64)).to(dt)
    sd["f32.matrix_t"] = torch.randn(64, 48, generator=gen).t()      # a strided view: gathered, then cast
    # float32 NaNs with payloads and signalling NaNs, both signs
    sd["f32.nans"] = torch.tensor([0x7FC00001, 0x7F800001, 0xFFC12345 - 2 ** 32, 0x7FBFFFFF, 0xFFFFFFFF - 2 ** 32],
                                  dtype=torch.int32).view(torch.float32)
    sd["f64.nans"] = torch.tensor([0x7FF8000000000001, 0x7FF0000000000001, -1], dtype=torch.int64).view(torch.float64)
    sd["f16.nans"] = torch.tensor([0x7E01, 0x7C01, -1], dtype=torch.int16).view(torch.float16)
    sd["bf16.nans"] = torch.tensor([0x7FC1, 0x7F81, -1], dtype=torch.int16).view(torch.bfloat16)
    sd["i64"] = torch.randint(-2 ** 62, 2 ** 62, (100,), generator=gen)
    sd["i32"] = torch.randint(-2 ** 31, 2 ** 31 - 1, (100,), dtype=torch.int32, generator=gen)
    sd["i8"] = torch.arange(-128, 128, dtype=torch.int8)
    sd["u8"] = torch.arange(0, 256, dtype=torch.uint8)
    sd["b"] = torch.tensor([True, False, True])
    sd["c64"] = torch.tensor([1 + 2j, float("nan")], dtype=torch.complex64)
    torch.save(sd, path)
    return path, torch.load(path)


def bits_of(t):
    """A tensor's elements as signed integers of its width, row-major."""
    t = t.reshape(-1).contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def dtype_case(r, name):
    to = DTYPES[name]
    path, sd = dtype_source(r)
    out = r.path("dtype_%s.pt" % name)
    r.run("convert", path, "-o", out, "-q", "--dtype", name)
    got = flatten(r.load(out))
    check(set(got) == set(sd), "names differ")
    mismatches, tails = [], 0
    for n, t in sd.items():
        want = t.to(to) if t.dtype in FLOATS else t
        g = got[n]
        check(g.dtype == want.dtype, "'%s' is %s, want %s" % (n, g.dtype, want.dtype))
        if raw(g) == raw(want):
            continue
        if not t.is_floating_point():
            mismatches.append("'%s' changed" % n)
            continue
        a, b, src = bits_of(want), bits_of(g), bits_of(t)
        bad = (a != b).nonzero().reshape(-1).tolist()
        # torch's own float64 -> bfloat16 is not one function: its vector loop (16 elements at a
        # time on AVX2) writes NaN as 0xFFFF, its scalar loop over the last numel % 16 elements
        # as 0x7FC0; tinspect writes 0xFFFF everywhere (cast.h). Counted, not failed.
        n_all = t.numel()
        if t.dtype == torch.float64 and to == torch.bfloat16:
            tail = [k for k in bad if k >= n_all - n_all % 16 and bool(torch.isnan(t.reshape(-1)[k]))
                    and int(a[k]) & 0xFFFF == 0x7FC0 and int(b[k]) & 0xFFFF == 0xFFFF]
            tails += len(tail)
            bad = [k for k in bad if k not in tail]
        if bad:
            k, mask = bad[0], lambda x, w: int(x) & ((1 << 8 * w) - 1)
            mismatches.append("'%s'[%d]: from 0x%x got 0x%x, torch .to() gives 0x%x (%d elements differ)" % (
                n, k, mask(src[k], t.element_size()), mask(b[k], g.element_size()), mask(a[k], g.element_size()),
                len(bad)))
    check(not mismatches, "; ".join(mismatches[:4]))
    note = "%d tensors, %d floating elements" % (len(sd), sum(t.numel() for t in sd.values() if t.dtype in FLOATS))
    if tails:
        note += "; NOTE: %d float64 NaNs in torch's scalar tail are 0x7FC0 in torch, 0xFFFF here" % tails
    return note


# ---- (e): init against torchvision ----

def fan_in(w):
    return w.shape[1] * (w[0][0].numel() if w.dim() > 2 else 1)


def init_case(r, model_name):
    import torchvision
    desc = os.path.join(FIXTURES, "models", model_name + ".json")
    out = r.path(model_name + ".init.pt")
    r.run("materialize", desc, "--fill", "init", "-o", out, "-q", "--seed", "3")
    sd = r.load(out)
    model = getattr(torchvision.models, model_name)()
    model.load_state_dict(sd, strict=True)
    check(list(sd) == list(model.state_dict()), "state_dict order differs from torchvision's")
    checked = 0
    for mname, m in model.named_modules():
        p = (mname + ".") if mname else ""
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            w = sd[p + "weight"]
            bound = 1 / (fan_in(w) ** 0.5)  # kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3) * sqrt(3 / fan_in)
            mx = float(w.abs().max())
            check(mx <= bound * (1 + 1e-6), "%sweight: max |w| %.6g past the bound %.6g" % (p, mx, bound))
            if w.numel() >= 1000:
                check(mx >= 0.95 * bound, "%sweight: max |w| %.6g, far inside the bound %.6g" % (p, mx, bound))
                check(abs(float(w.double().mean())) < 0.1 * bound, "%sweight: mean %.3g" % (p, float(w.mean())))
                # uniform on [-b, b]: std b/sqrt(3)
                std = float(w.double().std())
                check(abs(std - bound / 3 ** 0.5) < 0.1 * bound, "%sweight: std %.4g, want %.4g" % (
                    p, std, bound / 3 ** 0.5))
            if m.bias is not None:
                b = sd[p + "bias"]
                check(float(b.abs().max()) <= bound * (1 + 1e-6), "%sbias past 1/sqrt(fan_in)" % p)
                check(b.numel() < 100 or float(b.abs().max()) > 0.5 * bound, "%sbias is not spread" % p)
            checked += 1
        elif isinstance(m, torch.nn.BatchNorm2d):
            check(bool((sd[p + "weight"] == 1).all()), "%sweight is not ones" % p)
            check(bool((sd[p + "bias"] == 0).all()), "%sbias is not zeros" % p)
            check(bool((sd[p + "running_mean"] == 0).all()), "%srunning_mean is not zeros" % p)
            check(bool((sd[p + "running_var"] == 1).all()), "%srunning_var is not ones" % p)
            t = sd[p + "num_batches_tracked"]
            check(t.dtype == torch.int64 and t.dim() == 0 and int(t) == 0, "%snum_batches_tracked" % p)
            checked += 1
    # the model runs with them
    model.eval()
    with torch.no_grad():
        y = model(torch.randn(1, 3, 64, 64))
    check(bool(torch.isfinite(y).all()), "the model's output is not finite")
    return "load_state_dict(strict=True), %d modules' statistics" % checked


def tie_materialize_case(r):
    desc = r.path("tied.json")
    with open(desc, "w") as f:
        json.dump({"inputs": {"x": {"shape": [2, 4], "dtype": "int64"}},
                   "modules": {"emb": {"type": "Embedding", "num_embeddings": 10, "embedding_dim": 4},
                               "head": {"type": "Linear", "in_features": 4, "out_features": 10}},
                   "tied": {"head.weight": "emb.weight"},
                   "graph": [{"out": "h", "call": "emb", "args": ["x"]}, {"out": "y", "call": "head", "args": ["h"]}],
                   "outputs": ["y"]}, f)
    out = r.path("tied_init.pt")
    r.run("materialize", desc, "--fill", "init", "-o", out, "-q")
    sd = r.load(out)
    check(same_storage(sd["emb.weight"], sd["head.weight"]), "the tied weight is two storages in torch")
    check(torch.equal(sd["emb.weight"], sd["head.weight"]), "the tied weight differs")
    check(not same_storage(sd["emb.weight"], sd["head.bias"]), "head.bias shares the weight's storage")
    st = r.path("tied_init.safetensors")
    r.run("materialize", desc, "--fill", "init", "-o", st, "-q")
    back = r.path("tied_init.back.pt")
    r.run("convert", st, "-o", back, "-q")
    sd2 = r.load(back)
    check(same_storage(sd2["emb.weight"], sd2["head.weight"]), "the tie was lost through safetensors")
    compare(flatten(sd), flatten(sd2), "materialize torch vs safetensors")
    return "emb.weight and head.weight share one storage"


# ---- (f): seeds ----

def seed_case(r):
    desc = os.path.join(FIXTURES, "models", "resnet18.json")
    a, b, c = r.path("seed1a.pt"), r.path("seed1b.pt"), r.path("seed2.pt")
    fills = ["--fill", "randn", "--fill", "*num_batches_tracked=zeros"]
    r.run("materialize", desc, *fills, "--seed", "1", "-o", a, "-q")
    r.run("materialize", desc, *fills, "--seed", "1", "-o", b, "-q")
    r.run("materialize", desc, *fills, "--seed", "2", "-o", c, "-q")
    check(file_digest(a) == file_digest(b), "the same seed wrote different files")
    sa, sc = r.load(a), r.load(c)
    floats = [n for n, t in sa.items() if t.is_floating_point()]
    for n in floats:
        check(not torch.equal(sa[n], sc[n]), "'%s' is the same under seeds 1 and 2" % n)
    every = torch.cat([sa[n].reshape(-1).double() for n in floats])
    mean, std = float(every.mean()), float(every.std())
    check(abs(mean) < 0.005 and abs(std - 1) < 0.005, "randn over %d values: mean %.5f std %.5f" % (
        every.numel(), mean, std))
    # two tensors of one seed draw different streams
    check(not torch.equal(sa["layer1.0.conv1.weight"], sa["layer1.0.conv2.weight"]),
          "two tensors of one shape drew the same numbers")
    u = r.path("rand.pt")
    r.run("materialize", desc, "--fill", "rand", "--fill", "*num_batches_tracked=zeros", "-o", u, "-q")
    su = r.load(u)
    allu = torch.cat([t.reshape(-1).double() for t in su.values() if t.is_floating_point()])
    check(float(allu.min()) >= 0 and float(allu.max()) < 1, "rand outside [0, 1)")
    check(abs(float(allu.mean()) - 0.5) < 0.005, "rand mean %.5f" % float(allu.mean()))
    return "identical bytes for one seed; randn mean %.4f std %.4f over %d values" % (mean, std, every.numel())


# ---- (g): interrupted writes and the output file rules ----

def big_source(r):
    path = r.path("big.pt")
    if not os.path.exists(path):
        # 300 MB of float32 in several storages, and a strided view so that gathering happens too
        gen = torch.Generator().manual_seed(5)
        sd = {"w%d" % i: torch.rand(15_000_000, generator=gen) for i in range(5)}
        sd["t"] = torch.rand(1000, 1000, generator=gen).t()
        torch.save(sd, path)
    return path


def leftovers(r, stem):
    return sorted(f for f in os.listdir(r.tmp) if f.startswith("." + stem + ".tinspect-"))


def interrupt_case(r, sig):
    src = big_source(r)
    before = (os.path.getsize(src), os.stat(src).st_mtime_ns, file_digest(src))
    stem = "out_%s.pt" % signal.Signals(sig).name
    out = r.path(stem)
    p = subprocess.Popen([r.binary, "convert", src, "-o", out, "-q", "--dtype", "float64"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # wait until the temporary file holds some data: then the write is under way
    deadline, size = time.time() + 20, 0
    while time.time() < deadline and p.poll() is None:
        temps = leftovers(r, stem)
        if temps:
            try:
                size = os.path.getsize(os.path.join(r.tmp, temps[0]))
            except OSError:
                size = 0
            if size > 16 << 20:
                break
        time.sleep(0.002)
    check(p.poll() is None, "convert finished before it could be interrupted (exit %s)" % p.returncode)
    p.send_signal(sig)
    rc = p.wait(20)
    check(rc == -sig, "exit status %d, want death by signal %d" % (rc, sig))
    check(not os.path.exists(out), "%s exists after %s" % (stem, signal.Signals(sig).name))
    after = (os.path.getsize(src), os.stat(src).st_mtime_ns, file_digest(src))
    check(before == after, "the input changed")
    left = leftovers(r, stem)
    note = "killed at %d MB written; " % (size >> 20)
    if sig == signal.SIGKILL:
        note += "left behind: %s" % (", ".join(left) or "nothing")
        for f in left:
            os.unlink(os.path.join(r.tmp, f))
    else:
        check(not left, "temporary files left: %s" % left)
        note += "no temporary file left"
    return note


def outfile_case(r):
    src = os.path.join(FIXTURES, "tied.pt")
    out = r.path("existing.pt")
    with open(out, "wb") as f:
        f.write(b"not a checkpoint")
    rc, _, err = r.run("convert", src, "-o", out, "-q", expect=2)
    check("exists; give --force to replace it" in err, "stderr: %s" % err.strip())
    with open(out, "rb") as f:
        check(f.read() == b"not a checkpoint", "the existing file was touched")
    r.run("convert", src, "-o", out, "-q", "--force")
    sd = r.load(out)
    check(set(sd) == {"embed.weight", "decoder.weight", "decoder.bias"}, "--force wrote %s" % list(sd))
    mode = os.stat(out).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    check(mode == 0o666 & ~umask, "mode %o, want %o" % (mode, 0o666 & ~umask))
    check(not leftovers(r, "existing.pt"), "temporary files left")
    # OUT == IN, with and without --force, by other spellings and a hard link
    copy = r.path("input.pt")
    shutil.copy(src, copy)
    digest = file_digest(copy)
    link = r.path("input_link.pt")
    os.link(copy, link)
    spellings = [copy, os.path.join(r.tmp, ".", "input.pt"), link]
    for spelled in spellings:
        for force in ([], ["--force"]):
            rc, _, err = r.run("convert", copy, "-o", spelled, "-q", *force, expect=2)
            check("the output is also an input" in err, "stderr: %s" % err.strip())
    os.symlink(copy, r.path("input_symlink.pt"))
    r.run("convert", copy, "-o", r.path("input_symlink.pt"), "-q", "--force", expect=2)
    check(file_digest(copy) == digest, "the input changed")
    # materialize's -o follows the same rules
    r.run("materialize", copy, "-o", copy, "--force", "-q", expect=2)
    r.run("materialize", copy, "-o", out, "-q", expect=2)
    check(file_digest(copy) == digest, "the input changed")
    return "refused without --force, replaced with it, OUT == IN refused %d ways" % (2 * len(spellings) + 2)


# ---- main ----

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tinspect", nargs="?", default=os.path.join(ROOT, "tinspect"))
    ap.add_argument("-v", action="store_true", help="print tracebacks of failures")
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    binary = os.path.abspath(a.tinspect)
    if not os.access(binary, os.X_OK):
        print("convert conformance: '%s' is not an executable" % a.tinspect)
        return 2
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="tinspect-convert-conf-")
    r = Runner(binary, tmp, a.v)
    cases = [("roundtrip:tied.pt:tie", lambda: tied_fixture_case(r))]
    for name in DTYPES:
        cases.append(("dtype:" + name, lambda name=name: dtype_case(r, name)))
    for model in ("resnet18", "mobilenet_v2"):
        cases.append(("init:" + model, lambda model=model: init_case(r, model)))
    cases.append(("tie:materialize", lambda: tie_materialize_case(r)))
    cases.append(("seed", lambda: seed_case(r)))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        cases.append(("interrupt:" + signal.Signals(sig).name, lambda sig=sig: interrupt_case(r, sig)))
    cases.append(("outfile:force_and_same_file", lambda: outfile_case(r)))
    passed = failed = 0
    try:
        for name, fn in cases:
            if a.only and a.only not in name:
                continue
            t0 = time.time()
            try:
                note = fn()
                passed += 1
                print("ok   %-36s %5.2fs  %s" % (name, time.time() - t0, note or ""))
            except Exception as e:  # Failure, or torch refusing a file
                failed += 1
                print("FAIL %-36s %5.2fs  %s%s" % (name, time.time() - t0,
                                                   "" if isinstance(e, Failure) else type(e).__name__ + ": ", e))
                if a.v:
                    import traceback
                    traceback.print_exc()
            sys.stdout.flush()
    finally:
        if a.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%d .pt files written by tinspect loaded with weights_only=True" % r.written_pt)
    print("%d passed, %d failed (%.1f s)" % (passed, failed, time.time() - start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
