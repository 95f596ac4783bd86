"""Images as the checker sees them: the bytes of a linear layout, so that every layer that compares byte ranges of
buffers compares images' too.

An image's subresources (one aspect, color: compute and transfer use no other) lie mip level by mip level, and
within a level array layer by layer, each a `depth x height x width` block of texels (of texel blocks in a
block-compressed format: spec 48.3, "Compressed Image Formats"; an access of part of a block touches the block).
A multi-planar image's planes (PLANES) lie one after the other, each so laid out at its own extent and texel size.
A subresource range of one level is one byte range; a copy's box is one byte range per row of texels it touches
(merged where rows, or whole planes, are contiguous). The layout is the model's, not the device's (optimal tiling is
opaque): two accesses overlap in it exactly when they touch a common texel of a common subresource, which is what
synchronization is about (spec 7.7.3, "Image Memory Barriers": a barrier's subresource range; 20.1 the regions of
image copies).
"""

from __future__ import annotations

import re

import numpy as np

__all__ = [
    "COMPRESSED",
    "DEPTH_STENCIL",
    "FORMATS",
    "LAYOUTS",
    "LAYOUT_TRANSITION",
    "LAYOUT_WRITE",
    "PLANES",
    "aspect_names",
    "blit_box",
    "block_extent",
    "box_ranges",
    "buffer_rows",
    "clear_depth_stencil_texel",
    "clear_texel",
    "copy_dst_extent",
    "format_name",
    "layout_name",
    "level_extent",
    "level_offset",
    "merge_ranges",
    "numeric_kind",
    "plane_formats",
    "range_ranges",
    "slice_ranges",
    "subresources_text",
]

# A layout transition as findings name it: its stage (no pipeline stage) and its access (spec 7.7.4: it reads and
# writes the subresources); check/barriers.py gives each image barrier's transitions a stage of its own from it.
LAYOUT_TRANSITION = "image_layout_transition"
LAYOUT_WRITE = "layout_transition"

# Block-compressed formats (spec 48.3): the texel block's size in bytes and its extent (width, height) in texels.
COMPRESSED = {
    **{f"{bc}_{kind}_block": (8 if bc in ("bc1", "bc4") else 16, (4, 4)) for bc, kinds in (
        ("bc1", ("rgb_unorm", "rgb_srgb", "rgba_unorm", "rgba_srgb")), ("bc2", ("unorm", "srgb")),
        ("bc3", ("unorm", "srgb")), ("bc4", ("unorm", "snorm")), ("bc5", ("unorm", "snorm")),
        ("bc6h", ("ufloat", "sfloat")), ("bc7", ("unorm", "srgb"))) for kind in kinds},
    **{f"astc_{w}x{h}_{kind}_block": (16, (w, h)) for w, h in (
        (4, 4), (5, 4), (5, 5), (6, 5), (6, 6), (8, 5), (8, 6), (8, 8), (10, 5), (10, 6), (10, 8), (10, 10),
        (12, 10), (12, 12)) for kind in ("unorm", "srgb")},
}
# Multi-planar formats (spec 34.1.1, "Multi-planar Formats"): each plane's texel size and its subsampling (the plane's
# width and height are the image's divided by it, rounded up); the layout holds the planes one after the other.
PLANES = {
    "g8_b8_r8_3plane_420_unorm": ((1, (1, 1)), (1, (2, 2)), (1, (2, 2))),
    "g8_b8r8_2plane_420_unorm": ((1, (1, 1)), (2, (2, 2))),
    "g8_b8_r8_3plane_422_unorm": ((1, (1, 1)), (1, (2, 1)), (1, (2, 1))),
    "g8_b8r8_2plane_422_unorm": ((1, (1, 1)), (2, (2, 1))),
    "g8_b8_r8_3plane_444_unorm": ((1, (1, 1)), (1, (1, 1)), (1, (1, 1))),
}
# Depth/stencil formats (spec 34.1 "Depth/Stencil Formats"): each aspect and its bytes per texel as copies address it
# (copies.adoc, "Depth/Stencil Aspect Copy": D24 depth is X8_D24_UNORM_PACK32, 4 bytes; stencil is S8_UINT). The
# layout holds the aspects one after the other, depth first, as a multi-planar image's planes.
DEPTH_STENCIL = {
    "d16_unorm": (("depth", 2),), "x8_d24_unorm_pack32": (("depth", 4),), "d32_sfloat": (("depth", 4),),
    "s8_uint": (("stencil", 1),), "d16_unorm_s8_uint": (("depth", 2), ("stencil", 1)),
    "d24_unorm_s8_uint": (("depth", 4), ("stencil", 1)), "d32_sfloat_s8_uint": (("depth", 4), ("stencil", 1)),
}
# Bytes per texel block (one texel but in a compressed format) of the formats compute and transfer use;
# VK_FORMAT_R8G8B8A8_UNORM is spelled r8g8b8a8_unorm.
FORMATS = {
    "r8_unorm": 1, "r8_uint": 1, "r8g8_unorm": 2, "r16_sfloat": 2, "r16_uint": 2, "r8g8b8a8_unorm": 4,
    "r8g8b8a8_uint": 4, "r8g8b8a8_srgb": 4, "b8g8r8a8_unorm": 4, "b8g8r8a8_srgb": 4, "r32_uint": 4, "r32_sint": 4,
    "r32_sfloat": 4, "r16g16_sfloat": 4, "r16g16b16a16_sfloat": 8, "r32g32_sfloat": 8, "r32g32_uint": 8,
    "r32g32b32a32_sfloat": 16, "r32g32b32a32_uint": 16, **{name: size for name, (size, _) in COMPRESSED.items()},
    **{name: planes[0][0] for name, planes in PLANES.items()},  # plane 0's
    **{name: aspects[0][1] for name, aspects in DEPTH_STENCIL.items()},  # the first aspect's
}


def plane_formats(format: str, texel: int) -> tuple[tuple[int, tuple[int, int]], ...]:
    """Each plane's texel size and subsampling as the layout holds them: a multi-planar format's planes, a
    depth/stencil format's aspects, else one plane of `texel` bytes."""
    if format in DEPTH_STENCIL:
        return tuple((size, (1, 1)) for _, size in DEPTH_STENCIL[format])
    return PLANES.get(format, ((texel, (1, 1)),))


def aspect_names(format: str) -> tuple[str, ...]:
    """The aspects of a format's image, one per plane of the layout where it has several (VkImageAspectFlagBits:
    `color`, `depth`, `stencil`, `plane_0` ...)."""
    if format in DEPTH_STENCIL:
        return tuple(name for name, _ in DEPTH_STENCIL[format])
    return tuple(f"plane_{p}" for p in range(len(PLANES[format]))) if format in PLANES else ("color",)


def format_name(name: str) -> str | None:
    """A format's name in the format's spelling (`VK_FORMAT_R32_SFLOAT` -> `r32_sfloat`), None if unknown."""
    short = name.lower().removeprefix("vk_format_")
    return short if short in FORMATS else None


def block_extent(format: str) -> tuple[int, int]:
    """A format's texel block extent (width, height) in texels: (1, 1) but for a compressed format."""
    return COMPRESSED[format][1] if format in COMPRESSED else (1, 1)


def _blocks(texels: int, block: int) -> int:
    """The texel blocks that `texels` texels of one dimension span (a partial block at the edge counts)."""
    return -(-texels // block)


def numeric_kind(format: str) -> str:
    """How a format's texels are numbers: `unorm`, `srgb`, `uint`, `sint` or `sfloat` (its name's suffix)."""
    return format.rpartition("_")[2]


def clear_texel(format: str, value: tuple[float, ...]) -> bytes:
    """The bytes of one texel that vkCmdClearColorImage with VkClearColorValue `value` (R, G, B, A; missing ones
    0) stores in a `format` image, components in the format's order (b8g8r8a8 stores B first). The spec's Fixed-Point
    Data Conversions for unorm: round(clamp(v, 0, 1) * 255), where the spec lets a device store either integer next
    to a product that is not one ("should round to nearest": NVIDIA stores 127 for 0.5, Lavapipe 128); srgb first
    encodes R, G and B by the sRGB transfer function (A stays linear); an integer format takes the value as an
    integer, clamped to the component's range (as Mesa packs it; a stream that relies on out-of-range values gets
    Mesa's answer); sfloat rounds to nearest."""
    kind = numeric_kind(format)
    rgba = (tuple(value) + (0.0,) * 4)[:4]
    out = b""
    for letter, bits in re.findall(r"([rgba])(\d+)", format.partition("_")[0]):
        v = float(rgba["rgba".index(letter)])
        if kind in ("unorm", "srgb"):
            v = min(max(v, 0.0), 1.0)
            if kind == "srgb" and letter != "a":
                v = v * 12.92 if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055
            out += round(v * 255).to_bytes(1, "little")
        elif kind == "sfloat":
            out += np.array(v, np.float32 if bits == "32" else np.float16).tobytes()
        else:
            signed = kind == "sint"
            lo, hi = (-(1 << int(bits) - 1), (1 << int(bits) - 1) - 1) if signed else (0, (1 << int(bits)) - 1)
            out += min(max(int(v), lo), hi).to_bytes(int(bits) // 8, "little", signed=signed)
    return out


def clear_depth_stencil_texel(format: str, aspect: str, depth: float, stencil: int) -> bytes:
    """The bytes vkCmdClearDepthStencilImage stores in one texel of an aspect, as a copy to a buffer reads it
    (copies.adoc, "Depth/Stencil Aspect Copy"): stencil the low 8 bits of `stencil`; depth by the spec's Fixed-Point
    Data Conversions for unorm, round(clamp(d, 0, 1) * (2^bits - 1)) (D24 in the low 24 bits of 4 bytes), or a
    float32."""
    if aspect == "stencil":
        return (stencil & 0xFF).to_bytes(1, "little")
    if format.startswith("d32"):
        return np.array(depth, np.float32).tobytes()
    bits, size = (16, 2) if format.startswith("d16") else (24, 4)
    return round(min(max(depth, 0.0), 1.0) * ((1 << bits) - 1)).to_bytes(size, "little")


def level_extent(extent: tuple[int, int, int], level: int) -> tuple[int, int, int]:
    """Spec 12.3 (Image Miplevel Sizing): each dimension halves per level, at least 1."""
    return tuple(max(1, d >> level) for d in extent)


def level_size(extent: tuple[int, int, int], level: int, texel: int, block: tuple[int, int] = (1, 1)) -> int:
    w, h, d = level_extent(extent, level)
    return _blocks(w, block[0]) * _blocks(h, block[1]) * d * texel


def level_offset(extent: tuple[int, int, int], layers: int, texel: int, level: int,
                 block: tuple[int, int] = (1, 1)) -> int:
    """Where mip level `level` (all its layers) begins in the image's bytes; `texel` is the texel block's size and
    `block` its extent."""
    return sum(level_size(extent, m, texel, block) * layers for m in range(level))


def range_ranges(extent: tuple[int, int, int], layers: int, texel: int, base_level: int, level_count: int,
                 base_layer: int, layer_count: int, block: tuple[int, int] = (1, 1)) -> list[tuple[int, int]]:
    """The byte ranges of a subresource range: one per mip level (its layers are contiguous)."""
    out = []
    for level in range(base_level, base_level + level_count):
        size = level_size(extent, level, texel, block)
        start = level_offset(extent, layers, texel, level, block) + base_layer * size
        out.append((start, start + layer_count * size))
    return merge_ranges(out)


def slice_ranges(extent: tuple[int, int, int], texel: int, base_level: int, level_count: int, base_slice: int,
                 slice_count: int, block: tuple[int, int] = (1, 1)) -> list[tuple[int, int]]:
    """The byte ranges of depth slices [base_slice, base_slice + slice_count) of a 3D image's (one layer's) levels:
    one per level, slices past a level's depth left out (a level's slices are contiguous)."""
    out = []
    for level in range(base_level, base_level + level_count):
        w, h, d = level_extent(extent, level)
        size = _blocks(w, block[0]) * _blocks(h, block[1]) * texel
        start = level_offset(extent, 1, texel, level, block)
        out.append((start + min(base_slice, d) * size, start + min(base_slice + slice_count, d) * size))
    return merge_ranges(out)


def box_ranges(extent: tuple[int, int, int], layers: int, texel: int, level: int, base_layer: int, layer_count: int,
               offset: tuple[int, int, int], box: tuple[int, int, int],
               block: tuple[int, int] = (1, 1)) -> list[tuple[int, int]]:
    """The byte ranges of the texel blocks that box `box` at `offset` (in texels) touches in mip level `level` of
    layers [base_layer, base_layer + layer_count): one per row of blocks, merged where rows meet."""
    w, h, _ = level_extent(extent, level)
    w, h = _blocks(w, block[0]), _blocks(h, block[1])
    size = level_size(extent, level, texel, block)
    start = level_offset(extent, layers, texel, level, block)
    x, y, z = offset
    x0, y0 = x // block[0], y // block[1]
    x1, y1 = _blocks(x + box[0], block[0]), _blocks(y + box[1], block[1])
    return merge_ranges(
        (row, row + (x1 - x0) * texel)
        for layer in range(base_layer, base_layer + layer_count)
        for k in range(z, z + box[2]) for j in range(y0, y1)
        for row in (start + layer * size + ((k * h + j) * w + x0) * texel,))


def blit_box(corners) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(lowest corner, extent) of the texels between a VkImageBlit side's two offsets, in either order (spec 20.5: a
    blit whose offsets are reversed mirrors the image)."""
    return (tuple(map(min, *corners)), tuple(abs(b - a) for a, b in zip(*corners)))


def copy_dst_extent(extent: tuple[int, int, int], src_block: tuple[int, int],
                    dst_block: tuple[int, int]) -> tuple[int, int, int]:
    """The destination's box of a vkCmdCopyImage region of `extent` source texels: the same number of texel blocks,
    each the destination's (spec 20.3: between a compressed and an uncompressed format, one texel per block)."""
    return (_blocks(extent[0], src_block[0]) * dst_block[0], _blocks(extent[1], src_block[1]) * dst_block[1],
            extent[2])


def merge_ranges(ranges) -> list[tuple[int, int]]:
    """Ranges in order, those that meet or overlap made one."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        elif hi > lo:
            out.append((lo, hi))
    return out


def subresources_text(extent: tuple[int, int, int], layers: int, texel: int, levels: int, lo: int, hi: int,
                      block: tuple[int, int] = (1, 1)) -> str:
    """Which subresources bytes [lo, hi) of an image's layout hold, for people: `level 0 layer 1`, `level 1
    layers 0-1`, one part per mip level."""
    parts = []
    for level in range(levels):
        size = level_size(extent, level, texel, block)
        base = level_offset(extent, layers, texel, level, block)
        if lo < base + layers * size and hi > base:
            first, last = (max(lo - base, 0)) // size, (min(hi, base + layers * size) - base - 1) // size
            parts.append(f"level {level} layer {first}" if first == last else f"level {level} layers {first}-{last}")
    return ", ".join(parts)


def buffer_rows(region, texel: int, block: tuple[int, int] = (1, 1)) -> list[tuple[int, int]]:
    """The buffer bytes of a VkBufferImageCopy (ir.ImageRegion): spec 20.4, texel (x, y, z) of layer l lies at
    bufferOffset + (((l * depth + z) * imageHeight + y) * rowLength + x) * texelBlockSize, rowLength and imageHeight
    being the region's, or its extent's where 0; in a compressed format x, y, rowLength and imageHeight count texel
    blocks (each divided by the block's extent, rounded up)."""
    w, h, d = region.image_extent
    row_length = _blocks(region.buffer_row_length or w, block[0])
    image_height = _blocks(region.buffer_image_height or h, block[1])
    w, h = _blocks(w, block[0]), _blocks(h, block[1])
    return merge_ranges(
        (start, start + w * texel)
        for layer in range(region.layer_count) for z in range(d) for y in range(h)
        for start in (region.buffer_offset + (((layer * d + z) * image_height + y) * row_length) * texel,))


# Image layouts (VK_IMAGE_LAYOUT_*) compute and transfer use; only whether two differ matters to synchronization.
LAYOUTS = ("undefined", "general", "transfer_src_optimal", "transfer_dst_optimal", "shader_read_only_optimal",
           "read_only_optimal", "preinitialized", "present_src_khr")


def layout_name(name: str) -> str | None:
    """A layout's name in the format's spelling (`VK_IMAGE_LAYOUT_GENERAL` -> `general`), None if unknown."""
    short = name.lower().removeprefix("vk_image_layout_")
    return short if short in LAYOUTS else None
