"""Agents and their vector clocks (syncval's and ThreadSanitizer's approach): a queue or a host thread, each
with a clock entry counting the releases of every agent it has acquired. A queue keeps its clocks per stage
(execution) and per (stage, access) (visibility), since semaphore waits and barriers reach only the stages in
their scopes; its releases (semaphore and fence signals, idle waits) are numbered on lanes (spec 7.2 signal
operation order). The checker (engine.py) walks a stream over these; what they order is asked in access_state.py."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import count

from ..model import ir
from ..model.accesses import DEVICE_ACCESSES
from .barriers import BarrierLog
from .scopes import ALL_DEVICE, HOST

__all__ = ["EPOCHS", "FENCE_SCOPE", "Clock", "QueueAgent", "ThreadAgent", "acquired_releases", "join", "join_all"]

Clock = tuple[int, ...]
# Spec 7.3 fence signal: every command earlier in submission order, no stage mask (host-stage barriers too).
FENCE_SCOPE = ALL_DEVICE | HOST
EPOCHS = count(1)  # QueueAgent.epoch


def join(a: Clock, b: Clock) -> Clock:
    if a is b or a == b:
        return a
    return tuple(map(max, a, b))


def join_all(clocks) -> Clock:
    clocks = list(clocks)
    return tuple(map(max, *clocks)) if len(clocks) > 1 else clocks[0]


@dataclass(eq=False)
class QueueAgent:
    """A queue's clock entries: one per signal of its widest batch (`lanes`, the first is `index`) for what
    its semaphore signals release, and `fence_lane` for what its fence signals and idle waits release (all
    numbered on one counter of releases). Spec 7.2 "signal operation order": a fence signal orders every
    earlier signal of its queue; a semaphore signal orders the semaphore signals of earlier batches, never a
    fence signal nor another signal of its own batch; one entry could not tell them apart."""

    index: int
    id: str
    device: str
    family: int
    clock_width: int
    lanes: tuple[int, ...]
    fence_lane: int
    log: BarrierLog = field(default_factory=BarrierLog)
    pos: int = 0
    # Numbers as arrays: check/incremental.py's forks copy them as memory, not as one int object each.
    release_pos: array = field(default_factory=lambda: array("q"))
    release_scope: list[frozenset[str]] = field(default_factory=list)
    release_lane: array = field(default_factory=lambda: array("q"))
    lane_releases: dict[int, array] = field(default_factory=dict)  # lane -> its releases' indexes, ascending
    # Spec 7.7.2: what a buffer memory barrier made visible of other agents' releases, per (root, lo, hi, buffer):
    # buffer None, or the only buffer through which accesses see it (readings.buffer_barrier_covers_aliases).
    range_vis: dict = field(default_factory=dict)
    # Spec 7.1.3 host access: (host access, (root, lo, hi, buffer) or None) -> {stage: clock}: the releases of others
    # whose writes a barrier here made visible to that host access, by the stages the barrier's chain reaches.
    host_vis: dict = field(default_factory=dict)
    host_releases: list = field(default_factory=list)  # (release number, {(host access, range): clock carried})
    # Per host release, the join of what it and every earlier one carried: ascending in each lane, so the first
    # that can carry a given release is found by bisection, not by walking a long run's releases.
    host_reach: list[Clock] = field(default_factory=list)
    # The clocks' version (exec_clock, vis_clock, range_vis, host_vis), and per barrier command the version at
    # which it last changed nothing (Checker._barrier_clocks). Versions come from one counter (EPOCHS), so that
    # a copy of the agent sharing `settled` never takes a version for other clocks.
    epoch: int = 0
    settled: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        zero = (0,) * self.clock_width
        self.exec_clock = {s: zero for s in sorted(ALL_DEVICE)}
        self.vis_clock = {pair: zero for pair in DEVICE_ACCESSES}
        # Everything its waits and submissions acquired: a barrier with `host` in its source stage mask has
        # the host operations before them in its first scope (docs/format.md, "Readings").
        self.host_clock = zero
        self.last_clock = zero  # the join of the clocks the latest signals of earlier batches carried

    def _release(self, scope: frozenset[str], lane: int) -> tuple[int, list[int]]:
        self.release_pos.append(self.pos)
        self.release_scope.append(scope)
        self.release_lane.append(lane)
        self.lane_releases.setdefault(lane, array("q")).append(len(self.release_pos) - 1)
        clock = (0,) * self.clock_width
        for s in scope & self.exec_clock.keys():
            clock = join(clock, self.exec_clock[s])
        k = len(self.release_pos)
        carried = {key: join_all(by_stage[s] for s in scope if s in by_stage)
                   for key, by_stage in self.host_vis.items() if scope & by_stage.keys()}
        if carried:
            self.host_releases.append((k, carried))
            reach = join_all(carried.values())
            self.host_reach.append(join(self.host_reach[-1], reach) if self.host_reach else reach)
        return k, list(clock)

    def signal_semaphores(self, scopes: list[frozenset[str]]) -> list[Clock]:
        """The clocks the semaphore signals of one batch carry (first synchronization scopes `scopes`): spec
        7.4.1, each happens-after every signal of earlier batches, so after all that happened before them
        (their clocks, not only their release numbers), and is unordered with the others of its batch."""
        earlier = self.last_clock
        out = []
        for lane, scope in zip(self.lanes, scopes):
            k, clock = self._release(scope, lane)
            clock = list(map(max, clock, earlier))
            clock[lane] = k
            out.append(tuple(clock))
        if out:  # each holds the earlier ones: the batch's join is the new join
            self.last_clock = join_all(out)
        return out

    def signal_fence(self) -> Clock:
        """A fence signal or an idle wait: spec 7.2, ordered after every semaphore signal of the queue so far, and so
        after all that happened before them."""
        k, clock = self._release(FENCE_SCOPE, self.fence_lane)
        clock = list(map(max, clock, self.last_clock))
        clock[self.fence_lane] = k
        return tuple(clock)

    def visible_clock(self, stage: str, need: tuple[str, ...]) -> Clock:
        """What is visible to every access of `need` at `stage`: the least of their visibility clocks."""
        clock = self.vis_clock[(stage, need[0])]
        for acc in need[1:]:
            clock = tuple(map(min, clock, self.vis_clock[(stage, acc)]))
        return clock

    def acquire(self, clock: Clock, stages: frozenset[str], host_ops: bool = True) -> None:
        """Spec 7.4.2: a semaphore wait is a memory dependency for the stages in its scope. `host_ops`: a later
        barrier with `host` in its source stages holds the host operations before it (the reading
        host_barrier_after_wait)."""
        self.epoch = next(EPOCHS)
        if host_ops:
            self.host_clock = join(self.host_clock, clock)
        for s in stages:
            if s in self.exec_clock:
                self.exec_clock[s] = join(self.exec_clock[s], clock)
        for pair in DEVICE_ACCESSES:
            if pair[0] in stages:
                self.vis_clock[pair] = join(self.vis_clock[pair], clock)


@dataclass(eq=False)
class ThreadAgent:
    index: int
    id: str
    ops: tuple[ir.HostOp, ...]
    clock: Clock
    memory_lane: int  # its clock entry for its host writes made available to the device domain
    pc: int = 0
    # agent -> (clock values, the op position of each): arrays, which a fork (check/incremental.py) copies as memory
    acquired: dict = field(default_factory=dict)

    def acquire(self, clock: Clock) -> None:
        new = join(self.clock, clock)
        if new is not self.clock:
            for agent, (old, value) in enumerate(zip(self.clock, new)):
                if value > old:
                    values, positions = self.acquired.setdefault(agent, (array("q"), array("q")))
                    values.append(value)
                    positions.append(self.pc)
            self.clock = new

    def acquired_at(self, needs: list[tuple[int, int]]) -> int:
        """The op position at which this thread first acquired one of `needs` ((clock entry, value) pairs)."""
        found = self.pc
        for agent, least in needs:
            # Per agent, values strictly increase (acquire): the first >= least is found by bisection.
            values, positions = self.acquired.get(agent, ((), ()))
            i = bisect_left(values, least)
            if i < len(values):
                found = min(found, positions[i])
        return found


def acquired_releases(queue: QueueAgent, clock: Clock, pos: int) -> list[int]:
    """Indexes of the releases of `queue` from position `pos` on that `clock` acquired (spec 7.2 "signal operation
    order": acquiring one acquires those its lanes hold). Of the fence signals only the last: its first scope
    holds every earlier release and barrier. Looked up per lane, not walked: a long run releases at every submit."""
    start = bisect_left(queue.release_pos, pos)
    out = []
    for lane, indexes in queue.lane_releases.items():
        if lane == queue.fence_lane:
            if clock[lane] > start:  # its last acquired: clock[lane] - 1
                out.append(clock[lane] - 1)
        else:
            out += indexes[bisect_left(indexes, start):bisect_left(indexes, clock[lane])]
    return sorted(out)
