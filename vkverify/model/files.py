"""Output files: checked before the work that fills them, written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .errors import OutputError, UsageError

__all__ = ["append_line", "check_directory", "check_output", "write_atomic"]


def check_output(path: str | Path, argument: str) -> None:
    """Raise UsageError unless a file can be written at `path`: its folder exists and it is no folder."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(argument, f"{path} is a directory, not a file")
    folder = p.parent
    if not folder.is_dir():
        raise UsageError(argument, f"folder {str(folder)!r} does not exist" if not folder.exists()
                         else f"{str(folder)!r} is not a folder")
    if not os.access(folder, os.W_OK) or p.exists() and not os.access(p, os.W_OK):
        raise UsageError(argument, f"{path} cannot be written (permission denied)")


def check_directory(path: str | Path, argument: str) -> None:
    """Raise UsageError unless `path` is a folder or can be made one (no file in the way)."""
    p = Path(path)
    for part in (p, *p.parents):
        if part.exists():
            if not part.is_dir():
                raise UsageError(argument, f"{part} is a file, not a folder")
            if not os.access(part, os.W_OK):
                raise UsageError(argument, f"{part} cannot be written (permission denied)")
            return


def write_atomic(path: str | Path, text: str | Iterable[str]) -> None:
    """Write `text` (or its pieces in turn) to a temporary file beside `path`, then rename it over `path`: a
    failure (a full disk, an interrupt) leaves the old file or none, never part of the new one. A target that
    is no regular file (/dev/null, a FIFO) is written in place: a rename would replace the device itself.
    OutputError says why a write failed."""
    p = Path(path)
    try:
        if p.exists() and not p.is_file():
            with p.open("w", encoding="utf-8") as f:
                f.writelines([text] if isinstance(text, str) else text)
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        try:
            os.chmod(tmp, 0o666 & ~_umask())  # as open() would have made it, not mkstemp's 0600
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.writelines([text] if isinstance(text, str) else text)
            os.replace(tmp, p)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        raise OutputError(str(path), e) from None


def append_line(path: str | Path, line: str) -> None:
    """`line` and a newline appended in one write: processes writing one file at once (pytest-xdist workers)
    never split each other's lines, as a buffered file's writes of a long line might be."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask
