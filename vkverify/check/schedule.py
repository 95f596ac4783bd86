"""Runs a stream in the walker's legal order (walk.Walk: host threads in program order, queues as
their waits allow, device work as early as possible) and moves the vector clocks of the checker it holds
(engine.Checker): the walk's consumer, which the checker knows nothing of. A stream whose threads call one
queue runs once more in each other submission order they allow (check; walk.several_orders).

Waits that never become satisfiable end the run with `deadlock`, `wait_never_satisfied` or
`fence_misuse` findings naming the blocked ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..model import ir
from ..model.gcpause import cyclic_gc_paused
from .engine import Checker
from .findings import Finding, Findings
from .readings import DEFAULT, Readings
from .scopes import ALL_DEVICE, second_execution_scope, signal_first_scope
from .walk import Consumer, Misuse, PendingBatch, Walk, deadlock_message, several_orders, shared_timelines

__all__ = ["Schedule", "check"]



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
        # Threads calling one queue: its submission order is any interleaving of their calls (docs/format.md,
        # "Several host threads"); the verdict is every finding of each one some schedule runs.
        orders = several_orders(stream)
        findings = Schedule(Checker(stream, readings), shared, every_order=bool(orders)).run()
        completing = False
        for order in orders:
            schedule = Schedule(Checker(stream, readings), shared, order=order, every_order=True)
            other = schedule.run()
            if other is not None:
                completing = completing or schedule.completed
                findings.join(other, order)
        for i in range(len(findings)):
            if findings.kinds[i] == "deadlock":
                f = findings.finding(i)
                if f.order is not None:  # a hang where the threads' calls come in that order
                    findings.settle(i, replace(f, message=deadlock_message(f.ops, in_another_order=True)))
                elif completing:  # the walk's own order blocked, another did not
                    findings.settle(i, replace(f, message=deadlock_message(f.ops, other_orders_complete=True)))
    return exact.refine(stream, findings, shared, witness, exact.WITNESSES if witnesses is None else witnesses)


class Schedule(Consumer):
    """The walk's consumer that runs `checker`'s stream through it: a release is the clock it carries."""

    def __init__(self, checker: Checker, shared: frozenset[str] = frozenset(), host_threads: int | None = None,
                 order: ir.SubmissionOrder | None = None, every_order: bool = False) -> None:
        """`shared`: the stream's timelines several agents signal (walk.shared_timelines); host_threads: how many
        of the stream's threads run ops (default: all of them); `order`: the submission order to run (None: the
        walk's own); `every_order`: whether each submission order the threads allow is run (check)."""
        self.checker = checker
        self.shared = shared
        self.order = order
        stream = checker.stream
        # With several host threads whose orders are not each run, an idle wait covers only the batches whose
        # submit happens-before it (below): per queue, each batch's submit (its thread's clock entry, position) and
        # the release at its end. Where each is run, it covers every batch before it in the run's order (5.3.4).
        several = (len(stream.threads) if host_threads is None else host_threads) > 1 and not every_order
        self.batch_ends: dict[str, list] | None = {} if several else None

    def run(self) -> Findings | None:
        """The findings (`completed`: whether the walk ran every op); None where no execution runs `order`: the walk
        stops with a call waiting only for its turn in it. Where the threads' waits block it in `order`, the
        execution that made the calls in that order hangs: its deadlock is reported."""
        # The walk refers to the checker, not the reverse: no cycle keeps the checker's millions of objects
        # alive once check() returns (the cyclic collector is paused, and would then scan them all).
        walk = Walk(self.checker.stream, self, self.shared, order=self.order)
        walk.run()
        self.completed = not walk.blocked()
        if self.order is not None and walk.out_of_turn():
            return None
        walk.report_blocked()
        return self.checker.result()

    def misuse(self, m: Misuse) -> None:
        self.checker.report(m.kind, None, None, None, None, None, None, (m.message, m.fix), ops=m.ops)

    # ---- queues ------------------------------------------------------------

    def submit(self, thread: int, pc: int, op: ir.Submit) -> tuple:
        """The submission's clock (its batches acquire everything the thread did before it) and its place in
        stream order (Access.issued)."""
        return self.checker.submission_clock(self.own_clock(thread, pc)), (self.checker.threads[thread].index, pc)

    def own_clock(self, thread: int, pc: int) -> tuple:
        """The clock of the thread's op at pc: what the thread acquired, and the op itself."""
        t = self.checker.threads[thread]
        return t.clock[:t.index] + (pc + 1,) + t.clock[t.index + 1:]

    def batch(self, queue_id: str, p: PendingBatch, acquired: list) -> tuple[list, tuple | None]:
        c = self.checker
        queue = c.queues[queue_id]
        submission, issued = p.context
        # Spec 7.9 host write ordering: the submission makes earlier host writes visible to the device.
        queue.acquire(submission, ALL_DEVICE)
        for w, clock in zip(p.batch.waits, acquired):
            if clock is not None:
                queue.acquire(clock, second_execution_scope(w.stage), c.readings.host_barrier_after_wait)
        c.issuing, c.issuing_order = submission, issued
        for cb in p.batch.command_buffers:
            c.run_command_buffer(queue, c.index.command_buffers[cb], p.submit)
        releases = queue.signal_semaphores([signal_first_scope(s.stage, c.readings.all_commands_includes_host)
                                            for s in p.batch.signals])
        end = queue.signal_fence() if p.fence is not None or self.batch_ends is not None else None
        if self.batch_ends is not None:
            self.batch_ends.setdefault(queue_id, []).append((issued, end))
        return releases, end if p.fence is not None else None

    # ---- host ops ----------------------------------------------------------

    def host_wait(self, thread: int, pc: int, op: ir.HostOp, acquired: list) -> None:
        t = self.checker.threads[thread]
        t.pc = pc
        for clock in acquired:
            if clock is not None:
                t.acquire(clock)

    def wait_idle(self, thread: int, pc: int, op: ir.HostOp, queues: list[str]) -> None:
        """Spec 5.3.4: an idle wait is "equivalent to having submitted a valid fence to every previously executed
        queue submission": in the one order run of several, of another thread's submits only those that
        happen-before it on the host were (threads are ordered only through Vulkan objects; docs/format.md,
        Several host threads)."""
        if self.batch_ends is None:
            self.host_wait(thread, pc, op, [self.checker.queues[q].signal_fence() for q in queues])
            return
        t = self.checker.threads[thread]
        covered = [next((end for (agent, at), end in reversed(self.batch_ends.get(q, []))
                         if (at < pc if agent == t.index else t.clock[agent] > at)), None) for q in queues]
        self.host_wait(thread, pc, op, covered)

    def signal_semaphore(self, thread: int, pc: int, op: ir.SignalSemaphore) -> tuple:
        return self.own_clock(thread, pc)  # execution only: a host signal is no domain operation

    def acquired(self, thread: int, clock: tuple) -> bool:
        return not any(map(int.__lt__, self.checker.threads[thread].clock, clock))

    def host_op(self, thread: int, pc: int, op: ir.HostOp) -> None:
        t = self.checker.threads[thread]
        t.pc = pc
        ref = f"{t.id}[{pc}]"
        if isinstance(op, ir.HostAccess):
            self.checker.host_access(t, op, ref)
        elif isinstance(op, (ir.HostSetEvent, ir.HostResetEvent)):
            self.checker.host_event(t, op, ref)
        else:
            self.checker.destroy(t, op, ref)
