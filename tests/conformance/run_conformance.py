#!/usr/bin/env python3
"""
Conformance test: `tinspect run` against PyTorch on the CPU, float32.

Usage:  /usr/bin/python3 tests/conformance/run_conformance.py [./tinspect] [--only SUBSTR] [-v]

Each case is a model description: the one-operator and one-module cases of
run_cases.py and run_cases_<family>.py, the model descriptions of
fixtures/models and tests/cli/models, then shapes_conformance.py's corpus (its
handwritten "ok_" cases and its 300 random chains; --no-shapes-corpus leaves
it out, as `make test` does, and --shapes-corpus-only runs it alone, as
`make conformance` does; a chain PyTorch refuses is skipped). PyTorch builds it with the interpreter of
shapes_conformance.py, on the CPU, in eval mode, with random weights
(reset_parameters(), BatchNorm statistics drawn); the weights are written to
a safetensors file (state_dict names) and the inputs to another. Then

    tinspect run CASE.json --weights W.safetensors --input x=IN.safetensors:x ... --save OUT.safetensors

and every output is compared with PyTorch's:

    error = max|tinspect - torch| / max(max|torch|, 1e-6)     (max relative error)

against the case's tolerance: 1e-4 for operators built on sgemm (linear,
matmul, bmm, addmm, convolution, attention) and for whole models, 1e-5 for
the others (elementwise, activations, softmax, norms, pools), 0 for views and
copies (cat, split, embedding, ...). Integer and bool outputs must be equal.

A case whose run says "no CPU kernel yet" is SKIP (printed, not failed):
`tinspect run --list-kernels` lists the operators with kernels. Prints one line per case, then
"N passed, M failed, K skipped"; exits 1 if any failed, 0 with "skipped" when
torch is not installed.
"""
import glob
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

try:
    import torch
    import torch.nn as nn
    import safetensors_io as sio
    import shapes_conformance as sc
    import run_cases
    from run_cases import GEMM
except ImportError:
    print("run conformance: skipped (torch is not installed)")
    sys.exit(0)


def save_safetensors(path, tensors):
    sio.save_safetensors(tensors, path)


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = []
    for name, h in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = h["data_offsets"]
        buf = bytearray(raw[8 + n + a:8 + n + b])
        dtype = {v: k for k, v in sio.DTYPES.items()}[h["dtype"]]
        t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        out.append((name, t.reshape(h["shape"])))
    return out


OP_CASES, REFERENCES = list(run_cases.CASES), dict(run_cases.REFERENCES)
for _family in sorted(glob.glob(os.path.join(HERE, "run_cases_*.py"))):
    _mod = importlib.import_module(os.path.basename(_family)[:-3])
    OP_CASES += _mod.CASES
    REFERENCES.update(getattr(_mod, "REFERENCES", {}))


def _resnet50():
    import torchvision
    return torchvision.models.resnet50()


BUILDERS = {"resnet50.json": _resnet50}

# models: (description file, binding, input shapes in place of the description's, tolerance)
MODEL_CASES = [
    ("fixtures/models/resnet18.json", {"N": 1}, {"x": [1, 3, 64, 64]}),
    ("fixtures/models/resnet50.json", {"N": 1}, {"x": [1, 3, 64, 64]}),
    ("fixtures/models/gpt2_small.json", {"B": 1, "T": 8}, None),
    ("fixtures/models/mobilenet_v2.json", {"N": 1}, {"x": [1, 3, 64, 64]}),
    ("fixtures/models/vit_small.json", {"N": 1}, None),
    ("fixtures/models/unet_small.json", {"N": 1}, None),
    ("fixtures/models/lstm_tagger.json", {"N": 2, "T": 5}, None),
    ("fixtures/models/issue_example.json", {"N": 1}, {"x": [1, 3, 32, 32]}),
    ("tests/cli/models/example.json", {"N": 2}, {"x": [2, 3, 32, 32]}),
    ("tests/cli/models/gpt_tiny.json", {"B": 2, "T": 5}, None),
    ("tests/cli/models/conv_seq.json", {}, None),
]


def randomize(model):
    torch.manual_seed(0)
    with torch.no_grad():
        for t in model.state_dict(keep_vars=True).values():
            if t.dtype.is_floating_point:
                t.normal_(0, 0.05)
        for m in model.modules():
            if hasattr(m, "reset_parameters") and not isinstance(m, sc.DescribedModule) and not list(m.children()):
                m.reset_parameters()
            if isinstance(m, nn.modules.batchnorm._NormBase) and m.running_mean is not None:
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 2.0)
            if isinstance(m, (nn.LayerNorm, nn.GroupNorm)) and m.weight is not None:
                m.weight.normal_(1.0, 0.1)
                m.bias.normal_(0.0, 0.1)


def make_input(spec_shape, dtype, vocab=10):
    if dtype == "int64":
        return torch.randint(0, vocab, spec_shape)
    return torch.randn(*spec_shape)


def vocab_of(desc):
    sizes = []

    def walk(v):
        if isinstance(v, dict):
            if v.get("type") == "Embedding":
                n = v.get("num_embeddings")
                sizes.append(n)
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(desc)
    cfg = desc.get("config") or {}
    out = []
    for n in sizes:
        if isinstance(n, str) and n.startswith("$"):
            n = sc.eval_int_expr(n[1:], cfg)
        out.append(n)
    return min(out) if out else 10


def run_case(binary, name, desc, tol, bind, shapes, workdir, verbose, dtype=None):
    bind = dict(bind)
    for spec in (desc.get("inputs") or {}).values():
        for d in spec.get("shape", []):
            if isinstance(d, str) and not d.startswith("$") and d not in bind:
                bind[d] = sc.DEFAULT_BIND.get(d, 4)
    interp = sc.Interpreter(desc, bind, "cpu")
    # exported descriptions ("class" containers) the interpreter cannot rebuild: the original model
    model = BUILDERS[name]() if name in BUILDERS else interp.build_model()
    randomize(model)
    model.eval()
    if dtype is not None:  # model.to(dtype), inputs .to(dtype): what run --dtype does
        model.to(dtype)
    torch.manual_seed(1)
    vocab = vocab_of(desc)
    env = {}
    for k, z in interp.make_inputs().items():
        shape = (shapes or {}).get(k) or list(z.shape)
        env[k] = make_input(shape, "int64" if z.dtype == torch.int64 else "float32", vocab) \
            if z.dtype in (torch.int64, torch.float32) else z
        if dtype is not None and env[k].is_floating_point():
            env[k] = env[k].to(dtype)
    with torch.no_grad():
        if name in REFERENCES:
            want = REFERENCES[name](env)
        elif name in BUILDERS:
            want = sc.flatten_tensors(model(*env.values()))
        else:
            want = sc.flatten_tensors(interp.run_graph(model, desc, dict(env), []))
    base = os.path.join(workdir, name.replace(" ", "_").replace("/", "_"))
    with open(base + ".json", "w") as f:
        json.dump(desc, f)
    sd = model.state_dict()
    cmd = [binary, "run", base + ".json", "--save", base + ".out.safetensors", "--force", "--threads", "2"]
    if dtype is not None:
        cmd += ["--dtype", str(dtype).replace("torch.", "")]
    for k, v in sorted(bind.items()):
        if k in json.dumps(desc):
            cmd += ["--bind", "%s=%d" % (k, v)]
    if sd:
        save_safetensors(base + ".w.safetensors", dict(sd))
        cmd += ["--weights", base + ".w.safetensors"]
    save_safetensors(base + ".in.safetensors", env)
    for k in env:
        cmd += ["--input", "%s=%s.in.safetensors:%s" % (k, base, k)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        if "no CPU kernel yet" in r.stderr:
            return "SKIP", r.stderr.strip().splitlines()[-1]
        if r.returncode == 3 and ("unknown module type" in r.stderr or "unknown operator" in r.stderr):
            return "SKIP", "shapes does not know it (shapes_conformance.py's UNSUP): " + r.stderr.strip()[-120:]
        return "FAIL", "exit %d: %s" % (r.returncode, r.stderr.strip()[-400:])
    got = load_safetensors(base + ".out.safetensors")
    if len(got) != len(want):
        return "FAIL", "%d outputs, torch has %d" % (len(got), len(want))
    worst = None  # (error, its tolerance) of the output furthest past its tolerance
    ordering = any(step.get("op") in TIE_OPS for step in desc.get("graph") or [])
    for k, ((gname, g), w) in enumerate(zip(got, want)):
        if list(g.shape) != list(w.shape) or g.dtype != w.dtype:
            return "FAIL", "%s: %s %s, torch %s %s" % (gname, list(g.shape), g.dtype, list(w.shape), w.dtype)
        if not w.dtype.is_floating_point:
            if not torch.equal(g, w):
                # indices of equal (or, after float arithmetic, nearly equal) values: PyTorch
                # leaves their order unspecified; the values they come with (the output
                # before) must then be PyTorch's within the case's tolerance
                if ordering and w.dtype == torch.int64 and k > 0 and want[k - 1].is_floating_point():
                    a, b = got[k - 1][1].float(), want[k - 1].float()
                    if a.shape == b.shape and ((a - b).abs().max().item() if b.numel() else 0.0) <= \
                            tol * max(b.abs().max().item() if b.numel() else 0.0, 1e-6):
                        continue
                return "FAIL", "%s differs" % gname
            continue
        fin = torch.isfinite(w)
        if not torch.equal(fin, torch.isfinite(g)):
            return "FAIL", "%s: NaN/Inf in other places" % gname
        scale = max(w[fin].abs().max().item() if fin.any() else 0.0, 1e-6)
        err = ((g - w)[fin].abs().max().item() if fin.any() else 0.0) / scale
        # an output in a low-precision dtype (softmax(dtype=torch.bfloat16) in a float32 chain) is
        # held to that dtype's tolerance at least
        otol = max(tol, LOW_PRECISION_TOL.get(w.dtype, 0.0)) if tol else tol
        if worst is None or err / max(otol, 1e-30) > worst[0] / max(worst[1], 1e-30):
            worst = (err, otol)
    err, tol = worst or (0.0, tol)
    status = "ok" if err <= tol else "FAIL"
    return status, "max relative error %.2e (tolerance %.0e)" % (err, tol)


# Models run in a low-precision dtype (run --dtype): PyTorch 1.13's CPU kernels for bfloat16
# compute in float32 and round each result, as tinspect does; float16 has few CPU kernels in
# 1.13 (no matmul), so its cases are elementwise. Tolerance: a few units in the last place of
# the dtype relative to the output's largest magnitude (bfloat16 keeps 8 significant bits,
# float16 11): where PyTorch rounds an intermediate that tinspect keeps in float32 (inside a
# module), the two may differ by an ulp or two of the intermediate, carried through.
BF16_TOL, F16_TOL, F64_TOL = 2e-2, 2e-3, 1e-5
LOW_PRECISION_TOL = {torch.bfloat16: BF16_TOL, torch.float16: F16_TOL}
DTYPE_CASES = [
    ("bfloat16", torch.bfloat16, BF16_TOL, "Linear", "Linear no bias", "add", "mul scalar", "gelu", "silu",
     "softmax", "LayerNorm", "Conv2d", "MaxPool2d", "Embedding", "resnet18.json", "gpt_tiny.json",
     "conv_seq.json"),
    ("float16", torch.float16, F16_TOL, "add", "add alpha", "sub", "mul", "div", "gt",
     "reshape", "permute", "transpose contiguous", "cat", "stack", "split", "Embedding", "Dropout"),
    # float64 is computed in float32 (documented): PyTorch's float64 answer within float32's error
    ("float64", torch.float64, F64_TOL, "Linear", "add", "gelu", "softmax", "LayerNorm", "Conv2d",
     "gpt_tiny.json"),
]


# operators whose index output among equal values PyTorch leaves unspecified
TIE_OPS = {"topk", "sort", "argsort", "kthvalue", "median", "nanmedian", "mode"}


def noise_only(desc):
    """Why PyTorch's answer to a chain is rounding noise, or None: a LayerNorm over one
    element is x * rstd + (-mean * rstd), two terms of about |x| / sqrt(eps) that
    cancel to a few of their ulps. tinspect computes it in the same order, and most such
    chains agree exactly; one whose later steps amplify an ulp of difference fails on
    noise, and is skipped saying so rather than failed."""
    def one(v):
        return v == 1 or v == [1]
    for spec in (desc.get("modules") or {}).values():
        if isinstance(spec, dict) and spec.get("type") == "LayerNorm" and one(spec.get("normalized_shape")):
            return "LayerNorm over one element: PyTorch's output is rounding noise"
    for step in desc.get("graph") or []:
        if step.get("op") == "layer_norm" and len(step.get("args", [])) > 1 and one(step["args"][1]):
            return "layer_norm over one element: PyTorch's output is rounding noise"
    return None


def shapes_corpus():
    """shapes_conformance.py's corpus: its handwritten cases that run ("ok_*") and its random
    chains (same count and seed), each at the bindings it is checked with there. Tolerance
    GEMM: most chains hold a convolution or a Linear."""
    out = []
    for name, desc in sc.handwritten_cases().items():
        if name.startswith("ok_") and not sc.uses_missing_torch_feature(desc):
            out.append(("shapes/" + name, desc, GEMM, sc.bind_for(desc), None))
    for name, desc in sc.random_cases(300, 20241121, "cpu"):
        if not sc.uses_missing_torch_feature(desc):
            out.append(("shapes/" + name, desc, GEMM, sc.bind_for(desc), None))
    return out


def main():
    args = [a for a in sys.argv[1:]]
    verbose = "-v" in args
    only = None
    if "--only" in args:
        only = args[args.index("--only") + 1]
    binary = next((a for a in args if not a.startswith("-") and a != only), "./tinspect")
    cases = []
    for name, desc, tol in OP_CASES:
        cases.append((name, desc, tol, {}, None))
    for path, bind, shapes in MODEL_CASES:
        with open(os.path.join(ROOT, path)) as f:
            desc = json.load(f)
        cases.append((os.path.basename(path), desc, GEMM, bind, shapes))
    by_name = {c[0]: c for c in cases}
    for label, dtype, tol, *names in DTYPE_CASES:
        for n in names:
            name, desc, _, bind, shapes = by_name[n][:5]
            cases.append(("%s %s" % (label, name), desc, tol, bind, shapes, dtype))
    if "--shapes-corpus-only" in args:  # make conformance: what make test's --no-shapes-corpus left out
        cases = shapes_corpus()
    elif "--no-shapes-corpus" not in args:
        cases += shapes_corpus()
    passed = failed = skipped = 0
    keep = os.environ.get("RUN_CONFORMANCE_KEEP")  # a directory: the cases' files stay there
    with tempfile.TemporaryDirectory() as tmp:
        work = keep or tmp
        for name, desc, tol, bind, shapes, *dtype in cases:
            if only and only not in name:
                continue
            try:
                status, why = run_case(binary, name, desc, tol, bind, shapes, work, verbose, *dtype)
                if status == "FAIL" and noise_only(desc):  # PyTorch's answer was noise: nothing to hold
                    status, why = "SKIP", "%s (%s)" % (noise_only(desc), why)
            except sc.DescriptionError as e:
                status, why = "SKIP", "torch interpreter: %s" % e
            except (RuntimeError, sc.StepError) as e:  # PyTorch raises: a shape error, shapes_conformance's concern
                status, why = "SKIP", "torch raises: %s" % str(e).splitlines()[0][:100]
            print("%-4s %-40s %s" % (status, name, why))
            passed += status == "ok"
            failed += status == "FAIL"
            skipped += status == "SKIP"
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
