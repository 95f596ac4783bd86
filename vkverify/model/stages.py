"""The pipeline stages and access types the stream format names: one table every layer derives from.

A row is one VkPipelineStageFlagBits2 or VkAccessFlagBits2 bit (spec 7.6 "Pipeline Stages",
7.7 "Access Types"): the format's name (Vulkan's, lower case, without prefix and `_BIT`), its
sync2 and sync1 values, what a meta name expands to, and for a stage its logically earlier
stages in the compute, transfer and host pipelines (7.6.1). The loader's names, the checker's
scopes, the importer's decoding of captured masks and the runtime's submitted masks all read
these rows. No `vulkan` import here (`check` runs where no driver exists): tests/test_stages.py
compares every value with the `vulkan` package's constants.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "ACCESS",
    "ACCESSES",
    "COMMAND_STAGES",
    "DEVICE_ACCESSES",
    "DEVICE_STAGES",
    "EXECUTING_STAGES",
    "STAGE",
    "STAGES",
    "AccessType",
    "Flag",
    "Stage",
    "access_mask",
    "access_names_of",
    "same_or_logically_earlier",
    "stage_mask",
    "stage_names_of",
]

TOP_OF_PIPE, BOTTOM_OF_PIPE = "top_of_pipe", "bottom_of_pipe"


@dataclass(frozen=True)
class Flag:
    """One bit of VkPipelineStageFlagBits2 or VkAccessFlagBits2."""
    name: str
    sync2: int
    sync1: int | None  # None: the sync1 flags (VkPipelineStageFlagBits, VkAccessFlagBits) have no such bit
    covers: frozenset[str]  # itself; for a meta name (transfer, all_commands, shader_read, ...) what it expands to


@dataclass(frozen=True)
class Stage(Flag):
    """One VkPipelineStageFlagBits2 bit (7.6)."""
    earlier: frozenset[str] = frozenset()  # logically earlier stages (7.6.1)
    in_format: bool = True  # False: only decodes captured masks, the loader refuses the name


@dataclass(frozen=True)
class AccessType(Flag):
    """One VkAccessFlagBits2 bit (7.7)."""
    stages: frozenset[str] = frozenset()  # the format's stages that perform it (7.7.1 "Supported access types")


Row = TypeVar("Row", Stage, AccessType)


def _stage(name: str, sync2: int, sync1: int | None, *, earlier: Iterable[str] = ()) -> Stage:
    return Stage(name, sync2, sync1, frozenset({name}), frozenset(earlier))


def _access(name: str, sync2: int, sync1: int | None, *, stages: Iterable[str]) -> AccessType:
    return AccessType(name, sync2, sync1, frozenset({name}), frozenset(stages))


# 7.6.1 "Pipeline stage ordering": compute is top_of_pipe, draw_indirect, compute_shader,
# bottom_of_pipe; transfer is top_of_pipe, then copy, blit, resolve and clear (unordered with each other),
# then bottom_of_pipe; the host pipeline has host alone.
_COMMAND = ("draw_indirect", "compute_shader", "copy", "blit", "resolve", "clear")
STAGES: tuple[Stage, ...] = (
    Stage("none", 0x0, 0x0, frozenset()),
    _stage(TOP_OF_PIPE, 0x1, 0x1),
    _stage("draw_indirect", 0x2, 0x2, earlier={TOP_OF_PIPE}),
    _stage("compute_shader", 0x800, 0x800, earlier={TOP_OF_PIPE, "draw_indirect"}),
    _stage("copy", 0x1_0000_0000, None, earlier={TOP_OF_PIPE}),
    _stage("blit", 0x4_0000_0000, None, earlier={TOP_OF_PIPE}),
    # 7.6: "the execution of vkCmdResolveImage".
    _stage("resolve", 0x2_0000_0000, None, earlier={TOP_OF_PIPE}),
    _stage("clear", 0x8_0000_0000, None, earlier={TOP_OF_PIPE}),
    # 7.6: TRANSFER is ALL_TRANSFER: copy, blit, resolve, clear (and acceleration structure copies, not in the format).
    Stage("transfer", 0x1000, 0x1000, frozenset({"copy", "blit", "resolve", "clear"})),
    Stage("all_transfer", 0x1000, None, frozenset({"copy", "blit", "resolve", "clear"})),
    _stage("host", 0x4000, 0x4000),
    # 7.6: all operations of all commands on the queue, never the host.
    Stage("all_commands", 0x10000, 0x10000, frozenset({TOP_OF_PIPE, *_COMMAND, BOTTOM_OF_PIPE})),
    _stage(BOTTOM_OF_PIPE, 0x2000, 0x2000, earlier={TOP_OF_PIPE, *_COMMAND}),
    # 7.6: every graphics stage; of the stages the format has, only draw_indirect.
    Stage("all_graphics", 0x8000, 0x8000, frozenset({"draw_indirect"}), in_format=False),
)

ACCESSES: tuple[AccessType, ...] = (
    AccessType("none", 0x0, 0x0, frozenset()),
    _access("indirect_command_read", 0x1, 0x1, stages={"draw_indirect"}),
    _access("uniform_read", 0x8, 0x8, stages={"compute_shader"}),
    _access("shader_sampled_read", 0x1_0000_0000, None, stages={"compute_shader"}),
    _access("shader_storage_read", 0x2_0000_0000, None, stages={"compute_shader"}),
    _access("shader_storage_write", 0x4_0000_0000, None, stages={"compute_shader"}),
    # 7.7 (vk.xml): SHADER_READ "is equivalent to the logical OR of" SHADER_SAMPLED_READ, SHADER_STORAGE_READ and
    # SHADER_BINDING_TABLE_READ; of those the format has sampled and storage reads. Not UNIFORM_READ ("uniform
    # buffer").
    AccessType("shader_read", 0x20, 0x20, frozenset({"shader_sampled_read", "shader_storage_read"})),
    AccessType("shader_write", 0x40, 0x40, frozenset({"shader_storage_write"})),
    # 7.7.1: transfer reads at copy, blit and resolve, not at clear; transfer writes at all four.
    _access("transfer_read", 0x800, 0x800, stages={"copy", "blit", "resolve"}),
    _access("transfer_write", 0x1000, 0x1000, stages={"copy", "blit", "resolve", "clear"}),
    _access("host_read", 0x2000, 0x2000, stages={"host"}),
    _access("host_write", 0x4000, 0x4000, stages={"host"}),
    AccessType("memory_read", 0x8000, 0x8000, frozenset({"indirect_command_read", "uniform_read", "shader_sampled_read",
                                                     "shader_storage_read", "transfer_read", "host_read"})),
    AccessType("memory_write", 0x10000, 0x10000, frozenset({"shader_storage_write", "transfer_write", "host_write"})),
)

STAGE = {s.name: s for s in STAGES}
ACCESS = {a.name: a for a in ACCESSES}
# The stages of device commands, in table order (the checker keys per-stage clocks by them).
DEVICE_STAGES = tuple(s.name for s in STAGES if s.name in STAGE["all_commands"].covers)
# 7.6.1: top_of_pipe and bottom_of_pipe bound every pipeline; no command or host operation executes at them.
EXECUTING_STAGES = frozenset(s.name for s in STAGES if s.covers == {s.name}) - {TOP_OF_PIPE, BOTTOM_OF_PIPE}
COMMAND_STAGES = EXECUTING_STAGES & frozenset(DEVICE_STAGES)
# The (stage, access) pairs device commands perform, in table order (the checker keeps a visibility clock for each).
DEVICE_ACCESSES = tuple((s.name, a.name) for s in STAGES if s.name in COMMAND_STAGES
                        for a in ACCESSES if s.name in a.stages)


def same_or_logically_earlier(stages: Iterable[str], than: Iterable[str]) -> bool:
    """7.6.1 "Pipeline stage ordering": whether every stage `stages` names (a meta name: each stage it covers) is
    one `than` names or logically earlier than one. top_of_pipe is earlier than every stage, bottom_of_pipe later;
    stages of two pipelines (compute_shader and copy) are neither."""
    reach = {e for name in than for s in STAGE[name].covers for e in STAGE[s].earlier | {s}}
    return all(s in reach for name in stages for s in STAGE[name].covers)


def _sync1(rows: Iterable[Flag]) -> dict[str, int]:
    """Each row's sync1 value; a bit sync1 lacks is the narrowest sync1 bit that covers it (copy
    and clear are TRANSFER, shader_storage_read is SHADER_READ): sync2 split those older bits."""
    named = [r for r in rows if r.sync1 is not None]
    return {r.name: r.sync1 if r.sync1 is not None else
            min((n for n in named if n.covers >= r.covers), key=lambda n: len(n.covers)).sync1 for r in rows}


_STAGE_SYNC1 = _sync1(STAGES)
_ACCESS_SYNC1 = _sync1(ACCESSES)


def stage_mask(names: Iterable[str], sync2: bool, src: bool) -> int:
    """The VkPipelineStageFlags2 (sync2) or VkPipelineStageFlags (sync1) of stage names. Sync1 has no
    0 stage without the synchronization2 feature: there none, like no name, is TOP_OF_PIPE as
    source and BOTTOM_OF_PIPE as destination, each NONE on that side (7.6.1)."""
    if sync2:
        return functools.reduce(operator.or_, (STAGE[name].sync2 for name in names), 0)
    empty = STAGE[TOP_OF_PIPE if src else BOTTOM_OF_PIPE].sync1
    return functools.reduce(operator.or_, (_STAGE_SYNC1[name] or empty for name in names), 0) or empty


def access_mask(names: Iterable[str], sync2: bool) -> int:
    """The VkAccessFlags2 (sync2) or VkAccessFlags (sync1) of access names (7.7)."""
    return functools.reduce(operator.or_, (ACCESS[name].sync2 if sync2 else _ACCESS_SYNC1[name] for name in names), 0)


def _rows_of(rows: tuple[Row, ...], mask: int) -> list[Row]:
    """The row of each set bit of a sync2 (or sync1: the low bits agree) mask, the first where two
    share a bit (transfer, not all_transfer); a bit no row has is dropped."""
    by_bit: dict[int, Row] = {}
    for row in rows:
        by_bit.setdefault(row.sync2, row)
    return [row for bit, row in by_bit.items() if bit & mask]


def stage_names_of(mask: int) -> list[str]:
    """Stage names of a VkPipelineStageFlags(2) mask (7.6): a bit the format does not name is the
    stages it holds that the format does (all_graphics: draw_indirect); ["none"] for none."""
    return list(_stage_names_of(mask))


def access_names_of(mask: int) -> list[str]:
    """Access names of a VkAccessFlags(2) mask (7.7); ["none"] for none."""
    return list(_access_names_of(mask))


# An imported capture names the same few masks in every barrier: each read once.
@functools.lru_cache(maxsize=1024)
def _stage_names_of(mask: int) -> tuple[str, ...]:
    return tuple(sorted(set().union(*({s.name} if s.in_format else s.covers for s in _rows_of(STAGES, mask))))) \
        or ("none",)


@functools.lru_cache(maxsize=1024)
def _access_names_of(mask: int) -> tuple[str, ...]:
    return tuple(sorted(a.name for a in _rows_of(ACCESSES, mask))) or ("none",)
