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

The plan is built on a private RangeMap per memory whose segments hold (command, access) keys, not
accesses; it is keyed by the command buffer object (immutable IR), so it cannot go stale.
"""

from __future__ import annotations

from .rangemap import RangeMap

__all__ = ["ALWAYS", "DOMINATED", "NEVER", "PlanStep", "replay_plan"]

NEVER, DOMINATED, ALWAYS = 0, 1, 2

# One command of a plan: its index in the command buffer, the command, None for a barrier or
# ((stage, reads, write, buffer, lo, hi), mode, record) per access it compares or records, and whether
# those are only DOMINATED reads not recorded.
PlanStep = tuple[int, object, tuple | None, bool]


def replay_plan(steps: list[tuple], placement: dict) -> tuple[PlanStep, ...]:
    """`steps`: (command, accesses or None for a barrier, sharing) per command, as Checker runs them;
    `placement`: buffer -> (buffer, root, offset in root, root's RangeMap)."""
    maps: dict[str, RangeMap] = {}
    modes: dict[tuple[int, int], int] = {}
    needed: set[tuple[int, int]] = set()
    for i, (_, accesses, _) in enumerate(steps):
        if accesses is None:
            continue
        placed = []
        # Every access of a command is compared before any is recorded (Checker._run_accesses).
        for j, (stage, reads, write, buffer, lo, hi, _) in enumerate(accesses):
            if hi <= lo:
                continue  # no bytes: nothing compared or recorded
            _, root, base, memory = placement[buffer]
            own = maps.get(root)
            if own is None:
                own = maps[root] = RangeMap(memory.segments[-1].hi, False)
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
        items = tuple((access, modes[i, j], (i, j) in record) for j, access in enumerate(accesses)
                      if (i, j) in modes and (modes[i, j] != NEVER or (i, j) in record))
        if items:
            plan.append((i, cmd, items, all(mode == DOMINATED and not record for _, mode, record in items)))
    return tuple(plan)


def _mode(segments: list, stage: str, reads: tuple, write: str | None, buffer: str) -> int:
    """When an execution compares an access meeting `segments` of the command buffer's own accesses."""
    if all(s.write is not None for s in segments):
        return NEVER
    if write is None and all(s.write is None and any(r[1:] == (stage, reads, buffer) for r in s.reads)
                             for s in segments):
        return DOMINATED
    return ALWAYS
