#!/usr/bin/env python3
"""
Numerics of `tinspect run` on the export corpus: every model export_conformance.py
exports (torchvision 0.14's classification and segmentation models, GPT-2 and LLaMA
of export_models.py), run for real on the CPU and compared with the same model in
PyTorch 1.13.

Usage:  /usr/bin/python3 tests/conformance/run_export_conformance.py ./tinspect
            [--only NAME] [--max-macs G] [-v]

For each model (built on the CPU with torch.manual_seed(0), evaluation mode):
  1. its parameters drawn as run_conformance.py draws them (BatchNorm's running
     statistics too, so that no output collapses to its bias), then
     exported with tinspect_export at batch 1 (N symbolic), the input size
     export_conformance.py uses (the smallest the family accepts, at least 64);
  2. its state_dict written to safetensors, an input drawn (randn; token ids
     for the language models) and written beside it;
  3. `tinspect run DESC --bind N=1 --weights W --input x=IN:x --save OUT` and
     every output compared with model(x): max|a - b| / max|b| <= 1e-4 (the
     tolerance of whole models in run_conformance.py; outputs that are
     dicts, torchvision's segmentation "out", flattened in order).
A model whose run stops on "no CPU kernel yet" is SKIP, naming the operator;
one over --max-macs (default 200 G multiply-adds at batch 1: every model of
the corpus; vit_h_14 takes a minute and 11 GB) is skipped for
time. Prints one line per model and a summary of the operators that stopped
runs; exits 1 if any model ran and disagreed (or failed otherwise).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch
    import export_conformance as ec  # all_cases, build_model, export_inputs, reference_macs
    import run_conformance as rc     # save_safetensors, load_safetensors
except ImportError as e:
    print("run export conformance: skipped (%s)" % e)
    sys.exit(0)

TOLERANCE = 1e-4


def outputs_of(y):
    if isinstance(y, torch.Tensor):
        return [y]
    if isinstance(y, dict):
        return [t for v in y.values() for t in outputs_of(v)]
    if isinstance(y, (list, tuple)):
        return [t for v in y for t in outputs_of(v)]
    return []


def check(binary, case, work, max_macs, verbose):
    import tinspect_export

    torch.set_num_threads(2)
    model = ec.build_model(case, "cpu")
    rc.randomize(model)  # BatchNorm statistics and norms' affine terms drawn: outputs far from zero
    model.eval()
    macs = ec.reference_macs(ec.build_model(case, "meta"), ec.make_input(case, {"N": 1, "T": 16}, "meta"))
    if macs > max_macs:
        return "SKIP", "%.1f GMACs at batch 1: over --max-macs" % (macs / 1e9)
    inputs, symbolic = ec.export_inputs(case, model)
    symbolic = dict(symbolic, N=1)
    path = os.path.join(work, case.name + ".json")
    tinspect_export.export(model, inputs, path, symbolic=symbolic)
    name = next(iter(inputs))
    torch.manual_seed(1)
    if case.kind == "lm":
        x = torch.randint(0, 100, (1, symbolic["T"]))
    else:
        x = torch.randn((1,) + tuple(case.input_shape))
    with torch.no_grad():
        want = outputs_of(model(x))
    base = os.path.join(work, case.name)
    rc.save_safetensors(base + ".w.safetensors", dict(model.state_dict()))
    rc.save_safetensors(base + ".in.safetensors", {name: x})
    cmd = [binary, "run", path, "--weights", base + ".w.safetensors", "--input",
           "%s=%s.in.safetensors:%s" % (name, base, name), "--save", base + ".out.safetensors", "--force",
           "--threads", "2"]
    for k, v in symbolic.items():
        cmd += ["--bind", "%s=%d" % (k, v)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "exit %d" % r.returncode
        if "no CPU kernel yet" in last:
            return "SKIP", last[last.index("no CPU kernel yet"):]
        return "FAIL", last[-300:]
    got = [t for _, t in rc.load_safetensors(base + ".out.safetensors")]
    if len(got) != len(want):
        return "FAIL", "%d outputs, PyTorch has %d" % (len(got), len(want))
    worst = 0.0
    for g, w in zip(got, want):
        if list(g.shape) != list(w.shape):
            return "FAIL", "shape %s, PyTorch %s" % (list(g.shape), list(w.shape))
        scale = max(w.abs().max().item(), 1e-6)
        worst = max(worst, (g.float() - w.float()).abs().max().item() / scale)
    scale = max(w.abs().max().item() for w in want)
    return ("ok" if worst <= TOLERANCE else "FAIL"), "max relative error %.2e (tolerance %.0e; max |output| %.3g)" % (
        worst, TOLERANCE, scale)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tinspect", nargs="?", default="./tinspect")
    ap.add_argument("--only")
    ap.add_argument("--max-macs", type=float, default=200.0, help="skip models over this many G multiply-adds")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    binary = os.path.abspath(a.tinspect)
    cases = [c for c in ec.all_cases(False) if not a.only or a.only in c.name]
    counts = collections.Counter()
    stopped = collections.Counter()
    with tempfile.TemporaryDirectory() as work:
        for case in cases:
            try:
                status, why = check(binary, case, work, a.max_macs * 1e9, a.verbose)
            except Exception as e:  # the export or PyTorch itself: a failure of this test, shown
                status, why = "FAIL", "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            counts[status] += 1
            if status == "SKIP" and why.startswith("no CPU kernel yet"):
                stopped[why.split("'")[1] if "'" in why else why] += 1
            print("%-4s %-32s %s" % (status, case.name, why))
            sys.stdout.flush()
    if stopped:
        print("runs stopped by: %s" % ", ".join("%s x%d" % kv for kv in stopped.most_common()))
    print("%d passed, %d failed, %d skipped" % (counts["ok"], counts["FAIL"], counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
