"""PyTorch callables -> description op names, and Python constants -> JSON.

Both tracers see the same kinds of callables: torch functions
(torch.cat, torch._C._nn.linear), torch.nn.functional functions,
Tensor methods (Tensor.view), dunder methods (Tensor.__radd__), property
getters (Tensor.T), Python's operator module (fx) and builtins (getattr).
"""
import builtins
import math
import operator

import torch

# Tensor dunder methods -> (op name, operand order). "swap" puts the tensor
# first for a commutative op whose Python scalar came first.
TENSOR_DUNDERS = {
    "__add__": "add", "__iadd__": "add", "__radd__": "add",
    "__sub__": "sub", "__isub__": "sub", "__rsub__": "rsub",
    "__mul__": "mul", "__imul__": "mul", "__rmul__": "mul",
    "__truediv__": "div", "__itruediv__": "div", "__div__": "div", "__idiv__": "div",
    "__floordiv__": "floor_divide", "__ifloordiv__": "floor_divide",
    "__mod__": "remainder", "__imod__": "remainder",
    "__pow__": "pow", "__ipow__": "pow", "__rpow__": "pow",
    "__matmul__": "matmul", "__rmatmul__": "matmul",
    "__neg__": "neg", "__pos__": "positive", "__abs__": "abs", "__invert__": "bitwise_not",
    "__and__": "bitwise_and", "__iand__": "bitwise_and", "__rand__": "bitwise_and",
    "__or__": "bitwise_or", "__ior__": "bitwise_or", "__ror__": "bitwise_or",
    "__xor__": "bitwise_xor", "__ixor__": "bitwise_xor", "__rxor__": "bitwise_xor",
    "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__getitem__": "getitem",
}

# operator.* on tensors -> torch op; on ints -> "operator.<name>".
OPERATOR_TENSOR = {
    "add": "add", "iadd": "add", "sub": "sub", "isub": "sub", "mul": "mul", "imul": "mul",
    "truediv": "div", "itruediv": "div", "floordiv": "floor_divide", "ifloordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "ipow": "pow", "matmul": "matmul", "neg": "neg",
    "pos": "positive", "invert": "bitwise_not", "inv": "bitwise_not", "and_": "bitwise_and",
    "or_": "bitwise_or", "xor": "bitwise_xor", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le",
    "gt": "gt", "ge": "ge", "getitem": "getitem", "setitem": "setitem", "abs": "abs",
}
OPERATOR_INT = {
    "add": "operator.add", "iadd": "operator.add", "sub": "operator.sub", "isub": "operator.sub",
    "mul": "operator.mul", "imul": "operator.mul", "floordiv": "operator.floordiv",
    "ifloordiv": "operator.floordiv", "mod": "operator.mod", "neg": "operator.neg",
    "truediv": "operator.truediv", "pow": "operator.pow", "setitem": "setitem",
    "eq": "operator.eq", "ne": "operator.ne", "lt": "operator.lt", "le": "operator.le",
    "gt": "operator.gt", "ge": "operator.ge", "getitem": "getitem",
}

# Tensor property getters that return tensors, and what they are as ops.
TENSOR_PROPERTIES = {"T": "T", "mT": "mT", "H": "T", "mH": "mT", "real": "real", "imag": "imag"}
# Ops whose `training` argument (by position) is `self.training` in library code.
TRAINING_ARG = {
    "dropout": 2, "alpha_dropout": 2, "feature_alpha_dropout": 2, "dropout1d": 2,
    "dropout2d": 2, "dropout3d": 2, "batch_norm": 5, "stochastic_depth": 3, "rrelu": 3,
}

# In-place methods whose out-of-place twin has another name (same shape).
INPLACE_AS = {"zero_": "zeros_like", "fill_": "full_like", "normal_": "randn_like", "uniform_": "rand_like"}

# Memory formats by name.
MEMORY_FORMATS = {
    torch.contiguous_format: "contiguous_format", torch.channels_last: "channels_last",
    torch.channels_last_3d: "channels_last_3d", torch.preserve_format: "preserve_format",
}


def dtype_name(dtype):
    """torch.float32 -> "float32"."""
    return str(dtype).replace("torch.", "")


def callable_name(func):
    """A readable dotted name for any callable, for messages and opaque steps."""
    if getattr(func, "__name__", None) == "__get__" and hasattr(func, "__self__"):
        return "torch.Tensor." + func.__self__.__name__
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    mod = getattr(func, "__module__", None)
    if qual.startswith("_TensorBase.") or qual.startswith("TensorBase."):
        return "torch.Tensor." + qual.split(".", 1)[1]
    if qual.startswith("_VariableFunctionsClass."):
        return "torch." + qual.split(".", 1)[1]
    if mod in (None, "torch._C._nn", "torch._C._VariableFunctions", "torch._C._fft"):
        return "torch." + qual if mod is None else mod + "." + qual
    return mod + "." + qual


def is_tensor_method(func):
    """True for Tensor methods and dunders as __torch_function__ reports them."""
    qual = getattr(func, "__qualname__", "") or ""
    return qual.split(".")[0] in ("_TensorBase", "Tensor", "TensorBase")


def op_name(func):
    """The description op name for a torch function or Tensor method, or None.

    torch.cat -> "cat", F.relu -> "relu", Tensor.view -> "view",
    Tensor.__add__ -> "add". Operator-module functions and getters are
    decided by the caller (they depend on the runtime types).
    """
    name = getattr(func, "__name__", None)
    if name is None:
        return None
    if name == "__get__" and hasattr(func, "__self__"):
        return TENSOR_PROPERTIES.get(func.__self__.__name__)
    if name in TENSOR_DUNDERS:
        return TENSOR_DUNDERS[name]
    return name


def operator_target(func):
    """The operator-module name ("add") when func is operator.add & co."""
    if getattr(func, "__module__", None) in ("_operator", "operator") and getattr(operator, func.__name__, None) is func:
        return func.__name__
    return None


def is_builtin_getattr(func):
    return func is builtins.getattr


class Formula(str):
    """An int argument that depends on the symbols: written as its formula."""


def to_json(value):
    """A Python constant as JSON for an argument; `Drop` for devices and layouts.

    Graph references are handled before this (they are Ref objects); this
    maps dtypes, memory formats, slices, Ellipsis, torch.Size and
    non-finite floats, which JSON cannot spell: they are written as Python's
    repr spells them, "inf", "-inf" and "nan", which tinspect reads where a
    float is expected.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        return value
    if isinstance(value, torch.dtype):
        return dtype_name(value)
    if isinstance(value, torch.memory_format):
        return MEMORY_FORMATS.get(value, str(value))
    if isinstance(value, (torch.device, torch.layout)):
        return DROP
    if value is Ellipsis:
        return "..."
    if isinstance(value, slice):
        return {"slice": [to_json(value.start), to_json(value.stop), to_json(value.step)]}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value if to_json(v) is not DROP]
    raise TypeError("cannot write a %s as a description argument" % type(value).__name__)


class _Drop:
    def __repr__(self):
        return "DROP"


#: Marker for arguments that descriptions leave out (devices, layouts).
DROP = _Drop()
