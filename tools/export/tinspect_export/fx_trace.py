"""The fx tracer: torch.fx.symbolic_trace, then one interpretation per run.

Leaves are fx's default (torch.nn modules other than Sequential) plus every
type tinspect knows. Nodes map to steps: get_attr -> "attr", a known leaf
-> "call", another leaf -> "opaque" with "module", call_function and
call_method -> "op" (operator.* on tensors get torch names, on ints
"operator.*"). A function tinspect does not know (torchvision's fx-wrapped
helpers) is expanded by recording its torch calls; if that fails it is
opaque. Sizes stay symbolic through fx's size/getitem nodes.
"""
import builtins
import operator

import torch
import torch.fx

from .errors import ExportError
from .known import op_known
from .modules import class_name, known_type
from .names import INPLACE_AS, OPERATOR_INT, OPERATOR_TENSOR, TRAINING_ARG, callable_name, op_name, operator_target
from .record import _is_view, _mark_training, record_function
from .steps import Ref, Step, snapshot

# getattr(x, NAME) results that are constants of the run, not graph values.
_FOLDED_ATTRS = frozenset(("dtype", "device", "is_cuda", "layout", "requires_grad", "is_sparse", "is_quantized"))


class _Tracer(torch.fx.Tracer):
    """fx's tracer, also noting on each node the module whose forward made it
    (node.meta["tinspect_scope"]; 2.x's nn_module_stack, which 1.13 lacks)."""

    def __init__(self):
        super().__init__()
        self._scope = [""]

    def is_leaf_module(self, m, qualname):
        return known_type(m) is not None or super().is_leaf_module(m, qualname)

    def call_module(self, m, forward, args, kwargs):
        self._scope.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._scope.pop()

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        # a leaf's own call node is made inside its call_module: its scope is its parent's
        scope = self._scope[-2] if node.op == "call_module" and len(self._scope) > 1 else self._scope[-1]
        node.meta["tinspect_scope"] = scope
        return node


def trace(model):
    """A GraphModule of model; raises whatever fx raises."""
    tracer = _Tracer()
    graph = tracer.trace(model)
    return torch.fx.GraphModule(tracer.root, graph)


class _Values(torch.fx.Interpreter):
    """Runs the graph, keeping every node's value."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}
        self.snaps = {}

    def run_node(self, n):
        try:
            v = super().run_node(n)
        except Exception as e:
            raise ExportError("%s: %s: %s" % (_where(self.module, n), type(e).__name__, e)) from None
        self.values[n] = v
        self.snaps[n] = snapshot(v)
        return v


def _where(gm, n):
    if n.op == "call_module":
        return "%s (%s)" % (n.target, type(gm.get_submodule(n.target)).__name__)
    stack = n.meta.get("nn_module_stack")
    path = next(reversed(stack), None) if stack else None
    return "%s%s" % (path + ": " if path else "", n.format_node())


def run(gm, inputs):
    """(node -> value, node -> snapshot of the value when made) for one run
    on inputs (name -> tensor, in order)."""
    interp = _Values(gm)
    interp.run(*inputs.values())
    return interp.values, interp.snaps


class Builder:
    """Turns the graph plus one run's values into a tape of steps."""

    def __init__(self, gm, model, input_names, tensor_paths, training):
        self.gm, self.model, self.training = gm, model, training
        self.input_names = input_names
        self.tensor_paths = tensor_paths
        self.expanded = []   # (step index, function name, reason) of opaque functions
        self.constants = []  # (name, tensor): fx constants, root buffers

    def names(self):
        """Node -> graph name: placeholders take the input names."""
        out, used = {}, set()
        ph = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, name in zip(ph, self.input_names):
            out[n] = name
            used.add(name)
        for n in self.gm.graph.nodes:
            if n not in out and n.op not in ("output", "placeholder"):
                name = n.name
                while name in used:
                    name += "_"
                out[n] = name
                used.add(name)
        return out

    def tape(self, values, snaps):
        """(steps, outputs) for one run."""
        names = self.names()
        used = set(names.values())
        folded = {}
        steps = []
        self.expanded = []
        self.constants = []

        def arg(v):
            if isinstance(v, torch.fx.Node):
                if v in folded:
                    return folded[v]
                return Ref(names[v])
            if isinstance(v, (list, tuple)):
                t = [arg(x) for x in v]
                return t if isinstance(v, list) else tuple(t)
            if isinstance(v, slice):
                return slice(arg(v.start), arg(v.stop), arg(v.step))
            if isinstance(v, dict):
                return {k: arg(x) for k, x in v.items()}
            if isinstance(v, torch.Size):
                return list(v)
            return v

        outputs = None
        views = {}  # getitem node of a tensor -> (its base's Ref, the index, the base node)
        made = (0, None)  # (first step, node) of the node before: its steps take its scope

        def scope_steps(upto):
            first, node = made
            if node is not None:
                for st in steps[first:upto]:
                    if st.scope is None:
                        st.scope = node.meta.get("tinspect_scope")

        for n in self.gm.graph.nodes:
            scope_steps(len(steps))
            made = (len(steps), n)
            val = snaps.get(n)
            where = _where(self.gm, n)
            if n.op == "placeholder":
                if n not in names:  # an argument left to its default
                    folded[n] = n.args[0] if n.args else None
                continue
            if n.op == "output":
                outputs = arg(n.args[0])
                continue
            if n.op == "get_attr":
                path = n.target
                if not _has_attr(self.model, path):
                    self.constants.append((path, val))
                steps.append(Step("attr", path, out=names[n], values=val, where=where))
                continue
            a = [arg(x) for x in n.args]
            k = {kk: arg(v) for kk, v in n.kwargs.items()}
            if n.op == "call_module":
                m = self.gm.get_submodule(n.target)
                if known_type(m):
                    steps.append(Step("call", n.target, a, k, out=names[n], values=val, where=where))
                else:
                    steps.append(Step("opaque", class_name(m), a, k, out=names[n], values=val, module=n.target,
                                      where=where))
                continue
            if n.op == "call_method":
                op = n.target
                inplace = op.endswith("_") and not op.endswith("__") and n.args and isinstance(n.args[0], torch.fx.Node)
                if inplace:
                    op = INPLACE_AS.get(op, op[:-1])
                if not op_known(op):
                    steps.append(Step("opaque", "torch.Tensor." + n.target, a, k, out=names[n], values=val,
                                      where=where))
                    continue
                _mark_training(op, a, k, self.training)
                steps.append(Step("op", op, a, k, out=names[n], values=val, where=where))
                if inplace and n.args[0] in views:
                    # x[i].zero_(): the out-of-place op made a new tensor; x[i] = it writes it back
                    base, index, base_node = views[n.args[0]]
                    steps.append(Step("op", "setitem", [base, index, Ref(names[n])], out=names[base_node],
                                      values=snaps.get(base_node), where=where))
                continue
            # call_function
            target = n.target
            opt = operator_target(target)
            argvals = [values.get(x) if isinstance(x, torch.fx.Node) else x for x in n.args]
            if target is builtins.getattr:
                attr = n.args[1]
                if attr in _FOLDED_ATTRS:
                    folded[n] = val
                    continue
                if attr == "shape":
                    steps.append(Step("op", "size", [a[0]], out=names[n], values=val, where=where))
                    continue
                if attr in ("T", "mT"):
                    op = "mT" if attr == "mT" else ("t" if argvals[0].dim() <= 2 else "permute")
                    extra = [list(range(argvals[0].dim()))[::-1]] if op == "permute" else []
                    steps.append(Step("op", op, [a[0]] + extra, out=names[n], values=val, where=where))
                    continue
                raise ExportError("%s: getattr(%r) is not something a description can say" % (where, attr))
            if opt is not None:
                tensors = any(isinstance(v, torch.Tensor) for v in argvals)
                if opt == "getitem":
                    steps.append(Step("op", "getitem", a, out=names[n], values=val, where=where))
                    if (isinstance(argvals[0], torch.Tensor) and isinstance(n.args[0], torch.fx.Node)
                            and isinstance(values.get(n), torch.Tensor) and _is_view(values[n])):
                        views[n] = (a[0], a[1], n.args[0])
                    continue
                if tensors:
                    op = OPERATOR_TENSOR.get(opt)
                    if op and len(a) == 2 and not isinstance(argvals[0], torch.Tensor):
                        if op in ("add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne"):
                            a = [a[1], a[0]]
                        elif op == "sub":
                            op, a = "rsub", [a[1], a[0]]
                        elif op == "div":
                            recip = torch.reciprocal(argvals[1])
                            rname = names[n] + "_reciprocal"
                            steps.append(Step("op", "reciprocal", [a[1]], out=rname, values=recip, where=where))
                            op, a = "mul", [Ref(rname), a[0]]
                        elif op in ("pow", "matmul"):
                            pass
                        else:
                            op = None
                else:
                    op = OPERATOR_INT.get(opt)
                if op is None:
                    steps.append(Step("opaque", "operator." + opt, a, k, out=names[n], values=val, where=where))
                    continue
                steps.append(Step("op", op, a, k, out=names[n], values=val, where=where))
                continue
            op = op_name(target)
            if target is torch._assert:
                op = "_assert"
            if op is not None and op_known(op) and _is_torch_callable(target):
                _mark_training(op, a, k, self.training)
                steps.append(Step("op", op, a, k, out=names[n], values=val, where=where))
                continue
            if op == "stochastic_depth":
                _mark_training(op, a, k, self.training)
                steps.append(Step("op", op, a, k, out=names[n], values=val, where=where))
                continue
            steps.extend(self.expand(n, target, a, k, values, names, used, where))
        scope_steps(len(steps))
        return steps, outputs

    def expand(self, n, target, a, k, values, names, used, where):
        """Record target's torch calls as steps; opaque if recording fails."""
        def val(x):
            if isinstance(x, torch.fx.Node):
                return values[x]
            if isinstance(x, (list, tuple)):
                return type(x)(val(y) for y in x)
            if isinstance(x, dict):
                return {kk: val(y) for kk, y in x.items()}
            return x
        args = [val(x) for x in n.args]
        kwargs = {kk: val(v) for kk, v in n.kwargs.items()}
        known = {}
        for node, v in values.items():
            if isinstance(v, torch.Tensor) and node in names:
                known[id(v)] = (v, names[node])
        fname = callable_name(target)
        try:
            rec, result = record_function(target, args, kwargs, known, self.tensor_paths, self.training, used,
                                          self.constants)
            if not isinstance(result, torch.Tensor) or id(result) not in rec.names:
                raise ExportError("its result is not a recorded tensor")
            if rec.names[id(result)] in {nm for _, nm in known.values()}:
                raise ExportError("its result is one of its inputs")
            steps = rec.steps
            # The last value is the node's: name it as the node.
            from .steps import rename
            rename(steps, rec.names[id(result)], names[n])
            return steps
        except Exception as e:
            reason = "%s: %s" % (type(e).__name__, e)
            self.expanded.append((fname, reason))
            return [Step("opaque", fname, a, k, out=names[n], values=values.get(n), where=where)]


def _is_torch_callable(f):
    mod = getattr(f, "__module__", None) or ""
    qual = getattr(f, "__qualname__", "") or ""
    return mod.startswith("torch") or qual.startswith("_VariableFunctionsClass") or qual.startswith("_TensorBase") \
        or mod in ("", None) or f in vars(torch).values()


def _has_attr(model, path):
    obj = model
    for p in path.split("."):
        if not hasattr(obj, p):
            return False
        obj = getattr(obj, p)
    return True
