"""Witness slices (check/witness.py, issue 19): short, and every step needed.

A slice starts where the full witness schedule reaches its first event (the cut); what ran before is
the past. Past and slice are replayed with the walk (check/walk.py, the checker's rules for what may
run next) on the program restricted to their host ops (every other op deleted): they must be a legal
schedule prefix of it that shows the pair (the second access runs while the first's batch has begun,
and that batch ends after it; for a non-increasing signal, the two signals in the finding's order).
Dropping any one step of the slice must break that. Nothing here reads the witness code's own
bookkeeping.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vkverify.check import check
from vkverify.check.params import instance
from vkverify.check.walk import Consumer, Walk
from vkverify.cli import main
from vkverify.model import from_dict, ir
from vkverify.model.refs import format_ref, parse_ref, split_ref

from .conftest import CORPUS, ROOT
from .differential import SETTINGS, streams
from .test_semaphores import timeline_streams

MOST_STEPS = 40


def _benchmark():
    spec = importlib.util.spec_from_file_location("semaphores_benchmark", ROOT / "benchmarks" / "semaphores.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The ring streams of benchmarks/semaphores.py: every cross-round wait dropped (witnesses at the first
# rounds), or only x0's at the last round (a witness after 2(n-1) rounds of correct synchronization).
RING_DROPPED = [from_dict(_benchmark().ring(n, drop_wait=True)) for n in range(2, 9)]
RING_ONE_DROPPED = [from_dict(_benchmark().ring_one_wait_dropped(n)) for n in range(2, 9)]


class Replay:
    """The walk over `stream` restricted to the host ops named in `events` (every other op deleted)."""

    def __init__(self, stream: ir.Stream, events: list[str]) -> None:
        kept = {e for e in events if " " not in e and parse_ref(e).owner in stream.index.threads}
        self.new_ref: dict[str, str] = {}  # a kept host op's ref in the stream -> in the restricted one
        threads = []
        for t in stream.threads:
            ops = []
            for pc, op in enumerate(t.ops):
                if format_ref(t.id, pc) in kept:
                    self.new_ref[format_ref(t.id, pc)] = format_ref(t.id, len(ops))
                    ops.append(op)
            threads.append(replace(t, ops=tuple(ops)))
        self.stream = replace(stream, threads=tuple(threads))
        self.walk = Walk(self.stream, Consumer())
        self.begun: set[str] = set()
        self.ended: set[str] = set()

    def pending(self, key: str):
        """The restricted walk's pending batch for batch key `key` (`main[6]`, `main[6].batches[1]`)."""
        ref, rest = split_ref(key)
        index = int(rest[len(".batches["):-1]) if rest else 0
        submit = self.new_ref.get(str(ref))
        return next(((q, p) for q, ps in self.walk.pending.items() for p in ps
                     if p.submit == submit and p.index == index), (None, None))

    def step(self, event: str) -> bool:
        """Run one host op or batch event; False where the walk's rules forbid it now."""
        key, _, when = event.partition(" ")
        if not when:
            ref = parse_ref(self.new_ref[event])
            thread = [t.id for t in self.stream.threads].index(ref.owner)
            return self.walk.pc[thread] == ref.index and self.walk.step_host(thread)
        queue, p = self.pending(key)
        if p is None:
            return False
        if when == "begin":
            earlier = list(self.walk.pending[queue])[:list(self.walk.pending[queue]).index(p)]
            if not all(self._key(b) in self.begun for b in earlier) or self.walk.acquires(p) is None:
                return False
            self.begun.add(key)
            return True
        if key not in self.begun or self.walk.pending[queue][0] is not p or not self.walk.step_batch(queue):
            return False
        self.ended.add(key)
        return True

    def _key(self, p) -> str:
        old = next(o for o, n in self.new_ref.items() if n == p.submit)
        submit = self.stream.index.threads[parse_ref(p.submit).owner].ops[parse_ref(p.submit).index]
        return old if len(submit.batches or (ir.Batch(),)) == 1 else f"{old}.batches[{p.index}]"


def batch_of(stream: ir.Stream, ref: str) -> str | None:
    """The batch key whose batch runs the command `ref` (None for a host op)."""
    command, _, submit = ref.partition("@")
    owner = parse_ref(command).owner
    if owner in stream.index.threads:
        return None
    for t in stream.threads:
        for pc, op in enumerate(t.ops):
            if isinstance(op, ir.Submit) and (not submit or submit == format_ref(t.id, pc)):
                for k, b in enumerate(op.batches):
                    if owner in b.command_buffers:
                        return format_ref(t.id, pc) if len(op.batches) == 1 else f"{format_ref(t.id, pc)}.batches[{k}]"
    raise AssertionError(f"{ref} is in no submitted batch")


def shows(stream: ir.Stream, past: list[str], events: list[str], f) -> bool:
    """Whether `past` then `events` is a legal schedule prefix of the program restricted to their host ops,
    and `events` shows f."""
    replay = Replay(stream, past + events)
    assert all(replay.step(e) for e in past), "the full witness's past does not replay"
    if f.first is not None:
        accesses = {f.first: batch_of(stream, f.first), f.second: batch_of(stream, f.second)}
    else:  # timeline_not_increasing
        accesses = {}
    seen = []
    for e in events:
        if e in accesses and accesses[e] is not None:  # a command: its batch has begun and not ended
            if accesses[e] not in replay.begun or accesses[e] in replay.ended:
                return False
        elif not replay.step(e):
            return False
        seen.append(e)
    if f.first is not None:
        first_end = [] if accesses[f.first] is None else [f"{accesses[f.first]} end"]
        order = [f.second, f.first] + first_end
    else:
        order = [signal_event(stream, op) for op in f.ops]
    return all(e in seen for e in order) and [seen.index(e) for e in order] == sorted(seen.index(e) for e in order)


def signal_event(stream: ir.Stream, ref: str) -> str:
    """Where the signal of a host op or submit happens: the host op, or the end of the submit's batch that
    signals (the last, if several)."""
    op = stream.index.threads[parse_ref(ref).owner].ops[parse_ref(ref).index]
    if not isinstance(op, ir.Submit):
        return ref
    k = max(k for k, b in enumerate(op.batches) if b.signals)
    return f"{ref} end" if len(op.batches) == 1 else f"{ref}.batches[{k}] end"


def _witnessed(streams):
    """(the instance checked, its finding with a slice, the same finding's full witness)."""
    for stream in streams:
        for f, full in zip(check(stream), check(stream, witness="full")):
            if f.witness is not None:
                yield instance(stream, f.params), f, full.witness


def test_every_default_witness_is_a_short_slice_of_needed_steps():
    seen = 0
    for stream, f, full in _witnessed([from_dict(json.loads(p.read_text())) for p in CORPUS] + RING_DROPPED
                                   + RING_ONE_DROPPED):
        assert len(f.witness) <= MOST_STEPS, (f.kind, f.first, f.second, f.witness)
        assert_needed_steps(stream, f, full)
        assert len(f.witness_steps) == len(f.witness) and all(f.witness_steps)
        seen += 1
    assert seen >= 20


def assert_needed_steps(stream: ir.Stream, f, full: tuple[str, ...]) -> None:
    events = list(f.witness)
    assert [e for e in full if e in events] == events, "the slice is not the full schedule restricted to it"
    past = [e for e in full[:full.index(events[0])] if e not in (f.first, f.second)]
    assert shows(stream, past, events, f), (stream.name, f.kind, events)
    for i, dropped in enumerate(events):
        assert not shows(stream, past, events[:i] + events[i + 1:], f), \
            f"{stream.name}: {f.kind} {f.first} {f.second}: {dropped} is not needed in {events}"


def witness_disagreements(doc: dict) -> list[str]:
    """Each witness of `doc` that does not show its finding, or has a step it does not need (empty: none)."""
    out = []
    for stream, f, full in _witnessed([from_dict(doc)]):
        try:
            assert_needed_steps(stream, f, full)
        except AssertionError as e:
            out.append(f"{f.kind} {f.first} -> {f.second}: {e}")
    return out


@settings(max_examples=150, **SETTINGS)
@given(st.one_of(timeline_streams(), streams()))
def test_every_step_of_random_streams_witnesses_is_needed(doc):
    """Several queues and host threads, binary and timeline semaphores, fences, idle waits, host accesses."""
    found = witness_disagreements(doc)
    assert not found, found


# Thread use waits for q0 to idle, then submits cb1 to q1; thread up submits cb0 to q0. In the walk's submission
# order up's submit comes first and the idle wait covers it; with the wait first, the two fills race.
IDLE_WAIT_FIRST = {
    "format": "vkverify-stream/1", "name": "idle-wait-before-the-other-threads-submit",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0"}, {"id": "q1"}]}], "buffers": [{"id": "B0", "size": 64}],
    "command_buffers": {cb: [{"cmd": "fill", "dst": "B0", "value": 7}] for cb in ("cb0", "cb1")},
    "threads": {"up": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}],
                "use": [{"op": "queue_wait_idle", "queue": "q0"},
                        {"op": "submit", "queue": "q1", "command_buffers": ["cb1"]}]}}


def test_the_witness_of_a_finding_of_another_submission_order_is_walked_in_it():
    """The racing WAW is of the order with the idle wait first (Finding.order): its witness is walked there, as a
    walk in the walk's own order, where the wait orders the two, finds none."""
    stream = from_dict(IDLE_WAIT_FIRST)
    (f,), (full,) = check(stream), check(stream, witness="full")
    assert (f.kind, f.first, f.second, f.racing) == ("waw", "cb0[0]", "cb1[0]", True)
    assert f.order == {"q0": (("use", 0), ("up", 0)), "q1": (("use", 1),)}
    assert f.witness is not None and full.witness[:2] == ("use[0]", "use[1]")
    assert_needed_steps(stream, f, full.witness)


def test_a_slice_is_the_full_schedule_restricted_to_its_events():
    stream = RING_DROPPED[-1]
    for sliced, full in zip(check(stream), check(stream, witness="full")):
        if sliced.witness is not None:
            assert full.witness is not None and len(full.witness) > 2 * len(sliced.witness)
            assert [e for e in full.witness if e in sliced.witness] == list(sliced.witness)


def _class(f, stream) -> tuple:
    return f.buffer, batch_of(stream, f.first), batch_of(stream, f.second)


@pytest.mark.parametrize("limit", [1, 5])
def test_witnesses_per_stream_are_limited_and_shared_by_class(limit):
    stream = RING_DROPPED[-1]  # n = 8: 104 racing war findings, 8 (buffer, pair of queues) classes
    findings = check(stream, witnesses=limit)
    computed = [i for i, f in enumerate(findings) if f.witness is not None]
    assert len(computed) == limit
    queues = {}
    for op, batch in ir.batches(stream):
        queues.update({cb: op.queue for cb in batch.command_buffers})
    agents = [(f.buffer, queues[parse_ref(f.first).owner], queues[parse_ref(f.second).owner]) for f in findings]
    for i, f in enumerate(findings):
        if f.witness_same_as is not None:
            k = f.witness_same_as - 1
            assert findings[k].witness is not None and agents[k] == agents[i] and k < i
        if f.kind == "war":
            assert (f.witness is not None) + (f.witness_same_as is not None) + (f.witness_limit == limit) == 1
    assert sum(f.witness_limit is not None for f in findings) == (8 - limit) * 13


def test_cli_witness_options(capsys):
    path = str(ROOT / "tests" / "corpus" / "81-ring-allreduce-no-cross-round-wait.json")
    assert main(["check", "--format", "json", "--witness", "full", path]) == 1
    full = [f for f in json.loads(capsys.readouterr().out)[0]["findings"] if "witness" in f]
    assert main(["check", "--format", "json", path]) == 1
    sliced = [f for f in json.loads(capsys.readouterr().out)[0]["findings"] if "witness" in f]
    assert len(full) == len(sliced) == 2
    assert all(len(s["witness"]) < len(f["witness"]) == len(f["witness_steps"]) for s, f in zip(sliced, full))
    assert main(["check", "--witnesses", "1", path]) == 1
    out = capsys.readouterr().out
    assert "witness (14 steps):" in out and "witness: not computed (limit 1 per stream" in out
    assert '      send0_1[0]     second access: "send chunk" copy/transfer_write' in out
    with pytest.raises(SystemExit) as usage:
        main(["check", "--witnesses", "-1", path])
    assert usage.value.code == 2 and "--witnesses: must be at least 0, got -1" in capsys.readouterr().err
