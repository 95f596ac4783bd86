"""The legal-order walk (vkverify/check/walk.py): its rules one by one, and its consumers against each
other and against the z3 schedule semantics (check/smt.py), which encodes every order at once."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings

from vkverify.check import check, smt
from vkverify.check.hb import Model
from vkverify.check.engine import Checker
from vkverify.check.schedule import Schedule
from vkverify.check.walk import Consumer, Misuse, PendingBatch, Walk
from vkverify.model import from_dict, ir, load
from vkverify.sim.order import reference_order

from .conftest import CORPUS
from .differential import streams

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_DIFFERENTIAL_EXAMPLES", "400")) // 2
# Misuse found at the end of the walk, about what is left blocked.
BLOCKED_KINDS = {"deadlock", "wait_never_satisfied"}


class Recorder(Consumer):
    """Names each release after the op that makes it; keeps what ran, what each op acquired, the misuse."""

    def __init__(self, stream) -> None:
        self.threads = [t.id for t in stream.threads]
        self.ran: list[str] = []
        self.acquired_by: dict[str, list] = {}
        self.misuses: list[Misuse] = []

    def batch(self, queue: str, p: PendingBatch, acquired: list):
        ref = f"{p.submit}.batches[{p.index}]"
        self.ran.append(ref)
        self.acquired_by[ref] = acquired
        return [f"{ref}.signal[{i}]" for i in range(len(p.batch.signals))], f"{ref}.fence"

    def host_wait(self, thread, pc, op, acquired) -> None:
        self.ran.append(f"{self.threads[thread]}[{pc}]")
        self.acquired_by[self.ran[-1]] = acquired

    def signal_semaphore(self, thread, pc, op) -> str:
        self.ran.append(f"{self.threads[thread]}[{pc}]")
        return self.ran[-1]

    def misuse(self, m: Misuse) -> None:
        self.misuses.append(m)


def walked(ops: list[dict], semaphores=(), fences=(), queues=("q0",)) -> tuple[Walk, Recorder]:
    doc = {"format": "vkverify-stream/1", "name": "walk",
           "devices": [{"id": "gpu0", "queues": [{"id": q, "family": 0} for q in queues]}],
           "buffers": [{"id": "B", "size": 64, "memory": "device_local"}],
           "semaphores": list(semaphores), "fences": list(fences),
           "command_buffers": {"cb0": [{"cmd": "fill", "dst": "B", "value": 1}]},
           "threads": {"main": ops}}
    stream = from_dict(doc)
    recorder = Recorder(stream)
    walk = Walk(stream, recorder)
    walk.run()
    walk.report_blocked()
    return walk, recorder


def kinds(recorder: Recorder) -> list[tuple[str, tuple[str, ...]]]:
    return [(m.kind, m.ops) for m in recorder.misuses]


SUBMIT = {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}
T = {"id": "T", "type": "timeline"}
S = {"id": "S", "type": "binary"}


def test_a_timeline_wait_acquires_the_first_signal_at_or_above_its_value():
    """Spec 7.4.2: the batch waiting for 2 runs after the host signals 3 (no signal of 2), acquiring it."""
    walk, r = walked([{**SUBMIT, "wait": [{"semaphore": "T", "value": 2, "stage": ["copy"]}]},
                      {"op": "signal_semaphore", "semaphore": "T", "value": 3},
                      {"op": "signal_semaphore", "semaphore": "T", "value": 4}], semaphores=[T])
    assert r.ran == ["main[1]", "main[0].batches[0]", "main[2]"]
    assert r.acquired_by["main[0].batches[0]"] == ["main[1]"]
    assert not walk.blocked() and not r.misuses


def test_a_timeline_signal_not_above_the_current_value_is_misuse():
    _walk, r = walked([{"op": "signal_semaphore", "semaphore": "T", "value": 2},
                      {"op": "signal_semaphore", "semaphore": "T", "value": 2}], semaphores=[T])
    assert kinds(r) == [("timeline_not_increasing", ("main[0]", "main[1]"))]


def test_a_binary_wait_pairs_with_the_oldest_pending_signal_and_runs_after_it():
    _walk, r = walked([{**SUBMIT, "signal": [{"semaphore": "S"}]},
                      {**SUBMIT, "queue": "q1", "wait": [{"semaphore": "S", "stage": ["copy"]}]}],
                     semaphores=[S], queues=("q0", "q1"))
    assert r.ran == ["main[0].batches[0]", "main[1].batches[0]"]
    assert r.acquired_by["main[1].batches[0]"] == ["main[0].batches[0].signal[0]"]
    assert not r.misuses


def test_a_binary_wait_submitted_before_its_signal_is_misuse_and_is_ignored():
    """Spec 7.4.2: a binary wait must not be submitted before the signal it waits for."""
    walk, r = walked([{**SUBMIT, "wait": [{"semaphore": "S", "stage": ["copy"]}]},
                      {**SUBMIT, "queue": "q1", "signal": [{"semaphore": "S"}]}],
                     semaphores=[S], queues=("q0", "q1"))
    assert kinds(r) == [("binary_semaphore_misuse", ("main[0]",))]
    assert r.acquired_by["main[0].batches[0]"] == [None]
    assert not walk.blocked()


def test_a_second_binary_signal_while_one_is_pending_is_misuse():
    _walk, r = walked([{**SUBMIT, "signal": [{"semaphore": "S"}]}, {**SUBMIT, "signal": [{"semaphore": "S"}]}],
                     semaphores=[S])
    assert kinds(r) == [("binary_semaphore_misuse", ("main[0]", "main[1]"))]


def test_a_fence_wait_acquires_the_fence_signal_and_a_reset_fence_blocks_it():
    """Spec 7.3: waiting for a fence no pending submission signals never returns."""
    walk, r = walked([{**SUBMIT, "fence": "F"}, {"op": "wait_fences", "fences": ["F"]},
                      {"op": "reset_fences", "fences": ["F"]}, {"op": "wait_fences", "fences": ["F"]}],
                     fences=[{"id": "F"}])
    assert r.acquired_by["main[1]"] == ["main[0].batches[0].fence"]
    assert walk.blocked() == ["main[3]"]
    assert kinds(r) == [("fence_misuse", ("main[3]",))]


def test_resubmitting_a_fence_not_reset_is_misuse():
    _walk, r = walked([{**SUBMIT, "fence": "F"}, {**SUBMIT, "fence": "F"}], fences=[{"id": "F"}])
    assert kinds(r) == [("fence_misuse", ("main[0]", "main[1]"))]


def test_an_idle_wait_blocks_while_a_batch_is_pending_a_deadlock():
    """Spec 5.3.4: vkQueueWaitIdle returns once the queue's work completes; the host signal after it that
    the queue waits for is never made. The deadlock names the semaphore wait, its cause; the idle wait is
    only blocked in turn."""
    walk, r = walked([{**SUBMIT, "wait": [{"semaphore": "T", "value": 1, "stage": ["copy"]}]},
                      {"op": "queue_wait_idle", "queue": "q0"},
                      {"op": "signal_semaphore", "semaphore": "T", "value": 1}], semaphores=[T])
    assert walk.blocked() == ["main[1]", "main[0]"]
    assert kinds(r) == [("deadlock", ("main[0]",))]


def test_a_wait_for_a_value_nothing_signals_is_never_satisfied():
    _walk, r = walked([{"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 5}]}], semaphores=[T])
    assert kinds(r) == [("wait_never_satisfied", ("main[0]",))]


@settings(max_examples=EXAMPLES_RUN, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_the_consumers_walk_one_order(doc):
    """The checker, hb.Model and the simulator's reference order run and block the same operations."""
    stream = from_dict(doc)
    checker = Checker(stream)
    walk = Walk(stream, Schedule(checker))
    walk.run()
    walk.report_blocked()
    findings = checker.result()
    blocked = set(walk.blocked())
    assert {h[1] for h in Model(stream).hazards if h[0] == "blocked"} == blocked
    ops = stream.threads[0].ops
    pending = {(p.submit, p.index) for q in walk.pending.values() for p in q}
    ran = {f"main[{i}]" for i, op in enumerate(ops[:walk.pc[0]]) if isinstance(op, (ir.HostAccess, ir.Destroy))}
    for i, op in enumerate(ops[:walk.pc[0]]):
        batches = (op.batches or (ir.Batch(),)) if isinstance(op, ir.Submit) else ()
        for n, batch in enumerate(batches):
            if (f"main[{i}]", n) not in pending:
                ran.update(stream.index.command_ref(cb, k, f"main[{i}]") for cb in batch.command_buffers
                           for k, c in enumerate(stream.index.command_buffers[cb].commands)
                           if not isinstance(c, ir.Barrier))
    assert {s.ref for s in reference_order(stream)} == ran
    assert bool(blocked) == any(f.kind in BLOCKED_KINDS | {"fence_misuse"} and f.first is None
                                and set(f.ops) & blocked for f in findings)


@settings(max_examples=EXAMPLES_RUN, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_the_walk_completes_exactly_when_some_schedule_does(doc):
    """z3 encodes every order: a one-thread stream without misuse completes in the walk's one order exactly
    when some schedule completes (running ready batches at once never delays any other op)."""
    stream = from_dict(doc)
    recorder = Recorder(stream)
    walk = Walk(stream, recorder)
    walk.run()
    if recorder.misuses:
        return  # a misused wait means something else to each (the walk ignores it, z3 pairs it later)
    complete = smt.Semantics(stream).blocking_core() is None
    assert complete == (not walk.blocked()), json.dumps(doc)


def test_a_deadlock_of_one_submission_order_is_worded_as_that_order_s():
    """Corpus 260: the walk's own order blocks and another completes: a hang in that order, not in every schedule;
    corpus 53 (one thread) blocks in every schedule."""
    def deadlock(name: str) -> str:
        (path,) = [p for p in CORPUS if p.name.startswith(f"{name}-")]
        (found,) = [f for f in check(load(path)) if f.kind == "deadlock"]
        return found.message

    assert deadlock("260").startswith("in the submission order the walk took") and "other orders complete" in \
        deadlock("260")
    assert deadlock("53").startswith("no schedule completes")
