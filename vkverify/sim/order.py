"""Serial orders of a stream's data operations (the steps the simulator executes).

`reference_order` is the checker's legal serial order (vkverify/check/schedule.py):
host threads in program order, each queue's batches run as soon as they are
submitted and their waits allow, queues in order. `random_order` is any other
interleaving the same waits allow, picked by a seeded generator; `after` keeps
given pairs in their reference order (the checker's findings: the simulator
perturbs those explicitly and must not reorder them by chance).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..model import ir
from ..model.refs import format_ref

__all__ = ["Step", "random_order", "reference_order"]


@dataclass(frozen=True)
class Step:
    """One data operation: a command (not a barrier) or a host op, named as the checker names it."""

    ref: str
    agent: str  # the queue or host thread that performs it
    op: ir.Command | ir.HostOp


@dataclass(eq=False)
class _Signal:
    """A binary semaphore signal; `done` once its batch has executed."""

    done: bool = False


@dataclass(eq=False)
class _Pending:
    submit: str
    batch: ir.Batch
    binary_waits: list  # the _Signal each binary wait consumes (None: misuse, the wait is ignored)
    binary_signals: dict  # signal index -> _Signal
    fence: str | None
    refs: tuple[str, ...] = field(default=())


class _World:
    """Queues, fences and semaphores as the checker's scheduler models them."""

    def __init__(self, stream: ir.Stream) -> None:
        self.index = stream.index
        self.threads = [(t.id, t.ops) for t in stream.threads]
        self.pc = {t.id: 0 for t in stream.threads}
        self.queues: dict[str, deque[_Pending]] = {q.id: deque() for d in stream.devices for q in d.queues}
        self.device_queues = {d.id: [q.id for q in d.queues] for d in stream.devices}
        self.fences = {f.id: "signaled" if f.signaled else "unsignaled" for f in stream.fences}
        self.timeline = {s.id: s.initial for s in stream.semaphores if s.type == "timeline"}
        self.binary: dict[str, deque[_Signal]] = {s.id: deque() for s in stream.semaphores if s.type == "binary"}
        self.done: set[str] = set()

    # ---- readiness -----------------------------------------------------------

    def host_ready(self, thread: str, ops: tuple, after: Mapping[str, frozenset[str]]) -> bool:
        """Spec 7.3 / 7.4.2 / 7.8: host waits block until what they wait for has happened."""
        op = ops[self.pc[thread]]
        if not after.get(format_ref(thread, self.pc[thread]), frozenset()) <= self.done:
            return False
        if isinstance(op, ir.WaitFences):
            return all(self.fences[f] == "signaled" for f in op.fences)
        if isinstance(op, ir.WaitSemaphores):
            return all(self.timeline[w.semaphore] >= w.value for w in op.waits)
        if isinstance(op, ir.QueueWaitIdle):
            return not self.queues[op.queue]
        if isinstance(op, ir.DeviceWaitIdle):
            return not any(self.queues[q] for q in self.device_queues[op.device])
        return True

    def batch_ready(self, queue: str, after: Mapping[str, frozenset[str]]) -> bool:
        """Spec 7.4.2: a batch starts once its semaphore waits are satisfied (a timeline wait for v
        by any signal >= v; a binary wait by the signal it was paired with at submission)."""
        p = self.queues[queue][0]
        for i, w in enumerate(p.batch.waits):
            if w.semaphore in self.binary:
                if p.binary_waits[i] is not None and not p.binary_waits[i].done:
                    return False
            elif self.timeline[w.semaphore] < w.value:
                return False
        needed = frozenset().union(*(after.get(r, frozenset()) for r in p.refs))
        return needed <= self.done | set(p.refs)

    # ---- execution -----------------------------------------------------------

    def host_op(self, thread: str, ops: tuple) -> list[Step]:
        pc = self.pc[thread]
        op, ref = ops[pc], format_ref(thread, pc)
        self.pc[thread] = pc + 1
        self.done.add(ref)
        if isinstance(op, ir.Submit):
            self.submit(op, ref)
        elif isinstance(op, ir.ResetFences):
            for f in op.fences:
                self.fences[f] = "unsignaled"
        elif isinstance(op, ir.SignalSemaphore):
            self.timeline[op.semaphore] = max(self.timeline[op.semaphore], op.value)
        elif isinstance(op, (ir.HostAccess, ir.Destroy)):
            return [Step(ref, thread, op)]
        return []

    def submit(self, op: ir.Submit, ref: str) -> None:
        """Binary waits pair with pending signals at submission, as the checker pairs them."""
        if op.fence is not None:
            self.fences[op.fence] = "pending"
        batches = op.batches or (ir.Batch(),)
        for n, batch in enumerate(batches):
            waits = [self.binary[w.semaphore].popleft() if w.semaphore in self.binary and self.binary[w.semaphore]
                     else None for w in batch.waits]
            signals = {}
            for i, s in enumerate(batch.signals):
                if s.semaphore in self.binary:
                    signals[i] = _Signal()
                    self.binary[s.semaphore].append(signals[i])
            refs = tuple(self.index.command_ref(cb, i, ref) for cb in batch.command_buffers
                         for i in range(len(self.index.command_buffers[cb].commands)))
            self.queues[op.queue].append(_Pending(ref, batch, waits, signals,
                                                  op.fence if n == len(batches) - 1 else None, refs))

    def run_batch(self, queue: str) -> list[Step]:
        p = self.queues[queue].popleft()
        commands = [c for cb in p.batch.command_buffers for c in self.index.command_buffers[cb].commands]
        steps = [Step(ref, queue, c) for ref, c in zip(p.refs, commands) if not isinstance(c, ir.Barrier)]
        self.done.update(p.refs)
        for i, s in enumerate(p.batch.signals):
            if i in p.binary_signals:
                p.binary_signals[i].done = True
            else:
                self.timeline[s.semaphore] = max(self.timeline[s.semaphore], s.value)
        if p.fence is not None:
            self.fences[p.fence] = "signaled"
        return steps


def reference_order(stream: ir.Stream) -> tuple[Step, ...]:
    """The checker's serial order (schedule.Schedule.run): each thread runs until it blocks,
    draining every queue after each op; stops when nothing can progress (a deadlock's blocked
    operations never run)."""
    world, steps, progress = _World(stream), [], True
    while progress:
        progress = False
        for thread, ops in world.threads:
            while world.pc[thread] < len(ops) and world.host_ready(thread, ops, {}):
                steps += world.host_op(thread, ops)
                progress = True
                steps += _drain(world)
    return tuple(steps)


def _drain(world: _World) -> list[Step]:
    steps, progress = [], True
    while progress:
        progress = False
        for queue, pending in world.queues.items():
            while pending and world.batch_ready(queue, {}):
                steps += world.run_batch(queue)
                progress = True
    return steps


def random_order(stream: ir.Stream, rng: np.random.Generator,
                 after: Mapping[str, frozenset[str]]) -> tuple[Step, ...]:
    """Another legal serial order: at each point, one host op or one batch of any agent whose waits
    are satisfied, chosen at random; `after[ref]` must have run before `ref` does.

    Every op the reference runs is run: the agent whose next op comes first in the reference
    order is always ready, since everything it waits for comes earlier in that order."""
    world, steps = _World(stream), []
    while True:
        ready = [("thread", t, ops) for t, ops in world.threads
                 if world.pc[t] < len(ops) and world.host_ready(t, ops, after)]
        ready += [("queue", q, None) for q, pending in world.queues.items()
                  if pending and world.batch_ready(q, after)]
        if not ready:
            return tuple(steps)
        kind, agent, ops = ready[rng.integers(len(ready))]
        steps += world.host_op(agent, ops) if kind == "thread" else world.run_batch(agent)
