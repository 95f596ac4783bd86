"""What gfxrecon-convert prints as a bare address, read from a call's encoded parameters.

GFXReconstruct's parameter encoding (`format/format.h`, `encode/parameter_encoder.h`):
handles are u64 ids, size_t and VkDeviceSize are u64, and a pointer is a u32 of
PointerAttributes, then its address (u64, where kHasAddress), then for an array
its length (u64) and its elements.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["TemplateData", "specialization_data", "template_data"]

_IS_NULL = 0x1
_HAS_ADDRESS = 0x40
_DESCRIPTOR_IMAGE_INFO = 20  # sampler id, image view id (u64), image layout (u32)
_DESCRIPTOR_BUFFER_INFO = 24  # buffer id, offset, range (u64)


def _pointer(data: bytes, at: int) -> int | None:
    """Where the data of the pointer encoded at `at` begins; None for a null pointer."""
    (attributes,) = struct.unpack_from("<I", data, at)
    if attributes & _IS_NULL:
        return None
    return at + 4 + (8 if attributes & _HAS_ADDRESS else 0)


def specialization_data(parameters: bytes, infos: list[dict | None]) -> list[bytes | None]:
    """Each VkSpecializationInfo's pData bytes in a vkCreateComputePipelines call (None for an info
    that is None or has none): found in order after the encoding of its map entries and dataSize,
    which the JSON line gives."""
    out, at = [], 0
    for info in infos:
        if not info or not info["dataSize"] or not info["pMapEntries"]:
            out.append(None)
            continue
        anchor = b"".join(struct.pack("<IIQ", e["constantID"], e["offset"], e["size"]) for e in info["pMapEntries"])
        anchor += struct.pack("<Q", info["dataSize"])
        found = parameters.find(anchor, at)
        start = None if found < 0 else _pointer(parameters, found + len(anchor))
        if start is None:
            out.append(None)
            continue
        (length,) = struct.unpack_from("<Q", parameters, start)
        at = start + 8 + length
        out.append(parameters[start + 8:at])
    return out


@dataclass(frozen=True)
class TemplateData:
    """A descriptor update template's data as the capture encodes it: the template entries' descriptors
    grouped by kind, each group in entry order."""

    buffers: list[tuple[int, int, int]]  # (buffer id, offset, range) per VkDescriptorBufferInfo
    texel_buffer_views: list[int]
    image_views: list[int]  # the image view id of each VkDescriptorImageInfo


def template_data(parameters: bytes, at: int) -> TemplateData | None:
    """The template data encoded at `at` (after the call's handles and set number); None where null."""
    start = _pointer(parameters, at)
    if start is None:
        return None
    images, buffers, views = struct.unpack_from("<QQQ", parameters, start)
    image_views = [struct.unpack_from("<Q", parameters, start + 24 + i * _DESCRIPTOR_IMAGE_INFO + 8)[0]
                   for i in range(images)]
    at = start + 24 + images * _DESCRIPTOR_IMAGE_INFO
    infos = [struct.unpack_from("<QQQ", parameters, at + i * _DESCRIPTOR_BUFFER_INFO) for i in range(buffers)]
    at += buffers * _DESCRIPTOR_BUFFER_INFO
    return TemplateData(infos, list(struct.unpack_from(f"<{views}Q", parameters, at)), image_views)
