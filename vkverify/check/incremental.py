"""The checker's state over a stream that grows: host ops fed one at a time, findings read as they appear.

The same semantics as `check`: engine.Checker (the vector clocks) driven by walk.Walk (the legal
order) through schedule.Schedule, kept between ops instead of re-run over the whole stream at each one.
An op fed is appended to its thread and the walk runs on as far as it can: a wait on a signal not
recorded yet stays blocked and resumes when the op that signals arrives. Fed in the order the program
recorded them (one legal order), the findings after each op are those `check` finds on the stream
recorded so far, less what only the end of a stream reports (waits left blocked) and the z3
refinement of exact.py.

`fork` copies the state for a question about a future that may not happen ("would this op, dropped or
weakened, let a later access race?"): its cost is the live state (range maps, clocks, pending batches)
plus a C-level copy of the logs, not a re-run of the stream.

What fixes the shape of the clocks (the threads, the widest batch of signals, aliasing, the timelines
several agents signal) is rebuilt from the ops fed so far when it changes, which a program does a
handful of times.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from dataclasses import fields, replace
from itertools import count
from operator import attrgetter

from ..model import ir
from .agents import QueueAgent, ThreadAgent
from .access import Access
from .access_state import AccessState
from .engine import Checker
from .findings import Finding
from .rangemap import RangeMap, Segment
from .readings import DEFAULT, Readings
from .schedule import Schedule
from .walk import BinarySignal, PendingBatch, Walk, shared_timelines, signals

__all__ = ["Incremental"]

# Copies field by field (copy.copy is three times slower): a fork copies every live access and segment.
_ACCESS_FIELDS = attrgetter(*(f.name for f in fields(Access)))
_SEGMENT_FIELDS = attrgetter(*(f.name for f in fields(Segment)))
_SPARE_LANES = 4  # semaphore lanes reserved per queue beyond the widest batch so far: fewer rebuilds


class Incremental:
    """Feed host ops in recorded order; `findings_since(mark)` names what each added."""

    def __init__(self, shape: ir.Stream, readings: Readings = DEFAULT) -> None:
        """`shape`: the stream's devices, resources and command buffers (its threads' ops are fed here)."""
        self.readings = readings
        self._build(replace(shape, params=(), instances=()), [(t.id, op) for t in shape.threads for op in t.ops])

    # ---- feeding -------------------------------------------------------------

    def feed(self, thread: str, op: ir.HostOp, command_buffers: Iterable[ir.CommandBuffer] = ()) -> None:
        """Append `op` to `thread` (with the command buffers it submits, new or changed) and run the walk on."""
        known, changed = self.checker.index.command_buffers, False
        for cb in command_buffers:
            if known.get(cb.id) is not cb:
                # Its commands already ran as they were: the stream has one content per command buffer.
                changed |= cb.id in self.submitted and known[cb.id] != cb
                known[cb.id] = cb
        if changed or self._reshapes(thread, op):
            self._build(self._shape(extra=(thread, op)), [(t, o) for t, _, o in self.fed] + [(thread, op)])
            return
        self._append(thread, op)

    def _append(self, thread: str, op: ir.HostOp) -> None:
        index = self.thread_index[thread]
        ops = self.walk.threads[index][1]
        self._fed.append((thread, len(ops), op))
        ops.append(op)
        self._note_signals(thread, op)
        if isinstance(op, ir.Submit):
            self._count_submits(op)
        self.walk.run()

    def _reshapes(self, thread: str, op: ir.HostOp) -> bool:
        """Whether `op` needs clocks of another shape: a new thread, more signals in a batch than the lanes
        reserved, a timeline signalled by a second agent (walk.shared_timelines)."""
        if thread not in self.thread_index:
            return True
        if isinstance(op, ir.Submit):
            lanes = len(self.checker.queues[op.queue].lanes)
            if any(len(b.signals) > lanes for b in op.batches):
                return True
        agent = op.queue if isinstance(op, ir.Submit) else thread
        return any(s.value is not None and s.semaphore not in self.walk.shared
                   and self.signallers.get(s.semaphore, set()) - {agent} for s in signals(op))

    def _note_signals(self, thread: str, op: ir.HostOp) -> None:
        agent = op.queue if isinstance(op, ir.Submit) else thread
        for s in signals(op):
            if s.value is not None:
                self.signallers.setdefault(s.semaphore, set()).add(agent)
                values = self.walk.signal_values.get(s.semaphore)  # ascending, without repeats
                if values is not None:
                    i = bisect_left(values, s.value)
                    if i == len(values) or values[i] != s.value:
                        values.insert(i, s.value)

    def _count_submits(self, op: ir.Submit) -> None:
        """Spec references: a command buffer submitted more than once names its commands by submit too."""
        index = self.checker.index
        for b in op.batches:
            for cb in b.command_buffers:
                n = self.submitted[cb] = self.submitted.get(cb, 0) + 1
                if n == 2:
                    index.resubmitted = index.resubmitted | {cb}

    def add_resources(self, shape: ir.Stream) -> None:
        """Buffers, semaphores and fences created since (the runtime creates them as it goes)."""
        index = self.checker.index
        if any(b.alias_of is not None and b.id not in index.buffers for b in shape.buffers):
            self._build(replace(self._shape(), devices=shape.devices, buffers=shape.buffers,
                                semaphores=shape.semaphores, fences=shape.fences, shaders=shape.shaders),
                        [(t, o) for t, _, o in self.fed])
            return
        buffers = [b for b in shape.buffers if b.id not in index.buffers]
        semaphores = [s for s in shape.semaphores if s.id not in index.semaphores]
        fences = [f for f in shape.fences if f.id not in index.fences]
        index.buffers.update((b.id, b) for b in buffers)
        index.semaphores.update((s.id, s) for s in semaphores)
        index.fences.update((f.id, f) for f in fences)
        self.checker.state.place(buffers)
        self.walk.add_syncs(semaphores, fences)
        for sh in shape.shaders:
            index.shaders.setdefault(sh.id, sh)
        self.resources = shape

    # ---- reading -------------------------------------------------------------

    @property
    def fed(self) -> list[tuple[str, int, ir.HostOp]]:
        """(thread, position, op) in the order fed (a fork's: a new list, read rarely)."""
        if not self._before:
            return self._fed
        return [x for ops, n in self._before for x in ops[:n]] + self._fed

    def mark(self) -> int:
        return len(self.checker.findings)

    def findings_since(self, mark: int = 0) -> list[Finding]:
        """The findings first found after `mark` (a `mark()`), their ranges as grown since."""
        return self.checker.findings[mark:]

    def hazards_since(self, mark: int = 0) -> set[tuple]:
        """The findings after `mark` as the mutation analysis names hazards (hb.Model.all_hazards): (kind, first,
        second), or (kind, *ops) for misuse. A pair of writes whose second reads too is a RAW and a WAW
        (hb.conflicts), of which the checker reports the RAW alone."""
        out = set()
        findings = self.checker.findings
        for i in range(mark, len(findings)):
            kind, first, second, first_access, second_access, ops = findings.names(i)
            out.add((kind, first, second) if first or second else (kind, *(ops or ())))
            if kind == "raw" and "write" in (first_access or "") and "write" in (second_access or ""):
                out.add(("waw", first, second))
        return out

    def findings_at_end(self) -> list[Finding]:
        """What `check` finds on the stream fed so far before exact.refine: those of waits left blocked too."""
        return self.ended().findings_since(0)

    def ended(self) -> Incremental:
        """A fork of the state as the stream's end leaves it: the waits still blocked reported."""
        end = self.fork()
        end.walk.stream = end._shape()  # the walk's end reads every op (walk.ever_signals)
        end.walk.report_blocked()
        return end

    def blocked(self, thread: str) -> bool:
        """Whether `thread` stops at a wait that nothing fed so far satisfies (walk.Walk.run)."""
        index = self.thread_index.get(thread)
        return index is not None and self.walk.pc[index] < len(self.walk.threads[index][1])

    def thread_length(self, thread: str) -> int:
        index = self.thread_index.get(thread)
        return len(self.walk.threads[index][1]) if index is not None else 0

    # ---- building and forking -----------------------------------------------

    def _shape(self, extra: tuple[str, ir.HostOp] | None = None) -> ir.Stream:
        """The resources, command buffers and threads (with their ops, so the checker sizes its clocks)."""
        ops: dict[str, list] = {t: [] for t in self.thread_index}
        for t, _, op in self.fed:
            ops[t].append(op)
        if extra is not None:
            ops.setdefault(extra[0], []).append(extra[1])
        return replace(self.resources, command_buffers=tuple(self.checker.index.command_buffers.values()),
                       threads=tuple(ir.Thread(t, tuple(o)) for t, o in ops.items()))

    def _build(self, shape: ir.Stream, ops: list[tuple[str, ir.HostOp]]) -> None:
        """Fresh clocks for `shape` (its threads' ops size them), then `ops` fed again in order."""
        shared = shared_timelines(shape)
        widened = ir.Thread("", tuple(ir.Submit(q.id, (ir.Batch(signals=tuple(
            ir.SemaphoreOp("", 1, frozenset()) for _ in range(_SPARE_LANES))),)) for d in shape.devices
            for q in d.queues))
        sized = replace(shape, threads=shape.threads + (widened,))
        self.resources = replace(shape, threads=(), command_buffers=())
        index = sized.index
        index.threads = {t.id: t for t in shape.threads}
        index.resubmitted = frozenset()
        self.checker = Checker(sized, self.readings)
        self.schedule = Schedule(self.checker, shared, host_threads=len(shape.threads))
        self.checker.findings.refs_repeat = True  # a command's reference names every submission of it (above)
        self.checker.threads.pop()  # the sizing thread: clock entries only, never run
        self.checker.agents.pop()
        self.checker.uses = {}  # destroys may come later
        self.walk = Walk(shape, self.schedule, shared)
        self.walk.index = index
        self.walk.threads = [(t.id, []) for t in shape.threads]  # fed again below
        self.thread_index = {t.id: i for i, t in enumerate(shape.threads)}
        self.submitted: dict[str, int] = {}
        self.signallers = {}
        # (thread, position, op) in the order fed: those fed before a fork stay in its parent's lists (append-only,
        # never changed), `_before` (each list and how many of it), so a fork does not copy them.
        self._before: list[tuple[list, int]] = []
        self._fed: list[tuple[str, int, ir.HostOp]] = []
        for thread, op in ops:
            self._append(thread, op)

    def fork(self, worded: bool = True) -> Incremental:
        """An independent copy: feeding it leaves this one as it was. `worded` False: the access hazards it
        finds from now on are named (kind, buffer, first, second) only, for questions asked often."""
        new = _shallow(self)
        s = self.checker
        new._before, new._fed = [*self._before, (self._fed, len(self._fed))], []
        new.signallers = {k: set(v) for k, v in self.signallers.items()}
        new.submitted = dict(self.submitted)
        index = _shallow(s.index)
        for name in ("buffers", "semaphores", "fences", "shaders", "command_buffers", "threads"):
            setattr(index, name, dict(getattr(index, name)))
        accesses: dict[int, object] = {}
        t = new.checker = _shallow(s)
        if not worded:
            t.__class__ = _Unworded
        t.index = index
        t.queues = {q: _fork_queue(a) for q, a in s.queues.items()}
        t.threads = [_fork_thread(a) for a in s.threads]
        t.agents = list(t.queues.values()) + t.threads
        t.state = _fork_state(s.state, t, accesses)
        t.findings = s.findings.fork(t.state.wording)
        t.barriers = dict(s.barriers)
        t.events = s.events.fork()
        # A plan that repeats findings repeats them worded (its `at` given): an unworded fork records its own.
        t.compiled = {k: [cb, steps, plan, dict(met), at] if worded or at is None else [cb, steps, None, {}, None]
                      for k, (cb, steps, plan, met, at) in s.compiled.items()}
        t.destroyed = {b: _fork_access(a, accesses) for b, a in s.destroyed.items()}
        t.uses = {b: {k: _fork_access(a, accesses) for k, a in by.items()} for b, by in s.uses.items()}
        n = next(s.uids)  # a count cannot be copied: both go on from the same number
        s.uids, t.uids = count(n), count(n)
        schedule = new.schedule = _shallow(self.schedule)
        schedule.checker = t
        ends = self.schedule.batch_ends
        schedule.batch_ends = None if ends is None else {q: list(e) for q, e in ends.items()}
        w = new.walk = _shallow(self.walk)
        w.consumer, w.index = schedule, index
        w.threads = [(name, list(ops)) for name, ops in self.walk.threads]
        w.pc = list(self.walk.pc)
        signals_: dict[int, BinarySignal] = {}
        w.pending = {q: deque(_fork_batch(p, signals_) for p in d) for q, d in self.walk.pending.items()}
        w.fences = dict(self.walk.fences)
        w.binary = {k: deque(_fork_signal(b, signals_) for b in d) for k, d in self.walk.binary.items()}
        w.timeline = {k: list(v) for k, v in self.walk.timeline.items()}
        w.timeline_value = dict(self.walk.timeline_value)
        w.unsorted = set(self.walk.unsorted)
        w.signal_values = {k: v[:] for k, v in self.walk.signal_values.items()}
        return new


def _shallow(obj):
    """A shallow copy of one of the checker's plain objects (no slots, no __copy__), as copy.copy makes it without
    going through the pickling protocol: a fork makes a dozen (a tenth of its time, measured)."""
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    return new


class _Unworded(Checker):
    """Names access hazards without wording or describing them, the earlier recorded access first, without their
    bytes: Checker.hazard asks whether the two race, to name them in stream order."""

    def hazard(self, kind: str, buf: ir.Buffer, lo: int, hi: int, e, x) -> None:
        self.findings.add(kind, buf.id, None, None, e, x, x.uid, words=("", ""), described=False)


def _fork_access(a, memo: dict):
    """A copy of access `a` (one per access: several segments hold the same one); its caches go with it,
    being true of the history both copies share."""
    if a is None:
        return None
    found = memo.get(id(a))
    if found is None:
        found = memo[id(a)] = Access(*_ACCESS_FIELDS(a))
        if a.ordered is not None:
            found.ordered = set(a.ordered)
    return found


def _fork_state(s: AccessState, checker: Checker, accesses: dict) -> AccessState:
    """A copy of access state `s` for `checker`, a fork of its checker (its index and agents already copied)."""
    new = _shallow(s)
    new.index, new.agents, new.queues = checker.index, checker.agents, checker.queues
    new.memories = {root: _fork_memory(m, accesses) for root, m in s.memories.items()}
    new.placement = {b: (buf, root, offset, new.memories[root]) for b, (buf, root, offset, _) in s.placement.items()}
    new.memory_kind = dict(s.memory_kind)
    new.wording = replace(s.wording, memory_kind=new.memory_kind)
    new.host_available = {uid: [(_fork_access(p, accesses), lo, hi) for p, lo, hi in v]
                          for uid, v in s.host_available.items()}
    return new


def _fork_memory(m: RangeMap, accesses: dict) -> RangeMap:
    new = RangeMap.__new__(RangeMap)
    new.starts = list(m.starts)
    new.segments = segments = [Segment(*_SEGMENT_FIELDS(seg)) for seg in m.segments]
    for seg in segments:
        seg.write = _fork_access(seg.write, accesses)
        if seg.replaced is not None:
            seg.replaced, seg.carried = _fork_access(seg.replaced, accesses), _fork_access(seg.carried, accesses)
        seg.reads = tuple(_fork_access(r, accesses) for r in seg.reads)
        if seg.atomics:
            seg.atomics = tuple((_fork_access(a, accesses), hides) for a, hides in seg.atomics)
            seg.hiders = tuple((_fork_access(a, accesses), hides) for a, hides in seg.hiders)
        seg.invalidated = dict(seg.invalidated)
    return new


def _fork_queue(q: QueueAgent) -> QueueAgent:
    new = _shallow(q)
    new.log = q.log.fork()
    new.release_pos, new.release_scope, new.release_lane = q.release_pos[:], q.release_scope[:], q.release_lane[:]
    new.lane_releases = {lane: indexes[:] for lane, indexes in q.lane_releases.items()}
    new.range_vis = {k: dict(v) for k, v in q.range_vis.items()}
    new.host_vis = {k: dict(v) for k, v in q.host_vis.items()}
    new.host_releases, new.host_reach = list(q.host_releases), list(q.host_reach)
    new.exec_clock, new.vis_clock = dict(q.exec_clock), dict(q.vis_clock)
    new.settled = dict(q.settled)
    return new


def _fork_thread(t: ThreadAgent) -> ThreadAgent:
    new = _shallow(t)
    new.acquired = {k: (values[:], positions[:]) for k, (values, positions) in t.acquired.items()}
    return new


def _fork_signal(b: BinarySignal | None, memo: dict) -> BinarySignal | None:
    if b is None:
        return None
    found = memo.get(id(b))
    if found is None:
        found = memo[id(b)] = _shallow(b)
    return found


def _fork_batch(p: PendingBatch, memo: dict) -> PendingBatch:
    return replace(p, binary_waits={i: _fork_signal(b, memo) for i, b in p.binary_waits.items()},
                   binary_signals={i: _fork_signal(b, memo) for i, b in p.binary_signals.items()})
