"""Pipeline barriers on one queue: what they do to one earlier access.

An access's relation to later commands on its queue is a small state: the
stages its execution dependency chain reaches, whether it was made
available, and the (stage, access) pairs it was made visible to. Barriers
only grow that state, so `state_at` jumps from one state-changing barrier to
the next instead of walking every barrier in between (the per-queue index
of barrier kinds makes this independent of the distance).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

from ..model import ir
from .rules import chains, in_first_access_scope
from .scopes import access_scope, accesses, explicit_stages, first_execution_scope, second_execution_scope


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
    if not b.buffers:
        return (entry(b, None, 0, 0),)
    out = []
    for bb in b.buffers:
        root, base = index.root(bb.buffer)
        out.append(entry(bb, root, base + bb.offset, base + bb.offset + bb.size, bb.buffer))
    return tuple(out)


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


class BarrierLog:
    """The barriers recorded on one queue, indexed by kind for `state_at`."""

    def __init__(self) -> None:
        self.kind_ids: dict[tuple[BarrierEntry, ...], int] = {}
        self.kinds: list[tuple[BarrierEntry, ...]] = []
        self.positions: list[list[int]] = []  # per kind, increasing
        self.all_positions: list[int] = []  # every barrier, increasing, with its kind
        self.all_kinds: list[int] = []
        self._kind_of_command: dict[int, int] = {}
        self._transitions: dict = {}
        self._moving: dict = {}
        self._alone: dict = {}
        self.global_kind: list[bool] = []

    def add(self, pos: int, entries: tuple[BarrierEntry, ...], command: int) -> None:
        """Record a barrier; `command` (the id of its command, alive with the stream) saves hashing entries."""
        kind = self._kind_of_command.get(command)
        if kind is None:
            kind = self.kind_ids.get(entries)
            if kind is None:
                kind = self.kind_ids[entries] = len(self.kinds)
                self.kinds.append(entries)
                self.positions.append([])
                self.global_kind.append(all(e.root is None for e in entries))
            self._kind_of_command[command] = kind
        self.positions[kind].append(pos)
        self.all_positions.append(pos)
        self.all_kinds.append(kind)

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
        found = self._alone.get(memo)
        if found is None:
            after = self._step(EMPTY, kind, (stage, write, root, lo, hi, buffer))
            found = not isinstance(after, list) and later_stage in after.chain and \
                all(sees(after, later_stage, acc, later_buffer) for acc in need or ())
            self._alone[memo] = found
        return found

    def _step(self, state: State, kind: int, key: tuple) -> State | list[int]:
        """The state after one barrier of `kind`, or the cut points where its ranges split the query."""
        memo = (state, kind, key)
        found = self._transitions.get(memo)
        if found is None:
            stage, write, root, lo, hi, buffer = key
            entries = self.kinds[kind]
            covers = tuple(coverage(e, root, lo, hi, buffer) for e in entries)
            if PARTIAL in covers:
                found = sorted({x for e, c in zip(entries, covers) if c == PARTIAL
                                for x in (e.lo, e.hi) if lo < x < hi})
            else:
                found = apply_barrier(state, entries, covers, stage, write)
            self._transitions[memo] = found
        return found

    def state_at(self, stage: str, write: str | None, root: str, lo: int, hi: int,
                 start: int, end: int, state: State = EMPTY, buffer: str | None = None) -> list[tuple[int, int, State]]:
        """The state of an access (or of `state` at position `start`) after the barriers up to `end`,
        per sub-range; `buffer`: the access's, where a buffer barrier covers only accesses through its own."""
        key = (stage, write, root, lo, hi, buffer)
        pos = start
        while True:
            moving = self._moving_kinds(state, key)
            if moving and moving[0] == -1:  # a buffer barrier splits the range
                cuts = (lo,) + moving[1:] + (hi,)
                return [piece for a, b in pairwise(cuts)
                        for piece in self.state_at(stage, write, root, a, b, pos, end, state, buffer)]
            nearest, nearest_kind = end + 1, -1
            for kind in moving:
                positions = self.positions[kind]
                i = bisect_right(positions, pos)
                if i < len(positions) and positions[i] < nearest:
                    nearest, nearest_kind = positions[i], kind
            if nearest_kind < 0:
                return [(lo, hi, state)]
            state, pos = self._step(state, nearest_kind, key), nearest

    def _moving_kinds(self, state: State, key: tuple) -> tuple[int, ...]:
        """Kinds whose barriers would change `state` (-1 first, then cut points, if one splits the range)."""
        memo = (state, key, len(self.kinds))
        found = self._moving.get(memo)
        if found is None:
            moving, cuts = [], set()
            for kind in range(len(self.kinds)):
                after = self._step(state, kind, key)
                if isinstance(after, list):
                    cuts.update(after)
                elif after != state:
                    moving.append(kind)
            found = (-1, *sorted(cuts)) if cuts else tuple(moving)
            self._moving[memo] = found
        return found
