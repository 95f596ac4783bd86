"""The legal-order walker: which host op or queue batch of a stream may run next.

Host threads perform their ops in program order; a submit queues its batches in submission order
(spec 7.2); a batch starts once its semaphore waits are satisfied (7.4); a host wait blocks until
what it waits for has happened (7.3 fences, 7.4.2 timeline values, 5.3.4 idle waits). `Walk.run`
takes one legal order, the checker's (each thread until it blocks, every queue drained after each
host op), in a submission order given (each call to a queue in its turn: several threads calling one queue,
`several_orders`) or its own; `sim/order.py` picks others with `host_ready`, `batch_ready` and the `step_*` methods.

What running an op means belongs to the `Consumer`: the checker moves vector clocks, hb.Model adds
graph nodes, the simulator lists data steps. A release (a semaphore or fence signal, an idle wait)
is whatever the consumer returns for it, handed back to the waits that acquire it (None: nothing to
acquire). Misuse the walk meets, and the waits left blocked at its end, reach the consumer as
`Misuse` records.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..model import ir
from ..model.refs import format_ref, sort_key

__all__ = ["ORDERS", "BinarySignal", "Consumer", "FenceState", "Misuse", "PendingBatch", "Walk", "deadlock_message",
           "orders_unread", "several_orders", "shared_timelines", "signals"]


@dataclass(eq=False)
class BinarySignal:
    """Spec 7.4: a binary semaphore signal, paired at submission with the one wait that consumes it."""

    ref: str
    done: bool = False
    release: object = None


@dataclass(eq=False)
class PendingBatch:
    submit: str
    index: int  # the batch's position in its submit
    batch: ir.Batch
    binary_waits: dict  # wait index -> BinarySignal (None: misuse, the wait is ignored)
    binary_signals: dict  # signal index -> BinarySignal
    fence: str | None  # the submit's fence, on its last batch
    context: object  # what the consumer returned for the submit


class FenceState(NamedTuple):
    state: str  # unsignaled | pending | signaled
    release: object = None
    holder: str | None = None  # the submit that signals (or signalled) it


UNSIGNALED = FenceState("unsignaled")


class Misuse(NamedTuple):
    """A rule of the spec the stream breaks, as the checker reports it: `ops` are the operations to name."""

    kind: str
    fix: str
    message: str
    ops: tuple[str, ...]


class Consumer:
    """What a host op or batch does once the walk runs it; `thread` is the thread's index in the stream.
    These defaults do nothing and carry no releases: a consumer that needs only the order overrides
    `batch` and `host_op` alone."""

    def submit(self, thread: int, pc: int, op: ir.Submit) -> object:
        """The submit's context, kept on its pending batches."""

    def batch(self, queue: str, p: PendingBatch, acquired: list) -> tuple[list, object]:
        """Run p after acquiring `acquired` (one release or None per wait); return the release of each
        signal and of the fence (None without one)."""
        return [None] * len(p.batch.signals), None

    def host_wait(self, thread: int, pc: int, op: ir.HostOp, acquired: list) -> None:
        """A fence or semaphore wait, satisfied by the releases `acquired`."""

    def wait_idle(self, thread: int, pc: int, op: ir.HostOp, queues: list[str]) -> None:
        """An idle wait, once nothing is pending on `queues`."""

    def signal_semaphore(self, thread: int, pc: int, op: ir.SignalSemaphore) -> object:
        """A host signal: its release."""

    def host_op(self, thread: int, pc: int, op: ir.HostOp) -> None:
        """A host access, flush, invalidate or destroy: no synchronization of its own."""

    def acquired(self, thread: int, release: object) -> bool:
        """Whether the thread has acquired `release` (a fence signal it resets must happen-before it)."""
        return True

    def misuse(self, m: Misuse) -> None:
        """A rule the stream breaks."""


ORDERS = 64  # the submission orders of queues several threads call that are read, at most (else the walk's own)


def several_orders(stream: ir.Stream) -> list[ir.SubmissionOrder]:
    """The submission orders of a stream whose threads call one queue (ir.submission_orders), each of which
    check and explain read (docs/format.md, "Several host threads"); none where it has one, or more than ORDERS
    (then the walk's own alone)."""
    orders = ir.submission_orders(stream, ORDERS) if len(stream.threads) > 1 else None
    return orders if orders and len(orders) > 1 else []


def deadlock_message(ops: Sequence[str], other_orders_complete: bool = False, in_another_order: bool = False) -> str:
    """A deadlock's message; other_orders_complete: the walk's own submission order blocks where some other
    order the threads allow completes (a hang where the threads take the walk's); in_another_order: another order
    the threads allow blocks (its finding's `order`), where the walk's completes."""
    # One op: the host op that would make its signal waits for it in turn (an idle wait behind the batch, corpus 261).
    wait = f"{ops[0]} waits for a signal that only an operation blocked behind it would make" if len(ops) == 1 else \
        f"{', '.join(ops)} wait for each other"
    if other_orders_complete:
        return f"in the submission order the walk took, which the threads allow, {wait} (other orders complete)"
    if in_another_order:
        return f"where the threads' calls come in another order they allow, {wait} (the walk's order completes)"
    return f"no schedule completes: {wait}"


def orders_unread(stream: ir.Stream) -> tuple[str, ...]:
    """Why a verdict on `stream` is partial where its threads allow more submission orders than check reads."""
    if len(stream.threads) > 1 and ir.submission_orders(stream, ORDERS) is None:
        why = (f"its threads call a queue in more than {ORDERS} orders: only the walk's own submission order is "
               "read (docs/format.md, \"Several host threads\")")
        return (why,)
    return ()


def shared_timelines(stream: ir.Stream) -> frozenset[str]:
    """Timelines signalled by several queues or host threads: which signal satisfies a wait then
    depends on the schedule."""
    agents: dict[str, set] = {}
    for op, b in ir.batches(stream):
        for s in b.signals:
            if s.value is not None:
                agents.setdefault(s.semaphore, set()).add(op.queue)
    for t in stream.threads:
        for op in t.ops:
            if isinstance(op, ir.SignalSemaphore):
                agents.setdefault(op.semaphore, set()).add(t.id)
    return frozenset(k for k, v in agents.items() if len(v) > 1)


def signals(op: ir.HostOp) -> list:
    """The semaphore signals a host op makes: a submit's batches' or a host signal."""
    if isinstance(op, ir.Submit):
        return [s for b in op.batches for s in b.signals]
    return [op] if isinstance(op, ir.SignalSemaphore) else []


def ever_signals(stream: ir.Stream, semaphore: str, value: int) -> bool:
    """Whether any operation of the stream signals `semaphore` to `value` or more."""
    return any(s.semaphore == semaphore and (s.value or 0) >= value
               for t in stream.threads for op in t.ops for s in signals(op))


class Walk:
    """The state of the walk: each thread's next op, each queue's pending batches, fences, semaphores."""

    def __init__(self, stream: ir.Stream, consumer: Consumer, shared: frozenset[str] | None = None,
                 runs_on: dict[str, object] | None = None, order: ir.SubmissionOrder | None = None) -> None:
        """`runs_on`: stream queue -> the device queue it is submitted to, where stream queues share one (a
        device with fewer queues than the stream): their batches then form one submission order (spec 7.2).
        `order`: the submission order to run (ir.submission_orders): a call to a queue waits for its turn."""
        self.stream = stream
        self.order = order
        self.made = dict.fromkeys(order or (), 0)  # queue -> how many of its calls in `order` are made
        self.index = stream.index
        self.consumer = consumer
        self.threads = [(t.id, t.ops) for t in stream.threads]
        self.pc = [0] * len(self.threads)
        device_queues: dict[object, deque[PendingBatch]] = {}
        self.pending: dict[str, deque[PendingBatch]] = {
            q: device_queues.setdefault((runs_on or {}).get(q, q), deque()) for q in self.index.queues}
        self.fences: dict[str, FenceState] = {}
        self.binary: dict[str, deque[BinarySignal]] = {}
        # Timeline -> [(value, release, ref)] in signal order, and its current value.
        self.timeline: dict[str, list] = {}
        self.timeline_value: dict[str, int] = {}
        self.add_syncs(stream.semaphores, stream.fences)
        self.unsorted: set[str] = set()  # timelines whose signals so far did not strictly increase
        # Timelines several queues or threads signal: z3 (exact.refine) reports their ordering problems.
        self.shared = shared_timelines(stream) if shared is None else shared
        # Ascending, as an array: check/incremental.py's forks copy it as memory, not as one int object each.
        self.signal_values = {sem: array("Q", sorted({s.value for t in stream.threads for op in t.ops
                                                      for s in signals(op) if s.semaphore == sem}))
                              for sem in self.shared}

    def add_syncs(self, semaphores: Iterable[ir.Semaphore], fences: Iterable[ir.FenceState]) -> None:
        """Semaphores and fences as created: nothing signalled beyond a timeline's initial value."""
        for s in semaphores:
            if s.type == "binary":
                self.binary[s.id] = deque()
            else:
                self.timeline[s.id], self.timeline_value[s.id] = [], s.initial
        for f in fences:
            # A fence created signaled carries no release: nothing to acquire from it.
            self.fences[f.id] = FenceState("signaled") if f.signaled else UNSIGNALED

    # ---- the checker's order -------------------------------------------------

    def run(self) -> None:
        """Each thread in turn runs until it blocks, every queue drained after each host op; stops when
        nothing can progress."""
        progress = True
        while progress:
            progress = False
            for thread, (_, ops) in enumerate(self.threads):
                while self.pc[thread] < len(ops) and self.step_host(thread):
                    progress = True
                    self.drain()

    def drain(self) -> None:
        progress = True
        while progress:
            progress = False
            for queue, pending in self.pending.items():
                while pending and self.step_batch(queue):
                    progress = True

    # ---- semaphores ----------------------------------------------------------

    def timeline_signal(self, semaphore: str, value: int) -> tuple | None:
        """Spec 7.4.2: a wait for `value` is satisfied by the first signal >= value: its (value, release,
        ref); () when the initial value satisfies it; None while no signal does."""
        if value <= self.index.semaphores[semaphore].initial:
            return ()
        history = self.timeline[semaphore]
        exact = semaphore in self.shared
        if exact:
            # Signals of a timeline strictly increase in time, so in every legal schedule the first signal
            # >= value is the one of the smallest such value, whichever queue or thread performs it.
            values = self.signal_values[semaphore]
            i = bisect_left(values, value)
            if i == len(values):
                return None
            value = values[i]
        if semaphore in self.unsorted:
            return next((s for s in history if (s[0] == value if exact else s[0] >= value)), None)
        # Values so far strictly increase: bisection, so many signals are not quadratic.
        i = bisect_left(history, value, key=lambda s: s[0])
        return history[i] if i < len(history) and (not exact or history[i][0] == value) else None

    def signal_timeline(self, semaphore: str, value: int, release: object, ref: str) -> None:
        """Spec 7.4.2: a signal's value must be greater than the timeline's current value."""
        history = self.timeline[semaphore]
        current = self.timeline_value[semaphore]
        if value <= current:
            self.unsorted.add(semaphore)
            if semaphore not in self.shared:
                previous = history[-1][2] if history else None
                self.consumer.misuse(Misuse(
                    "timeline_not_increasing", f"signal {semaphore!r} with a value greater than {current}",
                    f"{ref} signals {semaphore!r} to {value}, not above its current value {current}",
                    tuple(r for r in (previous, ref) if r)))
        history.append((value, release, ref))
        self.timeline_value[semaphore] = max(current, value)

    def pair_binary_wait(self, semaphore: str, ref: str) -> BinarySignal | None:
        """Spec 7.4.2: a binary semaphore wait must not be submitted before the signal it waits for; it
        consumes the oldest pending one."""
        pending = self.binary[semaphore]
        if pending:
            return pending.popleft()
        self.consumer.misuse(Misuse(
            "binary_semaphore_misuse", f"signal {semaphore!r} before this wait is submitted, once per wait",
            f"{ref} waits on binary semaphore {semaphore!r} with no pending signal", (ref,)))
        return None

    def binary_signal(self, semaphore: str, ref: str) -> BinarySignal:
        """Spec 7.4.1: a binary semaphore must be unsignaled, with no signal pending, when a signal of it is
        submitted."""
        pending = self.binary[semaphore]
        if pending:
            self.consumer.misuse(Misuse(
                "binary_semaphore_misuse", f"wait on {semaphore!r} before signalling it again",
                f"{ref} signals binary semaphore {semaphore!r} while {pending[-1].ref}'s signal is still pending",
                (pending[-1].ref, ref)))
        signal = BinarySignal(ref)
        pending.append(signal)
        return signal

    # ---- queues --------------------------------------------------------------

    def acquires(self, p: PendingBatch) -> list | None:
        """Spec 7.4.2: per semaphore wait of p, the release it acquires (None: nothing to acquire); None
        while a wait is not yet satisfied."""
        out = []
        for i, w in enumerate(p.batch.waits):
            if i in p.binary_waits:
                signal = p.binary_waits[i]
                if signal is None:
                    out.append(None)
                elif not signal.done:
                    return None
                else:
                    out.append(signal.release)
            else:
                found = self.timeline_signal(w.semaphore, w.value)
                if found is None:
                    return None
                out.append(found[1] if found else None)
        return out

    def batch_ready(self, queue: str) -> bool:
        return bool(self.pending[queue]) and self.acquires(self.pending[queue][0]) is not None

    def step_batch(self, queue: str) -> bool:
        """Run the queue's next batch; False while its waits block it."""
        pending = self.pending[queue]
        p = pending[0]
        acquired = self.acquires(p)
        if acquired is None:
            return False
        releases, fence = self.consumer.batch(queue, p, acquired)
        for i, (s, release) in enumerate(zip(p.batch.signals, releases)):
            if i in p.binary_signals:
                p.binary_signals[i].done, p.binary_signals[i].release = True, release
            else:
                self.signal_timeline(s.semaphore, s.value, release, p.submit)
        if p.fence is not None and self.fences[p.fence].holder == p.submit:  # not reset (a misuse) or resubmitted
            self.fences[p.fence] = FenceState("signaled", fence, p.submit)
        pending.popleft()
        return True

    # ---- host ops --------------------------------------------------------------

    def waited(self, op: ir.HostOp) -> list | None:
        """What a host op waits for, once it has happened: the fence (7.3) or semaphore (7.4.2) releases it
        acquires, the queues it waits idle (5.3.4); [] for an op that does not wait; None while it blocks."""
        if isinstance(op, ir.WaitFences):
            fences = [self.fences[f] for f in op.fences]
            return [f.release for f in fences] if all(f.state == "signaled" for f in fences) else None
        if isinstance(op, ir.WaitSemaphores):
            found = [self.timeline_signal(w.semaphore, w.value) for w in op.waits]
            return None if None in found else [s[1] for s in found if s]
        if isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
            queues = ir.idle_queues(self.index, op)
            return None if any(self.pending[q] for q in queues) else queues
        return []

    def host_ready(self, thread: int) -> bool:
        _, ops = self.threads[thread]
        return self.pc[thread] < len(ops) and self.waited(ops[self.pc[thread]]) is not None and self.turn(thread)

    def turn(self, thread: int) -> bool:
        """Whether the thread's next op may run in the walk's submission order: a call to a queue (a submit, an
        idle wait) once the calls before it there are made; every op where the walk is given no order."""
        if self.order is None:
            return True
        (name, ops), pc = self.threads[thread], self.pc[thread]
        return all(self.order[q][self.made[q]] == (name, pc) for q in ir.queues_called(self.index, ops[pc]))

    def step_host(self, thread: int) -> bool:
        """Perform the thread's next op; False while it blocks."""
        pc, (name, ops) = self.pc[thread], self.threads[thread]
        op = ops[pc]
        waited = self.waited(op)
        if waited is None or not self.turn(thread):
            return False
        if self.order is not None:
            for q in ir.queues_called(self.index, op):
                self.made[q] += 1
        if isinstance(op, (ir.WaitFences, ir.WaitSemaphores)):
            self.consumer.host_wait(thread, pc, op, waited)
        elif isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
            self.consumer.wait_idle(thread, pc, op, waited)
        elif isinstance(op, ir.Submit):
            self.submit(thread, pc, op, format_ref(name, pc))
        elif isinstance(op, ir.ResetFences):
            self.reset_fences(thread, op, format_ref(name, pc))
        elif isinstance(op, ir.SignalSemaphore):
            release = self.consumer.signal_semaphore(thread, pc, op)
            self.signal_timeline(op.semaphore, op.value, release, format_ref(name, pc))
        else:
            self.consumer.host_op(thread, pc, op)
        self.pc[thread] = pc + 1
        return True

    def submit(self, thread: int, pc: int, op: ir.Submit, ref: str) -> None:
        context = self.consumer.submit(thread, pc, op)
        if op.fence is not None:
            state, _, holder = self.fences[op.fence]
            if state != "unsignaled":  # spec 7.3: a submitted fence must be unsignaled
                self.consumer.misuse(Misuse(
                    "fence_misuse", f"reset {op.fence!r} (after waiting for it) before submitting it again",
                    f"{ref} submits fence {op.fence!r} while it is {state}" + (f" by {holder}" if holder else ""),
                    tuple(r for r in (holder, ref) if r)))
            self.fences[op.fence] = FenceState("pending", None, ref)
        batches = op.batches or (ir.Batch(),)
        for n, batch in enumerate(batches):
            waits = {i: self.pair_binary_wait(w.semaphore, ref)
                     for i, w in enumerate(batch.waits) if w.semaphore in self.binary}
            signaled = {i: self.binary_signal(s.semaphore, ref)
                        for i, s in enumerate(batch.signals) if s.semaphore in self.binary}
            self.pending[op.queue].append(PendingBatch(ref, n, batch, waits, signaled,
                                                       op.fence if n == len(batches) - 1 else None, context))

    def reset_fences(self, thread: int, op: ir.ResetFences, ref: str) -> None:
        for f in op.fences:
            state, release, holder = self.fences[f]
            # VUID-vkResetFences-pFences-01123: the signal must happen-before the reset, whichever order this
            # walk ran the queue in.
            if state == "pending" or state == "signaled" and release is not None \
                    and not self.consumer.acquired(thread, release):
                self.consumer.misuse(Misuse(
                    "fence_misuse", f"wait for {f!r} before resetting it",
                    f"{ref} resets fence {f!r} while {holder} may still signal it", (holder, ref)))
            self.fences[f] = UNSIGNALED

    # ---- the end ---------------------------------------------------------------

    def out_of_turn(self) -> bool:
        """Whether a thread's next op waits only for its turn in the walk's submission order: stopped so, the walk
        ran an interleaving no execution runs (an earlier call of the order waits for that op)."""
        return any(pc < len(ops) and self.waited(ops[pc]) is not None and not self.turn(t)
                   for t, ((_, ops), pc) in enumerate(zip(self.threads, self.pc)))

    def blocked(self) -> list[str]:
        """The ops left blocked: each thread's next op, each queue's next batch (by its submit)."""
        return [format_ref(name, pc) for (name, ops), pc in zip(self.threads, self.pc) if pc < len(ops)] + \
            [pending[0].submit for pending in self.pending.values() if pending]

    def report_blocked(self) -> None:
        """Spec 7.4 / 7.3: waits left blocked when nothing can progress."""
        blocked, never, semaphore_waits = [], [], []
        for (name, ops), pc in zip(self.threads, self.pc):
            if pc >= len(ops):
                continue
            op, ref = ops[pc], format_ref(name, pc)
            if isinstance(op, ir.WaitFences):
                unsubmitted = [f for f in op.fences if self.fences[f].state == "unsignaled"]
                if unsubmitted:
                    self.consumer.misuse(Misuse(
                        "fence_misuse", f"submit work with fence {unsubmitted[0]!r} before waiting for it",
                        f"{ref} waits for fence {unsubmitted[0]!r}, which no pending submission signals", (ref,)))
                    continue
            if isinstance(op, ir.WaitSemaphores):
                semaphore_waits.append(ref)
                never += [(ref, w.semaphore, w.value) for w in op.waits if self.never_satisfied(w.semaphore, w.value)]
            blocked.append(ref)
        for q in self.pending.values():
            if q:
                p = q[0]
                semaphore_waits.append(p.submit)
                never += [(p.submit, w.semaphore, w.value) for w in p.batch.waits
                          if w.value is not None and self.never_satisfied(w.semaphore, w.value)]
        for ref, semaphore, value in never:
            self.consumer.misuse(Misuse(
                "wait_never_satisfied",
                f"signal {semaphore!r} to at least {value}, or wait for a value that is signalled",
                f"{ref} waits for {semaphore!r} >= {value}, which no operation in the stream signals", (ref,)))
        never_refs = {ref for ref, _, _ in never}
        # The waits on semaphores and the submits holding their signals are the cause; host waits
        # for fences or idle queues behind them are only blocked in turn.
        cause = [ref for ref in semaphore_waits if ref not in never_refs]
        if cause:
            cause += [p.submit for q in self.pending.values() for p in q if p.batch.signals]
        elif blocked:
            cause = [ref for ref in blocked if ref not in never_refs]
        if cause:
            ops = tuple(sorted(set(cause), key=sort_key))
            self.consumer.misuse(Misuse(
                "deadlock", "submit each signal before (or on another queue than) the wait that needs it",
                deadlock_message(ops), ops))

    def never_satisfied(self, semaphore: str, value: int) -> bool:
        return self.timeline_signal(semaphore, value) is None and not ever_signals(self.stream, semaphore, value)
