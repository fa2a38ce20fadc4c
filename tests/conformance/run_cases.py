"""
run_cases.py - the one-operator and one-module cases of run_conformance.py,
and the constructors that family files use.

A family of kernels keeps its cases in its own file, run_cases_<family>.py,
defining CASES (a list built with op_case/module_case/graph_case) and, for
cases torch 1.13's interpreter cannot run, REFERENCES ({case name: fn(env) ->
[tensors]}); run_conformance.py collects every run_cases_*.py.
"""
import torch

GEMM, ELEMENTWISE, EXACT = 1e-4, 1e-5, 0.0


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
CASES = [
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
    graph_case("zeros ones full", [{"out": "a", "op": "zeros", "args": [[2, 3]]},
                                   {"out": "b", "op": "ones", "args": [2, 3]},
                                   {"out": "c", "op": "full", "args": [[2, 3], 1.5]},
                                   {"out": "y", "op": "add", "args": ["x", "a"]},
                                   {"out": "y", "op": "mul", "args": ["y", "b"]},
                                   {"out": "y", "op": "add", "args": ["y", "c"]}], ["y"], EXACT, {"x": [2, 3]}),
    graph_case("new_zeros new_full", [{"out": "a", "op": "new_zeros", "args": ["x", [4]]},
                                      {"out": "b", "op": "new_full", "args": ["x", [4], -2.0]},
                                      {"out": "c", "op": "new_ones", "args": ["x", [4]]}], ["a", "b", "c"], EXACT,
               {"x": [2, 3]}),
    graph_case("setitem", [{"out": "m", "op": "new_zeros", "args": ["x", [6, 5]]},
                           {"out": "m", "op": "setitem", "args": ["m", [{"slice": [0, -2, None]}, {"slice": [1, None, 2]}], 2.5]},
                           {"out": "m", "op": "setitem", "args": ["m", [-1], "w"]},
                           {"out": "y", "op": "add", "args": ["x", "m"]}], ["y", "m"], EXACT,
               {"x": [2, 6, 5], "w": [1]}),
    op_case("eye", "eye", [3, 5], EXACT, {}),
    # PyTorch's vectorised loop adds the step lane by lane: the last bit may differ
    op_case("linspace", "linspace", [-1.5, 2.0, 7], ELEMENTWISE, {}),
    op_case("linspace one step", "linspace", [3.0, 9.0, 1], EXACT, {}),
    op_case("logspace", "logspace", [0.0, 2.0, 5], ELEMENTWISE, {}),
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
def setitem_reference(env):
    m = env["x"].new_zeros(6, 5)
    m[0:-2, 1::2] = 2.5
    m[-1] = env["w"]
    return [env["x"] + m, m]


REFERENCES = {
    "setitem": setitem_reference,
    "scaled_dot_product_attention": lambda env: [sdpa_reference(env["q"], env["k"], env["v"])],
    "scaled_dot_product_attention causal": lambda env: [sdpa_reference(env["q"], env["k"], env["v"], True)],
}
