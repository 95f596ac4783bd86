"""The reference execution and the adversarial schedules (schedules the happens-before relation
allows that turn a hazard into a wrong number)."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from heapq import heappop, heappush
from itertools import islice

import numpy as np

from ..check import Finding, check
from ..check.barriers import LAYOUT_WRITE
from ..model import ir
from ..model.errors import UsageError, integer_argument
from ..model.loader import validate
from .adversary import DATA_KINDS, Hooks, capture, perturb
from .execute import execute, step_buffers
from .machine import Machine, digest
from .order import Step, random_order, reference_order
from .report import ScheduleResult, SimReport, SimResult, FindingVerdict

__all__ = ["MAX_SCHEDULES", "reference", "simulate"]

MAX_SCHEDULES = 100_000  # a run's bound: each schedule executes the whole stream
NAMED = 8  # changed digests a verdict names: each finding of a dispatch with many bindings may reach them all

# Why a finding that names no two racing accesses has no value to change.
_NO_DATA = ("names synchronization objects, not two racing accesses: the operations it blocks run "
            "neither in the reference nor in any schedule, and the waits it misuses are run as the checker "
            "runs them")
# Why a finding with a layout transition (a barrier's) has no value to change.
_TRANSITION = ("one of its operations is a layout transition, which moves no bytes of the model's linear layout "
               "(what a device does to an image's memory is opaque), so no schedule can show it in a value")


def _transition(f: Finding) -> bool:
    return any(a is not None and a.endswith("/" + LAYOUT_WRITE) for a in (f.first_access, f.second_access))


def reference(stream: ir.Stream) -> SimResult:
    """The stream's results in the checker's legal serial order, every memory starting as zeros."""
    m = Machine(stream)
    _run(m, reference_order(stream), Hooks())
    return _result(m)


def simulate(stream: ir.Stream, schedules: int = 200, seed: int = 0,
             findings: Sequence[Finding] | None = None) -> SimReport:
    """The reference, then `schedules` adversarial executions (seeded by `seed`), and a verdict per finding;
    a stream the loader did not make is validated first (InvalidStream)."""
    stream = validate(stream)
    integer_argument("schedules", schedules, 1, MAX_SCHEDULES)
    integer_argument("seed", seed, 0)
    if findings is not None and (isinstance(findings, (str, bytes)) or not isinstance(findings, Sequence)
                                 or not all(isinstance(f, Finding) for f in findings)):
        raise UsageError("findings", f"expected None or a list of vkverify.check.Finding, got {findings!r}"[:300])
    findings = list(check(stream) if findings is None else findings)
    steps = reference_order(stream)
    position = {s.ref: i for i, s in enumerate(steps)}
    ops = {s.ref: s.op for s in steps}
    # A data finding is perturbed only where its operations ran (a deadlock may block them).
    data = [f for f in findings if f.kind in DATA_KINDS and f.second in position
            and (f.first is None or f.first in position)]
    hooks, captured = Hooks(), {}
    for f in data:
        if f.kind == "war":
            capture(hooks, f, captured)
    m = Machine(stream)
    _run(m, steps, hooks)
    ref = _result(m)
    # Findings keep their reference order unless perturbed on purpose.
    firsts: dict[str, set[str]] = defaultdict(set)
    for f in data:
        if f.first is not None:
            firsts[f.second].add(f.first)
    after = {second: frozenset(refs) for second, refs in firsts.items()}
    garbage_always = [k for k, f in enumerate(data) if f.kind == "uninitialized_read"]
    movable = [k for k, f in enumerate(data) if f.kind != "uninitialized_read"]
    results, effects, perturbed_by = [], [[] for _ in data], []
    for i in range(schedules):
        rng = np.random.default_rng([seed, i])
        chosen = _chosen(i, schedules, movable, rng)
        hooks = Hooks()
        for k in chosen:
            perturb(hooks, data[k], captured, ops, rng, effects[k].append)
        m = Machine(stream, garbage=rng, cached=True)
        _run(m, random_order(stream, rng, after, steps), hooks)
        out = _result(m)
        perturbed_by.append({*chosen, *garbage_always})
        results.append(ScheduleResult(
            i, tuple(data[k] for k in sorted(perturbed_by[-1])),
            tuple(sorted(b for b in ref.digests.keys() | out.digests.keys()
                         if ref.digests.get(b) != out.digests.get(b))),
            tuple(r for r in ref.reads if ref.reads[r] != out.reads.get(r))))
    # Each step is looked up, never searched for: the work stays linear in the findings and the steps.
    slot: dict[Finding, int] = {}
    for k, f in enumerate(data):
        slot.setdefault(f, k)
    reach, destroys = _Reach(steps, position, stream), {r for r, op in ops.items() if isinstance(op, ir.Destroy)}
    orders = [{d: i for i, d in enumerate(s.changed_buffers + s.changed_reads)} for s in results]
    verdicts = []
    for f in findings:
        if f not in slot:
            verdicts.append(FindingVerdict(f, "value_coinciding", _NO_DATA if f.kind not in DATA_KINDS else
                                           _TRANSITION if _transition(f) else
                                           "its operations never run: the stream blocks before them"))
            continue
        k = slot[f]
        verdicts.append(_verdict(f, [(s, order) for s, order, by in zip(results, orders, perturbed_by) if k in by],
                                 reach, effects[k], destroys))
    return SimReport(stream.name, ref, tuple(results), tuple(verdicts))


def _chosen(i: int, n: int, movable: list[int], rng: np.random.Generator) -> set[int]:
    """The findings schedule i perturbs: finding i alone while there are findings left (several
    when there are fewer schedules than findings), then random subsets."""
    if i < len(movable):
        return {movable[j] for j in range(i, len(movable), n)}
    return {k for k in movable if rng.random() < 0.5}


def _run(m: Machine, steps: Sequence[Step], hooks: Hooks) -> None:
    for step in steps:
        for hook in hooks.before.get(step.ref, ()):
            hook(m)
        m.overlays = hooks.overlays
        execute(m, step)
        for hook in hooks.after.get(step.ref, ()):
            hook(m)


def _result(m: Machine) -> SimResult:
    buffers = m.final()
    return SimResult(buffers, {b: digest(x) for b, x in buffers.items()}, dict(m.reads))


class _Reach:
    """The digests (buffer ids, host_read refs) a finding's operations read or produce, and every result computed
    from what they produce, in the reference order. Each root buffer keeps the steps that read it, so following
    a finding's writes visits the steps they reach, not every later step; a pair of operations is followed once."""

    def __init__(self, steps: Sequence[Step], position: dict[str, int], stream: ir.Stream) -> None:
        root = lambda b: stream.index.root(b)[0]  # noqa: E731
        self.steps, self.position = steps, position
        self.io: list[tuple[set[str], set[str]]] = []  # per step: the roots it reads, those it writes
        self.readers: dict[str, list[int]] = defaultdict(list)  # root -> the positions of its readers, ascending
        for i, step in enumerate(steps):
            reads, writes = step_buffers(step.op)
            self.io.append(({root(b) for b in reads}, {root(b) for b in writes}))
            for b in self.io[-1][0]:
                self.readers[b].append(i)
        self.known: dict[tuple[str | None, str], set[str]] = {}

    def touched(self, f: Finding) -> set[str]:
        key = (f.first, f.second)
        if key not in self.known:
            self.known[key] = self._follow([self.position[r] for r in key if r is not None])
        return self.known[key]

    def _follow(self, mine: list[int]) -> set[str]:
        touched, tainted = set(), set()
        for p in mine:
            reads, writes = self.io[p]
            touched |= reads | writes
            tainted |= writes
            if _host_read(self.steps[p].op):
                touched.add(self.steps[p].ref)
        # The next reader of each tainted root after the earliest of the finding's operations, in step order.
        heap: list[tuple[int, str]] = []

        def next_reader(b: str, after: int) -> None:
            readers = self.readers.get(b, ())
            at = bisect_right(readers, after)
            if at < len(readers):
                heappush(heap, (readers[at], b))
        for b in tainted:
            next_reader(b, min(mine))
        done = set()
        while heap:
            i, b = heappop(heap)
            next_reader(b, i)
            if i in done:
                continue
            done.add(i)
            for w in self.io[i][1] - tainted:
                tainted.add(w)
                next_reader(w, i)
            if isinstance(self.steps[i].op, ir.HostAccess):
                touched.add(self.steps[i].ref)
        return touched | tainted


def _reached(changed: tuple[str, ...], order: dict[str, int], touched: set[str]) -> tuple[str, ...]:
    """The first NAMED + 1 of the `changed` digests that are in `touched`, in their order; walks the smaller."""
    if len(touched) < len(order):
        return tuple(changed[i] for i in sorted(order[d] for d in touched if d in order)[:NAMED + 1])
    return tuple(islice((d for d in changed if d in touched), NAMED + 1))


def _host_read(op) -> bool:
    return isinstance(op, ir.HostAccess) and op.op == "host_read"


def _verdict(f: Finding, perturbing: list[ScheduleResult], reach: _Reach, effects: list[bool],
             destroys: set[str]) -> FindingVerdict:
    """`perturbing`: the schedules that perturbed `f`, each with its changed digests' positions."""
    for s, order in perturbing:
        hit = _reached(s.changed_buffers + s.changed_reads, order, reach.touched(f)) if order else ()
        if hit:
            more = " and more" if len(hit) > NAMED else ""
            return FindingVerdict(f, "confirmed", f"schedule {s.index} changes {', '.join(hit[:NAMED])}{more}", s.index,
                           hit[:NAMED])
    span = f"{f.buffer}[{f.range[0]}, {f.range[1]})" if f.range else f.buffer
    if f.kind != "uninitialized_read" and not any(effects):
        return FindingVerdict(f, "value_coinciding", {
            "raw": f"{f.first} stores the bytes {span} already held: the stale read sees the same values",
            "war": f"{f.second} stores the bytes {span} already held: reading them early changes nothing",
            "waw": f"{f.first} and {f.second} store the same bytes in {span}: either order leaves them",
            "use_after_destroy": f"{span} already held the poison pattern",
            "ownership_missing": f"the undefined bytes drawn for {span} equal the defined ones",
        }[f.kind])
    if f.kind == "use_after_destroy":
        use = f.second if f.first in destroys else f.first
        return FindingVerdict(f, "value_coinciding", f"{use} only writes the destroyed {f.buffer}: no result reads "
                                              f"the poisoned bytes")
    reader = f.first if f.kind == "war" else f.second
    return FindingVerdict(f, "value_coinciding",
                   f"the perturbed bytes of {span} reach no result: no value {reader} or anything after it "
                   f"produces depends on them")
