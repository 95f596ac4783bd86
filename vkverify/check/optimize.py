"""`vkverify optimize`: the fewest and narrowest global pipeline barriers that order what a stream's barriers order.

How it decides (docs/optimize.md):
1. The orderings: the checker runs on the stream without its global memory barriers (buffer barriers stay: they
   are left as they are); each pair of accesses it then reports that the stream itself does not is a conflicting
   pair the global barriers order. One check, not one per barrier.
2. The candidates of an ordering: the global barriers executed between its two accesses on their queue that
   order it alone (spec 7.1: the first access in the barrier's first synchronization and access scopes, the second
   in its second ones), with the barrier's masks as written; an optimized barrier is never wider.
   An ordering no single barrier gives (a chain), or one between queues or with the host, keeps every barrier
   that may be on its path as it is.
3. The choice: every ordering keeps one of its candidates. A minimum number of barriers is found with z3's
   optimizer within a time budget; past it, or on large streams, a greedy choice that says it is one.
4. The masks: each kept barrier is narrowed to the stages and accesses of the orderings assigned to it (and, when
   asked, made buffer barriers over their bytes, proved by a check).
5. The proof: the optimized stream is checked; its findings, by the original's references, must be the original's
   exactly (every pair ordered before is ordered after; no hazard hidden, none fixed). Where a finding differs,
   the barriers around it (then every barrier next to a semaphore or the host) are kept as written and the choice
   is made again; the last of ROUNDS rounds keeps every barrier as written, saying so.
6. Semaphore waits: a wait's stage mask wider than its batch's commands' stages is narrowed to them, proved by a
   check (all at once, else one at a time).
7. Fence and idle waits of the host that order nothing the stream needs are removed, found by group testing, each
   set removed proved by a check.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..model import ir
from ..model.accesses import command_accesses
from ..model.dump import host_op_to_dict
from ..model.errors import UsageError
from ..model.refs import Ref, format_ref, map_positions, parse_ref
from .readings import DEFAULT, Readings
from .rules import in_first_access_scope, in_synchronization_scope, second_access_scope_gap
from .schedule import check
from .scopes import access_scope, accesses, explicit_stages, first_execution_scope, second_execution_scope
from .walk import Consumer, Walk

__all__ = ["HostWaitRemoved", "Optimization", "Ordering", "Suggestion", "optimize"]

ROUNDS = 5  # the last keeps every barrier as written
Z3_BARRIERS = 400  # z3 is asked for the minimum up to this many barriers; the greedy choice beyond
Z3_BUDGET_S = 10.0


@dataclass(frozen=True)
class Ordering:
    """A conflicting pair of accesses that the stream's global barriers order (the checker reports it once they
    are gone): the finding's kind, buffer and references, and each access's stage and access types."""

    kind: str
    buffer: str
    first: str
    second: str
    first_stage: str
    first_write: str | None  # the first access's write (None: it only reads, a WAR: no memory dependency)
    second_stage: str
    second_accesses: tuple[str, ...]
    range: tuple[int, int] | None = None  # the bytes of `buffer` where they conflict


@dataclass(frozen=True)
class Suggestion:
    """What optimize does with one barrier command: `remove`, `narrow` (to `after`) or `keep` as written."""

    barrier: str  # its reference, cb[i]
    action: str
    label: str | None
    source: str | None  # the recording program's file:line
    before: dict[str, tuple[str, ...]]
    after: dict[str, tuple[str, ...]] | None  # None: removed
    orders: int  # orderings assigned to it (0 where removed)
    example: Ordering | None  # one of them
    why: str  # why kept as written, or why removable
    ranges: tuple[tuple[str, int, int], ...] = ()  # made buffer barriers over these (buffer, offset, size)

    def line(self) -> str:
        """`cb0[3] (file:line) 'label': narrow: src_stage a|b -> a (orders 2 pairs, e.g. raw ...)`."""
        head = f"{_named(self.barrier, self.source, self.label)}: {self.action}"
        if self.action == "narrow":
            head += ": " + "; ".join(f"{m} {'|'.join(self.before[m]) or 'none'} -> {'|'.join(self.after[m]) or 'none'}"
                                     for m in _MASKS if self.before[m] != self.after[m])
            if self.ranges:
                head += "; as buffer barriers on " + ", ".join(f"{b} [{o}, {o + n})" for b, o, n in self.ranges)
        elif self.action == "keep":
            head += f": {self.why}"
        if self.example is not None:
            e = self.example
            head += f" (orders {self.orders} pair{'s' if self.orders != 1 else ''}, e.g. {e.kind} {e.first} -> " \
                    f"{e.second} on {e.buffer})"
        return head

    def to_json(self) -> dict:
        out = {"barrier": self.barrier, "action": self.action, "label": self.label, "source": self.source,
               "before": {k: list(v) for k, v in self.before.items()},
               "after": None if self.after is None else {k: list(v) for k, v in self.after.items()},
               "orders": self.orders, "why": self.why}
        if self.ranges:
            out["buffers"] = [{"buffer": b, "offset": o, "size": n} for b, o, n in self.ranges]
        if self.example is not None:
            e = self.example
            out["example"] = {"kind": e.kind, "buffer": e.buffer, "first": e.first, "second": e.second}
        return out


def _named(ref: str, source: str | None, label: str | None) -> str:
    """`cb0[3] (file:line) 'label'`: an operation, the program line that recorded it and its label where known."""
    return " ".join(x for x in (ref, source and f"({source})", label and repr(label)) if x)


@dataclass(frozen=True)
class WaitNarrowed:
    """A semaphore wait whose stage mask optimize narrows to the stages of its batch's commands."""

    wait: str  # main[3].batches[0].wait[1]
    semaphore: str
    label: str | None  # the submit's
    source: str | None
    before: tuple[str, ...]
    after: tuple[str, ...]

    def line(self) -> str:
        return (f"{_named(self.wait, self.source, self.label)}: narrow: wait stage of {self.semaphore} "
                f"{'|'.join(self.before)} -> {'|'.join(self.after)}")

    def to_json(self) -> dict:
        return {"wait": self.wait, "semaphore": self.semaphore, "label": self.label, "source": self.source,
                "before": list(self.before), "after": list(self.after)}


@dataclass(frozen=True)
class HostWaitRemoved:
    """A fence or idle wait of the host that orders nothing the stream needs: without it, the same findings."""

    op: str  # main[7]
    kind: str  # wait_fences, queue_wait_idle or device_wait_idle
    on: tuple[str, ...]  # its fences, queue or device
    label: str | None
    source: str | None

    def line(self) -> str:
        return (f"{_named(self.op, self.source, self.label)}: remove: {self.kind} {', '.join(self.on)} orders "
                "nothing the stream needs")

    def to_json(self) -> dict:
        return {"op": self.op, "kind": self.kind, "on": list(self.on), "label": self.label, "source": self.source}


@dataclass(frozen=True)
class Optimization:
    original: ir.Stream
    stream: ir.Stream  # the optimized stream (the original where the proof failed)
    suggestions: tuple[Suggestion, ...]
    method: str  # how the kept barriers were chosen
    orderings: int
    rounds: int
    seconds: float
    original_ref: Callable[[str], str] = field(compare=False)  # a reference of `stream` in the original's positions
    waits: tuple[WaitNarrowed, ...] = ()  # semaphore waits narrowed
    host_waits: tuple[HostWaitRemoved, ...] = ()  # fence and idle waits removed

    @property
    def counts(self) -> dict[str, int]:
        out = {"remove": 0, "narrow": 0, "keep": 0}
        for s in self.suggestions:
            out[s.action] += 1
        return out

    def to_json(self) -> dict:
        """The `optimize --format json` document (docs/optimize.md)."""
        return {"method": self.method, "barriers": len(self.suggestions), **self.counts,
                "orderings": self.orderings, "rounds": self.rounds, "seconds": round(self.seconds, 3),
                "suggestions": [s.to_json() for s in self.suggestions], "waits": [w.to_json() for w in self.waits],
                "host_waits": [w.to_json() for w in self.host_waits]}

    def text(self, file: str, every: bool = False) -> str:
        """One line per barrier to remove or narrow (`every`: kept ones too), then the totals and the proof."""
        lines = [f"{file}: {s.line()}" for s in self.suggestions if s.action != "keep" or every]
        lines += [f"{file}: {w.line()}" for w in (*self.waits, *self.host_waits)]
        c = self.counts
        lines.append(f"{file}: {len(self.suggestions)} global barriers: {c['remove']} to remove, {c['narrow']} to "
                     f"narrow, {c['keep']} kept as written; {self.orderings} conflicting pairs they order; "
                     f"{self.method}")
        lines.append(f"{file}: proved: the optimized stream gives the original's findings, every pair ordered "
                     f"({self.rounds} round{'s' if self.rounds != 1 else ''}, {self.seconds:.2f} s)")
        return "\n".join(lines)


_MASKS = ("src_stage", "src_access", "dst_stage", "dst_access")


def optimize(stream: ir.Stream, readings: Readings = DEFAULT, budget_s: float = Z3_BUDGET_S,
             progress: Callable[[str], None] | None = None, buffer_barriers: bool = False) -> Optimization:
    """The optimized stream and a suggestion per global barrier, proved by checking (module docstring);
    `buffer_barriers`: a barrier kept may become buffer barriers over the bytes of its pairs (`_ranged`)."""
    if stream.params:
        raise UsageError("stream", "optimize reads a stream without `params`: run it on each instance")
    if any(isinstance(c, ir.ExecuteCommands) for cb in stream.command_buffers for c in cb.commands):
        raise UsageError("stream", "optimize does not read secondary command buffers (execute_commands) yet: its "
                                   "positions of barriers are those of primary command buffers")
    began = time.perf_counter()
    say = progress or (lambda _: None)
    executions = _Executions(stream)
    barriers = executions.barriers
    original = check(stream, readings, witnesses=0)
    original_keys = {_key(f, None) for f in original}
    say(f"checked the stream: {len(original)} findings, {len(barriers)} global barriers")
    dropped, back = _edit(stream, {b: None for b in barriers})
    orderings = _orderings(check(dropped, readings, witnesses=0), back, original_keys)
    say(f"checked it without them: {len(orderings)} orderings the barriers give")
    forced: set[Ref] = set()
    for o in orderings:
        forced |= executions.fixed(o)
    rounds = 0
    while True:
        rounds += 1
        if rounds == ROUNDS:  # every barrier as written: the original stream, which proves itself
            forced = set(barriers)
        kept, method = _choose(executions, orderings, forced, budget_s)
        assigned = _assign(executions, orderings, kept)
        edits = {b: _narrowed(stream, b, assigned.get(b, []), b in forced) if b in kept else None for b in barriers}
        optimized, back = _edit(stream, edits)
        found = {_key(f, back): f for f in check(optimized, readings, witnesses=0)}
        differ = set(found) ^ original_keys
        say(f"round {rounds}: {len(kept)} of {len(barriers)} barriers kept ({method}); {len(differ)} findings differ")
        if not differ:
            if rounds == ROUNDS:
                method = f"every barrier as written: no smaller set proved in {ROUNDS - 1} rounds"
            ranged = _ranged(stream, edits, assigned, forced, readings, original_keys, say) if buffer_barriers \
                else None
            if ranged is not None:
                edits, optimized, back = ranged
            optimized, waits = _narrowed_waits(optimized, readings, original_keys, back, say)
            optimized, host_waits, back = _removed_host_waits(optimized, readings, original_keys, back, say)
            return Optimization(stream, optimized, _suggestions(stream, edits, assigned, forced), method,
                                len(orderings), rounds, time.perf_counter() - began, back, waits, host_waits)
        if rounds == ROUNDS:
            raise AssertionError(f"the stream with its barriers as written gives other findings: {sorted(differ)}")
        grown = set(forced)  # each new finding's pair: every barrier that may order it
        for o in _orderings([found[k] for k in differ if k in found], back, original_keys):
            grown |= executions.chain(o)
        for _, _, first, second, *_ in differ - set(found):  # a finding gone: what may order its pair
            grown |= executions.around(first, second)
        # A path through other queues' barriers (after a semaphore wait, say): every barrier that may chain to a
        # semaphore or the host.
        forced = grown if grown != forced else forced | executions.linked


# ---- semaphore waits ------------------------------------------------------------------------------------------

WAIT_TRIES = 32  # waits narrowed one at a time (one check each) where narrowing all at once changes a finding


def _narrowed_waits(stream: ir.Stream, readings: Readings, original_keys: set[tuple], back: Callable[[str], str],
                    say: Callable[[str], None]) -> tuple[ir.Stream, tuple[WaitNarrowed, ...]]:
    """Each semaphore wait whose stage mask takes in more than its batch's commands' stages, narrowed to those
    (7.4.2: the wait's second synchronization scope is its stage mask; the batch's commands and the later ones on
    the queue at those stages): all at once where the findings stay the original's, else one at a time up to
    WAIT_TRIES, each proved by a check."""
    candidates = {}
    for thread in stream.threads:
        for i, op in enumerate(thread.ops):
            if not isinstance(op, ir.Submit):
                continue
            for b, batch in enumerate(op.batches):
                stages = frozenset(a[0] for cb in batch.command_buffers
                                   for c in stream.index.command_buffers[cb].commands for a in command_accesses(c))
                for w, wait in enumerate(batch.waits):
                    if stages and second_execution_scope(stages) < second_execution_scope(wait.stage):
                        candidates[(thread.id, i, b, w)] = stages

    def same(chosen) -> bool:
        edited = _with_wait_stages(stream, {k: candidates[k] for k in chosen})
        return _proved(edited, readings, back, original_keys)
    if not candidates:
        return stream, ()
    chosen = list(candidates)
    if not same(chosen):
        chosen = [k for k in list(candidates)[:WAIT_TRIES] if same([k])]
        chosen = chosen if same(chosen) else []  # each alone holds; together, as proved, or none
    say(f"semaphore waits: {len(chosen)} of {len(candidates)} narrowed to their batches' stages")
    narrowed = []
    for thread_id, i, b, w in chosen:
        op = stream.index.threads[thread_id].ops[i]
        wait = op.batches[b].waits[w]
        ref = f"{format_ref(thread_id, i)}.batches[{b}].wait[{w}]"
        narrowed.append(WaitNarrowed(ref, wait.semaphore, op.label, op.source, tuple(sorted(wait.stage)),
                                     tuple(sorted(candidates[thread_id, i, b, w]))))
    return _with_wait_stages(stream, {k: candidates[k] for k in chosen}), tuple(narrowed)


def _with_wait_stages(stream: ir.Stream, stages: dict[tuple[str, int, int, int], frozenset[str]]) -> ir.Stream:
    """`stream` with the waits keyed (thread, op, batch, wait) given these stage masks."""
    def submit(thread: str, i: int, op: ir.Submit) -> ir.Submit:
        return replace(op, batches=tuple(replace(batch, waits=tuple(
            replace(wait, stage=stages.get((thread, i, b, w), wait.stage)) for w, wait in enumerate(batch.waits)))
            for b, batch in enumerate(op.batches)))
    touched = {k[0] for k in stages}
    threads = tuple(replace(t, ops=tuple(submit(t.id, i, op) if isinstance(op, ir.Submit) else op
                                         for i, op in enumerate(t.ops))) if t.id in touched else t
                    for t in stream.threads)
    return replace(stream, threads=threads)


# ---- fence and idle waits --------------------------------------------------------------------------------------

HOST_WAITS = (ir.DeviceWaitIdle, ir.QueueWaitIdle, ir.WaitFences)  # the broadest first
HOST_WAIT_CHECKS = 16  # checks spent finding the removable ones; the rest are kept, the progress line says so


def _removed_host_waits(stream: ir.Stream, readings: Readings, original_keys: set[tuple], back: Callable[[str], str],
                        say: Callable[[str], None]) -> tuple[ir.Stream, tuple[HostWaitRemoved, ...], Callable]:
    """The fence and idle waits of the host without which the stream gives the original's findings (7.3, 7.8: a
    host wait orders the host's later operations after the device work it covers; where none of them needs it,
    nothing is lost), among those `_repeated_or_last_waits` picks, found by group testing: all of them at once,
    else each half, and so on, every test with those already removed, so that the set removed is proved together.
    With `back` composed: the stream's references to the original's."""
    # Where an idle wait and a fence wait order the same, the idle wait goes (sorted: stable within a kind).
    candidates = sorted(_repeated_or_last_waits(stream),
                        key=lambda k: HOST_WAITS.index(type(stream.index.threads[k[0]].ops[k[1]])))
    checks = 0

    def without(chosen: list[tuple[str, int]]) -> tuple[ir.Stream, Callable[[str], str]]:
        gone: dict[str, set[int]] = {}
        for thread_id, i in chosen:
            gone.setdefault(thread_id, set()).add(i)
        positions = {t.id: [i for i in range(len(t.ops)) if i not in gone[t.id]] for t in stream.threads
                     if t.id in gone}
        threads = tuple(replace(t, ops=tuple(t.ops[i] for i in positions[t.id])) if t.id in positions else t
                        for t in stream.threads)
        moved = _positions_back(positions)
        return replace(stream, threads=threads), lambda text: back(moved(text))

    def same(chosen: list[tuple[str, int]]) -> bool:
        nonlocal checks
        checks += 1
        edited, edited_back = without(chosen)
        return _proved(edited, readings, edited_back, original_keys)
    removed: list[tuple[str, int]] = []
    groups = [candidates] if candidates else []
    while groups and checks < HOST_WAIT_CHECKS:
        group = groups.pop()
        if same(removed + group):
            removed += group
        elif len(group) > 1:
            groups += [group[len(group) // 2:], group[:len(group) // 2]]  # the first half next
    if candidates:
        say(f"fence and idle waits: {len(removed)} of {len(candidates)} removed ({checks} check{'s' * (checks != 1)}"
            + (f"; {sum(map(len, groups))} not tried: the budget of {HOST_WAIT_CHECKS} checks)" if groups else ")"))
    if not removed:
        return stream, (), back
    found = []
    for thread_id, i in sorted(removed):
        op = stream.index.threads[thread_id].ops[i]
        on = op.fences if isinstance(op, ir.WaitFences) else (op.queue,) if isinstance(op, ir.QueueWaitIdle) \
            else (op.device,)
        found.append(HostWaitRemoved(back(format_ref(thread_id, i)), host_op_to_dict(op)["op"], tuple(on), op.label,
                                     op.source))
    optimized, optimized_back = without(removed)
    return optimized, tuple(found), optimized_back


def _repeated_or_last_waits(stream: ir.Stream) -> list[tuple[str, int]]:
    """The fence and idle waits worth a check: one that follows another wait of its thread with no submit of the
    thread between (a double wait), or that its thread's last op is (nothing after it to order). The others almost
    always order what comes after them: testing each would cost a check per wait."""
    out = []
    for t in stream.threads:
        waited = False  # a host wait since the thread's last submit
        for i, op in enumerate(t.ops):
            if isinstance(op, HOST_WAITS) and (waited or i == len(t.ops) - 1):
                out.append((t.id, i))
            waited = isinstance(op, HOST_WAITS + (ir.WaitSemaphores,)) or waited and not isinstance(op, ir.Submit)
    return out


def _positions_back(positions: dict[str, list[int]]) -> Callable[[str], str]:
    """A reference's text with each `owner[i]` of an owner in `positions` (its operations' original positions, in
    order, those kept) at its original position."""
    def back(text: str) -> str:
        return map_positions(text, lambda owner, i: format_ref(owner, positions[owner][i]) if owner in positions
                             else None)
    return back


# ---- where each command runs -----------------------------------------------------------------------------------


class _Order(Consumer):
    """Each queue's submits in the walk's order (the checker's own schedule)."""

    def __init__(self, stream: ir.Stream) -> None:
        self.threads = [t.id for t in stream.threads]
        self.submits: list[tuple[str, ir.Submit]] = []

    def submit(self, thread: int, pc: int, op: ir.Submit) -> None:
        self.submits.append((format_ref(self.threads[thread], pc), op))


class _Executions:
    """Every command execution numbered in its queue's submission order; the global barriers among them."""

    def __init__(self, stream: ir.Stream) -> None:
        order = _Order(stream)
        Walk(stream, order).run()
        self.stream, index = stream, stream.index
        self.queue: dict[tuple[str, str | None], str] = {}  # (cb, submit ref) -> queue
        self.start: dict[tuple[str, str | None], int] = {}  # (cb, submit ref) -> position of its first command
        self.submit_of: dict[tuple[str, str | None], str] = {}
        self.span: dict[str, tuple[int, int]] = {}  # submit ref -> [first, last] positions
        self.runs: dict[str, tuple[list[int], list[Ref]]] = {}  # queue -> barrier positions, the barriers
        self.runs_of: dict[Ref, list[tuple[str, int]]] = {}  # barrier -> (queue, position) of each execution
        self.at: dict[tuple[str, int], Ref] = {}
        self.masks: dict[Ref, tuple] = {}  # barrier -> its four masks
        self.of_masks: dict[tuple, ir.Barrier] = {}  # the four masks -> a barrier with them
        times: dict[str, int] = {}
        for _, op in order.submits:
            for batch in op.batches:
                for cb in batch.command_buffers:
                    times[cb] = times.get(cb, 0) + 1
        position = 0
        barriers: dict[Ref, None] = {}
        self.linked: set[Ref] = set()  # in a submit that waits for or signals a semaphore, or to the host stage
        for ref, op in order.submits:
            first = position
            linked = any(batch.waits or batch.signals for batch in op.batches)
            for batch in op.batches:
                for cb in batch.command_buffers:
                    key = (cb, ref if times[cb] > 1 else None)
                    self.queue[key], self.start[key], self.submit_of[key] = op.queue, position, ref
                    for i, cmd in enumerate(index.command_buffers[cb].commands):
                        if isinstance(cmd, ir.Barrier) and not cmd.buffers:
                            barrier = Ref(cb, i)
                            barriers[barrier] = None
                            if linked or "host" in second_execution_scope(cmd.dst_stage):
                                self.linked.add(barrier)
                            positions, refs = self.runs.setdefault(op.queue, ([], []))
                            positions.append(position + i)
                            refs.append(barrier)
                            self.runs_of.setdefault(barrier, []).append((op.queue, position + i))
                            self.at[op.queue, position + i] = barrier
                            self.masks[barrier] = masks = tuple(getattr(cmd, m) for m in _MASKS)
                            self.of_masks.setdefault(masks, cmd)
                    position += len(index.command_buffers[cb].commands)
            self.span[ref] = (first, position - 1)
        self.barriers = list(barriers)
        self.every = _Index(self, self.barriers)
        self.waits = {t.id: _host_waits(t, self.span, {ref: op for ref, op in order.submits}) for t in stream.threads}
        self._covering: dict[tuple, tuple[tuple, ...]] = {}

    def covering(self, o: Ordering) -> tuple[tuple, ...]:
        """The masks (of the stream's barriers) with which a barrier orders the pair alone."""
        key = (o.first_stage, o.first_write, o.second_stage, o.second_accesses)
        if key not in self._covering:
            self._covering[key] = tuple(m for m, b in self.of_masks.items() if _orders(b, o))
        return self._covering[key]

    def place(self, text: str) -> tuple[str, int, str] | None:
        """(queue, position, submit) of a command reference; None for a host op."""
        ref = parse_ref(text)
        if ref is None:
            return None
        key = (ref.owner, None if ref.submit is None else format_ref(ref.submit.owner, ref.submit.index))
        if key not in self.start:
            return None
        return self.queue[key], self.start[key] + ref.index, self.submit_of[key]

    def interval(self, o: Ordering) -> tuple[str, int, int] | None:
        """(queue, lo, hi): the barrier executions strictly between lo and hi may order the pair alone; None for a
        pair between queues."""
        a, x = self.place(o.first), self.place(o.second)
        if a is not None and x is not None:
            return (a[0], min(a[1], x[1]), max(a[1], x[1])) if a[0] == x[0] else None
        if a is not None and o.second_stage == "host":  # 7.1.3: a barrier to the host stage after the write,
            # in its submit or a later one on its queue that the host waited for before its access (7.4.1)
            return a[0], a[1], max(self.span[a[2]][1], self.waited(o.second, a[0])) + 1
        if x is not None and o.first_stage == "host":  # and one from the host stage before the access
            return x[0], self.span[x[2]][0] - 1, x[1]
        return None

    def waited(self, host_op: str, queue: str) -> int:
        """The last position on `queue` that the latest host wait of `host_op`'s thread before it waited for
        (-1: none)."""
        ref = parse_ref(host_op)
        waits = self.waits.get(ref.owner, ()) if ref is not None else ()
        at = bisect.bisect_left(waits, (ref.index,)) if ref is not None else 0
        return waits[at - 1][1].get(queue, -1) if at else -1

    def between(self, queue: str, lo: int, hi: int) -> list[tuple[int, Ref]]:
        """The barrier executions of `queue` strictly between positions lo and hi."""
        positions, refs = self.runs.get(queue, ((), ()))
        lo, hi = bisect.bisect_right(positions, lo), bisect.bisect_left(positions, hi)
        return list(zip(positions[lo:hi], refs[lo:hi]))

    def chain(self, o: Ordering) -> set[Ref]:
        """Every barrier that may be on a path ordering the pair (7.1: a chain of them where none does alone)."""
        interval = self.interval(o)
        return self.around(o.first, o.second) if interval is None else {b for _, b in self.between(*interval)}

    def fixed(self, o: Ordering) -> set[Ref]:
        """Barriers a pair between queues needs as written: those after the first access in its submit, and before
        the second in its own (either way round: a racing pair is named in the order the checker met it)."""
        return set() if self.interval(o) is not None else self.around(o.first, o.second)

    def around(self, first: str | None, second: str | None) -> set[Ref]:
        """Every barrier that may be on a path between `first` and `second` (references, or None), either way."""
        places = [p for p in (self.place(first) if first else None, self.place(second) if second else None) if p]
        if len(places) == 2 and places[0][0] == places[1][0]:
            (queue, lo, _), (_, hi, _) = sorted(places, key=lambda p: p[1])
            return {b for _, b in self.between(queue, lo, hi)}
        out: set[Ref] = set()
        for queue, position, submit in places:  # after it in its submit, and before it
            first_position, last_position = self.span[submit]
            out |= {b for _, b in self.between(queue, position, last_position + 1)}
            out |= {b for _, b in self.between(queue, first_position - 1, position)}
        return out


class _Index:
    """Barrier executions by queue and masks, each in submission order: the latest in an interval is a bisection."""

    def __init__(self, executions: _Executions, barriers) -> None:
        self.executions = executions
        self.positions: dict[tuple[str, tuple], list[int]] = {}
        for b in barriers:
            self.add(b)

    def add(self, b: Ref) -> None:
        for queue, position in self.executions.runs_of[b]:
            bisect.insort(self.positions.setdefault((queue, self.executions.masks[b]), []), position)

    def latest(self, interval: tuple[str, int, int], masks: tuple[tuple, ...]) -> Ref | None:
        """The barrier of the latest execution strictly inside `interval` with one of `masks`; None if none."""
        queue, lo, hi = interval
        best = None
        for m in masks:
            positions = self.positions.get((queue, m), ())
            i = bisect.bisect_left(positions, hi) - 1
            if i >= 0 and positions[i] > lo and (best is None or positions[i] > best):
                best = positions[i]
        return None if best is None else self.executions.at[queue, best]


# ---- the orderings ---------------------------------------------------------------------------------------------


def _orderings(findings, back, hazards: set[tuple]) -> list[Ordering]:
    """The pairs the dropped stream reports and the stream does not (`hazards`: the stream's own findings; one of
    them on fewer bytes is a pair the barriers order in part)."""
    out = []
    for f in findings:
        if f.first is None or f.second is None or f.first_access is None or f.second_access is None:
            continue
        key = _key(f, back)
        if key in hazards:
            continue
        first_stage, first_types = f.first_access.split("/")
        second_stage, second_types = f.second_access.split("/")
        writes = [t for t in first_types.split("+") if t.endswith("write")]
        out.append(Ordering(f.kind, f.buffer, key[2], key[3], first_stage, writes[0] if writes else None,
                            second_stage, tuple(second_types.split("+")), f.range))
    return out


def _orders(b: ir.Barrier, o: Ordering) -> bool:
    """Spec 7.1 and 7.1.2: `b` alone orders the pair: an execution dependency from the first access to the second,
    and, after a write, the write available in the first access scope and visible in the second."""
    if not (in_synchronization_scope(o.first_stage, first_execution_scope(b.src_stage))
            and in_synchronization_scope(o.second_stage, second_execution_scope(b.dst_stage))):
        return False
    if o.first_write is None:
        return True
    return (in_first_access_scope(o.first_stage, o.first_write, explicit_stages(b.src_stage), accesses(b.src_access))
            and not second_access_scope_gap(o.second_stage, o.second_accesses, access_scope(b.dst_stage, b.dst_access)))


def _choose(executions: _Executions, orderings: list[Ordering], forced: set[Ref],
            budget_s: float) -> tuple[set[Ref], str]:
    """The barriers to keep: `forced` and, for each ordering on one queue or with the host, one barrier that orders
    it alone (one that none does keeps every barrier between its accesses: a chain may)."""
    kept = set(forced)
    alone = []
    for o in orderings:
        interval = executions.interval(o)
        if interval is None:
            continue
        masks = executions.covering(o)
        if executions.every.latest(interval, masks) is None:
            kept |= executions.chain(o)
        else:
            alone.append((interval, masks))
    free = set(executions.barriers) - kept
    if len(free) <= Z3_BARRIERS:
        needs = {frozenset(b for p, b in executions.between(*interval) if executions.masks[b] in masks)
                 for interval, masks in alone}
        chosen = _minimum([n for n in needs if not n & kept], kept, free, budget_s)
        if chosen is not None:
            return chosen, "z3: a minimum number of barriers"
        why = f"greedy: z3 found no minimum in {budget_s:g} s"
    else:
        why = f"greedy: {len(free)} barriers to choose among, z3 is asked up to {Z3_BARRIERS}"
    return _greedy(executions, alone, kept), why


def _minimum(needs: list[frozenset[Ref]], kept: set[Ref], free: set[Ref], budget_s: float) -> set[Ref] | None:
    """z3.Optimize: the fewest barriers that leave every need one; None past the budget."""
    import z3

    # In one order whatever the hash seed: z3's choice among equal minima follows the order it is told things.
    keep = {b: z3.Bool(f"{b.owner}[{b.index}]") for b in sorted(free, key=_place)}
    opt = z3.Optimize()
    opt.set("timeout", int(budget_s * 1000))
    for need in sorted(sorted(map(_place, need)) for need in needs):
        opt.add(z3.Or([keep[Ref(*b)] for b in need]))
    opt.minimize(z3.Sum([z3.If(v, 1, 0) for v in keep.values()] + [z3.IntVal(0)]))
    if opt.check() != z3.sat:
        return None
    model = opt.model()
    return kept | {b for b, v in keep.items() if z3.is_true(model.eval(v, model_completion=True))}


def _host_waits(thread: ir.Thread, span: dict[str, tuple[int, int]],
                submits: dict[str, ir.Submit]) -> list[tuple[int, dict[str, int]]]:
    """(index, {queue: last position waited for}) of each host wait of `thread`, in order: what its fence,
    semaphore (the submit that signals the least value reaching the one waited for) or idle wait covers among
    the thread's own submits before it, each queue's submits in order."""
    done: dict[str, int] = {}  # queue -> last position of the thread's submits so far
    fence_of: dict[str, str] = {}
    # semaphore -> the values signaled, and their submits (a timeline's values increase: bisection finds the one)
    signals: dict[str, tuple[list[int], list[str]]] = {}
    out = []
    for i, op in enumerate(thread.ops):
        ref = format_ref(thread.id, i)
        if isinstance(op, ir.Submit) and ref in span:
            done[op.queue] = span[ref][1]
            if op.fence is not None:
                fence_of[op.fence] = ref
            for batch in op.batches:
                for signal in batch.signals:
                    values, refs = signals.setdefault(signal.semaphore, ([], []))
                    values.append(signal.value or 0)
                    refs.append(ref)
            continue
        if isinstance(op, ir.WaitFences):
            covered = [fence_of[f] for f in op.fences if f in fence_of]
        elif isinstance(op, ir.WaitSemaphores):
            covered = []
            for w in op.waits:
                values, refs = signals.get(w.semaphore, ((), ()))
                at = bisect.bisect_left(values, w.value)
                covered += refs[at:at + 1]
        elif isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
            out.append((i, {q: end for q, end in done.items()
                            if not isinstance(op, ir.QueueWaitIdle) or q == op.queue}))
            continue
        else:
            continue
        reached: dict[str, int] = {}
        for submit in covered:
            queue = submits[submit].queue
            reached[queue] = max(reached.get(queue, -1), span[submit][1])
        out.append((i, reached))
    return out


def _place(b: Ref) -> tuple[str, int]:
    return b.owner, b.index


def _greedy(executions: _Executions, alone: list[tuple[tuple[str, int, int], tuple]], kept: set[Ref]) -> set[Ref]:
    """Interval stabbing: the pairs by where they end; one that no kept barrier orders keeps its latest barrier
    that does, which orders the most of the pairs still to come (the fewest where each barrier runs once)."""
    kept = set(kept)
    index = _Index(executions, kept)
    for interval, masks in sorted(alone, key=lambda item: item[0][2]):
        if index.latest(interval, masks) is None:
            b = executions.every.latest(interval, masks)
            kept.add(b)
            index.add(b)
    return kept


def _assign(executions: _Executions, orderings: list[Ordering], kept: set[Ref]) -> dict[Ref, list[Ordering]]:
    """Each ordering on one queue or with the host to the latest kept barrier that orders it alone."""
    index = _Index(executions, kept)
    out: dict[Ref, list[Ordering]] = {}
    for o in orderings:
        interval = executions.interval(o)
        b = None if interval is None else index.latest(interval, executions.covering(o))
        if b is not None:
            out.setdefault(b, []).append(o)
    return out


# ---- the edit ----------------------------------------------------------------------------------------------------


def _command(stream: ir.Stream, b: Ref) -> ir.Barrier:
    return stream.index.command_buffers[b.owner].commands[b.index]


def _narrowed(stream: ir.Stream, b: Ref, orderings: list[Ordering], as_written: bool) -> ir.Barrier:
    """`b` with the stages and accesses of its orderings only (as written where something needs it so)."""
    barrier = _command(stream, b)
    if as_written or not orderings:
        return barrier
    return replace(barrier, **_pair_masks(orderings))


def _pair_masks(orderings: list[Ordering]) -> dict[str, frozenset[str]]:
    """The four masks that order `orderings`: the first accesses' stages and writes, the second ones' stages and,
    after a write, accesses."""
    writes = [o for o in orderings if o.first_write is not None]
    return {"src_stage": frozenset(o.first_stage for o in orderings),
            "src_access": frozenset(o.first_write for o in writes),
            "dst_stage": frozenset(o.second_stage for o in orderings),
            "dst_access": frozenset(a for o in writes for a in o.second_accesses)}


BUFFERS_AT_MOST = 4  # a kept barrier becomes buffer barriers where its pairs lie on at most this many buffers


def _ranged(stream: ir.Stream, edits: dict[Ref, ir.Barrier | None], assigned: dict[Ref, list[Ordering]],
            forced: set[Ref], readings: Readings, original_keys: set[tuple],
            say: Callable[[str], None]) -> tuple[dict[Ref, ir.Barrier | None], ir.Stream, Callable] | None:
    """`edits` with each narrowed barrier whose pairs lie on at most BUFFERS_AT_MOST buffers made buffer barriers,
    one per buffer over the bytes of its pairs there, with their masks (7.7.2: a buffer memory barrier's access
    scopes hold only its range; the execution dependency is the barrier's all the same), the stream they make and
    its references' way back, where that stream gives the original's findings; else None."""
    ranged = dict(edits)
    for b, new in edits.items():
        pairs = assigned.get(b, [])
        if new is None or b in forced or not pairs or any(o.range is None for o in pairs):
            continue
        by_buffer: dict[str, list[Ordering]] = {}
        for o in pairs:
            by_buffer.setdefault(o.buffer, []).append(o)
        if len(by_buffer) <= BUFFERS_AT_MOST:
            ranged[b] = replace(new, buffers=tuple(
                ir.BufferBarrier(buffer, lo, max(o.range[1] for o in mine) - lo, **_pair_masks(mine))
                for buffer, mine in sorted(by_buffer.items()) for lo in [min(o.range[0] for o in mine)]))
    made = sum(ranged[b] is not edits[b] for b in edits)
    if not made:
        return None
    optimized, back = _edit(stream, ranged)
    if _proved(optimized, readings, back, original_keys):
        say(f"buffer barriers: {made} barriers made buffer barriers over their pairs' bytes")
        return ranged, optimized, back
    say(f"buffer barriers: the stream with {made} of them gives other findings: they stay global")
    return None


def _edit(stream: ir.Stream, edits: dict[Ref, ir.Barrier | None]) -> tuple[ir.Stream, Callable[[str], str]]:
    """`stream` with each barrier in `edits` replaced (None: removed), and a function taking a reference of the new
    stream back to the original's positions."""
    by_cb: dict[str, dict[int, ir.Barrier | None]] = {}
    for b, new in edits.items():
        by_cb.setdefault(b.owner, {})[b.index] = new
    positions: dict[str, list[int]] = {}
    cbs = []
    for cb in stream.command_buffers:
        changes = by_cb.get(cb.id)
        if not changes:
            cbs.append(cb)
            continue
        kept = [(i, changes.get(i, c)) for i, c in enumerate(cb.commands)]
        kept = [(i, c) for i, c in kept if c is not None]
        positions[cb.id] = [i for i, _ in kept]
        cbs.append(replace(cb, commands=tuple(c for _, c in kept)))
    return replace(stream, command_buffers=tuple(cbs), expect=None), _positions_back(positions)


def _proved(stream: ir.Stream, readings: Readings, back: Callable[[str], str], original_keys: set[tuple]) -> bool:
    """Whether `stream` (an edit of the original, `back` taking its references there) gives the original's
    findings exactly: the proof every edit stands on."""
    return {_key(f, back) for f in check(stream, readings, witnesses=0)} == original_keys


def _key(f, back: Callable[[str], str] | None) -> tuple:
    """A finding by the original stream's references."""
    def ref(text):
        return text if text is None or back is None else back(text)
    return (f.kind, f.buffer, ref(f.first), ref(f.second), tuple(map(ref, f.ops)) if f.ops else None, f.range)


def _masks(b: ir.Barrier) -> dict[str, tuple[str, ...]]:
    return {m: tuple(sorted(getattr(b, m))) for m in _MASKS}


def _suggestions(stream: ir.Stream, edits: dict[Ref, ir.Barrier | None], assigned: dict[Ref, list[Ordering]],
                 forced: set[Ref]) -> tuple[Suggestion, ...]:
    out = []
    for b, new in edits.items():
        old = _command(stream, b)
        mine = assigned.get(b, [])
        if new is None:
            action, why = "remove", "every pair it orders is ordered by a barrier kept, or it orders none"
        elif new == old:
            action = "keep"
            why = ("a pair between queues or with the host, or one ordered only by a chain of barriers, may need it "
                   "as written" if b in forced else "its masks are already the narrowest that order its pairs")
        else:
            action, why = "narrow", "the stages and accesses of the pairs it orders"
        ranges = tuple((x.buffer, x.offset, x.size) for x in new.buffers) if new is not None else ()
        out.append(Suggestion(format_ref(b.owner, b.index), action, old.label, old.source, _masks(old),
                              None if new is None else _masks(new), len(mine), mine[0] if mine else None,
                              why + ", on their bytes" * bool(ranges), ranges))
    return tuple(out)
