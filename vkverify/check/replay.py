"""A resubmitted command buffer's replay plan: which of its accesses an execution must compare and record.

Within one execution of a command buffer nothing else runs on its queue and no other agent acts (a batch
runs whole), so how its accesses meet each other is fixed by its contents alone (its own barriers
between same-queue positions; spec 7.6). Once one execution reported nothing, every execution's
comparisons among its own accesses are clean, and a later execution needs only (syncval's recorded
access context, replayed at submission):

- ALWAYS: a comparison with what came before the command buffer (a byte no earlier access of it wrote);
- DOMINATED: a read whose bytes an earlier read of it, at the same stage, of the same accesses, through the
  same buffer, already compared with the same earlier write: clocks and barrier states only grow, so it is
  ordered where that one was; compared all the same once the execution reported something (a finding
  names each access);
- records of what the end state holds (the last write of each byte, the reads since, one per stage) and of
  what a compared access meets.

An execution that reported hazards among the command buffer's own accesses makes a plan too: what each of its
NEVER accesses reported, the hazards that every execution's comparisons among its own accesses report again,
goes with the access, and a later execution repeats those findings, named by its own references, in place of
the comparison (Checker._replay). Such an access meets only the command buffer's accesses of the same execution
(a byte an earlier access of it wrote), and their order is that of its barriers between them, so what it
reports is fixed by the command buffer's contents: which access and bytes, not which execution.

The plan is built on a private RangeMap per memory whose segments hold (command, access) keys, not
accesses; it is keyed by the command buffer object (immutable IR), so it cannot go stale.
"""

from __future__ import annotations

from bisect import bisect_left

from .rangemap import RangeMap

__all__ = ["ALWAYS", "DOMINATED", "NEVER", "PlanStep", "replay_plan"]

NEVER, DOMINATED, ALWAYS = 0, 1, 2

# One command of a plan: its index in the command buffer, the command, None for a barrier or
# (access (command_accesses' tuple), mode, record, repeated, cuts) per access it compares, records, repeats
# the findings of (`repeated`: a NEVER access's, as `replay_plan` was given them) or whose bytes cut the range map
# (`cuts`: a NEVER access's), and whether those are only DOMINATED reads not recorded.
PlanStep = tuple[int, object, tuple | None, bool]


def replay_plan(steps: list[tuple], placement: dict,
                reported: dict[tuple[int, int], tuple | None] | None = None) -> tuple[PlanStep, ...] | None:
    """`steps`: (command, accesses or None for a barrier, sharing) per command, as Checker runs them;
    `placement`: buffer -> (buffer, root, offset in root, root's RangeMap); `reported`: (command, access) -> what
    its comparison reported in an execution, None where that cannot be repeated (then no plan: None), absent
    where nothing (None: an execution that reported nothing).

    A finding's message gives the bytes of the segment it was first reported on, so an execution splits the range
    map where a comparison would: a NEVER access that the plan names splits it at its bytes, and the plan names
    each that cuts a segment (inside the bytes the command buffer wrote, the range map's cuts are its own
    accesses'); a plan that repeats findings compares every DOMINATED read too (Checker._replay)."""
    repeats = reported is not None
    reported = reported or {}
    maps: dict[str, RangeMap] = {}
    modes: dict[tuple[int, int], int] = {}
    needed: set[tuple[int, int]] = set()
    splits: set[tuple[int, int]] = set()  # accesses whose bytes an execution's range map is cut at first
    for i, (_, accesses, _) in enumerate(steps):
        if accesses is None:
            continue
        placed = []
        # Every access of a command is compared before any is recorded (Checker._run_accesses).
        for j, (stage, reads, write, buffer, lo, hi, *_) in enumerate(accesses):
            if hi <= lo:
                continue  # no bytes: nothing compared or recorded
            _, root, base, memory = placement[buffer]
            own = maps.get(root)
            if own is None:
                own = maps[root] = RangeMap(memory.segments[-1].hi, False)
            if not (_cut(own, base + lo) and _cut(own, base + hi)):
                splits.add((i, j))
            segments = own.span(base + lo, base + hi)
            modes[i, j] = mode = _mode(segments, stage, reads, write, buffer)
            if mode == ALWAYS:  # what it meets of this command buffer: the write, for a write the reads since
                needed.update(s.write for s in segments if s.write is not None)
                if write:
                    needed.update(r[0] for s in segments for r in s.reads)
            placed.append(((i, j), stage, reads, write, buffer, own, base + lo, base + hi))
        for key, stage, reads, write, buffer, own, lo, hi in placed:
            segments = own.span(lo, hi)
            if write:
                own.overwrite(lo, hi, segments, key)
            else:  # one read per stage, as Checker.access keeps one per (agent, stage)
                for s in segments:
                    s.reads = (*(r for r in s.reads if r[1] != stage), (key, stage, reads, buffer))
    record = needed | {k for own in maps.values() for s in own.segments
                       for k in ((s.write,) if s.write is not None else ()) + tuple(r[0] for r in s.reads)}
    plan = []
    for i, (cmd, accesses, _) in enumerate(steps):
        if accesses is None:
            plan.append((i, cmd, None, False))
            continue
        items = []
        for j, access in enumerate(accesses):
            mode = modes.get((i, j))
            repeated = reported.get((i, j), ()) if mode == NEVER else ()
            if repeated is None:
                return None
            cuts = mode == NEVER and (i, j) in splits
            if mode is not None and (mode != NEVER or (i, j) in record or repeated or cuts):
                items.append((access, ALWAYS if repeats and mode == DOMINATED else mode, (i, j) in record, repeated,
                              cuts))
        if items:
            plan.append((i, cmd, tuple(items), all(mode == DOMINATED and not record for _, mode, record, *_ in items)))
    return tuple(plan)


def _cut(own: RangeMap, at: int) -> bool:
    """Whether `own`'s segments are cut at byte `at` (or end there)."""
    i = bisect_left(own.starts, at)
    return i < len(own.starts) and own.starts[i] == at or at >= own.segments[-1].hi


def _mode(segments: list, stage: str, reads: tuple, write: str | None, buffer: str) -> int:
    """When an execution compares an access meeting `segments` of the command buffer's own accesses."""
    if all(s.write is not None for s in segments):
        return NEVER
    if write is None and all(s.write is None and any(r[1:] == (stage, reads, buffer) for r in s.reads)
                             for s in segments):
        return DOMINATED
    return ALWAYS
