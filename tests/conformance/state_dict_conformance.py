#!/usr/bin/python3
"""
What `tinspect materialize MODEL.json -o out.pt` writes must be what
torch.save(model.state_dict()) writes for the same model, as torch.load
sees it: an OrderedDict, the same keys in the same order, plain tensors
(not nn.Parameter) with requires_grad False, the same shapes and dtypes,
and the same _metadata (each module's prefix and _version, in order).

Usage:  /usr/bin/python3 tests/conformance/state_dict_conformance.py ./tinspect

The torch model is built from the description by the interpreter of
shapes_conformance.py (real torch.nn modules), on the meta device; its
state_dict is saved after to_empty on the CPU. Values are not compared:
the fill is tinspect's (zeros here), PyTorch's are uninitialised.
Needs python3-torch (1.13); prints "skipped" without it.
"""

import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:  # pragma: no cover
    print("state_dict conformance: skipped (python3-torch is not installed)")
    sys.exit(0)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import shapes_conformance as sc  # noqa: E402

DESCRIPTIONS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "models", "*.json")) +
                      glob.glob(os.path.join(ROOT, "tests", "cli", "models", "*.json")))


def _build_stacks(self, spec, what, _plain=sc.Interpreter.build):
    """The interpreter builds modules from their torch constructors; tinspect's stacks take a layer's arguments."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind not in ("TransformerEncoder", "TransformerDecoder"):
        return _plain(self, spec, what)
    args = {k: v for k, v in spec.items() if k not in ("type", "num_layers", "norm")}
    layer = (torch.nn.TransformerEncoderLayer if kind == "TransformerEncoder" else torch.nn.TransformerDecoderLayer)(**args)
    norm = torch.nn.LayerNorm(args["d_model"]) if spec.get("norm") else None
    stack = getattr(torch.nn, kind)
    return stack(layer, spec["num_layers"], norm=norm)


sc.Interpreter.build = _build_stacks


def torch_state_dict(desc, scratch):
    model = sc.Interpreter(desc, sc.bind_for(desc), "meta").build_model().to_empty(device="cpu")
    path = os.path.join(scratch, "torch.pt")
    torch.save(model.state_dict(), path)
    return torch.load(path)


def tinspect_state_dict(binary, path, scratch):
    out = os.path.join(scratch, "tinspect.pt")
    p = subprocess.run([binary, "materialize", path, "--fill", "zeros", "-o", out, "-f", "-q"], cwd=ROOT,
                       capture_output=True, timeout=300)
    if p.returncode:
        raise AssertionError("materialize exited %d: %s" % (p.returncode, p.stderr.decode().strip()))
    return torch.load(out)


def compare(want, got):
    if type(got) is not type(want):
        return "type %s, torch.save gives %s" % (type(got).__name__, type(want).__name__)
    if list(got) != list(want):
        return "keys %s, torch.save gives %s" % (list(got)[:6], list(want)[:6])
    for name, t in got.items():
        w = want[name]
        if type(t) is not type(w):
            return "'%s' is a %s, torch.save gives a %s" % (name, type(t).__name__, type(w).__name__)
        if t.requires_grad != w.requires_grad:
            return "'%s' requires_grad %s, torch.save gives %s" % (name, t.requires_grad, w.requires_grad)
        if tuple(t.shape) != tuple(w.shape) or t.dtype != w.dtype:
            return "'%s' is %s %s, torch.save gives %s %s" % (name, t.dtype, tuple(t.shape), w.dtype, tuple(w.shape))
    want_meta = getattr(want, "_metadata", None)
    got_meta = getattr(got, "_metadata", None)
    if list((got_meta or {}).items()) != list((want_meta or {}).items()):
        return "_metadata %s, torch.save gives %s" % (list((got_meta or {}).items())[:4],
                                                      list((want_meta or {}).items())[:4])
    return None


def main(argv):
    binary = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(ROOT, "tinspect"))
    torch.set_num_threads(1)
    passed = failed = skipped = 0
    for path in DESCRIPTIONS:
        name = os.path.relpath(path, ROOT)
        try:
            with open(path) as f:
                desc = json.load(f)
        except ValueError:  # a CLI case's broken description
            print("skip %-40s not JSON" % name)
            skipped += 1
            continue
        with tempfile.TemporaryDirectory() as scratch:
            try:
                want = torch_state_dict(desc, scratch)
            except Exception as e:  # a description made to fail, or one torch 1.13 cannot build
                print("skip %-40s torch cannot build it: %s" % (name, str(e).splitlines()[0][:80]))
                skipped += 1
                continue
            if not isinstance(want, collections.OrderedDict) or not want:
                print("skip %-40s no state" % name)
                skipped += 1
                continue
            try:
                problem = compare(want, tinspect_state_dict(binary, path, scratch))
            except (AssertionError, subprocess.TimeoutExpired) as e:
                problem = str(e)
        if problem:
            print("FAIL %-40s %s" % (name, problem))
            failed += 1
        else:
            print("ok   %-40s %d entries, %d modules in _metadata" % (name, len(want), len(want._metadata)))
            passed += 1
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
