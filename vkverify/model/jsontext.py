"""A stream's JSON text to its document, as json.loads makes it, with each command or host op whose text
repeats an earlier one's parsed once: both places hold one object. A decode stream repeats a few ten
thousand commands a million times, and parsing them was the larger part of loading it.

The operations' arrays are walked here; every other value, and each new operation, is read by the
standard library's own scanner, and an operation scanned whose text was scanned before is the object made
then. In pretty-printed text an operation's end is guessed (its closing brace on a line of its own, indented
as its opening one's line) and the guess is taken only when the text up to it is one already parsed, which
spares the scan: an object's text ends where its own braces close, so the same text at another place is
the same value. Anything this reading does not expect, an error included, is left to json.loads,
whose result and messages are the contract.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from json.decoder import scanstring
from json.scanner import make_scanner
from typing import Any

__all__ = ["loads"]

_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace
_BY_OWNER = ("command_buffers", "threads")  # objects of arrays of operations
_ARRAY = "host"  # an array of operations


def loads(text: str, parse_constant: Callable[[str], Any]) -> Any:
    """json.loads(text, parse_constant=parse_constant), repeated operations one object each."""
    try:
        return _Reader(text, make_scanner(json.JSONDecoder(parse_constant=parse_constant))).document()
    except (ValueError, StopIteration, IndexError, RecursionError):
        return json.loads(text, parse_constant=parse_constant)


class _Reader:
    def __init__(self, text: str, scan: Callable[[str, int], tuple[Any, int]]) -> None:
        self.text = text
        self.scan = scan
        self.parsed: dict[str, dict] = {}  # an operation's text -> the object parsed from it
        self.longest = 0  # of those texts: no guess past it can be one of them

    def space(self, i: int) -> int:
        return _SPACE.match(self.text, i).end()

    def document(self) -> Any:
        start = self.space(0)
        if self.text[start] != "{":
            raise ValueError("not an object: json.loads reads it")
        doc, end = self.object(start, self.member)
        if self.space(end) != len(self.text):
            raise ValueError("extra data: json.loads reports it")
        return doc

    def member(self, key: str, i: int) -> tuple[Any, int]:
        if key in _BY_OWNER and self.text[i] == "{":
            return self.object(i, lambda _, j: self.operations(j))
        if key == _ARRAY:
            return self.operations(i)
        return self.scan(self.text, i)

    def object(self, i: int, value: Callable[[str, int], tuple[Any, int]]) -> tuple[dict, int]:
        """The object at text[i] ('{'), each member's value read by value(key, its start); (object, end)."""
        text, out = self.text, {}
        i = self.space(i + 1)
        if text[i] == "}":
            return out, i + 1
        while True:
            if text[i] != '"':
                raise ValueError("a key expected")
            key, i = scanstring(text, i + 1)
            i = self.space(i)
            if text[i] != ":":
                raise ValueError("':' expected")
            out[key], i = value(key, self.space(i + 1))  # a key given twice: the last value, as json.loads
            i = self.space(i)
            if text[i] == "}":
                return out, i + 1
            if text[i] != ",":
                raise ValueError("',' expected")
            i = self.space(i + 1)

    def operations(self, i: int) -> tuple[Any, int]:
        """The array of operations at text[i], each operation's text looked up or scanned."""
        text, parsed, space = self.text, self.parsed, _SPACE.match
        if text[i] != "[":
            return self.scan(text, i)
        first = space(text, i + 1).end()
        if text[first] == "]":
            return [], first + 1
        line = text.rfind("\n", i, first)
        indent = text[line:first] if line >= 0 else ""  # a newline and the spaces before each operation
        close = indent + "}" if indent else None  # a pretty-printed operation's last line
        next_one = "," + indent + "{"  # the start of the next operation, laid out as this one
        items, guess = [], close is not None  # guess: the operation before ended with `close`
        while True:
            item = None
            if guess and text[first] == "{":
                end = text.find(close, first, first + self.longest)
                if end >= 0:
                    end += len(close)
                    item = parsed.get(text[first:end])
            if item is None:
                item, end = self.scan(text, first)
                if text[first] == "{":
                    item = parsed.setdefault(text[first:end], item)
                    self.longest = max(self.longest, end - first)
                guess = close is not None and text.endswith(close, first, end)
            items.append(item)
            if text.startswith(next_one, end):  # the common case, without the regular expression
                first = end + len(next_one) - 1
                continue
            i = space(text, end).end()
            if text[i] == "]":
                return items, i + 1
            if text[i] != ",":
                raise ValueError("',' expected")
            first = space(text, i + 1).end()
