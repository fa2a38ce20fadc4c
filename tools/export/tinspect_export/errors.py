"""The exporter's one error type."""


class ExportError(Exception):
    """The model cannot be exported; the message names the module path where possible."""
