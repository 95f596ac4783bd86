"""The importer's error for captures it cannot read: the model layer's CaptureError, named here too."""

from ..model.errors import CaptureError

__all__ = ["CaptureError"]
