"""Vulkan flag integers (as gfxrecon-convert writes them) to the stream format's names.

Bit values from the Vulkan specification (VkPipelineStageFlagBits,
VkPipelineStageFlagBits2, VkAccessFlagBits, VkAccessFlagBits2,
VkMemoryPropertyFlagBits). Stages and accesses that only graphics or image
work has (vertex input, fragment tests, attachments, sampled images,
blit/resolve) have no name in the format: they are dropped, since no command
the importer emits executes at them.
"""

from __future__ import annotations

# Sync1 and sync2 share the low 32 bits of both tables.
_STAGES = {
    0x1: "top_of_pipe",
    0x2: "draw_indirect",
    0x800: "compute_shader",
    0x1000: "transfer",
    0x2000: "bottom_of_pipe",
    0x4000: "host",
    0x8000: "draw_indirect",  # ALL_GRAPHICS: of the stages the format knows, it holds only draw_indirect
    0x10000: "all_commands",
    0x100000000: "copy",
    0x800000000: "clear",
}

_ACCESSES = {
    0x1: "indirect_command_read",
    0x8: "uniform_read",
    0x20: "shader_read",
    0x40: "shader_write",
    0x800: "transfer_read",
    0x1000: "transfer_write",
    0x2000: "host_read",
    0x4000: "host_write",
    0x8000: "memory_read",
    0x10000: "memory_write",
    0x200000000: "shader_storage_read",
    0x400000000: "shader_storage_write",
}

MEMORY_DEVICE_LOCAL = 0x1
MEMORY_HOST_VISIBLE = 0x2
MEMORY_HOST_COHERENT = 0x4


def _names(mask: int, table: dict[int, str]) -> list[str]:
    names = sorted({name for bit, name in table.items() if mask & bit})
    return names or ["none"]


def stage_names(mask: int) -> list[str]:
    """Stage names of a VkPipelineStageFlags(2) mask; ["none"] when nothing in it runs compute or transfer work."""
    return _names(mask, _STAGES)


def access_names(mask: int) -> list[str]:
    return _names(mask, _ACCESSES)


def memory_kind(property_flags: int) -> str:
    """The format's memory kind for a memory type's VkMemoryPropertyFlags."""
    if not property_flags & MEMORY_HOST_VISIBLE:
        return "device_local"
    if not property_flags & MEMORY_HOST_COHERENT:
        return "host_cached"
    return "device_host_visible" if property_flags & MEMORY_DEVICE_LOCAL else "host_coherent"
