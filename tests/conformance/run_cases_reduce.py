"""
run_cases_reduce.py - reductions, scans, orderings, normalize, the softmax
family, and the elementwise extras (clamp, where, unary math, activations
with parameters, prelu, glu, dtype casts) of src/run/kernels/reduce.c and
elementwise.c, against PyTorch. Random inputs have no ties, so indices of
max, argmax, topk and sort are PyTorch's whatever its tie rule.
"""
import torch

from run_cases import op_case, module_case, graph_case, ELEMENTWISE, EXACT

X = [2, 3, 6, 5]
M = [4, 7]


def step(out, op, args, **kw):
    s = {"out": out, "op": op, "args": args}
    s.update(kw)
    return s


def then(name, first, op, args, tol, shapes, outputs=("y",), **kw):
    """A case whose op reads the output 't' of a first step (a transposed view, a mask, a log with NaN)."""
    return graph_case(name, [first, step(list(outputs) if len(outputs) > 1 else outputs[0], op, args, **kw)],
                      list(outputs), tol, shapes)


T = step("t", "transpose", ["x", 1, 3])        # a strided view of X: [2, 5, 6, 3]
MASK = step("t", "gt", ["x", 0.3])              # a bool mask
NANS = step("t", "log", ["x"])                  # NaN where x < 0
ZEROS = step("t", "relu", ["x"])                # zeros where x <= 0

CASES = [
    # ---- sums, means, products ----
    op_case("sum all", "sum", ["x"], ELEMENTWISE, {"x": X}),
    op_case("sum dim keepdim", "sum", ["x", 1], ELEMENTWISE, {"x": X}, keepdim=True),
    op_case("sum dims negative", "sum", ["x", [-1, 0]], ELEMENTWISE, {"x": X}),
    op_case("sum int64", "sum", ["x", 2], EXACT, {"x": (X, "int64")}),
    op_case("sum dtype int64", "sum", ["x", 1], EXACT, {"x": X}, dtype="int64"),
    then("sum bool mask", MASK, "sum", ["t", -1], EXACT, {"x": X}),
    then("sum transposed", T, "sum", ["t", [1, 2]], ELEMENTWISE, {"x": X}),
    then("nansum", NANS, "nansum", ["t", 2], ELEMENTWISE, {"x": X}),
    op_case("mean all", "mean", ["x"], ELEMENTWISE, {"x": X}),
    op_case("mean dims keepdim", "mean", ["x", [2, 3]], ELEMENTWISE, {"x": X}, keepdim=True),
    then("mean transposed", T, "mean", ["t", -1], ELEMENTWISE, {"x": X}),
    then("nanmean", NANS, "nanmean", ["t", 3], ELEMENTWISE, {"x": X}),
    op_case("prod all", "prod", ["x"], ELEMENTWISE, {"x": [3, 4]}),
    op_case("prod dim keepdim", "prod", ["x", -2], ELEMENTWISE, {"x": X}, keepdim=True),
    op_case("prod int64", "prod", ["x", 1], EXACT, {"x": ([3, 4], "int64")}),
    op_case("logsumexp", "logsumexp", ["x", 1], ELEMENTWISE, {"x": X}),
    op_case("logsumexp dims keepdim", "logsumexp", ["x", [0, -1]], ELEMENTWISE, {"x": X}, keepdim=True),
    # ---- statistics and norms ----
    op_case("std", "std", ["x"], ELEMENTWISE, {"x": X}),
    op_case("std dim biased", "std", ["x", 2], ELEMENTWISE, {"x": X}, unbiased=False),
    op_case("std correction", "std", ["x", [1, 3]], ELEMENTWISE, {"x": X}, correction=0, keepdim=True),
    op_case("var", "var", ["x", -1], ELEMENTWISE, {"x": X}),
    op_case("var keepdim", "var", ["x", 0], ELEMENTWISE, {"x": X}, keepdim=True),
    then("var transposed", T, "var", ["t", 3], ELEMENTWISE, {"x": X}),
    graph_case("var_mean", [step(["v", "m"], "var_mean", ["x", 1])], ["v", "m"], ELEMENTWISE, {"x": X}),
    graph_case("std_mean", [step(["v", "m"], "std_mean", ["x", [0, 2]], keepdim=True)], ["v", "m"],
               ELEMENTWISE, {"x": X}),
    op_case("norm", "norm", ["x"], ELEMENTWISE, {"x": X}),
    op_case("norm p1 dim", "norm", ["x"], ELEMENTWISE, {"x": X}, p=1, dim=1),
    op_case("norm fro dims", "norm", ["x"], ELEMENTWISE, {"x": X}, p="fro", dim=[2, 3]),
    op_case("norm p inf", "norm", ["x"], ELEMENTWISE, {"x": X}, p="inf", dim=[-1]),
    op_case("norm p3 keepdim", "norm", ["x"], ELEMENTWISE, {"x": X}, p=3, dim=[0], keepdim=True),
    then("norm transposed", T, "norm", ["t"], ELEMENTWISE, {"x": X}, dim=[1]),
    then("count_nonzero", ZEROS, "count_nonzero", ["t"], EXACT, {"x": X}),
    then("count_nonzero dims", ZEROS, "count_nonzero", ["t", [1, 2]], EXACT, {"x": X}),
    then("all dim", MASK, "all", ["t", 3], EXACT, {"x": [2, 3, 6, 2]}),
    then("any dim keepdim", MASK, "any", ["t", 1], EXACT, {"x": X}, keepdim=True),
    then("any all", MASK, "any", ["t"], EXACT, {"x": X}),
    # ---- extrema ----
    op_case("max all", "max", ["x"], EXACT, {"x": X}),
    graph_case("max dim", [step(["v", "i"], "max", ["x", 1])], ["v", "i"], EXACT, {"x": X}),
    graph_case("max dim keepdim", [step(["v", "i"], "max", ["x", -1], keepdim=True)], ["v", "i"], EXACT, {"x": X}),
    graph_case("min dim transposed", [T, step(["v", "i"], "min", ["t", 2])], ["v", "i"], EXACT, {"x": X}),
    op_case("min all", "min", ["x"], EXACT, {"x": X}),
    op_case("max other", "max", ["x", "w"], EXACT, {"x": X, "w": [6, 1]}),
    op_case("min other", "min", ["x", "w"], EXACT, {"x": X, "w": [5]}),
    op_case("max int64", "max", ["x"], EXACT, {"x": (X, "int64")}),
    op_case("amax dims", "amax", ["x", [1, 2]], EXACT, {"x": X}),
    op_case("amax all", "amax", ["x"], EXACT, {"x": X}),
    op_case("amin keepdim", "amin", ["x", -1], EXACT, {"x": X}, keepdim=True),
    op_case("argmax", "argmax", ["x"], EXACT, {"x": X}),
    op_case("argmax dim keepdim", "argmax", ["x", 2], EXACT, {"x": X}, keepdim=True),
    op_case("argmin dim", "argmin", ["x", -1], EXACT, {"x": X}),
    then("argmax transposed", T, "argmax", ["t", 1], EXACT, {"x": X}),
    # ---- scans ----
    op_case("cumsum", "cumsum", ["x", 1], ELEMENTWISE, {"x": X}),
    op_case("cumsum last", "cumsum", ["x", -1], ELEMENTWISE, {"x": X}),
    then("cumsum transposed", T, "cumsum", ["t", 3], ELEMENTWISE, {"x": X}),
    op_case("cumsum int64", "cumsum", ["x", 0], EXACT, {"x": (X, "int64")}),
    then("cumsum bool", MASK, "cumsum", ["t", 2], EXACT, {"x": X}),
    op_case("cumsum dtype", "cumsum", ["x", 2], ELEMENTWISE, {"x": (X, "int64")}, dtype="float32"),
    op_case("cumprod", "cumprod", ["x", 2], ELEMENTWISE, {"x": X}),
    op_case("logcumsumexp", "logcumsumexp", ["x", 3], ELEMENTWISE, {"x": X}),
    graph_case("cummax", [step(["v", "i"], "cummax", ["x", 2])], ["v", "i"], EXACT, {"x": X}),
    graph_case("cummin", [step(["v", "i"], "cummin", ["x", -1])], ["v", "i"], EXACT, {"x": X}),
    # ---- orderings ----
    graph_case("topk", [step(["v", "i"], "topk", ["x", 3])], ["v", "i"], EXACT, {"x": X}),
    graph_case("topk smallest dim", [step(["v", "i"], "topk", ["x", 2], dim=1, largest=False)], ["v", "i"], EXACT,
               {"x": X}),
    graph_case("topk transposed", [T, step(["v", "i"], "topk", ["t", 4, 2])], ["v", "i"], EXACT, {"x": X}),
    graph_case("sort", [step(["v", "i"], "sort", ["x"])], ["v", "i"], EXACT, {"x": X}),
    graph_case("sort descending dim", [step(["v", "i"], "sort", ["x", 1], descending=True)], ["v", "i"], EXACT,
               {"x": X}),
    graph_case("sort stable int64", [step(["v", "i"], "sort", ["x"], stable=True, dim=0)], ["v", "i"], EXACT,
               {"x": ([40, 3], "int64")}),
    op_case("argsort", "argsort", ["x", 2], EXACT, {"x": X}),
    op_case("argsort descending", "argsort", ["x"], EXACT, {"x": X}, descending=True),
    op_case("msort", "msort", ["x"], EXACT, {"x": X}),
    graph_case("kthvalue", [step(["v", "i"], "kthvalue", ["x", 2, 1])], ["v", "i"], EXACT, {"x": X}),
    graph_case("kthvalue keepdim", [step(["v", "i"], "kthvalue", ["x", 4], keepdim=True)], ["v", "i"], EXACT,
               {"x": X}),
    op_case("median all", "median", ["x"], EXACT, {"x": X}),
    graph_case("median dim", [step(["v", "i"], "median", ["x", 2])], ["v", "i"], EXACT, {"x": X}),
    graph_case("median dim keepdim", [step(["v", "i"], "median", ["x", -1], keepdim=True)], ["v", "i"], EXACT,
               {"x": X}),
    graph_case("nanmedian dim", [NANS, step(["v", "i"], "nanmedian", ["t", 1])], ["v", "i"], EXACT, {"x": X}),
    then("nanmedian all", NANS, "nanmedian", ["t"], EXACT, {"x": X}),
    # ---- normalize and the softmax family ----
    op_case("normalize", "normalize", ["x"], ELEMENTWISE, {"x": X}),
    op_case("normalize p1 last", "normalize", ["x"], ELEMENTWISE, {"x": X}, p=1.0, dim=-1),
    op_case("normalize eps", "normalize", ["x"], ELEMENTWISE, {"x": X}, dim=2, eps=10.0),
    then("normalize transposed", T, "normalize", ["t"], ELEMENTWISE, {"x": X}, dim=3),
    op_case("softmax dtype", "softmax", ["x"], ELEMENTWISE, {"x": X}, dim=1, dtype="float32"),
    op_case("softmax implicit dim", "softmax", ["x"], ELEMENTWISE, {"x": [3, 4, 5]}),
    op_case("log_softmax dtype", "log_softmax", ["x", -1], ELEMENTWISE, {"x": X}, dtype="float32"),
    op_case("softmin", "softmin", ["x"], ELEMENTWISE, {"x": X}, dim=-1),
    op_case("softmin dim 0", "softmin", ["x"], ELEMENTWISE, {"x": X}, dim=0),
    module_case("Softmin", {"type": "Softmin", "dim": 2}, ELEMENTWISE, {"x": X}),
    module_case("LogSoftmax", {"type": "LogSoftmax", "dim": 1}, ELEMENTWISE, {"x": X}),
    # ---- clamp and where ----
    op_case("clamp", "clamp", ["x", -0.5, 0.5], EXACT, {"x": X}),
    op_case("clamp min only", "clamp", ["x"], EXACT, {"x": X}, min=0.1),
    op_case("clamp max only", "clamp", ["x"], EXACT, {"x": X}, max=-0.1),
    op_case("clamp tensors", "clamp", ["x", "lo", "hi"], EXACT, {"x": X, "lo": [5], "hi": [6, 1]}),
    op_case("clamp int64 float bound", "clamp", ["x"], EXACT, {"x": (X, "int64")}, min=2.5),
    op_case("clip", "clip", ["x", -1, 1], EXACT, {"x": X}),
    op_case("clamp_min", "clamp_min", ["x", 0.2], EXACT, {"x": X}),
    op_case("clamp_max tensor", "clamp_max", ["x", "w"], EXACT, {"x": X, "w": [3, 1, 1]}),
    then("clamp transposed", T, "clamp", ["t", -0.3, 0.7], EXACT, {"x": X}),
    then("where", MASK, "where", ["t", "x", "w"], EXACT, {"x": X, "w": [6, 5]}),
    then("where scalars", MASK, "where", ["t", 1.5, -2.0], EXACT, {"x": X}),
    then("where scalar other", MASK, "where", ["t", "x", 0.0], EXACT, {"x": X}),
    graph_case("where broadcast mask", [step("m", "gt", ["w", 0]), step("y", "where", ["m", "x", "v"])], ["y"],
               EXACT, {"x": X, "w": [6, 1], "v": [5]}),
    # ---- unary math ----
    op_case("square", "square", ["x"], ELEMENTWISE, {"x": X}),
    op_case("square int64", "square", ["x"], EXACT, {"x": (X, "int64")}),
    op_case("sin", "sin", ["x"], ELEMENTWISE, {"x": X}),
    op_case("cos", "cos", ["x"], ELEMENTWISE, {"x": X}),
    op_case("tan", "tan", ["x"], ELEMENTWISE, {"x": X}),
    op_case("atan", "atan", ["x"], ELEMENTWISE, {"x": X}),
    op_case("sinh", "sinh", ["x"], ELEMENTWISE, {"x": X}),
    op_case("asinh", "asinh", ["x"], ELEMENTWISE, {"x": X}),
    op_case("log", "log", ["x"], ELEMENTWISE, {"x": X}),
    op_case("log2", "log2", ["x"], ELEMENTWISE, {"x": X}),
    op_case("log1p", "log1p", ["x"], ELEMENTWISE, {"x": X}),
    op_case("expm1", "expm1", ["x"], ELEMENTWISE, {"x": X}),
    op_case("exp2", "exp2", ["x"], ELEMENTWISE, {"x": X}),
    op_case("erf", "erf", ["x"], ELEMENTWISE, {"x": X}),
    op_case("erfc", "erfc", ["x"], ELEMENTWISE, {"x": X}),
    op_case("reciprocal", "reciprocal", ["x"], ELEMENTWISE, {"x": X}),
    op_case("sin int64", "sin", ["x"], ELEMENTWISE, {"x": (X, "int64")}),
    op_case("floor", "floor", ["x"], EXACT, {"x": X}),
    op_case("ceil", "ceil", ["x"], EXACT, {"x": X}),
    op_case("round", "round", ["x"], EXACT, {"x": X}),
    op_case("round decimals", "round", ["x"], EXACT, {"x": X}, decimals=2),
    op_case("trunc", "trunc", ["x"], EXACT, {"x": X}),
    op_case("frac", "frac", ["x"], EXACT, {"x": X}),
    op_case("sign", "sign", ["x"], EXACT, {"x": X}),
    op_case("sign int64", "sign", ["x"], EXACT, {"x": (X, "int64")}),
    then("isnan", NANS, "isnan", ["t"], EXACT, {"x": X}),
    then("nan_to_num", NANS, "nan_to_num", ["t"], ELEMENTWISE, {"x": X}, nan=-1.0),
    graph_case("nan_to_num infinities", [step("l", "log", ["x"]), step("z", "relu", ["l"]),
                                         step("r", "reciprocal", ["z"]), step("y", "nan_to_num", ["r"])],
               ["y"], ELEMENTWISE, {"x": X}),
    op_case("div trunc", "div", ["x", "w"], EXACT, {"x": X, "w": [5]}, rounding_mode="trunc"),
    op_case("div floor", "div", ["x", 0.3], EXACT, {"x": X}, rounding_mode="floor"),
    op_case("div floor int64", "div", ["x", -3], EXACT, {"x": (X, "int64")}, rounding_mode="floor"),
    op_case("true_divide", "true_divide", ["x", "w"], ELEMENTWISE, {"x": X, "w": [6, 1]}),
    op_case("floor_divide", "floor_divide", ["x", "w"], EXACT, {"x": X, "w": [5]}),
    op_case("floor_divide int64", "floor_divide", ["x", 3], EXACT, {"x": (X, "int64")}),
    op_case("remainder", "remainder", ["x", "w"], ELEMENTWISE, {"x": X, "w": [5]}),
    op_case("remainder int64", "remainder", ["x", -4], EXACT, {"x": (X, "int64")}),
    op_case("fmod", "fmod", ["x", -0.7], ELEMENTWISE, {"x": X}),
    op_case("rsub", "rsub", ["x", "w"], ELEMENTWISE, {"x": X, "w": [5]}),
    op_case("rsub scalar alpha", "rsub", ["x", 2.0], ELEMENTWISE, {"x": X}, alpha=3),
    # ---- activations with parameters ----
    op_case("softplus", "softplus", ["x"], ELEMENTWISE, {"x": X}),
    op_case("softplus beta threshold", "softplus", ["x"], ELEMENTWISE, {"x": X}, beta=2.0, threshold=1.0),
    op_case("elu", "elu", ["x"], ELEMENTWISE, {"x": X}, alpha=0.7),
    op_case("celu", "celu", ["x"], ELEMENTWISE, {"x": X}, alpha=1.5),
    op_case("selu", "selu", ["x"], ELEMENTWISE, {"x": X}),
    op_case("mish", "mish", ["x"], ELEMENTWISE, {"x": X}),
    op_case("logsigmoid", "logsigmoid", ["x"], ELEMENTWISE, {"x": X}),
    op_case("hardshrink", "hardshrink", ["x"], EXACT, {"x": X}, lambd=0.3),
    op_case("softshrink", "softshrink", ["x"], ELEMENTWISE, {"x": X}),
    op_case("tanhshrink", "tanhshrink", ["x"], ELEMENTWISE, {"x": X}),
    op_case("threshold", "threshold", ["x", 0.1, -2.0], EXACT, {"x": X}),
    op_case("softsign", "softsign", ["x"], ELEMENTWISE, {"x": X}),
    graph_case("logit eps", [step("s", "sigmoid", ["x"]), step("y", "logit", ["s"], eps=0.2)], ["y"], ELEMENTWISE,
               {"x": X}),
    graph_case("logit", [step("s", "sigmoid", ["x"]), step("y", "logit", ["s"])], ["y"], ELEMENTWISE, {"x": X}),
    op_case("prelu", "prelu", ["x", "w"], ELEMENTWISE, {"x": X, "w": [3]}),
    op_case("prelu one weight", "prelu", ["x", "w"], ELEMENTWISE, {"x": X, "w": [1]}),
    then("prelu transposed", T, "prelu", ["t", "w"], ELEMENTWISE, {"x": X, "w": [5]}),
    op_case("glu", "glu", ["x"], ELEMENTWISE, {"x": [2, 3, 6, 4]}),
    op_case("glu dim", "glu", ["x", 2], ELEMENTWISE, {"x": X}),
    module_case("PReLU", {"type": "PReLU", "num_parameters": 3}, ELEMENTWISE, {"x": X}),
    module_case("PReLU single", {"type": "PReLU"}, ELEMENTWISE, {"x": X}),
    module_case("ELU", {"type": "ELU", "alpha": 0.5}, ELEMENTWISE, {"x": X}),
    module_case("CELU", {"type": "CELU"}, ELEMENTWISE, {"x": X}),
    module_case("SELU", {"type": "SELU"}, ELEMENTWISE, {"x": X}),
    module_case("Mish", {"type": "Mish"}, ELEMENTWISE, {"x": X}),
    module_case("LogSigmoid", {"type": "LogSigmoid"}, ELEMENTWISE, {"x": X}),
    module_case("Softplus", {"type": "Softplus", "beta": 0.5, "threshold": 2.0}, ELEMENTWISE, {"x": X}),
    module_case("Hardshrink", {"type": "Hardshrink"}, EXACT, {"x": X}),
    module_case("Softshrink", {"type": "Softshrink", "lambd": 0.2}, ELEMENTWISE, {"x": X}),
    module_case("Tanhshrink", {"type": "Tanhshrink"}, ELEMENTWISE, {"x": X}),
    module_case("Threshold", {"type": "Threshold", "threshold": 0.5, "value": 3.0}, EXACT, {"x": X}),
    module_case("Softsign", {"type": "Softsign"}, ELEMENTWISE, {"x": X}),
    module_case("GLU", {"type": "GLU", "dim": 1}, ELEMENTWISE, {"x": [2, 4, 3]}),
    # ---- dtype casts ----
    op_case("to int64", "to", ["x"], EXACT, {"x": X}, dtype="int64"),
    op_case("to bool", "to", ["x"], EXACT, {"x": X}, dtype="bool"),
    op_case("to float32 from int64", "to", ["x"], EXACT, {"x": (X, "int64")}, dtype="float32"),
    op_case("to copy", "to", ["x"], EXACT, {"x": X}, dtype="float32", copy=True),
    then("to transposed", T, "to", ["t"], EXACT, {"x": X}, dtype="int64"),
    op_case("type", "type", ["x"], EXACT, {"x": X}, dtype="int64"),
    op_case("type_as", "type_as", ["x", "w"], EXACT, {"x": X, "w": ([2], "int64")}),
    op_case("float", "float", ["x"], EXACT, {"x": (X, "int64")}),
    op_case("long", "long", ["x"], EXACT, {"x": X}),
    then("bool", ZEROS, "bool", ["t"], EXACT, {"x": X}),
    then("float of bool", MASK, "float", ["t"], EXACT, {"x": X}),
]


# cases torch 1.13's interpreter cannot run: the reference, from the inputs
REFERENCES = {
    # torch.norm takes p=float('inf'), which JSON cannot hold; the description says "inf"
    "norm p inf": lambda env: [env["x"].abs().amax(dim=-1)],
}
