#!/usr/bin/env python3
"""
Conformance test: checkpoints from the torch writer (torch_writer.h) against
real PyTorch.

Usage:  /usr/bin/python3 tests/conformance/writer_conformance.py [./build/unit-tests] [options]

Runs the unit-test binary's torch_writer suites with TINSPECT_WRITER_OUT set
to a temporary directory: each test that writes a scenario leaves <stem>.pt
there with a <stem>.json manifest (storages: dtype and numel; tensors: name,
storage index, offset, shape, stride, requires_grad, is_parameter; the
_metadata entries, or null). Then, for every manifest:

  zip        zipfile opens it and testzip() finds every CRC right; the
             records are <root>/data.pkl, byteorder, data/0..N-1, version,
             in that order, all stored, each payload 64-byte aligned (from
             its local header, as torch's getRecordOffset computes it)
  load       torch.load(f, weights_only=True) and torch.load(f) both give a
             collections.OrderedDict with the manifest's keys in order and,
             per tensor, its dtype, shape, stride, storage_offset,
             requires_grad and nn.Parameter-ness; the whole storage's bytes
             and the tensor's values (torch.equal) are those of pattern()
             in tests/unit/test_torch_writer.c; tensors of one storage
             share one storage (data_ptr) and no other; _metadata as given
  resave     torch.save of what weights_only loaded writes the same data.pkl
             bytes as ours, when storages are numbered in first-use order
             (as torch numbers them)
  module     sequential.pt loads into nn.Sequential(nn.Linear(3, 2),
             nn.BatchNorm1d(2)) with load_state_dict(strict=True), and
             torch.save(model.state_dict()) writes our data.pkl again

Files of the dtypes PyTorch 2.x added (v3_*.pt: _rebuild_tensor_v3, which
torch 1.13 lacks) get the zip checks only. zip64.pt, written with a forced
ZIP64 threshold of 1 byte, gets the zip checks only too: torch's miniz compares the raw saturated offset 0xFFFFFFFF plus
the record size with the file size, which only a file really past 4 GiB
passes. --big adds big.pt, a real 4 GiB + 64 byte storage with records
after it (about 2 minutes, 4.3 GB of disk and 4.3 GB of memory): that is
torch's own ZIP64 test.

Prints one line per file and ends with "N passed, M failed"; exits 1 if any
failed, 0 with a SKIP line if torch is not importable.

Options:
  --keep DIR   write the files to DIR and keep them
  --big        also write and load the 4 GiB file
  -v           print every check
"""
import argparse
import collections
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import warnings
import zipfile

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
          "that has torch); writer conformance not run" % sys.executable)
    sys.exit(0)

warnings.filterwarnings("ignore")


CHUNK = 1 << 26  # bytes compared at a time, so that a 4 GiB storage needs no 4 GiB of patterns
VALUES_MAX = 1 << 26  # past this, values are implied by the bytes and the geometry


def pattern(storage, start, end, dtype_name):
    """Bytes [start, end) the unit test streams into storage `storage` (pattern() in test_torch_writer.c)."""
    k = torch.arange(0, end - start, dtype=torch.int32)  # k * 7 + 60 stays below 2**31 for a chunk
    if dtype_name == "bool":
        return ((k + (storage + start) % 2) % 2).to(torch.uint8)
    return ((k * 7 + (storage * 13 + start * 7) % 61) % 61).to(torch.uint8)


def torch_dtype(name):
    return getattr(torch, name)


def element_size(dtype):
    return torch.empty(0, dtype=dtype).element_size()


def storage_is_pattern(t, storage, dtype_name):
    """Whether every byte of the storage under t is the pattern, compared a chunk at a time."""
    whole = torch.empty(0, dtype=t.dtype).set_(t.storage()).view(torch.uint8)
    for start in range(0, whole.numel(), CHUNK):
        end = min(start + CHUNK, whole.numel())
        if not torch.equal(whole[start:end], pattern(storage, start, end, dtype_name)):
            return False
    return True


class Checks:
    def __init__(self, verbose):
        self.errors = []
        self.verbose = verbose

    def expect(self, ok, what):
        if not ok:
            self.errors.append(what)
        elif self.verbose:
            print("      ok   " + what)


def check_zip(path, m, c):
    root = m["root"]
    want = ["%s/data.pkl" % root, "%s/byteorder" % root]
    want += ["%s/data/%d" % (root, i) for i in range(len(m["storages"]))]
    want += ["%s/version" % root]
    with zipfile.ZipFile(path) as z:
        c.expect(z.testzip() is None, "zipfile: every CRC is right")
        infos = z.infolist()
        c.expect([i.filename for i in infos] == want,
                 "records in order: %s" % [i.filename for i in infos])
        c.expect(all(i.compress_type == zipfile.ZIP_STORED for i in infos), "all records stored")
        c.expect(z.read("%s/version" % root) == b"3\n", "version is 3")
        c.expect(z.read("%s/byteorder" % root) == (b"big" if m["big_endian"] else b"little"),
                 "byteorder")
        pickle = z.read("%s/data.pkl" % root)
    with open(path, "rb") as f:
        for i in infos:
            f.seek(i.header_offset)
            h = f.read(30)
            name_len, extra_len = struct.unpack("<HH", h[26:30])
            payload = i.header_offset + 30 + name_len + extra_len
            c.expect(payload % 64 == 0, "%s payload at %d is 64-byte aligned" % (i.filename, payload))
    return pickle


def first_use_ordered(m):
    seen = []
    for t in m["tensors"]:
        if t["storage"] not in seen:
            seen.append(t["storage"])
    return seen == list(range(len(m["storages"])))


def check_loaded(sd, m, how, c):
    c.expect(type(sd) is collections.OrderedDict, "%s: an OrderedDict, got %s" % (how, type(sd)))
    names = [t["name"] for t in m["tensors"]]
    c.expect(list(sd.keys()) == names, "%s: keys in order" % how)
    ptr_of = {}
    bytes_checked = set()
    for want in m["tensors"]:
        t = sd.get(want["name"])
        if t is None:
            c.expect(False, "%s: no tensor %r" % (how, want["name"]))
            continue
        name = "%s: %s" % (how, want["name"])
        st = m["storages"][want["storage"]]
        dt = torch_dtype(st["dtype"])
        c.expect(t.dtype == dt, "%s dtype %s, want %s" % (name, t.dtype, dt))
        c.expect(list(t.shape) == want["shape"], "%s shape %s, want %s" % (name, list(t.shape), want["shape"]))
        c.expect(list(t.stride()) == want["stride"],
                 "%s stride %s, want %s" % (name, list(t.stride()), want["stride"]))
        c.expect(t.storage_offset() == want["offset"], "%s offset %d" % (name, t.storage_offset()))
        c.expect(t.requires_grad == want["requires_grad"], "%s requires_grad %s" % (name, t.requires_grad))
        c.expect(isinstance(t, torch.nn.Parameter) == want["is_parameter"],
                 "%s is %s" % (name, type(t).__name__))
        nbytes = st["numel"] * element_size(dt)
        if want["storage"] not in bytes_checked:  # once per storage: it may be 4 GiB
            bytes_checked.add(want["storage"])
            c.expect(storage_is_pattern(t, want["storage"], st["dtype"]),
                     "%s storage bytes are the pattern" % name)
        # Values are as written only where torch ignores byteorder (1.13).
        if not m["big_endian"] and nbytes <= VALUES_MAX:
            if t.numel():
                raw = pattern(want["storage"], 0, nbytes, st["dtype"]).numpy().tobytes()
                expected = torch.frombuffer(bytearray(raw), dtype=dt)
                expected = expected.as_strided(want["shape"], want["stride"], want["offset"])
            else:
                expected = torch.empty(want["shape"], dtype=dt)
            c.expect(torch.equal(t.detach(), expected), "%s values" % name)
        if nbytes:
            ptr_of.setdefault(want["storage"], set()).add(t.storage().data_ptr())
    c.expect(all(len(p) == 1 for p in ptr_of.values()), "%s: each storage is one storage" % how)
    firsts = [next(iter(p)) for p in ptr_of.values()]
    c.expect(len(set(firsts)) == len(firsts), "%s: different storages stay apart" % how)
    if m["metadata"] is None:
        c.expect(not hasattr(sd, "_metadata"), "%s: no _metadata" % how)
    else:
        want = [(p, {"version": v}) for p, v in m["metadata"]]
        got = list(getattr(sd, "_metadata", {}).items())
        c.expect(got == want, "%s: _metadata %s, want %s" % (how, got, want))


def pickle_of(obj, scratch):
    """data.pkl of torch.save(obj), through a file: a big state dict would not fit a BytesIO twice."""
    torch.save(obj, scratch)
    try:
        with zipfile.ZipFile(scratch) as z:
            return z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
    finally:
        os.unlink(scratch)


# PyTorch 2.x torch.storage._new_dtypes(): saved as an UntypedStorage and _rebuild_tensor_v3
V3_DTYPES = {"complex32", "uint16", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz",
             "float8_e4m3fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8", "bits2x4",
             "bits4x2"}


def check_file(path, m, verbose):
    c = Checks(verbose)
    ours = check_zip(path, m, c)
    if m["forced_zip64"]:
        # miniz (torch's zip reader) checks the raw 32-bit offset 0xFFFFFFFF plus the
        # record's size against the file's size, which only a file really past 4 GiB
        # passes: a forced-threshold file is for the zip readers; --big is torch's test.
        return c.errors, "zip only"
    if any(st["dtype"] in V3_DTYPES for st in m["storages"]):
        # written with _rebuild_tensor_v3, as PyTorch 2.2+ writes these dtypes: torch 1.13 has
        # no such function (roundtrip_conformance.py loads them with 2.x's rebuild functions)
        return c.errors, "zip only: _rebuild_tensor_v3"
    scratch = path + ".resave"
    safe = torch.load(path, map_location="cpu", weights_only=True)
    check_loaded(safe, m, "weights_only", c)
    if first_use_ordered(m):
        c.expect(pickle_of(safe, scratch) == ours, "torch.save of the loaded dict writes our data.pkl")
    del safe
    full = torch.load(path, map_location="cpu")
    check_loaded(full, m, "full", c)
    if m["file"] == "sequential.pt":
        model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
        result = model.load_state_dict(full, strict=True)
        c.expect(not result.missing_keys and not result.unexpected_keys, "load_state_dict(strict=True)")
        c.expect(pickle_of(model.state_dict(), scratch) == ours, "the model's state_dict saves as our data.pkl")
    return c.errors, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tests", nargs="?", default="./build/unit-tests")
    ap.add_argument("--keep")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    if not os.access(a.tests, os.X_OK):
        print("error: %s is not an executable (make build/unit-tests)" % a.tests)
        return 2
    out = a.keep or tempfile.mkdtemp(prefix="tinspect_writer_")
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, TINSPECT_WRITER_OUT=os.path.abspath(out))
    if a.big:
        env["TINSPECT_WRITER_BIG"] = "1"
    run = subprocess.run([a.tests, "--filter", "torch_writer*/*", "--jobs", "1"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if run.returncode != 0:
        print(run.stdout[-4000:])
        print("error: the torch_writer unit tests failed")
        return 1
    print("torch %s, files in %s" % (torch.__version__, out))
    manifests = sorted(f for f in os.listdir(out) if f.endswith(".json"))
    passed = failed = 0
    for name in manifests:
        with open(os.path.join(out, name)) as f:
            m = json.load(f)
        path = os.path.join(out, m["file"])
        if a.v:
            print("----  %s" % m["file"])
        note = ""
        try:
            errors, note = check_file(path, m, a.v)
        except Exception as e:  # torch refused the file: that is the failure we look for
            errors = ["%s: %s" % (type(e).__name__, str(e)[:300])]
        status = "PASS" if not errors else "FAIL"
        print("%s  %-28s %4d tensors %4d storages %s" % (status, m["file"], len(m["tensors"]),
                                                        len(m["storages"]), note))
        for e in errors[:10]:
            print("      - " + e)
        passed += not errors
        failed += bool(errors)
    if not manifests:
        print("error: the unit tests left no files")
        failed += 1
    if not a.keep:
        for f in os.listdir(out):
            os.unlink(os.path.join(out, f))
        os.rmdir(out)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
