#!/usr/bin/env python3
"""Export torchvision's classification and segmentation models and check them.

usage: verify_torchvision.py [--tinspect PATH] [--out DIR] [--only NAME,...] [--tracer T]

For each model: export with the input N,3,H,W; check one reference entry per
graph step; check the description's state_dict (rebuilt from the description
alone, known leaves through torch.nn) equals model.state_dict() in names,
order and shapes; with --tinspect, run `tinspect shapes --json --bind N=2`
and compare each row with the reference, and `tinspect params --json` with
the state_dict. Prints one table row per model; exit 1 if any failed.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torchvision  # noqa: E402

from tinspect_export import export  # noqa: E402
from tinspect_export.cli import build  # noqa: E402
from tinspect_export.meta import meta_factories  # noqa: E402
from tinspect_export.write import dumps  # noqa: E402

SKIP_CLASSIFICATION = {"vit_h_14"}  # large but fine; kept out for time


def classification_models():
    from torchvision import models
    names = models.list_models(module=models)
    out = []
    for n in sorted(names):
        kw = {"weights": None}
        size = 224
        if n == "googlenet" or n == "inception_v3":
            kw.update(aux_logits=False, init_weights=False)
        if n == "inception_v3":
            size = 299
        out.append((n, getattr(models, n), kw, size))
    return out


def segmentation_models():
    from torchvision.models import segmentation
    out = []
    for n in sorted(torchvision.models.list_models(module=segmentation)):
        kw = {"weights": None, "weights_backbone": None, "aux_loss": False}
        out.append((n, getattr(segmentation, n), kw, 224))
    return out


def description_state_dict(desc):
    """[(name, shape)] the description declares, in state_dict order."""
    out = []

    def leaf(entry):
        args = {k: v for k, v in entry.items() if k not in ("type", "parameters", "buffers")}
        t = entry["type"]
        with meta_factories():
            if t in ("TransformerEncoder", "TransformerDecoder"):
                n, norm = args.pop("num_layers"), args.pop("norm", False)
                for k in ("enable_nested_tensor", "mask_check"):
                    args.pop(k, None)
                layer_t = getattr(torch.nn, t + "Layer")
                m = getattr(torch.nn, t)(layer_t(**args), n,
                                         norm=torch.nn.LayerNorm(args["d_model"]) if norm else None)
            else:
                m = getattr(torch.nn, t)(**args)
        return [(k, list(v.shape)) for k, v in m.state_dict().items()]

    def walk(entry, prefix):
        t = entry.get("type")
        own = leaf(entry) if t not in (None, "Module", "Sequential", "ModuleList", "ModuleDict") else []
        params = [(k, v) for k, v in own if "." not in k and k in _param_names(entry, t)]
        rest = [(k, v) for k, v in own if (k, v) not in params]
        for k, v in params:
            out.append((prefix + k, v))
        for k, e in entry.get("parameters", {}).items():
            out.append((prefix + k, e["shape"]))
        own_buffers = [(k, v) for k, v in rest if "." not in k]
        for k, v in own_buffers:
            out.append((prefix + k, v))
        for k, e in entry.get("buffers", {}).items():
            if e.get("persistent", True):
                out.append((prefix + k, e["shape"]))
        for k, v in rest:
            if "." in k:
                out.append((prefix + k, v))
        for k, c in entry.get("modules", {}).items():
            walk(c, prefix + k + ".")

    walk({"type": None, "modules": desc["modules"], "parameters": desc.get("parameters", {}),
          "buffers": desc.get("buffers", {})}, "")
    return out


def _param_names(entry, t):
    args = {k: v for k, v in entry.items() if k not in ("type", "parameters", "buffers")}
    if t in ("TransformerEncoder", "TransformerDecoder"):
        return set()
    with meta_factories():
        m = getattr(torch.nn, t)(**args)
    return set(m._parameters)


def check_tinspect(tinspect, path, result, model):
    """Compare tinspect's shapes with the reference and its params with the
    state_dict; '' when they agree, else the first difference."""
    return compare_with_tinspect(tinspect, path, result, model)


def compare_with_tinspect(tinspect, path, result, model):
    cmd = [tinspect, "shapes", path, "--json"]
    for kv in result.bindings.items():
        cmd += ["--bind", "%s=%d" % kv]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        err = p.stderr.strip().splitlines()
        return "shapes rc %d: %s" % (p.returncode, err[-1] if err else "")
    rows = json.loads(p.stdout)["steps"]
    if len(rows) != len(result.reference):
        return "tinspect has %d rows, the reference %d" % (len(rows), len(result.reference))
    for row, ref in zip(rows, result.reference):
        got = [(tuple(o["shape"]), o["dtype"]) if o.get("shape") is not None else None
               for o in row.get("outputs", [])]
        want = [r for r in ref]
        if [g for g in got if g] != [w for w in want if w]:
            return "step %d (%s): tinspect %s, PyTorch %s" % (row["index"], row.get("op") or row.get("call") or
                                                              row.get("opaque"), got, want)
    p = subprocess.run([tinspect, "params", path, "--json"], capture_output=True, text=True)
    if p.returncode:
        err = p.stderr.strip().splitlines()
        return "params rc %d: %s" % (p.returncode, err[-1] if err else "")
    listed = [(e["name"], e["shape"]) for e in json.loads(p.stdout)["parameters"]
              if e.get("persistent", True) is not False]
    sd = [(k, list(v.shape)) for k, v in model.state_dict().items()]
    if listed != sd:
        ln, sn = [k for k, _ in listed], [k for k, _ in sd]
        if ln == sn:
            bad = [(a, b) for a, b in zip(listed, sd) if a != b]
            return "params shapes differ: %s" % (bad[:2],)
        return "params differ: missing %s extra %s" % (sorted(set(sn) - set(ln))[:3], sorted(set(ln) - set(sn))[:3])
    return ""


def run_one(name, factory, kw, size, args):
    t0 = time.time()
    model = build(factory, kw, "auto", lambda s: None)
    model.eval()
    sd = [(k, list(v.shape)) for k, v in model.state_dict().items()]
    r = export(model, {"x": "N,3,%d,%d" % (size, size)}, tracer=args.tracer)
    graph = r.description["graph"]
    problems = []
    if len(r.reference) != len(graph):
        problems.append("reference %d != steps %d" % (len(r.reference), len(graph)))
    dsd = description_state_dict(r.description)
    if dsd != sd:
        names_d, names_m = [k for k, _ in dsd], [k for k, _ in sd]
        if sorted(names_d) == sorted(names_m):
            if dict(dsd) != dict(sd):
                problems.append("state_dict shapes differ")
            else:
                problems.append("state_dict order differs")
        else:
            problems.append("state_dict names differ: missing %s extra %s" % (
                sorted(set(names_m) - set(names_d))[:3], sorted(set(names_d) - set(names_m))[:3]))
    text = dumps(r.description)
    json.loads(text)
    if args.out:
        path = os.path.join(args.out, name + ".json")
        with open(path, "w") as f:
            f.write(text)
        if args.tinspect:
            msg = check_tinspect(args.tinspect, path, r, model)
            if msg:
                problems.append(msg)
    return r, problems, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tinspect")
    ap.add_argument("--out")
    ap.add_argument("--only")
    ap.add_argument("--tracer", default="auto")
    ap.add_argument("--kind", default="all", choices=("all", "classification", "segmentation"))
    args = ap.parse_args()
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    todo = []
    if args.kind in ("all", "classification"):
        todo += [m for m in classification_models() if m[0] not in SKIP_CLASSIFICATION]
    if args.kind in ("all", "segmentation"):
        todo += segmentation_models()
    if args.only:
        only = set(args.only.split(","))
        todo = [m for m in todo if m[0] in only]
    failed = 0
    print("| model | tracer | steps | opaque | status |")
    print("|---|---|---|---|---|")
    for name, factory, kw, size in todo:
        try:
            r, problems, dt = run_one(name, factory, kw, size, args)
            opaque = sorted({"%s" % (w,) for _, w, _ in r.opaque})
            status = "; ".join(problems) or "ok"
            print("| %s | %s | %d | %d%s | %s |" % (name, r.tracer, len(r.description["graph"]), len(r.opaque),
                                                   (" (" + ", ".join(opaque[:4]) + ")") if opaque else "",
                                                   status), flush=True)
            failed += bool(problems)
        except Exception as e:
            failed += 1
            print("| %s | - | - | - | %s: %s |" % (name, type(e).__name__, str(e).splitlines()[0][:200]), flush=True)
            if os.environ.get("VERBOSE"):
                traceback.print_exc()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
