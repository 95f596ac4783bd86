"""The fast checker against the slow reference, and explain and the mutation analysis against both, on streams
whose primaries execute secondary command buffers (tests/secondary_streams.py). VKVERIFY_SECONDARY_EXAMPLES sets
how many streams are drawn; `python -m tests.secondary_streams N` is the long run."""

from __future__ import annotations

import os

from hypothesis import given, settings

from vkverify.check import check
from vkverify.model import from_dict, ir

from .differential import SETTINGS, consumer_disagreements, disagreements, fix_disagreements
from .secondary_streams import assert_agree_on_secondaries, flattened, secondary_streams

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_SECONDARY_EXAMPLES", "300"))

# q0 and q1 both wait for the host's signal, so nothing orders s2[0] and cb0[0]: a racing WAW whose witness names
# the batch that runs s2[0].
RACING_SECONDARY = {
    "format": "vkverify-stream/1", "name": "racing-secondary",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 0}]}],
    "buffers": [{"id": "B0", "size": 64}], "semaphores": [{"id": "H", "type": "timeline"}],
    "command_buffers": {"cb0": [{"cmd": "fill", "dst": "B0", "size": 4, "value": 7}],
                        "cb1": [{"cmd": "execute_commands", "command_buffers": ["s2"]}],
                        "s2": [{"cmd": "fill", "dst": "B0", "size": 4, "value": 7}]},
    "threads": {"main": [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"],
         "wait": [{"semaphore": "H", "value": 1, "stage": ["all_commands"]}]},
        {"op": "submit", "queue": "q1", "command_buffers": ["cb1"],
         "wait": [{"semaphore": "H", "value": 1, "stage": ["all_commands"]}]},
        {"op": "signal_semaphore", "semaphore": "H", "value": 1}]},
}


def test_a_racing_secondary_command_has_a_witness():
    """check/exact.py finds the batch of a secondary's command through the command buffer that executes it."""
    [f] = check(from_dict(RACING_SECONDARY))
    assert (f.kind, f.first, f.second, f.racing) == ("waw", "cb0[0]", "s2[0]", True)


# Drawn by secondary_streams and shrunk: B0 [0, 4) is filled at the clear stage and never made available (the
# barrier's source access is none; the signal's stage, compute_shader, leaves the clear stage out of its scope),
# then written by s0[0]'s atomic dispatch, which the signal orders before cb2. s0[0] hides the fill from cb2[0] and
# cb2[1] (docs/format.md rule 10): only s0[0] reads it unsynchronized. The checker once reported the fill against
# cb2[1]: cb2[0], which happens after s0[0] but not before cb2[1], stood for s0[0] (Segment.hiders). Its flattened
# twin (no secondaries) alike.
UNAVAILABLE_FILL = {
    "format": "vkverify-stream/1", "name": "atomics-after-unavailable-fill",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q2", "family": 0}]}],
    "buffers": [{"id": "B0", "size": 64}, {"id": "B1", "size": 64}],
    "semaphores": [{"id": "Tq2", "type": "timeline"}],
    "shaders": {"a": {"bindings": ["atomic"]}, "ar": {"bindings": ["atomic", "read"]}},
    "command_buffers": {
        "cb1": [{"cmd": "fill", "dst": "B0", "offset": 0, "size": 4, "value": 7},
                {"cmd": "barrier", "src_stage": ["clear"], "src_access": [], "dst_stage": ["top_of_pipe"],
                 "dst_access": ["none"], "buffers": [{"buffer": "B0"}]},
                {"cmd": "execute_commands", "command_buffers": ["s0"]}],
        "s0": [{"cmd": "dispatch_indirect", "shader": "ar", "indirect": {"buffer": "B0", "offset": 16},
                "bindings": [{"buffer": "B0"}, {"buffer": "B1", "offset": 0, "size": 1}]}],
        "cb2": [{"cmd": "dispatch", "shader": "a", "bindings": [{"buffer": "B0", "offset": 0, "size": 1}]},
                {"cmd": "dispatch", "shader": "ar", "bindings": [{"buffer": "B0", "offset": 0, "size": 1},
                                                                  {"buffer": "B1", "offset": 0, "size": 1}]}]},
    "threads": {"main": [
        {"op": "submit", "queue": "q2", "command_buffers": ["cb1"],
         "signal": [{"semaphore": "Tq2", "value": 1, "stage": ["compute_shader"]}]},
        {"op": "wait_semaphores", "waits": [{"semaphore": "Tq2", "value": 1}]},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb2"]}]},
}


def test_atomics_after_a_write_never_made_available():
    assert disagreements(flattened(UNAVAILABLE_FILL)) == disagreements(UNAVAILABLE_FILL) == []
    assert {(f.kind, f.first, f.second) for f in check(from_dict(UNAVAILABLE_FILL)) if f.first} == \
        {("raw", "cb1[0]", "s0[0]")}


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(secondary_streams())
def test_fast_checker_agrees_with_the_reference_on_secondaries(doc):
    assert_agree_on_secondaries(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 3, **SETTINGS)
@given(secondary_streams())
def test_fixes_inside_secondaries_order_their_pairs(doc):
    assert_agree_on_secondaries(doc, fix_disagreements)


@settings(max_examples=EXAMPLES_RUN // 3, **SETTINGS)
@given(secondary_streams())
def test_explain_and_mutations_agree_on_secondaries(doc):
    assert_agree_on_secondaries(doc, consumer_disagreements)


@settings(max_examples=50, **SETTINGS)
@given(secondary_streams())
def test_the_generator_executes_secondaries(doc):
    """What the comparisons run on: loadable streams in which a primary executes a secondary command buffer."""
    stream = from_dict(doc)
    assert any(isinstance(c, ir.ExecuteCommands) for cb in stream.command_buffers for c in cb.commands)
