"""tinspect_export: write a tinspect model description from a live PyTorch model.

    from tinspect_export import export
    result = export(model, {"x": "N,3,224,224"}, "model.json")
    result.tracer      # "fx" or "record"
    result.opaque      # [(step index, module path or function, reason)]
    result.bindings    # {"N": 2}: the values the symbols had when tracing
    result.reference   # per graph step, [(shape, dtype) or None per output]

See export() for the arguments. torch is imported when export is first
used, not with the package, so `tinspect-export --help` works without it.
"""
from .errors import ExportError

__all__ = ["export", "ExportResult", "ExportError", "parse_input"]


def __getattr__(name):
    if name in ("export", "ExportResult", "parse_input"):
        import importlib
        module = importlib.import_module(".export", __name__)  # imports torch
        # importing the submodule set the package's "export" to the module: the function takes its place
        for public in ("export", "ExportResult", "parse_input"):
            globals()[public] = getattr(module, public)
        return globals()[name]
    raise AttributeError("module 'tinspect_export' has no attribute %r" % name)
