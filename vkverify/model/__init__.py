"""The stream IR, its JSON Schema loader, the dumper and the Python builder."""

from . import ir
from .dump import dumps, to_dict
from .errors import CaptureError, InvalidStream, OutputError, StreamError, UsageError, VkverifyError
from .loader import from_dict, load, loads, resolve_ref

__all__ = ["CaptureError", "InvalidStream", "OutputError", "StreamError", "UsageError", "VkverifyError", "dumps",
           "from_dict", "ir", "load", "loads", "resolve_ref", "to_dict"]
