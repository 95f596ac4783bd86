"""The smallest synchronization that would order two accesses, as text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..model import ir
from .access import Access
from .barriers import in_wait, is_transition, stage_text
from .readings import Readings

__all__ = ["Wording", "acquire_stage", "destroy", "execution_dependency", "memory_dependency", "ownership",
           "uninitialized"]


@dataclass(frozen=True)
class Wording:
    """What a fix is worded from, apart from the checker's state: the agents' ids (queues and host threads, by
    index), each buffer's memory kind, the readings, and whether a buffer barrier covers only accesses through
    its own buffer (AccessState, access_state.py)."""

    agent_ids: tuple[str, ...]
    memory_kind: dict[str, str]
    readings: Readings
    by_buffer: bool
    images: Mapping[str, ir.Image] = field(default_factory=dict)  # the memories that are images, by id

    def through(self, a: Access) -> str | None:
        """The buffer through which a buffer barrier covers `a` (an access's or a barrier's); None: any buffer over
        its bytes (readings.buffer_barrier_covers_aliases, or no aliases)."""
        return a.buffer if self.by_buffer else None


def _where(wording: Wording, a: Access) -> str:
    agent = wording.agent_ids[a.agent]
    return f"queue {agent}" if a.family is not None else f"thread {agent}"


def _masks(a: Access) -> str:
    return f"{stage_text(a.stage)}/{'|'.join(_needs(a))}"


def memory_dependency(wording: Wording, w: Access, x: Access, hosts_ordered: bool) -> str:
    """RAW and WAW: spec 7.1 memory dependency, made available by w's stage and visible to x's. `hosts_ordered`:
    w and x are on host threads, x's having acquired w's op when the checker met the pair."""
    src = f"{w.stage}/{w.write}"
    noncoherent = wording.memory_kind[x.buffer] == "host_cached"  # coherence is the memory's: an alias follows it
    if w.agent == x.agent and is_transition(w.stage) and is_transition(x.stage):
        return _transitions(w, x)
    if w.agent == x.agent and in_wait(x.stage):
        return _before_wait(w, x, f"src {w.stage}/{w.write}")
    if w.agent == x.agent and is_transition(x.stage):
        return _transition_scope(w, x, f"src_stage {w.stage} and src_access {w.write}")
    if w.agent == x.agent and is_transition(w.stage) and x.family is not None:
        return _transition_scope(x, w, f"dst_stage {x.stage} and dst_access {'|'.join(_needs(x))}")
    if w.agent == x.agent and x.family is not None:
        # Spec 7.7.2: a buffer barrier covers accesses through its own buffer (readings): both must name it.
        one = wording.through(w) == wording.through(x)
        return (f"vkCmdPipelineBarrier2 between {w.ref} and {x.ref}: src {src} -> dst {_masks(x)}"
                + (f" ({'an image' if x.buffer in wording.images else 'a buffer'} barrier on {x.buffer!r} suffices)"
                   if one else " (a global memory barrier)"))
    if w.family is not None and x.family is not None:
        return _semaphore(wording, w, x)
    if w.family is not None:  # device write, host read or write
        host = "host_write" if x.write else "host_read"
        cached = " then vkInvalidateMappedMemoryRanges over the range," if noncoherent and not x.write else ""
        # Spec 7.4.1: a semaphore signal holds the host barrier only at all_commands, and only under that reading.
        signal = " or a semaphore signalled at all_commands" if wording.readings.all_commands_includes_host else ""
        return (f"vkCmdPipelineBarrier2 after {w.ref}: src {src} -> dst host/{host}, then wait for its "
                f"fence{signal} on {_where(wording, x)},{cached} before {x.ref}")
    if x.family is not None:  # host write, device read
        if noncoherent:
            return f"vkFlushMappedMemoryRanges over the range after {w.ref}, before the submit of {x.ref}"
        return (f"submit {x.ref} after {w.ref} on {_where(wording, w)} (order the threads with a semaphore if "
                f"they differ), or record vkCmdPipelineBarrier2 before {x.ref}: src host/host_write -> dst "
                f"{_masks(x)}, in a batch that waits for a signal made after {w.ref}")
    if noncoherent and hosts_ordered:  # non-coherent memory
        return (f"vkFlushMappedMemoryRanges over the range after {w.ref}, before the signal {x.ref} waits for"
                + ("" if x.write else f", and vkInvalidateMappedMemoryRanges after that wait, before {x.ref}"))
    return f"order {_where(wording, w)} before {x.ref} with a semaphore or fence the host waits on"


def execution_dependency(wording: Wording, r: Access, x: Access) -> str:
    """WAR: spec 7.1 an execution dependency suffices."""
    if r.agent == x.agent and is_transition(r.stage) and is_transition(x.stage):
        return _transitions(r, x)
    if r.agent == x.agent and in_wait(x.stage):
        return _before_wait(r, x, f"src_stage {r.stage}")
    if r.agent == x.agent and is_transition(x.stage):
        return _transition_scope(r, x, f"src_stage {r.stage}")
    if r.agent == x.agent and x.family is not None:
        return f"vkCmdPipelineBarrier2 between {r.ref} and {x.ref}: src_stage {r.stage} -> dst_stage {x.stage}"
    if r.family is not None and x.family is None:
        return f"wait for the fence or semaphore signalled after {r.ref} before {x.ref}"
    if r.family is not None:
        return _semaphore(wording, r, x)
    return f"submit {x.ref} only after {r.ref} on {_where(wording, r)}"


def _semaphore(wording: Wording, e: Access, x: Access) -> str:
    """Spec 7.4: a semaphore from e's queue to x's; a layout transition is in the scope of all_commands alone (7.6:
    "all operations performed by all commands"), so a signal after one, or a wait before one, names it."""
    signal = " at all_commands" if is_transition(e.stage) else ""
    stage = "all_commands" if is_transition(x.stage) else x.stage
    return (f"signal a semaphore{signal} after {e.ref} on {_where(wording, e)} and wait on it before {x.ref} "
            f"on {_where(wording, x)} with a stage mask that includes {stage}")


def _before_wait(other: Access, transition: Access, src: str) -> str:
    """Spec 7.5 and 7.7.4: a wait's layout transition comes after what its event's set ordered, which need not hold
    `other`; a barrier before the wait whose second scope holds every later transition (7.6: all_commands) does."""
    return (f"vkCmdPipelineBarrier2 between {other.ref} and {transition.ref}: {src} -> dst_stage all_commands: the "
            f"wait's layout transition writes the image")


def _transition_scope(other: Access, transition: Access, scope: str) -> str:
    """Spec 7.7.4: an image barrier's layout transition happens after the barrier's first scopes and before its
    second: they must hold the other access."""
    return (f"give the image barrier of {transition.ref} on {transition.buffer!r} {scope}: its layout transition "
            f"writes the image")


def _transitions(e: Access, x: Access) -> str:
    """Two layout transitions (7.7.4): each makes its write available and sees what is, so only an execution
    dependency chain from the first barrier's second scope to the second's first is missing."""
    return (f"name one stage in both the dst_stage of the image barrier of {e.ref} and the src_stage of that of "
            f"{x.ref} on {x.buffer!r}: their layout transitions write the image")


def event_race(wording: Wording, event: str, e: Access, x: Access) -> tuple[str, str]:
    """Two operations on one event ordered neither way (7.5's note to vkCmdWaitEvents2): their message, and the
    execution dependency that orders them. An operation is in a first synchronization scope only of all_commands
    (or bottom_of_pipe): "all operations performed by all commands" (7.6)."""
    first, second = e.reads[0], x.reads[0]
    message = (f"{x.ref} ({second}) changes the state of event {event!r} with no execution dependency on "
               f"{e.ref} ({first}): which comes last is a race")
    if e.family is None and x.family is None:
        fix = f"order {e.ref} before {x.ref} on the host (one thread, or a semaphore or fence between the threads)"
    elif e.family is None:
        fix = f"call {e.ref} before the submission of {x.ref}, or signal a semaphore after it that the batch waits on"
    elif x.family is None:
        fix = f"wait for the fence or semaphore signalled after {e.ref} (at all_commands) before {x.ref}"
    elif e.agent == x.agent:
        fix = (f"vkCmdPipelineBarrier2 between {e.ref} and {x.ref}: src_stage all_commands -> dst_stage "
               f"all_commands (or a stage of {x.ref}'s stage mask), or all_commands in the stage mask of {x.ref}")
    else:
        fix = (f"signal a semaphore at all_commands after {e.ref} on {_where(wording, e)} and wait on it before "
               f"{x.ref} on {_where(wording, x)} at all_commands (or a stage of {x.ref}'s stage mask)")
    return message, fix


def _needs(x: Access) -> tuple[str, ...]:
    return x.reads + ((x.write,) if x.write else ())


def uninitialized(x: Access) -> str:
    return f"vkCmdFillBuffer or a write of {x.buffer!r} before {x.ref}"


def ownership(w: Access, x: Access, owner: int, image: bool = False) -> str:
    return (f"a queue family ownership transfer of {x.buffer!r}: {'an image' if image else 'a buffer'} barrier "
            f"with src_family {owner} "
            f"dst_family {x.family} on a queue of family {owner} after {w.ref}, and the same barrier on "
            f"a queue of family {x.family} before {x.ref}")


def acquire_stage(x: Access) -> str:
    return f"add {x.stage} to the dst_stage of the acquire barrier of {x.buffer!r} before {x.ref}"


def destroy(e: Access, destroy_ref: str) -> str:
    return f"wait for the fence or semaphore signalled after {e.ref} (or vkDeviceWaitIdle) before {destroy_ref}"
