"""The record tracer: run the real forward and write down every torch call.

A TorchFunctionMode sees each torch function and Tensor method the Python
code calls (PyTorch hides the calls made inside a call from the mode, so
only the outermost ones are seen, as written in the model's code). Module
forwards are wrapped per instance: inside a leaf of a type tinspect knows,
one "call" step and the calls inside are not recorded; inside another
torch.nn leaf, one "opaque" step with "module". Parameters and buffers used
directly become "attr" steps the first time. Python ints (from x.shape) are
concrete here: the tracer runs once per set of symbol values and
steps.unify turns the ints that change into formulas.
"""
import collections
import re

import torch
from torch.overrides import TorchFunctionMode

from .errors import ExportError
from .known import op_known
from .modules import is_container, is_library_leaf, known_type, class_name
from .names import INPLACE_AS, TENSOR_PROPERTIES, TRAINING_ARG, callable_name, is_tensor_method, op_name
from .steps import Ref, Step

# Tensor methods whose results are not graph values (ints, dtypes, bools).
_NOT_RECORDED = frozenset(("size", "dim", "numel", "__len__", "is_floating_point", "is_complex",
                           "element_size", "nelement", "ndimension", "stride", "storage_offset",
                           "is_contiguous", "data_ptr", "get_device", "__format__", "__repr__",
                           "__bool__", "__int__", "__float__", "__index__", "tolist", "item",
                           "has_names", "__hash__", "__iter__", "__reversed__", "__contains__",
                           "__dir__", "__array__", "dim_order", "untyped_storage", "_is_view"))
_ALIAS = frozenset(("data", "detach", "requires_grad_", "__deepcopy__", "cpu", "cuda"))


def _is_view(t):
    """Whether t views another tensor's storage (outside a recording: a Recorder asks is_view)."""
    return t._base is not None


class _Tape(list):
    """The recorded steps: each appended step takes the scope being run, when the recorder knows it."""

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def append(self, step):
        if step.scope is None and self.recorder.scope is not None:
            step.scope = self.recorder.scope
        super().append(step)


class Recorder(TorchFunctionMode):
    """Records one run. `names` maps id(tensor) -> graph name for known tensors."""

    def __init__(self, tensor_paths=None, training=False):
        super().__init__()
        self.steps = _Tape(self)
        self.names = {}
        self.alive = {}          # id -> tensor, so ids stay unique while recording
        self.tensor_paths = tensor_paths or {}
        self.emitted_attrs = {}
        self.constants = []      # (name, tensor) of tensors from nowhere: root buffers
        self.indexing = 0
        self.pending = {}        # id -> (tuple name, index, tensor): items of nested results
        self.views = {}          # id of a getitem view -> (its base's Ref, the index, the base): in-place writes back
        self.counter = collections.Counter()
        self.used = set()        # every graph name given out (and reserved ones)
        self.suppress = 0
        self.training = training
        self.where = None        # the module path being run, for messages
        self.scope = None        # the path of the module whose forward runs ("": the model's); None: unknown

    # -- names --
    def is_view(self, t):
        """Whether t views another tensor's storage, without recording the ._base getter."""
        self.suppress += 1
        try:
            return t._base is not None
        finally:
            self.suppress -= 1

    def bind(self, t, name):
        self.used.add(name)
        self.names[id(t)] = name
        self.alive[id(t)] = t

    def fresh(self, base):
        base = re.sub(r"\W", "_", base).strip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        while True:
            k = self.counter[base]
            self.counter[base] += 1
            name = "%s_%d" % (base, k) if k else base
            if name not in self.used:
                self.used.add(name)
                return name

    def ref(self, t):
        """Ref to tensor t, emitting an attr step for a parameter/buffer seen first."""
        if id(t) in self.names and self.alive.get(id(t)) is t:
            return Ref(self.names[id(t)])
        if id(t) in self.pending and self.pending[id(t)][2] is t:
            holder, j, _ = self.pending.pop(id(t))
            name = self.fresh("%s_%d" % (holder, j))
            self.steps.append(Step("op", "getitem", [Ref(holder), j], out=name, values=t, where=self.where))
            self.bind(t, name)
            return Ref(name)
        path = self.tensor_paths.get(id(t))
        if path is None:
            path = "_recorded_constant%d" % sum(1 for n, _ in self.constants if n.startswith("_recorded_"))
            self.constants.append((path, t))
        name = self.fresh(path)
        self.steps.append(Step("attr", path, out=name, values=t, where=self.where))
        self.bind(t, name)
        return Ref(name)

    def arg(self, v):
        if isinstance(v, torch.Tensor):
            return self.ref(v)
        if isinstance(v, torch.Size):
            return list(v)
        if isinstance(v, list):
            return [self.arg(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.arg(x) for x in v)
        if isinstance(v, slice):
            return slice(self.arg(v.start), self.arg(v.stop), self.arg(v.step))
        if isinstance(v, dict):
            return {k: self.arg(x) for k, x in v.items()}
        return v

    def outs(self, base, value, reuse=None):
        """Out name(s) for a result: one name for a tensor, a list for a tuple."""
        if isinstance(value, torch.Tensor):
            name = reuse or self.fresh(base)
            self.bind(value, name)
            return name
        names = []
        for v in value:
            n = self.fresh(base)
            if isinstance(v, torch.Tensor):
                self.bind(v, n)
            elif isinstance(v, (tuple, list)):  # LSTM's (h, c): items by getitem when used
                for j, t in enumerate(v):
                    if isinstance(t, torch.Tensor):
                        self.pending[id(t)] = (n, j, t)
            names.append(n)
        return names

    # -- torch calls --
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", None)
        try:
            result = func(*args, **kwargs)
        except (RuntimeError, NotImplementedError):
            result = _meta_retry(func, name, args, kwargs)
        if name == "__iter__":  # iter(x.unbind(0)): keep the items to name them
            result = list(result)
            if not self.suppress:
                self.record(torch.Tensor.unbind, (args[0], 0), {}, tuple(result))
            return iter(result)
        if not self.suppress and not (self.indexing and name in ("__getitem__", "__setitem__")):
            self.record(func, args, kwargs, result)
        return result

    def __enter__(self):
        # PyTorch 1.13 sends x[i] to the mode only for some index types: wrap
        # Tensor.__getitem__/__setitem__ so every indexing is seen once.
        self.indexing = 0
        self._saved = (torch.Tensor.__getitem__, torch.Tensor.__setitem__)
        get, put = self._saved
        rec = self

        def __getitem__(t, index):
            rec.indexing += 1
            try:
                result = get(t, index)
            finally:
                rec.indexing -= 1
            if not rec.suppress and not rec.indexing:
                rec.record(get, (t, index), {}, result)
            return result

        def __setitem__(t, index, value):
            rec.indexing += 1
            try:
                result = put(t, index, value)
            finally:
                rec.indexing -= 1
            if not rec.suppress and not rec.indexing:
                rec.record(put, (t, index, value), {}, result)
            return result
        __getitem__.__name__, __setitem__.__name__ = "__getitem__", "__setitem__"
        torch.Tensor.__getitem__, torch.Tensor.__setitem__ = __getitem__, __setitem__
        return super().__enter__()

    def __exit__(self, *exc):
        torch.Tensor.__getitem__, torch.Tensor.__setitem__ = self._saved
        return super().__exit__(*exc)

    def record(self, func, args, kwargs, result):
        name = getattr(func, "__name__", None)
        getter = name == "__get__" and hasattr(func, "__self__")
        attr = func.__self__.__name__ if getter else None
        has_tensor = isinstance(result, torch.Tensor) or (
            isinstance(result, (tuple, list)) and any(isinstance(v, torch.Tensor) for v in result))
        if name == "__setitem__":
            self_t = args[0]
            a = [self.arg(x) for x in args]
            # x[index] = value: tinspect's setitem, in place; the name keeps the tensor
            self.steps.append(Step("op", "setitem", a, out=self.names.get(id(self_t)) or
                                   self.ref(self_t).name, values=self_t, where=self.where))
            return
        if not has_tensor or name in _NOT_RECORDED:
            return
        if (getter and attr not in TENSOR_PROPERTIES) or name in _ALIAS:
            if isinstance(result, torch.Tensor) and isinstance(args[0], torch.Tensor):
                self.bind(result, self.ref(args[0]).name)
            return
        a = [self.arg(x) for x in args]
        k = {kk: self.arg(v) for kk, v in _explicit_kwargs(func, kwargs).items()}
        reuse = None
        if getter:
            op = TENSOR_PROPERTIES[attr]
            if op == "T":
                op, a = ("t", a) if args[0].dim() <= 2 else ("permute", a + [list(range(args[0].dim()))[::-1]])
        else:
            op = op_name(func)
            if name in ("__rsub__",):
                op = "rsub"
            elif name == "__rpow__":
                a = [a[1], a[0]]
            elif name in ("__rdiv__", "__rtruediv__"):
                recip = torch.reciprocal(args[0])
                rname = self.fresh("reciprocal")
                self.steps.append(Step("op", "reciprocal", [a[0]], out=rname, values=recip, where=self.where))
                op, a = "mul", [Ref(rname), a[1]]
            elif name in ("__rmatmul__",):
                a = [a[1], a[0]]
            elif name.startswith("__r") and name not in ("__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__"):
                op = None
            elif is_tensor_method(func) and name.endswith("_") and not name.endswith("__"):
                # in-place method: the out-of-place op, rebinding the same name
                op = INPLACE_AS.get(name, name[:-1])
                reuse = self.ref(args[0]).name
            elif name.startswith("__i") and name.endswith("__"):
                reuse = self.ref(args[0]).name
        if op is None or not op_known(op):
            self.steps.append(Step("opaque", callable_name(func), a, k, out=self.outs("opaque", result, reuse),
                                   values=result, where=self.where))
            return
        _mark_training(op, a, k, self.training)
        self.steps.append(Step("op", op, a, k, out=self.outs(op, result, reuse), values=result, where=self.where))
        if op == "getitem" and isinstance(result, torch.Tensor) and self.is_view(result):
            self.views[id(result)] = (a[0], a[1], args[0])
        elif reuse is not None and id(args[0]) in self.views:
            # x[i].zero_(): the out-of-place op made a new tensor; x[i] = it writes it back
            base, index, base_t = self.views[id(args[0])]
            self.steps.append(Step("op", "setitem", [base, index, Ref(reuse)], out=self.names.get(id(base_t)) or
                                   self.ref(base_t).name, values=base_t, where=self.where))

    # -- modules --
    def wrap_modules(self, model):
        """Wrap every module's forward; returns a function that unwraps them."""
        wrapped = []
        seen = set()
        for path, m in model.named_modules():
            if id(m) in seen or is_container(m):
                continue
            seen.add(id(m))
            tname = known_type(m)
            kind = "call" if tname else ("opaque" if is_library_leaf(m) else None)
            m.forward = self._wrapper(m, path, kind)
            wrapped.append(m)

        def unwrap():
            for m in wrapped:
                del m.forward
        return unwrap

    def _wrapper(self, m, path, kind):
        orig = type(m).forward.__get__(m)

        def forward(*args, **kwargs):
            if self.suppress:
                return orig(*args, **kwargs)
            outer, outer_scope = self.where, self.scope
            self.where = "%s (%s)" % (path or "<root>", type(m).__name__)
            try:
                if kind is None:
                    self.scope = path
                    return orig(*args, **kwargs)
                a = [self.arg(x) for x in args]
                k = {kk: self.arg(v) for kk, v in kwargs.items()}
                self.suppress += 1
                try:
                    result = orig(*args, **kwargs)
                except Exception as e:
                    if not hasattr(e, "_tinspect_where"):
                        e._tinspect_where = self.where
                    raise
                finally:
                    self.suppress -= 1
                if kind == "call":
                    self.steps.append(Step("call", path, a, k, out=self.outs(path, result), values=result,
                                           where=self.where))
                else:
                    self.steps.append(Step("opaque", class_name(m), a, k, out=self.outs(path, result),
                                           values=result, module=path, where=self.where))
                return result
            except Exception as e:
                if not hasattr(e, "_tinspect_where"):
                    e._tinspect_where = self.where
                raise
            finally:
                self.where, self.scope = outer, outer_scope
        return forward


_DEFAULTS = {}


def _meta_retry(func, name, args, kwargs):
    """Run a call that PyTorch 1.13 refuses on meta, when its output size is known.

    repeat_interleave with int repeats needs output_size on meta; it is
    added for the run only (the step records the call as written).
    """
    import sys
    x = args[0] if args else kwargs.get("input")
    if name == "repeat_interleave" and isinstance(x, torch.Tensor) and x.device.type == "meta":
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        dim = args[2] if len(args) > 2 else kwargs.get("dim")
        if isinstance(repeats, int) and "output_size" not in kwargs:
            n = x.numel() if dim is None else x.shape[dim]
            return func(*args, **dict(kwargs, output_size=n * repeats))
    raise sys.exc_info()[1]


def _explicit_kwargs(func, kwargs):
    """kwargs less private ones and those equal to the Python function's default.

    torch.nn.functional hands its whole argument list to __torch_function__
    as keywords (F.softmax's _stacklevel=3, dtype=None); keep what matters.
    """
    if not kwargs:
        return kwargs
    defaults = _DEFAULTS.get(func)
    if defaults is None:
        try:
            import inspect
            defaults = {p.name: p.default for p in inspect.signature(func).parameters.values()
                        if p.default is not inspect.Parameter.empty}
        except (TypeError, ValueError):
            defaults = {}
        try:
            _DEFAULTS[func] = defaults
        except TypeError:
            pass
    out = {}
    for k, v in kwargs.items():
        if k.startswith("_"):
            continue
        if k in defaults and k != "training" and not isinstance(v, torch.Tensor) and type(v) is type(defaults[k]) and v == defaults[k]:
            continue
        out[k] = v
    return out


def _mark_training(op, args, kwargs, training):
    """Write "$training" where the code passed self.training (see names.TRAINING_ARG)."""
    pos = TRAINING_ARG.get(op)
    if pos is None:
        return
    if "training" in kwargs and kwargs["training"] is training:
        kwargs["training"] = "$training"
    elif len(args) > pos and args[pos] is training:
        args[pos] = "$training"


def record_model(model, inputs, tensor_paths, training):
    """Steps of one forward of model on inputs (a dict name -> tensor).

    Returns (recorder, result).
    """
    rec = Recorder(tensor_paths, training)
    rec.scope = ""
    for name, t in inputs.items():
        rec.bind(t, name)
    unwrap = rec.wrap_modules(model)
    try:
        with rec:
            result = model(*inputs.values())
    except ExportError:
        raise
    except Exception as e:
        where = getattr(e, "_tinspect_where", None) or rec.where or "forward"
        raise ExportError("%s: %s: %s" % (where, type(e).__name__, e)) from None
    finally:
        unwrap()
    return rec, result


def record_function(fn, args, kwargs, names, tensor_paths, training, used, constants):
    """Steps of fn(*args, **kwargs) with the given tensors already named.

    `names` maps id(tensor) -> (tensor, name); `used` is the set of names taken
    (new ones are added to it). Used by the fx tracer to expand functions
    tinspect does not know. Returns (recorder, result).
    """
    rec = Recorder(tensor_paths, training)
    rec.used = used
    rec.constants = constants
    for t, name in names.values():
        rec.bind(t, name)
    with rec:
        result = fn(*args, **kwargs)
    return rec, result
