"""Stream images on a device: a VkImage of optimal tiling with memory of its own, the layout each subresource is
in as the recorded command buffers leave it, and the Vulkan structures image commands take.

The layouts follow the stream's barriers in recording order (command buffers are recorded at their first submit):
a command names the layout its subresources are in there, as Vulkan requires (spec, "Image Layouts"; the
validation layer checks it at submit). A fresh image is cleared to zeros in `general`, as a fresh buffer is
zero-filled: the simulator's reference starts from zeros.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import ir
from ..model.images import DEPTH_STENCIL, FORMATS, PLANES, numeric_kind

__all__ = ["IMAGE_FEATURES", "IMAGE_FORMATS", "KERNEL_VIEW_FORMATS", "DeviceImage", "clear_color", "extent3d", "layers",
           "offset3d", "subresource_range", "vk_format", "vk_layout", "whole"]


# The view format an image binding replays through, by the texel block's bytes: image.glsl moves 1, 2 or 4 u32 words
# per texel block (an r32ui, rg32ui or rgba32ui view; a compressed format's block is one texel of the view).
KERNEL_VIEW_FORMATS = {4: "r32_uint", 8: "r32g32_uint", 16: "r32g32b32a32_uint"}
# The formats Runtime.create_image takes: a multi-planar image's copies name planes (VK_IMAGE_ASPECT_PLANE_n_BIT) and
# its zero fill and read back would go plane by plane, a depth/stencil image's aspect by aspect (and its zero fill is
# vkCmdClearDepthStencilImage), which the runtime does not do.
IMAGE_FORMATS = tuple(f for f in FORMATS if f not in PLANES and f not in DEPTH_STENCIL)
# The VK_FORMAT_FEATURE_*_BIT an image's format needs with optimal tiling: every image is a copy's source and
# destination (its zero fill and read back too) and may be sampled. Values, not names: the `vulkan` package leaves
# the transfer bits' names unset (None).
IMAGE_FEATURES = {"transfer_src": 0x4000, "transfer_dst": 0x8000, "sampled_image": 0x1}


@dataclass(eq=False)
class DeviceImage:
    image: ir.Image
    handle: object
    memory: object
    layouts: dict[tuple[int, int], str] = field(default_factory=dict)  # (level, layer) -> stream layout name
    views: dict[tuple[int, int, int], object] = field(default_factory=dict)  # Runtime.storage_view's

    def layout(self, level: int, layer: int) -> str:
        return self.layouts[level, layer]

    def held_layout(self, r: ir.Subresources) -> str | None:
        """The layout every subresource of `r` is in now; None where they differ."""
        held = {self.layouts.get((level, layer)) for level in range(r.base_mip_level, r.base_mip_level + r.level_count)
                for layer in range(r.base_array_layer, r.base_array_layer + r.layer_count)}
        return held.pop() if len(held) == 1 else None

    def transition(self, r: ir.Subresources, layout: str) -> None:
        for level in range(r.base_mip_level, r.base_mip_level + r.level_count):
            for layer in range(r.base_array_layer, r.base_array_layer + r.layer_count):
                self.layouts[level, layer] = layout


def vk_layout(vk, name: str) -> int:
    return getattr(vk, f"VK_IMAGE_LAYOUT_{name.upper()}")


def vk_format(vk, name: str) -> int:
    """VK_FORMAT_* of a format's name; an ASTC block extent keeps its lowercase x (VK_FORMAT_ASTC_10x10_UNORM_BLOCK)."""
    return getattr(vk, "VK_FORMAT_" + re.sub(r"(\d)X(\d)", r"\1x\2", name.upper()))


def whole(image: ir.Image) -> ir.Subresources:
    return ir.Subresources(0, image.mip_levels, 0, image.array_layers)


def subresource_range(vk, r: ir.Subresources):
    return vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=r.base_mip_level,
                                      levelCount=r.level_count, baseArrayLayer=r.base_array_layer,
                                      layerCount=r.layer_count)


def layers(vk, level: int, base_layer: int, count: int):
    return vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=level,
                                       baseArrayLayer=base_layer, layerCount=count)


def offset3d(vk, offset: tuple[int, int, int]):
    return vk.VkOffset3D(x=offset[0], y=offset[1], z=offset[2])


def extent3d(vk, extent: tuple[int, int, int]):
    return vk.VkExtent3D(width=extent[0], height=extent[1], depth=extent[2])


def clear_color(vk, format: str, value: tuple[float, ...]):
    """VkClearColorValue of `value` for a `format` image: float32 for unorm, srgb and sfloat formats, uint32 or
    int32 (the value as an integer) for integer ones (spec, "Clear Values")."""
    rgba = (tuple(value) + (0.0,) * 4)[:4]
    kind = numeric_kind(format)
    if kind == "uint":
        return vk.VkClearColorValue(uint32=[min(max(int(v), 0), 0xFFFFFFFF) for v in rgba])
    if kind == "sint":
        return vk.VkClearColorValue(int32=[min(max(int(v), -1 << 31), (1 << 31) - 1) for v in rgba])
    return vk.VkClearColorValue(float32=list(rgba))
