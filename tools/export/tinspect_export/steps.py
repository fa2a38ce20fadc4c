"""Graph steps as both tracers produce them, and symbolic sizes across runs.

A tracer produces one tape (a list of Step) per run; runs differ only in
the values bound to the symbols (N=2, N=3, N=4 ...). `unify` checks the
tapes record the same steps and turns every int that differs between runs
into a formula over the symbols ("N*197", "2*N + 1"). The first run's
outputs are the reference.
"""
import itertools

import torch

from .errors import ExportError
from .names import DROP, Formula, dtype_name, to_json


class Ref:
    """A graph value by name, in an argument."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Ref) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "Ref(%r)" % self.name


class TensorMeta:
    """A tensor's shape and dtype as they were when a step produced it
    (later in-place ops such as unsqueeze_ must not change the record)."""
    __slots__ = ("shape", "dtype")

    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), t.dtype


def snapshot(v):
    """v with every tensor replaced by its TensorMeta."""
    if isinstance(v, torch.Tensor):
        return TensorMeta(v)
    if isinstance(v, (tuple, list)):
        return [snapshot(x) for x in v] if isinstance(v, list) else tuple(snapshot(x) for x in v)
    return v


def _is_tensor(v):
    return isinstance(v, (torch.Tensor, TensorMeta))


class Step:
    """One description graph step.

    kind: "op", "call", "attr" or "opaque"; target: the op name, module path,
    attribute path or opaque callable name; out: a name or a list of names;
    values: what PyTorch returned (for the reference and opaque outputs);
    where: a readable origin for messages; scope: the path of the module
    whose forward made the call ("" the model's own), or None when unknown.
    """
    __slots__ = ("kind", "target", "args", "kwargs", "out", "values", "module", "where", "scope")

    def __init__(self, kind, target, args=(), kwargs=None, out=None, values=None, module=None, where=None,
                 scope=None):
        self.kind, self.target, self.args = kind, target, list(args)
        self.kwargs = dict(kwargs or {})
        self.out, self.values, self.module, self.where = out, snapshot(values), module, where
        self.scope = scope

    def describe(self):
        return "%s %s" % (self.kind, self.target) + (" (%s)" % self.where if self.where else "")


def _outputs_of(values):
    """The tensors of a step's result as a flat list (None for non-tensors)."""
    if _is_tensor(values):
        return [values]
    if isinstance(values, (tuple, list)) and _has_tensor(values):
        out = []
        for v in values:  # nested tuples (LSTM's (out, (h, c))) flatten
            out.extend(_outputs_of(v) if isinstance(v, (tuple, list)) and _has_tensor(v) else
                       [v if _is_tensor(v) else None])
        return out
    return [None]


def _has_tensor(values):
    return any(_is_tensor(v) or (isinstance(v, (tuple, list)) and _has_tensor(v)) for v in values)


def reference_of(step):
    """[(shape tuple, dtype name) or None per output] of a step."""
    return [(tuple(t.shape), dtype_name(t.dtype)) if t is not None else None for t in _outputs_of(step.values)]


def _shapes(step):
    return [list(t.shape) if t is not None else None for t in _outputs_of(step.values)]


# ---- formulas ----

def _fmt_term(coef, syms):
    mono = "*".join(syms)
    if not syms:
        return str(coef)
    if coef == 1:
        return mono
    return "%d*%s" % (coef, mono)


def _fmt(terms, const):
    s = ""
    for coef, syms in terms:
        if coef == 0:
            continue
        t = _fmt_term(abs(coef), syms)
        s = (t if coef > 0 else "-" + t) if not s else s + (" + " if coef > 0 else " - ") + t
    if const or not s:
        s = str(const) if not s else s + (" + %d" % const if const > 0 else " - %d" % -const)
    return s


def _eval(terms, const, b):
    total = const
    for coef, syms in terms:
        p = coef
        for s in syms:
            p *= b[s]
        total += p
    return total


def fit(values, runs):
    """A formula over the symbols giving values[i] under runs[i], or None.

    Tries c*S1*...*Sk + d for each set of symbols, then a sum of one term
    per symbol plus a constant.
    """
    symbols = sorted(runs[0])
    pairs = list(zip(runs, values))
    candidates = []
    for k in range(1, len(symbols) + 1):
        for syms in itertools.combinations(symbols, k):
            candidates.append([syms])
    candidates.append([(s,) for s in symbols])
    for shape in candidates:
        # Solve for one coefficient per term and a constant from the runs (least
        # squares would do; exact integer solving from differences suffices here).
        sol = _solve(shape, pairs)
        if sol is None:
            continue
        terms, const = sol
        if all(_eval(terms, const, b) == v for b, v in pairs):
            return Formula(_fmt(terms, const))
    return None


def _solve(shape, pairs):
    """Integer coefficients for terms of `shape` plus a constant, or None."""
    import fractions
    n = len(shape) + 1
    rows = []
    for b, v in pairs:
        row = []
        for syms in shape:
            p = 1
            for s in syms:
                p *= b[s]
            row.append(fractions.Fraction(p))
        rows.append(row + [fractions.Fraction(1), fractions.Fraction(v)])
    # Gaussian elimination on the first independent rows.
    m, pivots, r = [list(x) for x in rows], [], 0
    for c in range(n):
        piv = next((i for i in range(r, len(m)) if m[i][c] != 0), None)
        if piv is None:
            continue
        m[r], m[piv] = m[piv], m[r]
        for i in range(len(m)):
            if i != r and m[i][c] != 0:
                f = m[i][c] / m[r][c]
                m[i] = [a - f * b for a, b in zip(m[i], m[r])]
        pivots.append(c)
        r += 1
    if len(pivots) < n:
        return None
    sol = [m[i][n] / m[i][pivots[i]] for i in range(n)]
    if any(x.denominator != 1 for x in sol):
        return None
    return [(int(sol[i]), syms) for i, syms in enumerate(shape)], int(sol[-1])


# ---- unifying runs ----

def _unify_value(vals, runs, where):
    first = vals[0]
    if isinstance(first, Ref):
        if any(v != first for v in vals):
            raise ExportError("%s: the runs at different sizes took different values" % where)
        return first
    if isinstance(first, bool) or first is None or isinstance(first, str):
        if any(v != first for v in vals):
            raise ExportError("%s: a value changes with the input sizes: %r" % (where, vals))
        return first
    if isinstance(first, int):
        if any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
            raise ExportError("%s: runs at different sizes differ: %r" % (where, vals))
        if all(v == first for v in vals):
            return first
        f = fit(vals, runs)
        if f is None:
            raise ExportError("%s: an int %r (at %s) is no formula of the symbols I can fit" % (
                where, vals, ", ".join("%s" % b for b in runs)))
        return f
    if isinstance(first, float):
        if any(v != first for v in vals):
            raise ExportError("%s: a float changes with the input sizes: %r" % (where, vals))
        return first
    if isinstance(first, slice):
        if any(not isinstance(v, slice) for v in vals):
            raise ExportError("%s: runs at different sizes differ: %r" % (where, vals))
        return slice(*_unify_value([[v.start, v.stop, v.step] for v in vals], runs, where))
    if isinstance(first, dict):
        if any(not isinstance(v, dict) or list(v) != list(first) for v in vals):
            raise ExportError("%s: runs at different sizes differ" % where)
        return {k: _unify_value([v[k] for v in vals], runs, where) for k in first}
    if isinstance(first, (list, tuple)):
        if any(not isinstance(v, (list, tuple)) or len(v) != len(first) for v in vals):
            raise ExportError("%s: a list's length changes with the input sizes" % where)
        return [_unify_value([v[i] for v in vals], runs, where) for i in range(len(first))]
    if all(v == first for v in vals):
        return first
    raise ExportError("%s: runs at different sizes differ: %r" % (where, vals))


def unify(tapes, runs):
    """One tape whose ints are formulas where the runs differ.

    Returns (steps, opaque output shapes per step index); steps keep the first
    run's values (the reference).
    """
    base = tapes[0]
    for t in tapes[1:]:
        if len(t) != len(base):
            raise ExportError("the traced code records %d steps at %s but %d at %s: control flow depends on "
                              "the input sizes" % (len(base), runs[0], len(t), runs[tapes.index(t)]))
    shapes = {}
    for i, step in enumerate(base):
        others = [t[i] for t in tapes]
        where = "step %d (%s)" % (i, step.describe())
        for o in others:
            if (o.kind, o.target, o.out) != (step.kind, step.target, step.out):
                raise ExportError("%s: at %s the run records %s %s instead: control flow depends on the "
                                  "input sizes" % (where, runs[others.index(o)], o.kind, o.target))
        step.args = _unify_value([o.args for o in others], runs, where)
        step.kwargs = _unify_value([o.kwargs for o in others], runs, where)
        if step.kind == "opaque":
            shapes[i] = _unify_value([_shapes(o) for o in others], runs, where + " outputs")
    return base, shapes


# ---- JSON ----

def arg_json(v):
    """An argument as JSON: Refs by name, formulas as strings, constants mapped."""
    if isinstance(v, Ref):
        return v.name
    if isinstance(v, Formula):
        return str(v)
    if isinstance(v, (list, tuple)) and not isinstance(v, str):
        out = [arg_json(x) for x in v]
        return [x for x in out if x is not DROP]
    if isinstance(v, dict) and not isinstance(v, str):
        return {k: arg_json(x) for k, x in v.items()}
    return to_json(v)


def step_json(step, opaque_shapes=None, scope=None):
    """The description JSON of a step. scope: {"current": path}, the scope
    tinspect will hold before this step, carried from step to step: "scope"
    is written only where tinspect would not infer it (a call's scope is its
    module's parent, an operator's the scope before it)."""
    d = {"out": step.out}
    if step.kind == "attr":
        d["attr"] = step.target
        return d
    d[step.kind] = step.target
    if step.module is not None:
        d["module"] = step.module
    called = step.module if step.kind == "opaque" else step.target if step.kind == "call" else None
    state = scope if scope is not None else {"current": None}
    inferred = called.rpartition(".")[0] if called is not None else state["current"]
    if step.scope is not None and step.scope != inferred:
        d["scope"] = step.scope
    state["current"] = step.scope if step.scope is not None else inferred
    d["args"] = [a for a in (arg_json(x) for x in step.args) if a is not DROP]
    for k, v in step.kwargs.items():
        v = arg_json(v)
        if v is not DROP:
            d[k] = v
    if step.kind == "opaque":
        outs = []
        for t, shape in zip(_outputs_of(step.values), opaque_shapes or _shapes(step)):
            outs.append(None if t is None else {"shape": [arg_json(s) for s in shape], "dtype": dtype_name(t.dtype)})
        d["outputs"] = outs
    return d


def rename(steps, old, new):
    """Rename graph value `old` to `new` throughout the steps."""
    def sub(v):
        if isinstance(v, Ref):
            return Ref(new) if v.name == old else v
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, tuple):
            return tuple(sub(x) for x in v)
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return v
    for s in steps:
        s.args = sub(s.args)
        s.kwargs = sub(s.kwargs)
        if s.out == old:
            s.out = new
        elif isinstance(s.out, list):
            s.out = [new if o == old else o for o in s.out]
