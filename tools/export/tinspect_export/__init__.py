"""tinspect_export: write a tinspect model description from a live PyTorch model.

    from tinspect_export import export
    result = export(model, {"x": "N,3,224,224"}, "model.json")
    result.tracer      # "fx" or "record"
    result.opaque      # [(step index, module path or function, reason)]
    result.bindings    # {"N": 2}: the values the symbols had when tracing
    result.reference   # per graph step, [(shape, dtype) or None per output]

See export() for the arguments.
"""
from .errors import ExportError
from .export import ExportResult, export, parse_input

__all__ = ["export", "ExportResult", "ExportError", "parse_input"]
