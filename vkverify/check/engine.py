"""The happens-before checker: runs a stream in one legal order and compares accesses.

Queues and host threads are agents with vector clocks (agents.py). Ordering on one
queue comes from its barriers (barriers.BarrierLog). Each memory keeps a
RangeMap of the last write and the reads since it, so a new access is
compared with a handful of earlier ones. A resubmitted command buffer, once
an execution of it reported nothing, replays a plan (replay.py): only its
accesses that meet earlier work are compared, only those something sees are
recorded; a barrier that changed no clock is skipped until the clocks change. A command's access that meets
only earlier accesses of its queue, each ordered before it by the global barrier after it alone (an answer
already known), is recorded without the general comparison (Checker._run_quick).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from heapq import heapify, heappop, heappush
from itertools import count
from operator import itemgetter

from ..model import ir
from ..model.accesses import ACCESSES_BY_KIND
from ..model.refs import format_ref
from . import fixes
from .access import Access
from .agents import EPOCHS, Clock, QueueAgent, ThreadAgent, acquired_releases, join, join_all
from .barriers import BarrierEntry, State, compile_barrier, sees
from .findings import Findings
from .rangemap import RangeMap, Segment
from .readings import DEFAULT, Readings
from .replay import ALWAYS, DOMINATED, replay_plan
from .rules import host_write_needs_flush, makes_host_writes_available, transfers_ownership
from .scopes import second_execution_scope

__all__ = ["Checker"]

_HOST_VISIBLE = ("host_coherent", "host_cached")
_HOST_ACCESSES = ("host_read", "host_write")  # a destination with either: device -> host domain
def _minus(ranges: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """`ranges` less the bytes [lo, hi)."""
    return [piece for a, b in ranges for piece in ((a, min(b, lo)), (max(a, hi), b)) if piece[0] < piece[1]]


def _with_read(reads: tuple[Access, ...], x: Access) -> tuple[Access, ...]:
    """The reads since a write after read x: one per agent and stage, the latest (a later access ordered after it
    is ordered after the earlier ones there)."""
    if not reads or len(reads) == 1 and reads[0].agent == x.agent and reads[0].stage == x.stage:
        return (x,)  # the common cases, without a generator
    return (*(r for r in reads if r.agent != x.agent or r.stage != x.stage), x)


def _stream_order(a: Access) -> tuple[tuple[int, int], int]:
    """Where a comes in the stream: its submit's (or host op's) thread and position, then its queue position."""
    return a.issued, a.pos if a.family is not None else 0


class Checker:
    def __init__(self, stream: ir.Stream, readings: Readings = DEFAULT, replay: bool = True,
                 quick: bool = True) -> None:
        """`replay`: whether resubmitted command buffers replay a plan (run_command_buffer); without it every
        execution runs every command. `quick`: whether a command's clean accesses of one queue are answered
        without the general comparison (_run_quick). The tests compare each with the checker without it."""
        self.stream = stream
        self.readings = readings
        self.replay = replay
        self.quick = quick
        self.index = stream.index
        threads = stream.threads
        queues = [(d, q) for d in stream.devices for q in d.queues]
        widest = {q.id: 1 for _, q in queues}
        # A command's reference names one execution unless its command buffer runs twice in one submit
        # (ir.StreamIndex.command_ref), which the loader refuses and a stream made by hand may still do.
        refs_repeat = False
        for _, op in ir.submits(stream):
            widest[op.queue] = max(widest[op.queue], *(len(b.signals) for b in op.batches), 1)
            submitted = ir.submitted(op)
            refs_repeat = refs_repeat or len(set(submitted)) < len(submitted)
        # Clock entries: each queue's first semaphore lane and each thread's ops (both at the agent's index),
        # each queue's fence lane, each thread's host writes made available to the device, the other lanes.
        n_queues, n_threads = len(queues), len(threads)
        extra = 2 * (n_queues + n_threads)
        n = extra + sum(widest.values()) - n_queues
        self.queues: dict[str, QueueAgent] = {}
        for i, (d, q) in enumerate(queues):
            lanes = (i, *range(extra, extra + widest[q.id] - 1))
            extra += widest[q.id] - 1
            self.queues[q.id] = QueueAgent(i, q.id, d.id, q.family, n, lanes, n_queues + n_threads + i)
        self.threads = [ThreadAgent(n_queues + i, t.id, t.ops, (0,) * n, 2 * n_queues + n_threads + i)
                        for i, t in enumerate(threads)]
        self.agents: list = list(self.queues.values()) + self.threads
        self.memories: dict[str, RangeMap] = {}
        self.memory_kind: dict[str, str] = {}
        self.placement: dict[str, tuple[ir.Buffer, str, int, RangeMap]] = {}
        self.place(stream.buffers)
        self.aliased = any(b.alias_of is not None for b in stream.buffers)
        # Spec 7.7.2 "access to memory through the specified buffer range": a buffer barrier covers only accesses
        # through its own buffer, unless the reading buffer_barrier_covers_aliases says otherwise.
        self.by_buffer = self.aliased and not readings.buffer_barrier_covers_aliases
        self.barriers = {}
        # id of a resubmitted command buffer -> [it, its steps (_step), its replay plan: None before a clean
        # execution, () where none may be made, what its reads met (_replay)]; the command buffer held keeps its
        # id from being reused.
        self.compiled: dict[int, list] = {}
        self.wording = fixes.Wording(tuple(a.id for a in self.agents), self.memory_kind, readings, self.by_buffer)
        self.findings = Findings(self.wording, refs_repeat)
        self.reported = 0  # calls of report(): an execution that made none compared cleanly
        # host write uid -> [(proxy access at a barrier that made it available, lo, hi)] (run_barrier)
        self.host_available: dict[int, list[tuple[Access, int, int]]] = {}
        self.destroyed: dict[str, Access] = {}  # buffer -> its destroy
        # Spec 12.7: a destroy waits for every device use of the buffer, also those a later access
        # replaced in the range map; the latest use per (agent, stage) stands for the earlier ones there.
        self.uses: dict[str, dict] | None = {} if any(
            isinstance(op, ir.Destroy) for t in stream.threads for op in t.ops) else None
        self.issuing: Clock = ()  # the submit clock of the batch being run
        self.issuing_order: tuple[int, int] = (0, 0)  # its submit's thread and op position
        self.uids = count()

    def place(self, buffers: Iterable[ir.Buffer]) -> None:
        """Place `buffers` (all in the index, their roots placed or among them): a range map for each unaliased
        one, then each one's memory kind and placement (buffer, root, offset in root, root's range map)."""
        buffers = list(buffers)
        for b in buffers:
            if b.alias_of is None:
                self.memories[b.id] = RangeMap(b.size, b.memory in _HOST_VISIBLE)
        for b in buffers:
            root, offset = self.index.root(b.id)
            self.memory_kind[b.id] = self.index.buffers[root].memory
            self.placement[b.id] = (b, root, offset, self.memories[root])

    # ---- findings ----------------------------------------------------------

    def report(self, kind: str, buffer: str | None, lo: int | None, hi: int | None, first: Access | None,
               second: Access | None, scope: int | None, words: tuple[str, str], racing: bool = False,
               ops: tuple[str, ...] | None = None) -> None:
        """A finding of the operation `scope` (the uid of the access being checked; None: a misuse) and its
        message and fix (`words`)."""
        self.reported += 1
        self.findings.add(kind, buffer, lo, hi, first, second, scope, racing, False, words, ops)

    def hazard(self, kind: str, buf: ir.Buffer, lo: int, hi: int, e: Access, x: Access) -> None:
        """A RAW, WAW or WAR of e then x on bytes [lo, hi) of buf, worded when read (findings.Findings). A racing
        pair (ordered neither way) is named in stream order, earlier submitted first, whichever of the two this
        schedule ran first."""
        scope = x.uid
        racing = e.agent != x.agent and self.racing(e, x)  # most hazards are of one queue: no call
        if racing and _stream_order(x) < _stream_order(e):
            e, x, kind = x, e, {"raw": "war", "war": "raw"}.get(kind, kind)
        # The fix of two host threads' accesses depends on whether they are ordered now (fixes.memory_dependency).
        hosts_ordered = e.family is None and x.family is None and self.agents[x.agent].clock[e.agent] > e.pos
        self.reported += 1
        self.findings.add(kind, buf.id, lo, hi, e, x, scope, racing, hosts_ordered)

    def result(self) -> Findings:
        return self.findings

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
                                       self.states(e, *(span or self._root_range(e)), agent.release_pos[i],
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

    def through(self, a: Access | BarrierEntry) -> str | None:
        return self.wording.through(a)

    def _root_range(self, e: Access) -> tuple[str, int, int]:
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

    def racing(self, e: Access, x: Access) -> bool:
        """Whether the accesses of two agents are ordered neither way: no execution dependency (7.1)."""
        return bool(self.unordered(e, x, *self._root_range(x), None))

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

    def submission_clock(self, clock: Clock) -> Clock:
        """A submission's clock: spec "Availability, Visibility, and Domain Operations", vkQueueSubmit performs a
        memory domain operation from host to device, so every host op before it has its writes available to
        the device (a host signal's clock orders execution only)."""
        out = list(clock)
        for t in self.threads:
            out[t.memory_lane] = max(out[t.memory_lane], out[t.index])
        return tuple(out)

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

    def make_host_writes_available(self, queue: QueueAgent, entry: BarrierEntry, ref: str, label: str | None) -> None:
        """A barrier with host/host_write in its first access scope: the memory model's domain operation from host
        to device for the host writes in its range that happen-before its first scope, read as those before a
        wait or submission earlier on its queue (docs/format.md, "Readings"). A proxy write at the barrier
        stands for them, so later barriers, signals and waits order it like a device write."""
        proxy = Access(queue.index, queue.pos - 1, "host", (), "host_write", ref, "", next(self.uids), label,
                       queue.family, len(queue.log.all_kinds) - 1)
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

    # ---- accesses ----------------------------------------------------------

    def issued_after(self, x: Access, destroyed: Access) -> bool:
        """Whether x's host op (its submit, for a command) comes after the destroy: host clocks count a
        thread's ops from 1."""
        if x.agent == destroyed.agent:
            return x.pos > destroyed.pos
        clock = self.issuing if x.family is not None else self.agents[x.agent].clock
        return clock[destroyed.agent] > destroyed.pos + 1

    def access(self, x: Access, lo: int, hi: int, compare: bool = True, record: bool = True) -> bool:
        """Compare x with the most recent write and the reads since (buffer-relative [lo, hi)), then record it:
        x becomes the most recent write of its bytes, or one of the reads since (one per agent and stage).
        False when x is not to be recorded (a use after its buffer's destroy)."""
        if compare:
            destroyed = self.destroyed and self.destroyed.get(x.buffer)
            if destroyed:
                if self.issued_after(x, destroyed):
                    self.report("use_after_destroy", x.buffer, lo, hi, destroyed, x, x.uid,
                                (f"{x.ref} uses {x.buffer!r} after {destroyed.ref} destroyed it",
                                 f"remove {x.ref} or move the destroy of {x.buffer!r} ({destroyed.ref}) after it"))
                    return False
                # Submitted before the destroy, run after it in this schedule: pending at the destroy.
                self.report("use_after_destroy", x.buffer, lo, hi, x, destroyed, x.uid,
                            (f"{destroyed.ref} destroys {x.buffer!r} while {x.ref} may still use it",
                             fixes.destroy(x, destroyed.ref)), racing=True)
            if self.uses is not None and x.family is not None:
                self.uses.setdefault(x.buffer, {})[(x.agent, x.stage)] = x
        if hi <= lo:
            return False  # no bytes: nothing to order
        buf, root, base, memory = self.placement[x.buffer]
        rlo, rhi = base + lo, base + hi
        segments = memory.span(rlo, rhi)
        if compare:
            for seg in segments:
                raw = bool(x.reads) and self.check_read(x, buf, root, base, seg)
                if x.write:
                    self.check_write(x, buf, root, base, seg, skip_waw=raw)
        if not record:
            return True
        if x.write:
            memory.overwrite(rlo, rhi, segments, x, x.family if buf.sharing == "exclusive" else None)
        else:
            for seg in segments:
                seg.reads = _with_read(seg.reads, x)
        return True

    def check_read(self, x: Access, buf: ir.Buffer, root: str, base: int, seg: Segment) -> bool:
        """Report what x's read of seg violates; True when it is a RAW."""
        w = seg.write
        if w is None:
            if not seg.initialized:
                self.report("uninitialized_read", x.buffer, seg.lo - base, seg.hi - base, None, x, x.uid,
                            (f"{x.ref} reads bytes of {x.buffer!r} that nothing wrote", fixes.uninitialized(x)))
            return False
        if w.uid == x.uid:
            return False
        if x.family is not None and buf.sharing == "exclusive" and seg.owner not in (None, x.family):
            message = (f"{x.ref} on family {x.family} reads bytes of exclusive {x.buffer!r} owned by family "
                       f"{seg.owner} without an ownership transfer")
            self.report("ownership_missing", x.buffer, seg.lo - base, seg.hi - base, w, x, x.uid,
                        (message, fixes.ownership(w, x, seg.owner)))
        elif x.family is not None and buf.sharing == "exclusive" and not self.after_acquire(x, root, seg):
            message = (f"{x.ref} reads bytes of exclusive {x.buffer!r} at {x.stage}, outside the second "
                       f"synchronization scope of the acquire that gave family {x.family} those bytes")
            self.report("ownership_missing", x.buffer, seg.lo - base, seg.hi - base, w, x, x.uid,
                        (message, fixes.acquire_stage(x)))
        bad = self.after_write(w, x, root, seg, x.reads)
        if not bad and x.family is None and w.family is not None and self.memory_kind[x.buffer] == "host_cached":
            # 7.1.3 and the vkInvalidateMappedMemoryRanges note: a host read of non-coherent memory needs an
            # invalidate too, after the host acquired a release that carries the barrier making w visible to it
            # (an invalidate before that barrier's domain operation makes nothing visible).
            thread = self.agents[x.agent]
            waited = thread.acquired_at(self.host_visibility(w, x, root, seg.lo, seg.hi, every=True)[1])
            if seg.invalidated.get(x.agent, -1) < waited:
                bad = [(seg.lo, seg.hi)]
        if not bad:
            return False
        for a, b in bad:
            self.hazard("raw", buf, a - base, b - base, w, x)
        return True

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

    def check_write(self, x: Access, buf: ir.Buffer, root: str, base: int, seg: Segment, skip_waw: bool) -> None:
        w = seg.write
        if w is not None and w.uid != x.uid and not skip_waw:
            for a, b in self.after_write(w, x, root, seg, (x.write,) if x.family is not None else None):
                self.hazard("waw", buf, a - base, b - base, w, x)
        for r in seg.reads:
            if r.uid == x.uid:
                continue
            for a, b in self.unordered(r, x, root, seg.lo, seg.hi, None):
                self.hazard("war", buf, a - base, b - base, r, x)

    # ---- host ops ----------------------------------------------------------

    def host_access(self, t: ThreadAgent, op: ir.HostAccess, ref: str) -> None:
        """Thread t's host access, flush or invalidate at t.pc, named `ref`."""
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

    # ---- commands ----------------------------------------------------------

    def run_command_buffer(self, queue: QueueAgent, cb: ir.CommandBuffer, submit: str) -> None:
        """Run cb's commands on queue (`submit`: the submit's reference). A resubmitted command buffer, after an
        execution that reported nothing, replays its plan (replay.py) instead."""
        compiled = self.compiled.get(id(cb))
        if compiled is not None and compiled[2]:
            self._replay(queue, cb, compiled[2], compiled[3], submit)
            return
        if compiled is None and self.replay and cb.id in self.index.resubmitted:
            compiled = self.compiled[id(cb)] = [cb, [self._step(cmd) for cmd in cb.commands], None, {}]
        steps = map(self._step, cb.commands) if compiled is None else compiled[1]
        reported, owner = self.reported, cb.id
        submit = submit if owner in self.index.resubmitted else None  # ir.StreamIndex.command_ref
        # The common case, without _run_accesses's set-up: accesses on separate memories, nothing destroyed.
        quick, uids = self.quick and not self.destroyed and self.uses is None, self.uids
        for i, (cmd, accesses, sharing) in enumerate(steps):
            queue.pos += 1
            if accesses is None:
                self.run_barrier(queue, cmd, format_ref(owner, i, submit))
            elif quick and not sharing:
                self._run_quick(queue, accesses, format_ref(owner, i, submit), next(uids), cmd.label)
            else:
                self._run_accesses(queue, cmd, format_ref(owner, i, submit), accesses, sharing)
        if compiled is not None and compiled[2] is None and self.reported == reported:
            compiled[2] = self._replayable(compiled[1]) and replay_plan(compiled[1], self.placement)

    def _step(self, cmd: ir.Command) -> tuple:
        """(cmd, its accesses or None for a barrier, whether two of them touch one memory)."""
        if isinstance(cmd, ir.Barrier):
            return cmd, None, False
        accesses = ACCESSES_BY_KIND[type(cmd)](cmd)
        return cmd, accesses, self._shares_memory(accesses)

    def _shares_memory(self, accesses: tuple[tuple, ...]) -> bool:
        """Whether two of a command's accesses touch one memory (buffer ids suffice without aliases; most
        commands have two accesses: one comparison)."""
        n = len(accesses)
        if n < 2:
            return False
        if self.aliased:
            return len({self.placement[a[3]][1] for a in accesses}) < n
        if n == 2:
            return accesses[0][3] == accesses[1][3]
        if n == 3:
            a, b, c = accesses[0][3], accesses[1][3], accesses[2][3]
            return a == b or a == c or b == c
        return len({a[3] for a in accesses}) < n

    def _replayable(self, steps: list[tuple]) -> bool:
        """Whether executions of a command buffer meet only what they record: no destroys in the stream (uses
        are kept per access), no barrier that acts on the range map (ownership, host writes made available)."""
        return self.uses is None and not any(accesses is None and any(self.barriers[id(cmd)][2:])
                                             for cmd, accesses, _ in steps)

    def _run_accesses(self, queue: QueueAgent, cmd: ir.Command, ref: str, accesses: tuple, sharing: bool) -> None:
        uid = next(self.uids)
        index, pos, label, family, first_barrier, issued = \
            queue.index, queue.pos, cmd.label, queue.family, len(queue.log.all_kinds), self.issuing_order
        if not sharing:  # no access sees another's record: compare and record each
            for stage, reads, write, buffer, lo, hi in accesses:
                self.access(Access(index, pos, stage, reads, write, ref, buffer, uid, label, family, first_barrier,
                                   issued), lo, hi)
            return
        # Every access of the command is compared before any is recorded (syncval's detect, then update): a
        # write through one binding is compared with the reads before another binding's read replaced them.
        compared = []
        for stage, reads, write, buffer, lo, hi in accesses:
            x = Access(index, pos, stage, reads, write, ref, buffer, uid, label, family, first_barrier, issued)
            if self.access(x, lo, hi, record=False):
                compared.append((x, lo, hi))
        for x, lo, hi in compared:
            self.access(x, lo, hi, compare=False)

    def _run_quick(self, queue: QueueAgent, accesses: tuple, ref: str, uid: int, label: str | None) -> None:
        """`access` of each of a command's accesses (uid, its reference and label) on separate memories, no buffer
        destroyed or to be, answered without the general comparison in the common case of one queue's clean
        work: the bytes one segment of a buffer not exclusive (no ownership), initialized, and every
        access there to compare with (the write; a write's, the reads too) of the queue and ordered before it
        by the first barrier after it alone, a global barrier whose answer is known (unordered's first test,
        BarrierLog.alone, which the general comparison fills). Any other access takes `access`, which would
        answer these the same: Checker(quick=False), which the tests compare with."""
        placement, log, agent, pos, family, issued = \
            self.placement, queue.log, queue.index, queue.pos, queue.family, self.issuing_order
        kinds, memo, is_global = log.all_kinds, log.alone, log.global_kind
        n = len(kinds)
        for stage, reads, write, buffer, lo, hi in accesses:
            x = Access(agent, pos, stage, reads, write, ref, buffer, uid, label, family, n, issued)
            buf, _, base, memory = placement[buffer]
            segments = memory.segments
            seg = segments[0]
            if len(segments) != 1 or seg.lo != base + lo or seg.hi != base + hi:  # not the whole memory
                segments = memory.span(base + lo, base + hi)
                seg = segments[0] if len(segments) == 1 else None
            if seg is None or buf.sharing == "exclusive":
                self.access(x, lo, hi)
                continue
            # Spec 7.1: a barrier whose scopes hold both accesses orders them (BarrierLog.orders_alone decided it).
            w = seg.write
            if w is None:
                quiet = not reads or seg.initialized
            elif w.agent != agent or w.first_barrier >= n or not is_global[kind := kinds[w.first_barrier]]:
                quiet = False
            else:
                quiet = (not reads or memo.get((kind, w.stage, w.write, stage, reads)) is True) and \
                    (not write or memo.get((kind, w.stage, w.write, stage, (write,))) is True)
            if quiet and write:
                for r in seg.reads:
                    if r.agent != agent or r.first_barrier >= n or not is_global[kind := kinds[r.first_barrier]] \
                            or memo.get((kind, r.stage, r.write, stage, None)) is not True:
                        quiet = False
                        break
            if not quiet:
                self.access(x, lo, hi)
            elif write:
                memory.overwrite(seg.lo, seg.hi, segments, x)
            else:
                seg.reads = _with_read(seg.reads, x)

    def _replay(self, queue: QueueAgent, cb: ir.CommandBuffer, plan: tuple, met: dict, submit: str) -> None:
        """One execution of cb by its replay plan: every barrier, and only the accesses the plan names. `met`:
        (command, item) -> (queue, write, owner) a read of the plan compared cleanly with in an execution."""
        base, reported, command_ref = queue.pos, self.reported, self.index.command_ref
        index, family, issued = queue.index, queue.family, self.issuing_order
        for i, cmd, items, quiet in plan:
            queue.pos = pos = base + i + 1
            if items is None:
                self.run_barrier(queue, cmd, None)
                continue
            fallback = self.reported != reported
            if quiet and not fallback:
                continue
            ref, uid, first_barrier, recorded = None, None, len(queue.log.all_kinds), []
            for j, ((stage, reads, write, buffer, lo, hi), mode, record) in enumerate(items):
                compare = mode == ALWAYS or (fallback and mode == DOMINATED)
                seen = None
                if compare and write is None:
                    # A read meets only the last write of its bytes: one this read met cleanly on this queue in an
                    # earlier execution is ordered before it still (clocks and barrier states only grow).
                    _, _, offset, memory = self.placement[buffer]
                    segments = memory.span(offset + lo, offset + hi)
                    if len(segments) == 1:
                        seen = (index, segments[0].write, segments[0].owner)
                        compare = met.get((i, j)) != seen
                if compare or record:
                    if uid is None:
                        uid, ref = next(self.uids), command_ref(cb.id, i, submit)
                    x = Access(index, pos, stage, reads, write, ref, buffer, uid, cmd.label, family, first_barrier,
                               issued)
                    if compare:
                        before = self.reported
                        self.access(x, lo, hi, record=False)
                        if seen is not None and self.reported == before:
                            met[i, j] = seen
                    if record:
                        recorded.append((x, lo, hi))
            for x, lo, hi in recorded:
                self.access(x, lo, hi, compare=False)
        queue.pos = base + len(cb.commands)

    def run_barrier(self, queue: QueueAgent, cmd: ir.Barrier, ref: str | None) -> None:
        """`ref` names the proxy of host writes the barrier makes available; None in a replay, which has no such
        barrier (Checker._replayable)."""
        compiled = self.barriers.get(id(cmd))
        if compiled is None:
            entries = compile_barrier(cmd, self.index)
            # Per entry, the clocks it reads and writes: its scopes restricted to what the queue tracks, the host
            # accesses of its destination, and its range (spec 7.7.2; None: global). Then the entries that make
            # host writes available and the buffer barriers that transfer ownership.
            compiled = self.barriers[id(cmd)] = (entries, tuple(
                (tuple(e.src_exec & queue.exec_clock.keys()), tuple(e.dst_exec & queue.exec_clock.keys()),
                 tuple(e.dst_scope & queue.vis_clock.keys()), tuple(a for s, a in e.dst_scope if s == "host"),
                 self._limit(e)) for e in entries),
                tuple(e for e in entries if makes_host_writes_available(e.src_stages, e.src_access)),
                tuple(bb for bb in cmd.buffers if transfers_ownership(bb.src_family, bb.dst_family)))
        entries, scopes, available, transfers = compiled
        queue.log.add(queue.pos, entries, id(cmd))
        for entry in available:
            self.make_host_writes_available(queue, entry, ref, cmd.label)
        if queue.settled.get(id(cmd)) != queue.epoch:
            self._barrier_clocks(queue, id(cmd), entries, scopes)
        for bb in transfers:
            self.ownership_transfer(queue, bb)

    def _barrier_clocks(self, queue: QueueAgent, key: int, entries: tuple, scopes: tuple) -> None:
        """Cross-agent dependencies chain through the barrier too (spec 7.1 "dependency chain"); entries of one
        barrier do not chain with each other (7.6), so every source clock is read before any is written. A
        barrier that changed nothing is settled at the queue's epoch: until the clocks change, it changes nothing."""
        exec_clock, vis_clock = queue.exec_clock, queue.vis_clock
        zero = (0,) * queue.clock_width
        before = []
        for src, *_ in scopes:
            clock = zero
            for s in src:
                clock = join(clock, exec_clock[s])
            before.append(clock)
        changed = False
        if len(self.queues) > 1 and (queue.host_vis or any(scope[3] for scope in scopes)):
            self._host_visibility(queue, entries, scopes, before)
            changed = True
        for (_, dst, pairs, _, limit), clock in zip(scopes, before):
            for s in dst:
                old = exec_clock[s]
                new = exec_clock[s] = join(old, clock)
                changed = changed or new != old
            # Spec 7.7.2: a buffer memory barrier's second access scope holds only its range.
            visible = vis_clock if limit is None else queue.range_vis.setdefault(limit, {})
            for pair in pairs:
                old = visible.get(pair, zero)
                new = visible[pair] = join(old, clock)
                changed = changed or new != old
        if changed:
            queue.epoch = next(EPOCHS)
        else:
            queue.settled[key] = queue.epoch

    def _limit(self, entry: BarrierEntry) -> tuple | None:
        """Spec 7.7.2: a buffer barrier's (root, lo, hi, buffer accesses must go through or None); None: global."""
        return None if entry.root is None else (entry.root, entry.lo, entry.hi, self.through(entry))

    def _host_visibility(self, queue: QueueAgent, entries: tuple, scopes: tuple, before: list[Clock]) -> None:
        """Spec 7.1.3 host access: a barrier with host_read or host_write in its destination makes the writes of
        the releases its first scope acquired visible to the host, at the stages its chain reaches (7.1). Only
        another queue's writes come through releases: a stream of one queue has nothing to record."""
        updates = []
        for entry, (*_, accesses, limit), clock in zip(entries, scopes, before):
            for key, by_stage in queue.host_vis.items():
                reached = [by_stage[s] for s in entry.src_exec if s in by_stage]
                if reached:
                    updates.append((key, entry.dst_exec, join_all(reached)))
            updates += [((access, limit), entry.dst_exec, clock) for access in accesses]
        for key, stages, clock in updates:
            by_stage = queue.host_vis.setdefault(key, {})
            for s in stages:
                by_stage[s] = join(by_stage.get(s, clock), clock)

    def ownership_transfer(self, queue: QueueAgent, bb: ir.BufferBarrier) -> None:
        """Spec 7.7.4: release on the source family, acquire on the destination family."""
        root, base = self.index.root(bb.buffer)
        for seg in self.memories[root].span(base + bb.offset, base + bb.offset + bb.size):
            if queue.family == bb.src_family:
                seg.released_to = bb.dst_family
            elif queue.family == bb.dst_family and seg.released_to == bb.dst_family:
                seg.owner, seg.released_to = bb.dst_family, None
                seg.acquired = (queue.index, queue.pos, second_execution_scope(bb.dst_stage))
