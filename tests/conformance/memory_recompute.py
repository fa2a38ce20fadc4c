#!/usr/bin/python3
"""
`tinspect memory --checkpoint GLOB` against torch.utils.checkpoint, on models
exported with tinspect-export (whose steps call leaves by their dotted paths:
no step groups a block's steps), measured under memshim.

For each model below (torchvision's ResNet-50 and a small VisionTransformer,
the GPT-2 and LLaMA decoders of export_models.py, written as people write
them) and each GLOB (and none):

  1. the model is exported (tracer auto) at the case's concrete input size;
  2. a worker under LD_PRELOAD=memshim.so, one thread, builds the same model
     (same seed), wraps the forward of every module whose path matches GLOB
     (the outermost, as tinspect takes them) in
     torch.utils.checkpoint.checkpoint (1.13's default: reentrant), and
     measures one training step after two warm-ups: forward, loss = the sum
     of the output, backward, Adam (foreach=False) step,
     zero_grad(set_to_none=True); the peak of memshim's live bytes above the
     baseline taken before the model was built;
  3. `tinspect memory DESC --mode train --optimizer adam --device cpu
     [--checkpoint GLOB] --json` gives its peak.

Fails a case when tinspect's peak is more than 10 % from the measured one
(the memory corpus's tolerance), or when checkpointing changes the measured
peak by more than 10 % and tinspect's estimate does not move in the same
direction by at least half as much (the glob acted on nothing). A glob that
names no module of the description must be refused (exit 2).

Usage:  /usr/bin/python3 tests/conformance/memory_recompute.py ./tinspect [--only NAME] [-v]
Needs python3-torch and torchvision; prints "skipped" without them.
"""
import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "export"))

TOLERANCE = 0.10

# name, input spec (exporter form), the globs checkpointed
CASES = [
    ("resnet50", ("8x3x112x112", "float32"), ["layer*", "layer*.*"]),
    ("vit", ("16x3x64x64", "float32"), ["encoder.layers.*"]),
    ("gpt2", ("4x64", "int64"), ["transformer.h.*"]),
    ("llama", ("4x64", "int64"), ["layers.*"]),
]


def build(name):
    import torch
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision
        return torchvision.models.resnet50()
    if name == "vit":
        from torchvision.models.vision_transformer import VisionTransformer
        return VisionTransformer(image_size=64, patch_size=8, num_layers=4, num_heads=4, hidden_dim=128,
                                 mlp_dim=512, num_classes=10)
    import export_models
    return export_models.make(name)


def make_input(spec):
    import torch
    shape = [int(d) for d in spec[0].split("x")]
    torch.manual_seed(1)
    if spec[1] == "int64":
        return torch.randint(0, 1000, shape)
    return torch.randn(shape)


def outermost(model, glob):
    """The paths of the modules a glob checkpoints: matching, with no matching ancestor."""
    chosen = []
    for path, _ in model.named_modules():
        if path and fnmatch.fnmatchcase(path, glob) and not any(path.startswith(c + ".") for c in chosen):
            chosen.append(path)
    return chosen


def worker(args):
    import gc
    import torch
    import torch.utils.checkpoint
    import torchvision.models  # noqa: F401  (its import allocates: before the baseline)
    import export_models  # noqa: F401
    import memshim_run

    shim = memshim_run.Shim()
    base = memshim_run.baseline(shim)
    name, glob = args[0], args[1] if args[1] != "-" else None
    spec = next(c[1] for c in CASES if c[0] == name)
    model = build(name)
    x = make_input(spec)
    wrapped = outermost(model, glob) if glob else []
    for path in wrapped:
        m = model.get_submodule(path)
        forward = m.forward

        def checkpointed(*xs, _forward=forward, **kw):
            return torch.utils.checkpoint.checkpoint(_forward, *xs, **kw)
        m.forward = checkpointed
    model.train()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3, foreach=False)

    def step():
        out = model(x)
        loss = out.float().sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    step()
    gc.collect()
    shim.reset()
    step()
    return {"peak": shim.peak() - base, "wrapped": len(wrapped)}


def export(name, spec, path):
    from tinspect_export import export as do_export
    model = build(name)
    model.train()
    do_export(model, {"x" if spec[1] == "float32" else "idx": spec}, path=path, force=True)


def tinspect_peak(binary, desc, glob):
    argv = [binary, "memory", desc, "--mode", "train", "--optimizer", "adam", "--device", "cpu", "--json"]
    if glob:
        argv += ["--checkpoint", glob]
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.loads(p.stdout)["peak"], None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2:])))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("tinspect")
    ap.add_argument("--only")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        print("memory recompute conformance: skipped (python3-torch or torchvision is not installed)")
        return 0
    import memshim_run
    binary = os.path.abspath(a.tinspect)
    tmp, so = memshim_run.build_shim()
    failures, passed = [], 0
    try:
        for name, spec, globs in CASES:
            if a.only and a.only not in name:
                continue
            desc = os.path.join(tmp, name + ".json")
            export(name, spec, desc)
            p = subprocess.run([binary, "memory", desc, "--mode", "train", "--checkpoint", "no_such_module*"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True)
            if p.returncode != 2:
                failures.append("%s: a glob that names no module exited %d, not 2" % (name, p.returncode))
            base = None
            for glob in [None] + globs:
                label = "%s --checkpoint %s" % (name, glob) if glob else name
                res = memshim_run.run_worker(so, os.path.abspath(__file__), [name, glob or "-"])
                if "error" in res:
                    failures.append("%s: the PyTorch worker failed: %s" % (label, res["error"]))
                    continue
                est, why = tinspect_peak(binary, desc, glob)
                if est is None:
                    failures.append("%s: tinspect failed: %s" % (label, why))
                    continue
                measured = res["peak"]
                err = (est - measured) / measured
                ok = abs(err) <= TOLERANCE
                note = ""
                if base is None:
                    base = (measured, est)
                else:
                    dm = measured / base[0] - 1
                    de = est / base[1] - 1
                    if abs(dm) > TOLERANCE and (de * dm <= 0 or abs(de) < abs(dm) / 2):
                        ok = False
                        note = "  checkpointing moved the measured peak %+.0f%% but the estimate %+.0f%%" % (
                            100 * dm, 100 * de)
                    elif a.v:
                        note = "  (measured %+.0f%%, estimate %+.0f%% against no checkpointing)" % (100 * dm, 100 * de)
                print("%-40s torch %8.1f MiB  tinspect %8.1f MiB  %+6.1f%%  %s%s" % (
                    label, measured / 2**20, est / 2**20, 100 * err, "ok" if ok else "FAIL", note))
                sys.stdout.flush()
                if ok:
                    passed += 1
                else:
                    failures.append("%s: tinspect %.1f MiB, PyTorch %.1f MiB (%+.1f%%)%s" % (
                        label, est / 2**20, measured / 2**20, 100 * err, note))
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL " + f)
    print("memory recompute conformance: %d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
