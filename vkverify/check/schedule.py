"""Runs a stream in the walker's legal order (walk.Walk: host threads in program order, queues as
their waits allow, device work as early as possible) and moves the checker's vector clocks.

Waits that never become satisfiable end the run with `deadlock`, `wait_never_satisfied` or
`fence_misuse` findings naming the blocked ops.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import ir
from ..model.gcpause import cyclic_gc_paused
from ..model.stages import DEVICE_STAGES
from . import fixes
from .agents import ThreadAgent
from .access import Access
from .engine import Checker
from .findings import Finding, Findings
from .readings import DEFAULT, Readings
from .scopes import second_execution_scope, signal_first_scope
from .walk import Consumer, Misuse, PendingBatch, Walk, shared_timelines

__all__ = ["Schedule", "check"]

_ALL_DEVICE = frozenset(DEVICE_STAGES)


def check(stream: ir.Stream, readings: Readings = DEFAULT, witness: str = "slice",
          witnesses: int | None = None) -> Sequence[Finding]:
    """Every synchronization finding of `stream` under `readings` of what the spec leaves open, in the order
    found; for a `params` stream, those of the smallest parameter values that have any. Witnesses
    (check/witness.py): `witness` "slice" or "full", at most `witnesses` computed (default exact.WITNESSES)."""
    if stream.params:
        from .params import check_params
        return check_params(stream, lambda instance: check(instance, readings, witness, witnesses))
    from . import exact
    shared = shared_timelines(stream)
    # The run makes millions of small objects that form no cycles (about a fifth of the time at 3*10^5
    # commands went to the cyclic collector's rescans, measured).
    with cyclic_gc_paused():
        findings = Schedule(stream, shared, readings).run()
    return exact.refine(stream, findings, shared, witness, exact.WITNESSES if witnesses is None else witnesses)


class Schedule(Checker, Consumer):
    """The checker as the walk's consumer: a release is the clock it carries."""

    def __init__(self, stream: ir.Stream, shared: frozenset[str] = frozenset(), readings: Readings = DEFAULT,
                 replay: bool = True, host_threads: int | None = None, quick: bool = True) -> None:
        """host_threads: how many of the stream's threads run ops (default: all of them); `replay`, `quick`: as
        Checker's."""
        super().__init__(stream, readings, replay, quick)
        self.shared = shared
        # With several host threads, an idle wait covers only the batches whose submit happens-before it (below):
        # per queue, each batch's submit (its thread's clock entry, position) and the release at its end.
        several = (len(stream.threads) if host_threads is None else host_threads) > 1
        self.batch_ends: dict[str, list] | None = {} if several else None

    def run(self) -> Findings:
        # The walk refers to the checker, not the reverse: no cycle keeps the checker's millions of objects
        # alive once check() returns (the cyclic collector is paused, and would then scan them all).
        walk = Walk(self.stream, self, self.shared)
        walk.run()
        walk.report_blocked()
        return self.result()

    def misuse(self, m: Misuse) -> None:
        self.report(m.kind, None, None, None, None, None, None, (m.message, m.fix), ops=m.ops)

    # ---- queues ------------------------------------------------------------

    def submit(self, thread: int, pc: int, op: ir.Submit) -> tuple:
        """The submission's clock (its batches acquire everything the thread did before it) and its place in
        stream order (Access.issued)."""
        return self.submission_clock(self.own_clock(thread, pc)), (self.threads[thread].index, pc)

    def own_clock(self, thread: int, pc: int) -> tuple:
        """The clock of the thread's op at pc: what the thread acquired, and the op itself."""
        t = self.threads[thread]
        return t.clock[:t.index] + (pc + 1,) + t.clock[t.index + 1:]

    def batch(self, queue_id: str, p: PendingBatch, acquired: list) -> tuple[list, tuple | None]:
        queue = self.queues[queue_id]
        submission, issued = p.context
        # Spec 7.9 host write ordering: the submission makes earlier host writes visible to the device.
        queue.acquire(submission, _ALL_DEVICE)
        for w, clock in zip(p.batch.waits, acquired):
            if clock is not None:
                queue.acquire(clock, second_execution_scope(w.stage), self.readings.host_barrier_after_wait)
        self.issuing, self.issuing_order = submission, issued
        for cb in p.batch.command_buffers:
            self.run_command_buffer(queue, self.index.command_buffers[cb], p.submit)
        releases = queue.signal_semaphores([signal_first_scope(s.stage, self.readings.all_commands_includes_host)
                                            for s in p.batch.signals])
        end = queue.signal_fence() if p.fence is not None or self.batch_ends is not None else None
        if self.batch_ends is not None:
            self.batch_ends.setdefault(queue_id, []).append((issued, end))
        return releases, end if p.fence is not None else None

    # ---- host ops ----------------------------------------------------------

    def host_wait(self, thread: int, pc: int, op: ir.HostOp, acquired: list) -> None:
        t = self.threads[thread]
        t.pc = pc
        for clock in acquired:
            if clock is not None:
                t.acquire(clock)

    def wait_idle(self, thread: int, pc: int, op: ir.HostOp, queues: list[str]) -> None:
        """Spec 5.3.4: an idle wait is "equivalent to having submitted a valid fence to every previously executed
        queue submission": of another thread's submits, only those that happen-before it on the host were
        (threads are ordered only through Vulkan objects; docs/format.md, Several host threads)."""
        if self.batch_ends is None:
            self.host_wait(thread, pc, op, [self.queues[q].signal_fence() for q in queues])
            return
        t = self.threads[thread]
        covered = [next((end for (agent, at), end in reversed(self.batch_ends.get(q, []))
                         if (at < pc if agent == t.index else t.clock[agent] > at)), None) for q in queues]
        self.host_wait(thread, pc, op, covered)

    def signal_semaphore(self, thread: int, pc: int, op: ir.SignalSemaphore) -> tuple:
        return self.own_clock(thread, pc)  # execution only: a host signal is no domain operation

    def acquired(self, thread: int, clock: tuple) -> bool:
        return not any(map(int.__lt__, self.threads[thread].clock, clock))

    def host_op(self, thread: int, pc: int, op: ir.HostOp) -> None:
        t = self.threads[thread]
        t.pc = pc
        ref = f"{t.id}[{pc}]"
        if isinstance(op, ir.HostAccess):
            self.host_access(t, op, ref)
        else:
            self.destroy(t, op, ref)

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
        probe = Access(t.index, t.pc, "host", (), None, ref, op.buffer, next(self.uids), op.label, None)
        for e in self.uses.get(op.buffer, {}).values():
            if self.unordered(e, probe, *self._root_range(e), None):
                self.report("use_after_destroy", op.buffer, None, None, e, probe, probe.uid,
                            (f"{ref} destroys {op.buffer!r} while {e.ref} may still use it", fixes.destroy(e, ref)),
                            racing=True)
        self.destroyed[op.buffer] = probe
