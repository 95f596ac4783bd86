"""The program's line that issued an operation: the first caller outside vkverify."""

from __future__ import annotations

import os
import sys

__all__ = ["caller", "short"]

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def caller() -> str | None:
    """`file:line` of the innermost frame outside the vkverify package (relative to the working
    directory when under it); None when every frame is vkverify's."""
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(PACKAGE) and not path.startswith("<frozen"):
            return f"{short(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def short(path: str) -> str:
    """`path` relative to the working directory where it lies under it."""
    here = os.getcwd() + os.sep
    return path.removeprefix(here)
