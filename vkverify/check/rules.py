"""The spec's synchronization rules, one predicate each (Vulkan spec, chapter 7), in its words.

The fast checker (barriers.py, access_state.py), the happens-before graph (hb.py: explain, graph and the mutation
analysis) and explain's "why not" call these; the slow reference (reference.py) states them again on its own,
as the oracle the tests compare with. Stage masks come here already expanded (scopes.py: execution scopes
with the logically earlier or later stages, access scopes with only the stages named).
"""

from __future__ import annotations

from ..model.stages import same_or_logically_earlier

__all__ = [
    "atomic_pair",
    "chains",
    "first_access_scope_gap",
    "host_write_needs_flush",
    "in_first_access_scope",
    "in_release_access_scope",
    "in_synchronization_scope",
    "makes_host_writes_available",
    "marker_writes_ordered",
    "second_access_scope_gap",
    "transfers_ownership",
    "transitions_here",
    "transitions_in_order",
]


def chains(earlier_second_scope: frozenset[str], later_first_scope: frozenset[str]) -> bool:
    """7.1 "execution dependency chain": an earlier dependency's second synchronization scope meets a later
    one's first (an access's own stage stands for the scope of the access)."""
    return bool(earlier_second_scope & later_first_scope)


def in_synchronization_scope(stage: str, scope: frozenset[str]) -> bool:
    """7.1: an access is in a synchronization scope (an expanded execution scope) that holds its own stage; a
    chain reaches the access, or starts from it, only so."""
    return stage in scope


def first_access_scope_gap(stage: str, write: str | None, src_stages: frozenset[str],
                           src_access: frozenset[str]) -> str | None:
    """Why a write is not in a barrier's first access scope (7.1.2), None where it is: `src_access` lacks its
    access type, or `src_stage` does not name its own stage (a logically earlier stage is not enough)."""
    if write not in src_access:
        return "src_access"
    return None if stage in src_stages else "src_stage"


def in_first_access_scope(stage: str, write: str | None, src_stages: frozenset[str],
                          src_access: frozenset[str]) -> bool:
    """7.1.2: the write is made available by the barrier (its stage named, its access type named)."""
    return first_access_scope_gap(stage, write, src_stages, src_access) is None


def second_access_scope_gap(stage: str, accesses: tuple[str, ...],
                            dst_scope: frozenset[tuple[str, str]]) -> list[str]:
    """The access types of `accesses` at `stage` a barrier's second access scope (7.1.2, its expanded
    (stage, access) pairs) lacks: the write is made visible to the access only where none is lacking."""
    return [a for a in accesses if (stage, a) not in dst_scope]


def makes_host_writes_available(src_stages: frozenset[str], src_access: frozenset[str]) -> bool:
    """7.1.3 host access: host writes (stage host, access host_write) in a barrier's first access scope, a
    domain operation from the host to the device for those before it."""
    return in_first_access_scope("host", "host_write", src_stages, src_access)


def in_release_access_scope(same_queue: bool, stage: str, first_scope: frozenset[str]) -> bool:
    """7.4.1 (7.3.1 for fences): a signal's first access scope is "all memory access performed by the device"
    in its first synchronization scope: an access on its queue (so never a host write) at one of its stages,
    not one reached only through a chain (7.1: a chain's first access scope is its first dependency's)."""
    return same_queue and stage in first_scope


def transfers_ownership(src_family: int | None, dst_family: int | None) -> bool:
    """7.7.4 queue family ownership transfer: a buffer or image barrier between two queue families."""
    return src_family is not None and src_family != dst_family


def transitions_here(b, family: int | None) -> bool:
    """7.7.4: an image barrier whose layouts differ transitions them, but where it transfers ownership "the image
    layout transition is submitted twice, it will only be executed once", and it "happens-after the release
    operation and happens-before the acquire operation": the release (its queue of `family` is the barrier's
    source family) runs it, the acquire (any other queue) does not. `family` None: a queue not known (a wait's
    dependency, which may not transfer ownership)."""
    return b.old_layout != b.new_layout and (family is None or family == b.src_family
                                             or not transfers_ownership(b.src_family, b.dst_family))


def host_write_needs_flush(same_thread: bool, memory: str, host_threads_coherent: bool) -> bool:
    """7.1.3 host access and the memory model's "Location-Ordered": another host thread is another agent, so a
    host write to non-coherent memory reaches its access only through the writer's vkFlushMappedMemoryRanges
    (available to the host domain) and, for a read, the reader's vkInvalidateMappedMemoryRanges after it
    (visible), unless the reading host_threads_coherent takes the host's threads to share a cache."""
    return not same_thread and memory == "host_cached" and not host_threads_coherent


def transitions_in_order(first_transition: bool, second_transition: bool, same_queue: bool) -> bool:
    """7.7.4: image layout transitions "execute in their entirety in submission order, relative to other image layout
    transitions submitted to the same queue": two of one queue do not race. They order nothing else ("an
    application must not rely on ordering of image layout transitions to influence ordering of other commands")."""
    return first_transition and second_transition and same_queue


def atomic_pair(first_atomic: bool, second_atomic: bool, same_device: bool) -> bool:
    """Memory model, "Data Race": accesses that are "mutually-ordered atomic operations" do not race; those are
    atomics of the same locations, each in the instance of the other's memory scope, both device operations. A
    shader's atomics are of Device scope (GLSL's), whose instance holds every queue and dispatch of the device,
    never another device's; the host's accesses are never atomic here."""
    return first_atomic and second_atomic and same_device


def marker_writes_ordered(earlier: frozenset[str] | None, later: frozenset[str] | None, same_queue: bool) -> bool:
    """copies.adoc "Buffer Markers", vkCmdWriteBufferMarker2AMD: a marker write's first synchronization scope
    "additionally includes other buffer marker write commands that occur earlier in submission order that specified
    either the same pipelineStage or a stage that is logically earlier", and its first access scope "includes only
    accesses performed by other buffer marker write commands": so an earlier marker write (`earlier`, the stages it
    names; None: not a marker write) of the queue happens-before a later one with a memory dependency only where
    its stages are the later's or logically earlier (7.6.1). Two others race; so does a marker write with a
    shader's atomics (it is no atomic operation)."""
    return earlier is not None and later is not None and same_queue and same_or_logically_earlier(earlier, later)
