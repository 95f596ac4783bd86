"""Every error bad input raises, under the one base (vkverify.errors): the CLI turns a VkverifyError into exit code 2
and its `lines()` on stderr; the Python API raises the same classes (never a built-in error
from deep inside)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import VkverifyError

__all__ = ["CaptureError", "InputError", "InvalidStream", "OutputError", "StreamError", "UsageError", "VkverifyError",
           "choice_argument", "integer_argument", "json_path", "printable"]

_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` on one line and safe on a terminal: control characters (a newline, an escape sequence) and
    lone surrogates that input echoed into a message are written as Python escapes."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


@dataclass(frozen=True)
class InputError:
    path: str  # JSON path, e.g. command_buffers.cb0[3].src
    message: str


class StreamError(VkverifyError):
    """A stream file or document that is not a valid `vkverify-stream/1` stream.

    Users see it as one line per error: `FILE: JSON.path: what is wrong`.
    """

    def __init__(self, file: str, errors: list[InputError]) -> None:
        self.file = file
        self.errors = errors
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        return [printable(f"{self.file}: {e.path}: {e.message}") for e in self.errors]


InvalidStream = StreamError  # the loader's first name for it; tests and users import it


class CaptureError(VkverifyError):
    """A capture that cannot be imported: truncated, corrupted, of another converter version,
    without a device, or the GFXReconstruct tools missing.

    Users see it as one line, `FILE: what is wrong`.
    """

    def __init__(self, file: str, message: str) -> None:
        self.file = file
        self.message = message
        super().__init__(printable(f"{file}: {message}"))


class UsageError(VkverifyError):
    """A command-line option or Python API argument that cannot be used: users see
    `ARGUMENT: what is wrong` (the argument's name as they wrote it)."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        self.message = message
        super().__init__(printable(f"{argument}: {message}"))


class OutputError(VkverifyError):
    """Output that could not be written (a full disk, a closed stdout): users see `FILE: cannot write (why)`,
    `stdout` for the standard output."""

    def __init__(self, file: str, error: OSError) -> None:
        self.file, self.strerror = file, error.strerror or str(error)
        super().__init__(printable(f"{file}: cannot write ({self.strerror})"))


def json_path(parts) -> str:
    """`command_buffers.cb0[3].src` from a sequence of keys and indices."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "$"


def integer_argument(argument: str, value, low: int, high: int | None = None, optional: bool = False):
    """`value` when it is an int in [low, high] (or None, where optional); else UsageError naming `argument`
    and the accepted values."""
    if value is None and optional or isinstance(value, int) and not isinstance(value, bool) \
            and low <= value and (high is None or value <= high):
        return value
    accepted = f"an integer of at least {low}" if high is None else f"an integer in [{low}, {high}]"
    raise UsageError(argument, f"expected {'None or ' if optional else ''}{accepted}, got {value!r}"[:300])


def choice_argument(argument: str, value, choices: tuple):
    """`value` when it is one of `choices`; else UsageError naming `argument` and the choices."""
    if isinstance(value, str) and value in choices:
        return value
    # The value's text is cut short (it may be a whole document), the choices never: they are the accepted values.
    raise UsageError(argument, f"expected one of {', '.join(map(repr, choices))}, got {repr(value)[:100]}")
