"""Runs a stream in one legal order: host threads in program order, queues as
their waits allow, device work as early as possible.

Waits that never become satisfiable end the run with `deadlock`,
`wait_never_satisfied` or `fence_misuse` findings naming the blocked ops.
"""

from __future__ import annotations

import gc
from bisect import bisect_left
from contextlib import contextmanager
from dataclasses import dataclass

from ..model import ir
from ..model.stages import DEVICE_STAGES
from . import fixes
from .engine import Access, Checker, QueueAgent, ThreadAgent
from .findings import Finding
from .readings import DEFAULT, Readings
from .scopes import second_execution_scope, signal_first_scope

ALL_DEVICE = frozenset(DEVICE_STAGES)


@dataclass(eq=False)
class BinarySignal:
    ref: str
    clock: tuple | None = None  # set once the signal executes


@dataclass(eq=False)
class PendingBatch:
    submit: str
    clock: tuple
    batch: ir.Batch
    binary_waits: dict  # wait index -> BinarySignal (None: misuse, ignored)
    binary_signals: dict  # signal index -> BinarySignal
    fence: str | None
    issued: tuple[int, int]  # the submit's thread and op position (Access.issued)


def check(stream: ir.Stream, readings: Readings = DEFAULT) -> list[Finding]:
    """Every synchronization finding of `stream` under `readings` of what the spec leaves open, in the order
    found; for a `params` stream, those of the smallest parameter values that have any."""
    if stream.params:
        from .params import check_params
        return check_params(stream, lambda instance: check(instance, readings))
    from . import exact
    shared = exact.shared_timelines(stream)
    with _cyclic_gc_paused():
        findings = Schedule(stream, shared, readings).run()
    return exact.refine(stream, findings, shared)


@contextmanager
def _cyclic_gc_paused():
    """The run allocates millions of small objects that form no cycles; CPython's cyclic collector would
    rescan all of them on every full pass (about a fifth of the time at 3*10^5 commands, measured)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Schedule(Checker):
    def __init__(self, stream: ir.Stream, shared: frozenset[str] = frozenset(), readings: Readings = DEFAULT) -> None:
        super().__init__(stream, readings)
        # Timelines several queues or threads signal: z3 (exact.refine) reports their ordering problems.
        self.shared = shared
        self.unsorted: set[str] = set()  # timelines whose signals so far did not strictly increase
        self.signal_values = {sem: sorted({s.value for t in stream.threads for op in t.ops
                                           for s in _signals(op) if s.semaphore == sem})
                              for sem in shared}

    def run(self) -> list[Finding]:
        progress = True
        while progress:
            progress = False
            for thread in self.threads:
                while thread.pc < len(thread.ops) and self.host_op(thread, thread.ops[thread.pc]):
                    thread.pc += 1
                    progress = True
                    self.drain_queues()
        self.report_blocked()
        return self.result()

    def drain_queues(self) -> None:
        progress = True
        while progress:
            progress = False
            for queue in self.queues.values():
                while queue.pending and self.run_batch(queue, queue.pending[0]):
                    queue.pending.popleft()
                    progress = True

    # ---- semaphores --------------------------------------------------------

    def timeline_signal(self, semaphore: str, value: int) -> tuple | None:
        """Spec 7.4.2: a wait for `value` is satisfied by the first signal >= value."""
        if value <= self.index.semaphores[semaphore].initial:
            return ()
        if semaphore in self.shared:
            # Signals of a timeline strictly increase in time, so in every legal schedule the first signal
            # >= value is the one of the smallest such value, whichever queue or thread performs it.
            least = next((v for v in self.signal_values[semaphore] if v >= value), None)
            return next((s for s in self.timeline[semaphore] if s[0] == least), None)
        history = self.timeline[semaphore]
        if semaphore not in self.unsorted:
            # Values so far strictly increase: bisection, so many signals are not quadratic.
            i = bisect_left(history, value, key=lambda s: s[0])
            return history[i] if i < len(history) else None
        return next((s for s in history if s[0] >= value), None)

    def signal_timeline(self, semaphore: str, value: int, clock: tuple, ref: str) -> None:
        history = self.timeline[semaphore]
        current = self.timeline_value[semaphore]
        if value <= current:
            self.unsorted.add(semaphore)
        if value <= current and semaphore not in self.shared:
            previous = history[-1][2] if history else None
            self.report("timeline_not_increasing", None, None, None, None, None,
                        f"signal {semaphore!r} with a value greater than {current}",
                        f"{ref} signals {semaphore!r} to {value}, not above its current value {current}",
                        ops=tuple(r for r in (previous, ref) if r))
        history.append((value, clock, ref))
        self.timeline_value[semaphore] = max(current, value)

    # ---- queues ------------------------------------------------------------

    def run_batch(self, queue: QueueAgent, p: PendingBatch) -> bool:
        acquired = []
        for i, w in enumerate(p.batch.waits):
            if i in p.binary_waits:
                signal = p.binary_waits[i]
                if signal is None:
                    continue
                if signal.clock is None:
                    return False
                acquired.append((signal.clock, w.stage))
            else:
                found = self.timeline_signal(w.semaphore, w.value)
                if found is None:
                    return False
                if found:
                    acquired.append((found[1], w.stage))
        # Spec 7.9 host write ordering: the submission makes earlier host writes visible to the device.
        queue.acquire(p.clock, ALL_DEVICE)
        for clock, stage in acquired:
            queue.acquire(clock, second_execution_scope(stage))
        self.issuing, self.issuing_order = p.clock, p.issued
        for cb in p.batch.command_buffers:
            for i, cmd in enumerate(self.index.command_buffers[cb].commands):
                self.run_command(queue, cmd, self.index.command_ref(cb, i, p.submit))
        clocks = queue.signal_semaphores([signal_first_scope(s.stage, self.readings.all_commands_includes_host)
                                          for s in p.batch.signals])
        for i, (s, clock) in enumerate(zip(p.batch.signals, clocks)):
            if i in p.binary_signals:
                p.binary_signals[i].clock = clock
            else:
                self.signal_timeline(s.semaphore, s.value, clock, p.submit)
        if p.fence is not None:
            clock = queue.signal_fence()
            if self.fences[p.fence][2] == p.submit:  # not reset (a misuse) or resubmitted since
                self.fences[p.fence] = ("signaled", clock, p.submit)
        return True

    # ---- host ops ----------------------------------------------------------

    def host_op(self, t: ThreadAgent, op: ir.HostOp) -> bool:
        """Perform op; False while it blocks."""
        ref = f"{t.id}[{t.pc}]"
        own = t.clock[:t.index] + (t.pc + 1,) + t.clock[t.index + 1:]
        if isinstance(op, ir.Submit):
            self.submit(t, op, ref, self.submission_clock(own))
        elif isinstance(op, ir.WaitFences):
            if any(self.fences[f][0] != "signaled" for f in op.fences):
                return False
            for f in op.fences:
                t.acquire(self.fences[f][1])
        elif isinstance(op, ir.ResetFences):
            for f in op.fences:
                state, clock, _ = self.fences[f]
                # VUID-vkResetFences-pFences-01123: the signal must happen-before the reset, whichever
                # order this schedule ran the queue in.
                if state == "pending" or state == "signaled" and any(map(int.__lt__, t.clock, clock)):
                    self.report("fence_misuse", None, None, None, None, None,
                                f"wait for {f!r} before resetting it",
                                f"{ref} resets fence {f!r} while {self.fences[f][2]} may still signal it",
                                ops=(self.fences[f][2], ref))
                self.fences[f] = ("unsignaled", None, None)
        elif isinstance(op, ir.WaitSemaphores):
            found = [self.timeline_signal(w.semaphore, w.value) for w in op.waits]
            if any(s is None for s in found):
                return False
            for s in found:
                if s:
                    t.acquire(s[1])
        elif isinstance(op, ir.SignalSemaphore):
            self.signal_timeline(op.semaphore, op.value, own, ref)
        elif isinstance(op, ir.HostAccess):
            self.host_access(t, op, ref)
        elif isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
            queues = [self.queues[op.queue]] if isinstance(op, ir.QueueWaitIdle) else \
                [q for q in self.queues.values() if q.device == op.device]
            if any(q.pending for q in queues):
                return False
            for q in queues:
                t.acquire(q.signal_fence())
        else:
            self.destroy(t, op, ref)
        return True

    def submit(self, t: ThreadAgent, op: ir.Submit, ref: str, clock: tuple) -> None:
        if op.fence is not None:
            state, _, holder = self.fences[op.fence]
            if state != "unsignaled":
                self.report("fence_misuse", None, None, None, None, None,
                            f"reset {op.fence!r} (after waiting for it) before submitting it again",
                            f"{ref} submits fence {op.fence!r} while it is {state}"
                            + (f" by {holder}" if holder else ""), ops=tuple(r for r in (holder, ref) if r))
            self.fences[op.fence] = ("pending", None, ref)
        batches = op.batches or (ir.Batch(),)
        queue = self.queues[op.queue]
        for n, batch in enumerate(batches):
            waits, signals = {}, {}
            for i, w in enumerate(batch.waits):
                if w.semaphore in self.binary_pending:
                    pending = self.binary_pending[w.semaphore]
                    waits[i] = pending.popleft() if pending else None
                    if waits[i] is None:
                        self.report("binary_semaphore_misuse", None, None, None, None, None,
                                    f"signal {w.semaphore!r} before this wait is submitted, once per wait",
                                    f"{ref} waits on binary semaphore {w.semaphore!r} with no pending signal",
                                    ops=(ref,))
            for i, s in enumerate(batch.signals):
                if s.semaphore in self.binary_pending:
                    pending = self.binary_pending[s.semaphore]
                    if pending:
                        self.report("binary_semaphore_misuse", None, None, None, None, None,
                                    f"wait on {s.semaphore!r} before signalling it again",
                                    f"{ref} signals binary semaphore {s.semaphore!r} while {pending[-1].ref}'s "
                                    f"signal is still pending", ops=(pending[-1].ref, ref))
                    signals[i] = BinarySignal(ref)
                    pending.append(signals[i])
            queue.pending.append(PendingBatch(ref, clock, batch, waits, signals,
                                              op.fence if n == len(batches) - 1 else None, (t.index, t.pc)))

    def host_access(self, t: ThreadAgent, op: ir.HostAccess, ref: str) -> None:
        root, base = self.index.root(op.buffer)
        if op.op in ("flush", "invalidate"):
            for seg in self.memories[root].span(base + op.offset, base + op.offset + op.size):
                if op.op == "invalidate":
                    seg.invalidated[t.index] = t.pc
                elif seg.write is not None and seg.write.agent == t.index:
                    seg.flushed = t.pc
            return
        write = op.op == "host_write"
        access = Access(t.index, t.pc, "host", () if write else ("host_read",), "host_write" if write else None,
                        ref, op.buffer, next(self.uids), op.label, None, issued=(t.index, t.pc))
        self.access(access, op.offset, op.offset + op.size)

    def destroy(self, t: ThreadAgent, op: ir.Destroy, ref: str) -> None:
        """Spec 12.7 vkDestroyBuffer: all submitted commands that refer to it must have completed."""
        root, _ = self.index.root(op.buffer)
        probe = Access(t.index, t.pc, "host", (), None, ref, op.buffer, next(self.uids), op.label, None)
        for e in self.uses.get(op.buffer, {}).values():
            if self.unordered(e, probe, *self._root_range(e), None):
                self.report("use_after_destroy", op.buffer, None, None, e, probe, fixes.destroy(e, ref),
                            f"{ref} destroys {op.buffer!r} while {e.ref} may still use it", racing=True)
        self.destroyed[op.buffer] = probe

    # ---- the end -----------------------------------------------------------

    def report_blocked(self) -> None:
        """Spec 7.4 / 7.3: waits left blocked when nothing can progress."""
        blocked, never, semaphore_waits = [], [], []
        for t in self.threads:
            if t.pc >= len(t.ops):
                continue
            op, ref = t.ops[t.pc], f"{t.id}[{t.pc}]"
            if isinstance(op, ir.WaitFences):
                unsubmitted = [f for f in op.fences if self.fences[f][0] == "unsignaled"]
                if unsubmitted:
                    self.report("fence_misuse", None, None, None, None, None,
                                f"submit work with fence {unsubmitted[0]!r} before waiting for it",
                                f"{ref} waits for fence {unsubmitted[0]!r}, which no pending submission signals",
                                ops=(ref,))
                    continue
            if isinstance(op, ir.WaitSemaphores):
                semaphore_waits.append(ref)
                never += [(ref, w.semaphore, w.value) for w in op.waits if self.never_satisfied(w.semaphore, w.value)]
            blocked.append(ref)
        for q in self.queues.values():
            if q.pending:
                p = q.pending[0]
                semaphore_waits.append(p.submit)
                never += [(p.submit, w.semaphore, w.value) for w in p.batch.waits
                          if w.value is not None and self.never_satisfied(w.semaphore, w.value)]
        for ref, semaphore, value in never:
            self.report("wait_never_satisfied", None, None, None, None, None,
                        f"signal {semaphore!r} to at least {value}, or wait for a value that is signalled",
                        f"{ref} waits for {semaphore!r} >= {value}, which no operation in the stream signals",
                        ops=(ref,))
        never_refs = {ref for ref, _, _ in never}
        # The waits on semaphores and the submits holding their signals are the cause; host waits
        # for fences or idle queues behind them are only blocked in turn.
        cause = [ref for ref in semaphore_waits if ref not in never_refs]
        if cause:
            cause += [p.submit for q in self.queues.values() for p in q.pending if p.batch.signals]
        elif blocked:
            cause = [ref for ref in blocked if ref not in never_refs]
        if cause:
            ops = tuple(sorted(set(cause), key=_ref_order))
            self.report("deadlock", None, None, None, None, None,
                        "submit each signal before (or on another queue than) the wait that needs it",
                        f"no schedule completes: {', '.join(ops)} wait for each other", ops=ops)

    def never_satisfied(self, semaphore: str, value: int) -> bool:
        return self.timeline_signal(semaphore, value) is None and not self.ever_signals(semaphore, value)

    def ever_signals(self, semaphore: str, value: int) -> bool:
        for t in self.stream.threads:
            for op in t.ops:
                if isinstance(op, ir.SignalSemaphore) and op.semaphore == semaphore and op.value >= value:
                    return True
                if isinstance(op, ir.Submit) and any(s.semaphore == semaphore and (s.value or 0) >= value
                                                     for b in op.batches for s in b.signals):
                    return True
        return False


def _signals(op: ir.HostOp) -> list:
    if isinstance(op, ir.Submit):
        return [s for b in op.batches for s in b.signals]
    return [op] if isinstance(op, ir.SignalSemaphore) else []


def _ref_order(ref: str) -> tuple:
    owner, _, rest = ref.partition("[")
    return owner, int(rest.split("]")[0])
