"""The smallest synchronization that would order two accesses, as text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .access import Access
from .readings import Readings


class CheckerFacts(Protocol):
    """What a fix is worded from: the checker's agents (queues and host threads, by index: `id`, `clock`), each
    buffer's memory kind, the readings, and through which buffer a buffer barrier covers an access."""

    agents: Sequence
    memory_kind: dict[str, str]
    readings: Readings

    def through(self, a: Access) -> str | None: ...


def _where(checker: CheckerFacts, a: Access) -> str:
    agent = checker.agents[a.agent]
    return f"queue {agent.id}" if a.family is not None else f"thread {agent.id}"


def _masks(a: Access) -> str:
    accesses = a.reads + ((a.write,) if a.write else ())
    return f"{a.stage}/{'|'.join(accesses)}"


def memory_dependency(checker: CheckerFacts, w: Access, x: Access) -> str:
    """RAW and WAW: spec 7.1 memory dependency, made available by w's stage and visible to x's."""
    src = f"{w.stage}/{w.write}"
    noncoherent = checker.memory_kind[x.buffer] == "host_cached"  # coherence is the memory's: an alias follows it
    if w.agent == x.agent and x.family is not None:
        # Spec 7.7.2: a buffer barrier covers accesses through its own buffer (readings): both must name it.
        one = checker.through(w) == checker.through(x)
        return (f"vkCmdPipelineBarrier2 between {w.ref} and {x.ref}: src {src} -> dst {_masks(x)}"
                + (f" (a buffer barrier on {x.buffer!r} suffices)" if one else " (a global memory barrier)"))
    if w.family is not None and x.family is not None:
        return (f"signal a semaphore after {w.ref} on {_where(checker, w)} and wait on it before {x.ref} "
                f"on {_where(checker, x)} with a stage mask that includes {x.stage}")
    if w.family is not None:  # device write, host read or write
        host = "host_write" if x.write else "host_read"
        cached = " then vkInvalidateMappedMemoryRanges over the range," if noncoherent and not x.write else ""
        # Spec 7.4.1: a semaphore signal holds the host barrier only at all_commands, and only under that reading.
        signal = " or a semaphore signalled at all_commands" if checker.readings.all_commands_includes_host else ""
        return (f"vkCmdPipelineBarrier2 after {w.ref}: src {src} -> dst host/{host}, then wait for its "
                f"fence{signal} on {_where(checker, x)},{cached} before {x.ref}")
    if x.family is not None:  # host write, device read
        if noncoherent:
            return f"vkFlushMappedMemoryRanges over the range after {w.ref}, before the submit of {x.ref}"
        return (f"submit {x.ref} after {w.ref} on {_where(checker, w)} (order the threads with a semaphore if "
                f"they differ), or record vkCmdPipelineBarrier2 before {x.ref}: src host/host_write -> dst "
                f"{_masks(x)}, in a batch that waits for a signal made after {w.ref}")
    if noncoherent and checker.agents[x.agent].clock[w.agent] > w.pos:  # ordered host threads, non-coherent memory
        return (f"vkFlushMappedMemoryRanges over the range after {w.ref}, before the signal {x.ref} waits for"
                + ("" if x.write else f", and vkInvalidateMappedMemoryRanges after that wait, before {x.ref}"))
    return f"order {_where(checker, w)} before {x.ref} with a semaphore or fence the host waits on"


def execution_dependency(checker: CheckerFacts, r: Access, x: Access) -> str:
    """WAR: spec 7.1 an execution dependency suffices."""
    if r.agent == x.agent and x.family is not None:
        return f"vkCmdPipelineBarrier2 between {r.ref} and {x.ref}: src_stage {r.stage} -> dst_stage {x.stage}"
    if r.family is not None and x.family is None:
        return f"wait for the fence or semaphore signalled after {r.ref} before {x.ref}"
    if r.family is not None:
        return (f"signal a semaphore after {r.ref} on {_where(checker, r)} and wait on it before {x.ref} "
                f"on {_where(checker, x)} with a stage mask that includes {x.stage}")
    return f"submit {x.ref} only after {r.ref} on {_where(checker, r)}"


def uninitialized(x: Access) -> str:
    return f"vkCmdFillBuffer or a write of {x.buffer!r} before {x.ref}"


def ownership(w: Access, x: Access, owner: int) -> str:
    return (f"a queue family ownership transfer of {x.buffer!r}: a buffer barrier with src_family {owner} "
            f"dst_family {x.family} on a queue of family {owner} after {w.ref}, and the same barrier on "
            f"a queue of family {x.family} before {x.ref}")


def destroy(e: Access, destroy_ref: str) -> str:
    return f"wait for the fence or semaphore signalled after {e.ref} (or vkDeviceWaitIdle) before {destroy_ref}"
