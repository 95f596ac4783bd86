"""Random streams whose primaries execute secondary command buffers (spec 6.7, issue 25), for the differential
tests (tests/test_secondaries.py) and long runs (`python -m tests.secondary_streams N`).

A stream of `differential.streams()` (or `resubmitting_streams()`: primaries submitted again) has runs of its
command buffers' commands moved into secondaries, each replaced by a vkCmdExecuteCommands of them in place, so
barriers fall inside secondaries, outside them, and between a secondary's commands and its primary's. A secondary
is also executed by another primary, at any position (one run per primary execution: the loader refuses two), and
a secondary may itself execute one carved from its own commands (nested, as VK_EXT_nested_command_buffer allows).
"""

from __future__ import annotations

import sys
from functools import partial
import traceback

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from .differential import (SETTINGS, assert_agree, consumer_disagreements, disagreements, fix_disagreements,
                           resubmitting_streams, streams)

__all__ = ["assert_agree_on_secondaries", "flattened", "secondary_streams"]

TWIN_MUTANTS = 50


def _closure(command_buffers: dict[str, list], cb: str) -> set[str]:
    """cb and the secondaries its execute_commands run, transitively."""
    out = {cb}
    for c in command_buffers[cb]:
        for s in c.get("command_buffers", ()) if c["cmd"] == "execute_commands" else ():
            out |= _closure(command_buffers, s)
    return out


@st.composite
def _carve(draw, command_buffers: dict[str, list], cb: str) -> None:
    """Move a run of cb's commands (none of them an execute_commands) into new secondaries, executed in their
    place by one vkCmdExecuteCommands (several secondaries: one after the other, spec 6.7)."""
    commands = command_buffers[cb]
    plain = [i for i, c in enumerate(commands) if c["cmd"] != "execute_commands"]
    if not plain:
        return
    lo = draw(st.sampled_from(plain))
    hi = lo + 1
    while hi < len(commands) and commands[hi]["cmd"] != "execute_commands" and draw(st.booleans()):
        hi += 1
    cuts = sorted(set(draw(st.lists(st.integers(lo + 1, hi - 1), max_size=2)))) if hi - lo > 1 else []
    names = []
    for a, b in zip([lo, *cuts], [*cuts, hi]):
        name = f"s{len(command_buffers)}"
        command_buffers[name] = commands[a:b]
        names.append(name)
    command_buffers[cb] = commands[:lo] + [{"cmd": "execute_commands", "command_buffers": names}] + commands[hi:]


@st.composite
def secondary_streams(draw) -> dict:
    doc = draw(resubmitting_streams() if draw(st.booleans()) else streams())
    assume(doc["command_buffers"])  # a stream of host operations only (streams() draws them now and then)
    command_buffers = {cb: list(commands) for cb, commands in doc["command_buffers"].items()}
    primaries = sorted(command_buffers)
    for cb in primaries:
        for _ in range(draw(st.integers(cb == primaries[0], 2))):  # the first primary executes one at least
            draw(_carve(command_buffers, cb))
    secondaries = sorted(set(command_buffers) - set(primaries))
    for s in secondaries:
        if draw(st.integers(0, 3)) == 0:  # nested: part of a secondary in a secondary of its own
            draw(_carve(command_buffers, s))
    for _ in range(draw(st.integers(0, 2)) if secondaries else 0):  # a secondary run by another primary too
        s, cb = draw(st.sampled_from(secondaries)), draw(st.sampled_from(primaries))
        if not _closure(command_buffers, s) & _closure(command_buffers, cb):
            at = draw(st.integers(0, len(command_buffers[cb])))
            command_buffers[cb] = command_buffers[cb][:at] + [{"cmd": "execute_commands", "command_buffers": [s]}] \
                + command_buffers[cb][at:]
    return {**doc, "name": "secondaries", "command_buffers": command_buffers}


def flattened(doc: dict) -> dict:
    """`doc` with each execute_commands replaced by its secondaries' commands, and no secondaries: its twin
    without secondary command buffers (spec 6.7: the same commands in the same submission order)."""
    cbs = doc["command_buffers"]

    def inline(cb: str) -> list[dict]:
        return [x for c in cbs[cb] for x in ([y for s in c["command_buffers"] for y in inline(s)]
                                             if c["cmd"] == "execute_commands" else [c])]
    secondaries = {s for commands in cbs.values() for c in commands if c["cmd"] == "execute_commands"
                   for s in c["command_buffers"]}
    return {**doc, "command_buffers": {cb: inline(cb) for cb in cbs if cb not in secondaries}}


def assert_agree_on_secondaries(doc: dict, compare) -> None:
    """differential.assert_agree, assuming away two known failures that are not the secondaries': a disagreement
    the flattened twin has too (the plain streams' tests own it), and check/exact.py's KeyError naming a secondary's
    command (test_secondaries.py test_a_racing_secondary_command_has_a_witness)."""
    # The mutation analysis samples its mutants by the operations' names, which flattening changes: the twin
    # tries many, so as to try those the stream did.
    twin = partial(consumer_disagreements, mutants=TWIN_MUTANTS) if compare is consumer_disagreements else compare

    def unless_flattened_too(doc: dict) -> list[str]:
        found = compare(doc)
        assume(not found or not twin(flattened(doc)))
        return found
    try:
        assert_agree(doc, unless_flattened_too)
    except KeyError as error:
        frame = traceback.extract_tb(error.__traceback__)[-1]
        assume(not (frame.filename.endswith("exact.py") and frame.name == "node"))
        raise


def _agree(doc: dict) -> None:
    for compare in (disagreements, fix_disagreements, consumer_disagreements):
        assert_agree_on_secondaries(doc, compare)


if __name__ == "__main__":
    # A long run: python -m tests.secondary_streams [examples], PYTHONPATH at the checkout.
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    drawn, assumed = [0], [0]  # streams drawn, and assumed away (assert_agree_on_secondaries)

    def agree_counted(doc: dict) -> None:
        drawn[0] += 1
        if drawn[0] % 250 == 0:
            print(f"{drawn[0]} drawn, {assumed[0]} assumed away", flush=True)
        try:
            _agree(doc)
        except UnsatisfiedAssumption:
            assumed[0] += 1
            raise
    settings(max_examples=examples, **SETTINGS)(given(secondary_streams())(agree_counted))()
    print(f"{examples} examples ({drawn[0]} drawn, {assumed[0]} assumed away): the fast checker, the reference, "
          "explain and the mutation analysis agree")
