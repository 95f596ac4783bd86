"""A stream's JSON text to its document, as json.loads makes it, with each command or host op whose text
repeats an earlier one's parsed once: both places hold one object. A decode stream repeats a few ten
thousand commands a million times, and parsing them was the larger part of loading it.

The operations' arrays are walked here; every other value, and each new operation, is read by the
standard library's own scanner, and an operation scanned whose text was scanned before is the object made
then. An operation's end is guessed (pretty-printed: its closing brace on a line of its own, indented as its
opening one's line; one operation a line, as model/dump.py writes: where the next one starts) and the guess
is taken only when the text up to it is one already parsed, which spares the scan: an object's text ends
where its own braces close, so the same text at another place is the same value. Anything this reading does
not expect, an error included, is left to json.loads, whose result and messages are the contract.

A file is read a chunk at a time (load): only a window of its text is held, from the value being read
on; a value longer than the window is read by growing it. A 10^6-command stream's text is about 380 MB,
its document a fourth of that.
"""

from __future__ import annotations

import json
import marshal
import re
from collections.abc import Callable
from json.decoder import scanstring
from json.scanner import make_scanner
from typing import Any, TextIO

__all__ = ["load", "loads"]

_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace
_BY_OWNER = ("command_buffers", "threads")  # objects of arrays of operations
_ARRAY = "host"  # an array of operations
_CONTAINERS = (dict, list)
_ERRORS = (ValueError, StopIteration, IndexError, RecursionError)  # UnicodeDecodeError is a ValueError
CHUNK = 1 << 20  # characters read from a file at a time: about the text held while reading it


def loads(text: str, parse_constant: Callable[[str], Any]) -> Any:
    """json.loads(text, parse_constant=parse_constant), repeated operations one object each."""
    try:
        return _Reader(_scanner(parse_constant), text).document()
    except _ERRORS:
        return json.loads(text, parse_constant=parse_constant)


def load(file: TextIO, parse_constant: Callable[[str], Any], chunk: int = CHUNK) -> Any | None:
    """loads() of the text read from `file`, `chunk` characters at a time; None where the text is not what
    this reading expects (bad JSON, text that is no UTF-8 included): the caller then has json.loads's word."""
    try:
        return _Reader(_scanner(parse_constant), "", file.read, chunk).document()
    except _ERRORS:
        return None


def _scanner(parse_constant: Callable[[str], Any]) -> Callable[[str, int], tuple[Any, int]]:
    return make_scanner(json.JSONDecoder(parse_constant=parse_constant))


def _key(text: str, i: int) -> tuple[str, int]:
    """The object key whose opening quote is text[i], and its end."""
    return scanstring(text, i + 1)


class _Reader:
    def __init__(self, scan: Callable[[str, int], tuple[Any, int]], text: str,
                 read: Callable[[int], str] | None = None, chunk: int = CHUNK) -> None:
        self.scan = scan
        self.text = text  # the window: the text from a place at or before the value being read
        self.read = read  # the text after the window, `chunk` characters at a time; None once all is read
        self.chunk = chunk
        self.parsed: dict[str, dict] = {}  # an operation's text -> the object parsed from it
        self.longest = 0  # of those texts: no guess past it can be one of them
        self.strings: dict[str, str] = {}  # each string in an operation, held once
        self.values: dict[bytes, Any] = {}  # marshal.dumps(value) -> the value, for objects and arrays in one

    def more(self, i: int) -> int:
        """The window from text[i] on and the text after it, at least as much as it held (a long value is read
        in few passes): text[i]'s place in it, 0. A place the caller held before it is gone."""
        more = self.read(max(self.chunk, len(self.text) - i))
        if not more:
            self.read = None
        self.text = self.text[i:] + more
        return 0

    def skip(self, i: int) -> int:
        """The place of the first character from text[i] on that is no whitespace, the window holding it
        (unless the text ends first)."""
        while True:
            end = _SPACE.match(self.text, i).end()
            if end < len(self.text) or self.read is None:
                return end
            i = self.more(end)

    def whole(self, read_at: Callable[[str, int], tuple[Any, int]], i: int) -> tuple[Any, int, int]:
        """read_at(text, i), a value and its end, where the window holds the value and a character after it
        (a number cut short by the window's end would read as another): (value, start, end)."""
        while True:
            try:
                value, end = read_at(self.text, i)
                if end < len(self.text) or self.read is None:
                    return value, i, end
            except (ValueError, StopIteration):
                if self.read is None:
                    raise
            i = self.more(i)

    def shared(self, op: dict) -> dict:
        """A new operation with each string, object and array in it that equals (types too) one read before
        replaced by that one: the names, bindings and masks that distinct operations repeat are held once."""
        strings, value = self.strings, self.value
        return {strings.setdefault(k, k): value(v) if type(v) in _CONTAINERS else
                strings.setdefault(v, v) if type(v) is str else v for k, v in op.items()}

    def value(self, value: dict | list) -> dict | list:
        if type(value) is dict:
            value = self.shared(value)
        else:
            strings, inner = self.strings, self.value
            value = [inner(v) if type(v) in _CONTAINERS else strings.setdefault(v, v) if type(v) is str else v
                     for v in value]
        # marshal writes the types (1, 1.0 and True apart): an exact key. Its back-references depend on
        # reference counts: equal values may (rarely) differ, and are then held twice.
        return self.values.setdefault(marshal.dumps(value), value)

    def document(self) -> Any:
        start = self.skip(0)
        if self.text[start] != "{":
            raise ValueError("not an object: json.loads reads it")
        doc, end = self.object(start, self.member)
        if self.skip(end) != len(self.text):
            raise ValueError("extra data: json.loads reports it")
        return doc

    def member(self, key: str, i: int) -> tuple[Any, int]:
        if key in _BY_OWNER and self.text[i] == "{":
            return self.object(i, lambda _, j: self.operations(j))
        if key == _ARRAY:
            return self.operations(i)
        value, _, end = self.whole(self.scan, i)
        return value, end

    def object(self, i: int, value: Callable[[str, int], tuple[Any, int]]) -> tuple[dict, int]:
        """The object at text[i] ('{'), each member's value read by value(key, its start); (object, end)."""
        out = {}
        i = self.skip(i + 1)
        if self.text[i] == "}":
            return out, i + 1
        while True:
            if self.text[i] != '"':
                raise ValueError("a key expected")
            key, _, i = self.whole(_key, i)
            i = self.skip(i)
            if self.text[i] != ":":
                raise ValueError("':' expected")
            out[key], i = value(key, self.skip(i + 1))  # a key given twice: the last value, as json.loads
            i = self.skip(i)
            if self.text[i] == "}":
                return out, i + 1
            if self.text[i] != ",":
                raise ValueError("',' expected")
            i = self.skip(i + 1)

    def guessed(self, first: int, indent: str, next_one: str) -> tuple[Any, int] | None:
        """(the operation parsed before whose text starts at text[first], its end), where its end can be guessed
        without a scan: pretty-printed, its closing brace on a line of its own indented as its opening one;
        one a line (model/dump.py), where the next operation starts. A guess counts only when the text up to
        it is an operation's already parsed: an object's text ends where its own braces close, so the same
        text here is the same value. None otherwise, or past the window read so far."""
        text, limit = self.text, first + self.longest + len(next_one)
        end = text.find(indent + "}", first, limit)
        if end >= 0 and (item := self.parsed.get(text[first:end + len(indent) + 1])) is not None:
            return item, end + len(indent) + 1
        end = text.find(next_one, first, limit)
        if end >= 0 and (item := self.parsed.get(text[first:end])) is not None:
            return item, end
        return None

    def operations(self, i: int) -> tuple[Any, int]:
        """The array of operations at text[i], each operation's text looked up or scanned."""
        if self.text[i] != "[":
            value, _, end = self.whole(self.scan, i)
            return value, end
        text, parsed = self.text, self.parsed
        first = _SPACE.match(text, i + 1).end()
        line = text.rfind("\n", i, first)
        indent = text[line:first] if line >= 0 else ""  # a newline and the spaces before each operation
        first = self.skip(first)  # where the window ends in that space, more is read (indent: a guess)
        text = self.text
        if text[first] == "]":
            return [], first + 1
        next_one = "," + indent + "{"  # the start of the next operation, laid out as this one
        items = []
        while True:
            item = self.guessed(first, indent, next_one) if indent and text[first] == "{" else None
            if item is None:
                item, first, end = self.whole(self.scan, first)
                text = self.text
                if text[first] == "{":
                    known = parsed.get(text[first:end])
                    item = known if known is not None else parsed.setdefault(text[first:end], self.shared(item))
                    self.longest = max(self.longest, end - first)
            else:
                item, end = item
            items.append(item)
            if text.startswith(next_one, end):  # the common case, without the regular expression
                first = end + len(next_one) - 1
                continue
            i = self.skip(end)
            if self.text[i] == "]":
                return items, i + 1
            if self.text[i] != ",":
                raise ValueError("',' expected")
            first = self.skip(i + 1)
            text = self.text
