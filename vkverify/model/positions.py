"""Where each value of a JSON text is: its JSON path -> (start, end) as (line, column), both 1-based,
the end one past the value's last character. SARIF regions point at an operation's own text with it.

The standard library's parser keeps no positions, so this is a second, small pass over a text that
`json.loads` has already accepted; strings go through the standard library's own scanner.
"""

from __future__ import annotations

import bisect
import re
from json.decoder import scanstring

__all__ = ["spans"]

Path = tuple[str | int, ...]
Span = tuple[tuple[int, int], tuple[int, int]]

_SPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


def spans(text: str) -> dict[Path, Span]:
    """The span of every value in `text` (valid JSON), keyed by its path (`("command_buffers", "cb0", 2)`)."""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(line_starts, offset)
        return line, offset - line_starts[line - 1] + 1

    out: dict[Path, Span] = {}

    def skip(i: int) -> int:
        return _SPACE.match(text, i).end()

    def value(i: int, path: Path) -> int:
        """Record the value starting at text[i] (no space before it); return the offset after it."""
        start, c = i, text[i]
        if c == "{":
            i = skip(i + 1)
            while text[i] != "}":
                key, i = scanstring(text, i + 1)
                i = skip(value(skip(skip(i) + 1), path + (key,)))  # past the ':'
                if text[i] == ",":
                    i = skip(i + 1)
            end = i + 1
        elif c == "[":
            i, k = skip(i + 1), 0
            while text[i] != "]":
                i = skip(value(i, path + (k,)))
                k += 1
                if text[i] == ",":
                    i = skip(i + 1)
            end = i + 1
        elif c == '"':
            end = scanstring(text, i + 1)[1]
        else:
            end = _SCALAR.match(text, i).end()
        out[path] = (at(start), at(end))
        return end

    value(skip(0), ())
    return out
