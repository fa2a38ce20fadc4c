#!/usr/bin/python3
"""
Conformance test: tinspect on NumPy .npy and .npz files, against numpy.

Usage:  /usr/bin/python3 tests/conformance/npy_conformance.py [./tinspect] [-v]

Needs numpy (it comes with python3-torch); without it the test is skipped
and exits 0. The torch parts need torch and are skipped without it.

For each fixture under fixtures/npy/ (fixtures/gen_npy.py) that np.load
reads without allow_pickle:

  meta      `tinspect --json FILE` lists the arrays np.load gives, in order,
            named as tinspect documents (a .npy after its file's stem, a .npz
            member NAME.npy as NAME), with numpy's shape and dtype, and
            strides that are numpy's in elements: a Fortran-order array's are
            column-major, and "contiguous" is numpy's C_CONTIGUOUS;
  scan      `tinspect scan` calls it safe;
  st        `convert FILE -o X.safetensors`: every value equals np.load's
            (np.array_equal, bit for bit: compared as bytes), read with a
            reader of the format written here from its specification;
  pt        `convert FILE -o X.pt`: torch.load(weights_only=True) gives
            tensors equal to np.load's (torch.equal of torch.from_numpy);
  npz       `convert FILE -o X.npz`: np.load reads it (zipfile's CRC check
            too) and gives the same arrays, C-ordered and little-endian;
  npy       for a .npy, `convert FILE -o X.npy` is byte for byte what
            np.save writes for the same array made C-ordered and
            little-endian;
  mat       `materialize FILE --fill load -o X.safetensors` gives the values.

Object arrays (object.npy, mixed.npz): scan says unknown (a pickle np.load
runs only with allow_pickle=True), inspect lists the object array as a
value, not a tensor.

Then for torch zips (fixtures/tied.pt, views.pt with its strided views,
dtypes.pt without bfloat16, resnet18_small.pt): `convert X.pt -o Y.npz` read
back by np.load equals torch.load's values, and a tensor that is one view of
another is written whole.

Exits 1 on any mismatch, printing each.
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile

try:
    import numpy as np
except ImportError:
    print("npy conformance: skipped (numpy is not installed)")
    sys.exit(0)
try:
    import torch
except ImportError:
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
args = [a for a in sys.argv[1:] if not a.startswith("-")]
TINSPECT = os.path.abspath(args[0] if args else os.path.join(ROOT, "tinspect"))
VERBOSE = "-v" in sys.argv

failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print("FAIL " + what)
    elif VERBOSE:
        print("ok   " + what)


def run(*argv, expect=0):
    p = subprocess.run([TINSPECT] + list(argv), cwd=ROOT, capture_output=True, text=True)
    if p.returncode != expect:
        raise RuntimeError("tinspect %s: exit %d, want %d: %s" % (" ".join(argv), p.returncode, expect, p.stderr.strip()))
    return p.stdout


def read_safetensors(path):
    """The format's specification: u64 LE header length, JSON header, data; C order, little-endian."""
    names = {"BOOL": "?", "U8": "u1", "I8": "i1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4",
             "I64": "<i8", "U64": "<u8", "F16": "<f2", "F32": "<f4", "F64": "<f8", "C64": "<c8"}
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=names[t["dtype"]]).reshape(t["shape"])
    return out


def same(a, b):
    """Equal values, bit for bit (NaN payloads too), whatever the byte order and memory order."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.newbyteorder("<") != b.dtype.newbyteorder("<"):
        return False
    le = a.dtype.newbyteorder("<")
    return a.astype(le).tobytes(order="C") == b.astype(le).tobytes(order="C")


def arrays_of(path):
    """What np.load gives, in order, under tinspect's names."""
    if path.endswith(".npy"):
        stem = os.path.splitext(os.path.basename(path))[0]
        return [(stem, np.load(path))]
    with np.load(path) as z:
        return [(name, z[name]) for name in z.files]


def element_strides(a):
    return [s // a.itemsize for s in a.strides]


def check_meta(rel, arrays):
    doc = json.loads(run(rel, "--json"))
    tensors = doc["tensors"]
    check([t["name"] for t in tensors] == [n for n, _ in arrays], "%s meta: names %s" % (rel, [t["name"] for t in tensors]))
    check(doc["format"] == ("npy" if rel.endswith(".npy") else "npz"), "%s meta: format %s" % (rel, doc["format"]))
    for t, (name, a) in zip(tensors, arrays):
        where = "%s meta: '%s'" % (rel, name)
        check(t["shape"] == list(a.shape), "%s shape %s, numpy %s" % (where, t["shape"], a.shape))
        want_dtype = a.dtype.newbyteorder("=").name
        check(t["dtype"] == want_dtype, "%s dtype %s, numpy %s" % (where, t["dtype"], want_dtype))
        check(t["nbytes"] == a.nbytes, "%s nbytes %s, numpy %s" % (where, t["nbytes"], a.nbytes))
        if a.size > 0:
            # dimensions of size 1 may have any stride, as in PyTorch
            got = [s for s, d in zip(t["stride"], a.shape) if d != 1]
            want = [s for s, d in zip(element_strides(a), a.shape) if d != 1]
            check(got == want, "%s strides %s, numpy %s" % (where, t["stride"], element_strides(a)))
            check(t["contiguous"] == bool(a.flags["C_CONTIGUOUS"]),
                  "%s contiguous %s, numpy C_CONTIGUOUS %s" % (where, t["contiguous"], a.flags["C_CONTIGUOUS"]))


def check_plain(rel, tmp):
    path = os.path.join(ROOT, rel)
    arrays = arrays_of(path)
    check_meta(rel, arrays)
    check("verdict: safe" in run("scan", rel), "%s scan: not safe" % rel)
    stem = os.path.splitext(os.path.basename(rel))[0]

    # safetensors has no complex128: those are left out of its output (materialize writes a torch zip then)
    no_st = [name for name, a in arrays if a.dtype.kind == "c" and a.itemsize == 16]
    st = os.path.join(tmp, stem + ".safetensors")
    run("convert", rel, "-o", st, "-q", *sum((["--exclude", n] for n in no_st), []))
    back = read_safetensors(st)
    for name, a in arrays:
        if name not in no_st:
            check(name in back and same(back[name], a), "%s st: '%s' differs" % (rel, name))

    if not no_st:  # (materialize has no --exclude)
        mat = os.path.join(tmp, stem + ".mat.safetensors")
        run("materialize", rel, "--fill", "load", "-o", mat)
        back = read_safetensors(mat)
        for name, a in arrays:
            check(name in back and same(back[name], a), "%s mat: '%s' differs" % (rel, name))

    npz = os.path.join(tmp, stem + ".out.npz")
    run("convert", rel, "-o", npz, "-q")
    with zipfile.ZipFile(npz) as z:
        check(z.testzip() is None, "%s npz: a member fails its CRC" % rel)
        check(all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist()), "%s npz: not stored" % rel)
    with np.load(npz) as z:
        check(z.files == [n for n, _ in arrays], "%s npz: members %s" % (rel, z.files))
        for name, a in arrays:
            b = z[name] if name in z.files else None
            check(b is not None and same(b, a) and b.flags["C_CONTIGUOUS"] and b.dtype.byteorder in "<|=",
                  "%s npz: '%s' differs" % (rel, name))

    if rel.endswith(".npy"):
        out = os.path.join(tmp, stem + ".out.npy")
        run("convert", rel, "-o", out, "-q")
        a = arrays[0][1]
        buf = io.BytesIO()
        np.save(buf, a.astype(a.dtype.newbyteorder("<"), order="C"))
        with open(out, "rb") as f:
            check(f.read() == buf.getvalue(), "%s npy: not what np.save writes" % rel)

    if torch is not None:
        # uint16/32/64 are PyTorch 2.x dtypes, written for 2.x (_rebuild_tensor_v3): torch 1.13 cannot load them
        new = [name for name, a in arrays if a.dtype.kind == "u" and a.itemsize > 1]
        pt = os.path.join(tmp, stem + ".pt")
        run("convert", rel, "-o", pt, "-q", *sum((["--exclude", n] for n in new), []))
        loaded = torch.load(pt, weights_only=True)
        for name, a in arrays:
            if name in new:
                continue
            want = torch.from_numpy(a.astype(a.dtype.newbyteorder("="), order="C"))
            check(name in loaded and loaded[name].dtype == want.dtype and torch.equal(loaded[name], want),
                  "%s pt: '%s' differs" % (rel, name))


def check_objects():
    for rel in ("fixtures/npy/object.npy", "fixtures/npy/mixed.npz"):
        out = run("scan", rel, expect=1)
        check("verdict: unknown" in out and "allow_pickle=True" in out, "%s scan: %s" % (rel, out.strip()))
        doc = json.loads(run(rel, "--json"))
        tensors = [t["name"] for t in doc["tensors"]]
        values = [v["name"] for v in doc["values"]]
        check("object" not in tensors and "obj" not in tensors, "%s: an object array listed as a tensor" % rel)
        check(values == (["object"] if rel.endswith(".npy") else ["obj"]), "%s: values %s" % (rel, values))


def check_torch_to_npz(tmp):
    cases = [("fixtures/tied.pt", []), ("fixtures/views.pt", []), ("fixtures/resnet18_small.pt", []),
             ("fixtures/dtypes.pt", ["--exclude", "bfloat16"])]
    for rel, extra in cases:
        out = os.path.join(tmp, os.path.basename(rel) + ".npz")
        run("convert", rel, "-o", out, "-q", *extra)
        state = torch.load(os.path.join(ROOT, rel), map_location="cpu")
        with np.load(out) as z:
            names = [k for k, v in state.items() if torch.is_tensor(v) and k not in extra]
            check(z.files == names, "%s -> npz: members %s, want %s" % (rel, z.files, names))
            for k in names:
                want = state[k].contiguous().numpy()
                check(k in z.files and same(z[k], want), "%s -> npz: '%s' differs" % (rel, k))


def main():
    if not os.access(TINSPECT, os.X_OK):
        print("npy conformance: no executable %s" % TINSPECT)
        return 2
    plain = sorted(f for f in os.listdir(os.path.join(ROOT, "fixtures/npy"))
                   if f.endswith((".npy", ".npz")) and f not in ("object.npy", "mixed.npz"))
    with tempfile.TemporaryDirectory(prefix="tinspect-npy-") as tmp:
        for name in plain:
            try:
                check_plain("fixtures/npy/" + name, tmp)
            except RuntimeError as e:
                check(False, str(e))
        try:
            check_objects()
            if torch is not None:
                check_torch_to_npz(tmp)
        except RuntimeError as e:
            check(False, str(e))
    print("npy conformance: %d checks, %d failed%s" % (checks, len(failures),
                                                         "" if torch is not None else " (torch parts skipped)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
