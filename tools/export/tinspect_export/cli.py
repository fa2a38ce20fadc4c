"""tinspect-export's command line."""
import argparse
import difflib
import importlib
import json
import os
import sys

from .errors import ExportError
from .write import FileExists

USAGE = "tinspect-export PACKAGE.MODULE:FACTORY [--kwargs JSON] --input NAME=SHAPE[:DTYPE] ... [-o FILE]"

DESCRIPTION = """\
Build a PyTorch model by calling FACTORY (on the meta device when it can, so
a large model costs nothing), trace one forward and write a tinspect model
description. SHAPE is 8x3x224x224 or N,3,224,224: a non-integer size is a
symbol, kept symbolic in the description. DTYPE defaults to float32.

exit status: 0 written, 1 the model cannot be exported, 2 usage error."""

EPILOG = """\
examples:
  tinspect-export torchvision.models:resnet50 --kwargs '{"weights": null}' \\
      --input x=N,3,224,224 -o resnet50.json
  tinspect-export mymodels.gpt:GPT --input idx=B,T:int64 --symbolic B=2,T=16 -o gpt.json"""


#: Largest model (bytes of tensors) that is moved to the CPU when its forward fails on meta.
CPU_RETRY_LIMIT = 2 << 30


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write("tinspect-export: %s\n" % message)
        sys.exit(2)


def parser():
    p = _Parser(prog="tinspect-export", usage=USAGE, description=DESCRIPTION, epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("factory", metavar="PACKAGE.MODULE:FACTORY",
                   help="a callable returning the model, e.g. torchvision.models:resnet50")
    p.add_argument("--kwargs", default="{}", metavar="JSON", help="keyword arguments for FACTORY, a JSON object")
    p.add_argument("--input", action="append", default=[], metavar="NAME=SHAPE[:DTYPE]",
                   help="one forward argument, in order; repeat for several")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write the description (default: stdout)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    p.add_argument("--tracer", choices=("auto", "fx", "record"), default="auto",
                   help="auto (default): torch.fx, and the record tracer when fx fails")
    p.add_argument("--mode", choices=("eval", "train"), default="eval", help="the model's mode when traced")
    p.add_argument("--symbolic", metavar="N=2,T=16",
                   help="the values the symbols take when tracing (default 2 each); a bare name "
                        "only checks that the symbol occurs")
    p.add_argument("--device", choices=("auto", "meta", "cpu"), default="auto",
                   help="where FACTORY builds the model: meta, or cpu; auto tries meta, then cpu")
    return p


def _symbolic(text, symbols, p):
    out = {}
    for item in filter(None, (s.strip() for s in (text or "").split(","))):
        name, _, value = item.partition("=")
        if name not in symbols:
            p.error("--symbolic: %s is no symbol of the inputs (%s)" % (name, ", ".join(symbols) or "none"))
        if value:
            try:
                out[name] = int(value)
            except ValueError:
                p.error("--symbolic: %s is not an integer" % value)
            if out[name] < 1:
                p.error("--symbolic: %s must be at least 1" % name)
    return out


def _factory(spec, p):
    mod, sep, attr = spec.partition(":")
    if not sep or not mod or not attr:
        p.error("FACTORY is PACKAGE.MODULE:NAME, e.g. torchvision.models:resnet50")
    # the current directory first, as `python -m` and `python script.py` have it: models.py beside you
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj = importlib.import_module(mod)
    except Exception as e:
        p.error("cannot import %s: %s: %s" % (mod, type(e).__name__, e))
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n, None))]
            near = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            p.error("%s has no %s%s" % (mod, attr, "; did you mean '%s:%s'?" % (mod, near[0]) if near else ""))
        obj = getattr(obj, part)
    if not callable(obj):
        p.error("%s is not callable" % spec)
    return obj


def build(factory, kwargs, device, say):
    """Call factory(**kwargs) on the meta device, or the CPU when that fails.

    auto tries, in order: every factory call on meta; the factory on the CPU
    with parameters and buffers moved to meta as they are registered; the
    CPU. Each fallback is said through say().
    """
    from .meta import meta_factories, meta_parameters
    tries = []
    if device in ("auto", "meta"):
        tries.append(("the meta device", meta_factories))
    if device == "auto":
        tries.append(("the CPU with its tensors moved to meta as registered", meta_parameters))
    if device in ("auto", "cpu"):
        tries.append(("the CPU", None))
    for i, (where, context) in enumerate(tries):
        try:
            if context is None:
                model = factory(**kwargs)
            else:
                with context():
                    model = factory(**kwargs)
        except Exception as e:
            why = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            if i + 1 == len(tries):
                raise ExportError("the factory fails on %s: %s" % (where, why)) from None
            say("tinspect-export: the factory fails on %s (%s); trying %s" % (where, why, tries[i + 1][0]))
            continue
        if not isinstance(model, _module_type()):
            raise ExportError("the factory returned a %s, not a torch.nn.Module" % type(model).__name__)
        return model


def _on_meta(model):
    from .meta import model_device
    return model_device(model).type == "meta"


def to_cpu(model):
    """Give a meta model uninitialised CPU storage, keeping tied parameters tied."""
    from .modules import tied
    ties = tied(model)
    model.to_empty(device="cpu")
    for name, first in ties.items():
        owner, _, leaf = name.rpartition(".")
        src_owner, _, src_leaf = first.rpartition(".")
        src = getattr(model.get_submodule(src_owner) if src_owner else model, src_leaf)
        setattr(model.get_submodule(owner) if owner else model, leaf, src)


def _module_type():
    import torch
    return torch.nn.Module


def _have_torch():
    """None when torch imports, else one line on which Python ran and how to choose another."""
    try:
        import torch  # noqa: F401
        return None
    except ImportError as e:
        return ("tinspect-export: %s cannot import torch (%s). tinspect-export runs in the Python environment "
                "where torch and your model's code live: set TINSPECT_PYTHON=/path/to/that/python, or run "
                "'python -m tinspect_export ...' with that Python (PYTHONPATH=%s)"
                % (sys.executable, e, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main(argv=None):
    p = parser()
    a = p.parse_args(argv)
    why = _have_torch()
    if why:
        print(why, file=sys.stderr)
        return 2
    say = lambda s: print(s, file=sys.stderr)  # noqa: E731
    try:
        kwargs = json.loads(a.kwargs)
    except ValueError as e:
        p.error("--kwargs is not JSON: %s" % e)
    if not isinstance(kwargs, dict):
        p.error("--kwargs is a JSON object")
    if not a.input:
        p.error("give the forward's inputs with --input NAME=SHAPE[:DTYPE]")
    from . import export, parse_input
    inputs, symbols = {}, []
    for item in a.input:
        name, sep, spec = item.partition("=")
        if not sep or not name.isidentifier():
            p.error("--input is NAME=SHAPE[:DTYPE], e.g. x=N,3,224,224")
        if name in inputs:
            p.error("--input %s given twice" % name)
        try:
            shape, _ = parse_input(spec)
        except ValueError as e:
            p.error("--input %s: %s" % (name, e))
        symbols += [s for s in shape if isinstance(s, str) and s not in symbols]
        inputs[name] = spec
    bindings = _symbolic(a.symbolic, symbols, p)
    factory = _factory(a.factory, p)
    try:
        model = build(factory, kwargs, a.device, say)
        try:
            result = export(model, inputs, None, tracer=a.tracer, symbolic=bindings, mode=a.mode)
        except ExportError as e:
            if not _on_meta(model) or "meta" not in str(e):
                raise
            size = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
            if size > CPU_RETRY_LIMIT:
                raise ExportError("%s; running it on the CPU would take %.1f GiB: export it from Python "
                                  "with a model that runs on meta" % (e, size / 2**30)) from None
            say("tinspect-export: the forward fails on the meta device (%s); running it on the CPU" % e)
            to_cpu(model)
            result = export(model, inputs, None, tracer=a.tracer, symbolic=bindings, mode=a.mode)
        from .write import dumps, write_json
        if a.output and a.output != "-":
            write_json(result.description, a.output, force=a.force)
        else:
            sys.stdout.write(dumps(result.description))
    except FileExists as e:
        say("tinspect-export: %s" % e)
        return 1
    except ExportError as e:
        # one line: PyTorch's message, without what fx appends ("While executing %conv1 ...")
        lines = [l for l in str(e).splitlines() if l.strip()]
        say("tinspect-export: %s" % (lines[0] if lines else "the model cannot be exported"))
        return 1
    if result.fallback:
        say("tinspect-export: fx cannot trace the model (%s); used the record tracer" % result.fallback)
    say("tinspect-export: " + result.summary())
    return 0
