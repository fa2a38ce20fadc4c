#!/usr/bin/env python3
"""
Conformance test: `tinspect shapes` and `tinspect params` against PyTorch.

Usage:  /usr/bin/python3 tests/conformance/shapes_conformance.py [./tinspect] [options]

A small interpreter of tinspect's model description format (the JSON that
`tinspect shapes MODEL.json` reads) builds each model from real torch.nn
modules on the meta device, calls .eval(), runs the graph on meta tensors and
records, for every top-level graph step, the shape and dtype of each output
tensor, plus the model's state_dict (names, shapes, dtypes, order, parameter
or buffer, requires_grad). It then runs `tinspect shapes FILE --json --bind
...` and `tinspect params FILE --json` with the same symbol bindings and
compares.

Cases: every fixtures/models/*.json, a few hand-written error cases, and
--random N seeded random descriptions (chains of convolutions, pools, norms,
activations, Linear, RNNs and tensor ops; about a quarter end in a step that
PyTorch rejects on purpose: channel mismatch, kernel larger than the input,
bad reshape, view of a non-contiguous tensor, ...).

Checked (hard failures):
  - outcome: PyTorch succeeds -> exit 0; PyTorch raises while running step i
    -> exit 1 with error.step == i; PyTorch cannot even build the model
    (constructor error, unknown module type or name) -> exit 3;
  - per top-level step, in order: the number of output tensors, each one's
    shape and dtype (steps before the failing one when there is an error);
  - the model outputs (shapes and dtypes, in order);
  - the parameter list of `params` and of `shapes`: names, shapes, dtypes,
    order (state_dict order), kind (parameter/buffer), trainable;
  - when the case has symbols, a second run with no --bind: every symbolic
    size it prints ("(L - 3)//2 + 1"), evaluated with the binding, must equal
    PyTorch's size (unless the binding contradicts one of the run's
    "assumptions", such as "L - 3*(L//3) == 0").
A TypeError from torch (the arguments themselves rejected) may be answered
with exit 1 at that step or exit 3.
Reported but not failed (NOTE lines, shown with -v): stride differences
(against meta's strides, ignoring size-1 dimensions), symbolic
sizes left in a bound run, an unbound run that fails.
A tuple output (LSTM's (h_n, c_n)) is compared flattened, tensors in order.

Ops are resolved as tinspect does: torch.nn.functional, then torch, then
Tensor methods (a torch function rejecting the arguments with a TypeError is
retried as the Tensor method: torch.reshape(x, 2, -1) -> x.reshape(2, -1)).
Creation ops (arange, zeros, ...) get device=meta.

Prints one line per case, then "N passed, M failed" (and skips); exits 1 if
any failed. Exits 0 with "skipped" if torch is unavailable or the binary has
no `shapes` command.

Options:
  --only SUBSTR   run only cases whose name contains SUBSTR
  --random N      number of random descriptions (default 300)
  --seed S        random seed (default 20241121)
  --keep DIR      write the random descriptions to DIR (failing ones are
                  always written to a temporary directory and their path printed)
  --torch-only    no tinspect: print PyTorch's per-step shapes for each case
  --strict-coverage  fail, instead of skip, the cases where tinspect exits 3
                  with "unknown operator" or "unknown module type" for
                  something PyTorch runs
  --device DEV    device for the PyTorch side: auto (default: meta, and the CPU
                  where they disagree, see torch_outcome), meta or cpu
  -v              print every difference and the NOTE lines
"""
import argparse
import ast
import collections
import copy
import glob
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

# --------------------------------------------------------------------------
# torch availability: re-exec under $PYTHON (default /usr/bin/python3) once.
# --------------------------------------------------------------------------
try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except Exception:  # ImportError, or a broken install
    target = os.environ.get("PYTHON", "/usr/bin/python3")
    if (not os.environ.get("_TINSPECT_CONF_REEXEC")
            and os.path.exists(target)
            and os.path.realpath(target) != os.path.realpath(sys.executable)):
        os.environ["_TINSPECT_CONF_REEXEC"] = "1"
        os.execv(target, [target] + sys.argv)
    if __name__ == "__main__":
        print("skipped: torch is not importable with %s (set PYTHON to an "
              "interpreter that has torch); shapes conformance not run" % sys.executable)
        sys.exit(0)
    raise

warnings.filterwarnings("ignore")

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODELS_DIR = os.path.join(ROOT, "fixtures", "models")

# Values for symbols that a case does not bind itself.
DEFAULT_BIND = {"N": 2, "B": 2, "T": 8, "L": 16, "S": 8, "H": 32, "W": 32, "C": 3}


# ==========================================================================
# The description interpreter
# ==========================================================================
class DescriptionError(Exception):
    """The description cannot be built: tinspect must exit 3."""


class StepError(Exception):
    """PyTorch raised while running top-level step `step`: tinspect must exit 1."""

    def __init__(self, step, message, kind):
        super().__init__(message)
        self.step = step
        self.message = message
        self.kind = kind  # exception class name


CONTAINERS = ("Sequential", "ModuleList", "ModuleDict")

# torch functions that make a tensor from nothing: they need the device.
CREATION_OPS = {"arange", "zeros", "ones", "full", "empty", "eye", "rand", "randn",
                "randint", "linspace", "logspace", "tensor", "range"}

_EXPR_OK = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load,
            ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)
try:
    _EXPR_OK = _EXPR_OK + (ast.Num,)
except AttributeError:
    pass


def eval_int_expr(text, names):
    """Evaluates '+ - * // ( )' over ints and names (a leading or inner '$' is ignored)."""
    src = text.replace("$", "")
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError:
        raise DescriptionError("bad config expression '%s'" % text)
    for node in ast.walk(tree):
        if not isinstance(node, _EXPR_OK):
            raise DescriptionError("bad config expression '%s'" % text)
        if isinstance(node, ast.Name) and node.id not in names:
            raise DescriptionError("unknown config name '%s' in '%s'" % (node.id, text))
    return eval(compile(tree, "<expr>", "eval"), {"__builtins__": {}}, dict(names))


_COND_OK = _EXPR_OK + (ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
                      ast.BoolOp, ast.And, ast.Or)


def eval_condition(text, names):
    """Evaluates one of tinspect's assumptions ("L - 3*(L//3) == 0", "2 < L") under names."""
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _COND_OK) or (isinstance(node, ast.Name) and node.id not in names):
            raise ValueError("cannot evaluate '%s'" % text)
    return bool(eval(compile(tree, "<cond>", "eval"), {"__builtins__": {}}, dict(names)))


def dtype_of(name):
    if isinstance(name, torch.dtype):
        return name
    d = getattr(torch, str(name), None)
    if not isinstance(d, torch.dtype):
        raise DescriptionError("unknown dtype '%s'" % name)
    return d


def dtype_name(d):
    return str(d).replace("torch.", "")


class DescribedModule(nn.Module):
    """A model or a `defs` type: children in description order, plus a graph."""

    def __init__(self, interp, spec, what):
        super().__init__()
        self._interp = interp
        self._spec = spec
        self._what = what
        mods = spec.get("modules", {})
        if not isinstance(mods, dict):
            raise DescriptionError("%s: 'modules' must be an object" % what)
        for name, child in mods.items():
            self.add_module(name, interp.build(child, "%s.%s" % (what, name)))
        inputs = spec.get("inputs", [])
        self._inputs = list(inputs.keys()) if isinstance(inputs, dict) else list(inputs)

    def forward(self, *args):
        if len(args) != len(self._inputs) and self._spec.get("graph") is not None:
            raise TypeError("%s takes %d inputs, got %d" % (self._what, len(self._inputs), len(args)))
        env = dict(zip(self._inputs, args))
        last = self._interp.run_graph(self, self._spec, env, None)
        return last


class Interpreter:
    def __init__(self, desc, bind=None, device="meta"):
        self.desc = desc
        self.bind = dict(bind or {})
        self.device = torch.device(device)
        self.config = {}
        for k, v in (desc.get("config") or {}).items():
            self.config[k] = self.resolve_config(v)
        self.defs = desc.get("defs") or {}
        self.depth = 0

    # ---- values -----------------------------------------------------------
    def resolve_config(self, v):
        if isinstance(v, str) and v.startswith("$"):
            return eval_int_expr(v[1:], self.config)
        if isinstance(v, list):
            return [self.resolve_config(x) for x in v]
        if isinstance(v, dict):
            return {k: self.resolve_config(x) for k, x in v.items()}
        return v

    def ctor_value(self, key, v):
        v = self.resolve_config(v)
        if isinstance(v, str) and v in self.bind and key not in ("padding", "mode", "nonlinearity",
                                                                  "activation", "padding_mode",
                                                                  "reduction", "approximate"):
            return self.bind[v]
        if key == "dtype" and v is not None:
            return dtype_of(v)
        if isinstance(v, list):
            return tuple(self.ctor_value(key + "[]", x) for x in v)
        return v

    def arg_value(self, v, env):
        if isinstance(v, str):
            if v in env:
                return env[v]
            if v.startswith("$"):
                return eval_int_expr(v[1:], self.config)
            if v in self.bind:
                return self.bind[v]
            return v
        if isinstance(v, list):
            return [self.arg_value(x, env) for x in v]
        return v

    # ---- building ---------------------------------------------------------
    def build(self, spec, what):
        if not isinstance(spec, dict) or "type" not in spec and "repeat" not in spec:
            raise DescriptionError("%s: a module needs a 'type'" % what)
        self.depth += 1
        if self.depth > 64:
            raise DescriptionError("%s: modules nested too deep" % what)
        try:
            return self._build(spec, what)
        finally:
            self.depth -= 1

    def _build(self, spec, what):
        t = spec.get("type", "ModuleList")
        if t in CONTAINERS:
            if "repeat" in spec:
                n = self.resolve_config(spec["repeat"])
                children = [("%d" % i, self.build(spec["module"], "%s.%d" % (what, i)))
                            for i in range(n)]
            else:
                mods = spec.get("modules", [])
                if isinstance(mods, list):
                    children = [("%d" % i, self.build(m, "%s.%d" % (what, i)))
                                for i, m in enumerate(mods)]
                else:
                    children = [(k, self.build(m, "%s.%s" % (what, k))) for k, m in mods.items()]
            if t == "Sequential":
                return nn.Sequential(collections.OrderedDict(children))
            if t == "ModuleDict":
                return nn.ModuleDict(collections.OrderedDict(children))
            ml = nn.ModuleList()
            for name, m in children:
                ml.add_module(name, m)
            return ml
        if t in self.defs:
            return DescribedModule(self, self.defs[t], what)
        cls = getattr(nn, t, None)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            raise DescriptionError("%s: unknown module type '%s'" % (what, t))
        kwargs = {k: self.ctor_value(k, v) for k, v in spec.items() if k != "type"}
        try:
            try:
                m = cls(**kwargs, device="meta")
            except TypeError as e:
                if "device" not in str(e):
                    raise
                m = cls(**kwargs)
        except DescriptionError:
            raise
        except Exception as e:  # the constructor rejects its arguments
            raise DescriptionError("%s: %s(%s): %s: %s" % (what, t, kwargs, type(e).__name__, e))
        return m

    def build_model(self):
        spec = self.desc
        if "modules" in spec and not isinstance(spec["modules"], dict):
            raise DescriptionError("'modules' must be an object")
        root = DescribedModule(self, {"modules": spec.get("modules", {})}, "model")
        root = root.to("meta")
        if self.device.type != "meta":
            # uninitialised storage: only shapes matter, and this is fast for GPT-2 sizes
            root = root.to_empty(device=self.device)
        for dst, src in (spec.get("tied") or {}).items():
            try:
                sp, sl = src.rsplit(".", 1) if "." in src else ("", src)
                dp, dl = dst.rsplit(".", 1) if "." in dst else ("", dst)
                src_mod = root.get_submodule(sp) if sp else root
                dst_mod = root.get_submodule(dp) if dp else root
                p = src_mod._parameters[sl]
                old = dst_mod._parameters[dl]
            except (AttributeError, KeyError) as e:
                raise DescriptionError("tied: '%s' -> '%s': %s" % (dst, src, e))
            if old is None or tuple(old.shape) != tuple(p.shape) or old.dtype != p.dtype:
                raise DescriptionError("tied: '%s' %s cannot share '%s' %s" % (
                    dst, None if old is None else tuple(old.shape), src, tuple(p.shape)))
            dst_mod._parameters[dl] = p
        root.eval()
        return root

    def make_inputs(self):
        env = collections.OrderedDict()
        for name, spec in (self.desc.get("inputs") or {}).items():
            shape = []
            for d in spec["shape"]:
                d = self.resolve_config(d)
                if isinstance(d, str):
                    if d not in self.bind:
                        raise DescriptionError("input '%s': unbound symbol '%s'" % (name, d))
                    d = self.bind[d]
                shape.append(d)
            dt = dtype_of(spec.get("dtype", "float32"))
            # zeros, not empty: indices must be valid when running on the CPU
            env[name] = torch.zeros(shape, dtype=dt, device=self.device)
        return env

    # ---- running ----------------------------------------------------------
    def call_module(self, mod, args, kwargs):
        if isinstance(mod, (nn.Sequential, nn.ModuleList)):
            if kwargs:
                raise TypeError("a container takes no keyword arguments")
            out = args
            for child in mod:
                out = child(*out) if isinstance(out, (list, tuple)) else child(out)
                out = (out,)
            return out[0]
        if isinstance(mod, nn.ModuleDict):
            raise TypeError("a ModuleDict is not callable")
        return mod(*args, **kwargs)

    def call_op(self, name, args, kwargs):
        for prefix in ("torch.nn.functional.", "torch.Tensor.", "torch.", "F.", "Tensor."):
            if name.startswith(prefix):
                name = name[len(prefix):]
                break
        if name in CREATION_OPS and "device" not in kwargs:
            kwargs = dict(kwargs, device=self.device)
        if "dtype" in kwargs and isinstance(kwargs["dtype"], str):
            kwargs = dict(kwargs, dtype=dtype_of(kwargs["dtype"]))
        fn = getattr(F, name, None)
        if not callable(fn):
            fn = getattr(torch, name, None)
        method = getattr(torch.Tensor, name, None)
        if not callable(fn) and not callable(method):
            raise DescriptionError("unknown op '%s'" % name)
        if callable(fn):
            try:
                return fn(*args, **kwargs)
            except TypeError:
                if not (callable(method) and args and isinstance(args[0], torch.Tensor)):
                    raise
        if not (args and isinstance(args[0], torch.Tensor)):
            raise TypeError("%s: the first argument must be a tensor" % name)
        return getattr(args[0], name)(*args[1:], **kwargs)

    def run_graph(self, owner, spec, env, record):
        """Runs spec's graph (or its modules in order) in env; returns the outputs."""
        graph = spec.get("graph")
        if graph is None:
            names = list((spec.get("modules") or {}).keys())
            if len(env) != 1:
                raise DescriptionError("without a graph the model needs exactly one input")
            cur = next(iter(env.values()))
            graph = []
            for i, n in enumerate(names):
                graph.append({"out": "_h", "call": n, "args": ["_in" if i == 0 else "_h"]})
            env = {"_in": cur}
        last = None
        for i, step in enumerate(graph):
            try:
                last = self.run_step(owner, step, env)
            except DescriptionError:
                raise
            except StepError:
                raise
            except Exception as e:
                if record is None:
                    raise  # inside a def: the top-level step reports it
                raise StepError(i, "%s" % e, type(e).__name__)
            if record is not None:
                record.append((i, step, last))
        outs = spec.get("outputs")
        if outs is None:
            return last
        try:
            vals = [env[o] for o in outs]
        except KeyError as e:
            raise DescriptionError("unknown output %s" % e)
        return vals[0] if len(vals) == 1 else tuple(vals)

    def run_step(self, owner, step, env):
        if not isinstance(step, dict) or ("call" in step) == ("op" in step):
            raise DescriptionError("a step needs one of 'call' or 'op'")
        args = [self.arg_value(a, env) for a in step.get("args", [])]
        kwargs = {k: self.arg_value(v, env) for k, v in step.items()
                  if k not in ("out", "call", "op", "args")}
        if "call" in step:
            for a in _strings(step.get("args", [])):
                if a not in env and a not in self.bind and not a.startswith("$"):
                    raise DescriptionError("unknown tensor '%s'" % a)
            try:
                mod = owner.get_submodule(step["call"])
            except AttributeError:
                raise DescriptionError("unknown module '%s'" % step["call"])
            if isinstance(mod, nn.ModuleDict):
                raise DescriptionError("'%s' is a ModuleDict, which cannot be called" % step["call"])
            out = self.call_module(mod, args, kwargs)
        else:
            out = self.call_op(step["op"], args, kwargs)
        names = step.get("out")
        if isinstance(names, list):
            if not isinstance(out, (list, tuple)) or len(out) != len(names):
                got = len(out) if isinstance(out, (list, tuple)) else 1
                raise ValueError("step gives %d outputs, 'out' names %d" % (got, len(names)))
            for n, v in zip(names, out):
                env[n] = v
        elif names is not None:
            env[names] = out
        return out

    def run(self):
        """Returns a dict: state (list of params), steps (recorded), outputs, or raises."""
        model = self.build_model()
        env = self.make_inputs()
        inputs = {k: (list(v.shape), dtype_name(v.dtype)) for k, v in env.items()}
        record = []
        with torch.no_grad():
            outs = self.run_graph(model, self.desc, env, record)
        steps = [(i, step, flatten_tensors(v)) for i, step, v in record]
        outputs = flatten_tensors(outs)
        return {"model": model, "inputs": inputs, "steps": steps, "outputs": outputs}


def _strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def flatten_tensors(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            out.extend(flatten_tensors(x))
        return out
    return []


def state_list(model):
    """The state_dict's entries: (name, shape, dtype, kind, trainable), in order."""
    out = []
    for name, t in model.state_dict(keep_vars=True).items():
        prefix, leaf = name.rsplit(".", 1) if "." in name else ("", name)
        mod = model.get_submodule(prefix) if prefix else model
        kind = "parameter" if leaf in mod._parameters else "buffer"
        trainable = bool(kind == "parameter" and t.requires_grad)
        out.append((name, list(t.shape), dtype_name(t.dtype), kind, trainable))
    return out


def symbols_of(desc):
    syms = []
    for spec in (desc.get("inputs") or {}).values():
        for d in spec.get("shape", []):
            if isinstance(d, str) and not d.startswith("$") and d not in syms:
                syms.append(d)
    return syms


def _outcome(desc, bind, device):
    interp = Interpreter(desc, bind, device)
    try:
        return ("ok", interp.run())
    except StepError as e:
        return ("step", e)
    except DescriptionError as e:
        return ("desc", e)


def _where(kind, res):
    return (kind, res.step if kind == "step" else None)


def torch_outcome(desc, bind, device="auto"):
    """('ok', result) | ('step', StepError) | ('desc', DescriptionError).

    device "auto" runs on meta and on the CPU (uninitialised weights, zero
    inputs) and, where the two disagree, takes the earlier error. torch 1.13
    checks less on each side in places: on meta, a convolution whose kernel
    is larger than the padded input gives an empty tensor where the CPU
    raises; on the CPU, max_pool1d's no-grad fast path gives an empty tensor
    ([2, 40, 0] from MaxPool1d(3, 2) on length 1) where meta, the CPU with
    grad, and PyTorch 2.x raise. A CPU error that only says the CPU lacks a
    kernel for the dtype ("not implemented for 'Half'") is ignored, and so is
    a meta error that only says meta lacks the kernel (max_pool3d). Strides
    are compared with meta's (the NOTE also shows the CPU's when they differ:
    the CPU takes fast paths, MultiheadAttention's for one, that meta does not).
    """
    if device != "auto":
        return _outcome(desc, bind, device)
    mk, mres = _outcome(desc, bind, "meta")
    if mk == "desc":
        return mk, mres
    ck, cres = _outcome(desc, bind, "cpu")
    meta_missing = mk == "step" and (mres.kind == "NotImplementedError"
                                     or "'Meta' backend" in mres.message)
    if meta_missing and ck != "desc":
        return ck, cres
    cpu_missing = ck == "step" and ("not implemented for" in cres.message
                                    or cres.kind == "NotImplementedError")
    if cpu_missing:
        return mk, mres
    if _where(mk, mres) != _where(ck, cres):
        if ck == "step" and (mk != "step" or cres.step < mres.step):
            cres.note = "meta %s, cpu raises at step %d" % (_where(mk, mres), cres.step)
            return ck, cres
        mres.note = "cpu %s, meta raises at step %d" % (_where(ck, cres), mres.step)
        return mk, mres
    if ck == "ok":
        mres["cpu_steps"] = cres["steps"]
    return mk, mres


# ==========================================================================
# tinspect side
# ==========================================================================
def run_tinspect(binary, cmd, path, bind):
    argv = [binary, cmd, path, "--json"]
    for k, v in bind.items():
        argv += ["--bind", "%s=%d" % (k, v)]
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        return -1, None, "timeout", argv
    doc = None
    try:
        doc = json.loads(p.stdout.decode("utf-8")) if p.stdout.strip() else None
    except ValueError:
        doc = "invalid JSON: %r" % p.stdout[:200]
    return p.returncode, doc, p.stderr.decode(errors="replace").strip(), argv


def norm_shape(shape, bind):
    """A tinspect shape with symbolic dims evaluated under bind; strings that do not evaluate stay."""
    out = []
    for d in shape:
        if isinstance(d, str):
            try:
                d = eval_int_expr(d, bind)
            except Exception:
                pass
        out.append(d)
    return out


class Diff:
    def __init__(self):
        self.fails = []
        self.notes = []
        self.unsupported = None  # "operator 'cumsum'": tinspect refuses what torch runs

    def fail(self, msg):
        self.fails.append(msg)

    def note(self, msg):
        self.notes.append(msg)


def compare_tensor(diff, where, want, got, bind, stride_ref=None):
    if not isinstance(got, dict):
        diff.fail("%s: tinspect gives %r" % (where, got))
        return
    wshape = list(want.shape)
    gshape_raw = got.get("shape")
    gshape = norm_shape(gshape_raw or [], bind)
    if gshape != wshape:
        diff.fail("%s: shape %s, torch %s" % (where, gshape_raw, wshape))
    elif any(isinstance(d, str) for d in gshape_raw):
        diff.note("%s: symbolic shape %s although every symbol is bound" % (where, gshape_raw))
    wd = dtype_name(want.dtype)
    if got.get("dtype") != wd:
        diff.fail("%s: dtype %s, torch %s" % (where, got.get("dtype"), wd))
    if "stride" in got and gshape == wshape:
        # a size-1 (or empty) dimension's stride means nothing: torch itself is not consistent
        gs = norm_shape(got.get("stride") or [], bind)
        ws = list(want.stride())
        keep = [k for k, n in enumerate(wshape) if n > 1]
        if len(gs) != len(ws) or [gs[k] for k in keep] != [ws[k] for k in keep]:
            cpu = ""
            if stride_ref is not None and list(stride_ref.stride()) != ws:
                cpu = ", cpu %s" % list(stride_ref.stride())
            diff.note("%s: stride %s, torch %s %s%s" % (where, got.get("stride"), want.device.type,
                                                      ws, cpu))


def compare_params(diff, what, want, got):
    if not isinstance(got, list):
        diff.fail("%s: no 'parameters' list" % what)
        return
    gnames = [g.get("name") for g in got]
    wnames = [w[0] for w in want]
    if gnames != wnames:
        missing = [n for n in wnames if n not in gnames]
        extra = [n for n in gnames if n not in wnames]
        if missing or extra:
            diff.fail("%s: names differ: missing %s, extra %s" % (what, missing[:5], extra[:5]))
        else:
            first = next(i for i, (a, b) in enumerate(zip(gnames, wnames)) if a != b)
            diff.fail("%s: order differs at %d: tinspect '%s', torch '%s'" % (
                what, first, gnames[first], wnames[first]))
    byname = {g.get("name"): g for g in got}
    for name, shape, dt, kind, trainable in want:
        g = byname.get(name)
        if g is None:
            continue
        if g.get("shape") != shape:
            diff.fail("%s: '%s' shape %s, torch %s" % (what, name, g.get("shape"), shape))
        if g.get("dtype") != dt:
            diff.fail("%s: '%s' dtype %s, torch %s" % (what, name, g.get("dtype"), dt))
        if "kind" in g and g["kind"] != kind:
            diff.fail("%s: '%s' kind %s, torch %s" % (what, name, g["kind"], kind))
        if "trainable" in g and bool(g["trainable"]) != trainable:
            diff.fail("%s: '%s' trainable %s, torch %s" % (what, name, g["trainable"], trainable))


def compare_steps(diff, want_steps, got_steps, bind, upto=None, stride_steps=None):
    if not isinstance(got_steps, list):
        diff.fail("no 'steps' list")
        return
    want = [s for s in want_steps if upto is None or s[0] < upto]
    if len(got_steps) != len(want):
        diff.fail("%d steps, torch %d" % (len(got_steps), len(want)))
    strides = {i: ts for i, _, ts in (stride_steps or [])}
    for (i, step, tensors), g in zip(want, got_steps):
        label = step.get("call") or step.get("op")
        where = "step %d (%s)" % (i, label)
        if g.get("index", i) != i:
            diff.fail("%s: index %s" % (where, g.get("index")))
        outs = g.get("outputs")
        if not isinstance(outs, list):
            diff.fail("%s: no outputs" % where)
            continue
        if len(outs) != len(tensors):
            diff.fail("%s: %d outputs, torch %d (%s vs %s)" % (
                where, len(outs), len(tensors), [o.get("shape") for o in outs],
                [list(t.shape) for t in tensors]))
            continue
        for k, (t, o) in enumerate(zip(tensors, outs)):
            ref = strides.get(i)
            compare_tensor(diff, "%s output %d" % (where, k), t, o, bind,
                           ref[k] if ref and k < len(ref) else None)


def compare_symbolic(diff, binary, path, res, bind):
    """Runs tinspect with no --bind: each symbolic size, evaluated with the
    binding, must equal PyTorch's. An unbound run that fails is only a NOTE
    (a rule may need a size it cannot prove)."""
    rc, doc, err, _ = run_tinspect(binary, "shapes", path, {})
    if rc != 0 or not isinstance(doc, dict):
        e = doc.get("error") if isinstance(doc, dict) else None
        diff.note("unbound run exits %s: %s" % (rc, (e or {}).get("message") or err[:200]))
        return
    for fact in doc.get("assumptions") or []:
        try:
            holds = eval_condition(fact, bind)
        except Exception:
            holds = None
        if holds is False:
            diff.note("unbound run assumes '%s', false under %s: symbolic sizes not compared"
                      % (fact, bind))
            return
    steps = doc.get("steps") or []
    for (i, step, tensors), g in zip(res["steps"], steps):
        outs = g.get("outputs") or []
        for k, (t, o) in enumerate(zip(tensors, outs)):
            raw = o.get("shape") or []
            try:
                val = [eval_int_expr(d, bind) if isinstance(d, str) else d for d in raw]
            except Exception as ex:
                diff.fail("unbound step %d output %d: shape %s does not evaluate: %s" % (i, k, raw, ex))
                continue
            if val != list(t.shape):
                diff.fail("unbound step %d (%s) output %d: shape %s = %s under %s, torch %s" % (
                    i, step.get("call") or step.get("op"), k, raw, val, bind, list(t.shape)))


def check_case(binary, name, desc, path, bind, device, verbose, strict_coverage=False):
    """Returns (status, Diff, torch outcome) with status 'pass' | 'fail' | 'skip'."""
    diff = Diff()
    kind, res = torch_outcome(desc, bind, device)
    rc, doc, err, argv = run_tinspect(binary, "shapes", path, bind)
    if rc not in (0, 1, 2, 3, 4):
        diff.fail("tinspect shapes exits %s: %s" % (rc, err[-300:]))
        return diff, kind, res
    m = re.search(r"unknown (operator|module type) '([^']*)'", err)
    if rc == 3 and m and kind != "desc":
        diff.unsupported = "%s '%s'" % (m.group(1), m.group(2))
        if strict_coverage:
            diff.fail("tinspect does not know %s: %s" % (diff.unsupported, err[:200]))
        return diff, kind, res
    if kind == "step" and res.kind == "TypeError" and rc == 3:
        # torch rejected the arguments themselves: tinspect may call that a bad description
        diff.note("torch TypeError at step %d (%s); tinspect exits 3: %s" % (
            res.step, res.message[:100], err[:150]))
        return diff, kind, res
    if kind == "desc":
        if rc != 3:
            diff.fail("torch cannot build it (%s); tinspect exits %d, want 3 %s" % (
                str(res)[:200], rc, err[:200]))
        return diff, kind, res
    if not isinstance(doc, dict):
        diff.fail("tinspect shapes exits %d, no JSON document: %s" % (rc, err[:300]))
        return diff, kind, res
    if kind == "step":
        if rc != 1:
            diff.fail("torch raises at step %d (%s: %s); tinspect exits %d%s" % (
                res.step, res.kind, res.message.splitlines()[0][:160], rc,
                (": " + err[:200]) if err else ""))
            if rc == 0:
                return diff, kind, res
        e = doc.get("error") or {}
        if rc == 1 and e.get("step") != res.step:
            diff.fail("error at step %s (%s); torch raises at step %d (%s: %s)" % (
                e.get("step"), str(e.get("message"))[:160], res.step, res.kind,
                res.message.splitlines()[0][:160]))
        # the steps that succeeded in torch before the failing one
        ok_steps = getattr(res, "steps", None)
        if ok_steps is not None and "steps" in doc:
            compare_steps(diff, ok_steps, doc.get("steps"), bind)
        return diff, kind, res
    # torch succeeded
    if rc != 0:
        e = doc.get("error") or {}
        diff.fail("torch runs it; tinspect exits %d: step %s: %s %s" % (
            rc, e.get("step"), str(e.get("message"))[:200], err[:200]))
        if rc == 1 and "steps" in doc:
            compare_steps(diff, res["steps"], doc["steps"], bind, upto=e.get("step"))
        return diff, kind, res
    compare_steps(diff, res["steps"], doc.get("steps"), bind, stride_steps=res.get("cpu_steps"))
    gin = doc.get("inputs") or {}
    for n, (shape, dt) in res["inputs"].items():
        g = gin.get(n)
        if not isinstance(g, dict) or norm_shape(g.get("shape", []), bind) != shape or g.get("dtype") != dt:
            diff.fail("input '%s': tinspect %s, torch %s %s" % (n, g, shape, dt))
    gout = doc.get("outputs")
    if isinstance(gout, dict):
        gouts = list(gout.values())
    elif isinstance(gout, list):
        gouts = gout
    else:
        gouts = None
    if gouts is None:
        diff.fail("no 'outputs'")
    else:
        # an output may be a tuple (LSTM's hc): flatten tinspect's side too
        flat = []
        for o in gouts:
            if isinstance(o, list):
                flat.extend(o)
            elif isinstance(o, dict) and "shape" not in o and isinstance(o.get("outputs"), list):
                flat.extend(o["outputs"])
            else:
                flat.append(o)
        if len(flat) != len(res["outputs"]):
            diff.fail("%d outputs, torch %d" % (len(flat), len(res["outputs"])))
        else:
            for k, (t, o) in enumerate(zip(res["outputs"], flat)):
                compare_tensor(diff, "output %d" % k, t, o, bind)
    want_params = state_list(res["model"])
    compare_params(diff, "shapes parameters", want_params, doc.get("parameters"))
    if bind:
        compare_symbolic(diff, binary, path, res, bind)
    prc, pdoc, perr, _ = run_tinspect(binary, "params", path, {})  # params takes no --bind
    if prc != 0 or not isinstance(pdoc, dict):
        diff.fail("tinspect params exits %s: %s" % (prc, perr[:200]))
    else:
        compare_params(diff, "params", want_params, pdoc.get("parameters"))
    return diff, kind, res


# Record the steps that succeeded before a StepError, for the prefix comparison.
_orig_run_graph = Interpreter.run_graph


def _run_graph_keep(self, owner, spec, env, record):
    try:
        return _orig_run_graph(self, owner, spec, env, record)
    except StepError as e:
        if record is not None and not hasattr(e, "steps"):
            e.steps = [(i, s, flatten_tensors(v)) for i, s, v in record]
        raise


Interpreter.run_graph = _run_graph_keep


# ==========================================================================
# Hand-written cases: outcomes the random generator rarely produces
# ==========================================================================
def handwritten_cases():
    x4 = {"x": {"shape": ["N", 3, 16, 16]}}
    cases = {
        "err_unknown_module_type": {
            "inputs": x4, "modules": {"a": {"type": "NoSuchModule"}}},
        "err_unknown_tensor_name": {
            "inputs": x4, "modules": {"c": {"type": "Conv2d", "in_channels": 3, "out_channels": 4,
                                            "kernel_size": 3}},
            "graph": [{"out": "h", "call": "c", "args": ["nope"]}]},
        "err_groups_do_not_divide": {
            "inputs": x4, "modules": {"c": {"type": "Conv2d", "in_channels": 3, "out_channels": 4,
                                            "kernel_size": 3, "groups": 2}}},
        "err_channel_mismatch_step2": {
            "inputs": x4, "modules": {
                "a": {"type": "Conv2d", "in_channels": 3, "out_channels": 8, "kernel_size": 3},
                "b": {"type": "ReLU"},
                "c": {"type": "Conv2d", "in_channels": 4, "out_channels": 8, "kernel_size": 3}}},
        "err_chunk_count": {
            "inputs": {"x": {"shape": ["N", 5]}},
            "graph": [{"out": ["a", "b", "c", "d"], "op": "chunk", "args": ["x", 4], "dim": 1}]},
        "err_view_after_permute": {
            "inputs": x4,
            "graph": [{"out": "h", "op": "permute", "args": ["x", [0, 2, 3, 1]]},
                      {"out": "h", "op": "view", "args": ["h", "N", -1]}]},
        "ok_reshape_after_permute": {
            "inputs": x4,
            "graph": [{"out": "h", "op": "permute", "args": ["x", [0, 2, 3, 1]]},
                      {"out": "h", "op": "reshape", "args": ["h", "N", -1]},
                      {"out": "h", "op": "reshape", "args": ["h", ["N", 16, -1]]}]},
        "ok_config_and_repeat": {
            "config": {"d": 8, "n": 3},
            "inputs": {"x": {"shape": ["N", "T", "$d"]}},
            "modules": {"blocks": {"type": "ModuleList", "repeat": "$n", "module": {
                "type": "Linear", "in_features": "$d", "out_features": "$d"}},
                "out": {"type": "Linear", "in_features": "$d", "out_features": "$(d*4)//2-1"}},
            "graph": [{"out": "h", "call": "blocks", "args": ["x"]},
                      {"out": "h", "call": "blocks.1", "args": ["h"]},
                      {"out": "y", "call": "out", "args": ["h"]}]},
        "ok_moduledict_and_defs": {
            "inputs": {"x": {"shape": ["N", 4]}, "y": {"shape": ["N", 4]}},
            "defs": {"Pair": {"inputs": ["a", "b"],
                              "modules": {"l": {"type": "Linear", "in_features": 4, "out_features": 6}},
                              "graph": [{"out": "p", "call": "l", "args": ["a"]},
                                        {"out": "q", "call": "l", "args": ["b"]},
                                        {"out": "s", "op": "sub", "args": ["p", "q"]}],
                              "outputs": ["s", "p"]}},
            "modules": {"d": {"type": "ModuleDict", "modules": {
                "pair": {"type": "Pair"}, "norm": {"type": "LayerNorm", "normalized_shape": 6}}}},
            "graph": [{"out": ["s", "p"], "call": "d.pair", "args": ["x", "y"]},
                      {"out": "s", "call": "d.norm", "args": ["s"]},
                      {"out": "z", "op": "stack", "args": [["s", "p"]], "dim": 0}],
            "outputs": ["z", "s"]},
        "ok_tied_and_int_input": {
            "inputs": {"ids": {"shape": ["B", "T"], "dtype": "int64"}},
            "modules": {"emb": {"type": "Embedding", "num_embeddings": 50, "embedding_dim": 8},
                        "head": {"type": "Linear", "in_features": 8, "out_features": 50, "bias": False}},
            "tied": {"head.weight": "emb.weight"},
            "graph": [{"out": "h", "call": "emb", "args": ["ids"]},
                      {"out": "y", "call": "head", "args": ["h"]},
                      {"out": "i", "op": "argmax", "args": ["y"], "dim": -1}]},
        "ok_dtype_changes": {
            "inputs": {"x": {"shape": ["N", 6], "dtype": "float16"}},
            "modules": {"l": {"type": "Linear", "in_features": 6, "out_features": 3, "dtype": "float16"}},
            "graph": [{"out": "h", "call": "l", "args": ["x"]},
                      {"out": "f", "op": "to", "args": ["h"], "dtype": "float32"},
                      {"out": "m", "op": "gt", "args": ["f", 0.0]},
                      {"out": "s", "op": "sum", "args": ["m"], "dim": 1},
                      {"out": "w", "op": "where", "args": ["m", "f", 0.0]}]},
        "err_inside_def_in_repeat": {
            "inputs": {"x": {"shape": ["N", "T", 8]}},
            "defs": {"Block": {"inputs": ["x"],
                               "modules": {"up": {"type": "Linear", "in_features": 8, "out_features": 16},
                                           "down": {"type": "Linear", "in_features": 16, "out_features": 8}},
                               "graph": [{"out": "h", "call": "up", "args": ["x"]},
                                         {"out": "h", "op": "gelu", "args": ["h"]},
                                         {"out": "h", "call": "down", "args": ["h"]},
                                         {"out": "y", "op": "add", "args": ["x", "h"]}],
                               "outputs": ["y"]}},
            "modules": {"blocks": {"type": "ModuleList", "repeat": 2, "module": {"type": "Block"}},
                        "proj": {"type": "Linear", "in_features": 8, "out_features": 5},
                        "bad": {"type": "Block"}},
            "graph": [{"out": "h", "call": "blocks", "args": ["x"]},
                      {"out": "h", "call": "proj", "args": ["h"]},
                      {"out": "h", "call": "bad", "args": ["h"]}]},
        "err_tied_shapes_differ": {
            "inputs": {"x": {"shape": ["N", 4]}},
            "modules": {"a": {"type": "Linear", "in_features": 4, "out_features": 4},
                        "b": {"type": "Linear", "in_features": 4, "out_features": 3}},
            "tied": {"b.weight": "a.weight"}},
        "err_unknown_output": {
            "inputs": {"x": {"shape": ["N", 4]}},
            "graph": [{"out": "h", "op": "relu", "args": ["x"]}],
            "outputs": ["nope"]},
        "err_unknown_call_path": {
            "inputs": {"x": {"shape": ["N", 4]}},
            "modules": {"s": {"type": "Sequential", "modules": [{"type": "ReLU"}]}},
            "graph": [{"out": "h", "call": "s.3", "args": ["x"]}]},
        "ok_no_outputs_last_step_tuple": {
            "inputs": {"x": {"shape": ["N", 6, 5]}},
            "modules": {"gru": {"type": "GRU", "input_size": 5, "hidden_size": 3, "num_layers": 2,
                                "bidirectional": True}},
            "graph": [{"out": ["y", "h_n"], "call": "gru", "args": ["x"]}]},
        "ok_config_expressions": {
            "config": {"d": 12, "h": 3},
            "inputs": {"x": {"shape": ["N", "$d"]}},
            "modules": {"a": {"type": "Linear", "in_features": "$d", "out_features": "$(d+h)*2-d//h"},
                        "b": {"type": "Linear", "in_features": "$(d+h)*2-d//h", "out_features": "$d%5"}},
            "graph": [{"out": "h", "call": "a", "args": ["x"]},
                      {"out": "h", "call": "b", "args": ["h"]},
                      {"out": "h", "op": "reshape", "args": ["h", ["N", "$d%5", 1]]}]},
        "ok_adaptive_pool_none": {
            "inputs": {"x": {"shape": ["N", 3, 10, 7]}},
            "modules": {"p": {"type": "AdaptiveAvgPool2d", "output_size": [None, 2]}},
            "graph": [{"out": "y", "call": "p", "args": ["x"]},
                      {"out": "z", "op": "adaptive_max_pool2d", "args": ["x", [3, None]]}]},
        "ok_arange_of_symbol": {
            "inputs": {"ids": {"shape": ["B", "T"], "dtype": "int64"}},
            "modules": {"pos": {"type": "Embedding", "num_embeddings": 16, "embedding_dim": 4}},
            "graph": [{"out": "p", "op": "arange", "args": ["T"]},
                      {"out": "y", "call": "pos", "args": ["p"]}]},
        "err_linear_after_pool_in_sequential": {
            "inputs": x4,
            "modules": {"body": {"type": "Sequential", "modules": [
                {"type": "Conv2d", "in_channels": 3, "out_channels": 4, "kernel_size": 3},
                {"type": "MaxPool2d", "kernel_size": 2},
                {"type": "Flatten"},
                {"type": "Linear", "in_features": 100, "out_features": 10}]}},
            "graph": [{"out": "h", "op": "relu", "args": ["x"]},
                      {"out": "y", "call": "body", "args": ["h"]}]},
    }
    return cases


# ==========================================================================
# Random descriptions
# ==========================================================================
class RandomGen:
    """Builds a chain one step at a time, keeping the steps torch accepts."""

    NO_WEIGHTS = {"ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "ReLU6", "Hardswish", "ELU",
                  "LeakyReLU", "Identity", "Dropout", "Dropout2d", "Softplus", "Mish", "MaxPool1d",
                  "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool2d",
                  "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveAvgPool3d", "Flatten", "Unflatten",
                  "Upsample", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Softmax",
                  "LogSoftmax", "ZeroPad2d", "ReplicationPad2d", "ReflectionPad2d", "ReflectionPad1d",
                  "Unfold", "LPPool2d"}
    ACTS = ["ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "ReLU6", "Hardswish", "ELU", "LeakyReLU",
            "Identity", "Dropout", "Softplus", "Mish"]
    OP_ACTS = ["relu", "gelu", "silu", "tanh", "sigmoid", "relu6", "hardswish", "leaky_relu"]

    def __init__(self, rng, device="auto"):
        self.r = rng
        self.device = device
        self.cur_dtype = torch.float32

    def shape_after(self, desc):
        kind, res = torch_outcome(desc, bind_for(desc), self.device)
        if kind != "ok":
            return None
        if res["steps"] and res["steps"][-1][2]:
            self.cur_dtype = res["steps"][-1][2][0].dtype
        return [list(t.shape) for t in res["steps"][-1][2]] if res["steps"] else None

    def divisors(self, n):
        return [d for d in range(1, n + 1) if n % d == 0] or [1]

    def candidates(self, shape, env_shapes, k):
        """Yields (modules-to-add, step) candidates for the current tensor 'h' of shape."""
        r = self.r
        nd = len(shape)
        c = shape[1] if nd >= 2 else None
        mname = "m%d" % k
        out = []
        if nd == 4:
            g = r.choice([1, 1, 1] + self.divisors(c))
            oc = g * r.randint(1, max(1, 24 // g))
            ks = r.choice([1, 2, 3, 3, 5, [1, 3], [3, 2]])
            pad = r.choice([0, 0, 1, 2, "same", [1, 0]])
            stride = 1 if pad == "same" else r.choice([1, 1, 2, 3, [2, 1]])
            spec = {"type": "Conv2d", "in_channels": c, "out_channels": oc, "kernel_size": ks,
                    "stride": stride, "padding": pad, "dilation": r.choice([1, 1, 2]),
                    "groups": g, "bias": r.random() < 0.7}
            if r.random() < 0.15 and pad not in (0, "same"):
                spec["padding_mode"] = r.choice(["reflect", "circular", "replicate"])
            out.append(({mname: spec}, {"call": mname}))
            oc = r.randint(1, 12)
            s = r.choice([1, 2, 3])
            out.append(({mname: {"type": "ConvTranspose2d", "in_channels": c, "out_channels": oc,
                                 "kernel_size": r.choice([1, 2, 3, 4]), "stride": s,
                                 "padding": r.choice([0, 1]),
                                 "output_padding": r.randint(0, s - 1)}}, {"call": mname}))
            kk = r.choice([2, 3, [2, 3]])
            out.append(({mname: {"type": "MaxPool2d", "kernel_size": kk,
                                 "stride": r.choice([None, 1, 2]), "padding": r.choice([0, 1]),
                                 "dilation": r.choice([1, 1, 2]),
                                 "ceil_mode": r.random() < 0.3}}, {"call": mname}))
            out.append(({mname: {"type": "AvgPool2d", "kernel_size": r.choice([2, 3]),
                                 "stride": r.choice([None, 1, 2]), "padding": r.choice([0, 1]),
                                 "ceil_mode": r.random() < 0.3,
                                 "count_include_pad": r.random() < 0.5}}, {"call": mname}))
            out.append(({mname: {"type": "AdaptiveAvgPool2d",
                                 "output_size": r.choice([1, [2, 3], 4, [None, 2]])}}, {"call": mname}))
            out.append(({mname: {"type": "BatchNorm2d", "num_features": c}}, {"call": mname}))
            gs = [d for d in self.divisors(c)]
            out.append(({mname: {"type": "GroupNorm", "num_groups": r.choice(gs), "num_channels": c,
                                 "affine": r.random() < 0.8}}, {"call": mname}))
            out.append(({mname: {"type": "InstanceNorm2d", "num_features": c,
                                 "affine": r.random() < 0.5,
                                 "track_running_stats": r.random() < 0.3}}, {"call": mname}))
            out.append(({}, {"op": "flatten", "args": ["h"], "start_dim": 1}))
            out.append(({mname: {"type": "Flatten"}}, {"call": mname}))
            out.append(({}, {"op": "interpolate", "args": ["h"], "scale_factor": r.choice([2, 0.5]),
                             "mode": r.choice(["nearest", "bilinear"])}))
            out.append(({mname: {"type": "Upsample", "size": [r.randint(2, 9), r.randint(2, 9)]}},
                        {"call": mname}))
            out.append(({}, {"op": "pad", "args": ["h", [1, 2, 0, 1]]}))
            if c % 4 == 0:
                out.append(({mname: {"type": "PixelShuffle", "upscale_factor": 2}}, {"call": mname}))
            out.append(({}, {"op": "mean", "args": ["h", [2, 3]], "keepdim": r.random() < 0.5}))
            out.append(({}, {"op": "permute", "args": ["h", [0, 2, 3, 1]]}))
        if nd == 3:
            g = r.choice([1, 1] + self.divisors(c))
            oc = g * r.randint(1, max(1, 16 // g))
            out.append(({mname: {"type": "Conv1d", "in_channels": c, "out_channels": oc,
                                 "kernel_size": r.choice([1, 3, 5, 7]), "stride": r.choice([1, 2, 3]),
                                 "padding": r.choice([0, 1, 3]), "dilation": r.choice([1, 2]),
                                 "groups": g}}, {"call": mname}))
            out.append(({mname: {"type": "MaxPool1d", "kernel_size": r.choice([2, 3]),
                                 "stride": r.choice([None, 2]), "ceil_mode": r.random() < 0.4}},
                        {"call": mname}))
            out.append(({mname: {"type": "AvgPool1d", "kernel_size": r.choice([2, 3])}}, {"call": mname}))
            out.append(({mname: {"type": "AdaptiveMaxPool1d", "output_size": r.randint(1, 6)}},
                        {"call": mname}))
            out.append(({mname: {"type": "BatchNorm1d", "num_features": c}}, {"call": mname}))
            out.append(({}, {"op": "transpose", "args": ["h", 1, 2]}))
            out.append(({mname: {"type": "LayerNorm", "normalized_shape": shape[-1]}}, {"call": mname}))
            out.append(({mname: {"type": "Linear", "in_features": shape[-1],
                                 "out_features": r.randint(1, 16), "bias": r.random() < 0.7}},
                        {"call": mname}))
            rnn = r.choice(["LSTM", "GRU", "RNN"])
            out.append(({mname: {"type": rnn, "input_size": shape[-1], "hidden_size": r.randint(2, 10),
                                 "num_layers": r.choice([1, 2]), "batch_first": True,
                                 "bidirectional": r.random() < 0.5}},
                        {"call": mname, "out": ["h", "state"]}))
            out.append(({}, {"op": "matmul", "args": ["h", "ht"], "pre": {"op": "transpose",
                                                                         "args": ["h", -1, -2]}}))
            out.append(({}, {"op": "softmax", "args": ["h"], "dim": r.choice([-1, 1])}))
            out.append(({}, {"op": "unsqueeze", "args": ["h", 1]}))
            out.append(({mname: {"type": "MultiheadAttention", "embed_dim": shape[-1],
                                 "num_heads": r.choice(self.divisors(shape[-1])[:3]),
                                 "batch_first": True}},
                        {"call": mname, "args": ["h", "h", "h"], "out": ["h", "attn"]}))
        if nd == 2:
            out.append(({mname: {"type": "Linear", "in_features": shape[-1],
                                 "out_features": r.randint(1, 32)}}, {"call": mname}))
            out.append(({mname: {"type": "BatchNorm1d", "num_features": shape[-1]}}, {"call": mname}))
            out.append(({mname: {"type": "LayerNorm", "normalized_shape": [shape[-1]],
                                 "elementwise_affine": r.random() < 0.7}}, {"call": mname}))
            n = shape[-1]
            for split in ([n // 2, -1] if n % 2 == 0 else []), ([4, -1, 2] if n % 8 == 0 else []):
                if split:
                    out.append(({}, {"op": "reshape", "args": ["h", ["N"] + split]}))
            out.append(({}, {"op": "unsqueeze", "args": ["h", -1]}))
            out.append(({}, {"op": "log_softmax", "args": ["h"], "dim": 1}))
        if nd >= 2:
            out.append(({mname: {"type": r.choice(self.ACTS)}}, {"call": mname}))
            out.append(({}, {"op": r.choice(self.OP_ACTS), "args": ["h"]}))
            out.append(({}, {"op": "add", "args": ["h", "h"]}))
            out.append(({}, {"op": "mul", "args": ["h", r.choice([0.5, 2, "h"])]}))
            d = r.randrange(1, nd)
            out.append(({}, {"op": "chunk", "args": ["h", r.choice([2, 3])], "dim": d,
                             "out": ["h", "h2"] if r.random() < 0.5 else ["h", "h2", "h3"]}))
            out.append(({}, {"op": "split", "args": ["h", r.choice([1, 2, 4])], "dim": d,
                             "out": ["h", "h2"]}))
            # cat with an earlier tensor of compatible shape, or with itself
            partners = [n for n, s in env_shapes.items() if len(s) == nd and n != "h"]
            p = r.choice(partners) if partners and r.random() < 0.7 else "h"
            out.append(({}, {"op": "cat", "args": [["h", p]], "dim": r.randrange(1, nd)}))
            out.append(({}, {"op": "add", "args": ["h", p]}))
            out.append(({}, {"op": "sum", "args": ["h"], "dim": r.randrange(1, nd),
                             "keepdim": r.random() < 0.5}))
        out.append(({}, {"op": "reshape", "args": ["h", ["N", -1]]}))
        out.append(({}, {"op": "unsqueeze", "args": ["h", -1]}))
        if nd > 2:
            out.append(({}, {"op": "flatten", "args": ["h"], "start_dim": 1}))
        if nd >= 2:
            out += self.more(shape, k) if self.cur_dtype.is_floating_point else self.integer(shape, k)
        if self.cur_dtype != torch.float32:
            # Modules with float32 weights on a float16/float64/bfloat16 input: what torch 1.13
            # answers is no reference (meta keeps float16 through a Conv, promotes to float32
            # through LayerNorm/GroupNorm; the CPU lacks the Half kernels; CUDA raises for Conv).
            out = [(m, st) for m, st in out
                   if (not m or st.get("call") not in m or m[st["call"]]["type"] in self.NO_WEIGHTS)
                   and st.get("op") not in ("layer_norm", "group_norm", "batch_norm")]
            out.append(({}, {"op": "to", "args": ["h"], "dtype": "float32"}))
        return out

    def more(self, shape, k):
        """Candidates for ops and modules less common than the ones above (float input)."""
        r = self.r
        nd = len(shape)
        c = shape[1]
        mname = "m%d" % k
        out = []
        d = r.randrange(1, nd)
        # no float16: the CPU of torch 1.13 lacks most Half kernels, and meta alone is too lax
        # (F.linear on a 5-d float64 input with float32 weights passes on meta)
        out.append(({}, {"op": "softmax", "args": ["h", -1], "dtype": r.choice(["float64", "bfloat16"])}))
        out.append(({}, {"op": "to", "args": ["h"], "dtype": r.choice(["float64", "bfloat16"])}))
        out.append(({}, {"op": "argmax", "args": ["h"], "dim": d, "keepdim": r.random() < 0.5}))
        out.append(({}, {"op": "max", "args": ["h"], "dim": d, "out": ["h", "idx"]}))
        out.append(({}, {"op": "topk", "args": ["h", r.randint(1, max(1, shape[d]))], "dim": d,
                         "out": ["h", "idx"]}))
        out.append(({}, {"op": r.choice(["var", "std", "amax", "logsumexp"]), "args": ["h", d],
                         "keepdim": r.random() < 0.5}))
        out.append(({}, {"op": "cumsum", "args": ["h", d]}))
        out.append(({}, {"op": "flip", "args": ["h", [d]]}))
        out.append(({}, {"op": "roll", "args": ["h", 1, d]}))
        out.append(({}, {"op": "clamp", "args": ["h"], "min": -1.0, "max": 1.0}))
        out.append(({}, {"op": r.choice(["exp", "abs", "neg", "square", "rsqrt", "sin", "floor"]),
                         "args": ["h"]}))
        out.append(({}, {"op": "pow", "args": ["h", 2]}))
        out.append(({}, {"op": "stack", "args": [["h", "h"]], "dim": r.randrange(0, nd + 1)}))
        out.append(({}, {"op": "masked_fill", "args": ["h", "hq", 0.5],
                         "pre": {"op": "gt", "args": ["h", 0]}}))
        out.append(({}, {"op": "where", "args": ["hq", "h", 0.0],
                         "pre": {"op": "lt", "args": ["h", 0.5]}}))
        out.append(({}, {"op": "add", "args": ["h", "hq"],
                         "pre": {"op": "mean", "args": ["h", d], "keepdim": True}}))
        out.append(({}, {"op": "narrow", "args": ["h", d, 0, max(1, shape[d] // 2)]}))
        out.append(({}, {"op": "select", "args": ["h", d, shape[d] - 1]}))
        out.append(({}, {"op": "squeeze", "args": ["h"] + ([d] if r.random() < 0.5 else [])}))
        out.append(({}, {"op": "expand", "args": ["h"] + [-1] * nd}))
        out.append(({}, {"op": "repeat", "args": ["h"] + [1] * (nd - 1) + [2]}))
        out.append(({}, {"op": "contiguous", "args": ["h"]}))
        out.append(({}, {"op": "normalize", "args": ["h"], "dim": d}))
        out.append(({}, {"op": "layer_norm", "args": ["h", [shape[-1]]]}))
        out.append(({}, {"op": "dropout", "args": ["h"], "p": 0.3, "training": False}))
        out.append(({}, {"op": "index_select", "args": ["h", d, "hq"],
                         "pre": {"op": "arange", "args": [max(1, shape[d] // 2)]}}))
        out.append(({mname: {"type": "Softmax", "dim": d}}, {"call": mname}))
        out.append(({mname: {"type": "LogSoftmax", "dim": d}}, {"call": mname}))
        if nd == 4:
            out.append(({}, {"op": "einsum", "args": ["bchw->bhwc", "h"]}))
            out.append(({}, {"op": "interpolate", "args": ["h"], "scale_factor": r.choice([1.5, 0.7, 3]),
                             "mode": r.choice(["nearest", "bilinear", "bicubic"])}))
            out.append(({}, {"op": "interpolate", "args": ["h"], "size": [r.randint(1, 20), r.randint(1, 20)],
                             "mode": "bilinear", "align_corners": r.random() < 0.5}))
            out.append(({mname: {"type": "Upsample", "scale_factor": r.choice([2, 1.5]),
                                 "mode": "bilinear", "align_corners": True}}, {"call": mname}))
            out.append(({mname: {"type": "MaxPool2d", "kernel_size": 2, "return_indices": True}},
                        {"call": mname, "out": ["h", "idx"]}))
            out.append(({mname: {"type": "AdaptiveMaxPool2d", "output_size": [r.randint(1, 4), 3]}},
                        {"call": mname}))
            out.append(({mname: {"type": "AvgPool2d", "kernel_size": 3, "stride": 2,
                                 "divisor_override": 2}}, {"call": mname}))
            out.append(({mname: {"type": r.choice(["ZeroPad2d", "ReplicationPad2d", "ReflectionPad2d"]),
                                 "padding": r.choice([1, [1, 0, 2, 1]])}}, {"call": mname}))
            out.append(({mname: {"type": "Dropout2d", "p": 0.2}}, {"call": mname}))
            out.append(({mname: {"type": "Unfold", "kernel_size": r.choice([2, 3]),
                                 "stride": r.choice([1, 2]), "padding": r.choice([0, 1])}}, {"call": mname}))
            if shape[2] % 2 == 0 and shape[3] % 2 == 0:
                out.append(({mname: {"type": "PixelUnshuffle", "downscale_factor": 2}}, {"call": mname}))
            if c % 2 == 0:
                out.append(({mname: {"type": "ChannelShuffle", "groups": 2}}, {"call": mname}))
            out.append(({}, {"op": "unsqueeze", "args": ["h", 2]}))
            out.append(({mname: {"type": "LPPool2d", "norm_type": 2, "kernel_size": 2}}, {"call": mname}))
            out.append(({mname: {"type": "Unflatten", "dim": 1, "unflattened_size": [1, c]}}, {"call": mname}))
        if nd == 5:
            out.append(({mname: {"type": "Conv3d", "in_channels": c, "out_channels": r.randint(1, 6),
                                 "kernel_size": [1, 3, 3], "stride": r.choice([1, [1, 2, 2]]),
                                 "padding": r.choice([0, [0, 1, 1]])}}, {"call": mname}))
            out.append(({mname: {"type": "MaxPool3d", "kernel_size": [1, 2, 2]}}, {"call": mname}))
            out.append(({mname: {"type": "AvgPool3d", "kernel_size": 1, "stride": [1, 2, 2]}},
                        {"call": mname}))
            out.append(({mname: {"type": "BatchNorm3d", "num_features": c}}, {"call": mname}))
            out.append(({mname: {"type": "AdaptiveAvgPool3d", "output_size": [1, 2, 2]}}, {"call": mname}))
            out.append(({}, {"op": "squeeze", "args": ["h", 2]}))
        if nd == 3:
            L = shape[-1]
            out.append(({}, {"op": "einsum", "args": ["bij,bkj->bik", "h", "h"]}))
            out.append(({}, {"op": "bmm", "args": ["h", "ht"], "pre": {"op": "transpose",
                                                                       "args": ["h", 1, 2]}}))
            out.append(({mname: {"type": "Conv1d", "in_channels": c, "out_channels": r.randint(1, 8),
                                 "kernel_size": r.choice([2, 3, 4]), "padding": "same",
                                 "dilation": r.choice([1, 2])}}, {"call": mname}))
            out.append(({mname: {"type": "ConvTranspose1d", "in_channels": c, "out_channels": r.randint(1, 8),
                                 "kernel_size": r.choice([2, 3]), "stride": r.choice([1, 2]),
                                 "padding": r.choice([0, 1]), "dilation": r.choice([1, 2])}},
                        {"call": mname}))
            heads = [h for h in self.divisors(L) if h <= 4]
            out.append(({mname: {"type": "TransformerEncoderLayer", "d_model": L,
                                 "nhead": r.choice(heads), "dim_feedforward": r.randint(4, 32),
                                 "dropout": 0.0, "batch_first": True,
                                 "norm_first": r.random() < 0.5}}, {"call": mname}))
            out.append(({mname: {"type": "GRU", "input_size": L, "hidden_size": r.randint(2, 8),
                                 "batch_first": r.random() < 0.5}},
                        {"call": mname, "out": ["h", "state"]}))
            out.append(({mname: {"type": "LSTM", "input_size": L, "hidden_size": r.randint(4, 8),
                                 "proj_size": r.randint(1, 3), "batch_first": True}},
                        {"call": mname, "out": ["h", "state"]}))
            out.append(({mname: {"type": "Upsample", "scale_factor": 2, "mode": "linear"}}, {"call": mname}))
            out.append(({mname: {"type": "ReflectionPad1d", "padding": [2, 1]}}, {"call": mname}))
            out.append(({mname: {"type": "InstanceNorm1d", "num_features": c}}, {"call": mname}))
            out.append(({mname: {"type": "Conv1d", "in_channels": c, "out_channels": c,
                                 "kernel_size": 3, "padding": 2, "padding_mode": "circular"}}, {"call": mname}))
        if nd == 2:
            out.append(({mname: {"type": "Bilinear", "in1_features": shape[-1], "in2_features": shape[-1],
                                 "out_features": r.randint(1, 8)}}, {"call": mname, "args": ["h", "h"]}))
            out.append(({}, {"op": "outer", "args": ["hq", "hq"],
                             "pre": {"op": "select", "args": ["h", 0, 0]}}))
            out.append(({}, {"op": "mm", "args": ["h", "ht"], "pre": {"op": "t", "args": ["h"]}}))
            out.append(({mname: {"type": "Unflatten", "dim": 1, "unflattened_size": [1, shape[-1]]}},
                        {"call": mname}))
        return out

    def integer(self, shape, k):
        """Candidates for an integer or bool 'h'."""
        r = self.r
        nd = len(shape)
        mname = "m%d" % k
        d = r.randrange(1, nd) if nd > 1 else 0
        out = [({}, {"op": "to", "args": ["h"], "dtype": "float32"}),
               ({}, {"op": "float", "args": ["h"]}),
               ({}, {"op": "sum", "args": ["h"], "dim": d}),
               ({}, {"op": "add", "args": ["h", 1]}),
               ({}, {"op": "mul", "args": ["h", 0.5]}),
               ({}, {"op": "eq", "args": ["h", 0]}),
               ({}, {"op": "clamp", "args": ["h"], "min": 0, "max": 3}),
               ({mname: {"type": "Embedding", "num_embeddings": 10, "embedding_dim": r.randint(2, 12)}},
                {"call": mname}),
               ({}, {"op": "one_hot", "args": ["hq"], "num_classes": 4,
                     "pre": {"op": "clamp", "args": ["h"], "min": 0, "max": 3}}),
               ({}, {"op": "true_divide", "args": ["h", 2]}),
               ({}, {"op": "floor_divide", "args": ["h", 2]})]
        return out

    def invalid(self, shape, k):
        """A step torch rejects on purpose (or, rarely, accepts: then it is just one more case)."""
        r = self.r
        nd = len(shape)
        mname = "m%d" % k
        c = shape[1] if nd >= 2 else 1
        opts = []
        if nd == 4:
            opts.append(({mname: {"type": "Conv2d", "in_channels": c + r.randint(1, 3),
                                  "out_channels": 4, "kernel_size": 3}}, {"call": mname}))
            opts.append(({mname: {"type": "Conv2d", "in_channels": c, "out_channels": 4,
                                  "kernel_size": max(shape[2], shape[3]) + r.randint(1, 3)}},
                         {"call": mname}))
            opts.append(({mname: {"type": "MaxPool2d", "kernel_size": max(shape[2], shape[3]) + 1}},
                         {"call": mname}))
            opts.append(({mname: {"type": "BatchNorm2d", "num_features": c + 1}}, {"call": mname}))
            opts.append(({}, {"op": "view", "args": ["ht", "N", -1],
                              "pre": {"op": "transpose", "args": ["h", 1, 3]}}))
            opts.append(({}, {"op": "cat", "args": [["h", "hp"]], "dim": 1,
                              "pre": {"op": "pad", "args": ["h", [0, 1]]}}))
        if nd == 3:
            opts.append(({mname: {"type": "Conv1d", "in_channels": c + 1, "out_channels": 4,
                                  "kernel_size": 1}}, {"call": mname}))
            opts.append(({mname: {"type": "Conv1d", "in_channels": c, "out_channels": 4,
                                  "kernel_size": shape[2] + 2}}, {"call": mname}))
            opts.append(({mname: {"type": "LSTM", "input_size": shape[-1] + 1, "hidden_size": 4,
                                  "batch_first": True}}, {"call": mname, "out": ["h", "state"]}))
            opts.append(({}, {"op": "matmul", "args": ["h", "h"]}))
        if nd >= 2:
            opts.append(({mname: {"type": "Linear", "in_features": shape[-1] + r.randint(1, 5),
                                  "out_features": 3}}, {"call": mname}))
            numel = 1
            for d in shape[1:]:
                numel *= d
            opts.append(({}, {"op": "reshape", "args": ["h", ["N", numel + 1]]}))
            opts.append(({}, {"op": "reshape", "args": ["h", [-1, 7, -1]]}))
            opts.append(({}, {"op": "softmax", "args": ["h"], "dim": nd + 1}))
            opts.append(({}, {"op": "permute", "args": ["h", list(range(nd - 1))]}))
            opts.append(({mname: {"type": "LayerNorm", "normalized_shape": shape[-1] + 1}}, {"call": mname}))
            opts.append(({}, {"op": "chunk", "args": ["h", 1], "dim": 1, "out": ["h", "h2"]}))
            opts.append(({}, {"op": "add", "args": ["h", "hq"],
                              "pre": {"op": "narrow", "args": ["h", nd - 1, 0, 1 if shape[-1] > 2 else 0]}}))
        opts.append(({}, {"op": "reshape", "args": ["h", [-1, math.prod(shape) + 1]]}))
        d = r.randrange(1, nd) if nd > 1 else 0
        if self.cur_dtype.is_floating_point:
            opts.append(({}, {"op": "mean", "args": ["hq"], "pre": {"op": "argmax", "args": ["h", d]}}))
            opts.append(({mname: {"type": "Embedding", "num_embeddings": 4, "embedding_dim": 3}}, {"call": mname}))
            opts.append(({}, {"op": "topk", "args": ["h", shape[d] + 1], "dim": d, "out": ["h", "i"]}))
            opts.append(({}, {"op": "select", "args": ["h", d, shape[d]]}))
            opts.append(({}, {"op": "narrow", "args": ["h", d, 1, shape[d]]}))
            opts.append(({}, {"op": "expand", "args": ["h"] + [-1] * (nd - 1) + [shape[-1] + 1]}))
            opts.append(({}, {"op": "stack", "args": [["h", "hq"]],
                              "pre": {"op": "narrow", "args": ["h", d, 0, 1]}}))
            opts.append(({}, {"op": "einsum", "args": ["ij,jk->ik", "h", "h"]}))
            opts.append(({}, {"op": "matmul", "args": ["h", "hq"],
                              "pre": {"op": "to", "args": ["h"], "dtype": "float64"}}))
            if nd == 3:
                opts.append(({mname: {"type": "Upsample", "scale_factor": 2, "mode": "bilinear"}},
                             {"call": mname}))
                opts.append(({mname: {"type": "TransformerEncoderLayer", "d_model": shape[-1] + 2,
                                      "nhead": 1, "batch_first": True}}, {"call": mname}))
            if nd == 4:
                opts.append(({mname: {"type": "PixelShuffle", "upscale_factor": 3}}, {"call": mname}))
                opts.append(({mname: {"type": "GroupNorm", "num_groups": 1, "num_channels": c + 1}},
                             {"call": mname}))
                opts.append(({mname: {"type": "ReflectionPad2d", "padding": max(shape[2], shape[3])}},
                             {"call": mname}))
            opts.append(({mname: {"type": "Linear", "in_features": shape[-1], "out_features": 2}},
                         {"call": mname, "args": ["hq"],
                          "pre": {"op": "to", "args": ["h"], "dtype": "float64"}}))
        else:
            opts.append(({mname: {"type": "Linear", "in_features": shape[-1], "out_features": 2}},
                         {"call": mname}))
            opts.append(({}, {"op": "softmax", "args": ["h", -1]}))
        return r.choice(opts)

    def one(self, idx):
        r = self.r
        kind = r.choice(["img", "img", "img", "seq", "seq", "vec", "tokens"])
        if kind == "img":
            shape = ["N", r.choice([1, 3, 4, 6, 8]), r.randint(5, 24), r.randint(5, 24)]
        elif kind == "seq":
            shape = ["N", r.choice([2, 4, 6, 8]), r.choice([r.randint(4, 30), "L"])]
        else:
            shape = ["N", r.randint(2, 40)]
        if kind == "tokens":
            shape = ["N", r.choice([3, "T"])]
            desc = {"inputs": {"x": {"shape": shape, "dtype": "int64"}},
                    "modules": {"emb": {"type": "Embedding", "num_embeddings": 20,
                                        "embedding_dim": r.choice([4, 6, 8])}},
                    "graph": [{"out": "h", "call": "emb", "args": ["x"]}]}
        elif r.random() < 0.5:
            desc = {"inputs": {"x": {"shape": shape}}, "modules": {}, "graph": [
                {"out": "h", "op": "relu", "args": ["x"]}]}
        else:
            desc = {"inputs": {"x": {"shape": shape}}, "modules": {"act": {"type": "ReLU"}},
                    "graph": [{"out": "h", "call": "act", "args": ["x"]}]}
        cur = self.shape_after(desc)[0]
        env_shapes = {"x": cur}
        length = r.randint(2, 9)
        want_invalid = r.random() < 0.25
        k = 0
        tries = 0
        while len(desc["graph"]) < length and tries < 60:
            tries += 1
            mods, step = r.choice(self.candidates(cur, env_shapes, k))
            trial = copy.deepcopy(desc)
            self.add(trial, mods, step, k)
            shapes = self.shape_after(trial)
            if shapes is None:
                if r.random() < 0.03:  # keep an accidental error now and then
                    return trial
                continue
            desc = trial
            k += 1
            prev = cur
            cur = shapes[0]
            if len(prev) == len(cur) and r.random() < 0.5:
                self.keep_previous(desc, 2 if "pre" in step else 1, "s%d" % k)
                env_shapes["s%d" % k] = prev
        if want_invalid:
            mods, step = self.invalid(cur, k)
            self.add(desc, mods, step, k)
        if r.random() < 0.1 and desc["modules"]:
            # sometimes: no graph at all when the chain is only module calls
            if all(s.get("call") for s in desc["graph"][1:]) and all(
                    "out" not in s or s["out"] == "h" for s in desc["graph"][1:]):
                calls = [s["call"] for s in desc["graph"][1:]]
                if len(set(calls)) == len(calls) and list(desc["modules"]) == calls and all(
                        s.get("args", ["h"]) == ["h"] for s in desc["graph"][1:]):
                    del desc["graph"]
        if not desc["modules"]:
            del desc["modules"]
        return desc

    def keep_previous(self, desc, new_steps, name):
        """Renames the step that last produced 'h' before the last new_steps steps to `name`,
        and the reads of 'h' after it, so that the old value stays available as `name`."""
        g = desc["graph"]
        first_new = len(g) - new_steps
        for j in range(first_new - 1, -1, -1):
            out = g[j].get("out")
            if out == "h" or (isinstance(out, list) and "h" in out):
                g[j]["out"] = name if out == "h" else [name if o == "h" else o for o in out]
                break
        else:
            return
        for s in g[j + 1:]:
            s["args"] = json.loads(json.dumps(s.get("args", [])).replace('"h"', json.dumps(name)))
            if s is not g[-1] and (s.get("out") == "h" or (isinstance(s.get("out"), list)
                                                            and "h" in s["out"])):
                break

    def add(self, desc, mods, step, k):
        step = dict(step)
        pre = step.pop("pre", None)
        if pre is not None:
            used = list(_strings(step.get("args", [])))
            name = [a for a in ["ht", "hp", "hq"] if a in used]
            desc["graph"].append(dict(pre, out=name[0] if name else "ht"))
        desc["modules"].update(mods)
        step.setdefault("args", ["h"])
        step.setdefault("out", "h")
        desc["graph"].append(step)


def random_cases(n, seed, device):
    rng = random.Random(seed)
    gen = RandomGen(rng, device)
    out = []
    for i in range(n):
        out.append(("random_%03d" % i, gen.one(i)))
    return out


# ==========================================================================
# Driver
# ==========================================================================
def fixture_cases():
    """Every fixtures/models/*.json but those tinspect-export wrote ("lifetime": "last_use"): their
    "Module" containers, attr and Python-level steps are held to PyTorch by export_conformance.py,
    against the real model, which this interpreter cannot rebuild from the description."""
    out = []
    for path in sorted(glob.glob(os.path.join(MODELS_DIR, "*.json"))):
        with open(path) as f:
            desc = json.load(f)
        if desc.get("lifetime") == "last_use":
            continue
        out.append((os.path.splitext(os.path.basename(path))[0], desc, path))
    return out


def bind_for(desc):
    return {s: DEFAULT_BIND.get(s, 4) for s in symbols_of(desc)}


# Constructor arguments added after torch 1.13: (module type, argument).
NEWER_CTOR_ARGS = [("LayerNorm", "bias"), ("TransformerEncoderLayer", "bias"),
                   ("TransformerDecoderLayer", "bias"), ("Transformer", "bias")]


def _module_specs(desc):
    def walk(spec):
        if isinstance(spec, dict):
            if "type" in spec:
                yield spec
            for v in spec.values():
                yield from walk(v)
        elif isinstance(spec, list):
            for v in spec:
                yield from walk(v)
    yield from walk(desc.get("modules") or {})
    for d in (desc.get("defs") or {}).values():
        yield from walk(d.get("modules") or {})


def uses_missing_torch_feature(desc):
    """A reason to skip a description this torch cannot run, or None."""
    text = json.dumps(desc)
    if "scaled_dot_product_attention" in text and not hasattr(F, "scaled_dot_product_attention"):
        return "torch %s has no scaled_dot_product_attention" % torch.__version__
    if '"enable_gqa"' in text:
        return "torch %s has no enable_gqa" % torch.__version__
    import inspect
    for spec in _module_specs(desc):
        for t, arg in NEWER_CTOR_ARGS:
            cls = getattr(nn, t, None)
            if spec.get("type") == t and arg in spec and cls is not None \
                    and arg not in inspect.signature(cls.__init__).parameters:
                return "torch %s has no %s(%s=)" % (torch.__version__, t, arg)
    return None


def print_torch(name, desc, bind, device):
    kind, res = torch_outcome(desc, bind, device)
    print("== %s  bind %s" % (name, bind))
    if kind == "desc":
        print("   description error: %s" % res)
        return
    steps = res["steps"] if kind == "ok" else getattr(res, "steps", [])
    for i, step, ts in steps:
        label = ("call " + step["call"]) if "call" in step else ("op " + step["op"])
        print("   %3d %-28s -> %s" % (i, label[:28], ", ".join(
            "%s %s" % (list(t.shape), dtype_name(t.dtype)) for t in ts)))
    if kind == "step":
        print("   step %d raises %s: %s" % (res.step, res.kind, res.message.splitlines()[0][:150]))
    else:
        st = state_list(res["model"])
        nparam = sum(math.prod(s) for _, s, _, k, _ in st if k == "parameter")
        uniq = sum(p.numel() for p in res["model"].parameters())
        print("   outputs %s; state_dict %d entries, %d parameter elements (%d unique)" % (
            [list(t.shape) for t in res["outputs"]], len(st), nparam, uniq))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("tinspect", nargs="?", default="./tinspect")
    ap.add_argument("--only", metavar="SUBSTR")
    ap.add_argument("--random", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20241121)
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--torch-only", action="store_true")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--strict-coverage", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    cases = [(n, d, p) for n, d, p in fixture_cases()]
    cases += [(n, d, None) for n, d in handwritten_cases().items()]
    cases += [(n, d, None) for n, d in random_cases(a.random, a.seed, a.device)]
    if a.only:
        cases = [c for c in cases if a.only in c[0]]

    if a.torch_only:
        for name, desc, _ in cases:
            reason = uses_missing_torch_feature(desc)
            if reason:
                print("== %s  skipped: %s" % (name, reason))
                continue
            print_torch(name, desc, bind_for(desc), a.device)
        return 0

    binary = os.path.abspath(a.tinspect)
    if not os.access(binary, os.X_OK):
        print("error: %s is not an executable" % a.tinspect)
        return 2
    p = subprocess.run([binary, "shapes", "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        print("skipped: %s has no 'shapes' command" % a.tinspect)
        return 0

    tmp = a.keep or tempfile.mkdtemp(prefix="tinspect-shapes-")
    os.makedirs(tmp, exist_ok=True)
    # run a copy: a rebuild of the binary during the run would mix two versions
    snapshot = os.path.join(tempfile.mkdtemp(prefix="tinspect-bin-"), "tinspect")
    shutil.copy2(binary, snapshot)
    binary = snapshot
    passed = failed = skipped = 0
    failures = []
    unsupported = collections.Counter()
    for name, desc, path in cases:
        reason = uses_missing_torch_feature(desc)
        if reason:
            print("SKIP  %-34s %s" % (name, reason))
            skipped += 1
            continue
        if path is None:
            path = os.path.join(tmp, name + ".json")
            with open(path, "w") as f:
                json.dump(desc, f, indent=1)
        bind = bind_for(desc)
        diff, kind, res = check_case(binary, name, desc, path, bind, a.device, a.verbose,
                                     a.strict_coverage)
        what = {"ok": "ok", "step": "error at step %d" % getattr(res, "step", -1),
                "desc": "description error"}[kind]
        if not diff.fails and not a.keep and path.startswith(tmp + os.sep):
            os.unlink(path)  # only failing descriptions stay, for their paths in the report
        if diff.unsupported and not diff.fails:
            skipped += 1
            unsupported[diff.unsupported] += 1
            if a.verbose or not name.startswith("random_"):
                print("UNSUP %-34s tinspect does not know %s%s" % (
                    name, diff.unsupported, ("  [%s]" % path) if os.path.exists(path) else ""))
            continue
        if diff.fails:
            failed += 1
            failures.append((name, path, diff))
            print("FAIL  %-34s torch: %-20s %s  [%s]" % (name, what, diff.fails[0][:200], path))
            if a.verbose:
                for m in diff.fails[1:]:
                    print("        " + m[:300])
        else:
            passed += 1
            if a.verbose or not name.startswith("random_"):
                print("ok    %-34s torch: %s" % (name, what))
        if a.verbose:
            for m in diff.notes:
                print("  NOTE " + m[:300])
    if unsupported:
        print("skipped, not supported by tinspect (--strict-coverage fails them): %s" % ", ".join(
            "%s x%d" % (k, n) for k, n in unsupported.most_common()))
    if failures:
        # group the first differences: numbers, quoted names and paths blanked out
        groups = collections.Counter()
        example = {}
        for name, path, diff in failures:
            key = re.sub(r"/\S+", "PATH", diff.fails[0])
            key = re.sub(r"'[^']*'", "'_'", key)
            key = re.sub(r"-?\d+", "#", key)[:150]
            groups[key] += 1
            example.setdefault(key, name)
        print("failures by kind of first difference:")
        for key, n in groups.most_common():
            print("  %4d  %s  (e.g. %s)" % (n, key, example[key]))
    shutil.rmtree(os.path.dirname(snapshot), ignore_errors=True)
    if not a.keep and not os.listdir(tmp):
        os.rmdir(tmp)
        print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    else:
        print("%d passed, %d failed, %d skipped (descriptions in %s)" % (passed, failed, skipped, tmp))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
