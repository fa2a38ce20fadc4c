"""export(): trace a model and assemble its description."""
import re

import torch

from . import fx_trace, record
from .errors import ExportError
from .meta import make_input, model_device
from .modules import describe_root, module_paths, tied
from .names import dtype_name
from .steps import Step, reference_of, rename, step_json, unify
from .write import write_json

DEFAULT_BINDING = 2


class ExportResult:
    """What export() made.

    description: the description (a dict, as written as JSON).
    tracer: "fx" or "record".
    opaque: [(step index, module path or function name, reason)].
    bindings: {symbol: value} the symbols had in the reference run.
    reference: for each graph step i, a list with one entry per output of the
      step: (shape tuple, dtype name) of the tensor PyTorch produced at the
      bindings, or None for a non-tensor output (ints, sizes).
    fallback: why fx was not used, when the record tracer was.
    """

    def __init__(self, description, tracer, opaque, bindings, reference, fallback=None, parameters=0):
        self.description, self.tracer, self.opaque = description, tracer, opaque
        self.bindings, self.reference, self.fallback = bindings, reference, fallback
        self.parameters = parameters

    def summary(self):
        """One line: tracer, steps, parameters, opaque steps."""
        graph = self.description["graph"]
        seen = {}
        for i, where, _ in self.opaque:
            kind = graph[i]["opaque"]
            label = "%s (%s)" % (where, kind) if where != kind else kind
            seen[label] = seen.get(label, 0) + 1
        ops = ", ".join(k if n == 1 else "%s x%d" % (k, n) for k, n in seen.items())
        return "tracer %s, %d steps, %s parameters, %d opaque%s" % (
            self.tracer, len(graph), format(self.parameters, ","), len(self.opaque), ": " + ops if ops else "")


_DTYPES = {
    "float32": torch.float32, "float": torch.float32, "float16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "float64": torch.float64, "double": torch.float64, "int64": torch.int64,
    "long": torch.int64, "int32": torch.int32, "int": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool, "complex64": torch.complex64,
}


def parse_input(spec, dtype=None):
    """(shape list of ints and symbol names, torch dtype) from an input spec.

    spec: "N,3,224,224" or "8x3x224x224" (optionally ":float16"), a tuple or
    list of ints and symbol strings, a tensor (its shape and dtype), or a pair
    (one of these, dtype) where dtype is a torch.dtype or its name.
    """
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], (torch.dtype, str)) \
            and not isinstance(spec[0], int) and not (isinstance(spec[0], str) and isinstance(spec[1], str)
                                                      and spec[1] not in _DTYPES):
        spec, dtype = spec
    if isinstance(spec, torch.Tensor):
        return list(spec.shape), dtype_of(dtype) if dtype is not None else spec.dtype
    if isinstance(spec, str):
        if ":" in spec:
            spec, dt = spec.rsplit(":", 1)
            dtype = dtype if dtype is not None else dt
        items = [s.strip() for s in re.split(r"[x,]", spec) if s.strip()] if spec.strip() else []
        shape = []
        for s in items:
            if re.fullmatch(r"-?\d+", s):
                shape.append(int(s))
            elif re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", s):
                shape.append(s)
            else:
                raise ValueError("bad size %r in shape %r" % (s, spec))
    elif isinstance(spec, (list, tuple, torch.Size)):
        shape = [s if isinstance(s, str) else int(s) for s in spec]
    else:
        raise ValueError("an input is a shape string, a shape tuple, a tensor or (one of these, dtype)")
    return shape, dtype_of(dtype) if dtype is not None else torch.float32


def dtype_of(d):
    if isinstance(d, torch.dtype):
        return d
    if d not in _DTYPES:
        raise ValueError("unknown dtype %r" % d)
    return _DTYPES[d]


def _runs(symbols, bindings):
    """The symbol values of each run: the reference first, then each symbol
    moved by +1 and +2 alone, then all by +1 (to separate products)."""
    base = {s: bindings.get(s, DEFAULT_BINDING) for s in symbols}
    runs = [base]
    for s in symbols:
        for d in (1, 2):
            r = dict(base)
            r[s] += d
            runs.append(r)
    if len(symbols) > 1:
        runs.append({s: v + 1 for s, v in base.items()})
    return runs


def _concrete(shape, run):
    return [run[s] if isinstance(s, str) else s for s in shape]


def export(model, inputs, path=None, *, tracer="auto", symbolic=None, mode=None, force=False):
    """Trace model and return an ExportResult; write it to path when given.

    model: a torch.nn.Module (on the meta device for free tracing; on the CPU
      it runs for real).
    inputs: {name: spec} in forward's argument order; spec as parse_input
      takes it: "N,3,224,224", "2x3x224x224:float16", (2, 3, 224, 224),
      ("N,T", "int64"), ("N,T", torch.int64) or a tensor. A non-integer size
      is a symbol, kept symbolic in the description.
    path: where to write the JSON (atomically; refuses an existing file unless
      force=True); None writes nothing.
    tracer: "auto" (fx, then record if fx fails), "fx" or "record".
    symbolic: {symbol: value} used for the reference run (default 2 each).
    mode: "eval" or "train" puts the model in that mode first; None keeps it.
    Raises ExportError when the model cannot be exported.
    """
    if tracer not in ("auto", "fx", "record"):
        raise ValueError("tracer is auto, fx or record")
    if mode == "eval":
        model.eval()
    elif mode == "train":
        model.train()
    elif mode is not None:
        raise ValueError("mode is eval or train")
    specs = {name: parse_input(spec) for name, spec in inputs.items()}
    symbols = []
    for shape, _ in specs.values():
        for s in shape:
            if isinstance(s, str) and s not in symbols:
                symbols.append(s)
    runs = _runs(symbols, dict(symbolic or {}))
    device = model_device(model)

    def make(run):
        return {n: make_input(_concrete(shape, run), dt, device) for n, (shape, dt) in specs.items()}

    _, tensor_paths = module_paths(model)
    training = model.training
    fallback = None
    if tracer in ("auto", "fx"):
        try:
            gm = fx_trace.trace(model)
        except Exception as e:
            if tracer == "fx":
                raise ExportError("fx cannot trace the model: %s: %s" % (type(e).__name__, e)) from None
            first = str(e).splitlines()[0] if str(e) else ""
            fallback = "%s: %s" % (type(e).__name__, first.split(". ")[0])
            gm = None
        if gm is not None:
            builder = fx_trace.Builder(gm, model, list(specs), tensor_paths, training)
            tapes, results = [], []
            for run in runs:
                values, snaps = fx_trace.run(gm, make(run))
                steps, outputs = builder.tape(values, snaps)
                tapes.append(steps)
                results.append((outputs, values))
            outputs = _fx_outputs(results[0][0])
            return _finish(model, specs, runs, tapes, outputs, "fx", builder.constants,
                           builder.expanded, None, path, force)
    tapes, constants = [], []
    for run in runs:
        rec, result = record.record_model(model, make(run), tensor_paths, training)
        tapes.append(rec.steps)
        outputs = _record_outputs(rec, result)
        constants = rec.constants
    return _finish(model, specs, runs, tapes, outputs, "record", constants, [], fallback, path, force)


def _fx_outputs(out):
    """[(key or None, graph name)] of an fx output structure (of Refs)."""
    from .steps import Ref

    def name(v):
        if not isinstance(v, Ref):
            raise ExportError("the model returns %r, which a description cannot say" % (v,))
        return v.name
    if isinstance(out, dict):
        return [(k, name(v)) for k, v in out.items()]
    if isinstance(out, (list, tuple)):
        return [(None, name(v)) for v in out]
    return [(None, name(out))]


def _record_outputs(rec, result):
    def name(t):
        if not isinstance(t, torch.Tensor):
            raise ExportError("the model returns a %s, which a description cannot say" % type(t).__name__)
        return rec.ref(t).name
    if isinstance(result, torch.Tensor):
        return [(None, name(result))]
    if isinstance(result, dict):
        return [(k, name(v)) for k, v in result.items()]
    if isinstance(result, (list, tuple)):
        return [(None, name(v)) for v in result]
    raise ExportError("the model returns a %s, which a description cannot say" % type(result).__name__)


def _finish(model, specs, runs, tapes, outputs, tracer, constants, expanded, fallback, path, force):
    steps, opaque_shapes = unify(tapes, runs)
    # Output names: a dict's keys become the names of its values.
    names = []
    for key, v in outputs:
        name = v
        if key is not None and key != name:
            taken = {s.out for s in steps if isinstance(s.out, str)} | set(specs)
            if key in taken:
                rename(steps, key, key + "_")
            rename(steps, name, key)
            name = key
        names.append(name)
    modules, root_free = describe_root(model)
    # "class": the model's class (tinspect check names it as load_state_dict
    # does). fx's generated code deletes each value after its last use; the
    # record tracer's graph has the same data flow: tinspect lets values go there too
    desc = {"class": type(model).__module__ + "." + type(model).__qualname__,
            "inputs": {n: {"shape": shape, "dtype": dtype_name(dt)} for n, (shape, dt) in specs.items()},
            "lifetime": "last_use", "modules": modules}
    desc.update(root_free)
    for cname, t in constants:
        desc.setdefault("buffers", {})[cname] = {"shape": list(t.shape), "dtype": dtype_name(t.dtype),
                                                 "persistent": False}
    scope = {"current": ""}  # the forward begins in the model's own scope
    desc["graph"] = [step_json(s, opaque_shapes.get(i), scope) for i, s in enumerate(steps)]
    desc["outputs"] = names
    t = tied(model)
    if t:
        desc["tied"] = t
    opaque = []
    reasons = dict(expanded)
    for i, s in enumerate(steps):
        if s.kind == "opaque":
            why = reasons.get(s.target) or ("tinspect has no %s" % (s.target.rsplit(".", 1)[-1]))
            opaque.append((i, s.module or s.target, why))
    reference = [reference_of(s) for s in steps]
    nparams = sum(p.numel() for p in model.parameters())
    result = ExportResult(desc, tracer, opaque, dict(runs[0]), reference, fallback, nparams)
    if path is not None:
        write_json(desc, path, force=force)
    return result

