"""Witnesses: a legal complete schedule in which a finding happens, and the slice of it a person reads.

Events are named as docs/format.md "Schedules, z3 and witnesses" says: `main[3]` (a host op),
`main[1] begin` / `main[1] end` (a batch, `main[1].batches[2] ...` when a submit has several), and the
refs of the two accesses.

The schedule comes from the walk (walk.Walk, the checker's own rules for which op may run next), not
from z3: the operation that must not have completed is held (a batch may begin but does not end, a
host op is not performed) while every other host op and batch runs as soon as the walk lets it, until
nothing more can; if the other operation has then run, releasing the held one and running the rest
completes a legal schedule in which the two overlap. One walk of the stream per witness.

The slice keeps of that schedule the events the target events need (the second start and the
first's end; for a non-increasing signal the two signals), found backwards through what each event
waited for, back to the cut: the earliest of the two operations' submits and of the signals their
semaphore waits acquired; what ran before the cut is the state the slice starts from. A batch begins
after its submit, after the signals its waits acquired (the ones the walk gave them) and after the
batches submitted before it to its queue began (spec 7.2 submission order); a batch ends after it
began and after the batches before it on its queue ended (7.2 signal operation order where it signals;
where it does not, the walk's own rule, as z3's: a queue's batches end in submission order, which only
delays completions). Host ops need nothing: program order between the host ops kept is the schedule's own, and
host ops left out (other submits, host waits) never block the ones kept.
So the slice is the schedule restricted to its events; from the state at the cut it is a legal
schedule prefix of the program restricted to the operations run before the cut and its own (every
other host op, and the batches of the submits left out, deleted); and dropping any one step leaves a
step whose need is missing.
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Literal, NamedTuple

from ..model import ir
from ..model.refs import batch_ref, format_ref, split_ref
from .walk import Consumer, PendingBatch, Walk

__all__ = ["ScheduleNode", "Scope", "Witness", "in_order", "overlap", "steps"]

Witness = tuple[str, ...]
Scope = Literal["slice", "full"]


class ScheduleNode(NamedTuple):
    """A batch (by its key) or a host op (by its ref): a submit's ref names both, so the kind is explicit."""

    key: str
    batch: bool

    @property
    def start(self) -> str:
        return f"{self.key} begin" if self.batch else self.key

    @property
    def done(self) -> str:
        """Its completing event, at which a batch's signals happen."""
        return f"{self.key} end" if self.batch else self.key


class _Recorder(Consumer):
    """Names every release after the event that makes it, so each wait's acquired releases are the events
    it needs; keeps the events in the order run, what each needs, and each queue's order as the walk runs its
    batches (its submission order, spec 7.2: the slice does not restate it)."""

    def __init__(self, stream: ir.Stream) -> None:
        self.threads = [t.id for t in stream.threads]
        self.events: list[str] = []
        self.needs: dict[str, tuple[str, ...]] = {}
        self.queue_order: dict[str, list[str]] = {}  # queue -> batch keys in the order the walk ran them
        self.submit_of: dict[str, str] = {}  # batch key -> its submit's ref
        self.batch_count: dict[str, int] = {}  # submit ref -> its number of batches
        self.waits_on: dict[str, set[str]] = {}  # begin event -> the semaphores whose signals its waits acquired

    def happened(self, event: str, needs: tuple[str, ...] = ()) -> None:
        self.events.append(event)
        self.needs[event] = needs

    def key(self, p: PendingBatch) -> str:
        return batch_ref(p.submit, p.index, self.batch_count[p.submit])

    def submit(self, thread: int, pc: int, op: ir.Submit) -> None:
        ref = format_ref(self.threads[thread], pc)
        parts = op.batches or (ir.Batch(),)
        self.batch_count[ref] = len(parts)
        for k in range(len(parts)):
            self.submit_of[batch_ref(ref, k, len(parts))] = ref

    def begin(self, p: PendingBatch, acquired: list) -> None:
        """The batch begins: its waits acquired `acquired` (each an event's name, or None)."""
        self.happened(f"{self.key(p)} begin", (p.submit,) + tuple(r for r in acquired if r is not None))
        self.waits_on[f"{self.key(p)} begin"] = {w.semaphore for w, r in zip(p.batch.waits, acquired) if r is not None}

    def batch(self, queue: str, p: PendingBatch, acquired: list) -> tuple[list, str]:
        key = self.key(p)
        self.queue_order.setdefault(queue, []).append(key)
        if f"{key} begin" not in self.needs:
            self.begin(p, acquired)
        end = f"{key} end"
        self.happened(end, (f"{key} begin",))
        return [end] * len(p.batch.signals), end

    def signal_semaphore(self, thread: int, pc: int, op: ir.SignalSemaphore) -> str:
        return format_ref(self.threads[thread], pc)


class _HeldRun:
    """One walk of the stream with one node held back: a batch may begin but does not end, a host op is
    not performed."""

    def __init__(self, stream: ir.Stream, held: ScheduleNode, order: ir.SubmissionOrder | None = None) -> None:
        self.recorder = _Recorder(stream)
        self.walk = Walk(stream, self.recorder, order=order)
        self.held: ScheduleNode | None = held
        self.waiters: dict[str, set[str]] = {}  # semaphore -> the queues with a batch that waits for it
        for op, b in ir.batches(stream):
            for w in b.waits:
                self.waiters.setdefault(w.semaphore, set()).add(op.queue)

    def run(self) -> None:
        """Every thread until it blocks, the queues it may have unblocked drained after each host op; until
        nothing progresses."""
        walk, progress = self.walk, True
        host_held = self.held.key if self.held is not None and not self.held.batch else None
        while progress:
            progress = False
            for thread, (name, ops) in enumerate(walk.threads):
                while walk.pc[thread] < len(ops):
                    ref, op = format_ref(name, walk.pc[thread]), ops[walk.pc[thread]]
                    if ref == host_held or not walk.step_host(thread):
                        break
                    self.recorder.happened(ref)
                    progress = True
                    if isinstance(op, ir.Submit):
                        self.drain({op.queue})
                    elif isinstance(op, ir.SignalSemaphore):
                        self.drain(self._waiting({op.semaphore}))

    def drain(self, queues: set[str]) -> None:
        """Run the batches of `queues` while their waits allow, and of the queues their signals wake: only a
        queue with a batch that waits for a semaphore just signalled can have become ready."""
        held = self.held.key if self.held is not None and self.held.batch else None
        while queues:
            queue = queues.pop()
            pending = self.walk.pending[queue]
            while pending:
                if self.recorder.key(pending[0]) == held:
                    self._begin_held(pending[0])
                    break
                signalled = {s.semaphore for s in pending[0].batch.signals}
                if not self.walk.step_batch(queue):
                    break
                if signalled:
                    queues |= self._waiting(signalled)

    def _waiting(self, semaphores: set[str]) -> set[str]:
        return set().union(*(self.waiters.get(s, ()) for s in semaphores))

    def _begin_held(self, p: PendingBatch) -> None:
        """The held batch begins as soon as its waits are satisfied (spec 7.4); it does not end."""
        if self.held.start not in self.recorder.needs:
            acquired = self.walk.acquires(p)
            if acquired is not None:
                self.recorder.begin(p, acquired)

    def release(self) -> None:
        """Run the held node's completing event, then everything else."""
        held, self.held = self.held, None
        walk = self.walk
        for thread, (name, ops) in enumerate(walk.threads):
            if not held.batch and walk.pc[thread] < len(ops) and format_ref(name, walk.pc[thread]) == held.key \
                    and walk.step_host(thread):
                self.recorder.happened(held.key)
        self.drain(set(walk.pending))
        self.run()

    def complete(self) -> bool:
        walk = self.walk
        return all(pc == len(ops) for pc, (_, ops) in zip(walk.pc, walk.threads)) and \
            not any(walk.pending.values())


def _held_schedule(stream: ir.Stream, held: ScheduleNode, until: str, increasing: bool,
                   order: ir.SubmissionOrder | None = None) -> _HeldRun | None:
    """A legal complete schedule in which event `until` happens while `held` has not completed; None if
    the walk finds none. `increasing`: every timeline's signals must strictly
    increase (spec 7.4.2), as in any legal schedule; a witness of a non-increasing signal asks for less."""
    run = _HeldRun(stream, held, order)
    run.run()
    if until not in run.recorder.needs:
        return None
    run.release()
    if not run.complete() or (increasing and run.walk.unsorted):
        return None
    return run


def overlap(stream: ir.Stream, first: ScheduleNode, first_ref: str, second: ScheduleNode, second_ref: str,
            scope: Scope, order: ir.SubmissionOrder | None = None) -> Witness | None:
    """A schedule in which `second` starts before `first` completes, with the two accesses marked: the
    second right after its batch begins, the first right before its batch ends; walked in submission order
    `order` (that of the finding's run, Finding.order; None: the walk's own). None if the walk finds none (the
    batches ordered and only their stages not, or no complete schedule)."""
    run = _held_schedule(stream, first, second.start, increasing=True, order=order)
    if run is None:
        return None
    recorder = run.recorder
    events = recorder.events if scope == "full" else _slice(recorder, [first, second], [second.start, first.done])
    events = list(events)
    if second.batch:
        events.insert(events.index(second.start) + 1, second_ref)
    if first.batch:
        events.insert(events.index(first.done), first_ref)
    return tuple(events)


def in_order(stream: ir.Stream, first: ScheduleNode, second: ScheduleNode, scope: Scope) -> Witness | None:
    """A schedule in which the signals of `first` happen before those of `second` (at a batch's end, at a
    host op); None if the walk finds none."""
    run = _held_schedule(stream, second, first.done, increasing=False)
    if run is None:
        return None
    sliced = _slice(run.recorder, [first, second], [first.done, second.done])
    if _misread_waits(run, second, sliced):
        return None
    return tuple(run.recorder.events if scope == "full" else sliced)


def _misread_waits(run: _HeldRun, late: ScheduleNode, events: list[str]) -> bool:
    """Whether a batch beginning in `events` waits on a timeline whose signals did not strictly increase in
    the run, `late`'s own left out. The walk pairs a wait on a shared timeline with the signal of the least
    value above it, true only where signals increase (spec 7.4.2): a slice through such a pairing would
    need a signal that the semaphore's value did not wait for."""
    walk, ref = run.walk, run.recorder.submit_of[late.key] if late.batch else late.key
    unsorted = set()
    for semaphore in walk.unsorted:
        values = [walk.index.semaphores[semaphore].initial] + [v for v, _, r in walk.timeline[semaphore] if r != ref]
        if any(b <= a for a, b in pairwise(values)):
            unsorted.add(semaphore)
    return any(run.recorder.waits_on.get(e, set()) & unsorted for e in events)


def _slice(recorder: _Recorder, nodes: list[ScheduleNode], targets: list[str]) -> list[str]:
    """The events `targets` need, transitively, back to the cut, in the schedule's order (the module
    docstring's rules). The cut: the earliest of the nodes' submits (a host op: itself) and of the signals
    their semaphore waits acquired; what ran before it is the state the slice starts from."""
    position = {e: i for i, e in enumerate(recorder.events)}
    cut = min(position[e] for n in nodes for e in (recorder.needs[n.start] if n.batch else (n.key,)))
    need: set[str] = set()
    todo = list(targets)
    while todo:
        while todo:
            event = todo.pop()
            if event not in need and position[event] >= cut:
                need.add(event)
                todo += recorder.needs[event]
        todo = [e for e in _queue_needs(recorder, need, position, cut) if e not in need]
    return sorted(need, key=position.__getitem__)


def _queue_needs(recorder: _Recorder, need: set[str], position: dict[str, int], cut: int) -> list[str]:
    """Spec 7.2: on each queue, of the batches kept (submitted before the cut, or in the slice), one that
    begins needs the earlier ones begun; one that ends needs the earlier ones ended, as the walk ends them
    (events before the cut are done)."""
    out = []
    for keys in recorder.queue_order.values():
        kept = [k for k in keys if recorder.submit_of[k] in need or position[recorder.submit_of[k]] < cut]
        for i, k in enumerate(kept):
            if f"{k} begin" in need:
                out += [f"{j} begin" for j in kept[:i]]
            if f"{k} end" in need:
                out += [f"{j} end" for j in kept[:i]]
    return [e for e in out if position[e] >= cut]


# ---- naming the steps for people ---------------------------------------------------------------


def steps(stream: ir.Stream, events: Witness, accesses: dict[str, str]) -> tuple[str, ...]:
    """Each event named by the stream's own ids and labels: what a host op does, which queue begins or ends
    which command buffers after which waits or with which signals; `accesses` names the access events."""
    return tuple(accesses.get(e) or _step(stream, e) for e in events)


def _step(stream: ir.Stream, event: str) -> str:
    ref, rest = split_ref(event)
    op = stream.index.threads[ref.owner].ops[ref.index]
    if not rest:
        return _host_step(op)
    part, _, when = rest.rpartition(" ")
    batch = (op.batches or (ir.Batch(),))[int(part[len(".batches["):-1]) if part else 0]
    what = f"{op.queue} {when}s {', '.join(batch.command_buffers) or 'an empty batch'}"
    if when == "begin" and batch.waits:
        return f"{what} after {', '.join(_semaphore(w, '>=') for w in batch.waits)}"
    if when == "end" and batch.signals:
        return f"{what}, signals {', '.join(_semaphore(x, '=') for x in batch.signals)}"
    return what


def _host_step(op: ir.HostOp) -> str:
    if isinstance(op, ir.Submit):
        what = f"submit to {op.queue}"
    elif isinstance(op, ir.SignalSemaphore):
        what = f"signal {op.semaphore} = {op.value}"
    elif isinstance(op, ir.HostAccess):
        what = f"{op.op} {op.buffer}"
    else:
        what = re.sub(r"(?<!^)(?=[A-Z])", "_", type(op).__name__).lower()  # WaitFences -> wait_fences
    return f'{what} "{op.label}"' if op.label else what


def _semaphore(s: ir.SemaphoreOp, relation: str) -> str:
    return s.semaphore if s.value is None else f"{s.semaphore} {relation} {s.value}"  # binary: no value
