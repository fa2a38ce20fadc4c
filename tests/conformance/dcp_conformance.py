#!/usr/bin/python3
"""
Conformance test: torch.distributed.checkpoint folders.

Usage:  /usr/bin/python3 tests/conformance/dcp_conformance.py TINSPECT

Two parts:

1. Real DCP, where this torch has torch.distributed.checkpoint (2.0 and
   later): a state dict saved with FileSystemWriter in one process (no
   process group), then for it tinspect's global shapes and dtypes must
   equal the Metadata's (read back with pickle, as FileSystemReader does),
   and `tinspect convert DIR -o one.pt` must give, under torch.load, values
   torch.equal to what torch.distributed.checkpoint loads into a state dict
   of the right shapes. Skipped, saying so, where torch lacks DCP (Debian's
   1.13).

2. The fixtures (fixtures/dcp, fixtures/dcp_v22: PyTorch 2.x's bytes, by
   fixtures/gen_dcp.py), with any torch: .metadata read with Python's own
   pickle and classes of the same names and fields, each chunk loaded with
   torch.load from its byte range and copied into the global tensor at its
   offsets, as DefaultLoadPlanner and FileSystemReader do. tinspect's shapes
   and dtypes must equal the Metadata's, its chunks the Metadata's chunks,
   and its converted torch zip and safetensors file must hold the same
   values.

Exits 0 when everything agrees, 1 on a mismatch.
"""

import io
import json
import os
import pickle
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:  # pragma: no cover
    print("dcp conformance: skipped (python3-torch is not installed)")
    sys.exit(0)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "fixtures"))

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


def inspect_json(tinspect, path):
    out = subprocess.run([tinspect, path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        fail("%s: inspect exit %d: %s" % (path, out.returncode, out.stderr.strip()))
        return None
    return json.loads(out.stdout)


def convert(tinspect, path, dest):
    out = subprocess.run([tinspect, "convert", path, "-o", dest], capture_output=True, text=True)
    if out.returncode != 0:
        fail("%s: convert exit %d: %s" % (path, out.returncode, out.stderr.strip()))
        return False
    return True


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def compare(label, tinspect, path, metadata, expected):
    """tinspect's view of path against metadata (a Metadata) and expected {fqn: tensor}."""
    doc = inspect_json(tinspect, path)
    if doc is None:
        return
    rows = {t["name"]: t for t in doc["tensors"]}
    if doc.get("format") != "dcp":
        fail("%s: format %r, want 'dcp'" % (label, doc.get("format")))
    for fqn, md in metadata.state_dict_metadata.items():
        if not hasattr(md, "chunks"):
            if not any(v["name"] == fqn for v in doc["values"]):
                fail("%s: bytes item %r is not listed among the values" % (label, fqn))
            continue
        row = rows.get(fqn)
        if row is None:
            fail("%s: tensor %r missing" % (label, fqn))
            continue
        if row["shape"] != list(md.size) or row["dtype"] != dtype_name(md.properties.dtype):
            fail("%s: %r is %s %s, Metadata says %s %s" % (label, fqn, row["dtype"], row["shape"],
                                                             dtype_name(md.properties.dtype), list(md.size)))
        got = [(c["offsets"], c["sizes"]) for c in row.get("chunks", [])]
        want = [(list(c.offsets), list(c.sizes)) for c in md.chunks]
        if got != want:
            fail("%s: %r chunks %s, Metadata says %s" % (label, fqn, got, want))
    with tempfile.TemporaryDirectory() as tmp:
        for ext in ("pt", "safetensors"):
            dest = os.path.join(tmp, "one." + ext)
            if not convert(tinspect, path, dest):
                continue
            if ext == "pt":
                loaded = torch.load(dest)
            else:
                loaded = read_safetensors(dest)
            for fqn, want in expected.items():
                got = loaded.get(fqn)
                if got is None or got.dtype != want.dtype or not torch.equal(got, want):
                    fail("%s: converted %s: %r differs from what DCP loads" % (label, ext, fqn))
                    continue
            print("ok   %s -> %s: %d tensors equal" % (label, ext, len(expected)))


def read_safetensors(path):
    """A safetensors reader in a few lines: the header, then each tensor's bytes."""
    import struct
    names = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
             "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
             "BOOL": torch.bool}
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(raw, dtype=names[info["dtype"]]) if raw else torch.empty(0, dtype=names[info["dtype"]])
        out[name] = t.reshape(info["shape"])
    return out


def fixtures(tinspect):
    import gen_dcp
    for name, layout in (("dcp", ("torch.distributed.checkpoint.metadata", "_MEM_FORMAT_ENCODING", True)),
                         ("dcp_v22", ("torch.distributed._shard.sharded_tensor.metadata", "MEM_FORMAT_ENCODING",
                                      False))):
        c = gen_dcp.classes(*layout)
        # metadata.py's __setstate__: the tuple __getstate__ wrote
        c.TensorProperties.__setstate__ = lambda self, state: self.__dict__.update(
            dtype=state[0], layout=state[1], requires_grad=state[2], pin_memory=state[4])
        path = os.path.join(ROOT, "fixtures", name)
        with open(os.path.join(path, ".metadata"), "rb") as f:
            md = pickle.load(f)
        expected = {}
        for fqn, item in md.state_dict_metadata.items():
            if not hasattr(item, "chunks"):
                continue
            whole = torch.empty(tuple(item.size), dtype=item.properties.dtype)
            for i, chunk in enumerate(item.chunks):
                info = next(v for k, v in md.storage_data.items()
                            if k.fqn == fqn and tuple(k.offset) == tuple(chunk.offsets))
                with open(os.path.join(path, info.relative_path), "rb") as f:
                    f.seek(info.offset)
                    piece = torch.load(io.BytesIO(f.read(info.length)))
                view = whole
                for d, (o, n) in enumerate(zip(chunk.offsets, chunk.sizes)):
                    view = view.narrow(d, o, n)
                view.copy_(piece)
            expected[fqn] = whole
        want = gen_dcp.state()
        for fqn, tensor in zip(("weight", "proj", "bias", "steps"), want):
            if not torch.equal(expected[fqn], tensor):
                fail("%s: %r as assembled here is not what gen_dcp.py saved" % (name, fqn))
        compare("fixtures/" + name, tinspect, path, md, expected)


def real_dcp(tinspect):
    try:
        import torch.distributed.checkpoint as dcp
    except ImportError:
        print("skip real DCP: torch %s has no torch.distributed.checkpoint (2.0 and later have it)"
              % torch.__version__)
        return
    torch.manual_seed(0)
    state = {"linear.weight": torch.randn(8, 5), "linear.bias": torch.randn(8),
             "emb": torch.randn(3, 4).to(torch.bfloat16), "ids": torch.arange(12).reshape(3, 4),
             "flags": torch.tensor([True, False, True]), "step": 7}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt")
        writer = dcp.FileSystemWriter(path)
        if hasattr(dcp, "save"):
            dcp.save(state, storage_writer=writer)
        else:
            dcp.save_state_dict(state, storage_writer=writer, no_dist=True)
        loaded = {k: torch.zeros_like(v) if isinstance(v, torch.Tensor) else 0 for k, v in state.items()}
        reader = dcp.FileSystemReader(path)
        if hasattr(dcp, "load"):
            dcp.load(loaded, storage_reader=reader)
        else:
            dcp.load_state_dict(loaded, storage_reader=reader, no_dist=True)
        md = reader.read_metadata()
        if loaded["step"] != 7:
            fail("real DCP: torch.distributed.checkpoint loaded step %r, not 7" % loaded["step"])
        tensors = {k: v for k, v in loaded.items() if isinstance(v, torch.Tensor)}
        compare("real DCP (torch %s)" % torch.__version__, tinspect, path, md, tensors)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    tinspect = os.path.abspath(sys.argv[1])
    os.chdir(ROOT)
    fixtures(tinspect)
    real_dcp(tinspect)
    if failures:
        print("dcp conformance: %d failures" % failures)
        sys.exit(1)
    print("dcp conformance: ok")


if __name__ == "__main__":
    main()
