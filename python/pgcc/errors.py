"""The one exception the package raises for what stands in the way of an export, a
build or a load: ExportError, whose message names the node, kernel or argument."""

__all__ = ["ExportError"]


class ExportError(Exception):
    pass
