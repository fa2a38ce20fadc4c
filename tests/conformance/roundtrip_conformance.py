#!/usr/bin/python3
"""
Conformance test: every path by which tinspect writes tensor data, checked
against what PyTorch loads from the original.

Usage:  /usr/bin/python3 tests/conformance/roundtrip_conformance.py [./tinspect] [-v] [--only SUBSTR] [--keep]

Inputs: every fixtures/*.pt, every fixtures/safetensors/*.safetensors, the
sharded fixtures/safetensors/hf/model.safetensors.index.json, and
everything.pt, which this script saves with torch 1.13: every dtype 1.13 can
save, filled with random bit patterns (NaN payloads, subnormals, -0.0, every
bool byte torch makes), views with offsets and strides, transposed, stepped,
expanded (stride 0) and imaginary-part views, zero-size tensors and a
zero-size view at an offset, 0-dim tensors and a 0-dim view into a matrix,
tied tensors and distinct views sharing one storage, a Parameter; the same
without complex128 (materialize has no --exclude, and safetensors no
complex128); and two small files holding a quantized and a sparse tensor.
(fixtures/models/ holds model descriptions, not checkpoints: convert and
materialize of those are checked in convert_conformance.py.)

The reference is what PyTorch loads: torch.load(map_location='cpu') with
torch 1.13. For the PyTorch 2.x files 1.13 cannot load (torch2_*.pt:
_rebuild_tensor_v3, float8 and uint16/32/64 dtypes, the conj/neg metadata
argument, _rebuild_parameter_with_state), torch 1.13's own torch.load reads
them with its unpickler given the 2.x rebuild functions, written here after
torch/_utils.py of PyTorch 2.x: storages are loaded by torch, the views are
torch's, a conjugate or negative view is resolved with torch.conj_physical /
torch.neg, and a tensor of a dtype 1.13 lacks is compared as its raw bytes.
A safetensors input's reference is its header and bytes, read here by the
format's specification.

Paths, for each input (an output is read back with torch.load, with
weights_only=True whenever its dtypes are 1.13's, or with the reader above
for the 2.x dtypes; a safetensors output with the reader above, its
"tie.NAME" metadata taken as tinspect documents it):

  pt          convert IN -o X.pt                     compact: one storage per distinct view
  keep        convert IN -o X.pt --keep-storage      the input's storages, offsets and strides
  st          convert IN -o X.safetensors
  pt>pt pt>st st>pt st>st keep>st                    each output converted again
  mat.pt      materialize IN --fill load -o X.pt     storages kept
  mat.st      materialize IN --fill load -o X.safetensors

Each output must hold the reference's tensors under the same names, with the
same dtypes and shapes, and bit for bit the same values. Sharing: in a
compact output, the tensors that share a storage (or a safetensors tie) are
exactly those that are the same view in the reference (storage, offset,
shape, strides of the dims longer than 1, dtype, and the conj/neg bits); in
a kept output, exactly those that share a storage (a conjugate or negative
view gets a storage of its own, holding its resolved values), each at the
reference's offset and strides, in a storage of the reference's size.

What cannot be converted is asserted as a clear error, one 'tinspect:' line
on standard error naming the reason and the tensor, no output file: sparse
and quantized tensors and tensors saved from the meta device (every path),
complex32/complex128 and other dtypes safetensors has no name for (the
safetensors paths; then the rest converts with --exclude). A file that holds
no tensor is refused, with no output.

Prints one line per input and path and ends with "N passed, M failed";
exits 1 if any failed. Prints "skipped" and exits 0 when torch is not
importable.
"""
import argparse
import glob
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import types
import warnings

try:
    import torch
except Exception:  # ImportError, or a broken install
    target = os.environ.get("PYTHON", "/usr/bin/python3")
    if (not os.environ.get("_TINSPECT_ROUNDTRIP_REEXEC") and os.path.exists(target)
            and os.path.realpath(target) != os.path.realpath(sys.executable)):
        os.environ["_TINSPECT_ROUNDTRIP_REEXEC"] = "1"
        os.execv(target, [target] + sys.argv)
    print("roundtrip conformance: skipped (torch is not importable with %s)" % sys.executable)
    sys.exit(0)

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "fixtures")

# lightning_keys.pt is keyed by classes of a package this machine lacks: the
# generator's stand-ins make them importable, so that str() of each key, the
# name PyTorch users see, is the class's own: "<class 'pytorch_lightning...'>".
sys.path.insert(0, FIXTURES)
import gen_fixtures  # noqa: E402

gen_fixtures.lightning_classes()


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


# ---- what a tensor is, for comparing ----

# Element sizes of the dtypes torch 1.13 lacks (c10/core/ScalarType.h of PyTorch 2.x).
NEW_DTYPES = {"float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
              "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1, "uint16": 2, "uint32": 4, "uint64": 8,
              "bits8": 1, "bits16": 2, "bits1x8": 1, "bits2x4": 1, "bits4x2": 1}

# safetensors dtype names (huggingface/safetensors safetensors/src/tensor.rs Dtype) -> torch's
ST_DTYPES = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16", "I32": "int32",
             "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16", "BF16": "bfloat16",
             "F32": "float32", "F64": "float64", "C64": "complex64", "F8_E5M2": "float8_e5m2",
             "F8_E4M3": "float8_e4m3fn", "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz",
             "F8_E8M0": "float8_e8m0fnu"}
ST_NAMES = set(ST_DTYPES.values())


def dtype_name(dt):
    return str(dt).replace("torch.", "")


def element_size(name):
    if name in NEW_DTYPES:
        return NEW_DTYPES[name]
    return torch.empty((), dtype=getattr(torch, name)).element_size()


class Val:
    """A tensor as compared: dtype name, shape, its values' bytes in row-major order, and the view
    it was (storage identity, offset and strides in elements, the storage's bytes, conj/neg bits)."""

    def __init__(self, dtype, shape, data, storage, offset, stride, storage_nbytes, bits=(False, False),
                 kind="strided"):
        self.dtype, self.shape, self.data = dtype, tuple(shape), data
        self.storage, self.offset, self.stride = storage, offset, tuple(stride)
        self.storage_nbytes, self.bits, self.kind = storage_nbytes, bits, kind

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def view_key(self):
        """What makes two tensors the same view: strides of dims of size 1 do not count."""
        stride = tuple(s if n > 1 else 0 for n, s in zip(self.shape, self.stride))
        return (self.storage, self.offset, self.shape, stride, self.dtype, self.bits)

    def storage_key(self):
        """The storage a kept output gives it: a view with bits has one of its own, per dtype."""
        return (self.storage, self.bits, self.dtype if any(self.bits) else None)


class Raw:
    """A tensor of a dtype torch 1.13 lacks: a uint8 view of its storage with one more dim, the element's bytes."""

    def __init__(self, dtype, data):
        self.dtype, self.data = dtype, data


def tensor_bytes(t):
    t = t.detach().reshape(-1).contiguous()
    if t.is_complex():
        t = torch.view_as_real(t).reshape(-1).contiguous()
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def to_val(obj):
    """A loaded tensor (or Raw) as a Val; the view it was is _ti_view where a rebuild below resolved it."""
    if isinstance(obj, Raw):
        d, es = obj.data, NEW_DTYPES[obj.dtype]
        view = getattr(obj, "_ti_view", None) or (
            d.storage().data_ptr(), d.storage_offset() // es, tuple(s // es for s in d.stride()[:-1]),
            d.storage().nbytes(), (False, False))
        return Val(obj.dtype, d.shape[:-1], d.contiguous().numpy().tobytes() if d.numel() else b"",
                   view[0], view[1], view[2], view[3], view[4])
    t = obj
    if t.layout != torch.strided:
        return Val(dtype_name(t.dtype), t.shape, b"", None, 0, (), 0, kind="sparse")
    if t.is_quantized:
        return Val(dtype_name(t.dtype), t.shape, b"", None, 0, (), 0, kind="quantized")
    if t.device.type == "meta":
        return Val(dtype_name(t.dtype), t.shape, b"", None, 0, t.stride(), 0, kind="meta")
    view = getattr(t, "_ti_view", None) or (t.storage().data_ptr(), t.storage_offset(), tuple(t.stride()),
                                             t.storage().nbytes(), (False, False))
    return Val(dtype_name(t.dtype), t.shape, tensor_bytes(t), view[0], view[1], view[2], view[3], view[4])


def holds_tensor(obj, memo):
    if isinstance(obj, (torch.Tensor, Raw)):
        return True
    if not isinstance(obj, (dict, list, tuple)):
        return False
    if id(obj) not in memo:
        memo[id(obj)] = False  # a cycle holds nothing new
        items = obj.values() if isinstance(obj, dict) else obj
        memo[id(obj)] = any(holds_tensor(v, memo) for v in items)
    return memo[id(obj)]


def flatten(obj, prefix="", out=None, memo=None):
    """name -> Val, named as tinspect names entries: dotted paths through dicts, lists and tuples,
    keys as Python's str() renders them."""
    if out is None:
        out, memo = {}, {}
    if isinstance(obj, torch.nn.Module):  # a whole pickled module: tinspect lists its state_dict()
        obj = obj.state_dict()
    if isinstance(obj, (torch.Tensor, Raw)):
        out[prefix] = to_val(obj)
    elif not holds_tensor(obj, memo):
        pass
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, "%s.%s" % (prefix, k) if prefix else str(k), out, memo)
    else:
        for i, v in enumerate(obj):
            flatten(v, "%s.%d" % (prefix, i) if prefix else str(i), out, memo)
    return out


# ---- PyTorch 2.x's rebuild functions, on torch 1.13 (torch/_utils.py of 2.x) ----

class RawDtype:
    def __init__(self, name):
        self.name = name


def _resolve(t, metadata, view):
    """set_tensor_metadata, then the values a 2.x user gets: resolve_conj() / resolve_neg()."""
    conj, neg = bool(metadata and metadata.get("conj")), bool(metadata and metadata.get("neg"))
    if isinstance(t, torch.Tensor) and (conj or neg):
        view = view + ((conj, neg),)
        if conj and t.is_complex():
            t = torch.conj_physical(t)
        if neg:
            t = torch.neg(t)
        t._ti_view = view
    elif conj or neg:
        raise Failure("a conj/neg bit on a %s tensor: this script cannot resolve it" % t.dtype)
    return t


def _rebuild(storage, offset, size, stride, dtype, metadata):
    untyped = storage.untyped()
    if isinstance(dtype, RawDtype):
        es = NEW_DTYPES[dtype.name]
        d = torch.tensor([], dtype=torch.uint8).set_(untyped, offset * es, list(size) + [es],
                                                     [s * es for s in stride] + [1])
        return _resolve(Raw(dtype.name, d), metadata, None)
    t = torch.tensor([], dtype=dtype).set_(untyped, offset, size, stride)
    return _resolve(t, metadata, (untyped.data_ptr(), offset, tuple(stride), untyped.nbytes()))


def rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks, metadata=None):
    return _rebuild(storage, offset, size, stride, storage.dtype, metadata)


def rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype, metadata=None):
    return _rebuild(storage, offset, size, stride, dtype, metadata)


def rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    if isinstance(dtype, RawDtype):
        return torch.empty_strided(size, stride, dtype=torch.uint8, device="meta")
    return torch.empty_strided(size, stride, dtype=dtype, device="meta")


def rebuild_parameter_with_state(data, requires_grad, hooks, state):
    return data


def rebuild_from_type_v2(func, new_type, args, state):
    return func(*args)


class Stub:
    """A class 1.13 cannot import (a user's mylib.Subclass): an object that takes anything."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass


class CompatUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        table = {("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor_v2,
                 ("torch._utils", "_rebuild_tensor_v3"): rebuild_tensor_v3,
                 ("torch._utils", "_rebuild_meta_tensor_no_storage"): rebuild_meta_tensor_no_storage,
                 ("torch._utils", "_rebuild_parameter_with_state"): rebuild_parameter_with_state,
                 ("torch._tensor", "_rebuild_from_type_v2"): rebuild_from_type_v2}
        if (module, name) in table:
            return table[(module, name)]
        if module == "torch" and name in NEW_DTYPES:
            return RawDtype(name)
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            return type(name, (Stub,), {})


COMPAT = types.ModuleType("tinspect_compat_pickle")
COMPAT.Unpickler = CompatUnpickler
COMPAT.load = pickle.load
COMPAT.__name__ = "tinspect_compat_pickle"


def torch_load(path, weights_only=False):
    """(object, how): torch 1.13's own load, or its load with 2.x's rebuild functions."""
    try:
        return torch.load(path, map_location="cpu", weights_only=weights_only), "torch.load"
    except Exception as e:
        first = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    try:
        # torch.load's own zip path (this build of 1.13 drops a pickle_module argument unless weights_only)
        with open(path, "rb") as f, torch.serialization._open_zipfile_reader(f) as z:
            return torch.serialization._load(z, "cpu", COMPAT, encoding="utf-8"), "2.x rebuilds (%s)" % first[:60]
    except Exception as e:
        raise Failure("torch cannot load %s: %s; with 2.x's rebuild functions: %s: %s" % (
            os.path.basename(path), first, type(e).__name__, e))


# ---- safetensors, by its specification ----

def read_safetensors(path, storage_prefix=""):
    """name -> Val for every tensor of a safetensors file, "tie.NAME": "FIRST" metadata as ties; metadata."""
    with open(path, "rb") as f:
        blob = f.read()
    check(len(blob) >= 8, "%s: shorter than its header size" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    check(8 + n <= len(blob), "%s: header past the end" % path)
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = blob[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out, spans = {}, []
    for name, e in header.items():
        check(e["dtype"] in ST_DTYPES, "%s: '%s' has dtype %s, not a safetensors dtype" % (path, name, e["dtype"]))
        dt = ST_DTYPES[e["dtype"]]
        begin, end = e["data_offsets"]
        numel = 1
        for s in e["shape"]:
            numel *= s
        check(end - begin == numel * element_size(dt) and 0 <= begin <= end <= len(data),
              "%s: '%s' has offsets %s for %d elements of %s" % (path, name, e["data_offsets"], numel, dt))
        spans.append((begin, end))
        stride, acc = [], 1
        for s in reversed(e["shape"]):
            stride.insert(0, acc)
            acc *= max(s, 1)
        out[name] = Val(dt, e["shape"], data[begin:end], storage_prefix + name, 0, stride, end - begin)
    spans.sort()
    at = 0
    for b, e in spans:  # the tensors tile the buffer (tensor.rs InvalidOffset)
        check(b == at, "%s: a hole or an overlap at byte %d of the data" % (path, at))
        at = e
    check(at == len(data), "%s: %d bytes past the last tensor" % (path, len(data) - at))
    for key, first in meta.items():
        if key.startswith("tie."):
            check(first in out, "%s: %s names '%s', which the file does not hold" % (path, key, first))
            out[key[4:]] = out[first]
    return out, meta


def read_sharded(index):
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    out = {}
    for shard in sorted(set(weight_map.values())):
        vals, _ = read_safetensors(os.path.join(os.path.dirname(index), shard), shard + ":")
        out.update(vals)
    check(set(out) == set(weight_map), "%s: shards and weight_map disagree" % index)
    return out


# ---- the generated checkpoint ----

def random_bits(dtype, shape, gen):
    size = torch.empty((), dtype=dtype).element_size()
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    info = torch.iinfo(width)
    n = 1
    for s in shape:
        n *= s
    return torch.randint(info.min, info.max, (n,), dtype=width, generator=gen).view(dtype).reshape(shape)


def everything(path):
    """A state dict of everything torch 1.13 saves that a writer must carry (see the module docstring)."""
    gen = torch.Generator().manual_seed(11)
    sd = {}
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
               torch.int32, torch.int64, torch.uint8):
        sd["bits." + dtype_name(dt)] = random_bits(dt, (7, 5), gen)
    sd["bits.complex64"] = random_bits(torch.float32, (12, 2), gen).view(torch.complex64).reshape(3, 4)
    sd["bits.complex128"] = random_bits(torch.float64, (12, 2), gen).view(torch.complex128).reshape(3, 4)
    sd["bool"] = torch.tensor([True, False, True, True, False])
    sd["special.f32"] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, -3.4e38])
    sd["special.f16"] = torch.tensor([0.0, -0.0, 65504.0, 6e-8, float("nan")], dtype=torch.float16)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd["views.base"] = base
    sd["views.row"] = base[1]
    sd["views.row_again"] = base[1]            # the same view, another object: a tie
    sd["views.col"] = base[:, 2]
    sd["views.transposed"] = base.t()
    sd["views.narrow"] = base[1:3, 2:5]
    sd["views.stepped"] = base[::2, ::3]
    sd["views.scalar"] = base[2, 3]            # a 0-dim view at an offset
    sd["views.empty_at_offset"] = base[4:]     # zero rows, offset 24
    sd["views.tied"] = base                    # the same object twice
    sd["expanded"] = torch.arange(3, dtype=torch.int32).expand(4, 3)  # stride 0
    c = random_bits(torch.float64, (4, 2), gen).view(torch.complex128).reshape(2, 2)
    sd["complex.t"] = c.t()
    imag = random_bits(torch.float32, (5, 2), gen).view(torch.complex64).reshape(5)
    sd["complex.imag"] = imag.imag             # a float32 view, stride 2, offset 1
    sd["zero_size.f32"] = torch.empty(0, 5)
    sd["zero_size.i64"] = torch.empty(3, 0, dtype=torch.int64)
    sd["zero_dim.f64"] = torch.tensor(2.5, dtype=torch.float64)
    sd["zero_dim.bool"] = torch.tensor(True)
    sd["param"] = torch.nn.Parameter(torch.randn(3, 2, generator=gen))
    sd["grad"] = torch.randn(2, 2, generator=gen).requires_grad_()
    sd["nested"] = {"list": [torch.tensor([1, 2], dtype=torch.int16), (torch.tensor([3.0]),)], 7: torch.ones(1)}
    torch.save(sd, path)
    # the same without complex128, which safetensors cannot hold: materialize -o .safetensors takes all of it
    no_c128 = {k: v for k, v in sd.items() if not (torch.is_tensor(v) and v.dtype == torch.complex128)}
    torch.save(no_c128, path.replace(".pt", "_no_complex128.pt"))
    quantized = {"plain": torch.arange(4.0),
                 "q": torch.quantize_per_tensor(torch.tensor([-1.0, 0.0, 1.0, 2.0]), 0.1, 10, torch.quint8)}
    sparse = {"plain": torch.arange(4.0), "coo": torch.eye(3).to_sparse()}
    torch.save(quantized, path.replace(".pt", "_quantized.pt"))
    torch.save(sparse, path.replace(".pt", "_sparse.pt"))
    return [path] + [path.replace(".pt", s) for s in ("_no_complex128.pt", "_quantized.pt", "_sparse.pt")]


# ---- comparing ----

def compare(want, got, what):
    """Names, dtypes, shapes and bytes; a lone root tensor may have any one name."""
    if list(want) == [""] and len(got) == 1:
        got = {"": next(iter(got.values()))}
    check(set(got) == set(want), "%s: names differ: missing %s, extra %s" % (
        what, sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5]))
    for name, a in want.items():
        b = got[name]
        check(b.dtype == a.dtype, "%s: '%s' is %s, want %s" % (what, name, b.dtype, a.dtype))
        check(b.shape == a.shape, "%s: '%s' has shape %s, want %s" % (what, name, b.shape, a.shape))
        if a.data != b.data:
            at = next((i for i in range(min(len(a.data), len(b.data))) if a.data[i] != b.data[i]),
                      min(len(a.data), len(b.data)))
            raise Failure("%s: '%s' differs from byte %d (got %s, want %s)" % (
                what, name, at, b.data[at:at + 8].hex(), a.data[at:at + 8].hex()))
    return got


def groups(vals, key):
    out = {}
    for name, v in vals.items():
        if v.numel():  # an empty tensor has no bytes to share
            out.setdefault(key(v), []).append(name)
    return sorted(sorted(g) for g in out.values())


def check_sharing(want, got, key, what):
    """The names sharing a storage in got are exactly those sharing key() in want."""
    a, b = groups(want, key), groups(got, lambda v: v.storage)
    if a != b:
        bad = [g for g in a if g not in b][:2] or [g for g in b if g not in a][:2]
        raise Failure("%s: %d shared storages, want %d; first differing: %s" % (
            what, sum(len(g) > 1 for g in b), sum(len(g) > 1 for g in a), bad))
    return sum(len(g) > 1 for g in a)


def check_kept(want, got, what):
    """--keep-storage: each tensor at the reference's offset and strides, in a storage of its size."""
    for name, a in want.items():
        b = got[name]
        check(b.offset == a.offset, "%s: '%s' at offset %d, want %d" % (what, name, b.offset, a.offset))
        sa = tuple(s if n > 1 else 0 for n, s in zip(a.shape, a.stride))
        sb = tuple(s if n > 1 else 0 for n, s in zip(b.shape, b.stride))
        check(sa == sb, "%s: '%s' has strides %s, want %s" % (what, name, b.stride, a.stride))
        check(b.storage_nbytes == a.storage_nbytes, "%s: '%s' in a storage of %d bytes, want %d" % (
            what, name, b.storage_nbytes, a.storage_nbytes))


# ---- running tinspect ----

class Runner:
    def __init__(self, binary, tmp):
        self.binary, self.tmp = binary, tmp
        self.loaded_weights_only = 0

    def run(self, *args):
        p = subprocess.run([self.binary] + [str(a) for a in args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def ok(self, *args):
        rc, out, err = self.run(*args)
        check(rc == 0, "tinspect %s: exit %d: %s" % (" ".join(map(str, args)), rc, (err or out).strip()))

    def refused(self, out, words, *args):
        """The run fails with one 'tinspect:' error line that says one of words, and writes no out."""
        rc, _, err = self.run(*args)
        lines = [l for l in err.splitlines() if l.startswith("tinspect:") and "warning:" not in l]
        check(rc != 0, "tinspect %s: exit 0, want a refusal" % " ".join(map(str, args)))
        check(len(lines) == 1, "tinspect %s: %d error lines: %s" % (" ".join(map(str, args)), len(lines),
                                                                     err.strip()))
        check(any(w in lines[0] for w in words), "the error does not say %s: %s" % (" or ".join(words), lines[0]))
        check(not os.path.exists(out), "%s was written" % out)
        return lines[0]

    def read(self, path):
        """What tinspect wrote, as a user gets it back."""
        if path.endswith(".safetensors"):
            return read_safetensors(path)[0]
        obj, how = None, None
        try:
            obj = torch.load(path, map_location="cpu", weights_only=True)
            self.loaded_weights_only += 1
        except Exception as e:
            obj, how = torch_load(path)  # the 2.x dtypes are written as 2.x writes them: _rebuild_tensor_v3
            vals = flatten(obj)
            check(any(v.dtype in NEW_DTYPES for v in vals.values()),
                  "torch.load(%s, weights_only=True): %s: %s" % (os.path.basename(path), type(e).__name__, e))
            return vals
        return flatten(obj)

    def out(self, name):
        path = os.path.join(self.tmp, name)
        if os.path.exists(path):
            os.unlink(path)
        return path


# ---- one input ----

def reference(path):
    """name -> Val of what PyTorch loads (or the safetensors bytes), and how it was read."""
    if path.endswith(".index.json"):
        return read_sharded(path), "the shards' bytes"
    if path.endswith(".safetensors"):
        return read_safetensors(path)[0], "its bytes"
    obj, how = torch_load(path)
    return flatten(obj), how


def input_cases(r, path):
    """The cases for one input: (name, function) pairs, sharing what they write."""
    label = os.path.relpath(path, FIXTURES) if path.startswith(FIXTURES + os.sep) else os.path.basename(path)
    stem = label.replace("/", "_").replace(".", "_")
    state = {}

    def prepare():
        want, how = reference(path)
        state["want"] = want
        plain = {n: v for n, v in want.items() if v.kind == "strided"}
        odd = {n: v.kind for n, v in want.items() if v.kind != "strided"}
        no_st = sorted(n for n, v in plain.items() if v.dtype not in ST_NAMES)
        state.update(plain=plain, odd=odd, no_st=no_st)
        return "%d tensors (%s)%s%s" % (len(want), how, "; cannot be written: %s" % sorted(set(odd.values()))
                                        if odd else "", "; no safetensors dtype: %s" % no_st if no_st else "")

    def refusals():
        """What cannot be written is refused, clearly, in every path it cannot take."""
        check("want" in state, "the reference could not be read")
        odd, no_st, notes = state["odd"], state["no_st"], []
        words = {"sparse": ["sparse"], "quantized": ["quantized"], "meta": ["meta", "no data"]}
        if odd:
            name, kind = next(iter(odd.items()))
            for ext in ("pt", "safetensors"):
                out = r.out(stem + ".refused." + ext)
                notes.append(r.refused(out, words[kind], "convert", path, "-o", out, "-q"))
                out = r.out(stem + ".refused.mat." + ext)
                r.refused(out, words[kind], "materialize", path, "--fill", "load", "-o", out, "-q")
        if no_st:
            out = r.out(stem + ".refused.safetensors")
            r.refused(out, [state["plain"][no_st[0]].dtype], "convert", path, "-o", out, "-q",
                      *excludes(state["odd"]))
            if not odd:
                out = r.out(stem + ".refused.mat.safetensors")
                r.refused(out, [state["plain"][no_st[0]].dtype], "materialize", path, "--fill", "load", "-o", out,
                          "-q")
            notes.append("safetensors: %s" % ", ".join(sorted({state["plain"][n].dtype for n in no_st})))
        if not state["want"]:
            out = r.out(stem + ".refused.pt")
            notes.append(r.refused(out, ["no tensor", "holds no", "nothing"], "convert", path, "-o", out, "-q"))
        said = []
        for n in notes:
            n = n.split(": ", 2)[-1] if n.startswith("tinspect") else n
            if n not in said:
                said.append(n)
        return "; ".join(said) or "nothing"

    def excludes(names):
        args = []
        for n in names:
            args += ["--exclude", n]
        return args

    def want_for(fmt):
        plain = state["plain"]
        if fmt == "safetensors":
            return {n: v for n, v in plain.items() if n not in state["no_st"]}
        return plain

    def convert(fmt, keep=False):
        want = want_for(fmt)
        drop = list(state["odd"]) + (state["no_st"] if fmt == "safetensors" else [])
        out = r.out("%s.%s%s" % (stem, "keep." if keep else "", fmt))
        r.ok("convert", path, "-o", out, "-q", *(["--keep-storage"] if keep else []), *excludes(drop))
        got = compare(want, r.read(out), "convert -o .%s%s" % (fmt, " --keep-storage" if keep else ""))
        if keep:
            shared = check_sharing(want, got, Val.storage_key, "--keep-storage")
            check_kept(want, got, "--keep-storage")
        else:
            shared = check_sharing(want, got, Val.view_key, "compact")
        state[("out", fmt, keep)] = out
        return "%d tensors, %d shared" % (len(want), shared)

    def again(first, keep, fmt):
        src = state.get(("out", first, keep))
        check(src is not None, "the first conversion failed")
        want = want_for("safetensors" if "safetensors" in (first, fmt) else "pt")
        out = r.out("%s.%s%s.then.%s" % (stem, "keep." if keep else "", first, fmt))
        drop = [n for n in state["no_st"] if first != "safetensors"] if fmt == "safetensors" else []
        r.ok("convert", src, "-o", out, "-q", *excludes(drop))
        got = compare(want, r.read(out), "%s -> %s" % (first, fmt))
        shared = check_sharing(want, got, Val.view_key, "compact")
        return "%d tensors, %d shared" % (len(want), shared)

    def materialize(fmt):
        want = want_for(fmt)
        out = r.out("%s.mat.%s" % (stem, fmt))
        if fmt == "safetensors" and state["no_st"]:
            return "skipped: %s has no safetensors dtype (refused above)" % state["no_st"][0]
        r.ok("materialize", path, "--fill", "load", "-o", out, "-q")
        got = compare(want, r.read(out), "materialize -o .%s" % fmt)
        if fmt == "pt":
            shared = check_sharing(want, got, Val.storage_key, "materialize -o .pt")
            check_kept(want, got, "materialize -o .pt")
        else:
            shared = check_sharing(want, got, Val.view_key, "materialize -o .safetensors")
        return "%d tensors, %d shared" % (len(want), shared)

    def gated(fn, *args, need_plain=True, need_clean=False):
        def run():
            check("want" in state, "the reference could not be read")
            if need_plain and not state["plain"]:
                return "skipped: no tensor to write (refusal checked)"
            if need_clean and state["odd"]:
                return "skipped: holds %s (refusal checked)" % sorted(set(state["odd"].values()))
            return fn(*args)
        return run

    is_torch = not path.endswith((".safetensors", ".index.json"))
    cases = [(label + " reference", prepare), (label + " refusals", refusals)]
    cases.append((label + " pt", gated(convert, "pt")))
    if is_torch:
        cases.append((label + " keep", gated(convert, "pt", True)))
    cases.append((label + " st", gated(convert, "safetensors")))
    short = {"pt": "pt", "safetensors": "st"}
    for first, keep, fmt in (("pt", False, "pt"), ("pt", False, "safetensors"), ("safetensors", False, "pt"),
                             ("safetensors", False, "safetensors"), ("pt", True, "safetensors")):
        if keep and not is_torch:
            continue
        name = "%s>%s" % ("keep" if keep else short[first], short[fmt])
        cases.append((label + " " + name, gated(again, first, keep, fmt)))
    cases.append((label + " mat.pt", gated(materialize, "pt", need_clean=True)))
    cases.append((label + " mat.st", gated(materialize, "safetensors", need_clean=True)))
    return cases


# ---- main ----

SUB_BYTE = ("F4", "F6_E2M3", "F6_E3M2")  # the reference's packed dtypes (tensor.rs): 4 and 6 bits an element


def sub_byte_dtypes(path):
    """The sub-byte safetensors dtypes a file's header names, sorted."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    return sorted({e["dtype"] for k, e in header.items() if k != "__metadata__" and e.get("dtype") in SUB_BYTE})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tinspect", nargs="?", default=os.path.join(ROOT, "tinspect"))
    ap.add_argument("-v", action="store_true", help="print tracebacks of failures")
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    binary = os.path.abspath(a.tinspect)
    if not os.access(binary, os.X_OK):
        print("roundtrip conformance: '%s' is not an executable" % a.tinspect)
        return 2
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="tinspect-roundtrip-conf-")
    r = Runner(binary, tmp)
    inputs = sorted(glob.glob(os.path.join(FIXTURES, "*.pt")))
    for path in sorted(glob.glob(os.path.join(FIXTURES, "safetensors", "*.safetensors"))):
        held = sub_byte_dtypes(path)
        if held:  # no torch tensor holds one element of these: the CLI tests check convert's copy and refusals
            print("skip %-44s holds %s, which no torch 1.13 dtype holds" % (os.path.relpath(path, FIXTURES),
                                                                            ", ".join(held)))
        else:
            inputs.append(path)
    inputs.append(os.path.join(FIXTURES, "safetensors", "hf", "model.safetensors.index.json"))
    inputs += everything(os.path.join(tmp, "everything.pt"))
    passed = failed = 0
    try:
        for path in inputs:
            for name, fn in input_cases(r, path):
                if a.only and a.only not in name:
                    continue
                t0 = time.time()
                try:
                    note = fn()
                    passed += 1
                    print("ok   %-44s %5.2fs  %s" % (name, time.time() - t0, note or ""))
                except Exception as e:  # Failure, or torch refusing a file
                    failed += 1
                    print("FAIL %-44s %5.2fs  %s%s" % (name, time.time() - t0,
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
    print("%d .pt files written by tinspect loaded with weights_only=True" % r.loaded_weights_only)
    print("%d passed, %d failed (%.1f s)" % (passed, failed, time.time() - start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
