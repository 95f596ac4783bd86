"""Vulkan flags (as gfxrecon-convert writes them) to the stream format's names.

Stage and access bits are model/stages.py's table; memory property bits are
VkMemoryPropertyFlagBits. Stages and accesses that only graphics work has
(vertex input, fragment tests, attachments) have no name in the format: they
are dropped, since no command the importer emits executes at them.

The converter writes 32-bit masks (sync1) as integers and 64-bit masks
(sync2) as their bit names joined by "|" ("VK_PIPELINE_STAGE_2_COPY_BIT|...");
both are read.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

from ..model.names import access_row, stage_row
from ..model.stages import AccessType, Stage, access_names_of, stage_names_of

__all__ = ["access_names", "memory_kind", "stage_names"]

MEMORY_DEVICE_LOCAL = 0x1
MEMORY_HOST_VISIBLE = 0x2
MEMORY_HOST_COHERENT = 0x4


@functools.lru_cache(maxsize=1024)  # a capture names the same few masks in every barrier
def _mask(mask: int | str, row: Callable[[str], Stage | AccessType | None]) -> int:
    """A mask as the converter writes it: an integer, or Vulkan bit names joined by "|"."""
    if isinstance(mask, int):
        return mask
    rows = (row(bit.strip()) for bit in mask.split("|"))
    return functools.reduce(operator.or_, (r.sync2 for r in rows if r is not None), 0)


def stage_names(mask: int | str) -> list[str]:
    """Stage names of a VkPipelineStageFlags(2) mask; ["none"] when nothing in it runs compute or transfer work."""
    return stage_names_of(_mask(mask, stage_row))


def access_names(mask: int | str) -> list[str]:
    return access_names_of(_mask(mask, access_row))


def memory_kind(property_flags: int) -> str:
    """The format's memory kind for a memory type's VkMemoryPropertyFlags."""
    if not property_flags & MEMORY_HOST_VISIBLE:
        return "device_local"
    if not property_flags & MEMORY_HOST_COHERENT:
        return "host_cached"
    return "device_host_visible" if property_flags & MEMORY_DEVICE_LOCAL else "host_coherent"
