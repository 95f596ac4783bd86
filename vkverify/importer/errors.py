"""The one error type for captures the importer cannot read."""

from __future__ import annotations


class CaptureError(Exception):
    """A capture that cannot be imported: truncated, of another converter
    version, without a device, or the GFXReconstruct tools missing.

    Users see it as one line, `FILE: what is wrong`; the CLI exits 2.
    """

    def __init__(self, file: str, message: str) -> None:
        self.file = file
        self.message = message
        super().__init__(f"{file}: {message}")
