"""Pipeline stage and access names (synchronization2 spelling, lower case), derived from model/stages.py.

The stream format accepts the Vulkan spellings too (either sync, with or without _KHR) and this
module normalizes them.
"""

from __future__ import annotations

from .stages import ACCESS, ACCESSES, STAGE, STAGES, AccessType, Stage

__all__ = ["ACCESS_SETS", "STAGE_SETS", "access_name", "access_row", "stage_name", "stage_row"]

# What each name covers: a meta name (transfer, all_commands, shader_read, memory_write) the
# names it expands to, any other name itself (7.6, 7.7).
STAGE_SETS: dict[str, frozenset[str]] = {s.name: s.covers for s in STAGES if s.in_format}
ACCESS_SETS: dict[str, frozenset[str]] = {a.name: a.covers for a in ACCESSES}


def _strip_vulkan_spelling(name: str, prefixes: tuple[str, ...]) -> str:
    """`VK_PIPELINE_STAGE_2_COPY_BIT_KHR` -> `copy`; a name without a Vulkan prefix as it is."""
    upper = name.upper()
    for prefix in prefixes:
        if upper.startswith(prefix):
            return upper[len(prefix):].removesuffix("_KHR").removesuffix("_BIT").lower()
    return name


def stage_row(spelling: str) -> Stage | None:
    """The row of a stage in the format's or Vulkan's spelling, or None (7.6)."""
    return STAGE.get(_strip_vulkan_spelling(spelling, ("VK_PIPELINE_STAGE_2_", "VK_PIPELINE_STAGE_")))


def access_row(spelling: str) -> AccessType | None:
    """The row of an access in the format's or Vulkan's spelling, or None (7.7)."""
    return ACCESS.get(_strip_vulkan_spelling(spelling, ("VK_ACCESS_2_", "VK_ACCESS_")))


def stage_name(name: str) -> str | None:
    """The canonical stage name for any accepted spelling, or None if the format has no such stage."""
    row = stage_row(name)
    return row.name if row is not None and row.in_format else None


def access_name(name: str) -> str | None:
    """The canonical access name for any accepted spelling, or None if unknown."""
    row = access_row(name)
    return row.name if row is not None else None
