#!/usr/bin/python3
"""
tinspect reads a TorchScript archive (torch.jit.save) as
torch.jit.load(f, map_location='cpu').state_dict() gives it.

Usage:  /usr/bin/python3 tests/conformance/jit_conformance.py ./tinspect

Each module is scripted or traced and saved with torch.jit.save in a
temporary folder: torchvision's resnet18 scripted, a small CNN traced and
scripted, a module with a tied weight, one with a persistent and a
non-persistent buffer (TorchScript keeps no persistent flag: both are in
the loaded module's state_dict) and a plain tensor attribute (in no
state_dict), the CNN in float16, and a traced module whose plain tensor
attribute becomes a constant (constants.pkl). For each:

  - `tinspect inspect --json`: the tensors' names, in order, shapes,
    dtypes and strides are the state_dict's, then the constants as
    constants.c0, ... (what the code calls CONSTANTS.c0), nothing else;
  - `tinspect convert` to a torch zip and to safetensors: the same names,
    each tensor torch.equal to the state_dict's (the constants left out);
  - `tinspect check`: a description of the eager module (the exporter's)
    against the archive says what model.load_state_dict(jit_state_dict)
    says (a non-persistent buffer is an unexpected key to both);
  - `tinspect scan`: the verdict is unknown (TorchScript classes), never
    dangerous, with no finding worse than unknown.

Prints one line per check, a summary; exits 1 on any mismatch or when no
case ran. Needs python3-torch (1.13) and torchvision; prints "skipped"
without them.
"""

import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    import torch.nn as nn
    import torchvision
except ImportError:  # pragma: no cover
    print("jit conformance: skipped (python3-torch or torchvision is not installed)")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))
from tinspect_export import export  # noqa: E402
from tinspect_export.names import dtype_name  # noqa: E402
from check_conformance import TiedLM, expected  # noqa: E402  (as check_conformance.py loads a state_dict)
from safetensors_io import load_safetensors  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class Buffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.register_buffer("scale", torch.full((16,), 0.5), persistent=False)
        self.register_buffer("offset", torch.zeros(16))
        self.plain = torch.arange(16.0)  # a tensor attribute, neither parameter nor buffer

    def forward(self, x):
        return torch.relu(self.fc1(x)) * self.scale + self.offset + self.plain


def cases():
    """[(name, eager module, archive module, exporter inputs or None)]"""
    torch.manual_seed(0)
    cnn = SmallCNN().eval()
    tied = TiedLM().eval()
    buffers = Buffers().eval()
    resnet = torchvision.models.resnet18(weights=None).eval()
    half = SmallCNN().eval().half()
    x = torch.randn(1, 3, 8, 8)
    out = [("resnet18_scripted", resnet, torch.jit.script(resnet), {"x": "N,3,224,224"}),
           ("cnn_traced", cnn, torch.jit.trace(cnn, x), {"x": "N,3,16,16"}),
           ("cnn_scripted", cnn, torch.jit.script(cnn), {"x": "N,3,16,16"}),
           ("tied_scripted", tied, torch.jit.script(tied), {"idx": ("N,T", "int64")}),
           ("buffers_scripted", buffers, torch.jit.script(buffers), {"x": "N,8"}),
           ("cnn_float16_scripted", half, torch.jit.script(half), None)]
    with torch.no_grad():
        out.append(("buffers_traced_constants", buffers, torch.jit.trace(buffers, torch.randn(2, 8)), None))
    return out


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        return p.stdout, p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return "", -1, "timed out after 300 s"


def listing_mismatch(binary, path, sd, constants):
    out, rc, err = run([binary, "inspect", path, "--json"])
    if rc:
        return "tinspect inspect failed (exit %d): %s" % (rc, err.strip())
    doc = json.loads(out)
    got = [(t["name"], t["shape"], t["dtype"], t["stride"]) for t in doc["tensors"]]
    want = [(k, list(v.shape), dtype_name(v.dtype), list(v.stride())) for k, v in sd.items()]
    want += [("constants.c%d" % i, list(c.shape), dtype_name(c.dtype), list(c.stride()))
             for i, c in enumerate(constants)]
    if got != want:
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                return "entry %d: tinspect lists %r, PyTorch %r" % (i, g, w)
        return "tinspect lists %d tensors, PyTorch %d" % (len(got), len(want))
    if doc["values"]:
        return "values listed besides the tensors: %r" % [v["name"] for v in doc["values"]]
    if doc["format"] != "torchscript-zip":
        return "format %r" % doc["format"]
    return None


def values_mismatch(sd, loaded, what):
    if list(loaded) != list(sd):
        return "%s holds %r, the state_dict %r" % (what, list(loaded), list(sd))
    for k, v in sd.items():
        if loaded[k].dtype != v.dtype or not torch.equal(loaded[k], v):
            return "%s: %s differs from the state_dict's" % (what, k)
    return None


def constants_of(path):
    """The tensors of constants.pkl, as the archive's code sees them (CONSTANTS.cN)."""
    import pickle
    import zipfile

    class Unpickler(pickle.Unpickler):
        def __init__(self, f, z, root):
            super().__init__(f)
            self.z, self.root = z, root

        def find_class(self, module, name):
            if module == "torch._utils" and name == "_rebuild_tensor_v2":
                return torch._utils._rebuild_tensor_v2
            if module == "collections" and name == "OrderedDict":
                import collections
                return collections.OrderedDict
            if module == "torch" and name.endswith("Storage"):
                return getattr(torch, name)
            raise pickle.UnpicklingError("constants.pkl names %s.%s" % (module, name))

        def persistent_load(self, pid):
            _, cls, key, _, numel = pid[:5]
            data = bytearray(self.z.read("%s/constants/%s" % (self.root, key)))
            return cls(torch.frombuffer(data, dtype=cls(0).dtype).tolist() if numel else [])

    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0]
        import io
        return list(Unpickler(io.BytesIO(z.read(root + "/constants.pkl")), z, root).load())


def main(argv):
    binary = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(ROOT, "tinspect"))
    ran = failed = 0

    def report(label, why):
        nonlocal ran, failed
        ran += 1
        if why:
            failed += 1
            print("FAIL %s: %s" % (label, why))
        else:
            print("ok %s" % label)

    with tempfile.TemporaryDirectory(prefix="tinspect-jit-") as tmp:
        for name, eager, scripted, inputs in cases():
            path = os.path.join(tmp, name + ".pt")
            torch.jit.save(scripted, path)
            sd = torch.jit.load(path, map_location="cpu").state_dict()
            constants = constants_of(path)
            if name.endswith("_constants") and not constants:
                report(name + "/constants", "the traced module wrote no constant")
            report(name + "/inspect", listing_mismatch(binary, path, sd, constants))
            for fmt, suffix in (("torch", ".pt"), ("safetensors", ".safetensors")):
                out_path = os.path.join(tmp, name + "-converted" + suffix)
                _, rc, err = run([binary, "convert", path, "-o", out_path, "--force"])
                if rc:
                    report("%s/convert-%s" % (name, fmt), "exit %d: %s" % (rc, err.strip()))
                    continue
                loaded = torch.load(out_path) if fmt == "torch" else load_safetensors(out_path, ties=True)
                report("%s/convert-%s" % (name, fmt), values_mismatch(sd, loaded, "the converted file"))
            out, rc, err = run([binary, "scan", path])
            lines = out.strip().split("\n")
            worse = [ln for ln in lines[1:-1] if ln.split()[0] not in ("safe", "unknown")]
            why = None
            if rc != 1 or ": verdict: unknown (" not in lines[-1]:  # exit 1: a finding, not a failure
                why = "exit %d: %r %s" % (rc, lines[-1], err.strip())
            elif worse:
                why = "a finding worse than unknown: %r" % worse[0]
            report(name + "/scan", why)
            if inputs is None:
                continue
            desc = os.path.join(tmp, name + ".json")
            export(eager, inputs, desc)
            want, want_rc = expected(eager, sd, True)
            out, rc, err = run([binary, "check", desc, path])
            lines = out.split("\n")
            want_lines = want.split("\n")
            why = None
            if lines[:len(want_lines)] != want_lines or rc != want_rc:
                why = "tinspect (exit %d) says %r, PyTorch (exit %d) %r %s" % (rc, out, want_rc, want, err.strip())
            report(name + "/check", why)
    if ran == 0:
        print("jit conformance: FAILED: no case ran")
        return 1
    print("jit conformance: %d of %d checks agree with torch.jit.load%s"
          % (ran - failed, ran, "" if not failed else "; %d FAIL" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
