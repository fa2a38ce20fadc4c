#!/usr/bin/env python3
"""
Conformance test: `tinspect run` against PyTorch on the CPU, float32.

Usage:  /usr/bin/python3 tests/conformance/run_conformance.py [./tinspect] [--only SUBSTR] [-v]

Each case is a model description (a table of one-operator and one-module
descriptions below, then model descriptions from fixtures/models and
tests/cli/models). PyTorch builds it with the interpreter of
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

A case whose run says "no CPU kernel yet" is SKIP (printed, not failed): the
README lists the operators with kernels. Prints one line per case, then
"N passed, M failed, K skipped"; exits 1 if any failed, 0 with "skipped" when
torch is not installed.
"""
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
    import shapes_conformance as sc
except ImportError:
    print("run conformance: skipped (torch is not installed)")
    sys.exit(0)

GEMM, ELEMENTWISE, EXACT = 1e-4, 1e-5, 0.0

ST_DTYPES = {torch.float32: "F32", torch.int64: "I64", torch.bool: "BOOL"}
ST_TORCH = {v: k for k, v in ST_DTYPES.items()}


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)


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
        dtype = ST_TORCH[h["dtype"]]
        t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        out.append((name, t.reshape(h["shape"])))
    return out


# ---- the table of one-operator and one-module cases ----

def inputs(**shapes):
    return {k: {"shape": v[0], "dtype": v[1]} if isinstance(v, tuple) else {"shape": v, "dtype": "float32"}
            for k, v in shapes.items()}


def op_case(name, op, args, tol, shapes, **kw):
    step = {"out": "y", "op": op, "args": args}
    step.update(kw)
    return (name, {"inputs": inputs(**shapes), "graph": [step], "outputs": ["y"]}, tol)


def module_case(name, spec, tol, shapes, args=("x",), **kw):
    step = {"out": "y", "call": "m", "args": list(args)}
    step.update(kw)
    return (name, {"inputs": inputs(**shapes), "modules": {"m": spec}, "graph": [step], "outputs": ["y"]}, tol)


def graph_case(name, graph, outputs, tol, shapes, modules=None):
    d = {"inputs": inputs(**shapes), "graph": graph, "outputs": outputs}
    if modules:
        d["modules"] = modules
    return (name, d, tol)


X = [2, 3, 6, 5]
OP_CASES = [
    module_case("Linear", {"type": "Linear", "in_features": 16, "out_features": 8}, GEMM, {"x": [3, 5, 16]}),
    module_case("Linear no bias", {"type": "Linear", "in_features": 7, "out_features": 9, "bias": False}, GEMM,
                {"x": [4, 7]}),
    op_case("matmul 4d", "matmul", ["x", "w"], GEMM, {"x": [2, 3, 4, 5], "w": [2, 3, 5, 6]}),
    op_case("matmul broadcast", "matmul", ["x", "w"], GEMM, {"x": [4, 5], "w": [2, 5, 3]}),
    op_case("matmul vector", "matmul", ["x", "w"], GEMM, {"x": [5], "w": [2, 5, 3]}),
    op_case("matmul matrix-vector", "matmul", ["x", "w"], GEMM, {"x": [2, 4, 5], "w": [5]}),
    graph_case("matmul transposed", [{"out": "t", "op": "transpose", "args": ["w", -2, -1]},
                                     {"out": "y", "op": "matmul", "args": ["x", "t"]}], ["y"], GEMM,
               {"x": [2, 4, 5], "w": [2, 6, 5]}),
    op_case("bmm", "bmm", ["x", "w"], GEMM, {"x": [3, 4, 5], "w": [3, 5, 2]}),
    op_case("addmm", "addmm", ["b", "x", "w"], GEMM, {"b": [3], "x": [4, 5], "w": [5, 3]}, beta=0.5, alpha=2.0),
    op_case("add", "add", ["x", "w"], ELEMENTWISE, {"x": X, "w": [6, 1]}),
    op_case("add alpha", "add", ["x", "w"], ELEMENTWISE, {"x": X, "w": X}, alpha=0.5),
    op_case("add scalar", "add", ["x", 1.5], ELEMENTWISE, {"x": X}),
    op_case("sub", "sub", ["x", "w"], ELEMENTWISE, {"x": X, "w": [3, 1, 1]}),
    op_case("mul", "mul", ["x", "w"], ELEMENTWISE, {"x": X, "w": [5]}),
    op_case("mul scalar", "mul", ["x", 0.125], ELEMENTWISE, {"x": X}),
    op_case("div", "div", ["x", "w"], ELEMENTWISE, {"x": X, "w": [1, 3, 1, 1]}),
    op_case("gt", "gt", ["x", 0], EXACT, {"x": X}),
    op_case("relu", "relu", ["x"], EXACT, {"x": X}),
    op_case("gelu", "gelu", ["x"], ELEMENTWISE, {"x": X}),
    op_case("gelu tanh", "gelu", ["x"], ELEMENTWISE, {"x": X}, approximate="tanh"),
    op_case("silu", "silu", ["x"], ELEMENTWISE, {"x": X}),
    op_case("relu6", "relu6", ["x"], EXACT, {"x": X}),
    op_case("hardtanh", "hardtanh", ["x"], EXACT, {"x": X}, min_val=-0.5, max_val=0.25),
    op_case("leaky_relu", "leaky_relu", ["x"], EXACT, {"x": X}, negative_slope=0.2),
    op_case("hardswish", "hardswish", ["x"], ELEMENTWISE, {"x": X}),
    op_case("hardsigmoid", "hardsigmoid", ["x"], ELEMENTWISE, {"x": X}),
    op_case("sigmoid", "sigmoid", ["x"], ELEMENTWISE, {"x": X}),
    op_case("tanh", "tanh", ["x"], ELEMENTWISE, {"x": X}),
    op_case("softmax", "softmax", ["x"], ELEMENTWISE, {"x": X}, dim=-1),
    op_case("softmax dim 1", "softmax", ["x"], ELEMENTWISE, {"x": X}, dim=1),
    op_case("log_softmax", "log_softmax", ["x"], ELEMENTWISE, {"x": X}, dim=2),
    op_case("reshape", "reshape", ["x", [2, -1]], EXACT, {"x": X}),
    op_case("view", "view", ["x", 6, 30], EXACT, {"x": X}),
    op_case("flatten", "flatten", ["x"], EXACT, {"x": X}, start_dim=1),
    op_case("permute", "permute", ["x", [0, 2, 3, 1]], EXACT, {"x": X}),
    graph_case("permute then reshape", [{"out": "p", "op": "permute", "args": ["x", [3, 1, 0, 2]]},
                                        {"out": "y", "op": "reshape", "args": ["p", [5, -1]]}], ["y"], EXACT,
               {"x": X}),
    graph_case("transpose contiguous", [{"out": "t", "op": "transpose", "args": ["x", 1, 3]},
                                        {"out": "y", "op": "contiguous", "args": ["t"]}], ["y"], EXACT, {"x": X}),
    op_case("select", "select", ["x", 2, -2], EXACT, {"x": X}),
    op_case("narrow", "narrow", ["x", 3, 1, 3], EXACT, {"x": X}),
    op_case("cat", "cat", [["x", "w"]], EXACT, {"x": X, "w": [2, 3, 2, 5]}, dim=2),
    op_case("stack", "stack", [["x", "w"]], EXACT, {"x": X, "w": X}, dim=1),
    graph_case("split", [{"out": ["a", "b", "c"], "op": "split", "args": ["x", 2], "dim": 2}], ["a", "b", "c"],
               EXACT, {"x": X}),
    graph_case("chunk", [{"out": ["a", "b"], "op": "chunk", "args": ["x", 2], "dim": -1}], ["a", "b"], EXACT,
               {"x": X}),
    op_case("triu", "triu", ["x"], EXACT, {"x": X}, diagonal=1),
    graph_case("masked_fill", [{"out": "m", "op": "gt", "args": ["w", 0]},
                               {"out": "y", "op": "masked_fill", "args": ["x", "m", -1e9]}], ["y"], EXACT,
               {"x": X, "w": [6, 5]}),
    module_case("Conv2d", {"type": "Conv2d", "in_channels": 3, "out_channels": 4, "kernel_size": 3, "stride": 2,
                           "padding": 1}, GEMM, {"x": [2, 3, 9, 8]}),
    module_case("Conv2d groups dilation", {"type": "Conv2d", "in_channels": 4, "out_channels": 6, "kernel_size": 3,
                                           "groups": 2, "dilation": 2, "padding": 2}, GEMM, {"x": [1, 4, 9, 9]}),
    module_case("Conv2d 1x1", {"type": "Conv2d", "in_channels": 5, "out_channels": 3, "kernel_size": 1,
                               "bias": False}, GEMM, {"x": [2, 5, 4, 4]}),
    module_case("Conv2d same", {"type": "Conv2d", "in_channels": 2, "out_channels": 3, "kernel_size": [4, 3],
                                "padding": "same"}, GEMM, {"x": [1, 2, 7, 6]}),
    module_case("Conv1d", {"type": "Conv1d", "in_channels": 3, "out_channels": 5, "kernel_size": 3, "stride": 2},
                GEMM, {"x": [2, 3, 11]}),
    module_case("BatchNorm2d", {"type": "BatchNorm2d", "num_features": 3}, ELEMENTWISE, {"x": X}),
    module_case("LayerNorm", {"type": "LayerNorm", "normalized_shape": [6, 5]}, ELEMENTWISE, {"x": X}),
    module_case("GroupNorm", {"type": "GroupNorm", "num_groups": 2, "num_channels": 4}, ELEMENTWISE,
                {"x": [2, 4, 3, 3]}),
    module_case("MaxPool2d", {"type": "MaxPool2d", "kernel_size": 3, "stride": 2, "padding": 1}, EXACT,
                {"x": [2, 3, 9, 8]}),
    module_case("AvgPool2d", {"type": "AvgPool2d", "kernel_size": 3, "stride": 2, "padding": 1}, ELEMENTWISE,
                {"x": [2, 3, 9, 8]}),
    module_case("AvgPool2d ceil no pad", {"type": "AvgPool2d", "kernel_size": 2, "ceil_mode": True,
                                          "count_include_pad": False}, ELEMENTWISE, {"x": [1, 2, 5, 5]}),
    module_case("AdaptiveAvgPool2d", {"type": "AdaptiveAvgPool2d", "output_size": [2, 3]}, ELEMENTWISE,
                {"x": [2, 3, 7, 8]}),
    module_case("Embedding", {"type": "Embedding", "num_embeddings": 10, "embedding_dim": 4}, EXACT,
                {"x": ([2, 3], "int64")}),
    module_case("Dropout", {"type": "Dropout", "p": 0.3}, EXACT, {"x": X}),
    module_case("GELU", {"type": "GELU"}, ELEMENTWISE, {"x": X}),
    op_case("scaled_dot_product_attention", "scaled_dot_product_attention", ["q", "k", "v"], GEMM,
            {"q": [2, 3, 4, 8], "k": [2, 3, 5, 8], "v": [2, 3, 5, 6]}),
    op_case("scaled_dot_product_attention causal", "scaled_dot_product_attention", ["q", "k", "v"], GEMM,
            {"q": [2, 3, 5, 8], "k": [2, 3, 5, 8], "v": [2, 3, 5, 8]}, is_causal=True),
    module_case("MultiheadAttention batch_first", {"type": "MultiheadAttention", "embed_dim": 16, "num_heads": 4,
                                                   "batch_first": True}, GEMM, {"x": [2, 5, 16]},
                args=("x", "x", "x"), need_weights=False),
    module_case("MultiheadAttention weights", {"type": "MultiheadAttention", "embed_dim": 8, "num_heads": 2}, GEMM,
                {"x": [5, 2, 8]}, args=("x", "x", "x")),
    module_case("TransformerEncoderLayer", {"type": "TransformerEncoderLayer", "d_model": 16, "nhead": 4,
                                            "dim_feedforward": 32}, GEMM, {"x": [5, 2, 16]}),
    module_case("TransformerEncoderLayer norm_first gelu", {"type": "TransformerEncoderLayer", "d_model": 16,
                                                            "nhead": 2, "dim_feedforward": 24, "norm_first": True,
                                                            "activation": "gelu", "batch_first": True}, GEMM,
                {"x": [2, 5, 16]}),
]



def sdpa_reference(q, k, v, causal=False):
    """F.scaled_dot_product_attention as PyTorch 2 defines it (torch 1.13 has none)."""
    scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
    if causal:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# cases torch 1.13's interpreter cannot run: the reference, from the inputs
REFERENCES = {
    "scaled_dot_product_attention": lambda env: [sdpa_reference(env["q"], env["k"], env["v"])],
    "scaled_dot_product_attention causal": lambda env: [sdpa_reference(env["q"], env["k"], env["v"], True)],
}


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


def run_case(binary, name, desc, tol, bind, shapes, workdir, verbose):
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
    torch.manual_seed(1)
    vocab = vocab_of(desc)
    env = {}
    for k, spec in (desc.get("inputs") or {}).items():
        shape = (shapes or {}).get(k) or [bind.get(d, d) if isinstance(d, str) else d for d in spec["shape"]]
        env[k] = make_input(shape, spec.get("dtype", "float32"), vocab)
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
        return "FAIL", "exit %d: %s" % (r.returncode, r.stderr.strip()[-400:])
    got = load_safetensors(base + ".out.safetensors")
    if len(got) != len(want):
        return "FAIL", "%d outputs, torch has %d" % (len(got), len(want))
    worst = 0.0
    for (gname, g), w in zip(got, want):
        if list(g.shape) != list(w.shape) or g.dtype != w.dtype:
            return "FAIL", "%s: %s %s, torch %s %s" % (gname, list(g.shape), g.dtype, list(w.shape), w.dtype)
        if not w.dtype.is_floating_point:
            if not torch.equal(g, w):
                return "FAIL", "%s differs" % gname
            continue
        fin = torch.isfinite(w)
        if not torch.equal(fin, torch.isfinite(g)):
            return "FAIL", "%s: NaN/Inf in other places" % gname
        scale = max(w[fin].abs().max().item() if fin.any() else 0.0, 1e-6)
        err = ((g - w)[fin].abs().max().item() if fin.any() else 0.0) / scale
        worst = max(worst, err)
    status = "ok" if worst <= tol else "FAIL"
    return status, "max relative error %.2e (tolerance %.0e)" % (worst, tol)


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
    passed = failed = skipped = 0
    keep = os.environ.get("RUN_CONFORMANCE_KEEP")  # a directory: the cases' files stay there
    with tempfile.TemporaryDirectory() as tmp:
        work = keep or tmp
        for name, desc, tol, bind, shapes in cases:
            if only and only not in name:
                continue
            try:
                status, why = run_case(binary, name, desc, tol, bind, shapes, work, verbose)
            except sc.DescriptionError as e:
                status, why = "SKIP", "torch interpreter: %s" % e
            print("%-4s %-40s %s" % (status, name, why))
            passed += status == "ok"
            failed += status == "FAIL"
            skipped += status == "SKIP"
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
