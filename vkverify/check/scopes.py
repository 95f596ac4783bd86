"""Synchronization scopes: stage expansion and access scopes.

Execution scopes include logically earlier (source) or later (destination)
stages; access scopes do not (Vulkan spec, 7.1.2 "Synchronization Scopes"
and 7.6 "Pipeline Stages": "access scopes ... only include ... stages
explicitly specified").
"""

from __future__ import annotations

from functools import cache

from ..model.names import ACCESS_SETS, DEVICE_STAGES, STAGE_SETS

# Logically earlier stages for the compute and transfer pipelines (spec 7.6.1
# "Pipeline stage ordering"); copy and clear are unordered with each other.
_EARLIER = {
    "top_of_pipe": {"top_of_pipe"},
    "draw_indirect": {"top_of_pipe", "draw_indirect"},
    "compute_shader": {"top_of_pipe", "draw_indirect", "compute_shader"},
    "copy": {"top_of_pipe", "copy"},
    "clear": {"top_of_pipe", "clear"},
    "bottom_of_pipe": set(DEVICE_STAGES),
    "host": {"host"},
}
_LATER = {s: {t for t, earlier in _EARLIER.items() if s in earlier} for s in _EARLIER}


@cache
def explicit_stages(names: frozenset[str]) -> frozenset[str]:
    """Meta stages (transfer, all_commands) replaced by the stages they name."""
    return frozenset().union(*(STAGE_SETS[n] for n in names))


@cache
def accesses(names: frozenset[str]) -> frozenset[str]:
    """Access names with shader_read, memory_write, ... replaced by what they cover."""
    return frozenset().union(*(ACCESS_SETS[n] for n in names))


@cache
def first_execution_scope(src_stage: frozenset[str]) -> frozenset[str]:
    """Spec 7.6.1: a source stage mask includes the logically earlier stages."""
    return frozenset().union(*(_EARLIER[s] for s in explicit_stages(src_stage)))


@cache
def second_execution_scope(dst_stage: frozenset[str]) -> frozenset[str]:
    """Spec 7.6.1: a destination stage mask includes the logically later stages."""
    return frozenset().union(*(_LATER[s] for s in explicit_stages(dst_stage)))


@cache
def access_scope(stage: frozenset[str], access: frozenset[str]) -> frozenset[tuple[str, str]]:
    """Spec 7.1.2: (stage, access) pairs, with only the explicitly named stages."""
    return frozenset((s, a) for s in explicit_stages(stage) for a in accesses(access))
