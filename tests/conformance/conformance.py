#!/usr/bin/env python3
"""
Conformance test: tinspect --json against torch.load(map_location='meta').

Usage:  /usr/bin/python3 tests/conformance/conformance.py [./tinspect] [options]

Generates fresh checkpoints of many kinds into a temporary directory, loads
each with torch.load(path, map_location='meta') (falling back to
map_location='cpu' where meta cannot build the tensor: quantized, sparse),
flattens the result into name -> tensor with tinspect's naming rule and
compares every tensor with the rows of `tinspect FILE --json`.

Naming rule: dotted path through dicts, lists and tuples; int dict keys print
as the number; the root itself is "".

Checked per tensor (hard failures): the set of names, dtype, shape, stride
(not for sparse), storage_offset (not for sparse), requires_grad, parameter,
layout, nbytes (strided: numel * element_size), storage_nbytes (strided, not
quantized), saved_device, and that tensors sharing a storage in PyTorch share
a storage key in tinspect (and vice versa). Per file: summary.tensors,
summary.numel, summary.by_dtype (tensors, numel), summary.nbytes == sum of the
rows' nbytes, exit status 0 and valid JSON.

Reported but not failed (NOTE lines): missing quantization info on quantized
rows, differences between the expected and reported "values" rows.

Prints one line per checkpoint and ends with the line "N passed, M failed";
exits 1 if any failed. Exits 0 with a skip message if torch is unavailable.

Options:
  --keep DIR     write the checkpoints to DIR and keep them (for debugging)
  --only SUBSTR  run only the cases whose name contains SUBSTR
  --fuzz N       number of random-structure cases (default 50)
  --seed S       fuzz seed (default 20240611)
  -v             print every mismatch, and the NOTE lines of passing cases
"""
import argparse
import collections
import io
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
import zipfile

# --------------------------------------------------------------------------
# torch availability: re-exec under $PYTHON (default /usr/bin/python3) once.
# --------------------------------------------------------------------------
try:
    import torch
except Exception:  # ImportError, or a broken install
    target = os.environ.get("PYTHON", "/usr/bin/python3")
    if (not os.environ.get("_TINSPECT_CONF_REEXEC")
            and os.path.exists(target)
            and os.path.realpath(target) != os.path.realpath(sys.executable)):
        os.environ["_TINSPECT_CONF_REEXEC"] = "1"
        os.execv(target, [target] + sys.argv)
    print("SKIP: torch is not importable with %s (set PYTHON to an interpreter "
          "that has torch); conformance not run" % sys.executable)
    sys.exit(0)

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(1)

# --------------------------------------------------------------------------
# Fake "cuda:0" location tags: tinspect never needs the device, only the tag.
# A storage whose data_ptr is in FAKE_CUDA is saved with location "cuda:0".
# --------------------------------------------------------------------------
FAKE_CUDA = set()


def _fake_cuda_tag(storage):
    try:
        if FAKE_CUDA and storage.data_ptr() in FAKE_CUDA:
            return "cuda:0"
    except Exception:
        pass
    return None


def _fake_cuda_deserialize(obj, location):
    return None


try:
    torch.serialization._package_registry.insert(
        0, (0, _fake_cuda_tag, _fake_cuda_deserialize))
    HAVE_FAKE_CUDA = True
except Exception:
    HAVE_FAKE_CUDA = False


# --------------------------------------------------------------------------
# Case registry
# --------------------------------------------------------------------------
class Case:
    def __init__(self, name, build, save_kw=None, expect_null_storage=False,
                 via_buffer=False, stem=None):
        self.name = name
        self.build = build            # () -> object to save
        self.save_kw = save_kw or {}
        self.expect_null_storage = expect_null_storage
        self.via_buffer = via_buffer  # save through io.BytesIO (root "archive")
        self.stem = stem              # file name stem; the zip root follows it


CASES = []


def case(name, **kw):
    def deco(fn):
        CASES.append(Case(name, fn, **kw))
        return fn
    return deco


def tv():
    import torchvision  # noqa: F401
    return torchvision


# ---- models ---------------------------------------------------------------
@case("resnet18_state_dict")
def _():
    return tv().models.resnet18(num_classes=10).state_dict()


@case("mobilenet_v2_state_dict")
def _():
    return tv().models.mobilenet_v2(width_mult=0.5, num_classes=10).state_dict()


@case("small_vit_state_dict")
def _():
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                          num_heads=2, hidden_dim=32, mlp_dim=64,
                          num_classes=10)
    return m.state_dict()


@case("transformer_encoder_state_dict")
def _():
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4,
                                             dim_feedforward=64)
    m = torch.nn.TransformerEncoder(layer, num_layers=3)
    return m.state_dict()


@case("state_dict_keep_vars_parameters")
def _():
    # keep_vars=True keeps nn.Parameter objects (requires_grad True)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                            torch.nn.Flatten(), torch.nn.Linear(4, 2))
    return m.state_dict(keep_vars=True)


def _train_ckpt(opt_name):
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                            torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    if opt_name == "adam":
        opt = torch.optim.Adam(m.parameters(), lr=1e-3, amsgrad=True)
    elif opt_name == "adamw":
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.1)
    else:
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9,
                              nesterov=True)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        loss = m(torch.randn(5, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    import argparse as ap
    return {
        "epoch": 3,
        "global_step": 1234567890123,
        "model": m.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "args": ap.Namespace(lr=1e-3, name="run-1", layers=[1, 2, 3]),
        "best_metric": float("inf"),
        "rng_state": torch.get_rng_state(),
        "notes": None,
    }


@case("train_ckpt_adam_amsgrad")
def _():
    return _train_ckpt("adam")


@case("train_ckpt_adamw")
def _():
    return _train_ckpt("adamw")


@case("train_ckpt_sgd_momentum")
def _():
    return _train_ckpt("sgd")


# ---- views ---------------------------------------------------------------
@case("views_offsets_transposes_expand")
def _():
    base = torch.arange(120, dtype=torch.float32).reshape(4, 5, 6)
    v = torch.arange(10, dtype=torch.float64)
    return {
        "base": base,
        "slice_offset": base[1:, 2:, 3:],
        "transpose": base.transpose(0, 2),
        "permute": base.permute(2, 0, 1),
        "step_slice": base[:, ::2, 1::3],
        "select": base[2],
        "select_inner": base[:, 3],
        "narrow": base.narrow(2, 1, 3),
        "expand": torch.ones(1, 6).expand(7, 6),
        "expand_scalar": torch.tensor(3.0).expand(2, 3, 4),
        "unsqueeze_expand": v[2:5].unsqueeze(0).expand(4, 3),
        "as_strided": base.as_strided((3, 3), (7, 2), 11),
        "diag": torch.diagonal(base[0]),
        "empty_slice": base[:, :, 6:],
        "view_of_v": v[7:],
        "t_of_slice": base[0, 1:, 2:].t(),
    }


@case("views_independent_bases_shared")
def _():
    a = torch.randn(10, 10)
    b = torch.randn(3, dtype=torch.float16)
    return [a, a[3:], (a[:, 5], b, b[1:]), {"again": a.t()}, b.expand(2, 3)]


@case("tied_weights")
def _():
    emb = torch.nn.Embedding(50, 8)
    head = torch.nn.Linear(8, 50, bias=False)
    head.weight = emb.weight
    m = torch.nn.ModuleDict({"emb": emb, "head": head})
    sd = m.state_dict()
    sd["alias"] = sd["emb.weight"]
    sd["alias_view"] = sd["emb.weight"][10:20]
    return sd


# ---- dtypes --------------------------------------------------------------
SAVABLE_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                  torch.int64, torch.int32, torch.int16, torch.int8,
                  torch.uint8, torch.bool, torch.complex64, torch.complex128]
for _n in ("complex32", "uint16", "uint32", "uint64", "float8_e5m2",
           "float8_e4m3fn"):
    if hasattr(torch, _n):
        SAVABLE_DTYPES.append(getattr(torch, _n))


def _dtype_savable(dt):
    try:
        buf = io.BytesIO()
        torch.save(torch.zeros(2, dtype=dt), buf)
        buf.seek(0)
        torch.load(buf, map_location="meta")
        return True
    except Exception:
        return False


SAVABLE_DTYPES = [d for d in SAVABLE_DTYPES if _dtype_savable(d)]


def dname(dt):
    return str(dt).replace("torch.", "")


@case("all_dtypes")
def _():
    d = {}
    for dt in SAVABLE_DTYPES:
        t = torch.zeros(2, 3, dtype=dt)
        d[dname(dt)] = t
        d[dname(dt) + "_view"] = t[:, 1:]
        d[dname(dt) + "_scalar"] = torch.zeros((), dtype=dt)
    return d


@case("all_dtypes_grad")
def _():
    return {dname(dt): torch.randn(3, dtype=dt).requires_grad_()
            for dt in SAVABLE_DTYPES if dt.is_floating_point or dt.is_complex}


@case("dtype_bare_bfloat16", stem="bare.bf16.model")
def _():
    return torch.randn(4, 4, dtype=torch.bfloat16)


# ---- parameters / requires_grad -----------------------------------------
@case("parameter_bare")
def _():
    return torch.nn.Parameter(torch.randn(3, 4))


@case("parameter_no_grad_bare")
def _():
    return torch.nn.Parameter(torch.randn(3), requires_grad=False)


@case("parameters_in_containers")
def _():
    p = torch.nn.Parameter(torch.randn(2, 2))
    q = torch.nn.Parameter(torch.randn(5), requires_grad=False)
    return {
        "p": p,
        "p_again": p,
        "q": q,
        "lst": [p, q, torch.randn(2, requires_grad=True)],
        "tup": (torch.zeros(3), {"inner": torch.nn.Parameter(torch.ones(1))}),
        "grad_plain": torch.randn(4, 4, requires_grad=True),
        "no_grad": torch.randn(4),
    }


@case("bare_tensor_view", stem="archive")
def _():
    return torch.arange(100, dtype=torch.int32).reshape(10, 10)[2:5, 1::2]


# ---- pickle protocols -----------------------------------------------------
def _proto_obj():
    m = torch.nn.Linear(4, 3)
    return {"sd": m.state_dict(), "list": [torch.ones(2), (torch.zeros(1), 7)],
            "int": {1: torch.ones(1), 2: "two"}, "s": "x" * 300,
            "b": b"\x00\x01bytes"}


for _p in (0, 1, 2, 3, 4, 5):
    CASES.append(Case("pickle_protocol_%d" % _p, _proto_obj,
                      save_kw={"pickle_protocol": _p}))

CASES.append(Case("saved_via_bytesio", _proto_obj, via_buffer=True))

# ---- keys / nesting ---------------------------------------------------------
@case("integer_keys")
def _():
    return {0: torch.ones(1), 1: {2: torch.zeros(2), 3: [torch.ones(3)]},
            -5: torch.ones(2, 2), 10 ** 12: torch.zeros(1), 256: torch.ones(4),
            70000: torch.ones(1, dtype=torch.int8)}


@case("nested_lists_tuples")
def _():
    t = torch.randn(3)
    return [t, [t[1:], (torch.ones(2), [torch.zeros(1, 1), ()])],
            ((((torch.arange(3),),),),), [], {"k": [[], [torch.ones(1)]]}]


@case("root_tuple")
def _():
    return (torch.ones(2), {"a": torch.zeros(3)}, [1, 2])


@case("unicode_and_odd_keys")
def _():
    return {"ß-ünïcödé": torch.ones(1), "emoji😀": torch.zeros(2),
            'quote"back\\slash': torch.ones(3), "tab\there": torch.ones(1),
            "nl\nkey": torch.ones(1), "": torch.zeros(1),
            "ctrl\x01": torch.ones(1), "sp ace": {"x": torch.ones(1)}}


@case("many_values_few_tensors")
def _():
    import argparse as ap
    return {
        "w": torch.ones(2),
        "cfg": {"lr": 0.1, "betas": (0.9, 0.999), "name": "adam",
                "flag": True, "none": None, "neg": -3, "big": 2 ** 70,
                "nan": float("nan"), "ninf": float("-inf")},
        "ns": ap.Namespace(a=1, b="two"),
        "dtype": torch.float16,
        "size": torch.Size([2, 3]),
        "device": torch.device("cpu"),
        "set": {1, 2, 3},
        "fset": frozenset(["a"]),
        "bytes": b"abc",
        "bytearray": bytearray(b"xy"),
        "complex": 1 + 2j,
        "empty_dict": {},
        "empty_list": [],
        "odict": collections.OrderedDict(a=1),
        "slice": slice(1, 5, 2),
    }


def _value_reprs():
    return {
        "t": torch.ones(1),
        "floats": [0.1, 1e-7, 1e16, 1e22, 0.1 + 0.2, -0.0, 1.0, 123456789.0,
                   5e-324, 1.7976931348623157e308, 2.5e-5, 100.0, 1e15],
        "ints": [0, -1, 255, 256, 65535, 65536, -2 ** 31, 2 ** 31, 2 ** 63 - 1,
                 -2 ** 63, 2 ** 63, 2 ** 64, -2 ** 64, 10 ** 30, -(10 ** 30)],
        "strs": ["", "a'b", 'a"b', "a'b\"c", "back\\slash", "tab\t", "nl\n",
                 "\x00\x7f", "ünï", "😀", "\u2028"],
        "bytes": [b"", b"'", b'"', b"\x00\xff\n\\", b"a" * 300],
        "nested": {"a": [1, (2, 3), {"b": None}], 5: (True, False), (): ()},
        "single_tuple": (1,),
        "bools": [True, False, None],
    }


for _p in (0, 2, 5):
    CASES.append(Case("value_reprs_p%d" % _p, _value_reprs,
                      save_kw={"pickle_protocol": _p}))


@case("root_is_int_dict_no_tensors")
def _():
    return {"epoch": 1, "sub": {"a": [1, 2, 3]}}


# ---- 0-dim / empty -----------------------------------------------------------
@case("zero_dim_and_empty")
def _():
    return {
        "scalar_f": torch.tensor(1.5),
        "scalar_i": torch.tensor(7),
        "scalar_b": torch.tensor(True),
        "empty_1d": torch.empty(0),
        "empty_2d": torch.empty(0, 5),
        "empty_mid": torch.empty(3, 0, 2),
        "empty_view": torch.arange(10.)[5:5],
        "scalar_view": torch.arange(10.)[7],
        "one": torch.ones(1, 1, 1, 1),
        "high_rank": torch.zeros([1] * 10 + [2]),
    }


@case("zero_dim_bare")
def _():
    return torch.tensor(3, dtype=torch.int16)


@case("empty_bare")
def _():
    return torch.empty(0, 3, dtype=torch.float64)


# ---- meta tensors (no storage) -----------------------------------------------
@case("meta_tensors_no_storage", expect_null_storage=True)
def _():
    t = torch.empty(3, 4, device="meta")
    return {"m": t, "mt": t.t(), "mv": t[1:], "h": torch.empty(
        5, dtype=torch.float16, device="meta").requires_grad_()}


# ---- fake cuda location -------------------------------------------------------
@case("saved_device_cuda_tag")
def _():
    a = torch.randn(4, 4)
    b = torch.randn(3)
    FAKE_CUDA.add(a.storage().data_ptr())
    return {"on_cuda": a, "on_cuda_view": a[1:], "on_cpu": b}


# ---- quantized ---------------------------------------------------------------
@case("quantized_per_tensor")
def _():
    x = torch.randn(4, 5)
    q8 = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
    return {
        "qint8": q8,
        "qint8_again": q8,
        "quint8": torch.quantize_per_tensor(x, 0.05, 128, torch.quint8),
        "qint32": torch.quantize_per_tensor(x, 0.01, 3, torch.qint32),
        "scalar": torch.quantize_per_tensor(torch.tensor(1.0), 0.1, 0,
                                            torch.qint8),
        "empty": torch.quantize_per_tensor(torch.empty(0, 3), 0.1, 0,
                                           torch.quint8),
        "dense": torch.ones(2),
    }


def _subbyte(n):
    # quint4x2 / quint2x4 pack 2 / 4 values a byte: the storage has fewer
    # bytes than the tensor has elements (torch packs each innermost row)
    dt = getattr(torch, n)
    return {"q_%dx%d" % (r, c): torch.quantize_per_tensor(
        torch.rand(r, c), 0.1, 1, dt) for r, c in ((4, 6), (3, 5), (1, 1))}


CASES.append(Case("quantized_subbyte_quint4x2", lambda: _subbyte("quint4x2")))
CASES.append(Case("quantized_subbyte_quint2x4", lambda: _subbyte("quint2x4")))


@case("quantized_per_channel")
def _():
    x = torch.randn(6, 4)
    return {
        "w": torch.quantize_per_channel(x, torch.rand(6) + 0.01,
                                        torch.zeros(6, dtype=torch.long), 0,
                                        torch.qint8),
        "w_axis1": torch.quantize_per_channel(x, torch.rand(4) + 0.01,
                                              torch.arange(4), 1,
                                              torch.quint8),
    }


@case("quantized_linear_state_dict")
def _():
    import torch.ao.nn.quantized as nnq
    return nnq.Linear(8, 4).state_dict()


# ---- sparse --------------------------------------------------------------------
@case("sparse_coo")
def _():
    i = torch.tensor([[0, 1, 2], [2, 0, 1]])
    s = torch.sparse_coo_tensor(i, torch.tensor([1., 2., 3.]), (3, 4))
    return {"coo": s, "coo_coalesced": s.coalesce(),
            "coo_hybrid": torch.sparse_coo_tensor(i, torch.randn(3, 2),
                                                  (3, 4, 2)),
            "coo_empty": torch.sparse_coo_tensor(
                torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (5, 5)),
            "coo_grad": torch.sparse_coo_tensor(
                i, torch.tensor([1., 2., 3.]), (3, 4), requires_grad=True),
            "dense": torch.ones(2)}


@case("sparse_csr")
def _():
    return {"csr": torch.eye(4).to_sparse_csr(), "dense": torch.ones(1)}


# ---- subclass (_rebuild_from_type_v2) ------------------------------------------
class MyTensor(torch.Tensor):
    pass


@case("tensor_subclass")
def _():
    x = torch.ones(3).as_subclass(MyTensor)
    x.tag = "hello"       # 1.13 cannot load a subclass whose state is None
    return {"sub": x, "plain": torch.zeros(2)}


# ---- larger flat state dict ----------------------------------------------------
@case("flat_1000_tensors", save_kw={"pickle_protocol": 4})
def _():
    return collections.OrderedDict(
        ("layers.%d.%s" % (i // 2, "weight" if i % 2 == 0 else "bias"),
         torch.zeros(i % 7 + 1, dtype=SAVABLE_DTYPES[i % len(SAVABLE_DTYPES)]))
        for i in range(1000))


@case("zip64_70000_records")
def _():
    # more than 65535 zip entries: torch writes a zip64 end of central directory
    return {"t%d" % i: torch.zeros(1, dtype=torch.int8) for i in range(70000)}


@case("storage_viewed_as_two_dtypes")
def _():
    a = torch.zeros(4, dtype=torch.float32)
    return {"f32": a, "i32": a.view(torch.int32), "u8": a.view(torch.uint8)}


# ---- random-structure fuzz -------------------------------------------------------
FUZZ_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
               torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
               torch.bool, torch.complex64, torch.complex128]


def _rand_tensor(rng):
    nd = rng.choice([0, 1, 1, 2, 2, 3, 4])
    shape = [rng.choice([0, 1, 2, 3, 5]) if rng.random() < 0.1
             else rng.randint(1, 6) for _ in range(nd)]
    dt = rng.choice(FUZZ_DTYPES)
    t = torch.zeros(shape, dtype=dt)
    if rng.random() < 0.2 and (dt.is_floating_point or dt.is_complex):
        t.requires_grad_()
        if rng.random() < 0.5:
            t = torch.nn.Parameter(t, requires_grad=rng.random() < 0.8)
    return t


def _rand_view(rng, base):
    t = base.detach()
    for _ in range(rng.randint(1, 3)):
        if t.dim() == 0:
            if rng.random() < 0.5:
                t = t.expand(*[rng.randint(1, 3) for _ in range(rng.randint(1, 3))])
            break
        op = rng.choice(["slice", "step", "t", "select", "expand", "narrow",
                         "unsqueeze", "as_strided"])
        d = rng.randrange(t.dim())
        n = t.shape[d]
        if op == "slice" and n > 0:
            a = rng.randrange(n)
            t = t.narrow(d, a, rng.randint(0, n - a))
        elif op == "step" and n > 0:
            idx = [slice(None)] * t.dim()
            idx[d] = slice(rng.randrange(n), None, rng.randint(1, 3))
            t = t[tuple(idx)]
        elif op == "t" and t.dim() >= 2:
            e = rng.randrange(t.dim())
            t = t.transpose(d, e)
        elif op == "select" and n > 0:
            t = t.select(d, rng.randrange(n))
        elif op == "expand":
            shape = list(t.shape)
            ones = [i for i, s in enumerate(shape) if s == 1]
            if ones:
                shape[rng.choice(ones)] = rng.randint(2, 4)
                t = t.expand(*shape)
            else:
                t = t.unsqueeze(0).expand(rng.randint(2, 3), *shape)
        elif op == "narrow" and n > 1:
            t = t.narrow(d, 1, n - 1)
        elif op == "unsqueeze":
            t = t.unsqueeze(rng.randint(0, t.dim()))
        elif op == "as_strided" and t.numel() > 0 and t.is_contiguous():
            # a window inside the viewed range of a contiguous tensor
            off = t.storage_offset()
            k = rng.randint(1, t.numel())
            t = t.as_strided((k,), (1,), off + rng.randint(0, t.numel() - k))
    if rng.random() < 0.1 and (t.dtype.is_floating_point or t.dtype.is_complex):
        t.requires_grad_()
    return t


def _rand_key(rng, used):
    while True:
        r = rng.random()
        if r < 0.25:
            k = rng.randint(-3, 40)
        elif r < 0.3:
            k = rng.choice(["ключ", "k€y", "a b", "x_y", "_metadata", "0x"])
        else:
            k = rng.choice(["weight", "bias", "layer", "w", "state", "m",
                            "exp_avg", "blk", "attn", "proj"]) + \
                rng.choice(["", str(rng.randint(0, 99))])
        # avoid int/str collisions like 3 and "3"
        if str(k) not in used:
            used.add(str(k))
            return k


def _rand_struct(rng, depth, pool, top=False):
    r = rng.random()
    if top and r < 0.9:
        r = 1.0                                 # the root is mostly a container
    if depth <= 0 or r < 0.3:
        r2 = rng.random()
        if r2 < 0.45 or not pool:
            t = _rand_tensor(rng)
            pool.append(t)
            return t
        if r2 < 0.7:
            t = _rand_view(rng, rng.choice(pool))
            pool.append(t)
            return t
        if r2 < 0.8:
            return rng.choice(pool)            # shared tensor object
        return rng.choice([1, -7, 2.5, "s", None, True, (1, "a"), [],
                           {"lr": 0.1}, torch.float32, 2 ** 65])
    n = rng.randint(2, 8) if top else rng.randint(0, 5)
    kind = rng.random()
    if kind < 0.55:
        used = set()
        items = [(_rand_key(rng, used), _rand_struct(rng, depth - 1, pool))
                 for _ in range(n)]
        return (collections.OrderedDict(items) if rng.random() < 0.3
                else dict(items))
    items = [_rand_struct(rng, depth - 1, pool) for _ in range(n)]
    return tuple(items) if kind < 0.75 else items


def add_fuzz_cases(n, seed):
    for i in range(n):
        def build(i=i):
            rng = random.Random(seed * 1000003 + i)
            pool = []
            obj = _rand_struct(rng, rng.randint(1, 4), pool, top=True)
            return obj
        proto = random.Random(seed + i).choice([2, 2, 3, 4, 5])
        CASES.append(Case("fuzz_%02d_p%d" % (i, proto), build,
                          save_kw={"pickle_protocol": proto}))


# --------------------------------------------------------------------------
# Flattening (the expected side)
# --------------------------------------------------------------------------
def join(prefix, key):
    if isinstance(key, bool):
        k = str(key)
    elif isinstance(key, int):
        k = str(key)
    else:
        k = str(key)
    return k if prefix is None or prefix == "" else prefix + "." + k


def _holds_tensor(obj):
    if isinstance(obj, torch.Tensor):
        return True
    if isinstance(obj, dict):
        return any(_holds_tensor(v) for v in obj.values())
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return any(_holds_tensor(v) for v in obj)
    return False


ROOT_NAME = "(root)"  # tinspect's name for a root that is itself one value: torch.save(tensor)


def flatten(obj, prefix, tensors, values):
    if isinstance(obj, torch.Tensor):
        tensors.append((ROOT_NAME if prefix is None else prefix, obj))
    elif isinstance(obj, dict) and _holds_tensor(obj):
        for k, v in obj.items():
            flatten(v, join(prefix, k), tensors, values)
    elif (isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size)
          and _holds_tensor(obj)):
        for i, v in enumerate(obj):
            flatten(v, join(prefix, i), tensors, values)
    else:
        at_root = prefix is None
        values.append((ROOT_NAME if at_root and not isinstance(obj, (dict, list, tuple)) else prefix or "", obj))


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------
def layout_name(t):
    return str(t.layout).replace("torch.", "")


def storage_id(t):
    """An identity for the storage a strided tensor views (None if unknown)."""
    try:
        s = t.storage()
        for attr in ("_cdata",):
            if hasattr(s, attr):
                return getattr(s, attr)
        u = getattr(s, "_storage", None)
        if u is not None:
            return u._cdata
    except Exception:
        pass
    return None


def storage_nbytes(t):
    try:
        return t.storage().nbytes()
    except Exception:
        return None


class Result:
    def __init__(self):
        self.errors = []
        self.notes = []

    def err(self, msg):
        self.errors.append(msg)

    def note(self, msg):
        self.notes.append(msg)


def fmt(x):
    return json.dumps(x, ensure_ascii=False)


SUBBYTE = {getattr(torch, n) for n in ("quint4x2", "quint2x4") if hasattr(torch, n)}


def storage_records(path):
    """The storage keys that have a record <root>/data/<key> in the zip."""
    keys = set()
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            parts = name.split("/")
            if len(parts) == 3 and parts[1] == "data":
                keys.add(parts[2])
    return keys


def compare(case_, loaded, doc, res, loaded_on, cpu_loaded=None, records=None):
    """cpu_loaded: the same file loaded with map_location='cpu', the reference
    for storage sizes and sharing (meta storages in torch 1.13 do not keep the
    saved storage size)."""
    exp_t, exp_v = [], []
    flatten(loaded, None, exp_t, exp_v)
    cpu_t = {}
    if cpu_loaded is not None:
        ct, cv = [], []
        flatten(cpu_loaded, None, ct, cv)
        cpu_t = dict(ct)

    if not isinstance(doc, dict):
        res.err("JSON root is not an object")
        return 0
    if doc.get("format") != "torch-zip":
        res.err("format: expected \"torch-zip\", got %s" % fmt(doc.get("format")))
    rows = doc.get("tensors")
    if not isinstance(rows, list):
        res.err("\"tensors\" missing or not a list")
        return 0

    got = collections.OrderedDict()
    for r in rows:
        name = r.get("name")
        if name in got:
            res.err("duplicate tensor row name %s" % fmt(name))
        got[name] = r
    expd = collections.OrderedDict()
    for n, t in exp_t:
        if n in expd:
            res.note("name collision on the expected side: %s" % fmt(n))
        expd[n] = t

    missing = [n for n in expd if n not in got]
    extra = [n for n in got if n not in expd]
    if missing:
        res.err("missing tensor names: %s" % fmt(missing[:10]) +
                (" (+%d more)" % (len(missing) - 10) if len(missing) > 10 else ""))
    if extra:
        res.err("unexpected tensor names: %s" % fmt(extra[:10]) +
                (" (+%d more)" % (len(extra) - 10) if len(extra) > 10 else ""))
    if list(got) != list(expd) and not missing and not extra:
        res.note("tensor rows are in a different order than the pickle's")

    sid_to_keys = collections.defaultdict(set)
    key_to_sids = collections.defaultdict(set)
    by_dtype = collections.defaultdict(lambda: [0, 0])
    total_numel = 0
    for n, t in expd.items():
        dt = dname(t.dtype)
        by_dtype[dt][0] += 1
        by_dtype[dt][1] += t.numel()
        total_numel += t.numel()
        r = got.get(n)
        if r is None:
            continue
        sparse = t.layout != torch.strided
        quant = t.is_quantized

        def chk(field, want, have=None, _n=n, _r=r):
            have = _r.get(field, "<absent>") if have is None else have
            if have != want:
                res.err("%s: %s expected %s, got %s"
                        % (fmt(_n), field, fmt(want), fmt(have)))

        chk("dtype", dt)
        chk("shape", list(t.shape))
        chk("layout", layout_name(t))
        chk("requires_grad", bool(t.requires_grad))
        chk("parameter", isinstance(t, torch.nn.Parameter))
        if "numel" in r:
            chk("numel", t.numel())
        if not sparse:
            chk("stride", list(t.stride()))
            chk("storage_offset", t.storage_offset())
            if t.dtype in SUBBYTE:
                if r.get("nbytes") != t.numel() * t.element_size():
                    res.note("%s: %s nbytes %s (torch numel*element_size %d; "
                             "storage %s)" % (fmt(n), dt, fmt(r.get("nbytes")),
                                              t.numel() * t.element_size(),
                                              storage_nbytes(cpu_t.get(n, t))))
            else:
                chk("nbytes", t.numel() * t.element_size())
            ref = cpu_t.get(n)
            if ref is not None and r.get("storage") is not None:
                sn = storage_nbytes(ref)
                if sn is not None:
                    chk("storage_nbytes", sn)
        else:
            if r.get("stride", "<absent>") is not None:
                res.err("%s: stride expected null for %s, got %s"
                        % (fmt(n), layout_name(t), fmt(r.get("stride", "<absent>"))))
        if quant:
            q = r.get("quantization", r.get("quant", r.get("qscheme")))
            if q is None:
                res.note("%s: quantized row has no \"quantization\" key "
                         "(keys: %s)" % (fmt(n), ",".join(sorted(r))))
            else:
                want_scheme = str(t.qscheme()).replace("torch.", "")
                if want_scheme not in json.dumps(q):
                    res.note("%s: quantization %s does not mention %s"
                             % (fmt(n), fmt(q), want_scheme))
        # saved device
        want_dev = "cpu"
        if HAVE_FAKE_CUDA and case_.name == "saved_device_cuda_tag" and \
                n.startswith("on_cuda"):
            want_dev = "cuda:0"
        if case_.expect_null_storage:
            if r.get("storage", "<absent>") is not None:
                res.err("%s: storage expected null (meta tensor saved without "
                        "storage), got %s" % (fmt(n), fmt(r.get("storage", "<absent>"))))
        elif not sparse:
            chk("saved_device", want_dev)
            if r.get("storage") is None:
                res.err("%s: storage is null" % fmt(n))
            elif records is not None and r.get("storage") not in records:
                res.err("%s: storage %s has no data/%s record in the zip"
                        % (fmt(n), fmt(r.get("storage")), r.get("storage")))
        # storage sharing partition (strided; from the cpu load)
        ref = cpu_t.get(n)
        if not sparse and ref is not None and not case_.expect_null_storage \
                and r.get("storage") is not None:
            sid = storage_id(ref)
            if sid is not None:
                sid_to_keys[sid].add(r["storage"])
                key_to_sids[r["storage"]].add(sid)

    for sid, keys in sid_to_keys.items():
        if len(keys) > 1:
            res.err("tensors sharing one storage in torch have different "
                    "storage keys %s" % fmt(sorted(keys)))
    for key, sids in key_to_sids.items():
        if len(sids) > 1:
            res.err("storage key %s is shared by tensors that torch gives "
                    "%d different storages" % (fmt(key), len(sids)))

    # summary
    s = doc.get("summary")
    if not isinstance(s, dict):
        res.err("\"summary\" missing")
    else:
        if s.get("tensors") != len(expd):
            res.err("summary.tensors expected %d, got %s"
                    % (len(expd), fmt(s.get("tensors"))))
        if s.get("numel") != total_numel:
            res.err("summary.numel expected %d, got %s"
                    % (total_numel, fmt(s.get("numel"))))
        bd = s.get("by_dtype")
        if not isinstance(bd, dict):
            res.err("summary.by_dtype missing")
        else:
            want = {k: {"tensors": v[0], "numel": v[1]} for k, v in by_dtype.items()}
            have = {k: {"tensors": v.get("tensors"), "numel": v.get("numel")}
                    for k, v in bd.items() if isinstance(v, dict)}
            if want != have:
                res.err("summary.by_dtype expected %s, got %s"
                        % (fmt(want), fmt(have)))
        row_nbytes = [r.get("nbytes") for r in rows]
        if all(isinstance(x, int) for x in row_nbytes):
            if s.get("nbytes") != sum(row_nbytes):
                res.err("summary.nbytes %s != sum of rows' nbytes %d"
                        % (fmt(s.get("nbytes")), sum(row_nbytes)))

    # values (notes only)
    vrows = doc.get("values")
    if not isinstance(vrows, list):
        res.note("\"values\" missing or not a list")
    else:
        gv = [v.get("name") for v in vrows]
        ev = [n for n, _ in exp_v]
        mv = [n for n in ev if n not in gv]
        xv = [n for n in gv if n not in ev]
        if mv:
            res.note("values rows missing: %s" % fmt(mv[:8]))
        if xv:
            res.note("values rows unexpected: %s" % fmt(xv[:8]))
        # repr: compared with Python's repr() where that is plain data
        gr = {v.get("name"): v.get("repr") for v in vrows}
        for n, obj in exp_v:
            if n in gr and _plain(obj) and gr[n] != repr(obj):
                res.note("value %s: repr %s, Python's repr() is %s"
                         % (fmt(n), fmt(gr[n]), fmt(repr(obj))))
    return len(expd)


def _plain(obj, depth=0):
    """True for data whose repr() is fully determined by the pickle."""
    if depth > 20:
        return False
    if obj is None or type(obj) in (bool, int, float, complex, str, bytes,
                                    bytearray):
        return True
    if type(obj) in (list, tuple, set, frozenset):
        return all(_plain(x, depth + 1) for x in obj)
    if type(obj) is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1)
                   for k, v in obj.items())
    return False


def run_tinspect(tinspect, path, timeout=60):
    p = subprocess.run([tinspect, path, "--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def load_expected(path):
    try:
        return torch.load(path, map_location="meta"), "meta"
    except Exception as e_meta:
        try:
            return torch.load(path, map_location="cpu"), "cpu"
        except Exception as e_cpu:
            def m(e):
                return "%s %s" % (type(e).__name__, str(e)[:80])
            raise RuntimeError("torch.load itself fails (meta: %s; cpu: %s)"
                               % (m(e_meta), m(e_cpu)))


# --------------------------------------------------------------------------
# Exit-status cases (no torch.load comparison)
# --------------------------------------------------------------------------
def error_cases(tmp, tinspect):
    """Yields (name, ok, detail)."""
    good = os.path.join(tmp, "err_good.pt")
    torch.save({"a": torch.ones(3), "b": torch.zeros(2, 2)}, good)
    data = open(good, "rb").read()

    def status(args):
        p = subprocess.run([tinspect] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        return p.returncode, p.stderr.decode(errors="replace").strip()

    def expect(name, args, codes):
        rc, err = status(args)
        ok = rc in codes
        return (name, ok, "exit %d (want %s)%s" % (
            rc, "/".join(map(str, codes)), "" if ok else "; stderr: " + err[:160]))

    yield expect("exit_missing_file", [os.path.join(tmp, "nope.pt"), "--json"], (4,))
    yield expect("exit_no_args", [], (2,))
    yield expect("exit_bad_option", [good, "--no-such-option"], (2,))
    trunc = os.path.join(tmp, "err_trunc.pt")
    with open(trunc, "wb") as f:
        f.write(data[: len(data) // 2])
    yield expect("exit_truncated_zip", [trunc, "--json"], (3,))
    garbage = os.path.join(tmp, "err_garbage.pt")
    with open(garbage, "wb") as f:
        f.write(b"this is not a checkpoint\n" * 10)
    yield expect("exit_not_a_zip", [garbage, "--json"], (3,))
    empty = os.path.join(tmp, "err_empty.pt")
    open(empty, "wb").close()
    yield expect("exit_empty_file", [empty, "--json"], (3,))
    # a zip whose data.pkl is cut short
    zp = os.path.join(tmp, "err_badpkl.pt")
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(zp, "w") as zout:
        for info in zin.infolist():
            b = zin.read(info)
            if info.filename.endswith("data.pkl"):
                b = b[: len(b) // 2]
            zout.writestr(info, b)
    yield expect("exit_truncated_pickle", [zp, "--json"], (3,))
    # a directory is an I/O error
    yield expect("exit_directory", [tmp, "--json"], (3, 4))
    # legacy (non-zip) serialization: unsupported (3) or supported (0)
    legacy = os.path.join(tmp, "err_legacy.pt")
    torch.save({"a": torch.ones(3)}, legacy,
               _use_new_zipfile_serialization=False)
    yield expect("legacy_format_rejected_or_supported", [legacy, "--json"], (0, 3))


# --------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tinspect", nargs="?", default="./tinspect")
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--only", metavar="SUBSTR")
    ap.add_argument("--fuzz", type=int, default=50)
    ap.add_argument("--seed", type=int, default=20240611)
    ap.add_argument("--no-tinspect", action="store_true",
                    help="only generate and load checkpoints (self-test)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    tinspect = os.path.abspath(a.tinspect)
    if not a.no_tinspect and not os.access(tinspect, os.X_OK):
        print("error: %s is not an executable" % a.tinspect)
        return 2

    add_fuzz_cases(a.fuzz, a.seed)
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        tmp = a.keep
    else:
        tmp = tempfile.mkdtemp(prefix="tinspect-conf-")
    t0 = time.time()
    passed = failed = 0
    try:
        for c in CASES:
            if a.only and a.only not in c.name:
                continue
            res = Result()
            path = os.path.join(tmp, (c.stem or c.name) + ".pt")
            if c.stem:
                d = os.path.join(tmp, c.name)
                os.makedirs(d, exist_ok=True)
                path = os.path.join(d, c.stem + ".pt")
            FAKE_CUDA.clear()
            try:
                obj = c.build()
                if c.via_buffer:
                    buf = io.BytesIO()
                    torch.save(obj, buf, **c.save_kw)
                    with open(path, "wb") as f:
                        f.write(buf.getvalue())
                else:
                    torch.save(obj, path, **c.save_kw)
                del obj
            except Exception as e:
                print("SKIP  %-40s cannot build/save with this torch: %s"
                      % (c.name, str(e).splitlines()[0][:100] if str(e) else type(e).__name__))
                continue
            finally:
                FAKE_CUDA.clear()
            try:
                loaded, loaded_on = load_expected(path)
            except Exception as e:
                info = ""
                if not a.no_tinspect:
                    rc, _, err = run_tinspect(tinspect, path)
                    info = "; tinspect exits %d %s" % (
                        rc, err.decode(errors="replace").strip()[:100])
                print("SKIP  %-40s %s%s" % (c.name, str(e)[:150], info))
                continue
            if a.no_tinspect:
                et, ev = [], []
                flatten(loaded, None, et, ev)
                print("GEN   %-40s %4d tensors %3d values (load=%s)"
                      % (c.name, len(et), len(ev), loaded_on))
                continue
            try:
                rc, out, err = run_tinspect(tinspect, path)
            except subprocess.TimeoutExpired:
                rc, out, err = None, b"", b"timeout"
            n = 0
            if rc != 0:
                res.err("exit status %s; stderr: %s"
                        % (rc, err.decode(errors="replace").strip()[:300]))
            else:
                try:
                    doc = json.loads(out.decode("utf-8"))
                except Exception as e:
                    res.err("invalid JSON: %s; output starts %r" % (e, out[:200]))
                    doc = None
                if doc is not None:
                    cpu_loaded = loaded if loaded_on == "cpu" else None
                    if cpu_loaded is None:
                        try:
                            cpu_loaded = torch.load(path, map_location="cpu")
                        except Exception as e:
                            res.note("map_location='cpu' failed (%s): storage "
                                     "sizes and sharing not checked" % str(e)[:80])
                    n = compare(c, loaded, doc, res, loaded_on, cpu_loaded,
                                storage_records(path))
            tag = "PASS" if not res.errors else "FAIL"
            if res.errors:
                failed += 1
            else:
                passed += 1
            extra = (" [%d notes]" % len(res.notes)) if res.notes else ""
            print("%s  %-40s %4d tensors (load=%s)%s"
                  % (tag, c.name, n, loaded_on, extra))
            limit = None if a.verbose else 8
            for m in res.errors[:limit]:
                print("      - " + m)
            if limit is not None and len(res.errors) > limit:
                print("      ... %d more mismatches (use -v)" % (len(res.errors) - limit))
            if res.notes and (a.verbose or res.errors):
                for m in res.notes[:limit]:
                    print("      NOTE " + m)
            elif res.notes:
                print("      NOTE " + res.notes[0] +
                      (" (+%d more, -v)" % (len(res.notes) - 1) if len(res.notes) > 1 else ""))
            sys.stdout.flush()
        if not a.no_tinspect and not a.only:
            for name, ok, detail in error_cases(tmp, tinspect):
                print("%s  %-40s %s" % ("PASS" if ok else "FAIL", name, detail))
                if ok:
                    passed += 1
                else:
                    failed += 1
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("(%.1f s)" % (time.time() - t0))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
