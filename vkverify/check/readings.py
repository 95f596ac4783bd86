"""Readings of what the Vulkan spec leaves open: one named switch each (docs/format.md, "Readings").

The checker (`check(stream, readings)`) and the slow reference (`Reference(stream, readings)`) take the
same `Readings`; the command line sets one with `vkverify check --reading NAME=VALUE`. Each default is the
strict reading (the one under which fewer programs are called correct) unless the spec says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

__all__ = ["DEFAULT", "Readings", "parse_reading"]


@dataclass(frozen=True)
class Readings:
    # Spec 7.1.2 VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT ("all operations performed by all commands") against
    # VK_PIPELINE_STAGE_2_HOST_BIT ("not invoked by any commands"): does a semaphore signal whose stage mask is
    # all_commands (or bottom_of_pipe) hold a barrier whose destination is the host stage? Yes by default: the
    # barrier is a command and its domain operation to the host one of its operations, and a signal may not
    # name host itself, so no semaphore could carry a host barrier otherwise (docs/format.md).
    all_commands_includes_host: bool = True
    # Memory model "Location-Ordered": two host threads are two agents. Does one see another's write to
    # non-coherent memory without the writer's flush and the reader's invalidate (7.1.3, host access)?
    host_threads_coherent: bool = False
    # Spec 7.7.2 "access to memory through the specified buffer range": does a buffer memory barrier on B cover
    # an access through another buffer aliasing B's bytes? (7.7.3 says it of an image barrier and an image's alias.)
    buffer_barrier_covers_aliases: bool = False
    # A host write made after the submit, then a host signal the batch waits on, then a barrier with source
    # host/host_write. Spec 7.6 vkCmdPipelineBarrier2: the first synchronization scope "includes all commands that
    # occur earlier in submission order" (a host write is no command, and the host signal makes nothing available:
    # 7.4.1), so read strictly the write never reaches the device. But 7.1.2 HOST_BIT is "execution on the host of
    # reads/writes of device memory", which a barrier may name only to hold host operations, and the wait makes
    # those before the signal happen-before the barrier (7.4.2). Does the barrier hold them? Yes by default (the
    # reading vkverify always took, corpus 144): without it, host in a barrier's source stage would hold nothing.
    host_barrier_after_wait: bool = True


DEFAULT = Readings()
_BOOLEANS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def parse_reading(readings: Readings, text: str) -> Readings:
    """`readings` with one `NAME=VALUE` applied; ValueError naming the choices otherwise."""
    name, _, value = text.partition("=")
    names = [f.name for f in fields(Readings)]
    if name not in names:
        raise ValueError(f"unknown reading {name!r}; one of: {', '.join(names)}")
    if value.lower() not in _BOOLEANS:
        raise ValueError(f"{name}={value!r}: the value is true or false")
    return replace(readings, **{name: _BOOLEANS[value.lower()]})
