"""The access state of every memory and the hazard detection over it (syncval's AccessContext over its
ResourceAccessStates, layers/sync/sync_access_state.h): each memory's range map (rangemap.py), whose segments
hold the last write of their bytes, the reads and the atomics since, and the questions a new access asks of them,
answered from the agents' clocks and barrier logs (agents.py, barriers.py) and the spec's rules (rules.py).

`detect` is syncval's DetectHazard: what one access of one segment violates, reported to the walk (engine.py)
as found; the walk then records the access (syncval's Update: Segment.add_read, Segment.add_atomic,
RangeMap.overwrite). Each
hazard is decided by one function of the two accesses and the segment: read-after-write and write-after-write
by `after_write` (by the two domains: device to device `unordered`, host to device `host_write_unseen`, host to
host `unshared_between_threads`, device to host `host_visible_missing`, and for a host read of non-coherent
memory `unseen_by_host_read`), write-after-read by `unordered`. detect calls them directly: a named wrapper per
hazard kind cost 1.4% more instructions on a stream whose every access races (measured). The ordering queries
(`unordered`, `covering_release`, `states`) keep their memos on the earlier access (Access.ordered,
Access.memo): barrier states and clocks only grow, so an answer once found holds for every later access there.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from heapq import heapify, heappop, heappush
from operator import itemgetter
from typing import Protocol

from ..model import ir
from . import fixes
from .access import Access
from .agents import QueueAgent, ThreadAgent, acquired_releases, join
from .barriers import BarrierEntry, State, in_transition_order, sees
from .rangemap import RangeMap, Segment
from .readings import Readings
from .rules import atomic_pair, host_write_needs_flush, marker_writes_ordered
from .scopes import second_execution_scope

__all__ = ["AccessState", "Reporter"]

# Memory whose bytes a read may find without a write first: uninitialized_read applies to device_local and
# device_host_visible memory only (docs/format.md), not to the host's own memory kinds.
_READABLE_UNWRITTEN = ("host_coherent", "host_cached")
_HOST_ACCESSES = ("host_read", "host_write")  # a destination with either: device -> host domain

class Reporter(Protocol):
    """Where `detect` reports (the walk, engine.Checker): bytes [lo, hi) of the buffer, x the access detected."""

    def hazard(self, kind: str, buf: ir.Buffer, lo: int, hi: int, e: Access, x: Access) -> None:
        """A RAW, WAW or WAR of e then x, worded when read (findings.Findings)."""

    def report(self, kind: str, buffer: str | None, lo: int | None, hi: int | None, first: Access | None,
               second: Access | None, scope: int | None, words: tuple[str, str]) -> None:
        """Any other finding, with its message and fix (`words`)."""


def _minus(ranges: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """`ranges` less the bytes [lo, hi)."""
    return [piece for a, b in ranges for piece in ((a, min(b, lo)), (max(a, hi), b)) if piece[0] < piece[1]]


class AccessState:
    """Every memory's range map (placed by buffer), what a buffer barrier covers (wording.through), the host
    writes barriers made available; `detect` and the ordering queries compare an access with them."""

    def __init__(self, index: ir.StreamIndex, agents: list, queues: dict[str, QueueAgent], readings: Readings,
                 buffers: Iterable[ir.Buffer]) -> None:
        """The state of `buffers`' memories, compared by `agents` (queues, then host threads; `queues` by id)."""
        self.index = index
        self.agents = agents
        self.queues = queues
        self.readings = readings
        self.memories: dict[str, RangeMap] = {}
        self.memory_kind: dict[str, str] = {}
        self.placement: dict[str, tuple[ir.Buffer, str, int, RangeMap]] = {}
        buffers = list(buffers)
        self.place(buffers)
        self.aliased = any(b.alias_of is not None for b in buffers)
        # Spec 7.7.2 "access to memory through the specified buffer range": a buffer barrier covers only accesses
        # through its own buffer, unless the reading buffer_barrier_covers_aliases says otherwise.
        by_buffer = self.aliased and not readings.buffer_barrier_covers_aliases
        self.wording = fixes.Wording(tuple(a.id for a in agents), self.memory_kind, readings, by_buffer,
                                     index.images)
        # host write uid -> [(proxy access at a barrier that made it available, lo, hi)] (make_host_writes_available)
        self.host_available: dict[int, list[tuple[Access, int, int]]] = {}

    def place(self, buffers: Iterable[ir.Buffer]) -> None:
        """Place `buffers` (all in the index, their roots placed or among them): a range map for each unaliased
        one, then each one's memory kind and placement (buffer, root, offset in root, root's range map)."""
        buffers = list(buffers)
        for b in buffers:
            if b.alias_of is None:
                self.memories[b.id] = RangeMap(b.size, b.memory in _READABLE_UNWRITTEN)
        for b in buffers:
            root, offset = self.index.root(b.id)
            self.memory_kind[b.id] = self.index.buffers[root].memory
            self.placement[b.id] = (b, root, offset, self.memories[root])

    def through(self, a: Access | BarrierEntry) -> str | None:
        return self.wording.through(a)

    # ---- detection ---------------------------------------------------------

    def detect(self, x: Access, buf: ir.Buffer, root: str, base: int, seg: Segment, to: Reporter) -> None:
        """Report to `to` what x's reads and write of seg (buf's bytes from `base` in memory `root`) violate, in
        this order: a read of bytes nothing wrote, of bytes another queue family owns, a RAW; then a WAW (not
        after a RAW of the same bytes, nor of a marker write its implicit dependency orders after the write) and
        the WARs. Nothing is recorded: the walk records x after detecting
        (syncval's Update). Each is reported as found, as the ordering queries' memos then stand. The atomics
        since the write (Segment.atomics) are writes x meets too, but those of its device where x is atomic;
        an atomic x happens after hides what it came after, as a write does."""
        raw = False
        w = seg.write
        atomics = ()
        if seg.atomics:  # rare: the common path below pays two tests for them
            hidden = self.hidden_by_atomics(x, root, seg)
            atomics = [e for e, _ in seg.atomics if e.uid != x.uid and e.uid not in hidden
                       and not self.mutually_ordered(e, x)]
            seg_reads = [r for r in seg.reads if r.uid not in hidden]
            if w is not None and w.uid in hidden:
                w = None  # written, so initialized: nothing to compare
        else:
            seg_reads = seg.reads
        if x.reads and w is None:
            if not seg.initialized:
                to.report("uninitialized_read", x.buffer, seg.lo - base, seg.hi - base, None, x, x.uid,
                          (f"{x.ref} reads bytes of {x.buffer!r} that nothing wrote", fixes.uninitialized(x)))
        elif x.reads and w.uid != x.uid:
            if x.family is not None and buf.sharing == "exclusive" and seg.owner not in (None, x.family):
                message = (f"{x.ref} on family {x.family} reads bytes of exclusive {x.buffer!r} owned by family "
                           f"{seg.owner} without an ownership transfer")
                to.report("ownership_missing", x.buffer, seg.lo - base, seg.hi - base, w, x, x.uid,
                          (message, fixes.ownership(w, x, seg.owner, x.buffer in self.wording.images)))
            elif x.family is not None and buf.sharing == "exclusive" and not self.after_acquire(x, root, seg):
                message = (f"{x.ref} reads bytes of exclusive {x.buffer!r} at {x.stage}, outside the second "
                           f"synchronization scope of the acquire that gave family {x.family} those bytes")
                to.report("ownership_missing", x.buffer, seg.lo - base, seg.hi - base, w, x, x.uid,
                          (message, fixes.acquire_stage(x)))
            raw = self._raw(w, x, buf, root, base, seg, to)
        if x.reads:
            for e in atomics:
                raw = self._raw(e, x, buf, root, base, seg, to) or raw
        if seg.carried is not None:  # rare: 7.7.4, a write before two layout transitions of a queue
            self._carried(seg.carried, x, buf, root, base, seg, to)
        if not x.write:
            return
        if not raw:
            if w is not None and w.uid != x.uid and not (
                    in_transition_order(w, x) or marker_writes_ordered(w.marker, x.marker, w.agent == x.agent)):
                self._waw(w, x, buf, root, base, seg, to)
            for e in atomics:
                self._waw(e, x, buf, root, base, seg, to)
        for r in seg_reads:
            if r.uid == x.uid:
                continue
            for a, b in self.unordered(r, x, root, seg.lo, seg.hi, None):
                to.hazard("war", buf, a - base, b - base, r, x)

    def _carried(self, w: Access, x: Access, buf: ir.Buffer, root: str, base: int, seg: Segment,
                 to: Reporter) -> None:
        """Report where x races write w, which two layout transitions of one queue replaced, the second after the
        first only in transition order (Segment.carried). 7.7.4: "an application must not rely on ordering of image
        layout transitions to influence ordering of other commands": x may follow both and not w."""
        for a, b in self.unordered(w, x, root, seg.lo, seg.hi, None):
            to.hazard("raw" if x.reads else "waw", buf, a - base, b - base, w, x)

    def _raw(self, w: Access, x: Access, buf: ir.Buffer, root: str, base: int, seg: Segment, to: Reporter) -> bool:
        """Report the RAWs of x's reads of seg after write w; whether there was one."""
        bad = self.after_write(w, x, root, seg, x.reads)
        if not bad and x.family is None and w.family is not None and self.memory_kind[x.buffer] == "host_cached":
            bad = self.unseen_by_host_read(w, x, root, seg)
        for a, b in bad:
            to.hazard("raw", buf, a - base, b - base, w, x)
        return bool(bad)

    def _waw(self, w: Access, x: Access, buf: ir.Buffer, root: str, base: int, seg: Segment, to: Reporter) -> None:
        """Report the WAWs of x's write of seg after write w."""
        for a, b in self.after_write(w, x, root, seg, (x.write,) if x.family is not None else None):
            to.hazard("waw", buf, a - base, b - base, w, x)

    def mutually_ordered(self, e: Access, x: Access) -> bool:
        """Memory model "Data Race": atomics of one device do not race (rules.atomic_pair)."""
        agents = self.agents
        return e.atomic and x.atomic and atomic_pair(True, True, agents[e.agent].device == agents[x.agent].device)

    def hidden_by_atomics(self, x: Access, root: str, seg: Segment) -> frozenset:
        """The uids of the accesses of seg hidden from x: those an atomic that happens-before x (7.1, an execution
        dependency over all of seg) happens after, as the most recent write hides the older ones."""
        return frozenset().union(*(hides for e, hides in (*seg.atomics, *seg.hiders)
                                   if e.uid != x.uid and not self.unordered(e, x, root, seg.lo, seg.hi, None)))

    def alike(self, e: Access, x: Access) -> bool:
        """Whether every dependency orders earlier access e as it orders x: both of one queue and stage, no barrier
        recorded between them (first_barrier) nor a signal or fence release (7.1: a first synchronization scope
        holds both or neither). A run of atomic dispatches is then one access to later ones."""
        if e.agent != x.agent or e.stage != x.stage or e.first_barrier != x.first_barrier or e.family is None:
            return False
        releases = self.agents[x.agent].release_pos
        at = bisect_left(releases, e.pos)
        return at == len(releases) or releases[at] >= x.pos

    def atomic_hides(self, x: Access, root: str, seg: Segment) -> frozenset:
        """The uids of the accesses of seg (the write, the reads and atomics since it) that atomic x happens
        after, and those they hide: what x hides (Segment.atomics). Only accesses seg still holds: a loop of
        ordered atomics keeps one, whose set stays that small."""
        held = [e for e in (seg.write, *seg.reads, *(a for a, _ in seg.atomics)) if e is not None and e.uid != x.uid]
        before = [e for e in held if not self.unordered(e, x, root, seg.lo, seg.hi, None)]
        return frozenset(e.uid for e in before).union(*(hides for a, hides in seg.atomics if a in before)) & \
            frozenset(e.uid for e in held)

    def unseen_by_host_read(self, w: Access, x: Access, root: str, seg: Segment) -> list[tuple[int, int]]:
        """7.1.3 and the vkInvalidateMappedMemoryRanges note: a host read x of non-coherent memory, ordered after
        device write w and w made visible to the host, needs an invalidate too, after the host acquired a
        release that carries the barrier making w visible to it (an invalidate before that barrier's domain
        operation makes nothing visible). seg, or nothing."""
        waited = self.agents[x.agent].acquired_at(self.host_visibility(w, x, root, seg.lo, seg.hi, every=True)[1])
        return [(seg.lo, seg.hi)] if seg.invalidated.get(x.agent, -1) < waited else []

    def after_acquire(self, x: Access, root: str, seg: Segment) -> bool:
        """Spec 7.7.4: the acquire operation happens-before the second synchronization scope of its barrier, so an
        access on the acquiring queue is ordered after it only at a stage of that scope or one a chain from it
        reaches (7.1). An access on another queue of the family is not judged here."""
        if seg.acquired is None or seg.acquired[0] != x.agent:
            return True
        _, pos, scope = seg.acquired
        states = self.agents[x.agent].log.state_at("", None, root, seg.lo, seg.hi, pos, x.pos,
                                                   State(scope, False, frozenset()))
        return all(x.stage in s.chain for _, _, s in states)

    def after_write(self, w: Access, x: Access, root: str, seg: Segment,
                    need: tuple[str, ...] | None) -> list[tuple[int, int]]:
        """Sub-ranges of seg where x is not ordered after write w (need: x's accesses that must see w), by the
        domains of the two: device to device, host to device (host_write_unseen), host to host, device to host."""
        if x.family is not None:
            return self.unordered(w, x, root, seg.lo, seg.hi, need) if w.family is not None else \
                self.host_write_unseen(w, x, root, seg, need)
        bad = self.unordered(w, x, root, seg.lo, seg.hi, need)
        if bad:
            return bad
        if w.family is None:
            return [(seg.lo, seg.hi)] if self.unshared_between_threads(w, x, seg) else []
        return self.host_visible_missing(w, x, root, seg.lo, seg.hi)

    def unshared_between_threads(self, w: Access, x: Access, seg: Segment) -> bool:
        """Memory model "Location-Ordered": another host thread is another agent, so under the strict reading
        (readings.host_threads_coherent off) a host write to non-coherent memory reaches its access only through
        the writer's flush before it (availability to the host domain, 7.1.3) and, for a read, the reader's
        invalidate after that flush (visibility)."""
        if not host_write_needs_flush(w.agent == x.agent, self.memory_kind[x.buffer],
                                      self.readings.host_threads_coherent):
            return False
        thread = self.agents[x.agent]
        if seg.flushed is None or thread.clock[w.agent] <= seg.flushed:
            return True
        return bool(x.reads) and seg.invalidated.get(x.agent, -1) < thread.acquired_at([(w.agent, seg.flushed + 1)])

    # ---- ordering ----------------------------------------------------------

    def covering_release(self, e: Access, span: tuple[str, int, int] | None = None) -> list[tuple[int, int]]:
        """(clock entry, value) pairs, any of which acquired orders e: its thread's next op; on a queue, the
        first semaphore signal whose first synchronization scope contains e and the first fence release
        after e (empty: nothing released after e covers it). `span` (root, lo, hi): e's bytes that a memory
        dependency must make available."""
        agent = self.agents[e.agent]
        if isinstance(agent, ThreadAgent):
            return [(e.agent, e.pos + 1)]
        needs: dict[int, int] = {}
        # A release at queue position p follows the commands up to p. A proxy of host writes (at stage host)
        # stands one position before the barrier that makes them available, so that the barrier orders it:
        # a release at that position came before the barrier and covers none of them (spec 7.1).
        start = bisect_left(agent.release_pos, e.pos + 1 if e.stage == "host" else e.pos)
        # Each lane's releases from `start` on, merged in release order (the states' queries then only move
        # forward); a lane leaves once one of its releases covers e, so a long run's later releases are not walked.
        heads = [(indexes[at], lane, at) for lane, indexes in agent.lane_releases.items()
                 if (at := bisect_left(indexes, start)) < len(indexes)]
        heapify(heads)
        while heads:
            i, lane, at = heappop(heads)
            scope = agent.release_scope[i]
            # Spec 7.1: a chain's first access scope is its first barrier's, so a release reached only through
            # a chain makes e available only where that barrier did (an execution-only barrier: nowhere), and
            # only through a chain from that barrier.
            if e.stage in scope or all((s.chain if span is None else s.released) & scope for _, _, s in
                                       self.states(e, *(span or self.root_range(e)), agent.release_pos[i],
                                                   chain_only=span is None)):
                needs[lane] = i + 1
            elif at + 1 < len(agent.lane_releases[lane]):
                heappush(heads, (agent.lane_releases[lane][at + 1], lane, at + 1))
        return sorted(needs.items(), key=lambda need: need[1])

    def states(self, e: Access, root: str, lo: int, hi: int, end: int, chain_only: bool = False) -> list:
        """e's barrier state per sub-range of [lo, hi) at queue position `end` (BarrierLog.state_at),
        continuing from e's last query when it covered the same bytes up to an earlier position.
        chain_only: only the execution dependency chain is asked for, which does not depend on the bytes."""
        log, buffer = self.agents[e.agent].log, self.through(e)
        write = None if chain_only else e.write
        memo = e.memo
        if memo is not None and memo[:2] == (lo, hi) and memo[2] <= end and len(memo[3]) == 1 and memo[4] == write:
            pieces = log.state_at(e.stage, write, root, lo, hi, memo[2], end, memo[3][0][2], buffer)
        else:
            pieces = log.state_at(e.stage, write, root, lo, hi, e.pos, end, buffer=buffer)
        e.memo = (lo, hi, end, pieces, write)
        return pieces

    def root_range(self, e: Access) -> tuple[str, int, int]:
        """e's root memory, whole; an event operation's (events.operation_memory), its own name: it has no bytes."""
        if e.buffer not in self.placement:
            return e.buffer, 0, 1
        root, _ = self.index.root(e.buffer)
        return root, 0, self.memories[root].segments[-1].hi  # whole memory: exec scope ignores ranges

    def unordered(self, e: Access, x: Access, root: str, lo: int, hi: int,
                  need: tuple[str, ...] | None) -> list[tuple[int, int]]:
        """Sub-ranges of [lo, hi) where x is not ordered after e (need: accesses that must see e).

        Barrier states and clocks only grow, so once an agent's access at a stage is ordered after
        e, every later one there is too: the answer is cached on e.
        """
        if e.agent == x.agent:
            if x.family is None:
                return []  # host program order
            # Most pairs are ordered by the first barrier after e alone; states only grow after it.
            queue = self.agents[x.agent]
            log = queue.log
            if e.first_barrier < len(log.all_kinds):
                if log.orders_alone(e.first_barrier, e.stage, e.write, root, lo, hi, x.stage, need,
                                    self.through(e), self.through(x)):
                    return []
            elif not queue.release_pos or queue.release_pos[-1] < e.pos:
                return [(lo, hi)]  # neither a barrier nor a signal since e on its queue: nothing orders them
        key = (x.agent, x.stage, need, lo, hi)
        if e.ordered is not None and key in e.ordered:
            return []
        bad = self._unordered(e, x, root, lo, hi, need)
        if not bad:
            if e.ordered is None:
                e.ordered = set()
            e.ordered.add(key)
        return bad

    def _unordered(self, e: Access, x: Access, root: str, lo: int, hi: int,
                   need: tuple[str, ...] | None) -> list[tuple[int, int]]:
        agent = self.agents[x.agent]
        pending = [(lo, hi)]
        if e.agent == x.agent:
            pending = []
            for a, b, s in self.states(e, root, lo, hi, x.pos):
                if x.stage not in s.chain or (need and not all(sees(s, x.stage, acc, x.buffer) for acc in need)):
                    pending.append((a, b))
            if not pending:
                return []
        needs = self.covering_release(e, (root, lo, hi) if need else None)
        if not needs:
            return pending
        if isinstance(agent, ThreadAgent):
            clock = agent.clock
        elif need:
            clock = agent.visible_clock(x.stage, need)
        else:
            clock = agent.exec_clock[x.stage]
        for lane, least in needs:
            if clock[lane] >= least:
                return []
        if need and not isinstance(agent, ThreadAgent):
            return self._visible_in_ranges(agent, x, need, needs, root, pending)
        return pending

    @staticmethod
    def _visible_in_ranges(agent: QueueAgent, x: Access, need: tuple[str, ...], needs: list[tuple[int, int]],
                           root: str, pending: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Spec 7.7.2: `pending` less the bytes a buffer memory barrier made visible to x's (stage, need) from a
        release in `needs`."""
        zero, stage = (0,) * agent.clock_width, x.stage
        for (r, a, b, through), visible in agent.range_vis.items():
            if r != root or through not in (None, x.buffer):
                continue
            clocks = [join(agent.vis_clock[(stage, acc)], visible.get((stage, acc), zero)) for acc in need]
            clock = tuple(map(min, *clocks)) if len(clocks) > 1 else clocks[0]
            if any(clock[lane] >= least for lane, least in needs):
                pending = _minus(pending, a, b)
        return pending

    def before_scope(self, e: Access, x: Access, scope: frozenset[str]) -> bool:
        """Whether e is ordered before an operation at x's place whose first synchronization scope is `scope` (an
        expanded execution scope): an event operation, which has no stage (events.py). On one queue, e is in the
        scope or a chain from it meets the scope; else x's agent acquired a release covering e at a
        stage of the scope (a host thread: at all), as it may on its own queue too (a fence, then a submission)."""
        agent = self.agents[x.agent]
        if e.agent == x.agent and (x.family is None or e.stage in scope or any(
                s.chain & scope for _, _, s in self.states(e, e.buffer, 0, 1, x.pos, chain_only=True))):
            return True
        needs = self.covering_release(e)
        if isinstance(agent, ThreadAgent):
            clock = agent.clock
        else:
            clock = (0,) * agent.clock_width
            for stage in scope & agent.exec_clock.keys():
                clock = join(clock, agent.exec_clock[stage])
        return any(clock[lane] >= least for lane, least in needs)

    def racing(self, e: Access, x: Access) -> bool:
        """Whether the accesses of two agents are ordered neither way: no execution dependency (7.1)."""
        return bool(self.unordered(e, x, *self.root_range(x), None))

    def host_visible_missing(self, e: Access, x: Access, root: str, lo: int, hi: int) -> list[tuple[int, int]]:
        """Spec 7.1.3 host access and the memory model's "Location-Ordered": a device write the host then reads
        must be made visible to host_read by a barrier whose chain reaches a release the host acquired (7.1);
        one the host then overwrites needs only the domain operation to the host, which host_read or host_write
        in a barrier's destination performs. A fence or an idle wait alone makes nothing available to the host."""
        return self.host_visibility(e, x, root, lo, hi)[0]

    def host_visibility(self, e: Access, x: Access, root: str, lo: int, hi: int,
                        every: bool = False) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """(the sub-ranges of [lo, hi) that no barrier made visible to host access x (host_visible_missing), the
        releases (clock entry, value) x's thread acquired that carry that visibility: the first found, or with
        `every` all of them)."""
        reach = _HOST_ACCESSES if x.write else ("host_read",)
        clock = self.agents[x.agent].clock
        carriers = []
        for carrier in self._host_visible_through_releases(e, x, reach, root, lo, hi):
            carriers.append(carrier)
            if not every:
                return [], carriers
        if carriers:
            return [], carriers
        queue, bad = self.agents[e.agent], [(lo, hi)]
        for i in acquired_releases(queue, clock, e.pos):
            scope = queue.release_scope[i]
            left = [(a, b) for lo2, hi2 in bad for a, b, s in self.states(e, root, lo2, hi2, queue.release_pos[i])
                    if not any(access in reach and stage in scope and through in (None, x.buffer)
                               for access, stage, through in s.host)]
            if sum(b - a for a, b in left) < sum(b - a for a, b in bad):
                carriers.append((queue.release_lane[i], i + 1))
            bad = left
            if not bad and not every:
                break
        return bad, carriers

    def _host_visible_through_releases(self, e: Access, x: Access, reach: tuple[str, ...], root: str, lo: int,
                                       hi: int) -> Iterator[tuple[int, int]]:
        """The releases (clock entry, value) through which a barrier made e visible to the host access x after e's
        release reached it (a semaphore wait before the barrier), the host having acquired a release that the
        barrier's chain reaches."""
        needs, clock = self.covering_release(e, (root, lo, hi)), self.agents[x.agent].clock
        for q in self.queues.values():
            # A release before the first whose reach holds one of `needs` carries none of them.
            start = min((bisect_left(q.host_reach, least, key=itemgetter(lane)) for lane, least in needs),
                        default=len(q.host_releases))
            for k, carried in q.host_releases[start:]:
                if clock[q.release_lane[k - 1]] < k:
                    continue
                for (access, limit), c in carried.items():
                    if access in reach and (limit is None or limit[0] == root and limit[1] <= lo and hi <= limit[2]
                                            and limit[3] in (None, x.buffer)) \
                            and any(c[lane] >= least for lane, least in needs):
                        yield q.release_lane[k - 1], k
                        break

    def host_write_unseen(self, w: Access, x: Access, root: str, seg: Segment,
                          need: tuple[str, ...]) -> list[tuple[int, int]]:
        """Spec 7.9 "host write ordering" and 11.2.2: host write w reaches device access x through a submission
        that w (on non-coherent memory, the flush of its bytes) happens-before, or through a barrier with
        host/host_write in its first access scope (`make_host_writes_available`)."""
        clock = self.agents[x.agent].visible_clock(x.stage, need)
        reached = w.pos if self.memory_kind[w.buffer] != "host_cached" else seg.flushed
        if reached is not None and clock[self.agents[w.agent].memory_lane] > reached:
            return []
        pending = [(seg.lo, seg.hi)]
        if self.unordered(w, x, root, seg.lo, seg.hi, None):
            # 7.1: a barrier's `host` source stage holds host writes, it does not wait for them: the write must
            # happen-before x's stage (a wait whose stages the barrier's chain meets), not only before some wait.
            return pending
        for proxy, lo, hi in self.host_available.get(w.uid, ()):
            lo, hi = max(lo, seg.lo), min(hi, seg.hi)
            if lo < hi and not self.unordered(proxy, x, root, lo, hi, need):
                pending = _minus(pending, lo, hi)
        return pending

    # ---- updates by barriers ------------------------------------------------

    def make_host_writes_available(self, queue: QueueAgent, entry: BarrierEntry, proxy: Access) -> None:
        """A barrier with host/host_write in its first access scope: the memory model's domain operation from host
        to device for the host writes in its range that happen-before its first scope, read as those before a
        wait or submission earlier on its queue (docs/format.md, "Readings"). `proxy`, a write at the barrier,
        stands for them, so later barriers, signals and waits order it like a device write."""
        through = self.through(entry)
        for root in ([entry.root] if entry.root is not None else list(self.memories)):
            memory = self.memories[root]
            lo, hi = (entry.lo, entry.hi) if entry.root is not None else (0, memory.segments[-1].hi)
            for seg in memory.span(lo, hi):
                w = seg.write
                if w is None or w.family is not None or through not in (None, w.buffer):
                    continue  # 7.7.2: a buffer barrier holds the writes through its own buffer (readings)
                reached = w.pos if self.memory_kind[root] != "host_cached" else seg.flushed
                if reached is not None and queue.host_clock[w.agent] > reached:
                    proxy.buffer = through or proxy.buffer or root
                    self.host_available.setdefault(w.uid, []).append((proxy, seg.lo, seg.hi))

    def ownership_transfer(self, queue: QueueAgent, b: ir.BufferBarrier | ir.ImageBarrier) -> None:
        """Spec 7.7.4: release on the source family, acquire on the destination family, of a buffer range or of an
        image subresource range's bytes."""
        if isinstance(b, ir.ImageBarrier):
            root, spans = b.image, b.ranges
        else:
            root, base = self.index.root(b.buffer)
            spans = ((base + b.offset, base + b.offset + b.size),)
        for lo, hi in spans:
            for seg in self.memories[root].span(lo, hi):
                if queue.family == b.src_family:
                    seg.release(b.dst_family)
                elif queue.family == b.dst_family:
                    seg.acquire(b.dst_family, (queue.index, queue.pos, second_execution_scope(b.dst_stage)))
