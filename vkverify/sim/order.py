"""Serial orders of a stream's data operations (the steps the simulator executes).

Both come from the checker's legal-order walk (vkverify/check/walk.py), whose rules decide which
host op or batch may run next. `reference_order` is the checker's own order: host threads in
program order, each queue's batches run as soon as they are submitted and their waits allow,
queues in order. `random_order` is any other interleaving the same waits allow and complete, picked by a
seeded generator; `after` keeps given pairs in their reference order (the checker's findings: the
simulator perturbs those explicitly and must not reorder them by chance).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..check.walk import Consumer, PendingBatch, Walk
from ..model import ir
from ..model.refs import format_ref

__all__ = ["Step", "random_order", "reference_order"]


@dataclass(frozen=True)
class Step:
    """One data operation: a command (not a barrier or event command) or a host op, named as the checker names it."""

    ref: str
    agent: str  # the queue or host thread that performs it
    op: ir.Command | ir.HostOp


class _Steps(Consumer):
    """The walk's consumer: the data operations each host op or batch performs, in the order run.
    Releases carry nothing and misuse is the checker's to report: the simulator needs only the order."""

    def __init__(self, stream: ir.Stream) -> None:
        self.index = stream.index
        self.threads = [t.id for t in stream.threads]
        self.steps: list[Step] = []
        self.done: set[str] = set()  # the refs of the steps run

    def run(self, step: Step) -> None:
        self.steps.append(step)
        self.done.add(step.ref)

    def batch(self, queue: str, p: PendingBatch, acquired: list) -> tuple[list, None]:
        commands = [c for cb in p.batch.command_buffers for _, _, c in self.index.commands_of(cb)]
        for ref, c in zip(batch_refs(self.index, p), commands):
            # A barrier or an event command accesses no memory. What a wait orders, the checker decides (spec
            # 7.5, check/events.py: the commands after it after those before its event's last set, in the set's
            # stages), and the adversary perturbs only pairs the checker leaves unordered: no step of its own.
            if not isinstance(c, ir.SYNC_COMMANDS):
                self.run(Step(ref, queue, c))
        return super().batch(queue, p, acquired)

    def host_op(self, thread: int, pc: int, op: ir.HostOp) -> None:
        if not isinstance(op, (ir.HostSetEvent, ir.HostResetEvent)):  # vkSetEvent, vkResetEvent: no data
            self.run(Step(format_ref(self.threads[thread], pc), self.threads[thread], op))


def batch_refs(index: ir.StreamIndex, p: PendingBatch) -> tuple[str, ...]:
    """The checker's references of the commands of a pending batch, as executed by its submit: those of the
    secondary command buffers its vkCmdExecuteCommands run in their place (spec 6.7), not the execute's own."""
    return tuple(index.command_ref(owner, i, p.submit) for cb in p.batch.command_buffers
                 for owner, i, _ in index.commands_of(cb))


def reference_order(stream: ir.Stream) -> tuple[Step, ...]:
    """The checker's serial order (walk.Walk.run): each thread runs until it blocks, draining every
    queue after each op; stops when nothing can progress (a deadlock's blocked operations never run)."""
    steps = _Steps(stream)
    Walk(stream, steps).run()
    return tuple(steps.steps)


REDRAWS = 16  # random_order's draws of an interleaving of threads that blocks


def random_order(stream: ir.Stream, rng: np.random.Generator, after: Mapping[str, frozenset[str]],
                 reference: Sequence[Step] = ()) -> tuple[Step, ...]:
    """Another legal serial order: at each point, one host op or one batch of any agent whose waits
    are satisfied, chosen at random; `after[ref]` (data operations) must have run before `ref` does.

    With one host thread every op the reference runs is run, `after` allowing: the agent whose next op comes
    first in the reference order is always ready, since everything it waits for comes earlier in that order.
    Several threads' calls can come in an interleaving whose waits block (a thread's idle wait behind another
    thread's batch that waits for the first thread's later signal), which no schedule the checker reads runs
    (docs/format.md, "Several host threads": such an interleaving is left out): an order that ends so, before
    every agent is done, is drawn again, REDRAWS times at most, and is then the `reference` order where that
    keeps `after`."""
    for _ in range(REDRAWS if len(stream.threads) > 1 else 1):
        steps, blocked = _random_order(stream, rng, after)
        if not blocked:
            return steps
    position = {step.ref: i for i, step in enumerate(reference)}
    keeps = all(position.get(first, -1) < i for i, step in enumerate(reference) for first in after.get(step.ref, ()))
    return tuple(reference) if reference and keeps else steps


def _random_order(stream: ir.Stream, rng: np.random.Generator,
                  after: Mapping[str, frozenset[str]]) -> tuple[tuple[Step, ...], bool]:
    """An order drawn, and whether it ended with an agent not done whose waits block it (not `after`)."""
    steps = _Steps(stream)
    walk = Walk(stream, steps)
    nothing = frozenset()
    while True:
        threads = [t for t in range(len(walk.threads)) if walk.host_ready(t)]
        queues = [q for q in walk.pending if walk.batch_ready(q)]
        ready = [("thread", t) for t in threads
                 if after.get(format_ref(walk.threads[t][0], walk.pc[t]), nothing) <= steps.done]
        ready += [("queue", q) for q in queues if _after_batch(stream.index, walk.pending[q][0], after) <= steps.done]
        if not ready:
            return tuple(steps.steps), not threads and not queues and bool(walk.blocked())
        kind, agent = ready[rng.integers(len(ready))]
        if kind == "thread":
            walk.step_host(agent)
        else:
            walk.step_batch(agent)


def _after_batch(index: ir.StreamIndex, p: PendingBatch, after: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """What must run before the batch, less its own commands (a pair within the batch runs in order)."""
    refs = batch_refs(index, p)
    return frozenset().union(*(after.get(r, frozenset()) for r in refs)) - set(refs)
