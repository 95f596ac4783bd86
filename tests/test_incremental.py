"""The incremental checker state (vkverify/check/incremental.py) against a from-scratch check.

Fed one op at a time, it must find on every prefix what the checker finds on that prefix as a stream
(schedule.Schedule, before exact.refine); a fork fed other ops (the stream without one op) must find
what the checker finds on that other stream, and leave the state it was forked from as it was.
VKVERIFY_INCREMENTAL_EXAMPLES sets how many streams are drawn.
"""

from __future__ import annotations

import os
from dataclasses import replace

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vkverify.check.incremental import Incremental
from vkverify.check.engine import Checker
from vkverify.check.schedule import Schedule
from vkverify.model import from_dict, ir
from vkverify.model.refs import without_submit
from vkverify.mutations import operators as o

from .differential import SETTINGS, resubmitting_streams, streams

# Resubmitted command buffers are replayed from a plan by the checker (check/replay.py): forks copy it.
ANY_STREAM = st.one_of(streams(), resubmitting_streams())

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_INCREMENTAL_EXAMPLES", "150"))


def empty(stream: ir.Stream) -> Incremental:
    """A state of `stream`'s resources and command buffers, no op fed yet."""
    return Incremental(replace(stream, threads=tuple(ir.Thread(t.id, ()) for t in stream.threads)))


def named(findings) -> list[tuple]:
    """Findings by what they are about. A command buffer submitted twice names its commands by submit from
    then on (docs/format.md): fed one op at a time, those found before the second submit keep the name
    they had when found, so submits are left out of the comparison: of the accesses and of a misuse's ops (an
    event wait nothing sets, in a command buffer submitted again)."""
    return sorted(((f.kind, f.buffer, f.range, f.first and without_submit(f.first),
                    f.second and without_submit(f.second), f.first_access, f.second_access, f.racing,
                    f.ops and tuple(map(without_submit, f.ops))) for f in findings), key=repr)


def scratch(stream: ir.Stream) -> list:
    return named(Schedule(Checker(stream)).run())


def resubmits(stream: ir.Stream) -> bool:
    return bool(stream.index.resubmitted)


def prefix_disagreements(doc: dict) -> list[str]:
    """How the state fed `doc`'s ops one at a time differs from a check of each prefix (empty: agrees)."""
    stream = from_dict(doc)
    [thread] = stream.threads
    state = empty(stream)
    out = []
    for k, op in enumerate(thread.ops):
        state.feed(thread.id, op)
        prefix = replace(stream, threads=(ir.Thread(thread.id, thread.ops[:k + 1]),))
        if named(state.findings_at_end()) != scratch(prefix):
            out.append(f"after op {k}: fed {named(state.findings_at_end())}, checked {scratch(prefix)}")
    if not resubmits(stream) and state.findings_at_end() != Schedule(Checker(stream)).run():
        out.append("nothing renamed, yet the findings differ in message or fix")  # the very same findings
    return out


def fork_disagreements(doc: dict, dropped: int) -> list[str]:
    """How a fork fed the ops after op `dropped` (not it) differs from a check of the stream without it, and
    how the state forked differs afterwards from a check of the whole stream (empty: agrees)."""
    stream = from_dict(doc)
    [thread] = stream.threads
    state = empty(stream)
    for op in thread.ops[:dropped]:
        state.feed(thread.id, op)
    before = (state.mark(), named(state.findings_at_end()))
    fork = state.fork()
    for op in thread.ops[dropped + 1:]:
        fork.feed(thread.id, op)
    without, _ = o.drop_host_op(stream, thread.id, dropped)
    out = []
    if named(fork.findings_at_end()) != scratch(without):
        out.append(f"fork without op {dropped}: fed {named(fork.findings_at_end())}, checked {scratch(without)}")
    if (state.mark(), named(state.findings_at_end())) != before:
        out.append(f"feeding the fork without op {dropped} changed the state it was forked from")
    for op in thread.ops[dropped:]:
        state.feed(thread.id, op)
    if named(state.findings_at_end()) != scratch(stream):
        out.append(f"forked at op {dropped}, then fed on: {named(state.findings_at_end())}, checked {scratch(stream)}")
    return out


def incremental_disagreements(doc: dict) -> list[str]:
    """Every prefix, and a fork without each op in turn (benchmarks/differential.py --mode incremental)."""
    ops = len(doc["threads"]["main"])
    return prefix_disagreements(doc) + [d for k in range(ops) for d in fork_disagreements(doc, k)]


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(ANY_STREAM)
def test_every_prefix_finds_what_a_check_of_it_finds(doc):
    found = prefix_disagreements(doc)
    assert not found, found


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(ANY_STREAM, st.data())
def test_a_fork_fed_other_ops_finds_what_a_check_of_them_finds(doc, data):
    assume(doc["threads"]["main"])
    found = fork_disagreements(doc, data.draw(st.integers(0, len(doc["threads"]["main"]) - 1)))
    assert not found, found


def test_a_wait_on_a_later_signal_resumes_when_the_signal_is_fed():
    doc = {"format": "vkverify-stream/1", "name": "later signal",
           "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 0}]}],
           "buffers": [{"id": "B", "size": 64, "memory": "device_local"}],
           "semaphores": [{"id": "T", "type": "timeline", "initial": 0}],
           "command_buffers": {"w": [{"cmd": "fill", "dst": "B", "value": 1}],
                               "r": [{"cmd": "copy", "src": "B", "dst": "B", "regions": [
                                   {"src_offset": 0, "dst_offset": 32, "size": 32}]}]},
           "threads": {"main": [
               {"op": "submit", "queue": "q1", "wait": [{"semaphore": "T", "value": 1}], "command_buffers": ["r"]},
               {"op": "submit", "queue": "q0", "command_buffers": ["w"], "signal": [{"semaphore": "T", "value": 1}]},
               {"op": "device_wait_idle", "device": "gpu0"}]}}
    stream = from_dict(doc)
    state = empty(stream)
    ops = stream.threads[0].ops
    state.feed("main", ops[0])
    assert state.walk.pending["q1"] and state.findings_since(0) == []  # blocked: nothing of it ran
    blocked = state.findings_at_end()
    assert [f.kind for f in blocked] == ["wait_never_satisfied"]  # as a check of the stream so far says
    state.feed("main", ops[1])
    assert not state.walk.pending["q1"]  # the signal came: the wait ran after it, ordered
    state.feed("main", ops[2])
    assert state.findings_at_end() == Schedule(Checker(stream)).run() == []


def test_a_forked_barrier_log_sees_the_barriers_recorded_after_the_fork():
    """BarrierLog.fork's memo of moving barriers holds position lists that grow in place: a fork must hold its
    own, or a query it asked before the fork misses the barriers recorded after it (the runtime mutation listing
    then judged a dropped host wait on a stale log)."""
    from vkverify.check.barriers import BarrierLog, compile_barrier

    stream = from_dict({"format": "vkverify-stream/1", "devices": [{"id": "gpu0", "queues": [{"id": "q0"}]}],
                        "buffers": [{"id": "B", "size": 64}]})
    to_compute = compile_barrier(ir.Barrier(frozenset({"compute_shader"}), frozenset({"shader_storage_write"}),
                                            frozenset({"compute_shader"}), frozenset({"shader_storage_read"})),
                                 stream.index)
    log = BarrierLog()
    query = ("compute_shader", "shader_storage_write", "B", 0, 64)
    log.add(1, to_compute, 1)
    assert [s.chain for _, _, s in log.state_at(*query, 0, 2)] != [frozenset()]  # the first barrier orders it
    fork = log.fork()
    fork.add(5, to_compute, 1)
    fresh = BarrierLog()
    fresh.add(1, to_compute, 1)
    fresh.add(5, to_compute, 1)
    # From position 3, only the fork's own barrier at 5 can order the access.
    assert fork.state_at(*query, 3, 6) == fresh.state_at(*query, 3, 6) != log.state_at(*query, 3, 6)
