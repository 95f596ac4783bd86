"""The one error type for bad input; the CLI turns it into exit code 2."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InputError:
    path: str  # JSON path, e.g. command_buffers.cb0[3].src
    message: str


class InvalidStream(Exception):
    """A stream file that is not a valid `vkverify-stream/1` stream.

    Users see it as one line per error: `FILE: JSON.path: what is wrong`.
    """

    def __init__(self, file: str, errors: list[InputError]) -> None:
        self.file = file
        self.errors = errors
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        return [f"{self.file}: {e.path}: {e.message}" for e in self.errors]


def json_path(parts) -> str:
    """`command_buffers.cb0[3].src` from a sequence of keys and indices."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "$"
