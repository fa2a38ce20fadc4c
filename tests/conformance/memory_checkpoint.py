#!/usr/bin/python3
"""
`tinspect memory CHECKPOINT` against the checkpoint PyTorch wrote: the terms
a checkpoint alone gives must be exact.

For each optimizer (SGD with momentum, Adam, AdamW, RMSprop, Adagrad), a
small CNN and a small transformer take one training step in PyTorch 1.13;
torch.save({"model": state_dict, "optimizer": opt.state_dict(), "epoch": 1})
writes the checkpoint; then `tinspect memory FILE --mode train --json` must
report:
  weights          = the bytes of the model's storages, each once
  optimizer_state  = the bytes of every tensor in opt.state_dict()["state"]
                     (Adam's 0-dim float32 step tensors included)
  gradients        = the bytes of the floating parameters (a .grad each)
and without --mode train the same weights. Also checked: the model's state
dict converted to safetensors (`tinspect convert --key model`) gives the
same weights and gradients.

Usage:  /usr/bin/python3 tests/conformance/memory_checkpoint.py ./tinspect
Needs python3-torch; prints "skipped" without it.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:  # pragma: no cover
    print("memory checkpoint conformance: skipped (python3-torch is not installed)")
    sys.exit(0)

nn = torch.nn


def models():
    torch.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.Conv2d(16, 32, 3, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    tfm = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), 2)
    return [("cnn", cnn, lambda: torch.randn(4, 3, 16, 16)), ("transformer", tfm, lambda: torch.randn(2, 8, 64))]


OPTIMIZERS = [
    ("momentum", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)),
    ("adam", lambda p: torch.optim.Adam(p)),
    ("adamw", lambda p: torch.optim.AdamW(p)),
    ("rmsprop", lambda p: torch.optim.RMSprop(p)),
    ("adagrad", lambda p: torch.optim.Adagrad(p)),
]


def storage_bytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        s = t.storage()
        key = s.data_ptr(), s.size()
        if key in seen:
            continue
        seen.add(key)
        total += s.size() * s.element_size()
    return total


def state_tensors(sd):
    out = []
    for st in sd["state"].values():
        out += [v for v in st.values() if isinstance(v, torch.Tensor)]
    return out


def run(binary, args):
    p = subprocess.run([binary, "memory"] + args + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("exit %d: %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "./tinspect")
    tmp = tempfile.mkdtemp(prefix="tinspect-memckpt-")
    failed = passed = 0
    for mname, model, make_input in models():
        model.train()
        for oname, make_opt in OPTIMIZERS:
            m = model
            opt = make_opt(m.parameters())
            m(make_input()).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            path = os.path.join(tmp, "%s_%s.pt" % (mname, oname))
            sd = m.state_dict()
            osd = opt.state_dict()
            torch.save({"model": sd, "optimizer": osd, "epoch": 1}, path)
            want = {
                "weights": storage_bytes(sd.values()),
                "optimizer_state": storage_bytes(state_tensors(osd)),
                "gradients": sum(p.numel() * p.element_size() for p in m.parameters() if p.is_floating_point()),
            }
            case = "%s/%s" % (mname, oname)
            st_path = os.path.join(tmp, "%s_%s.safetensors" % (mname, oname))
            try:
                got = run(binary, [path, "--mode", "train", "--optimizer", oname])
                infer = run(binary, [path])
                conv = subprocess.run([binary, "convert", path, "--key", "model", "-o", st_path, "-q"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
                if conv.returncode:
                    raise RuntimeError("convert: " + conv.stderr.strip())
                st = run(binary, [st_path, "--mode", "train", "--optimizer", oname])
            except (RuntimeError, ValueError) as e:
                print("FAIL %s: %s" % (case, e))
                failed += 1
                continue
            diffs = ["%s %d, PyTorch %d" % (k, got[k], v) for k, v in want.items() if got[k] != v]
            for k in ("weights", "gradients"):
                if st[k] != want[k]:
                    diffs.append("safetensors %s %d, PyTorch %d" % (k, st[k], want[k]))
            if infer["weights"] != want["weights"]:
                diffs.append("inference weights %d, PyTorch %d" % (infer["weights"], want["weights"]))
            if diffs:
                print("FAIL %s: %s" % (case, "; ".join(diffs)))
                failed += 1
            else:
                print("ok   %s: weights %d, optimizer state %d, gradients %d" % (
                    case, want["weights"], want["optimizer_state"], want["gradients"]))
                passed += 1
    print("memory checkpoint conformance: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
