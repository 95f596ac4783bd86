"""Structure-aware bad inputs: a valid document with one of its nodes broken in a way users
(and generators) break streams and captures, and the CLI run on it in-process.

`broken(doc, rnd)` returns the bytes of the file: JSON with one node replaced, deleted,
duplicated or retyped, or text that no JSON library writes (numbers past Python's digit
limit, nesting past its recursion limit, NaN), or bytes that are not UTF-8, or a cut.
`run_main(argv, timeout)` runs vkverify.cli.main and says what happened.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import signal
import traceback
from dataclasses import dataclass

# Text no json.dumps writes, put where a sentinel string stands.
RAW = {
    "huge-int": "1" + "0" * 5000,
    "big-int": str(2 ** 70),
    "deep-list": "[" * 3000 + "]" * 3000,
    "deep-object": '{"a":' * 3000 + "1" + "}" * 3000,
    "nan": "NaN",
    "infinity": "-Infinity",
    "surrogate": '"\\ud800"',
    "surrogate-id": '"cb\\udfff"',
}
STRINGS = ["", " ", "a b", "A\x00B", "tab\there", "new\nline", "emoji \U0001F600", "x" * 16384, "{n}",
           "{1//0}", "{n*n*n*n*n*n*n*n*n*n*n*n}", "cb0[0]", "main[0]@main[1]", "@", '"', "\\", "}", "{",
           "\x1b[31m", "1" + "+1" * 3000, "9" * 40, "gpu0", "q0", "A", "S", "F", "k", "main", "cb0",
           "n in 1000000000", "i in 2, j in i//0", "compute_shader", "transfer_write", "\u202e"]
NUMBERS = [0, -1, 1, 3, 4096.0, 1e308, 1.5, 2 ** 64, 2 ** 63 - 1, -(2 ** 63), 10 ** 30, True, False, None]


def _sentinel(name: str) -> str:
    return f"@@RAW:{name}@@"


def _nodes(doc, path=()):
    """Every (path, value) of the document, containers included."""
    yield path, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _nodes(v, path + (i,))


def _replacement(value, rnd: random.Random):
    kind = rnd.randrange(8)
    if kind == 0:
        return rnd.choice(STRINGS)
    if kind == 1:
        return rnd.choice(NUMBERS)
    if kind == 2:
        return _sentinel(rnd.choice(sorted(RAW)))
    if kind == 3:  # the same value in the wrong container, or a container emptied
        return [value] if not isinstance(value, list) else (value[0] if value else {})
    if kind == 4 and isinstance(value, list):
        return "".join(map(str, value))[:20] or "x"
    if kind == 5 and isinstance(value, (int, float)) and not isinstance(value, bool):
        return rnd.choice([value * 1.0, -value, value + 2 ** 40, str(value)])
    if kind == 6 and isinstance(value, str):
        return rnd.choice([value + " ", value + "\x00", value + "\U0001F600", value * 2, value.upper(), "\t" + value])
    return rnd.choice([{}, [], "", 0, None])


ODD_IDS = ["a b", "A\x00", "t\tab", "new\nline", "\U0001F600", "x" * 16384, "\u202e", "cb0[0]", "q@0", 'q"1',
           "back\\slash", "{}", " ", "-", "\x7f", "é"]


def _ids(doc) -> list[str]:
    """The ids a document declares: `id` values, and the keys of command buffers, threads and shaders."""
    found = {v for path, v in _nodes(doc) if path and path[-1] == "id" and isinstance(v, str)}
    if isinstance(doc, dict):
        found |= {k for key in ("command_buffers", "threads", "shaders") if isinstance(doc.get(key), dict)
                  for k in doc[key]}
    return sorted(found)


def rename(doc, rnd: random.Random):
    """Every occurrence of one string (an id, mostly) of `doc` replaced by an odd one: a stream as valid
    as before where ids allow the odd string, so its consumers (z3, DOT, explain, digests) see it."""
    strings = _ids(doc)
    if not strings:
        return doc
    old, new = rnd.choice(strings), rnd.choice(ODD_IDS)

    def walk(node):
        if isinstance(node, dict):
            return {(new if k == old else k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return new if node == old else node
    return walk(doc)


def mutate(doc, rnd: random.Random, edits: int = 1, plausible: bool = False):
    """`doc` (a JSON document, not changed) with `edits` nodes broken; `plausible`: only with values of
    the document's own kinds (ids it has, small integers), which keep a stream valid often enough to
    reach the checker, explain's search and the simulator."""
    doc = json.loads(json.dumps(doc))
    if rnd.random() < 0.25:
        return rename(doc, rnd)
    for _ in range(edits):
        nodes = list(_nodes(doc))
        path, value = rnd.choice(nodes[1:] or nodes)
        if not path:
            return _replacement(value, rnd)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        action = rnd.randrange(6, 8) if plausible else rnd.randrange(8)
        if action >= 6:  # a plausible value: the stream stays valid often enough to reach the checker's depths
            strings = _ids(doc)
            parent[path[-1]] = rnd.choice(strings) if isinstance(value, str) and strings else \
                rnd.choice([0, 1, 2, 4, 12, 64, 4092, 4095, 4096, 8192]) if isinstance(value, int) else \
                copy.deepcopy(rnd.choice([v for _, v in nodes if isinstance(v, type(value))]))
        elif action == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == 1 and isinstance(parent, list):
            parent.insert(path[-1], json.loads(json.dumps(value)))
        elif action == 2 and isinstance(parent, dict):
            parent[rnd.choice(STRINGS[:12])] = value  # an unknown key, or an id with odd characters
        else:
            parent[path[-1]] = _replacement(value, rnd)
    return doc


def encode(doc, rnd: random.Random) -> bytes:
    """The document's bytes; sometimes cut, or with a byte that is not UTF-8."""
    text = json.dumps(doc, ensure_ascii=rnd.random() < 0.5, indent=rnd.choice([None, 1]))
    for name, raw in RAW.items():
        text = text.replace(json.dumps(_sentinel(name)), raw)
    data = text.encode("utf-8", "surrogatepass")
    roll = rnd.random()
    if roll < 0.05:
        return data[:rnd.randrange(len(data) + 1)]
    if roll < 0.1:
        at = rnd.randrange(len(data) + 1)
        return data[:at] + rnd.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + data[at:]
    return data


def broken(doc, rnd: random.Random) -> bytes:
    if rnd.random() < 0.5:
        return json.dumps(mutate(doc, rnd, edits=rnd.choice([1, 2]), plausible=True)).encode()
    return encode(mutate(doc, rnd, edits=rnd.choice([1, 1, 1, 2, 3])), rnd)


@dataclass
class Outcome:
    code: int | None  # None: it raised or hung
    stdout: str
    stderr: str
    error: str | None  # the traceback's last line, or "hang"


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def run_main(argv: list[str], timeout: float = 20.0) -> Outcome:
    """vkverify.cli.main(argv) in this process, stdout and stderr captured, stopped after `timeout`."""
    from vkverify.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        error = None
    except SystemExit as e:  # argparse
        code, error = (e.code if isinstance(e.code, int) else 2), None
    except _Hang:
        code, error = None, "hang"
    except BaseException:  # noqa: BLE001 - what the campaign looks for
        code, error = None, traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return Outcome(code, out.getvalue(), err.getvalue(), error)
