"""Vulkan flags (as gfxrecon-convert writes them) to the stream format's names.

Bit values from the Vulkan specification (VkPipelineStageFlagBits,
VkPipelineStageFlagBits2, VkAccessFlagBits, VkAccessFlagBits2,
VkMemoryPropertyFlagBits). Stages and accesses that only graphics or image
work has (vertex input, fragment tests, attachments, sampled images,
blit/resolve) have no name in the format: they are dropped, since no command
the importer emits executes at them.

The converter writes 32-bit masks (sync1) as integers and 64-bit masks
(sync2) as their bit names joined by "|" ("VK_PIPELINE_STAGE_2_COPY_BIT|...");
both are read.
"""

from __future__ import annotations

# Vulkan's name (between VK_PIPELINE_STAGE_2_ / VK_ACCESS_2_ and _BIT) -> (bit, the format's name).
# Sync1 and sync2 share the low 32 bits of both tables.
_STAGES = {
    "TOP_OF_PIPE": (0x1, "top_of_pipe"),
    "DRAW_INDIRECT": (0x2, "draw_indirect"),
    "COMPUTE_SHADER": (0x800, "compute_shader"),
    "TRANSFER": (0x1000, "transfer"),
    "ALL_TRANSFER": (0x1000, "transfer"),
    "BOTTOM_OF_PIPE": (0x2000, "bottom_of_pipe"),
    "HOST": (0x4000, "host"),
    "ALL_GRAPHICS": (0x8000, "draw_indirect"),  # of the stages the format knows, it holds only draw_indirect
    "ALL_COMMANDS": (0x10000, "all_commands"),
    "COPY": (0x100000000, "copy"),
    "CLEAR": (0x800000000, "clear"),
}

_ACCESSES = {
    "INDIRECT_COMMAND_READ": (0x1, "indirect_command_read"),
    "UNIFORM_READ": (0x8, "uniform_read"),
    "SHADER_READ": (0x20, "shader_read"),
    "SHADER_WRITE": (0x40, "shader_write"),
    "TRANSFER_READ": (0x800, "transfer_read"),
    "TRANSFER_WRITE": (0x1000, "transfer_write"),
    "HOST_READ": (0x2000, "host_read"),
    "HOST_WRITE": (0x4000, "host_write"),
    "MEMORY_READ": (0x8000, "memory_read"),
    "MEMORY_WRITE": (0x10000, "memory_write"),
    "SHADER_STORAGE_READ": (0x200000000, "shader_storage_read"),
    "SHADER_STORAGE_WRITE": (0x400000000, "shader_storage_write"),
}

MEMORY_DEVICE_LOCAL = 0x1
MEMORY_HOST_VISIBLE = 0x2
MEMORY_HOST_COHERENT = 0x4


def _names(mask: int | str, table: dict[str, tuple[int, str]], prefix: str) -> list[str]:
    if isinstance(mask, str):
        bits = {bit.strip().removeprefix(prefix).removesuffix("_KHR").removesuffix("_BIT") for bit in mask.split("|")}
        names = {name for key, (_, name) in table.items() if key in bits}
    else:
        names = {name for bit, name in table.values() if mask & bit}
    return sorted(names) or ["none"]


def stage_names(mask: int | str) -> list[str]:
    """Stage names of a VkPipelineStageFlags(2) mask; ["none"] when nothing in it runs compute or transfer work."""
    return _names(mask, _STAGES, "VK_PIPELINE_STAGE_2_")


def access_names(mask: int | str) -> list[str]:
    return _names(mask, _ACCESSES, "VK_ACCESS_2_")


def memory_kind(property_flags: int) -> str:
    """The format's memory kind for a memory type's VkMemoryPropertyFlags."""
    if not property_flags & MEMORY_HOST_VISIBLE:
        return "device_local"
    if not property_flags & MEMORY_HOST_COHERENT:
        return "host_cached"
    return "device_host_visible" if property_flags & MEMORY_DEVICE_LOCAL else "host_coherent"
