"""Synchronization scopes: stage expansion and access scopes.

Execution scopes include logically earlier (source) or later (destination)
stages; access scopes do not (Vulkan spec, 7.1.2 "Synchronization Scopes"
and 7.6 "Pipeline Stages": "access scopes ... only include ... stages
explicitly specified"). Execution scopes hold only the stages at which
commands execute: `top_of_pipe` and `bottom_of_pipe` are never members, they
stand for all stages or none depending on the side (7.6.1).
"""

from __future__ import annotations

from functools import cache

from ..model.names import ACCESS_SETS, STAGE_SETS
from ..model.stages import COMMAND_STAGES, DEVICE_STAGES, EXECUTING_STAGES, STAGES

__all__ = ["ALL_DEVICE", "EARLIER_EVENT_OPERATIONS", "EARLIER_TRANSITIONS", "HOST", "LATER_EVENT_OPERATIONS",
           "LATER_TRANSITIONS", "access_scope", "accesses",
           "explicit_stages", "first_execution_scope", "second_execution_scope", "signal_first_scope"]

# Logically earlier and later stages (spec 7.6.1 "Pipeline stage ordering"), each stage with
# itself, kept to the stages commands execute at: TOP_OF_PIPE is then NONE in a first scope and
# ALL_COMMANDS in a second, BOTTOM_OF_PIPE the reverse (7.6.1).
_ORDERED = {s.name: s.earlier | {s.name} for s in STAGES if s.covers == {s.name}}
_EARLIER = {s: earlier & EXECUTING_STAGES for s, earlier in _ORDERED.items()}
_LATER = {s: {t for t, earlier in _ORDERED.items() if s in earlier} & EXECUTING_STAGES for s in _ORDERED}
HOST = frozenset({"host"})

# Spec 7.6: ALL_COMMANDS "specifies all operations performed by all commands", an image layout transition (7.7.4)
# among them; so does BOTTOM_OF_PIPE in a first scope and TOP_OF_PIPE in a second (7.6.1), no other stage. Each
# image barrier's transitions have a stage of their own (barriers.transition_stage); in a scope these two names
# stand for all of them, matched by intersection (rules.chains) as any stage is:
# - EARLIER_TRANSITIONS: a first scope's, every earlier transition; so a chain that reached a transition holds it;
# - LATER_TRANSITIONS: a second scope's, every later transition; so the first half of a transition's barrier
#   holds it in its first scope (the transition is in that second scope, and happens-before its barrier's second
#   half: 7.1's chain goes on through it).
EARLIER_TRANSITIONS, LATER_TRANSITIONS = "layout transitions before", "layout transitions after"
# An event's set or reset (7.5: its event signal or unsignal operation, the second scope of vkCmdSetEvent(2) and
# vkCmdResetEvent(2)) is such an operation too, at no pipeline stage: the same two names for every event operation
# (events.operation_entries gives each event a stage of its own between them).
EARLIER_EVENT_OPERATIONS, LATER_EVENT_OPERATIONS = "event operations before", "event operations after"
_EARLIER["bottom_of_pipe"] |= {EARLIER_TRANSITIONS, EARLIER_EVENT_OPERATIONS}
_LATER["top_of_pipe"] |= {LATER_TRANSITIONS, LATER_EVENT_OPERATIONS}
# A second scope of every operation of the queue's commands: a submission's (7.9 host write ordering), a fence's
# acquire; the device's stage clocks are kept for these stages.
ALL_DEVICE = frozenset(DEVICE_STAGES) | {EARLIER_TRANSITIONS, LATER_TRANSITIONS, EARLIER_EVENT_OPERATIONS,
                                         LATER_EVENT_OPERATIONS}


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


def signal_first_scope(stage: frozenset[str], all_commands_includes_host: bool) -> frozenset[str]:
    """Spec 7.4.1: a semaphore signal's first synchronization scope, limited by its stage mask. `host` in the mask
    holds the barriers whose destination is the host stage; all_commands (bottom_of_pipe) does only under the
    reading `all_commands_includes_host` (check/readings.py)."""
    scope = first_execution_scope(stage)
    return scope | HOST if all_commands_includes_host and scope >= COMMAND_STAGES else scope
