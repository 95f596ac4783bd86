"""model/jsontext.py: a stream's text read as json.loads reads it, repeated operations parsed once."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vkverify.model.dump import _expanded
from vkverify.model.jsontext import load, loads
from vkverify.model.loader import _no_constant

SCALARS = st.one_of(st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.5, True, False, None]),
                    st.sampled_from(["a", "b", "}", "\n   }", "{", "\\"]))
OPERATION = st.dictionaries(st.sampled_from(["cmd", "size", "bindings", "label"]),
                            st.one_of(SCALARS, st.lists(st.dictionaries(st.sampled_from(["buffer", "offset"]),
                                                                        SCALARS, max_size=2), max_size=2)),
                            max_size=4)
INDENTS = [None, 0, 1, 2, "\t", "lines"]


def dumped(doc: dict, indent) -> str:
    """`doc` as JSON text: json.dumps's layouts, or ("lines") model/dump.py's, one operation a line."""
    return "".join(_expanded(doc, 1, " ", "")) if indent == "lines" else json.dumps(doc, indent=indent)


def typed(value) -> str:
    """The value with its types (1, 1.0 and True apart), for comparing."""
    return json.dumps(value)


def reference(text: str):
    try:
        return "value", typed(json.loads(text, parse_constant=_no_constant))
    except (ValueError, RecursionError) as e:
        return type(e).__name__, str(e)


def ours(text: str):
    try:
        return "value", typed(loads(text, _no_constant))
    except (ValueError, RecursionError) as e:
        return type(e).__name__, str(e)


def windowed(text: str, chunk: int):
    """load() of `text` read `chunk` characters at a time: ("value", the typed value), or None where it leaves
    the text to json.loads."""
    doc = load(io.StringIO(text), _no_constant, chunk)
    return None if doc is None else ("value", typed(doc))


def taken(text: str):
    """What windowed() should say: the value of any text json.loads reads as an object, else None."""
    expected = reference(text)
    return expected if expected[0] == "value" and text.lstrip(" \t\n\r").startswith("{") else None


def stream(pool: list[dict], picks: list[int]) -> dict:
    ops = [pool[k % len(pool)] for k in picks]
    return {"format": "vkverify-stream/1", "command_buffers": {"cb0": ops, "cb1": ops[::-1]},
            "threads": {"main": ops[:3]}, "host": ops[:2], "name": "s"}


@settings(max_examples=300, deadline=None)
@given(pool=st.lists(OPERATION, min_size=1, max_size=4), picks=st.lists(st.integers(0, 9), max_size=12),
       indent=st.sampled_from(INDENTS), cuts=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(
           ["", ",", "]", "}", "{", " ", "\n", '"', "NaN", "1e400", "[", "x"])), max_size=2))
def test_as_json_loads_reads_it(pool, picks, indent, cuts):
    """The same value (types too) or the same error as json.loads, on pretty-printed, compact and broken text."""
    text = dumped(stream(pool, picks), indent)
    for at, insert in cuts:  # a character replaced, or text added: broken JSON, or other JSON
        at %= len(text) + 1
        text = text[:at] + insert + text[at + (at % 2):]
    assert ours(text) == reference(text)
    for chunk in (1, 3, 64):  # the window ends at every place, in a key, a number, a guessed operation
        assert windowed(text, chunk) == taken(text)


PRETTY = json.dumps(stream([{"cmd": "fill", "value": 1}, {"cmd": "copy"}], [0, 1, 0, 0]), indent=1)


@pytest.mark.parametrize("old, new", [
    ("}\n}", "}\n} x"),  # extra data after the document
    ("}\n}", "}\n}\n{}"),
    ('"value": 1\n   },', '"value": 1\n   },,'),  # an empty element
    ('"value": 1\n   },', '"value": 1\n   }'),  # a comma missing between operations
    ('"value": 1\n   }\n  ]', '"value": 1\n   },\n  ]'),  # a trailing comma
    ('"value": 1', '"value": NaN'),
    ('"value": 1', '"value": 1e400'),
    ('"value": 1', '"value": 1.0'),
    ('"cmd": "copy"', '"cmd": "copy\x01"'),  # a control character in a string
    ('"cb0": [', '"cb0": ['),  # unchanged
    ('"cb0": [', '"cb0": {'),
    ('"threads": {', '"threads": ['),
    ('"host": [', '"host": 7, "x": ['),
])
def test_broken_pretty_text_as_json_loads(old, new):
    for count in (1, -1):  # the first place, or every place
        text = PRETTY.replace(old, new, count)
        assert ours(text) == reference(text), text
        assert windowed(text, 5) == taken(text), text


@pytest.mark.parametrize("indent", [None, 1, 2, "\t", "lines"])
def test_repeated_operations_are_one_object(indent):
    fill, other = {"cmd": "fill", "dst": "A", "value": 1}, {"cmd": "fill", "dst": "A", "value": 1.0}
    text = dumped(stream([fill, other], [0, 1, 0, 1, 0]), indent)
    for doc in (loads(text, _no_constant), load(io.StringIO(text), _no_constant, 16)):
        ops = doc["command_buffers"]["cb0"]
        assert ops[0] is ops[2] is ops[4] is doc["threads"]["main"][0] and ops[1] is ops[3]
        assert ops[0] is not ops[1] and typed(ops[1]) == typed(other)  # 1.0 is not the integer 1


def test_a_value_longer_than_the_window_is_read_whole():
    big = {"cmd": "update", "data": {"base64": "QUJD" * 1000}, "size": 12345678}
    text = json.dumps(stream([big, {"cmd": "fill", "value": 123456789}], [0, 1, 0]), indent=1)
    assert windowed(text, 10) == windowed(text, 100000) == reference(text)


def test_a_key_given_twice_keeps_the_last_value():
    text = '{\n "command_buffers": {\n  "cb0": [\n   {\n    "a": 1\n   }\n  ]\n },\n "command_buffers": {}\n}'
    assert loads(text, _no_constant) == json.loads(text) == {"command_buffers": {}}


def test_distinct_operations_share_equal_parts():
    """Bindings, names and masks that distinct operations repeat are one object each; 1 and 1.0 stay apart."""
    a = {"cmd": "dispatch", "bindings": [{"buffer": "A", "offset": 0}], "groups": [1, 1, 1]}
    b = {"cmd": "dispatch", "bindings": [{"buffer": "A", "offset": 0}, {"buffer": "A", "offset": 0.0}],
         "groups": [1, 1, 1]}
    doc = loads(json.dumps(stream([a, b], [0, 1]), indent=1), _no_constant)
    x, y = doc["command_buffers"]["cb0"]
    assert x["bindings"][0] is y["bindings"][0] is not y["bindings"][1] and x["groups"] is y["groups"]
    assert x["bindings"][0]["buffer"] is y["bindings"][1]["buffer"] and typed(y) == typed(b)
