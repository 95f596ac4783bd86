"""An ordered map of non-overlapping byte ranges of one memory (syncval's AccessMap)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["RangeMap", "Segment"]


@dataclass(slots=True)
class Segment:
    """What is known about bytes [lo, hi) of one memory: the most recent write and the reads since."""

    lo: int
    hi: int
    write: Any = None
    reads: tuple = ()
    initialized: bool = False
    flushed: int | None = None  # host op position of the flush after the last host write
    invalidated: dict = field(default_factory=dict)  # thread agent -> position of its last invalidate
    owner: int | None = None  # queue family owning the bytes (exclusive sharing)
    released_to: int | None = None
    # The acquire that gave `owner` the bytes: (queue agent, its position, its second execution scope), 7.7.4.
    acquired: tuple | None = None
    # The atomic accesses since `write` (memory model: mutually-ordered atomics do not race, so none replaces
    # another, nor `write` and the reads, for what races it), each with the uids of the accesses it happens
    # after: those it hides from an access that happens after it, as a write hides what came before it.
    atomics: tuple[tuple[Any, frozenset], ...] = ()
    # Atomics a later one stood for (add_atomic), each with the uids of `write` and `reads` it happens after: it
    # still hides those from an access that happens after it but not after the later one.
    hiders: tuple[tuple[Any, frozenset], ...] = ()
    # 7.7.4: where `write` ends a run of one queue's layout transitions, the write the first replaced; once a later
    # one followed it only in transition order, which orders no other command, also `carried`: a write the next
    # accesses meet as one they may race (neither transition need happen after it).
    replaced: Any = None
    carried: Any = None

    def add_atomic(self, x: Any, hides: frozenset, alike: Any) -> None:
        """Atomic access x read and wrote the bytes, after the accesses whose uids are `hides`: it stands for the
        atomics among those as a write they race (an access unordered with one is unordered with x), and for those
        `alike(e, x)` says every dependency orders as it orders x (as a read stands for the earlier ones of its
        agent and stage, add_read), whose hidden accesses it hides too. Those it happens after go on hiding what
        they happened after (`hiders`)."""
        kept = []
        for e in self.atomics:
            if alike(e[0], x):
                hides |= e[1]
            elif e[0].uid not in hides:
                kept.append(e)
            else:
                self._keep_hider(*e)
        self.atomics = (*kept, (x, hides))
        self.initialized = True

    def _keep_hider(self, e: Any, hides: frozenset) -> None:
        """Memory model "Data Race", docs/format.md rule 10: atomic e hides what it happened after from an access it
        happens-before. Of one agent and stage the earliest that hides an access is kept: an access ordered after a
        later one is ordered after it (7.1: a first scope holds every earlier command at its stages), so the
        hiders stay as few as the write and the reads they hide."""
        held = hides & ({r.uid for r in self.reads} | ({self.write.uid} if self.write is not None else set()))
        if held and not any(h.agent == e.agent and h.stage == e.stage and held <= known for h, known in self.hiders):
            self.hiders = (*self.hiders, (e, held))

    def written(self, write: Any, owner: int | None) -> None:
        """`write` wrote the bytes: what was known of them before no longer matters but their owner, which
        `owner` replaces where given."""
        self.write, self.reads, self.initialized, self.flushed, self.released_to, self.atomics, self.hiders = \
            write, (), True, None, None, (), ()
        if self.replaced is not None:
            self.replaced = self.carried = None
        if owner is not None:
            self.owner = owner

    def transitioned(self, write: Any, owner: int | None, chained: bool) -> None:
        """Layout transition `write` wrote the bytes, after `self.write` in transition order where `chained`
        (7.7.4): the reads stay, a later transition may follow this one only in that order; and the write before
        the run of transitions (`replaced`, `carried`)."""
        reads, replaced = self.reads, self.replaced if chained else self.write
        self.written(write, owner)
        self.reads, self.replaced, self.carried = reads, replaced, replaced if chained else None

    def add_read(self, x: Any) -> None:
        """Access x read the bytes. The reads since the write keep one per agent and stage, the latest (a later
        access ordered after it is ordered after the earlier ones there)."""
        reads = self.reads
        if not reads or len(reads) == 1 and reads[0].agent == x.agent and reads[0].stage == x.stage:
            self.reads = (x,)  # the common cases, without a generator
        else:
            self.reads = (*(r for r in reads if r.agent != x.agent or r.stage != x.stage), x)

    def flush(self, agent: int, pos: int) -> None:
        """Host op `pos` of thread `agent` flushed the bytes: it makes available the write, if that thread's."""
        if self.write is not None and self.write.agent == agent:
            self.flushed = pos

    def invalidate(self, agent: int, pos: int) -> None:
        """Host op `pos` of thread `agent` invalidated the bytes."""
        self.invalidated[agent] = pos

    def release(self, family: int) -> None:
        """Spec 7.7.4: a release of the bytes to queue family `family`."""
        self.released_to = family

    def acquire(self, family: int, acquired: tuple) -> None:
        """Spec 7.7.4: family `family`'s acquire (`acquired`: its queue agent, position and second execution
        scope) takes the bytes where a release to it came first."""
        if self.released_to == family:
            self.owner, self.released_to, self.acquired = family, None, acquired


class RangeMap:
    def __init__(self, size: int, initialized: bool) -> None:
        self.starts = [0]
        self.segments = [Segment(0, max(size, 1), initialized=initialized)]

    def _split(self, at: int) -> None:
        i = bisect_right(self.starts, at) - 1
        seg = self.segments[i]
        if seg.lo == at or at >= seg.hi:
            return
        right = replace(seg, lo=at, invalidated=dict(seg.invalidated))
        seg.hi = at
        self.starts.insert(i + 1, at)
        self.segments.insert(i + 1, right)

    def span(self, lo: int, hi: int) -> list[Segment]:
        """The segments exactly covering [lo, hi), splitting at its ends."""
        if hi <= lo:
            return []
        i = bisect_right(self.starts, lo) - 1
        if self.segments[i].lo == lo and self.segments[i].hi == hi:
            return self.segments[i:i + 1]
        self._split(lo)
        self._split(hi)
        i = bisect_right(self.starts, lo) - 1
        j = bisect_right(self.starts, hi - 1)
        return self.segments[i:j]

    def overwrite(self, lo: int, hi: int, segs: list[Segment], write: Any, owner: int | None = None) -> None:
        """[lo, hi), whose segments `span(lo, hi)` returned, written by `write`: what was known before no longer
        matters but the queue family owning each byte, which `owner` (a device write's, to an exclusive buffer)
        replaces where given. One fresh segment per run of bytes of one owner: a host write across bytes of two
        families leaves each its own (merged under the first's, a later read named the wrong family)."""
        if len(segs) == 1:  # the common case: reset in place, no list surgery
            segs[0].written(write, owner)
            return
        fresh: list[Segment] = []
        for seg in segs:
            kept = seg.owner if owner is None else owner
            if fresh and fresh[-1].owner == kept:
                fresh[-1].hi = seg.hi
            else:  # invalidates recorded before this write precede any acquire of it: which run keeps them is moot
                fresh.append(Segment(seg.lo, seg.hi, write, initialized=True, invalidated=seg.invalidated, owner=kept))
        i = bisect_right(self.starts, lo) - 1
        self.starts[i:i + len(segs)] = [seg.lo for seg in fresh]
        self.segments[i:i + len(segs)] = fresh
