"""gfxrecon-convert's JSON lines: a header line, then one Vulkan call per line.

Only the converter's JSON version 0.8 (GFXReconstruct 0.9.18) is read: field
names and the encoding of flags and handles belong to that version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import orjson

from .errors import CaptureError

__all__ = ["Call", "call_index", "read_calls", "read_lines"]

SUPPORTED_JSON_VERSION = "0.8"


class Call(NamedTuple):  # a tuple: made for each of millions of lines, a frozen dataclass's init was a tenth of a walk
    index: int
    name: str
    args: dict
    result: str | None  # the VkResult name, for calls that return one


_CALL = re.compile(r"#(\d+)")
_new_tuple = tuple.__new__


def call_index(label: str | None) -> int | None:
    """The capture call an imported operation comes from: its label names it `vkCmdDispatch #57` (an assumed
    host read, the wait it follows)."""
    found = _CALL.findall(label or "")  # the last: a debug label region's name may come before the call
    return int(found[-1]) if found else None


def read_calls(path: Path, shown_as: str) -> Iterator[Call]:
    """The calls in file order; raises CaptureError on a header of another version or a broken line."""
    with path.open("rb") as lines:
        yield from read_lines(lines, shown_as)


def read_lines(lines: Iterable[bytes], shown_as: str) -> Iterator[Call]:
    """The calls of JSON lines, as bytes, read from `lines` (a file, or the converter's output as it writes
    it); a line of the converter's log (`[gfxrecon] ...`, on stdout with the records) is skipped."""
    lines = iter(lines)
    first = next((line for line in lines if not line.startswith(b"[gfxrecon] ")), b"")
    try:
        header = orjson.loads(first)["header"]
        version = header["json-version"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise CaptureError(shown_as, "not gfxrecon-convert JSON lines (the first line has no "
                                     "header.json-version)") from None
    if not str(version).startswith(SUPPORTED_JSON_VERSION + "."):
        raise CaptureError(shown_as, f"JSON lines of version {version}; this importer reads version "
                                     f"{SUPPORTED_JSON_VERSION} (GFXReconstruct 0.9.18's gfxrecon-convert)")
    for number, line in enumerate(lines, start=2):
        try:
            record = orjson.loads(line)
            func = record["vkFunc"]
            index, name, args = record["index"], func["name"], func.get("args", {})
        except orjson.JSONDecodeError as e:  # a number past 64 bits and nesting past 1024 levels included
            if line.startswith(b"[gfxrecon] "):
                continue
            raise CaptureError(shown_as, f"line {number}: {_undecodable(line, e)}") from None
        except (KeyError, TypeError, AttributeError):
            if not isinstance(record, dict):
                raise CaptureError(shown_as, f"line {number}: a {type(record).__name__}, not a JSON object") from None
            if record.get("vkFunc") is None:
                continue  # an annotation or another record that is not a call
            index = None
        # Checked as locals, not as the Call's fields: a named field is a descriptor call, three a line.
        if not (type(index) is int and type(name) is str and type(args) is dict):
            raise CaptureError(shown_as, f"line {number}: a call without an integer `index`, a `vkFunc.name` "
                                         "string and `vkFunc.args` object")
        # tuple.__new__ directly: Call(...) runs a Python __new__, 0.59 us a line against 0.34.
        yield _new_tuple(Call, (index, name, args, func.get("return")))


def _undecodable(line: bytes, error: orjson.JSONDecodeError) -> str:
    try:
        line.decode()
    except UnicodeDecodeError as e:
        return f"not UTF-8 (byte 0x{e.object[e.start]:02x}): not gfxrecon-convert JSON lines"
    return f"invalid JSON ({error.msg})"
