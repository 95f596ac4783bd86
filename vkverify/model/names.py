"""Pipeline stage and access names (synchronization2 spelling, lower case).

The tables follow the Vulkan specification, "Pipeline Stages" and "Access
Types"; the stream format accepts the Vulkan spellings too and this module
normalizes them.
"""

from __future__ import annotations

# Stages at which a compute/transfer command or host op can execute.
EXECUTING_STAGES = ("draw_indirect", "compute_shader", "copy", "clear", "host")
DEVICE_STAGES = ("top_of_pipe", "draw_indirect", "compute_shader", "copy", "clear", "bottom_of_pipe")

# Meta stages that name a set of stages (spec: VK_PIPELINE_STAGE_2_ALL_TRANSFER_BIT,
# VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT); all_commands never includes host.
STAGE_SETS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "top_of_pipe": frozenset({"top_of_pipe"}),
    "draw_indirect": frozenset({"draw_indirect"}),
    "compute_shader": frozenset({"compute_shader"}),
    "copy": frozenset({"copy"}),
    "clear": frozenset({"clear"}),
    "transfer": frozenset({"copy", "clear"}),
    "all_transfer": frozenset({"copy", "clear"}),
    "host": frozenset({"host"}),
    "all_commands": frozenset(DEVICE_STAGES),
    "bottom_of_pipe": frozenset({"bottom_of_pipe"}),
}

ACCESS_SETS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "indirect_command_read": frozenset({"indirect_command_read"}),
    "uniform_read": frozenset({"uniform_read"}),
    "shader_storage_read": frozenset({"shader_storage_read"}),
    "shader_storage_write": frozenset({"shader_storage_write"}),
    "shader_read": frozenset({"shader_storage_read", "uniform_read"}),
    "shader_write": frozenset({"shader_storage_write"}),
    "transfer_read": frozenset({"transfer_read"}),
    "transfer_write": frozenset({"transfer_write"}),
    "host_read": frozenset({"host_read"}),
    "host_write": frozenset({"host_write"}),
    "memory_read": frozenset({"indirect_command_read", "uniform_read", "shader_storage_read",
                              "transfer_read", "host_read"}),
    "memory_write": frozenset({"shader_storage_write", "transfer_write", "host_write"}),
}

WRITE_ACCESSES = frozenset({"shader_storage_write", "transfer_write", "host_write"})

def _strip_vulkan_spelling(name: str, prefixes: tuple[str, ...]) -> str:
    upper = name.upper()
    for prefix in prefixes:
        if upper.startswith(prefix):
            upper = upper[len(prefix):]
            return upper.removesuffix("_KHR").removesuffix("_BIT").lower()
    return name


def stage_name(name: str) -> str | None:
    """The canonical stage name for any accepted spelling, or None if unknown."""
    short = _strip_vulkan_spelling(name, ("VK_PIPELINE_STAGE_2_", "VK_PIPELINE_STAGE_"))
    return short if short in STAGE_SETS else None


def access_name(name: str) -> str | None:
    """The canonical access name for any accepted spelling, or None if unknown."""
    short = _strip_vulkan_spelling(name, ("VK_ACCESS_2_", "VK_ACCESS_"))
    return short if short in ACCESS_SETS else None
