"""Schedule semantics in z3: which complete schedules of a stream exist.

Every queue batch gets a begin and an end time, every host op one time.
`plan(stream)` turns a stream into plain nodes (no z3); the `mk_*` functions
build constraints over their times; `make_solver` is the one solver factory;
the queries below push/pop per question and return plain nodes and labels, never
z3 objects. Witness schedules are the walk's (check/witness.py), not z3's.

Time is per batch, not per stage: a semaphore wait's stage mask is not
modelled here (the vector-clock checker handles masks). Batches on one queue
begin in submission order and, as an approximation that only delays
completions, end in that order too; a batch's signals and fence happen at its
end. Binary semaphores pair the k-th wait with the k-th signal in stream order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

import z3

from ..model import ir
from ..model.refs import batch_ref, format_ref

__all__ = ["BatchNode", "HostNode", "Order", "Plan", "Semantics", "SignalNode", "Wait", "plan"]



@dataclass(frozen=True)
class Wait:
    """An unsat core's wait: `node` (a batch key or host op reference) of operation `op` (the submit or the host
    op findings name) waits for `waited` (a semaphore or a fence) to reach `value` (a timeline's; None for a
    binary semaphore or a fence)."""

    node: str
    op: str
    waited: str
    value: int | None = None

    def __str__(self) -> str:
        return f"wait {self.node} {self.waited}" + ("" if self.value is None else f" >= {self.value}")


@dataclass(frozen=True)
class Order:
    """An unsat core's order: submission order on a queue or program order on a thread (`agent`)."""

    kind: str  # "submission order on" or "program order of"
    agent: str

    def __str__(self) -> str:
        return f"{self.kind} {self.agent}"


Label = Wait | Order
Constraint = tuple[Label | None, z3.BoolRef]  # (tracking label or None for background, formula)


@dataclass(frozen=True)
class BatchNode:
    key: str  # `main[1]`, or `main[1].batches[2]` when the submit has several batches
    submit: str  # the submit's reference
    thread: str
    pc: int
    queue: str
    batch: ir.Batch
    fence: str | None


@dataclass(frozen=True)
class HostNode:
    ref: str
    thread: str
    pc: int
    op: ir.HostOp


@dataclass(frozen=True)
class SignalNode:
    semaphore: str
    value: int | None
    owner: str  # batch key or host ref: the node whose time is the signal's
    ref: str  # the operation findings name: the submit or the host op
    agent: str  # queue or thread id


@dataclass(frozen=True)
class Plan:
    batches: tuple[BatchNode, ...]
    hosts: tuple[HostNode, ...]
    signals: tuple[SignalNode, ...]
    semaphores: dict  # id -> ir.Semaphore
    queue_device: dict  # queue id -> device id

    def signals_of(self, semaphore: str) -> list[SignalNode]:
        return [s for s in self.signals if s.semaphore == semaphore]


def plan(stream: ir.Stream) -> Plan:
    """The schedule's nodes, in stream order."""
    batches, hosts, signals = [], [], []
    for t in stream.threads:
        for pc, op in enumerate(t.ops):
            ref = format_ref(t.id, pc)
            hosts.append(HostNode(ref, t.id, pc, op))
            if isinstance(op, ir.Submit):
                parts = op.batches or (ir.Batch(),)
                for k, b in enumerate(parts):
                    key = batch_ref(ref, k, len(parts))
                    batches.append(BatchNode(key, ref, t.id, pc, op.queue, b,
                                             op.fence if k == len(parts) - 1 else None))
                    signals += [SignalNode(s.semaphore, s.value, key, ref, op.queue) for s in b.signals]
            elif isinstance(op, ir.SignalSemaphore):
                signals.append(SignalNode(op.semaphore, op.value, ref, ref, t.id))
    return Plan(tuple(batches), tuple(hosts), tuple(signals), dict(stream.index.semaphores),
                {q: d for q, (d, _) in stream.index.queues.items()})


# ---- times --------------------------------------------------------------------


class Times:
    """z3 integer times: begin/end per batch, one per host op."""

    def __init__(self, p: Plan) -> None:
        # A context of its own: z3's search, hence the witness, then depends only on this stream.
        self.ctx = z3.Context()
        self.begin = {b.key: z3.Int(f"{b.key} begin", self.ctx) for b in p.batches}
        self.end = {b.key: z3.Int(f"{b.key} end", self.ctx) for b in p.batches}
        self.host = {h.ref: z3.Int(h.ref, self.ctx) for h in p.hosts}

    def at(self, owner: str) -> z3.ArithRef:
        """When a signal owned by `owner` happens: its batch's end or its host op."""
        return self.end[owner] if owner in self.end else self.host[owner]


# ---- constraint builders --------------------------------------------------------


def mk_program_order(p: Plan, t: Times) -> list[Constraint]:
    """Spec 7.2 (host side): a thread performs its ops in program order; a batch begins after its submit
    and ends after it begins."""
    out: list[Constraint] = []
    by_thread = defaultdict(list)
    for h in p.hosts:
        by_thread[h.thread].append(h)
    for thread, ops in by_thread.items():
        out += [(Order("program order of", thread), t.host[a.ref] < t.host[b.ref]) for a, b in pairwise(ops)]
    if len(p.hosts) > 1:
        # Distinct host times: of two threads' submits (or a submit and an idle wait) one comes first, as
        # the cross-thread submission order and idle-wait rules below assume.
        out.append((None, z3.Distinct(list(t.host.values()))))
    for b in p.batches:
        out.append((None, t.host[b.submit] < t.begin[b.key]))
        out.append((None, t.begin[b.key] < t.end[b.key]))
    return out


def mk_queue_order(p: Plan, t: Times) -> list[Constraint]:
    """Spec 7.2 "submission order": batches of one queue in the order of their submit calls, which for
    submits from different threads is the order the host makes them."""
    out: list[Constraint] = []
    by_queue = defaultdict(list)
    for b in p.batches:
        by_queue[b.queue].append(b)
    for queue, bs in by_queue.items():
        label = Order("submission order on", queue)
        for a, b in pairwise(bs):
            if a.thread == b.thread:
                out.append((label, z3.And(t.begin[a.key] < t.begin[b.key], t.end[a.key] <= t.end[b.key])))
        for i, a in enumerate(bs):
            for b in bs[i + 1:]:
                if a.thread != b.thread:
                    before = z3.And(t.begin[a.key] < t.begin[b.key], t.end[a.key] <= t.end[b.key])
                    after = z3.And(t.begin[b.key] < t.begin[a.key], t.end[b.key] <= t.end[a.key])
                    out.append((label, z3.If(t.host[a.submit] < t.host[b.submit], before, after)))
    return out


def _reached(p: Plan, t: Times, semaphore: str, value: int, when: z3.ArithRef) -> z3.BoolRef:
    """Spec 7.4.2: a timeline wait for `value` is satisfied once a signal of a value >= it happened."""
    if value <= p.semaphores[semaphore].initial:
        return z3.BoolVal(True, t.ctx)
    return z3.Or(*[t.at(s.owner) < when for s in p.signals_of(semaphore) if s.value >= value], t.ctx)


def mk_waits(p: Plan, t: Times) -> list[Constraint]:
    """Spec 7.4 semaphore waits (batch and host), 7.3 fence waits, 5.3 queue/device idle waits."""
    out: list[Constraint] = []
    binary_signals = defaultdict(list)
    for s in p.signals:
        if p.semaphores[s.semaphore].type == "binary":
            binary_signals[s.semaphore].append(s)
    binary_taken = defaultdict(int)
    for b in p.batches:
        for w in b.batch.waits:
            if w.value is None:
                k = binary_taken[w.semaphore]
                binary_taken[w.semaphore] += 1
                signals = binary_signals[w.semaphore]
                paired = t.at(signals[k].owner) < t.begin[b.key] if k < len(signals) else z3.BoolVal(False, t.ctx)
                out.append((Wait(b.key, b.submit, w.semaphore), paired))
            else:
                reached = _reached(p, t, w.semaphore, w.value, t.begin[b.key])
                out.append((Wait(b.key, b.submit, w.semaphore, w.value), reached))
    for h in p.hosts:
        out += _host_wait(p, t, h)
    return out


def _host_wait(p: Plan, t: Times, h: HostNode) -> list[Constraint]:
    now = t.host[h.ref]
    op = h.op
    if isinstance(op, ir.WaitSemaphores):
        return [(Wait(h.ref, h.ref, w.semaphore, w.value), _reached(p, t, w.semaphore, w.value, now))
                for w in op.waits]
    if isinstance(op, ir.WaitFences):
        out = []
        for f in op.fences:
            own = [b for b in p.batches if b.fence == f and b.thread == h.thread and b.pc < h.pc]
            others = [b for b in p.batches if b.fence == f and b.thread != h.thread]
            # 7.3 vkResetFences: the fence is unsignaled after the thread's last reset of it; a batch it submitted
            # before that reset had completed (resetting a fence a pending batch holds is misuse).
            reset = max((x.pc for x in p.hosts if x.thread == h.thread and x.pc < h.pc
                         and isinstance(x.op, ir.ResetFences) and f in x.op.fences), default=-1)
            own = [b for b in own if b.pc > reset]
            if own:
                out.append((Wait(h.ref, h.ref, f), t.end[own[-1].key] < now))
            elif others:
                after = [t.host[format_ref(h.thread, reset)] < t.end[b.key] for b in others] if reset >= 0 else []
                out.append((Wait(h.ref, h.ref, f), z3.Or(*[z3.And(t.end[b.key] < now, *after[i:i + 1], t.ctx)
                                                            for i, b in enumerate(others)], t.ctx)))
            elif reset >= 0:
                out.append((Wait(h.ref, h.ref, f), z3.BoolVal(False, t.ctx)))
        return out
    if isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
        queues = {op.queue} if isinstance(op, ir.QueueWaitIdle) else \
            {q for q, d in p.queue_device.items() if d == op.device}
        out = []
        for b in p.batches:
            if b.queue in queues and b.thread == h.thread and b.pc < h.pc:
                out.append((None, t.end[b.key] < now))
            elif b.queue in queues and b.thread != h.thread:
                out.append((None, z3.Implies(t.host[b.submit] < now, t.end[b.key] < now)))
        return out
    return []


def _value_chains(p: Plan) -> dict[str, list[SignalNode]]:
    chains = defaultdict(list)
    for s in p.signals:
        if p.semaphores[s.semaphore].type == "timeline":
            chains[s.semaphore].append(s)
    return {k: sorted(v, key=lambda s: s.value) for k, v in chains.items()}


def make_solver(constraints: Iterable[Constraint], ctx: z3.Context) -> tuple[z3.Solver, dict[Label, list[z3.BoolRef]]]:
    """The one solver factory: background constraints asserted, labelled ones tracked for unsat cores (each by a
    z3 Bool named as its label prints)."""
    solver = z3.Solver(ctx=ctx)
    solver.set("core.minimize", True)
    groups: dict[Label, list[z3.BoolRef]] = defaultdict(list)
    for label, c in constraints:
        if label is None:
            solver.add(c)
        else:
            groups[label].append(c)
    for label, cs in groups.items():
        solver.assert_and_track(z3.And(*cs, ctx), z3.Bool(str(label), ctx))
    return solver, groups


# ---- queries ----------------------------------------------------------------------


class Semantics:
    """The queries one stream needs, on one plan and one set of times."""

    def __init__(self, stream: ir.Stream) -> None:
        self.plan = plan(stream)
        self.times = Times(self.plan)
        base = mk_program_order(self.plan, self.times) + mk_queue_order(self.plan, self.times) + \
            mk_waits(self.plan, self.times)
        self.base, groups = make_solver(base, self.times.ctx)
        self._labels = {str(label): label for label in groups}

    def blocking_core(self) -> tuple[Label, ...] | None:
        """None when a complete schedule exists; else the labels of a minimal unsatisfiable set of waits
        and orders (spec 7.4: a deadlock)."""
        if self.base.check() != z3.unsat:
            return None
        return tuple(sorted((self._labels[str(c)] for c in self.base.unsat_core()), key=str))

    def non_increasing(self, semaphores: frozenset[str]) -> list[tuple[SignalNode, SignalNode]]:
        """Spec 7.4.2 "must be greater than the current value": neighbouring signals in value order that
        some complete schedule performs in the other order (if any pair can be inverted, a neighbouring
        one can), each as (the one it performs first, the other)."""
        out = []
        for sem, chain in _value_chains(self.plan).items():
            if sem not in semaphores:
                continue
            for a, b in pairwise(chain):
                self.base.push()
                self.base.add(self.times.at(b.owner) < self.times.at(a.owner))
                if self.base.check() == z3.sat:
                    out.append((b, a))
                elif a.value == b.value:  # equal values: whichever runs second is not greater
                    self.base.pop()
                    self.base.push()
                    self.base.add(self.times.at(a.owner) < self.times.at(b.owner))
                    if self.base.check() == z3.sat:
                        out.append((a, b))
                self.base.pop()
        return out
