"""gfxrecon-convert's JSON lines: a header line, then one Vulkan call per line.

Only the converter's JSON version 0.8 (GFXReconstruct 0.9.18) is read: field
names and the encoding of flags and handles belong to that version.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from .errors import CaptureError

__all__ = ["Call", "call_index", "read_calls", "read_lines"]

SUPPORTED_JSON_VERSION = "0.8"


@dataclass(frozen=True)
class Call:
    index: int
    name: str
    args: dict
    result: str | None  # the VkResult name, for calls that return one


_CALL = re.compile(r"#(\d+)")


def call_index(label: str | None) -> int | None:
    """The capture call an imported operation comes from: its label names it `vkCmdDispatch #57` (an assumed
    host read, the wait it follows)."""
    found = _CALL.findall(label or "")  # the last: a debug label region's name may come before the call
    return int(found[-1]) if found else None


def read_calls(path: Path, shown_as: str) -> Iterator[Call]:
    """The calls in file order; raises CaptureError on a header of another version or a broken line."""
    with path.open(encoding="utf-8") as lines:
        yield from read_lines(lines, shown_as)


def read_lines(lines: Iterable[str], shown_as: str) -> Iterator[Call]:
    """The calls of JSON lines read from `lines` (a file, or the converter's output as it writes it)."""
    try:
        yield from _calls(lines, shown_as)
    except UnicodeDecodeError as e:
        raise CaptureError(shown_as, f"not UTF-8 (byte 0x{e.object[e.start]:02x}): not gfxrecon-convert JSON "
                                     "lines") from None


def _calls(lines, shown_as: str) -> Iterator[Call]:
    lines = iter(lines)
    first = next(lines, "")
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
        except orjson.JSONDecodeError as e:  # a number past 64 bits and nesting past 1024 levels included
            raise CaptureError(shown_as, f"line {number}: invalid JSON ({e.msg})") from None
        func = record.get("vkFunc") if isinstance(record, dict) else None
        if func is None:
            if not isinstance(record, dict):
                raise CaptureError(shown_as, f"line {number}: a {type(record).__name__}, not a JSON object")
            continue
        if not (isinstance(func, dict) and isinstance(func.get("name"), str)
                and isinstance(record.get("index"), int) and isinstance(func.get("args", {}), dict)):
            raise CaptureError(shown_as, f"line {number}: a call without an integer `index`, a `vkFunc.name` "
                                         "string and `vkFunc.args` object")
        yield Call(record["index"], func["name"], func.get("args", {}), func.get("return"))
