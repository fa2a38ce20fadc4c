#!/usr/bin/env python3
"""
Coverage test of tinspect-export: every torchvision 0.14 classification and segmentation
model, and two hand-written language models, exported and checked against PyTorch.

Usage:  /usr/bin/python3 tests/conformance/export_conformance.py ./tinspect
            [--full] [--only NAME] [--table-out FILE] [--jobs K]

The models: every builder torchvision.models.list_models() finds in torchvision.models
(classification; googlenet and inception_v3 with aux_logits=False, init_weights=False) and
in torchvision.models.segmentation (weights=None, weights_backbone=None, aux_loss=False),
plus GPT-2 and LLaMA from export_models.py (small configurations; realistic ones with
--full). A builder of a family this file does not know is an error, not a skip.

For each model:

  1. It is built on the meta device in evaluation mode (the factory calls torch.nn modules
     make with factory_kwargs go to meta, so even regnet_y_128gf and vit_h_14 cost no
     memory) and exported with tinspect_export.export(model, {name: (["N", 3, H, W],
     "float32")}, path, symbolic={"N": 2}): N symbolic, the reference run at N=2 (token
     ids (["N", "T"], "int64") at N=2, T=16 for the language models; T=128 with --full).
     H and W are the smallest the family accepts as torchvision documents it (the
     weights' meta["min_size"]), but at least FLOOR (64): vit_* and maxvit_t 224, swin_*
     224, swin_v2_* 256, inception_v3 75. Convolutional families get W = H + 16, so
     that a rule mixing up height and width shows.
  2. `tinspect shapes FILE --json --bind K=V...` with the exporter's bindings: every graph
     step's output shapes and dtypes (steps[i].outputs, depth 0) must equal what PyTorch
     produced for step i (the export's .reference); the first mismatching step is
     reported with both shapes. The number of steps must equal the number of references.
  3. `tinspect params FILE --json`: the persistent entries' names, shapes, dtypes, kinds
     (parameter or buffer) and order must equal model.state_dict().
  4. MACs: tinspect's totals.macs against a reference count made here, independently, on
     a meta-device forward at the same bindings under a TorchDispatchMode that sees every
     aten op the model runs. Counted as MACs, and nothing else:
         aten.convolution   out_elems * (Cin / groups) * prod(kernel)  (transposed:
                            in_elems * (Cout / groups) * prod(kernel))
         aten.mm, addmm     M * N * K
         aten.bmm, baddbmm  batch * M * N * K
         aten.mv, addmv, dot  M * K
     nn.Linear, F.linear, matmul, @, einsum and nn.MultiheadAttention reach the dispatcher
     as these, so they are counted by the same rules. That is PyTorch's FlopCounterMode
     convention halved, so tinspect's totals.flops_torch must be exactly twice the
     reference, for every model (a failure otherwise). Against totals.macs the difference
     is printed, not failed: tinspect's own COUNTING rules (man tinspect) count more as
     MACs, e.g. interpolate (bilinear: 4 per output element, so the segmentation models
     differ) and scaled_dot_product_attention's causal halving (PyTorch 2.x only).
  5. Memory, for the models under the cost limits below: `tinspect memory FILE --bind ...
     --mode infer` and `--mode train --optimizer sgd` against what PyTorch allocates on
     the CPU for the same model at the same bindings, measured as
     memory_conformance.py measures (its tinspect invocation and comparison are
     imported; the plumbing is memshim_run.py's): a child process under
     LD_PRELOAD=memshim.so with one thread imports torchvision, takes the baseline after
     a warm-up op, builds the model on the CPU, makes the input, runs two warm-up steps,
     then two measured steps: the peak of the first above the baseline is the figure;
     the second, measured phase by phase, must agree within 1 % (a NOTE otherwise).
     infer: model.eval(), forward under no_grad.
     train: model.train(), SGD(lr=0.01, foreach=False); forward, loss = sum of .sum() of
     the floating outputs, backward, step, zero_grad(set_to_none=True); tinspect runs the
     same (eval-mode) description with --mode train. The peak must be
     within memory_conformance.PEAK_TOLERANCE (10 %); weights and optimizer state must
     be exact. Models over MEM_LIMITS (parameters, or reference MACs at the bindings:
     CPU time) are not measured and show "—" with the reason.

The memory measurements depend on the machine: oneDNN picks PyTorch's CPU convolution kernels,
and their scratch, by the processor's instruction set (cpuid, at most ONEDNN_MAX_CPU_ISA);
tinspect is left to read the same set (no --cpu-isa), so the two compare like with like. The
coverage table of docs/shapes-and-export.md (--regen-readme FILE) names the set it was measured
with; --check-readme FILE checks the page's worked example and reports a table that differs
from this run's as a NOTE.

Writes a Markdown table (--table-out FILE; always printed) with one row per model:
model, tracer, steps, parameters, MACs (tinspect), MACs ref, MACs diff, shapes exact?,
state_dict exact?, opaque steps, memory infer err %, train err %. The table is
deterministic (no timings, PYTHONHASHSEED=0 in the workers); memory errors are rounded to
whole percents, as the measured peaks can vary by a few KiB between runs.

Exits 1 on any shape or state_dict mismatch, any opaque step, any export or tinspect
error, any memory error beyond the tolerance, or when no model ran; 2 on usage errors.
Exits 0 with "skipped" when torch or torchvision is not importable.

The default run (88 models, memory for 42 of them) takes about 4.5 minutes on two idle
cores (--jobs 2), most of it in the memory measurements. --full (realistic LMs, memory up
to 400 M parameters and 40 GMACs) takes far longer: its GPT-2 124M at T=128 alone takes
about 6 minutes; the whole --full run has not been timed.
"""
import argparse
import difflib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
EXPORT_PKG = os.path.join(ROOT, "tools", "export")
for p in (HERE, EXPORT_PKG):
    if p not in sys.path:
        sys.path.insert(0, p)

import memory_conformance as mc  # noqa: E402  (run_tinspect, compare, PEAK_TOLERANCE)
import memshim_run  # noqa: E402  (build_shim, run_worker, Shim, uniq_bytes, need_torch)

BATCH = 2             # the batch the exporter traces at, and every check binds N to
SEQ = {False: 16, True: 128}  # the language models' sequence length (default run, --full)
FLOOR = 64            # the least height of an image input
# Memory is measured only below these (default run, --full): the CPU time of a
# measurement grows with the MACs, its memory with the parameters.
# Memory gaps we know and have not explained yet: the table shows them as a miss ("**no**"), the run
# prints them as KNOWN, and they do not fail it. Each needs a measured explanation before it goes.
KNOWN_MEMORY_GAPS = {
    "deeplabv3_mobilenet_v3_large": "inference: ASPP's 3x3 convolutions at dilation 12-36 on an 8x14 map take "
                                    "less in PyTorch's forward than the convolution rule models (not yet traced; "
                                    "training is within 1 %: oneDNN's GEMM weight gradient, which neither "
                                    "avx512_core's nor avx2's JIT kernel replaces for a dilated kernel taller "
                                    "than its map)",
}

MEM_LIMITS = {False: {"params": 40e6, "macs": 1.0e9}, True: {"params": 400e6, "macs": 40e9}}
TINSPECT_TIMEOUT = 300
MEMORY_TIMEOUT = 600

# Families: name prefix -> (fixed input size or None, extra builder arguments)
CLASSIFICATION_FAMILIES = [
    ("alexnet", None, {}), ("convnext_", None, {}), ("densenet", None, {}),
    ("efficientnet_", None, {}), ("googlenet", None, {"aux_logits": False, "init_weights": False}),
    ("inception_v3", 75, {"aux_logits": False, "init_weights": False}), ("maxvit_t", 224, {}),
    ("mnasnet", None, {}), ("mobilenet_v2", None, {}), ("mobilenet_v3_", None, {}),
    ("regnet_", None, {}), ("resnet", None, {}), ("resnext", None, {}),
    ("shufflenet_v2_", None, {}), ("squeezenet", None, {}), ("swin_v2_", 256, {}), ("swin_", 224, {}),
    ("vgg", None, {}), ("vit_", 224, {}), ("wide_resnet", None, {}),
]
SEGMENTATION_FAMILIES = [("fcn_", None, {}), ("deeplabv3_", None, {}), ("lraspp_", None, {})]
TRANSFORMER_FAMILIES = ("maxvit_", "swin_", "vit_")  # square inputs only
LANGUAGE_MODELS = ["gpt2", "llama"]


class Case:
    """One model: how to build it and its input."""

    def __init__(self, name, kind, input_shape, kwargs, full):
        self.name, self.kind, self.input_shape, self.kwargs, self.full = name, kind, input_shape, kwargs, full

    def spec(self):
        return {"name": self.name, "kind": self.kind, "input_shape": list(self.input_shape),
                "kwargs": self.kwargs, "full": self.full}

    @staticmethod
    def from_spec(s):
        return Case(s["name"], s["kind"], tuple(s["input_shape"]), s["kwargs"], s["full"])


def _family(name, families):
    for prefix, size, kw in families:
        if name.startswith(prefix):
            return size, kw
    return None


def all_cases(full):
    """Every model of the test, in table order; raises on a builder of an unknown family."""
    import torchvision.models as tvm

    cases = []
    for module, kind, families in ((tvm, "classification", CLASSIFICATION_FAMILIES),
                                   (tvm.segmentation, "segmentation", SEGMENTATION_FAMILIES)):
        for name in tvm.list_models(module=module):
            fam = _family(name, families)
            if fam is None:
                raise SystemExit("error: torchvision builder %s is of no family this test knows: "
                                 "add it to the families of export_conformance.py" % name)
            fixed, kw = fam
            kw = dict(kw, weights=None)
            if kind == "segmentation":
                kw.update(weights_backbone=None, aux_loss=False)
            if fixed is not None:
                h = w = fixed
            else:
                meta = [wt.meta.get("min_size", (1, 1)) for wt in tvm.get_model_weights(name)]
                h = max([FLOOR] + [m[0] for m in meta])
                w = h if name.startswith(TRANSFORMER_FAMILIES) else h + 16
            cases.append(Case(name, kind, (3, h, w), kw, full))
    for name in LANGUAGE_MODELS:
        cases.append(Case(name, "lm", (SEQ[full],), {}, full))
    return cases


# ==========================================================================
# PyTorch side: building, the reference MAC count, the state_dict listing
# ==========================================================================
def meta_factory_mode():
    """A TorchFunctionMode that creates module tensors on the meta device.

    torch.nn modules pass factory_kwargs (device=..., dtype=...) to the factory functions
    that make their parameters and buffers; only those calls are redirected, so tensors a
    constructor computes with (regnet's widths from torch.arange) keep their values.
    """
    import torch
    from torch.overrides import TorchFunctionMode

    factories = {"empty", "empty_strided", "zeros", "ones", "full", "rand", "randn", "randint",
                 "randperm", "arange", "linspace", "logspace", "eye", "tensor", "as_tensor"}

    class MetaFactory(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if ("device" in kwargs and getattr(func, "__name__", "") in factories
                    and getattr(func, "__module__", None) in ("torch", None)):
                kwargs["device"] = torch.device("meta")
            return func(*args, **kwargs)

    return MetaFactory()


def _strays_to_meta(model):
    """Moves the parameters and buffers a constructor made without factory_kwargs to meta,
    keeping shared (tied) tensors shared."""
    import torch

    memo = {}
    for mod in model.modules():
        for table in (mod._parameters, mod._buffers):
            for k, t in table.items():
                if t is None or t.device.type == "meta":
                    continue
                if id(t) not in memo:
                    m = t.detach().to("meta")
                    memo[id(t)] = torch.nn.Parameter(m, t.requires_grad) if isinstance(t, torch.nn.Parameter) else m
                table[k] = memo[id(t)]


def build_model(case, device):
    """The model of `case` in evaluation mode, on "meta" (no storage) or "cpu" (initialised)."""
    import torch

    def make():
        if case.kind == "lm":
            import export_models
            return export_models.make(case.name, case.full)
        import torchvision.models as tvm
        return tvm.get_model(case.name, **case.kwargs)

    torch.manual_seed(0)
    if device == "meta":
        with meta_factory_mode():
            model = make()
        _strays_to_meta(model)
    else:
        model = make()
    return model.eval()


def make_input(case, bindings, device):
    """The input of `case` at the bindings: token ids (zeros: valid indices) or an image batch."""
    import torch

    if case.kind == "lm":
        return torch.zeros((bindings["N"], bindings["T"]), dtype=torch.int64, device=device)
    if device == "meta":
        return torch.empty((bindings["N"],) + case.input_shape, device=device)
    return torch.randn((bindings["N"],) + case.input_shape, device=device)


def state_dict_listing(model):
    """[(name, shape, dtype, kind)] of model.state_dict(), kind "parameter" or "buffer"."""
    from tinspect_export.names import dtype_name

    out = []
    for name, t in model.state_dict().items():
        mod_path, _, leaf = name.rpartition(".")
        mod = model.get_submodule(mod_path) if mod_path else model
        kind = "parameter" if leaf in mod._parameters else "buffer"
        out.append((name, list(t.shape), dtype_name(t.dtype), kind))
    return out


def reference_macs(model, x):
    """MACs of one forward of model(x), counted from the aten ops it dispatches (see the docstring)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten

    class MacCounter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.macs = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            p = func.overloadpacket
            if p is aten.convolution:
                inp, w, transposed = args[0], args[1], args[6]
                self.macs += (inp.numel() if transposed else out.numel()) * w.shape[1] * math.prod(w.shape[2:])
            elif p in (aten.mm, aten.addmm, aten.bmm, aten.baddbmm, aten.mv, aten.addmv):
                a = args[-2] if p in (aten.addmm, aten.baddbmm, aten.addmv) else args[0]
                self.macs += out.numel() * a.shape[-1]
            elif p is aten.dot:
                self.macs += args[0].numel()
            return out

    counter = MacCounter()
    with torch.no_grad(), counter:
        model(x)
    return counter.macs


# ==========================================================================
# Memory: a child process under memshim measures one model in one mode
# ==========================================================================
def memory_worker(spec):
    """Runs in a child with LD_PRELOAD=memshim.so: the peak of one step of one model (see the docstring)."""
    import gc
    import torch

    import torchvision.models  # noqa: F401  (imported before the baseline: its import allocates)
    import export_models  # noqa: F401

    shim = memshim_run.Shim()
    base = memshim_run.baseline(shim)

    case = Case.from_spec(spec["case"])
    model = build_model(case, "cpu")
    x = make_input(case, spec["bindings"], "cpu")

    res = {"weights": memshim_run.uniq_bytes(list(model.parameters()) + list(model.buffers())),
           "optimizer_state": 0, "opt_state_no_step": 0, "gradients": 0}

    def floating_outputs(out):
        if isinstance(out, torch.Tensor):
            return [out] if out.is_floating_point() else []
        if isinstance(out, dict):
            out = list(out.values())
        if isinstance(out, (list, tuple)):
            return [t for o in out for t in floating_outputs(o)]
        return []

    def no_mark(_):
        pass

    if spec["mode"] == "infer":
        model.eval()

        def step(mark=no_mark):
            with torch.no_grad():
                out = model(x)
            mark("forward")
            del out
    else:
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=0.01, foreach=False)

        def step(mark=no_mark):
            out = model(x)
            ts = floating_outputs(out)
            loss = ts[0].sum()
            for t in ts[1:]:
                loss = loss + t.sum()
            mark("forward")
            loss.backward()
            res["gradients"] = memshim_run.uniq_bytes(p.grad for p in params)
            mark("backward")
            opt.step()
            opt.zero_grad(set_to_none=True)
            mark("optimizer")

    step()
    step()
    gc.collect()
    shim.reset()  # measured step 1: one peak for the whole step
    step()
    peaks = [shim.peak() - base]
    gc.collect()
    phases = {}

    def mark(phase):  # measured step 2: the peak of each phase, and live at its end
        phases[phase] = {"peak": shim.peak() - base, "live_after": shim.live(collect=False) - base}
        shim.reset()

    phases["before"] = {"live": shim.live() - base}
    shim.reset()
    step(mark)
    peaks.append(max(ph["peak"] for k, ph in phases.items() if k != "before"))
    res["phases"] = phases
    res["peak"], res["peak_run2"] = peaks
    if spec["mode"] == "train":
        res["optimizer_state"] = res["opt_state_no_step"] = sum(
            t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor))
    return res


def measure_memory(so, case, bindings, mode, path, binary):
    """(error fraction or None, failure messages, notes) of tinspect memory for one mode."""
    spec = {"case": case.spec(), "bindings": bindings, "mode": mode}
    r = memshim_run.run_worker(so, os.path.abspath(__file__), [json.dumps(spec)], timeout=MEMORY_TIMEOUT)
    if "error" in r:
        return None, ["memory (%s): the PyTorch measurement failed: %s" % (mode, r["error"])], []
    notes = []
    if abs(r["peak_run2"] - r["peak"]) > mc.NOISE_TOLERANCE * r["peak"]:
        notes.append("memory (%s): the two measured steps differ: %d vs %d bytes" % (mode, r["peak"], r["peak_run2"]))
    doc, why = mc.run_tinspect(binary, path, bindings, mode, "sgd" if mode == "train" else None)
    if doc is None:
        return None, ["memory (%s): tinspect: %s" % (mode, why)], notes
    fails, n2, err = mc.compare(r, doc)
    if fails:
        ph = r.get("phases", {})
        notes.append("memory (%s): PyTorch (MiB above the baseline): live before the step %s, %s; tinspect: "
                     "peak at %s (%s), activations %s MiB" % (
                         mode, mc.mib(ph.get("before", {}).get("live")),
                         ", ".join("%s peak %s" % (k, mc.mib(v["peak"])) for k, v in ph.items() if k != "before"),
                         doc.get("peak_step"), doc.get("peak_phase"), mc.mib(doc.get("activations"))))
    return err, ["memory (%s): %s" % (mode, f) for f in fails], notes + ["memory (%s): %s" % (mode, n) for n in n2]


# ==========================================================================
# The tinspect side
# ==========================================================================
def run_json(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TINSPECT_TIMEOUT)
    err = p.stderr.decode(errors="replace").strip()
    if p.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (" ".join(os.path.basename(a) for a in argv[:2]), p.returncode,
                                                 err.splitlines()[-1] if err else ""))
    return json.loads(p.stdout.decode())


def bind_args(bindings):
    return [a for k, v in sorted(bindings.items()) for a in ("--bind", "%s=%d" % (k, v))]


def compare_shapes(doc, reference, graph):
    """The first mismatch between tinspect's steps and the export's reference, or None.

    Step i's out names are matched with PyTorch's outputs of step i: with one name per
    output, by name (tinspect lists an output per name bound to a tensor; a None of
    PyTorch's, MultiheadAttention's weights with need_weights=False, must have no tensor
    there); with one name holding a tuple, in order.
    """
    steps = doc.get("steps", [])
    if doc.get("error"):
        return "tinspect shapes reported an error: %s" % (doc["error"],)
    if len(steps) != len(reference):
        return "tinspect has %d steps, the export recorded %d" % (len(steps), len(reference))
    compared = 0
    for i, (step, ref) in enumerate(zip(steps, reference)):
        if step.get("index") != i:
            return "step %d: tinspect's row has index %r" % (i, step.get("index"))
        if ref is None:
            continue
        what = graph[i].get("op") or graph[i].get("call") or graph[i].get("opaque") or graph[i].get("attr")
        outs = graph[i].get("out")
        outs = outs if isinstance(outs, list) else [outs]
        tins = step.get("outputs", [])
        want = [None if r is None else (list(r[0]), r[1]) for r in ref]
        if len(outs) == len(want) and len(outs) > 1:
            by_name = {}
            for o in tins:
                by_name.setdefault(o.get("name"), []).append((o.get("shape"), o.get("dtype")))
            pairs = []
            for name, w in zip(outs, want):
                g = by_name.get(name, [])
                if w is None:
                    if g:
                        return "step %d (%s) output '%s': tinspect %s %s, PyTorch no tensor (None)" % (
                            i, what, name, g[0][0], g[0][1])
                    continue
                if len(g) != 1:
                    return "step %d (%s) output '%s': tinspect lists %d tensors, PyTorch %s %s" % (
                        i, what, name, len(g), w[0], w[1])
                pairs.append((name, g[0], w))
        else:
            got = [(o.get("shape"), o.get("dtype")) for o in tins]
            want = [w for w in want if w is not None]
            if len(got) != len(want):
                return "step %d (%s): %d outputs, PyTorch %d: tinspect %s, PyTorch %s" % (
                    i, what, len(got), len(want), got, want)
            pairs = [(k, g, w) for k, (g, w) in enumerate(zip(got, want))]
        for k, g, w in pairs:
            compared += 1
            if g != w:
                return "step %d (%s) output %s: tinspect %s %s, PyTorch %s %s" % (i, what, k, g[0], g[1], w[0], w[1])
    if not compared:
        return "no tensor output was compared (the export recorded no tensor shapes)"
    return None


def compare_params(doc, listing):
    """The first difference between tinspect params and the state_dict listing, or None."""
    got = [(p["name"], p["shape"], p["dtype"], p.get("kind")) for p in doc.get("parameters", [])
           if p.get("persistent", True)]
    for i, (g, w) in enumerate(zip(got, listing)):
        if list(g) != list(w):
            return "entry %d: tinspect %s, state_dict %s" % (i, g, list(w))
    if len(got) != len(listing):
        extra = got[len(listing):] or listing[len(got):]
        return "tinspect lists %d entries, state_dict %d (first extra: %s)" % (len(got), len(listing), list(extra[0]))
    return None


# ==========================================================================
# One model, in a pool worker
# ==========================================================================
def export_inputs(case, model):
    """The exporter's inputs ({forward's argument name: (shape with symbols, dtype)}) and bindings."""
    import inspect

    arg = next(iter(inspect.signature(model.forward).parameters))
    if case.kind == "lm":
        return {arg: (["N", "T"], "int64")}, {"N": BATCH, "T": case.input_shape[0]}
    return {arg: (["N"] + list(case.input_shape), "float32")}, {"N": BATCH}


def check_case(args):
    """Export one model and check it; returns its row as a dict.

    The checks after the export are independent: one failing (tinspect exiting on an
    operator it does not know, say) does not hide the others' results.
    """
    spec, binary, so, scratch = args
    case = Case.from_spec(spec)
    row = {"model": case.name, "fails": [], "notes": [], "mem": {}}

    def failed(what):
        e = sys.exc_info()[1]
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row["fails"].append("%s: %s: %s" % (what, type(e).__name__, msg))
        row.setdefault("tracebacks", []).append(traceback.format_exc())

    import warnings
    import torch
    import tinspect_export

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="torch.meshgrid")  # maxvit, swin: PyTorch's, not ours
    try:
        model = build_model(case, "meta")
        row["params"] = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
        inputs, symbolic = export_inputs(case, model)
        path = os.path.join(scratch, case.name + ".json")
        res = tinspect_export.export(model, inputs, path, symbolic=symbolic)
    except Exception:
        failed("export")
        return row
    bindings = dict(res.bindings)
    graph = res.description.get("graph", [])
    row.update(tracer=res.tracer, steps=len(graph), opaque=len(res.opaque))
    if getattr(res, "fallback", None):
        row["notes"].append("fx could not trace it (%s): recorded" % res.fallback)
    if bindings != symbolic:
        row["fails"].append("the export's bindings are %s, asked for %s" % (bindings, symbolic))
    if res.opaque:
        groups = {}
        for i, where, why in res.opaque:
            groups.setdefault((where, why), []).append(i)
        row["fails"].append("opaque steps: %s" % "; ".join(
            "%s (%s) at step%s %s" % (where, why, "s" if len(ix) > 1 else "",
                                      ", ".join(map(str, ix[:5])) + (", ... (%d in all)" % len(ix) if len(ix) > 5 else ""))
            for (where, why), ix in groups.items()))
    if len(res.reference) != len(graph):
        row["fails"].append("the export has %d references for %d steps" % (len(res.reference), len(graph)))

    try:
        row["macs_ref"] = reference_macs(model, make_input(case, bindings, "meta"))
    except Exception:
        failed("reference MACs")
    try:
        shapes = run_json([binary, "shapes", path, "--json"] + bind_args(bindings))
        why = compare_shapes(shapes, res.reference, graph)
        row["shapes_ok"] = why is None
        if why:
            row["fails"].append("shapes: " + why)
        row["macs"] = shapes.get("totals", {}).get("macs")
        row["flops_torch"] = shapes.get("totals", {}).get("flops_torch")
        if isinstance(row.get("macs_ref"), int) and row["flops_torch"] != 2 * row["macs_ref"]:
            row["fails"].append("FLOPs as FlopCounterMode counts them: tinspect %s, 2 x the reference %d" % (
                row["flops_torch"], 2 * row["macs_ref"]))
    except Exception:
        row["shapes_ok"] = "error"
        failed("shapes")
    try:
        why = compare_params(run_json([binary, "params", path, "--json"]), state_dict_listing(model))
        row["params_ok"] = why is None
        if why:
            row["fails"].append("state_dict: " + why)
    except Exception:
        row["params_ok"] = "error"
        failed("params")

    limits = MEM_LIMITS[case.full]
    if row["params"] > limits["params"]:
        row["mem_skip"] = "over %d M parameters" % (limits["params"] / 1e6)
    elif row.get("macs_ref", 0) > limits["macs"]:
        row["mem_skip"] = "over %g GMACs at the bindings (CPU time)" % (limits["macs"] / 1e9)
    else:
        for mode in ("infer", "train"):
            try:
                err, fails, notes = measure_memory(so, case, bindings, mode, path, binary)
            except Exception:
                failed("memory (%s)" % mode)
                continue
            row["mem"][mode] = err
            if fails and case.name in KNOWN_MEMORY_GAPS:
                row["notes"] += ["KNOWN GAP " + f for f in fails] + ["known gap: " + KNOWN_MEMORY_GAPS[case.name]]
            else:
                row["fails"] += fails
            row["notes"] += notes
    return row


# ==========================================================================
# The table
# ==========================================================================
def fmt_macs(v):
    return "%.3f G" % (v / 1e9) if isinstance(v, int) else "—"


def fmt_diff(row):
    a, b = row.get("macs"), row.get("macs_ref")
    if not isinstance(a, int) or not isinstance(b, int):
        return "—"
    if a == b:
        return "="
    return "%+.2f %%" % (100.0 * (a - b) / b) if b else "ref 0"


def fmt_bool(v):
    """yes, **no**, **error** (tinspect failed: not compared) or — (not run)."""
    if v == "error":
        return "**error**"
    return "—" if v is None else ("yes" if v else "**no**")


def fmt_mem(row, mode, footnotes):
    if "mem_skip" in row:
        reason = row["mem_skip"]
        if reason not in footnotes:
            footnotes.append(reason)
        return "— (%s)" % chr(ord("a") + footnotes.index(reason))
    v = row["mem"].get(mode)
    if v is None:
        return "**fail**"
    pct = round(100 * v)  # whole percents: memshim's figures vary by a few KiB between runs
    s = "%+d" % pct if pct else "0"
    return s if abs(v) <= mc.PEAK_TOLERANCE else "**%s**" % s


README_BEGIN = "<!-- export-coverage: begin (tests/conformance/export_conformance.py --regen-readme) -->"
README_END = "<!-- export-coverage: end -->"


def readme_table(rows, cpu_isa):
    """The README's table: the same rows without run-to-run figures (memory within tolerance or not), and
    the machine's instruction set the memory was measured with (oneDNN picks its kernels by it)."""
    head = ["model", "tracer", "steps", "parameters", "MACs", "FLOPs as FlopCounterMode", "shapes",
            "state_dict", "opaque", "memory infer", "memory train"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    footnotes = []

    def mem(r, mode):
        cell = fmt_mem(r, mode, footnotes)
        if cell.startswith("—") or cell == "**fail**":
            return cell
        return "**no**" if cell.startswith("**") else "yes"

    def exact(v):
        return "exact" if v is True else fmt_bool(v)

    for r in rows:
        flops_ok = (r["flops_torch"] == 2 * r["macs_ref"]) if isinstance(r.get("flops_torch"), int) and \
            isinstance(r.get("macs_ref"), int) else None
        cells = [r["model"], r.get("tracer", "—"), str(r.get("steps", "—")),
                 "{:,}".format(r["params"]) if "params" in r else "—", fmt_macs(r.get("macs")),
                 exact(flops_ok), exact(r.get("shapes_ok")), exact(r.get("params_ok")),
                 str(r.get("opaque", "—")), mem(r, "infer"), mem(r, "train")]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Shapes: every step's output shapes and dtypes against PyTorch's meta run; state_dict: "
                 "names, shapes, dtypes and order; FLOPs: tinspect's FlopCounterMode count against an "
                 "independent count of the aten matrix products PyTorch ran; memory: tinspect's peak within "
                 "%d %% of what PyTorch allocates on the CPU (measured with oneDNN's %s kernels, one thread)%s" % (
                     round(100 * mc.PEAK_TOLERANCE), cpu_isa or "unknown", "; not measured:" if footnotes else "."))
    for i, f in enumerate(footnotes):
        lines.append("(%s) %s" % (chr(ord("a") + i), f))
    return "\n".join(lines) + "\n"


def check_readme_example():
    """fixtures/models/resnet50.json, the README's worked example, must be what the README's
    tinspect-export command writes today (to stdout here). None, or what is wrong."""
    cmd = [sys.executable, os.path.join(ROOT, "tools", "export", "tinspect-export"), "torchvision.models:resnet50",
           "--input", "x=N,3,224,224"]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        return "tinspect-export resnet50 failed: %s" % p.stderr.strip()
    with open(os.path.join(ROOT, "fixtures", "models", "resnet50.json")) as f:
        if f.read() != p.stdout:
            return ("fixtures/models/resnet50.json is not what tinspect-export writes now: rerun "
                    "tools/export/tinspect-export torchvision.models:resnet50 --input x=N,3,224,224 "
                    "-o fixtures/models/resnet50.json --force")
    return None


def readme_block(path):
    """The README's text before, inside and after the coverage markers."""
    with open(path) as f:
        text = f.read()
    i, j = text.find(README_BEGIN), text.find(README_END)
    if i < 0 or j < i:
        raise ValueError("%s has no %s ... %s block" % (path, README_BEGIN, README_END))
    i += len(README_BEGIN) + 1
    return text[:i], text[i:j], text[j:]


def table(rows):
    head = ["model", "tracer", "steps", "parameters", "MACs (tinspect)", "MACs ref", "MACs diff",
            "FlopCounterMode FLOPs exact?", "shapes exact?", "state_dict exact?", "opaque steps", "memory infer err %", "train err %"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    footnotes = []
    for r in rows:
        cells = [r["model"], r.get("tracer", "—"), str(r.get("steps", "—")),
                 "{:,}".format(r["params"]) if "params" in r else "—",
                 fmt_macs(r.get("macs")), fmt_macs(r.get("macs_ref")), fmt_diff(r),
                 fmt_bool(r["flops_torch"] == 2 * r["macs_ref"]) if isinstance(r.get("flops_torch"), int) and
                 isinstance(r.get("macs_ref"), int) else "—",
                 fmt_bool(r.get("shapes_ok")), fmt_bool(r.get("params_ok")), str(r.get("opaque", "—")),
                 fmt_mem(r, "infer", footnotes), fmt_mem(r, "train", footnotes)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Memory: error of tinspect's peak against PyTorch's on the CPU at the bindings (tolerance "
                 "%d %%)%s" % (round(100 * mc.PEAK_TOLERANCE), "; not measured:" if footnotes else "."))
    for i, f in enumerate(footnotes):
        lines.append("(%s) %s" % (chr(ord("a") + i), f))
    return "\n".join(lines) + "\n"


# ==========================================================================
# Driver
# ==========================================================================
def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("tinspect")
    ap.add_argument("--full", action="store_true", help="realistic language models, higher memory limits")
    ap.add_argument("--only", metavar="NAME", action="append",
                    help="run only the model NAME (repeatable); an unknown name is an error")
    ap.add_argument("--table-out", metavar="FILE")
    ap.add_argument("--check-readme", metavar="README",
                    help="fail unless README's worked example (fixtures/models/resnet50.json) is what the exporter "
                         "writes; a coverage block that differs from this run's table is a NOTE, not a failure "
                         "(it is one machine's run: regenerate it with --regen-readme)")
    ap.add_argument("--regen-readme", metavar="README", help="rewrite README's coverage block from this run")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("-v", "--verbose", action="store_true", help="tracebacks of failures")
    a = ap.parse_args()

    binary = os.path.abspath(a.tinspect)
    if not os.access(binary, os.X_OK):
        print("error: %s is not an executable" % a.tinspect)
        return 2
    try:
        import tinspect_export  # noqa: F401
    except ImportError as e:
        print("error: the exporter is not importable from %s: %s" % (os.path.relpath(EXPORT_PKG, ROOT), e))
        return 1

    cases = all_cases(a.full)
    if a.only:
        known = {c.name for c in cases}
        unknown = [n for n in a.only if n not in known]
        if unknown:
            print("error: no model named %s" % ", ".join(unknown))
            return 2
        cases = [c for c in cases if c.name in a.only]
    if not cases:
        print("error: no model to run")
        return 1

    # The memory workers inherit this: Python's hash seed changes the sizes of the dicts and
    # sets a run allocates, which memshim sees as a few KiB of noise from run to run.
    os.environ["PYTHONHASHSEED"] = "0"
    # run a copy of the binary: a rebuild during the run would mix two versions
    tmp = tempfile.mkdtemp(prefix="tinspect-exportconf-")
    snap = os.path.join(tmp, "tinspect")
    shutil.copy2(binary, snap)
    t0 = time.time()
    rows = {}
    try:
        shim_tmp, so = memshim_run.build_shim()
        scratch = os.path.join(tmp, "descriptions")
        os.makedirs(scratch)
        tasks = [(c.spec(), snap, so, scratch) for c in cases]
        import multiprocessing
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(max(1, a.jobs), maxtasksperchild=8) as pool:
            for row in pool.imap_unordered(check_case, tasks):
                rows[row["model"]] = row
                status = "FAIL" if row["fails"] else "ok"
                print("%-30s %s%s" % (row["model"], status,
                                      "".join("\n    " + f for f in row["fails"] + row["notes"])),
                      file=sys.stderr, flush=True)
                if a.verbose:
                    for tb in row.get("tracebacks", []):
                        print(tb, file=sys.stderr)
        shutil.rmtree(shim_tmp, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    ordered = [rows[c.name] for c in cases if c.name in rows]
    missing = [c.name for c in cases if c.name not in rows]
    text = table(ordered)
    print(text)
    if a.table_out:
        with open(a.table_out, "w") as f:
            f.write(text)
    failed = [r for r in ordered if r["fails"]]
    readme_bad = False
    readme = a.check_readme or a.regen_readme
    if readme and (a.only or a.full):
        print("error: the README's table comes from a default run (no --only, no --full)")
        return 2
    if readme:
        why = check_readme_example()
        if why:
            readme_bad = True
            print("FAIL README example: " + why)
        before, block, after = readme_block(readme)
        want = readme_table(ordered, mc.tinspect_cpu_isa(binary))
        if a.regen_readme:
            with open(readme, "w") as f:
                f.write(before + want + after)
            print("rewrote the coverage table in %s" % readme)
        elif block != want:
            # The table is one machine's run (its instruction set is in it): regenerated, never asserted.
            print("NOTE %s: the coverage table differs from this run's (regenerate it with --regen-readme "
                  "and read the diff)" % readme)
            for line in difflib.unified_diff(block.splitlines(), want.splitlines(), "README", "this run", lineterm=""):
                print("    " + line)
    for r in failed:
        print("FAIL %s" % r["model"])
        for f in r["fails"]:
            print("    " + f)
    for r in ordered:
        for n in r["notes"]:
            print("NOTE %s: %s" % (r["model"], n))
    if missing:
        print("FAIL no result for: %s" % ", ".join(missing))
    print("%d models, %d passed, %d failed (%.0f s)" % (len(cases), len(ordered) - len(failed), len(failed),
                                                         time.time() - t0), file=sys.stderr)
    return 1 if failed or missing or not ordered or readme_bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(memory_worker(json.loads(sys.argv[2]))))
        sys.exit(0)
    memshim_run.need_torch(("torch", "torchvision"),
                           "skipped: torch or torchvision is not importable with %s; export conformance not run")
    sys.exit(main())
