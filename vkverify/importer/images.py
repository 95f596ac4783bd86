"""Image calls: images, their memory and views, and the commands and barriers that touch them (docs/format.md,
"Images"; docs/capture.md says what is imported and what is refused).

A mixin of `Translator`. An image the format cannot hold (a format that is not one of its color formats: depth,
stencil, compressed, multi-planar; several samples; sparse or disjoint memory) is refused at its vkCreateImage, with
a warning. A command that touches it, or an image bound to no memory, and something the stream holds (a buffer,
another image, a dispatch's other bindings) is left out, counted by reason in the summary
(`ImportSummary.left_out`), which makes a verdict on the stream partial: what it accesses is missing; one that
touches nothing the stream holds is skipped, as outside the format. An image barrier of such an image keeps its
execution dependency.
"""

from __future__ import annotations

from ..model import ir
from ..model.images import (COMPRESSED, DEPTH_STENCIL, FORMATS, PLANES, buffer_rows, format_name, layout_name,
                            merge_ranges, numeric_kind)
from .commands import QUEUE_FAMILY_IGNORED
from .flags import access_names, stage_names
from .records import Call
from .resources import CapturedImage, ImageDescriptor

__all__ = ["Images"]

COLOR_ASPECT = 0x1  # VK_IMAGE_ASPECT_COLOR_BIT
# VK_IMAGE_CREATE_SPARSE_BINDING_BIT | SPARSE_RESIDENCY_BIT | SPARSE_ALIASED_BIT | DISJOINT_BIT: memory that is
# not one block bound at vkBindImageMemory.
UNBOUND_FLAGS = 0x1 | 0x2 | 0x4 | 0x200


def _refusal(info: dict) -> str | None:
    """Why the stream cannot hold the image VkImageCreateInfo `info` creates; None if it can."""
    name = format_name(info["format"])
    if name is None:
        return f"{info['format']} is a format the stream format does not have"
    if name in COMPRESSED or name in PLANES or name in DEPTH_STENCIL:
        # The stream format holds them (docs/format.md); the import does not map their regions (blocks, planes,
        # aspects) yet.
        return f"{info['format']}: the import does not map compressed, multi-planar or depth/stencil images yet"
    if info["samples"] != "VK_SAMPLE_COUNT_1_BIT":
        return f"{info['samples']}: the import does not map multisampled images yet"
    if info["flags"] & UNBOUND_FLAGS:
        return f"create flags {info['flags']:#x}: sparse or disjoint memory is not held"
    return None


BLIT_FILTERS = {"VK_FILTER_NEAREST": "nearest", "VK_FILTER_LINEAR": "linear"}  # VkFilter -> blit_image's filter


def _layers(src: dict, dst: dict) -> dict:
    """An image-to-image region's level and layers on each side (copy_image's, blit_image's), from the subresources
    of each (Image.subresources)."""
    return {"src_mip_level": src["base_mip_level"], "src_base_array_layer": src["base_array_layer"],
            "dst_mip_level": dst["base_mip_level"], "dst_base_array_layer": dst["base_array_layer"],
            "layer_count": src["layer_count"]}


def _offset(o: dict) -> list[int]:
    return [o["x"], o["y"], o["z"]]


def _extent(e: dict) -> list[int]:
    return [e["width"], e["height"], e["depth"]]


def _clear_value(color: dict, format: str) -> list[float]:
    """The stream's value of a VkClearColorValue: the union member the image's format reads (spec, "Clear
    Values")."""
    kind = numeric_kind(format)
    return list(color["uint32" if kind == "uint" else "int32" if kind == "sint" else "float32"])


class Images:
    # ---- images, memory, views ---------------------------------------------

    def vkCreateImage(self, call: Call, a: dict) -> None:
        info = a["pCreateInfo"]
        concurrent = self.take_note(call, "concurrent")
        refused = _refusal(info)
        image = CapturedImage(a["pImage"], f"img{a['pImage']}", tuple(_extent(info["extent"])),
                              format_name(info["format"]), info["mipLevels"], info["arrayLayers"],
                              info["sharingMode"] == "VK_SHARING_MODE_EXCLUSIVE" and not concurrent,
                              self.devices.get(a["device"], "gpu0"), refused)
        self.res.images[image.handle] = image
        if refused is not None:
            self.summary.warnings.append(f"vkCreateImage #{call.index}: image {image.id} is not in the stream: "
                                         f"{refused}; the commands that touch it are left out")

    def vkGetImageMemoryRequirements(self, call: Call, a: dict) -> None:
        self._requirements(a["image"], a["pMemoryRequirements"]["size"])

    def vkGetImageMemoryRequirements2(self, call: Call, a: dict) -> None:
        self._requirements(a["pInfo"]["image"], a["pMemoryRequirements"]["memoryRequirements"]["size"])

    vkGetImageMemoryRequirements2KHR = vkGetImageMemoryRequirements2

    def _requirements(self, image: int, size: int) -> None:
        if image in self.res.images:  # the bytes it takes in the memory it is bound to: where it may alias
            self.res.images[image].size = size

    def _bind_image(self, image: int, memory: int, offset: int, call: Call) -> None:
        img, mem = self.res.images.get(image), self.res.memories.get(memory)
        if img is not None and mem is not None:
            img.memory, img.offset, img.bound_at = mem.handle, offset, call.index
            mem.images.append(image)

    def vkBindImageMemory(self, call: Call, a: dict) -> None:
        self._bind_image(a["image"], a["memory"], a["memoryOffset"], call)

    def vkBindImageMemory2(self, call: Call, a: dict) -> None:
        for info in a["pBindInfos"]:
            self._bind_image(info["image"], info["memory"], info["memoryOffset"], call)

    vkBindImageMemory2KHR = vkBindImageMemory2

    def vkDestroyImage(self, call: Call, a: dict) -> None:
        if self.holds(a["image"]):
            image = self.res.images[a["image"]]
            image.used = True
            self.host(call, "destroy", buffer=image.id)

    def vkCreateImageView(self, call: Call, a: dict) -> None:
        """A view's subresources, for storage image descriptors; a view the format cannot hold keeps why."""
        info = a["pCreateInfo"]
        r, image = info["subresourceRange"], self.res.images.get(info["image"])
        if image is None:
            view = ImageDescriptor(None, (), refused=f"a view of image {info['image']}, which no call of the capture "
                                                     "creates")
        elif r["aspectMask"] != COLOR_ASPECT:
            view = ImageDescriptor(image.handle, (), refused=f"a view of aspect mask {r['aspectMask']:#x} of image "
                                                             f"{image.id} (only the color aspect is held)")
        elif image.extent[2] > 1 and info["viewType"] != "VK_IMAGE_VIEW_TYPE_3D":
            view = ImageDescriptor(image.handle, (), refused=f"a {info['viewType']} of the depth slices of 3D image "
                                                             f"{image.id} (slices as layers are not held)")
        else:
            view = ImageDescriptor(image.handle, tuple(image.subresources(r).items()))
        self.res.image_views[a["pView"]] = view

    def holds(self, handle: int) -> bool:
        """Whether the stream holds image `handle`: created, of what the format can hold, bound to memory."""
        image = self.res.images.get(handle)
        return image is not None and image.memory is not None and image.refused is None

    def held_image(self, handle: int, call: Call, held_too: bool = True) -> CapturedImage | None:
        """The image if the stream holds it. Otherwise None, and the command is left out, counted by reason, where
        it touches something the stream holds too (`held_too`), else counted as skipped."""
        image = self.res.images.get(handle)
        if not self.holds(handle):
            why = "which no call of the capture creates" if image is None else \
                "which is not bound to memory in the capture" if image.memory is None else \
                f"which the stream does not hold ({image.refused})"
            if held_too:
                self.left_out(call, f"it touches image {handle if image is None else image.id}, {why}")
            else:
                self.summary.skipped[call.name] += 1
            return None
        image.used = True
        return image

    def left_out(self, call: Call, why: str) -> None:
        self.summary.left_out[call.name, why] += 1
        self.summary.first_left_out.setdefault((call.name, why), call.index)

    def alias_warnings(self) -> None:
        """A warning for each held image whose bytes in its memory meet a buffer's or another image's: the format
        gives an image memory of its own, so hazards between them are missing (findings may go missing)."""
        for mem in self.res.memories.values():
            held = [self.res.images[h] for h in mem.images if self.holds(h)]
            for i, image in enumerate(held):
                others = [b.id for b in map(self.res.buffers.get, mem.buffers) if image.overlaps(b.offset, b.size)]
                others += [o.id for o in held[:i] if o.size is not None and image.overlaps(o.offset, o.size)]
                if others:
                    self.summary.warnings.append(
                        f"image {image.id} (vkBindImageMemory #{image.bound_at}) shares bytes of memory {mem.handle} "
                        f"with {', '.join(others)}: the stream gives an image memory of its own, so hazards between "
                        "them are missing")

    def image_docs(self) -> list[dict]:
        """The images bound to memory that the stream can hold."""
        self.alias_warnings()
        out = []
        for image in self.res.images.values():
            if not self.holds(image.handle):
                continue
            mem = self.res.memories[image.memory]
            doc = {"id": image.id, "extent": list(image.extent), "format": image.format,
                   "mip_levels": image.mip_levels, "array_layers": image.array_layers,
                   "memory": self.memory_kind(mem), "device": image.device}
            if image.exclusive:
                doc["sharing"] = "exclusive"
            out.append(doc)
        return out

    # ---- commands ----------------------------------------------------------

    def vkCmdCopyBufferToImage(self, call: Call, a: dict) -> None:
        self._buffer_image_copy(call, a["srcBuffer"], a["dstImage"], a["pRegions"], to_image=True)

    def vkCmdCopyBufferToImage2(self, call: Call, a: dict) -> None:
        info = a["pCopyBufferToImageInfo"]
        self._buffer_image_copy(call, info["srcBuffer"], info["dstImage"], info["pRegions"], to_image=True)

    vkCmdCopyBufferToImage2KHR = vkCmdCopyBufferToImage2

    def vkCmdCopyImageToBuffer(self, call: Call, a: dict) -> None:
        self._buffer_image_copy(call, a["dstBuffer"], a["srcImage"], a["pRegions"], to_image=False)

    def vkCmdCopyImageToBuffer2(self, call: Call, a: dict) -> None:
        info = a["pCopyImageToBufferInfo"]
        self._buffer_image_copy(call, info["dstBuffer"], info["srcImage"], info["pRegions"], to_image=False)

    vkCmdCopyImageToBuffer2KHR = vkCmdCopyImageToBuffer2

    def _buffer_image_copy(self, call: Call, buffer: int, image: int, regions: list[dict], to_image: bool) -> None:
        held = self.res.buffers.get(buffer)
        img = self.held_image(image, call, held_too=held is not None and held.memory is not None)
        buf = None if img is None else self.bound(buffer, call)
        if buf is None:
            return
        out = []
        for r in regions:
            where = img.subresources(r["imageSubresource"])
            out.append({"buffer_offset": r["bufferOffset"], "buffer_row_length": r["bufferRowLength"],
                        "buffer_image_height": r["bufferImageHeight"], "mip_level": where["base_mip_level"],
                        "base_array_layer": where["base_array_layer"], "layer_count": where["layer_count"],
                        "image_offset": _offset(r["imageOffset"]), "image_extent": _extent(r["imageExtent"])})
        # The buffer bytes the copy touches, for the read-back walk (readback.py), which knows no texel sizes.
        rows = merge_ranges(x for r in out for x in buffer_rows(ir.ImageRegion(
            r["buffer_offset"], r["buffer_row_length"], r["buffer_image_height"], r["mip_level"],
            r["base_array_layer"], r["layer_count"], tuple(r["image_offset"]), tuple(r["image_extent"])),
            FORMATS[img.format]))
        accessed = tuple((buf.id, lo, hi - lo, to_image, not to_image) for lo, hi in rows)
        if to_image:
            self.cmd(call, "copy_buffer_to_image", accessed, src=buf.id, dst=img.id, regions=out)
        else:
            self.cmd(call, "copy_image_to_buffer", accessed, src=img.id, dst=buf.id, regions=out)

    def vkCmdCopyImage(self, call: Call, a: dict) -> None:
        self._copy_image(call, a["srcImage"], a["dstImage"], a["pRegions"])

    def vkCmdCopyImage2(self, call: Call, a: dict) -> None:
        info = a["pCopyImageInfo"]
        self._copy_image(call, info["srcImage"], info["dstImage"], info["pRegions"])

    vkCmdCopyImage2KHR = vkCmdCopyImage2

    def _held_pair(self, call: Call, src: int, dst: int):
        """(src, dst) of an image-to-image command, each an image the stream holds; None where one is not."""
        s = self.held_image(src, call, held_too=self.holds(dst))
        d = None if s is None else self.held_image(dst, call)
        return None if d is None else (s, d)

    def _copy_image(self, call: Call, src: int, dst: int, regions: list[dict]) -> None:
        pair = self._held_pair(call, src, dst)
        if pair is None:
            return
        s, d = pair
        out = []
        for r in regions:
            sr, dr = s.subresources(r["srcSubresource"]), d.subresources(r["dstSubresource"])
            if sr["layer_count"] != dr["layer_count"]:  # a 3D image's slices to layers, or back (spec 20.3)
                self.left_out(call, f"it copies between the depth slices of one image and the layers of another "
                                    f"({s.id}, {d.id}): the format's copy_image copies layers to layers")
                return
            out.append({**_layers(sr, dr), "src_offset": _offset(r["srcOffset"]), "dst_offset": _offset(r["dstOffset"]),
                        "extent": _extent(r["extent"])})
        self.cmd(call, "copy_image", (), src=s.id, dst=d.id, regions=out)

    def vkCmdClearColorImage(self, call: Call, a: dict) -> None:
        image = self.held_image(a["image"], call, held_too=False)
        if image is not None:
            self.cmd(call, "clear_color_image", (), image=image.id,
                     ranges=[image.subresources(r) for r in a["pRanges"]], value=_clear_value(a["pColor"],
                                                                                             image.format))

    def vkCmdBlitImage(self, call: Call, a: dict) -> None:
        self._blit_image(call, a["srcImage"], a["dstImage"], a["pRegions"], a["filter"])

    def vkCmdBlitImage2(self, call: Call, a: dict) -> None:
        info = a["pBlitImageInfo"]
        self._blit_image(call, info["srcImage"], info["dstImage"], info["pRegions"], info["filter"])

    def _blit_image(self, call: Call, src: int, dst: int, regions: list[dict], filter: str) -> None:
        pair = self._held_pair(call, src, dst)
        if pair is None:
            return
        s, d = pair
        if filter not in BLIT_FILTERS:  # VK_FILTER_CUBIC_EXT: its footprint is not the format's
            self.left_out(call, f"it blits with {filter}, which the format's blit_image does not have")
            return
        out = []
        for r in regions:
            sr, dr = s.subresources(r["srcSubresource"]), d.subresources(r["dstSubresource"])
            out.append({**_layers(sr, dr), "src_offsets": [_offset(o) for o in r["srcOffsets"]],
                        "dst_offsets": [_offset(o) for o in r["dstOffsets"]]})
        self.cmd(call, "blit_image", (), src=s.id, dst=d.id, regions=out, filter=BLIT_FILTERS[filter])

    # Commands on images the format has no command for: left out where they touch an image the stream holds (its
    # accesses would be missing), else only counted as outside the format.

    def vkCmdResolveImage(self, call: Call, a: dict) -> None:
        self._unmapped(call, a["srcImage"], a["dstImage"])

    def vkCmdResolveImage2(self, call: Call, a: dict) -> None:
        self._unmapped(call, a["pResolveImageInfo"]["srcImage"], a["pResolveImageInfo"]["dstImage"])

    vkCmdBlitImage2KHR, vkCmdResolveImage2KHR = vkCmdBlitImage2, vkCmdResolveImage2

    def vkCmdClearDepthStencilImage(self, call: Call, a: dict) -> None:
        self._unmapped(call, a["image"])

    def _unmapped(self, call: Call, *handles: int) -> None:
        held = list(dict.fromkeys(self.res.images[h].id for h in handles if self.holds(h)))
        if held:
            self.left_out(call, f"the format has no such command, and it touches image {', '.join(held)}")
        else:
            self.summary.skipped[call.name] += 1

    # ---- barriers ----------------------------------------------------------

    def image_entries(self, call: Call, barriers: list[dict], stages: bool) -> tuple[list[dict], list[dict]]:
        """The entries of a barrier call's image barriers the stream holds, and those barriers it does not hold:
        their execution dependencies stay (the caller's). stages: each barrier has its own (sync2)."""
        rec = self.recordings.get(call.args["commandBuffer"])
        labelled = {} if rec is None else rec.transfers  # the buffer entries, made next, take them out
        entries = [self._image_entry(call, b, stages, labelled.get(("image", i))) for i, b in enumerate(barriers)]
        return [e for e in entries if e], [b for b, e in zip(barriers, entries) if not e]

    def _image_entry(self, call: Call, b: dict, stages: bool, labelled: tuple[int, int] | None) -> dict | None:
        """labelled: the stream's families of an ownership transfer, which the device's may have merged."""
        if not self.holds(b["image"]):
            return None  # no access of it is in the stream: its memory dependency orders nothing there
        image = self.res.images[b["image"]]
        image.used = True
        old, new = layout_name(b["oldLayout"]), layout_name(b["newLayout"])
        if old is None or new is None:
            self.left_out(call, f"its image barrier of {image.id} from {b['oldLayout']} to {b['newLayout']} names a "
                                "layout the format does not have")
            return None
        entry = {"image": image.id, **image.subresources(b["subresourceRange"]),
                 "src_access": access_names(b["srcAccessMask"]), "dst_access": access_names(b["dstAccessMask"]),
                 "old_layout": old, "new_layout": new}
        if stages:
            entry.update(src_stage=stage_names(b["srcStageMask"]), dst_stage=stage_names(b["dstStageMask"]))
        families = labelled or (b["srcQueueFamilyIndex"], b["dstQueueFamilyIndex"])
        if families[0] != families[1] and QUEUE_FAMILY_IGNORED not in families:
            entry.update(src_family=families[0], dst_family=families[1])
        return entry
