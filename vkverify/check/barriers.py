"""Pipeline barriers on one queue: what they do to one earlier access.

An access's relation to later commands on its queue is a small state: the
stages its execution dependency chain reaches, whether it was made
available, and the (stage, access) pairs it was made visible to. Barriers
only grow that state, so `state_at` jumps from one state-changing barrier to
the next instead of walking every barrier in between (the per-queue index
of barrier kinds makes this independent of the distance).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import NamedTuple

from ..model import ir
from ..model.images import LAYOUT_TRANSITION, LAYOUT_WRITE
from .rules import chains, in_first_access_scope, transitions_here, transitions_in_order
from .scopes import (EARLIER_TRANSITIONS, LATER_TRANSITIONS, access_scope, accesses, explicit_stages,
                     first_execution_scope, second_execution_scope)

__all__ = [
    "ALIAS",
    "EMPTY",
    "EVENT_OPERATION",
    "FULL",
    "LAYOUT_TRANSITION",
    "LAYOUT_WRITE",
    "NONE",
    "OWN",
    "BarrierEntry",
    "BarrierLog",
    "State",
    "Steps",
    "apply_barrier",
    "barrier_steps",
    "compile_barrier",
    "coverage",
    "in_transition_order",
    "in_wait",
    "is_transition",
    "layout_transitions",
    "memory_barriers",
    "sees",
    "stage_text",
    "transition_stage",
]


@dataclass(frozen=True)
class BarrierEntry:
    """One memory barrier of a vkCmdPipelineBarrier2, in root-memory coordinates."""

    root: str | None  # None: a global memory barrier
    buffer: str | None  # the buffer a buffer memory barrier names
    lo: int
    hi: int
    src_exec: frozenset[str]
    src_stages: frozenset[str]
    src_access: frozenset[str]
    dst_exec: frozenset[str]
    dst_scope: frozenset[tuple[str, str]]


class State(NamedTuple):  # a tuple: hashed on every memo lookup, so kept cheap
    chain: frozenset[str]  # stages ordered after the access
    available: bool
    visible: frozenset[tuple]  # (stage, access), or (stage, access, buffer): visible only through that buffer
    # (host access, stage, buffer or None): the stages that the chain of a barrier which made the write visible to
    # that host access reaches; a release with one of them in its first scope carries the visibility to the host.
    host: frozenset[tuple[str, str, str | None]] = frozenset()
    # Stages ordered after the availability operation: a later barrier or release finds the write available
    # only through a chain from it (7.1), not through another chain from the access.
    released: frozenset[str] = frozenset()


EMPTY = State(frozenset(), False, frozenset())
# ALIAS: a buffer barrier over the bytes through another buffer than the access's, under the reading
# buffer_barrier_covers_aliases off; OWN: through the access's own buffer (check/readings.py).
FULL, NONE, PARTIAL, ALIAS, OWN = 1, 0, 2, 3, 4


def compile_barrier(b: ir.Barrier, index: ir.StreamIndex) -> tuple[BarrierEntry, ...]:
    """Spec 7.6 vkCmdPipelineBarrier2: a global barrier, or one entry per buffer barrier."""
    def entry(x, root, lo, hi, buffer=None):
        return BarrierEntry(root, buffer, lo, hi, first_execution_scope(x.src_stage), explicit_stages(x.src_stage),
                            accesses(x.src_access), second_execution_scope(x.dst_stage),
                            access_scope(x.dst_stage, x.dst_access))
    if not b.buffers and not b.images:
        return (entry(b, None, 0, 0),)
    out = []
    for bb in b.buffers:
        root, base = index.root(bb.buffer)
        out.append(entry(bb, root, base + bb.offset, base + bb.offset + bb.size, bb.buffer))
    # 7.7.3: an image barrier's subresource range, one entry per byte range of it (a mip level's layers).
    out += [entry(ib, ib.image, lo, hi, ib.image) for ib in b.images for lo, hi in ib.ranges]
    return tuple(out)


# Spec 7.7.4 "Image Layout Transitions": a transition "happens-after the availability operations" of its memory
# dependency's first scope and "happens-before the visibility operations" of its second, and it reads and writes the
# subresources; a barrier's or a vkCmdWaitEvents2's dependency alike. The checker runs it as an access between the
# dependency's two halves, at a stage no command has, with an access of its own. The stage is each image barrier's
# own (`transition_stage`): an access in one barrier's first scope reaches that barrier's transitions only. The
# scopes that hold every transition (all_commands, scopes.EARLIER_TRANSITIONS and LATER_TRANSITIONS) meet the two
# halves. Findings and fixes name it LAYOUT_TRANSITION (`stage_text`).


def transition_stage(b: ir.Barrier, k: int, first_scope: frozenset[str], wait: bool) -> str:
    """The stage of the layout transitions of the k-th image barrier of dependency b with first synchronization
    scope `first_scope`, named by their value: an equal one later in submission order holds in its first scope all
    that an earlier one did, so the two may share it. `wait`: a vkCmdWaitEvents2's (`in_wait`)."""
    return f"{LAYOUT_TRANSITION}@{'wait@' if wait else ''}{hash((b, k, first_scope)) & 0xFFFFFFFFFFFF:x}"


def is_transition(stage: str) -> bool:
    return stage.startswith(LAYOUT_TRANSITION)


def in_transition_order(e, x) -> bool:
    """rules.transitions_in_order of two accesses (check.access.Access or hb.AccessNode): layout transitions both,
    of one queue."""
    return transitions_in_order(is_transition(e.stage), is_transition(x.stage), e.agent == x.agent)


def in_wait(stage: str) -> bool:
    """Whether a transition's stage is a wait's: its first scope is what its event's set ordered (7.5), so a fix
    orders the earlier access before the wait itself."""
    return stage.startswith(f"{LAYOUT_TRANSITION}@wait@")


# The stage of an event's set or reset as explanations print it (hb.Model._event_operation: one per operation).
EVENT_OPERATION = "event_operation"


def stage_text(stage: str) -> str:
    """A stage as findings and explanations print it: a layout transition's without its barrier's name."""
    return LAYOUT_TRANSITION if is_transition(stage) else EVENT_OPERATION if stage.startswith(EVENT_OPERATION) else \
        stage


class Steps(NamedTuple):
    """A synchronization command as its queue runs it (7.7.4): its entries, a transitioning image barrier's being
    its first half, with each one's memory barrier as written; the layout transitions, as accesses (stage, reads,
    write, image, lo, hi, atomic, marker); then the entries of the second halves, with each one's image barrier."""

    entries: tuple[BarrierEntry, ...]
    written: tuple
    transitions: tuple = ()
    after: tuple[BarrierEntry, ...] = ()
    after_written: tuple = ()

    def __add__(self, other: Steps) -> Steps:  # a vkCmdWaitEvents2's dependencies, one after another
        return Steps(*(a + b for a, b in zip(self, other)))


def layout_transitions(b: ir.Barrier, entries: tuple[BarrierEntry, ...], wait: bool = False,
                       family: int | None = None) -> Steps:
    """Dependency b, compiled as `entries` (compile_barrier's order; a `wait`'s with its event's first scope), as
    Steps on a queue of `family`: each entry of a transitioning image barrier also orders before and makes visible
    to its transition, and holds in its first scope what a scope of every later transition does; the second halves
    order the transitions, and the chains through them, before b's second scopes. An acquire transitions nothing
    (rules.transitions_here)."""
    written = memory_barriers(b)
    if not any(transitions_here(ib, family) for ib in b.images):
        return Steps(entries, written)
    before = list(entries[:len(entries) - sum(len(ib.ranges) for ib in b.images)])
    transitions, after, after_written = [], [], []
    for k, ib in enumerate(b.images):
        own = entries[len(before):len(before) + len(ib.ranges)]
        if not transitions_here(ib, family):
            before += own
            continue
        stage = transition_stage(b, k, own[0].src_exec, wait)
        before += [replace(e, src_exec=e.src_exec | {LATER_TRANSITIONS},
                           dst_exec=e.dst_exec | {stage, EARLIER_TRANSITIONS},
                           dst_scope=e.dst_scope | {(stage, LAYOUT_WRITE)}) for e in own]
        for lo, hi in ib.ranges:
            transitions.append((stage, (), LAYOUT_WRITE, ib.image, lo, hi, False, None))
            after.append(BarrierEntry(ib.image, ib.image, lo, hi, frozenset({stage}), frozenset({stage}),
                                      frozenset({LAYOUT_WRITE}),
                                      second_execution_scope(ib.dst_stage) | {EARLIER_TRANSITIONS},
                                      access_scope(ib.dst_stage, ib.dst_access)))
            after_written.append(ib)
    return Steps(tuple(before), written, tuple(transitions), tuple(after), tuple(after_written))


def barrier_steps(b: ir.Barrier, index: ir.StreamIndex, family: int) -> Steps:
    """Spec 7.6 vkCmdPipelineBarrier2 as a queue of `family` runs it."""
    return layout_transitions(b, compile_barrier(b, index), family=family)


def memory_barriers(b: ir.Barrier) -> tuple[ir.Barrier | ir.BufferBarrier | ir.ImageBarrier, ...]:
    """The memory barriers of `b` as written, one per entry compile_barrier makes of it."""
    if not b.buffers and not b.images:
        return (b,)
    return b.buffers + tuple(ib for ib in b.images for _ in ib.ranges)


def coverage(entry: BarrierEntry, root: str, lo: int, hi: int, buffer: str | None = None) -> int:
    """How entry's range holds [lo, hi) of root; `buffer`: the access's, where a buffer barrier covers only
    accesses through its own buffer (spec 7.7.2 "access to memory through the specified buffer range")."""
    if entry.root is None:
        return FULL
    if entry.root != root or entry.hi <= lo or entry.lo >= hi:
        return NONE
    if entry.lo > lo or entry.hi < hi:
        return PARTIAL
    return FULL if buffer is None else OWN if entry.buffer == buffer else ALIAS


def sees(state: State, stage: str, access: str, buffer: str) -> bool:
    """Whether state made the write visible to (stage, access) through `buffer` (spec 7.7.2)."""
    return (stage, access) in state.visible or (stage, access, buffer) in state.visible


def apply_barrier(state: State, entries: tuple[BarrierEntry, ...], covers: tuple[int, ...],
                  stage: str, write: str | None) -> State:
    """Spec 7.1 execution and memory dependencies; entries of one command do not chain (7.6)."""
    chain, available, visible, host, released = state
    for e, cover in zip(entries, covers):
        chained = chains(state.chain, e.src_exec)
        if stage not in e.src_exec and not chained:
            continue
        chain = chain | e.dst_exec
        host = host | {(acc, s, b) for acc, t, b in state.host if t in e.src_exec for s in e.dst_exec}
        if chains(state.released, e.src_exec):
            # 7.1: a chain from the availability operation goes on through any barrier, whatever bytes it holds
            # (7.7.2: a buffer barrier limits only the access scopes to its range).
            released |= e.dst_exec
        if write is None or cover in (NONE, PARTIAL):
            continue
        # Availability from this entry's first access scope, or from an earlier barrier this one chains after:
        # 7.1, the availability operation happens-before the visibility operation (syncval's
        # WriteInSourceScopeOrChain). A barrier that merely has the write in its first scope, or chains
        # with the access only through another barrier, does not make an earlier barrier's availability visible.
        if chains(state.released, e.src_exec) or (
                cover != ALIAS and in_first_access_scope(stage, write, e.src_stages, e.src_access)):
            available = True
            through = None if cover == FULL else e.buffer  # OWN, ALIAS: visible through its buffer only
            visible = visible | (e.dst_scope if through is None else {(t, a, through) for t, a in e.dst_scope})
            host = host | {(acc, s, through) for t, acc in e.dst_scope if t == "host" for s in e.dst_exec}
            released = released | e.dst_exec
    return State(chain, available, visible, host, released)


_MANY_ENTRIES = 16  # a barrier with more buffer barriers than this finds those that hold an access by their bytes


def _execution_only(signature: frozenset) -> tuple[BarrierEntry, ...]:
    """Entries with the execution scopes of `signature` and no access scope (no bytes: coverage is NONE)."""
    return tuple(BarrierEntry("", None, 0, 0, src, frozenset(), frozenset(), dst, frozenset())
                 for src, dst in signature)


class _RangeIndex:
    """The kinds whose buffer barriers touch a root memory's bytes, found without looking at the others: each
    range [lo, hi) sits at the level L where hi - lo <= 2**L, in its (at most two) buckets of 2**L bytes."""

    def __init__(self) -> None:
        self.levels: dict[int, dict[int, list[int]]] = {}

    def add(self, lo: int, hi: int, kind: int) -> None:
        level = max(0, (hi - lo - 1).bit_length())
        buckets = self.levels.setdefault(level, {})
        for b in range(lo >> level, ((hi - 1) >> level) + 1):
            buckets.setdefault(b, []).append(kind)

    def near(self, lo: int, hi: int) -> set[int]:
        """Every kind with a range overlapping [lo, hi), and some that only come near it."""
        found: set[int] = set()
        for level, buckets in self.levels.items():
            first, last = lo >> level, (hi - 1) >> level
            if last - first < len(buckets):
                for b in range(first, last + 1):
                    found.update(buckets.get(b, ()))
            else:  # a wide query over a sparse level
                for b, kinds in buckets.items():
                    if first <= b <= last:
                        found.update(kinds)
        return found


class BarrierLog:
    """The barriers recorded on one queue, indexed for `state_at`: by kind (equal entries), by the execution
    scopes of their entries (all a barrier does to an access whose bytes none of its entries holds, and to
    any access's execution dependency chain), and by the bytes of their buffer barriers."""

    def __init__(self) -> None:
        self.kind_ids: dict[tuple[BarrierEntry, ...], int] = {}
        self.kinds: list[tuple[BarrierEntry, ...]] = []
        # Numbers as arrays: a fork (check/incremental.py) copies them as memory, not as one int object each.
        self.positions: list[array] = []  # per kind, increasing
        self.all_positions = array("q")  # every barrier, increasing, with its kind
        self.all_kinds = array("q")
        self.global_kind: list[bool] = []  # every entry global: the bytes do not matter
        self.has_global: list[bool] = []  # some entry global: it holds every access's bytes
        self.signature: list[frozenset] = []  # per kind, its entries' (src_exec, dst_exec)
        # Per signature, the barriers of every kind (`exec_*`: for chains) and of the kinds without a global entry
        # (`buffer_*`: for accesses outside their ranges): positions, increasing, and the kind at each.
        self.exec_positions: dict[frozenset, tuple[array, array]] = {}
        self.buffer_positions: dict[frozenset, tuple[array, array]] = {}
        self.global_kinds: list[int] = []
        self.ranges: dict[str, _RangeIndex] = {}
        self._kind_of_command: dict[int, int] = {}
        self._transitions: dict = {}
        self._chains: dict = {}
        self._entry_index: dict = {}
        self._moving: dict = {}
        self._appends: dict[int, tuple] = {}  # per kind, the (positions, kinds) arrays of its signature's tables
        # orders_alone's answers by its memo key: Checker._run_quick reads a global barrier's without the call
        self.alone: dict = {}

    def fork(self) -> BarrierLog:
        """An independent copy (check/incremental.py's speculative checks)."""
        new = object.__new__(BarrierLog)  # as copy.copy makes it, without the pickling protocol's detour
        new.__dict__.update(self.__dict__)
        for name in ("kind_ids", "_transitions", "_chains", "_entry_index", "alone"):
            setattr(new, name, dict(getattr(self, name)))
        new._kind_of_command = {}  # one entry per barrier so far, a memo: the fork hashes the few entries it adds
        for name in ("kinds", "all_positions", "all_kinds", "global_kind", "has_global", "signature", "global_kinds"):
            setattr(new, name, getattr(self, name)[:])
        new.positions = [p[:] for p in self.positions]
        for name in ("exec_positions", "buffer_positions"):
            setattr(new, name, {k: (p[:], q[:]) for k, (p, q) in getattr(self, name).items()})
        new._moving, new._appends = {}, {}  # their entries hold the position arrays themselves, which the fork replaces
        new.ranges = {}
        for root, index in self.ranges.items():
            new.ranges[root] = fork = _RangeIndex()
            fork.levels = {level: {b: list(kinds) for b, kinds in buckets.items()}
                           for level, buckets in index.levels.items()}
        return new

    def add(self, pos: int, entries: tuple[BarrierEntry, ...], command: int) -> None:
        """Record a barrier; `command` (the id of its command, alive with the stream) saves hashing entries."""
        kind = self._kind_of_command.get(command)
        if kind is None:
            kind = self.kind_ids.get(entries)
            if kind is None:
                kind = self._new_kind(entries)
            self._kind_of_command[command] = kind
        self.positions[kind].append(pos)
        self.all_positions.append(pos)
        self.all_kinds.append(kind)
        appends = self._appends.get(kind)
        if appends is None:
            signature = self.signature[kind]
            appends = self._appends[kind] = tuple(
                table.setdefault(signature, (array("q"), array("q")))
                for table in (self.exec_positions,) + (() if self.has_global[kind] else (self.buffer_positions,)))
        for positions, kinds in appends:
            positions.append(pos)
            kinds.append(kind)

    def _new_kind(self, entries: tuple[BarrierEntry, ...]) -> int:
        kind = self.kind_ids[entries] = len(self.kinds)
        self.kinds.append(entries)
        self.positions.append(array("q"))
        self.global_kind.append(all(e.root is None for e in entries))
        self.has_global.append(any(e.root is None for e in entries))
        self.signature.append(frozenset((e.src_exec, e.dst_exec) for e in entries))
        if self.has_global[kind]:
            self.global_kinds.append(kind)
        for e in entries:
            if e.root is not None and e.hi > e.lo:
                self.ranges.setdefault(e.root, _RangeIndex()).add(e.lo, e.hi, kind)
        return kind

    def orders_alone(self, i: int, stage: str, write: str | None, root: str, lo: int, hi: int,
                     later_stage: str, need: tuple[str, ...] | None, buffer: str | None = None,
                     later_buffer: str | None = None) -> bool:
        """Whether the i-th barrier alone orders an access (stage, write) of [lo, hi) before a later access
        at `later_stage` that must see it (`need`); False where it splits the range. `buffer`, `later_buffer`:
        the two accesses' buffers, where a buffer barrier covers only accesses through its own."""
        kind = self.all_kinds[i]
        # A global barrier's answer does not depend on the bytes: one memo entry serves every range.
        memo = (kind, stage, write, later_stage, need) if self.global_kind[kind] else \
            (kind, stage, write, later_stage, need, root, lo, hi, buffer, later_buffer)
        found = self.alone.get(memo)
        if found is None:
            after = self._step(EMPTY, kind, (stage, write, root, lo, hi, buffer))
            found = not isinstance(after, list) and later_stage in after.chain and \
                all(sees(after, later_stage, acc, later_buffer) for acc in need or ())
            self.alone[memo] = found
        return found

    def _step(self, state: State, kind: int, key: tuple) -> State | list[int]:
        """The state after one barrier of `kind`, or the cut points where its ranges split the query (only
        where the access writes: a chain does not depend on the bytes)."""
        memo = (state, kind, key)
        found = self._transitions.get(memo)
        if found is None:
            stage, write, root, lo, hi, buffer = key
            entries = self._entries_near(kind, root, lo, hi)
            covers = tuple(coverage(e, root, lo, hi, buffer) for e in entries)
            if write is not None and PARTIAL in covers:
                found = sorted({x for e, c in zip(entries, covers) if c == PARTIAL
                                for x in (e.lo, e.hi) if lo < x < hi})
            else:
                found = apply_barrier(state, entries, covers, stage, write)
            self._transitions[memo] = found
        return found

    def _entries_near(self, kind: int, root: str, lo: int, hi: int) -> tuple[BarrierEntry, ...]:
        """The kind's entries, or for a barrier of many buffer barriers: those that may hold [lo, hi) of root,
        and one execution-only entry per execution scope of the others (their whole effect on the access)."""
        entries = self.kinds[kind]
        if len(entries) <= _MANY_ENTRIES:
            return entries
        index = self._entry_index.get(kind)
        if index is None:
            index = self._entry_index[kind] = ({}, tuple(e for e in entries if e.root is None),
                                               _execution_only(self.signature[kind]))
            for i, e in enumerate(entries):
                if e.root is not None and e.hi > e.lo:
                    index[0].setdefault(e.root, _RangeIndex()).add(e.lo, e.hi, i)
        by_root, global_entries, execution = index
        near = by_root[root].near(lo, hi) if root in by_root else ()
        return execution + global_entries + tuple(entries[i] for i in sorted(near))

    def _chain_step(self, state: State, signature: frozenset, stage: str) -> State:
        """The state after a barrier none of whose entries holds the access's bytes: its execution scopes alone
        (spec 7.7.2: a buffer barrier limits only the access scopes to its range)."""
        memo = (state, signature, stage)
        found = self._chains.get(memo)
        if found is None:
            entries = _execution_only(signature)
            found = self._chains[memo] = apply_barrier(state, entries, (NONE,) * len(entries), stage, None)
        return found

    def state_at(self, stage: str, write: str | None, root: str, lo: int, hi: int,
                 start: int, end: int, state: State = EMPTY, buffer: str | None = None) -> list[tuple[int, int, State]]:
        """The state of an access (or of `state` at position `start`) after the barriers up to `end`,
        per sub-range; `buffer`: the access's, where a buffer barrier covers only accesses through its own."""
        key = (stage, write, root, lo, hi, buffer)
        pos = start
        while True:
            cuts, moving = self._moving_kinds(state, key)
            if cuts:  # a buffer barrier splits the range
                cuts = (lo,) + cuts + (hi,)
                return [piece for a, b in pairwise(cuts)
                        for piece in self.state_at(stage, write, root, a, b, pos, end, state, buffer)]
            nearest, nearest_kind = end + 1, -1
            for positions, kinds in moving:  # kinds: the kind of every position, or of each
                i = bisect_right(positions, pos)
                if i < len(positions) and positions[i] < nearest:
                    nearest, nearest_kind = positions[i], kinds if isinstance(kinds, int) else kinds[i]
            if nearest_kind < 0:
                return [(lo, hi, state)]
            state, pos = self._step(state, nearest_kind, key), nearest

    def _moving_kinds(self, state: State, key: tuple) -> tuple[tuple[int, ...], list]:
        """(cut points where a buffer barrier splits the range, else ()), and the barriers that would change
        `state`: (positions, their kind, or the kind at each). Those none of whose entries holds the bytes change it as
        their execution scopes do, so they are judged once per signature; the others one by one."""
        memo = (state, key, len(self.kinds))
        found = self._moving.get(memo)
        if found is not None:
            return found
        stage, write, root, lo, hi, _ = key
        moving, cuts, seen = [], set(), set()
        if write is None:  # the chain alone: the bytes do not matter
            table, near = self.exec_positions, ()
        else:
            table = self.buffer_positions
            index = self.ranges.get(root)
            near = self.global_kinds + sorted(index.near(lo, hi)) if index is not None else self.global_kinds
        for kind in near:
            after = self._step(state, kind, key)
            if isinstance(after, list):
                cuts.update(after)
            elif after != state and kind not in seen:
                seen.add(kind)
                moving.append((self.positions[kind], kind))
        if not cuts:
            for signature, lists in table.items():
                if self._chain_step(state, signature, stage) != state:
                    moving.append(lists)
        found = self._moving[memo] = (tuple(sorted(cuts)), moving)
        return found
