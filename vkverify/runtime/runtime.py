"""The runtime: a Vulkan compute program's calls, executed and recorded.

Every call runs on the device and appends to a `vkverify-stream/1` document,
so `stream()` is what the program actually issued: checkable, replayable.
With online checking (VKVERIFY_CHECK=1, or check=True) each submit, host read
and host write is checked with everything recorded before it, and a hazard
raises HazardError before vkQueueSubmit is called or the host touches the bytes
(a host read racing the device is then caught by structure, whatever the timing):
the last hook, online.OnlineCheck, which keeps the checker's state between ops.
The stream is recorded through stream_record.StreamRecord's public API, which
the uploader uses too.

Hooks see every host op before it is recorded and run: `Runtime(hooks=[factory, ...])`, each
factory called with the Runtime once it is open and returning an object with `before(thread, op)`
(the op to record and run instead, or None to drop it) and `close()`; without `hooks`, the
factories VKVERIFY_HOOKS names (`module:attribute`, comma-separated). The uploader is asked
first, by the same protocol (its deferred copies join a submit); the online check last.
"""

from __future__ import annotations

import base64
import importlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Self

from ..model import UsageError, builder, ir
from ..model.errors import choice_argument
from ..model.images import COMPRESSED, level_extent, level_offset
from ..model.data import data_bytes
from ..model.dump import command_to_dict, host_op_to_dict
from ..model.refs import with_submit
from ..model.stages import stage_mask
from .auto_barriers import AutoBarriers
from .caller import caller
from .device import LogicalDevice, Instance, QueueRequest, internal_group, pick_physical
from .errors import DeviceFault, Unsupported
from .images import (IMAGE_FEATURES, IMAGE_FORMATS, KERNEL_VIEW_FORMATS, DeviceImage, extent3d, layers,
                     subresource_range, vk_format, vk_layout, whole)
from .memory import Allocator, DeviceBuffer
from .online import HAZARDS, OnlineCheck
from .pipelines import Pipelines
from .record import Recorder, global_barrier
from .stream_record import StreamRecord
from .timestamps import Timestamps

__all__ = ["CommandBuffer", "Runtime", "env_hooks"]

WAIT_SLICE_NS = 100_000_000  # host waits wake this often to notice an abort
WAIT_LIMIT_S = 60.0  # a wait that long is reported as a fault, not a hang
# A read back's copy made visible to the host's read of the staging buffer (not recorded in the stream).
READ_BACK = {"src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["host"],
             "dst_access": ["host_read"]}
# VK_IMAGE_CREATE_EXTENDED_USAGE_BIT, _2D_ARRAY_COMPATIBLE_BIT, _BLOCK_TEXEL_VIEW_COMPATIBLE_BIT and _ALIAS_BIT, core in
# Vulkan 1.1: the `vulkan` package leaves their names unset.
IMAGE_CREATE_ALIAS_BIT = 0x400
IMAGE_CREATE_EXTENDED_USAGE_BIT = 0x100
IMAGE_CREATE_2D_ARRAY_COMPATIBLE_BIT = 0x20
IMAGE_CREATE_BLOCK_TEXEL_VIEW_COMPATIBLE_BIT = 0x80
# A fresh image's zero clear made visible to every later command (the stream's first barrier may be a transition).
ZEROED = {"src_stage": ["transfer"], "src_access": ["transfer_write"], "dst_stage": ["all_commands"],
          "dst_access": ["memory_read", "memory_write"]}

class CommandBuffer(builder.CommandBuffer):
    """The model builder's recorder (cmd_copy_buffer, cmd_dispatch, ...); the
    commands become Vulkan commands when the buffer is submitted. Each command
    records the program's line that recorded it (`source`)."""

    def _add(self, cmd: str, **fields) -> CommandBuffer:
        return super()._add(cmd, source=caller(), **fields)


def env_hooks() -> list[Callable]:
    """The hook factories VKVERIFY_HOOKS names; ValueError names a malformed entry."""
    factories = []
    for spec in filter(None, os.environ.get("VKVERIFY_HOOKS", "").split(",")):
        module, sep, attribute = spec.partition(":")
        if not sep:
            raise ValueError(f"VKVERIFY_HOOKS entry {spec!r} must be module:attribute")
        factories.append(getattr(importlib.import_module(module), attribute))
    return factories


class Runtime:
    """One device, its queues, and the stream recorded so far.

    queues: stream queue ids; a mapping id -> QueueRequest picks families by
    capability (`group`s share a family, `compute=False` may take a
    transfer-only one). device: name part or index (default VKVERIFY_DEVICE).
    extensions: device extensions to enable (the caller checked the device has them).
    device_id: the device's id in the recorded stream (a replay keeps its stream's).
    barriers: "manual" (the program records its pipeline barriers) or "auto": each command buffer's are placed at
    its first submit, the fewest and narrowest the recorded stream needs (auto_barriers.py; docs/runtime.md);
    None: VKVERIFY_BARRIERS, else "manual".
    timestamps: time each command buffer on the GPU (timestamps.py; read with gpu_nanoseconds once idle).
    """

    def __init__(self, queues: Iterable[str] | Mapping[str, QueueRequest] = ("q0",), device: str | None = None,
                 validation: bool = False, syncval: bool = False, check: bool | None = None,
                 name: str = "runtime", extensions: tuple[str, ...] = (),
                 hooks: Iterable[Callable] | None = None, device_id: str = "gpu0", barriers: str | None = None,
                 timestamps: bool = False) -> None:
        barriers = os.environ.get("VKVERIFY_BARRIERS", "manual") if barriers is None else barriers
        self.barriers = choice_argument("barriers", barriers, ("manual", "auto"))
        requests = [queues[q] if isinstance(queues, Mapping) else QueueRequest(q) for q in queues]
        self.check = os.environ.get("VKVERIFY_CHECK") == "1" if check is None else check
        self.record = StreamRecord(name, [{"id": r.id, "family": r.group} for r in requests], device_id=device_id)
        # Its state serves the runtime mutation too; a hook with `check`.
        self.online = OnlineCheck(self.record, os.environ.get(HAZARDS) or None)
        self._lock = self.record.lock
        self._submitted = threading.Condition(self._lock)
        self.aborted = threading.Event()
        self.buffers: dict[str, DeviceBuffer] = {}
        self.scratch: list[DeviceBuffer] = []
        self.semaphores: dict[str, tuple[object, str]] = {}
        self.pending_binary: dict[str, int] = {}
        self.fences: dict[str, object] = {}
        self.armed: dict[str, bool] = {}  # fence -> signaled at creation, or submitted, since its last reset
        self.events: dict[str, object] = {}
        self.event_sets: dict[str, bool] = {}  # event -> whether its last recorded set is vkCmdSetEvent2
        self.pools: dict[int, object] = {}
        self.recorded: dict[tuple, object] = {}  # (cb, at), a secondary's (cb, at, family) -> VkCommandBuffer
        self.recorders: set[str] = set()  # the command buffers the program records (command_buffer)
        self._recorded_ids: set[str] = set()  # the stream command buffers of `recorded`: asked at every submit
        self.abstract_shaders: dict[str, tuple[str, ...]] = {}
        self.uploader = None  # uploads.Uploader: deferred copies join submits; closed before the device
        self.images: dict[str, DeviceImage] = {}
        self.query_pools: list[tuple[object, int]] = []  # (VkQueryPool, queries): query_pool's
        self.hooks: list = []
        self.name = name
        self.device = self.allocator = self.pipelines = self.timestamps = None
        self.instance = Instance(validation, syncval)
        try:
            self.device = LogicalDevice.open(self.instance, pick_physical(self.instance, device), requests, extensions)
            self.allocator = Allocator(self.device)
            self.pipelines = Pipelines(self.device)
            self.timestamps = Timestamps(self.device) if timestamps else None
        except BaseException:
            self.close()
            raise
        self.group_of = {r.id: r.group for r in requests}
        factories = env_hooks() if hooks is None else hooks
        # Placed barriers are part of what every other hook and the online check see.
        self.hooks = [AutoBarriers(self)] * (barriers == "auto") + [
            h for h in (factory(self) for factory in factories) if h is not None]

    @property
    def vk(self):
        return self.instance.vk

    # The record's document, command buffers and host threads, for reading (write through `record`).
    @property
    def doc(self) -> dict:
        return self.record.doc

    @property
    def command_buffers(self) -> dict[str, list[dict]]:
        return self.record.command_buffers

    @property
    def threads(self) -> dict[str, list[dict]]:
        return self.record.threads

    def device_family(self, group: int) -> int:
        """The device family that serves the stream's family `group`."""
        families = self.device.families
        return families.get(group, families[internal_group(families)])

    # ---- resources ---------------------------------------------------------

    def create_buffer(self, id: str, size: int | None = None, memory: str = "device_local",
                      alias_of: str | None = None, offset: int = 0, sharing: str = "concurrent") -> None:
        """A buffer of `memory` kind, zero-filled (an alias: bytes of `alias_of`). UsageError for a memory kind,
        sharing mode or alias root that is not one, naming the argument and what it takes."""
        choice_argument("memory", memory, ir.MEMORY_KINDS)
        choice_argument("sharing", sharing, ("concurrent", "exclusive"))
        if alias_of is not None:
            choice_argument("alias_of", alias_of, tuple(self.buffers))
        usage = (self.vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | self.vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | self.vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT | self.vk.VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT
                 | self.vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT)
        with self._lock:
            if sharing == "concurrent":  # its VkBuffer is exclusive where the queues use one family: say so
                self.instance.note("concurrent")
            if alias_of is not None:
                root = self.buffers[alias_of]
                size = root.size - offset if size is None else size
                self.buffers[id] = self.allocator.alias(id, root, offset, size, usage)
                entry = {"id": id, "alias_of": alias_of, "offset": offset, "size": size}
            else:
                self.buffers[id] = buffer = self.allocator.create(id, size, memory, usage, sharing)
                self._zero(buffer)
                entry = {"id": id, "size": size, "memory": memory}
                if sharing != "concurrent":
                    entry["sharing"] = sharing
            self.record.declare("buffers", entry)

    def create_image(self, id: str, extent: tuple[int, int, int], format: str = "r8g8b8a8_unorm",
                     mip_levels: int = 1, array_layers: int = 1, memory: str = "device_local",
                     sharing: str = "concurrent", create_flags: Iterable[str] = ()) -> None:
        """An image (docs/format.md, images) of optimal tiling for transfers, cleared to zeros in `general`.
        UsageError for a format it does not take (IMAGE_FORMATS: no multi-planar one), Unsupported for one the
        device has no support for (format_refusal). create_flags: "2d_array_compatible" on a 3D image, whose
        barriers the runtime records over every slice (docs/runtime.md); "alias" (VK_IMAGE_CREATE_ALIAS_BIT), which
        an image bound to memory of its own may carry."""
        vk = self.vk
        choice_argument("memory", memory, ir.MEMORY_KINDS)
        choice_argument("sharing", sharing, ("concurrent", "exclusive"))
        choice_argument("format", format, IMAGE_FORMATS)
        flags = frozenset(choice_argument("create_flags", f, ("2d_array_compatible", "alias")) for f in create_flags)
        extent = tuple(extent) + (1,) * (3 - len(extent))
        if "2d_array_compatible" in flags and extent[2] == 1:
            raise UsageError("create_flags", "2d_array_compatible is a 3D image's flag "
                                             "(VUID-VkImageCreateInfo-flags-00950)")
        why = self.format_refusal(format)
        if why is not None:
            raise Unsupported(f"image {id!r}: {why}")
        image = ir.Image(id, extent, format, mip_levels, array_layers, memory, sharing=sharing, create_flags=flags)
        # Sampled: a stream's barriers may name shader_read_only_optimal (VUID-VkImageMemoryBarrier2-oldLayout-01211).
        usage = vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT | vk.VK_IMAGE_USAGE_SAMPLED_BIT
        flags = (IMAGE_CREATE_2D_ARRAY_COMPATIBLE_BIT if image.slices_are_layers else 0) | \
            (IMAGE_CREATE_ALIAS_BIT if "alias" in image.create_flags else 0)
        if image.texel in KERNEL_VIEW_FORMATS:
            # Image bindings replay through r32ui, rg32ui or rgba32ui views (image.glsl), whatever the format: a
            # mutable format, extended usage for formats with no storage support of their own (srgb, compressed),
            # and a compressed format's views of an uncompressed one, a block per texel.
            usage |= vk.VK_IMAGE_USAGE_STORAGE_BIT
            flags |= vk.VK_IMAGE_CREATE_MUTABLE_FORMAT_BIT | IMAGE_CREATE_EXTENDED_USAGE_BIT
            if format in COMPRESSED:
                flags |= IMAGE_CREATE_BLOCK_TEXEL_VIEW_COMPATIBLE_BIT
        info = vk.VkImageCreateInfo(
            flags=flags, imageType=vk.VK_IMAGE_TYPE_3D if image.extent[2] > 1 else vk.VK_IMAGE_TYPE_2D,
            format=vk_format(vk, format), extent=extent3d(vk, image.extent), mipLevels=mip_levels,
            arrayLayers=array_layers, samples=vk.VK_SAMPLE_COUNT_1_BIT, tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=usage, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED, **self.allocator.sharing_fields(sharing))
        with self._lock:
            if sharing == "concurrent":  # as create_buffer says: its VkImage is exclusive where queues use one family
                self.instance.note("concurrent")
            try:
                handle = vk.vkCreateImage(self.device.handle, info, None)  # vkCreateImage
            except vk.VkError as error:
                raise DeviceFault(f"image {id}", "vkCreateImage", type(error).__name__) from None
            self.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_IMAGE, handle, id)
            try:
                bound = self.allocator.bind_image(id, handle, memory)
            except BaseException:
                vk.vkDestroyImage(self.device.handle, handle, None)  # vkDestroyImage
                raise
            self.images[id] = device_image = DeviceImage(image, handle, bound)
            self._zero_image(device_image)
            entry = {"id": id, "extent": list(image.extent), "format": format, "mip_levels": mip_levels,
                     "array_layers": array_layers, "memory": memory}
            if sharing != "concurrent":
                entry["sharing"] = sharing
            if image.create_flags:
                entry["create_flags"] = sorted(image.create_flags)
            self.record.declare("images", entry)

    def format_refusal(self, format: str) -> str | None:
        """Why the device cannot hold a `format` image as create_image makes them (IMAGE_FEATURES), or None: a
        compressed format is the device's to support (Lavapipe has BC, no ASTC)."""
        vk = self.vk
        have = vk.vkGetPhysicalDeviceFormatProperties(  # vkGetPhysicalDeviceFormatProperties
            self.device.physical, vk_format(vk, format)).optimalTilingFeatures
        missing = [name for name, bit in IMAGE_FEATURES.items() if not have & bit]
        if not missing:
            return None
        return f"{self.device.name} has no {', '.join(missing)} support for {format} (optimal tiling)"

    def query_pool(self, count: int):
        """A VkQueryPool of at least `count` pipeline statistics queries of compute shader invocations, for the
        replay of query result copies (record.Recorder.query_results), whose results are deterministic: each copy
        resets its queries and runs each over no command. Made at first use (a larger one when asked for more),
        destroyed at close."""
        if not self.device.pipeline_statistics:
            raise Unsupported(f"{self.device.name} has no pipelineStatisticsQuery: query result copies are replayed "
                              "from pipeline statistics queries")
        if not self.query_pools or self.query_pools[-1][1] < count:
            vk = self.vk
            info = vk.VkQueryPoolCreateInfo(
                queryType=vk.VK_QUERY_TYPE_PIPELINE_STATISTICS, queryCount=max(count, 4),
                pipelineStatistics=vk.VK_QUERY_PIPELINE_STATISTIC_COMPUTE_SHADER_INVOCATIONS_BIT)
            pool = vk.vkCreateQueryPool(self.device.handle, info, None)  # vkCreateQueryPool
            self.query_pools.append((pool, max(count, 4)))
        return self.query_pools[-1][0]

    def storage_view(self, id: str, level: int, base_layer: int, layer_count: int):
        """The r32ui, rg32ui or rgba32ui VkImageView (KERNEL_VIEW_FORMATS) of one mip level and a range of layers of
        image `id` (a 3D image: its depth), for the replay's image kernels; made at first use, destroyed with the
        image."""
        image = self.images[id]
        key = (level, base_layer, layer_count)
        if key not in image.views:
            vk, volume = self.vk, image.image.extent[2] > 1
            info = vk.VkImageViewCreateInfo(
                image=image.handle, viewType=vk.VK_IMAGE_VIEW_TYPE_3D if volume else vk.VK_IMAGE_VIEW_TYPE_2D_ARRAY,
                format=vk_format(vk, KERNEL_VIEW_FORMATS[image.image.texel]), subresourceRange=subresource_range(
                    vk, ir.Subresources(level, 1, base_layer, layer_count)))
            view = vk.vkCreateImageView(self.device.handle, info, None)  # vkCreateImageView
            self.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_IMAGE_VIEW, view, f"{id}.view{len(image.views)}")
            image.views[key] = view
        return image.views[key]

    def _zero_image(self, image: DeviceImage) -> None:
        """Every subresource cleared to zeros and left in `general`, made visible to every later command. A
        compressed image, which vkCmdClearColorImage does not take (VUID-vkCmdClearColorImage-image-00007), gets
        the zeros of a host-coherent buffer copied in (written before the submit: visible to it)."""
        vk, everything = self.vk, whole(image.image)
        zeros = None
        if image.image.format in COMPRESSED:
            zeros = self.allocator.create(f"{image.image.id}.zeros", image.image.memory_view.size, "host_coherent",
                                          vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
            self._zero(zeros)

        def record(cb) -> None:
            to_general = [vk.VkImageMemoryBarrier(
                dstAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT, oldLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
                newLayout=vk.VK_IMAGE_LAYOUT_GENERAL, srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image.handle,
                subresourceRange=subresource_range(vk, everything))]
            vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                                    0, None, 0, None, 1, to_general)  # vkCmdPipelineBarrier
            if zeros is None:
                vk.vkCmdClearColorImage(cb, image.handle, vk.VK_IMAGE_LAYOUT_GENERAL,
                                        vk.VkClearColorValue(uint32=[0] * 4), 1,
                                        [subresource_range(vk, everything)])  # vkCmdClearColorImage
            else:
                regions = self._level_copies(image.image)
                vk.vkCmdCopyBufferToImage(cb, zeros.handle, image.handle, vk.VK_IMAGE_LAYOUT_GENERAL, len(regions),
                                          regions)  # vkCmdCopyBufferToImage
            global_barrier(vk, cb, ZEROED)
        try:
            self._internal(f"image {image.image.id}", record)
        finally:
            if zeros is not None:
                self.allocator.destroy(zeros)
        image.transition(everything, "general")

    def _level_copies(self, image: ir.Image) -> list:
        """VkBufferImageCopy of each mip level, all its layers, to or from where the model's linear layout puts it
        in a buffer of the image's bytes: vkCmdCopyImageToBuffer's addressing with row length and image height 0
        (spec 20.4), texel blocks of a compressed format tightly packed as texels are."""
        vk = self.vk
        return [vk.VkBufferImageCopy(
            bufferOffset=level_offset(image.extent, image.array_layers, image.texel, level, image.block),
            bufferRowLength=0, bufferImageHeight=0, imageSubresource=layers(vk, level, 0, image.array_layers),
            imageOffset=vk.VkOffset3D(x=0, y=0, z=0), imageExtent=extent3d(vk, level_extent(image.extent, level)))
            for level in range(image.mip_levels)]

    def _zero(self, buffer: DeviceBuffer) -> None:
        """Fresh memory is zero-filled: the simulator's reference starts from zeros,
        and a fresh block can hold another run's bytes."""
        if buffer.block.mapped is not None:
            buffer.view(0, buffer.size)[:] = bytes(buffer.size)
        else:
            # The binding gives VK_WHOLE_SIZE as -1, which cffi refuses for a VkDeviceSize.
            whole_size = (1 << 64) - 1
            self._internal(f"buffer {buffer.id}", lambda cb: self.vk.vkCmdFillBuffer(
                cb, buffer.handle, 0, whole_size, 0))  # vkCmdFillBuffer

    def _internal(self, ref: str, record) -> None:
        """Record with `record(cb)`, submit on the first queue, wait: work the
        stream does not contain (zero-fill, read-back), so it is not recorded."""
        vk = self.vk
        family = self.device_family(0)
        cb = self._allocate_cb(family, ref)
        fence_info = vk.VkFenceCreateInfo()
        fence = vk.vkCreateFence(self.device.handle, fence_info, None)  # vkCreateFence
        try:
            begin = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            vk.vkBeginCommandBuffer(cb, begin)  # vkBeginCommandBuffer
            record(cb)
            vk.vkEndCommandBuffer(cb)  # vkEndCommandBuffer
            cbs = [cb]
            submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)
            submits = [submit]
            qid = next(q for q, (f, _, _) in self.device.queues.items() if f == family)
            _, queue, lock = self._queue(qid)
            with lock, self._queue_label(qid):
                self._call(ref, "vkQueueSubmit", vk.vkQueueSubmit, queue, 1, submits, fence)
            self._wait_fence_handles(ref, [fence])
        finally:
            vk.vkDestroyFence(self.device.handle, fence, None)  # vkDestroyFence
            vk.vkFreeCommandBuffers(self.device.handle, self.pools[family], 1, [cb])  # vkFreeCommandBuffers

    def device_idle(self) -> None:
        """vkDeviceWaitIdle, not recorded (the replay's end, before reading back)."""
        self._call("device idle", "vkDeviceWaitIdle", self.vk.vkDeviceWaitIdle, self.device.handle)

    def read_back(self, id: str) -> bytes:
        """A buffer's or image's bytes now, not recorded: call after device_idle. Memory the
        host cannot map is copied to a host-coherent staging buffer first."""
        if id in self.images:
            return self._read_back_image(self.images[id])
        buffer = self.buffers[id]
        if buffer.block.mapped is not None:
            self.allocator.flush(buffer, 0, buffer.size, invalidate=True)
            return bytes(buffer.view(0, buffer.size))
        staging = self.allocator.create(f"{id}.readback", buffer.size, "host_coherent",
                                        self.vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        try:
            regions = [self.vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=buffer.size)]

            def record(cb) -> None:
                self.vk.vkCmdCopyBuffer(cb, buffer.handle, staging.handle, 1, regions)  # vkCmdCopyBuffer
                global_barrier(self.vk, cb, READ_BACK)
            self._internal(f"read back {id}", record)
            return bytes(staging.view(0, buffer.size))
        finally:
            self.allocator.destroy(staging)

    def _read_back_image(self, image: DeviceImage) -> bytes:
        """The image's bytes in the model's linear layout (model/images.py): each mip level, all its layers, copied
        to where that layout puts them (_level_copies). Each subresource is first made transfer_src_optimal from the
        layout the stream left it in; a 2d_array_compatible image stays in general (record.Recorder.image_fields)."""
        vk, ir_image = self.vk, image.image
        size = ir_image.memory_view.size
        staging = self.allocator.create(f"{ir_image.id}.readback", size, "host_coherent",
                                        vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        source = "general" if ir_image.slices_are_layers else "transfer_src_optimal"
        barriers = [vk.VkImageMemoryBarrier(
            srcAccessMask=vk.VK_ACCESS_MEMORY_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT,
            oldLayout=vk_layout(vk, layout), newLayout=vk_layout(vk, source),
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            image=image.handle, subresourceRange=subresource_range(vk, ir.Subresources(level, 1, layer, 1)))
            for (level, layer), layout in image.layouts.items()]
        regions = self._level_copies(ir_image)
        try:
            def record(cb) -> None:
                vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                                        0, 0, None, 0, None, len(barriers), barriers)  # vkCmdPipelineBarrier
                vk.vkCmdCopyImageToBuffer(cb, image.handle, vk_layout(vk, source), staging.handle, len(regions),
                                          regions)  # vkCmdCopyImageToBuffer
                global_barrier(vk, cb, READ_BACK)
            self._internal(f"read back {ir_image.id}", record)
            image.transition(whole(ir_image), source)
            return bytes(staging.view(0, size))
        finally:
            self.allocator.destroy(staging)

    def scratch_buffer(self, of: str, size: int) -> DeviceBuffer:
        """A device-local buffer for a read_write binding's input copy; lives until close."""
        usage = self.vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
        buffer = self.allocator.create(f"{of}.scratch{len(self.scratch)}", size, "device_local", usage)
        self.scratch.append(buffer)
        return buffer

    def vk_buffer(self, id: str):
        buffer = self.buffers[id]
        if buffer.handle is None:
            raise Unsupported(f"buffer {id!r} is used after its destroy")
        return buffer.handle

    def create_semaphore(self, id: str, timeline: bool = False, initial: int = 0) -> None:
        vk = self.vk
        kind = vk.VkSemaphoreTypeCreateInfo(semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE if timeline
                                            else vk.VK_SEMAPHORE_TYPE_BINARY, initialValue=initial)
        info = vk.VkSemaphoreCreateInfo(pNext=kind)
        with self._lock:
            handle = vk.vkCreateSemaphore(self.device.handle, info, None)  # vkCreateSemaphore
            self.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_SEMAPHORE, handle, id)
            self.semaphores[id] = (handle, "timeline" if timeline else "binary")
            self.record.declare("semaphores", {"id": id, "type": "timeline" if timeline else "binary",
                                               "initial": initial})

    def create_fence(self, id: str, signaled: bool = False) -> None:
        vk = self.vk
        info = vk.VkFenceCreateInfo(flags=vk.VK_FENCE_CREATE_SIGNALED_BIT if signaled else 0)
        with self._lock:
            handle = vk.vkCreateFence(self.device.handle, info, None)  # vkCreateFence
            self.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_FENCE, handle, id)
            self.fences[id] = handle
            self.armed[id] = signaled
            self.record.declare("fences", {"id": id, "signaled": signaled})

    def create_event(self, id: str) -> None:
        """vkCreateEvent: unsignaled, and settable by the host (no VK_EVENT_CREATE_DEVICE_ONLY_BIT)."""
        vk = self.vk
        info = vk.VkEventCreateInfo()
        with self._lock:
            handle = vk.vkCreateEvent(self.device.handle, info, None)  # vkCreateEvent
            self.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_EVENT, handle, id)
            self.events[id] = handle
            self.record.declare("events", {"id": id})

    def declare_shader(self, id: str, bindings: Iterable[str]) -> None:
        """An abstract shader (docs/format.md): replayed by a generic kernel, and atomic_add per atomic binding."""
        self.abstract_shaders[id] = tuple(bindings)
        self.record.declare_shader(id, bindings)

    def load_shader(self, name: str, spirv: bytes) -> tuple[str, ...]:
        """The program's own compute shader, dispatched by `name` like a library one: its bindings
        (set 0, in binding order) and push constants reflected from the SPIR-V, and declared in the
        stream with the access its code makes of each buffer. Returns those accesses."""
        from ..shaders import library, stream_accesses

        if name in library() or name in self.doc["shaders"]:
            raise ValueError(f"shader {name!r} exists already (the library's, or loaded or declared before)")
        # An untouched binding is declared read: the stream has no `none` access, and may declare more.
        accesses = tuple(a if a != "none" else "read" for a in stream_accesses(self.pipelines.add(name, spirv)))
        self.record.declare_shader(name, accesses)
        return accesses

    def command_buffer(self, id: str) -> CommandBuffer:
        """The recorder for command buffer `id` (builder method names)."""
        self.recorders.add(id)
        return CommandBuffer(self.record.commands_of(id))

    def load_command_buffer(self, cb: ir.CommandBuffer) -> None:
        """Record a whole IR command buffer (the replay's way in)."""
        self.record.set_command_buffer(cb.id, [command_to_dict(c) for c in cb.commands], cb.commands)

    # ---- host ops (each takes `id` and `label` keywords, as commands do) ----

    def submit(self, queue: str, command_buffers: Iterable[str] = (), wait: Iterable[dict] = (),
               signal: Iterable[dict] = (), fence: str | None = None, thread: str = "main", **tag) -> None:
        """vkQueueSubmit2 with one batch; wait/signal: {"semaphore", "value"?, "stage"?}. UsageError for a queue
        or semaphore the runtime does not have, or a wait/signal entry with another key."""
        choice_argument("queue", queue, tuple(self.device.queues))

        def sem(d: dict) -> ir.SemaphoreOp:
            if not isinstance(d, Mapping) or set(d) - {"semaphore", "value", "stage"} or "semaphore" not in d:
                raise UsageError("wait/signal", f"expected {{'semaphore', 'value'?, 'stage'?}}, got {d!r}")
            choice_argument("semaphore", d["semaphore"], tuple(self.semaphores))
            stage = d.get("stage", ["all_commands"])
            stages = frozenset([stage] if isinstance(stage, str) else stage)
            return ir.SemaphoreOp(d["semaphore"], d.get("value"), stages)
        batch = ir.Batch(tuple(map(sem, wait)), tuple(command_buffers), tuple(map(sem, signal)))
        self.execute(thread, ir.Submit(queue, (batch,), fence, **tag))

    def wait_fences(self, fences: Iterable[str], thread: str = "main", **tag) -> None:
        self.execute(thread, ir.WaitFences(tuple(fences), **tag))

    def reset_fences(self, fences: Iterable[str], thread: str = "main", **tag) -> None:
        self.execute(thread, ir.ResetFences(tuple(fences), **tag))

    def wait_semaphores(self, waits: Mapping[str, int], thread: str = "main", **tag) -> None:
        self.execute(thread, ir.WaitSemaphores(tuple(ir.SemaphoreValue(s, v) for s, v in waits.items()), **tag))

    def signal_semaphore(self, semaphore: str, value: int, thread: str = "main", **tag) -> None:
        self.execute(thread, ir.SignalSemaphore(semaphore, value, **tag))

    def host_write(self, buffer: str, data: bytes, offset: int = 0, thread: str = "main", **tag) -> None:
        payload = ir.Data(base64=base64.b64encode(data).decode())
        self.execute(thread, ir.HostAccess("host_write", buffer, offset, len(data), payload, **tag))

    def host_read(self, buffer: str, offset: int = 0, size: int | None = None, thread: str = "main",
                  **tag) -> bytes:
        size = self.buffers[buffer].size - offset if size is None else size
        return self.execute(thread, ir.HostAccess("host_read", buffer, offset, size, **tag))

    def flush(self, buffer: str, offset: int = 0, size: int | None = None, thread: str = "main", **tag) -> None:
        size = self.buffers[buffer].size - offset if size is None else size
        self.execute(thread, ir.HostAccess("flush", buffer, offset, size, **tag))

    def invalidate(self, buffer: str, offset: int = 0, size: int | None = None, thread: str = "main",
                   **tag) -> None:
        size = self.buffers[buffer].size - offset if size is None else size
        self.execute(thread, ir.HostAccess("invalidate", buffer, offset, size, **tag))

    def queue_wait_idle(self, queue: str, thread: str = "main", **tag) -> None:
        self.execute(thread, ir.QueueWaitIdle(queue, **tag))

    def device_wait_idle(self, thread: str = "main", **tag) -> None:
        self.execute(thread, ir.DeviceWaitIdle(self.doc["devices"][0]["id"], **tag))

    def destroy(self, buffer: str, thread: str = "main", **tag) -> None:
        self.execute(thread, ir.Destroy(buffer, **tag))

    def set_event(self, event: str, thread: str = "main", **tag) -> None:
        """vkSetEvent."""
        self.execute(thread, ir.HostSetEvent(event, **tag))

    def reset_event(self, event: str, thread: str = "main", **tag) -> None:
        """vkResetEvent."""
        self.execute(thread, ir.HostResetEvent(event, **tag))

    def execute(self, thread: str, op: ir.HostOp, at: Mapping[str, str] | None = None):
        """Run one host op of `thread` and record it; a host_read returns its bytes.

        at: command buffer id -> the submit reference its commands are named
        with (the replay passes it for command buffers submitted more than once).
        """
        op = self.before(thread, op if op.source is not None else replace(op, source=caller()))
        if op is None:  # a hook dropped it
            return None
        if isinstance(op, ir.HostAccess):
            self._host_visible(op)
        ref = self.record.append_op(thread, host_op_to_dict(op))
        self.instance.operation = ref
        if isinstance(op, ir.Submit):
            return self._submit(ref, op, at or {})
        if isinstance(op, ir.WaitFences):
            self._await_armed(ref, op.fences)
            return self._wait_fence_handles(ref, [self.fences[f] for f in op.fences])
        if isinstance(op, ir.ResetFences):
            handles = [self.fences[f] for f in op.fences]
            with self._lock:
                self.armed.update(dict.fromkeys(op.fences, False))
            return self._call(ref, "vkResetFences", self.vk.vkResetFences, self.device.handle, len(handles), handles)
        if isinstance(op, ir.GetSemaphoreCounterValue):
            return self._get_semaphore_counter_value(ref, op)
        if isinstance(op, ir.WaitSemaphores):
            return self._wait_semaphores(ref, op)
        if isinstance(op, ir.SignalSemaphore):
            return self.vk_signal_semaphore(ref, op)
        if isinstance(op, ir.HostAccess):
            return self._host_access(ref, op)
        if isinstance(op, ir.QueueWaitIdle):
            _, queue, lock = self._queue(op.queue)
            with lock, self._queue_label(op.queue):
                return self._call(ref, "vkQueueWaitIdle", self.vk.vkQueueWaitIdle, queue)
        if isinstance(op, ir.DeviceWaitIdle):
            return self._call(ref, "vkDeviceWaitIdle", self.vk.vkDeviceWaitIdle, self.device.handle)
        if isinstance(op, ir.HostSetEvent):
            return self._call(ref, "vkSetEvent", self.vk.vkSetEvent, self.device.handle, self.events[op.event])
        if isinstance(op, ir.HostResetEvent):
            return self._call(ref, "vkResetEvent", self.vk.vkResetEvent, self.device.handle, self.events[op.event])
        with self._lock:
            if op.buffer in self.images:  # with the memory of its own that create_image bound
                image = self.images.pop(op.buffer)
                self.vk.vkDestroyImage(self.device.handle, image.handle, None)  # vkDestroyImage
                return self.vk.vkFreeMemory(self.device.handle, image.memory, None)  # vkFreeMemory
            return self.allocator.destroy(self.buffers[op.buffer])

    def vk_signal_semaphore(self, ref: str, op: ir.SignalSemaphore) -> None:
        """vkSignalSemaphore for `op`: execute() records it first; the runtime mutation calls it alone to give
        back a signal it dropped, so that the work waiting for it drains (close() waits for the device)."""
        info = self.vk.VkSemaphoreSignalInfo(semaphore=self.semaphores[op.semaphore][0], value=op.value)
        self._call(ref, "vkSignalSemaphore", self.vk.vkSignalSemaphore, self.device.handle, info)

    def before(self, thread: str, op: ir.HostOp, uploads: bool = True) -> ir.HostOp | None:
        """`op` as the hooks leave it (None: dropped): the uploader first and the online check last,
        unless the op is the uploader's own (uploads=False), which neither sees."""
        hooks = ([self.uploader] if uploads and self.uploader is not None else []) + self.hooks
        for hook in hooks + ([self.online] if uploads and self.check else []):
            op = hook.before(thread, op)
            if op is None:
                return None
        return op

    def happens_before(self):
        """The checker's state over everything recorded so far (online.OnlineCheck.happens_before): the
        runtime mutation reads it instead of re-checking the whole stream at every op."""
        return self.online.happens_before()

    def findings(self) -> list:
        """What `check(self.stream())` finds, from the incremental state (happens_before)."""
        return self.online.findings()

    def _host_visible(self, op: ir.HostAccess) -> None:
        """Refuse a host access to memory the stream's kind does not make host-visible, before it is recorded: on
        every device, though Lavapipe maps device_local memory too (a program passing here would fail on a GPU)."""
        choice_argument("buffer", op.buffer, tuple(self.buffers))
        buffer = self.buffers[op.buffer]
        if buffer.kind == "device_local" or buffer.block.mapped is None:
            raise Unsupported(f"{op.op} on {op.buffer!r}, whose memory ({buffer.kind}) is not host-visible: use "
                              "host_coherent, host_cached or device_host_visible memory, or copy through one")

    def _host_access(self, ref: str, op: ir.HostAccess):
        buffer = self.buffers[op.buffer]
        if op.op == "host_write":
            buffer.view(op.offset, op.size)[:] = data_bytes(op.data, op.size, op.buffer, ref)
            # Flushed even where coherent: a capture layer told so (GFXReconstruct's assisted memory
            # tracking) records exactly these bytes, now, not whole dirty pages at the next submit.
            # The note before it tells an import that this flush is the write's, not a stream flush.
            self.instance.note(op.op)
            self.allocator.flush(buffer, op.offset, op.size, invalidate=False)
        elif op.op == "host_read":
            # Invalidated even where coherent, for the same reason: a capture records no reads, only this
            # call, so an import can place the read here, over these bytes; noted as the read's, as above.
            self.instance.note(op.op)
            self.allocator.flush(buffer, op.offset, op.size, invalidate=True)
            return bytes(buffer.view(op.offset, op.size))
        else:
            self.allocator.flush(buffer, op.offset, op.size, invalidate=op.op == "invalidate")
        return None

    # ---- submission --------------------------------------------------------

    def _queue(self, queue: str):
        return self.device.queues[queue]

    def _queue_label(self, queue: str):
        """The label region that makes the VkQueue's calls inside it stream queue `queue`'s in a capture:
        several stream queues (and families) may share one VkQueue (importer/__init__.py reads it)."""
        return self.instance.queue_label(self._queue(queue)[1], f"queue {queue}, family {self.group_of[queue]}")

    def _allocate_cb(self, family: int, name: str, secondary: bool = False):
        vk = self.vk
        if family not in self.pools:
            info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=family)
            self.pools[family] = vk.vkCreateCommandPool(self.device.handle, info, None)  # vkCreateCommandPool
        level = vk.VK_COMMAND_BUFFER_LEVEL_SECONDARY if secondary else vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY
        info = vk.VkCommandBufferAllocateInfo(commandPool=self.pools[family], level=level, commandBufferCount=1)
        cb = vk.vkAllocateCommandBuffers(self.device.handle, info)[0]  # vkAllocateCommandBuffers
        self.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_COMMAND_BUFFER, cb, name)
        return cb

    def _vk_command_buffer(self, cb_id: str, at: str | None, family: int, runs: Mapping[str, str] | None = None,
                           secondary: bool = False):
        """The VkCommandBuffer for a stream command buffer, recorded at its first
        submit (one per submission where `at` names it). runs: the submission's references (as `at`) of
        the command buffers it runs; a secondary one (spec 6.7) is recorded at level SECONDARY, once per
        queue family (vkCmdExecuteCommands takes only its pool's family), when the one that executes it
        reaches its vkCmdExecuteCommands."""
        key = (cb_id, at, family) if secondary else (cb_id, at)
        if key not in self.recorded:
            vk = self.vk
            commands = self.record.commands(cb_id)
            cb = self._allocate_cb(family, with_submit(cb_id, at), secondary)  # the layer's messages name it
            # Simultaneous use: a stream may submit a command buffer again while it is pending (a secondary: run
            # by several primaries pending at once). A secondary inherits no render pass (compute only).
            begin = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
                                                pInheritanceInfo=vk.VkCommandBufferInheritanceInfo()
                                                if secondary else None)
            vk.vkBeginCommandBuffer(cb, begin)  # vkBeginCommandBuffer
            timed = self.timestamps is not None and not secondary  # a secondary's time is its primary's
            if timed:
                self.timestamps.begin(key, cb)
            recorder = Recorder(self, cb, cb_id, at,
                                lambda s: self._vk_command_buffer(s, (runs or {}).get(s), family, runs, True))
            for index, command in enumerate(commands):
                recorder.command(index, command)
            if timed:
                self.timestamps.end(key, cb)
            vk.vkEndCommandBuffer(cb)  # vkEndCommandBuffer
            self.recorded[key] = cb
            self._recorded_ids.add(cb_id)
        return self.recorded[key]

    def was_recorded(self, cb_id: str) -> bool:
        """Whether a submit recorded `cb_id` into a VkCommandBuffer already (its commands can no longer change)."""
        return cb_id in self._recorded_ids

    def _submit(self, ref: str, op: ir.Submit, at: Mapping[str, str]) -> None:
        vk, sync2 = self.vk, self.device.synchronization2
        family, queue, lock = self._queue(op.queue)
        with self._lock:
            cbs = [[self._vk_command_buffer(c, at.get(c), family, at) for c in b.command_buffers] for b in op.batches]
            self.instance.operation = ref
            self._take_binary_signals(ref, op)
            keep, submits = [], []
            for batch, handles in zip(op.batches, cbs):
                if sync2:
                    waits = [vk.VkSemaphoreSubmitInfo(semaphore=self.semaphores[w.semaphore][0], value=w.value or 0,
                                                      stageMask=stage_mask(w.stage, True, False))
                             for w in batch.waits]
                    signals = [vk.VkSemaphoreSubmitInfo(semaphore=self.semaphores[s.semaphore][0], value=s.value or 0,
                                                        stageMask=stage_mask(s.stage, True, True))
                               for s in batch.signals]
                    infos = [vk.VkCommandBufferSubmitInfo(commandBuffer=h) for h in handles]
                    keep += [waits, signals, infos]
                    submits.append(vk.VkSubmitInfo2(
                        waitSemaphoreInfoCount=len(waits), pWaitSemaphoreInfos=waits or None,
                        commandBufferInfoCount=len(infos), pCommandBufferInfos=infos or None,
                        signalSemaphoreInfoCount=len(signals), pSignalSemaphoreInfos=signals or None))
                else:
                    wait_handles = [self.semaphores[w.semaphore][0] for w in batch.waits]
                    wait_values = [w.value or 0 for w in batch.waits]
                    stages = [stage_mask(w.stage, False, False) for w in batch.waits]
                    signal_handles = [self.semaphores[s.semaphore][0] for s in batch.signals]
                    signal_values = [s.value or 0 for s in batch.signals]
                    timeline = vk.VkTimelineSemaphoreSubmitInfo(
                        waitSemaphoreValueCount=len(wait_values), pWaitSemaphoreValues=wait_values or None,
                        signalSemaphoreValueCount=len(signal_values), pSignalSemaphoreValues=signal_values or None)
                    keep += [wait_handles, wait_values, stages, signal_handles, signal_values, timeline, handles]
                    submits.append(vk.VkSubmitInfo(
                        pNext=timeline, waitSemaphoreCount=len(wait_handles), pWaitSemaphores=wait_handles or None,
                        pWaitDstStageMask=stages or None, commandBufferCount=len(handles),
                        pCommandBuffers=handles or None, signalSemaphoreCount=len(signal_handles),
                        pSignalSemaphores=signal_handles or None))
            fence = self.fences[op.fence] if op.fence is not None else None
            with lock, self._queue_label(op.queue):
                if sync2:
                    self._call(ref, "vkQueueSubmit2", vk.vkQueueSubmit2, queue, len(submits), submits, fence)
                else:
                    self._call(ref, "vkQueueSubmit", vk.vkQueueSubmit, queue, len(submits), submits, fence)
            if op.fence is not None:
                self.armed[op.fence] = True
            for batch in op.batches:
                for s in batch.signals:
                    if self.semaphores[s.semaphore][1] == "binary":
                        self.pending_binary[s.semaphore] = self.pending_binary.get(s.semaphore, 0) + 1
            self._submitted.notify_all()

    def _await_armed(self, ref: str, fences: tuple[str, ...]) -> None:
        """A fence wait starts once each fence is signaled or submitted: another host thread's
        vkQueueSubmit with the fence (externally synchronized there) must not overlap vkWaitForFences."""
        deadline = time.monotonic() + WAIT_LIMIT_S
        with self._lock:
            while not all(self.armed[f] for f in fences):
                if self.aborted.is_set() or time.monotonic() > deadline:
                    raise DeviceFault(ref, "vkWaitForFences", "timed out (nothing submits the fence)")
                self._submitted.wait(0.1)

    def _take_binary_signals(self, ref: str, op: ir.Submit) -> None:
        """A binary wait may only be submitted once its signal is pending: host
        threads of a replay wait here for the submit that signals it."""
        deadline = time.monotonic() + WAIT_LIMIT_S
        for batch in op.batches:
            for w in batch.waits:
                if self.semaphores[w.semaphore][1] != "binary":
                    continue
                while not self.pending_binary.get(w.semaphore):
                    if self.aborted.is_set() or time.monotonic() > deadline:
                        raise DeviceFault(ref, "vkQueueSubmit2",
                                          f"binary semaphore {w.semaphore} has no pending signal")
                    self._submitted.wait(0.1)
                self.pending_binary[w.semaphore] -= 1

    # ---- waits and calls -----------------------------------------------------

    def _call(self, ref: str, function: str, fn, *args):
        """Call a Vulkan function; a VkError becomes a DeviceFault naming `ref`."""
        try:
            return fn(*args)
        except self.vk.VkError as error:
            self.aborted.set()
            raise DeviceFault(ref, function, type(error).__name__) from None

    def _wait(self, ref: str, function: str, attempt) -> None:
        """Wait in slices so an aborted run (another thread failed) stops waiting."""
        deadline = time.monotonic() + WAIT_LIMIT_S
        while True:
            try:
                return self._call(ref, function, attempt)
            except self.vk.VkTimeout:  # VK_TIMEOUT is a success code, not a VkError
                pass
            if self.aborted.is_set() or time.monotonic() > deadline:
                raise DeviceFault(ref, function, "timed out (the run was aborted or nothing signals)")

    def _wait_fence_handles(self, ref: str, handles: list) -> None:
        vk = self.vk
        self._wait(ref, "vkWaitForFences", lambda: vk.vkWaitForFences(self.device.handle, len(handles), handles,
                                                                         vk.VK_TRUE, WAIT_SLICE_NS))

    def _wait_semaphores(self, ref: str, op: ir.WaitSemaphores) -> None:
        vk = self.vk
        handles = [self.semaphores[w.semaphore][0] for w in op.waits]
        values = [w.value for w in op.waits]
        info = vk.VkSemaphoreWaitInfo(semaphoreCount=len(handles), pSemaphores=handles, pValues=values)
        self._wait(ref, "vkWaitSemaphores", lambda: vk.vkWaitSemaphores(self.device.handle, info, WAIT_SLICE_NS))

    def _get_semaphore_counter_value(self, ref: str, op: ir.GetSemaphoreCounterValue) -> None:
        """Reads the counter until it has reached the value the stream says was read, as a polling program does."""
        vk, wait = self.vk, op.waits[0]
        handle = self.semaphores[wait.semaphore][0]

        def attempt() -> None:
            if vk.vkGetSemaphoreCounterValue(self.device.handle, handle) < wait.value:
                raise vk.VkTimeout()  # not there yet: _wait reads again

        self._wait(ref, "vkGetSemaphoreCounterValue", attempt)

    # ---- output and teardown -------------------------------------------------

    def stream(self) -> ir.Stream:
        """Everything the program did so far, as a validated stream."""
        return self.record.stream()

    def gpu_nanoseconds(self) -> dict[str, float]:
        """With `timestamps`, once the device is idle: each recorded command buffer (`cb0`, `cb0@main[3]` where
        recorded per submission) -> the GPU nanoseconds from before its first command to after its last."""
        if self.timestamps is None:
            raise UsageError("timestamps", "the runtime was made without timestamps=True")
        return {with_submit(cb_id, at): ns for (cb_id, at), ns in self.timestamps.nanoseconds().items()}

    def close(self) -> None:
        """Wait for the device, then destroy everything created; idempotent."""
        if getattr(self, "uploader", None) is not None:
            self.uploader.close()
        vk, device = self.instance.vk, self.device
        if device is not None and device.handle is not None:
            try:
                vk.vkDeviceWaitIdle(device.handle)  # vkDeviceWaitIdle
            except vk.VkError:
                pass  # a lost device: destroy what we created all the same
            for b in list(self.buffers.values()) + self.scratch:
                self.allocator.destroy(b)
            images, self.images = self.images, {}
            for image in images.values():
                for view in image.views.values():
                    vk.vkDestroyImageView(device.handle, view, None)  # vkDestroyImageView
                vk.vkDestroyImage(device.handle, image.handle, None)  # vkDestroyImage
                vk.vkFreeMemory(device.handle, image.memory, None)  # vkFreeMemory
            pools, self.query_pools = self.query_pools, []
            for pool, _ in pools:
                vk.vkDestroyQueryPool(device.handle, pool, None)  # vkDestroyQueryPool
            self.allocator.release()
            self.pipelines.release()
            if self.timestamps is not None:
                self.timestamps.release()
            pools, self.pools = self.pools, {}
            for pool in pools.values():
                vk.vkDestroyCommandPool(device.handle, pool, None)  # vkDestroyCommandPool (frees its buffers)
            self.recorded.clear()
            self._recorded_ids.clear()
            semaphores, self.semaphores = self.semaphores, {}
            for handle, _ in semaphores.values():
                vk.vkDestroySemaphore(device.handle, handle, None)  # vkDestroySemaphore
            fences, self.fences = self.fences, {}
            for handle in fences.values():
                vk.vkDestroyFence(device.handle, handle, None)  # vkDestroyFence
            events, self.events = self.events, {}
            for handle in events.values():
                vk.vkDestroyEvent(device.handle, handle, None)  # vkDestroyEvent
            device.release()
        self.instance.release()
        hooks, self.hooks = getattr(self, "hooks", []), []
        for hook in hooks:
            hook.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "instance", None) is not None and self.instance.handle is not None:
            self.close()
