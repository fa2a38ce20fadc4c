#!/usr/bin/python3
"""
Conformance test: legacy torch.save files and whole pickled modules.

Usage:  /usr/bin/python3 tests/conformance/legacy_conformance.py TINSPECT

Writes files with Debian's torch 1.13 into a temporary folder, with
torch.save(obj, path, _use_new_zipfile_serialization=False) (the format of
every file written before PyTorch 1.6) and, for whole modules, in both
formats. For each legacy file:
  - `TINSPECT FILE --json` lists, per tensor, the dtype, shape, stride and
    storage offset that torch.load(FILE, map_location='meta') gives, and
    tensors that share a storage in torch share one in the listing;
  - `TINSPECT convert FILE -o out.pt` and `-o out.safetensors` give values
    equal (torch.equal) to torch.load's;
  - `TINSPECT check MODEL.json FILE` says the state dict loads, for the small
    CNN (tests/cli/models/legacy_cnn.json);
  - `TINSPECT diff FILE ZIP --values` says identical, ZIP being the same
    object saved in the zip format.
For whole modules (torchvision resnet18 and a custom module, zip and
legacy), tinspect's tensor names and shapes equal model.state_dict()'s.
Needs Debian's python3-torch; prints "skipped" and exits 0 without it.
Exits 1 on any mismatch.
"""

import collections
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn as nn
except ImportError:  # pragma: no cover
    print("legacy conformance: skipped (python3-torch is not installed)")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL  " + msg)


def run(args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def flatten(obj, prefix="", out=None):
    """Names tensors as tinspect does: dict keys and list positions joined by dots."""
    if out is None:
        out = collections.OrderedDict()
    if isinstance(obj, torch.Tensor):
        out[prefix or "(root)"] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}.{i}" if prefix else str(i), out)
    return out


def small_cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(16, 3))


class Custom(nn.Module):
    """A user's module: a class torch.load must import, with a buffer that is not saved."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 3)
        self.dec = nn.Linear(3, 4, bias=False)
        self.dec.weight = nn.Parameter(self.enc.weight.t().contiguous())
        self.register_buffer("scale", torch.tensor([2.0]))
        self.register_buffer("scratch", torch.zeros(2), persistent=False)
        self.blocks = nn.ModuleList([nn.LayerNorm(3), nn.Identity()])


def cases():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tied = nn.Linear(3, 3)
    model = small_cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 4, 4)).sum().backward()
    opt.step()
    return {
        "cnn.pt": small_cnn().state_dict(),
        "views.pt": {"base": base, "t": base.t(), "narrow": base[1:3, 2:5], "step": base[:, ::2],
                     "row": base[3], "scalar": torch.tensor(1.5), "empty": torch.empty(0, 3),
                     "expanded": torch.arange(3.).unsqueeze(1).expand(3, 2)},
        "tied.pt": {"a": tied.weight, "b": tied.weight, "bias": tied.bias},
        "dtypes.pt": {"f16": torch.randn(3).half(), "bf16": torch.randn(2, 2).bfloat16(),
                      "f64": torch.randn(2).double(), "i8": torch.tensor([-1, 2], dtype=torch.int8),
                      "u8": torch.tensor([255, 1], dtype=torch.uint8), "i16": torch.tensor([-7], dtype=torch.int16),
                      "i32": torch.arange(4, dtype=torch.int32), "i64": torch.tensor([1 << 50]),
                      "bool": torch.tensor([True, False]), "c64": torch.tensor([1 - 1j], dtype=torch.complex64)},
        "training.pt": {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 2},
        "root_tensor.pt": torch.arange(6).reshape(2, 3),
    }


def read_safetensors(path):
    dtypes = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
              "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
              "U8": torch.uint8, "BOOL": torch.bool, "C64": torch.complex64}
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = bytearray(data[8 + n + b:8 + n + end])
        t = torch.frombuffer(raw, dtype=dtypes[e["dtype"]]) if raw else torch.empty(0, dtype=dtypes[e["dtype"]])
        out[name] = t.reshape(e["shape"])
    for key, target in header.get("__metadata__", {}).items():
        if key.startswith("tie."):  # a tensor that shares another's data: tinspect writes it once
            out[key[4:]] = out[target]
    return out


def check_listing(tinspect, path, location="meta"):
    r = run([tinspect, path, "--json"])
    if r.returncode != 0:
        fail(f"{path}: inspect exited {r.returncode}: {r.stderr.strip()}")
        return
    doc = json.loads(r.stdout)
    if doc["format"] != "torch-legacy":
        fail(f"{path}: format {doc['format']}")
    got = {t["name"]: t for t in doc["tensors"]}
    want = flatten(torch.load(path, map_location=location))
    if list(got) != list(want):
        fail(f"{path}: names {list(got)} != {list(want)}")
        return
    for name, t in want.items():
        g = got[name]
        exp = (str(t.dtype).replace("torch.", ""), list(t.shape), list(t.stride()), t.storage_offset())
        have = (g["dtype"], g["shape"], g["stride"], g["storage_offset"])
        if exp != have:
            fail(f"{path}: {name}: {have} != torch's {exp}")
    # Shared storages: torch's untyped storage identity against tinspect's storage key.
    real = flatten(torch.load(path))
    by_ptr, by_key = {}, {}
    for name, t in real.items():
        if t.numel():
            by_ptr.setdefault(t.storage().data_ptr(), set()).add(name)
            by_key.setdefault(got[name]["storage"], set()).add(name)
    if sorted(map(sorted, by_ptr.values())) != sorted(map(sorted, by_key.values())):
        fail(f"{path}: storages shared as {sorted(map(sorted, by_key.values()))}, torch: {sorted(map(sorted, by_ptr.values()))}")


def check_convert(tinspect, path, tmp):
    want = flatten(torch.load(path))
    for ext in ("pt", "safetensors"):
        out = os.path.join(tmp, "converted." + ext)
        r = run([tinspect, "convert", path, "-o", out])
        if r.returncode != 0:
            fail(f"{path}: convert -o .{ext} exited {r.returncode}: {r.stderr.strip()}")
            continue
        got = flatten(torch.load(out)) if ext == "pt" else read_safetensors(out)
        os.unlink(out)
        if set(got) != set(want):
            fail(f"{path}: convert .{ext} names {sorted(got)} != {sorted(want)}")
            continue
        for name, t in want.items():
            if not torch.equal(got[name], t):
                fail(f"{path}: convert .{ext}: {name} differs")


def check_module(tinspect, path, model):
    r = run([tinspect, path, "--json"])
    if r.returncode != 0:
        fail(f"{path}: inspect exited {r.returncode}: {r.stderr.strip()}")
        return
    doc = json.loads(r.stdout)
    got = [(t["name"], t["shape"]) for t in doc["tensors"]]
    want = [(k, list(v.shape)) for k, v in model.state_dict().items()]
    if got != want:
        fail(f"{path}: module tensors {got[:4]}... != state_dict {want[:4]}...")
    cls = {v["name"]: v["repr"] for v in doc["values"]}.get("__class__", "")
    full = type(model).__module__ + "." + type(model).__qualname__
    if full not in cls:
        fail(f"{path}: __class__ is {cls!r}, not {full}")


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    tinspect = os.path.abspath(argv[1])
    os.chdir(ROOT)
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, obj in cases().items():
            path = os.path.join(tmp, name)
            torch.save(obj, path, _use_new_zipfile_serialization=False)
            check_listing(tinspect, path)
            check_convert(tinspect, path, tmp)
            # diff: the same object saved in the zip format is identical, values and all
            zipped = os.path.join(tmp, "zip_" + name)
            torch.save(obj, zipped)
            r = run([tinspect, "diff", path, zipped, "--values"])
            if r.returncode != 0 or "identical" not in r.stdout:
                fail(f"diff {name} against its zip save: exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
            count += 1
        # a storage view as PyTorch before 1.0 wrote it (fixtures/gen_legacy.py build_storage_views)
        views = os.path.join(ROOT, "fixtures", "legacy_storage_views.pt")
        check_listing(tinspect, views, "cpu")  # torch cannot slice a meta storage
        check_convert(tinspect, views, tmp)
        count += 1
        # check: a legacy state dict and a nested training checkpoint load into the described CNN
        for name in ("cnn.pt", "training.pt"):
            r = run([tinspect, "check", "tests/cli/models/legacy_cnn.json", os.path.join(tmp, name)])
            if r.returncode != 0:
                fail(f"check {name} exited {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}")
        # a Lightning checkpoint's nested state dict: convert --key state_dict gives exactly it
        ckpt = os.path.join(ROOT, "fixtures", "lightning.ckpt")
        out = os.path.join(tmp, "lightning_state_dict.pt")
        r = run([tinspect, "convert", ckpt, "--key", "state_dict", "-o", out])
        want = torch.load(ckpt)["state_dict"]
        if r.returncode != 0:
            fail(f"convert lightning.ckpt --key state_dict exited {r.returncode}: {r.stderr.strip()}")
        else:
            got = torch.load(out)
            if list(got) != list(want) or not all(torch.equal(got[k], want[k]) for k in want):
                fail(f"convert lightning.ckpt --key state_dict gives {list(got)}, not {list(want)}")
        # whole modules, both formats
        import torchvision
        models = {"resnet18": torchvision.models.resnet18(), "custom": Custom(), "cnn": small_cnn()}
        sys.modules["__main__"].Custom = Custom
        for name, model in models.items():
            for legacy in (False, True):
                path = os.path.join(tmp, f"{name}_{'legacy' if legacy else 'zip'}_module.pt")
                torch.save(model, path, _use_new_zipfile_serialization=not legacy)
                check_module(tinspect, path, model)
                count += 1
                if name != "resnet18":
                    loaded = torch.load(path)
                    want = loaded.state_dict()
                    out = os.path.join(tmp, "module_converted.pt")
                    r = run([tinspect, "convert", path, "-o", out])
                    if r.returncode != 0:
                        fail(f"{path}: convert exited {r.returncode}: {r.stderr.strip()}")
                        continue
                    got = torch.load(out)
                    os.unlink(out)
                    if list(got) != list(want) or not all(torch.equal(got[k], want[k]) for k in want):
                        fail(f"{path}: convert gives {list(got)}, not state_dict() {list(want)}")
    print(f"legacy conformance: {count} files, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
