"""One access the checker compares: a command's or a host op's reads and write of some bytes, at one stage, on one
agent (a queue or a host thread). Apart from the checker so that what words a finding's fix (fixes.py) needs
no more of the checker than its facts."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Access"]


@dataclass(slots=True, eq=False)
class Access:
    agent: int
    pos: int  # position on the agent: queue command counter or host op index
    stage: str
    reads: tuple[str, ...]  # access names
    write: str | None
    ref: str
    buffer: str
    uid: int  # the command execution or host op performing it
    label: str | None
    family: int | None  # queue family; None for host
    first_barrier: int = 0  # on a queue: index in its BarrierLog of the first barrier recorded after this access
    issued: tuple[int, int] = (0, 0)  # the thread and op position of its submit (or of itself, on the host)
    memo: tuple | None = None  # (lo, hi, end, pieces, write) of the last `AccessState.states` query
    ordered: set | None = None  # (agent, stage, need, lo, hi) already ordered after this access
    fact: int = -1  # its facts' index in the run's findings (findings.Findings), once it is in one; -1 before
    atomic: bool = False  # made by a shader's atomic operations (an "atomic" binding)
    marker: frozenset[str] | None = None  # a buffer marker write's: the stages it names (rules.marker_writes_ordered)
