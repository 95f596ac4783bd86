"""The stream IR: frozen dataclasses for the whole `vkverify-stream/1` format.

Fields carry the format's names. Defaults that depend on other parts of the
stream (a binding's size, a copy's regions) are resolved by the loader, so
every consumer sees explicit values.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import comb
from dataclasses import dataclass, field
from functools import cached_property

from .images import (DEPTH_STENCIL, FORMATS, aspect_names, block_extent, box_ranges, level_offset, merge_ranges,
                     plane_formats, range_ranges, slice_ranges, subresources_text)
from .refs import format_ref, split_ref

__all__ = [
    "EVENT_COMMANDS",
    "HOST_VISIBLE_KINDS",
    "MEMORY_KINDS",
    "SYNC_COMMANDS",
    "Barrier",
    "Batch",
    "Binding",
    "BlitImage",
    "Buffer",
    "BufferBarrier",
    "ClearColorImage",
    "ClearDepthStencilImage",
    "CommandBuffer",
    "Copy",
    "CopyBufferToImage",
    "CopyImage",
    "CopyImageToBuffer",
    "CopyQueryPoolResults",
    "Data",
    "Destroy",
    "Device",
    "DeviceWaitIdle",
    "Dispatch",
    "Event",
    "ExecuteCommands",
    "ExpectedFinding",
    "Fence",
    "Fill",
    "GetSemaphoreCounterValue",
    "HostAccess",
    "HostResetEvent",
    "HostSetEvent",
    "Ignore",
    "Image",
    "ImageBarrier",
    "ImageBlit",
    "ImageCopy",
    "ImageCopyRegion",
    "ImageRegion",
    "IndirectRef",
    "Param",
    "Queue",
    "QueueWaitIdle",
    "Region",
    "ResetEvent",
    "ResetFences",
    "ResolveImage",
    "Semaphore",
    "SemaphoreOp",
    "SemaphoreValue",
    "SetEvent",
    "ShaderDecl",
    "SignalSemaphore",
    "Stream",
    "StreamIndex",
    "SubmissionOrder",
    "Submit",
    "Subresources",
    "Tagged",
    "Thread",
    "Update",
    "WaitEvents",
    "WaitFences",
    "WaitSemaphores",
    "WriteBufferMarker",
    "batches",
    "idle_queues",
    "queues_called",
    "submission_orders",
    "submits",
    "submitted",
]

FORMAT = "vkverify-stream/1"
MEMORY_KINDS = ("device_local", "host_coherent", "host_cached", "device_host_visible")
HOST_VISIBLE_KINDS = ("host_coherent", "host_cached", "device_host_visible")  # the host can map them
Stages = frozenset[str]
Accesses = frozenset[str]


@dataclass(frozen=True, slots=True)
class Queue:
    id: str
    family: int = 0


@dataclass(frozen=True, slots=True)
class Device:
    id: str
    queues: tuple[Queue, ...]


@dataclass(frozen=True, slots=True)
class Buffer:
    id: str
    size: int
    memory: str = "device_local"
    devices: tuple[str, ...] = ("gpu0",)
    alias_of: str | None = None
    offset: int = 0  # within alias_of's memory
    sharing: str = "concurrent"  # extension: "exclusive" enables ownership checks


@dataclass(frozen=True, slots=True)
class Subresources:
    """VkImageSubresourceRange: mip levels and array layers of the aspects (None: every aspect of the image;
    images.aspect_names)."""

    base_mip_level: int = 0
    level_count: int = 1
    base_array_layer: int = 0
    layer_count: int = 1
    aspects: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Image:
    """An image; its accesses are of the bytes of its linear layout (model/images.py)."""

    id: str
    extent: tuple[int, int, int]
    format: str = "r8g8b8a8_unorm"
    mip_levels: int = 1
    array_layers: int = 1
    memory: str = "device_local"
    devices: tuple[str, ...] = ("gpu0",)
    sharing: str = "concurrent"
    create_flags: frozenset[str] = frozenset()  # VkImageCreateFlags: "2d_array_compatible", "alias"
    samples: int = 1  # VkSampleCountFlagBits: a texel's samples lie together in the layout
    alias_of: str | None = None  # an image of the same parameters bound to the same memory (resources.adoc)

    @property
    def slices_are_layers(self) -> bool:
        """A 3D image created 2D_ARRAY_COMPATIBLE: an image barrier's layers are its depth slices (maintenance9)."""
        return "2d_array_compatible" in self.create_flags

    @property
    def texel(self) -> int:
        """The texel block's size in bytes."""
        return FORMATS[self.format]

    @property
    def block(self) -> tuple[int, int]:
        """The texel block's extent (width, height) in texels."""
        return block_extent(self.format)

    @property
    def planes(self) -> tuple[tuple[tuple[int, int, int], int, int, int], ...]:
        """Each plane's (extent, texel size, first byte, end byte) in the layout: one plane but in a multi-planar
        format or a depth/stencil one (an aspect a plane), whose planes lie one after the other (model/images.py,
        PLANES, DEPTH_STENCIL)."""
        out, at = [], 0
        for texel, (dx, dy) in plane_formats(self.format, self.texel * self.samples):
            extent = (-(-self.extent[0] // dx), -(-self.extent[1] // dy), self.extent[2])
            end = at + level_offset(extent, self.array_layers, texel, self.mip_levels, self.block)
            out.append((extent, texel, at, end))
            at = end
        return tuple(out)

    @property
    def memory_view(self) -> Buffer:
        """The image as the memory the checker keeps: a buffer of its layout's bytes, under the image's id."""
        return Buffer(self.id, self.planes[-1][3], self.memory, self.devices, self.alias_of, 0, self.sharing)

    @property
    def aspects(self) -> tuple[str, ...]:
        """Its aspects, one per plane of its layout where it has several (images.aspect_names)."""
        return aspect_names(self.format)

    def ranges(self, r: Subresources) -> list[tuple[int, int]]:
        """The bytes of a subresource range, in every plane of its aspects."""
        return merge_ranges((at + lo, at + hi) for aspect, (extent, texel, at, _) in zip(self.aspects, self.planes)
                            if r.aspects is None or aspect in r.aspects for lo, hi in range_ranges(
            extent, self.array_layers, texel, r.base_mip_level, r.level_count, r.base_array_layer, r.layer_count,
            self.block))

    def barrier_ranges(self, r: Subresources) -> list[tuple[int, int]]:
        """The bytes of an image barrier's subresource range: its layers are depth slices where slices_are_layers."""
        if self.slices_are_layers:
            return slice_ranges(self.extent, self.texel, r.base_mip_level, r.level_count, r.base_array_layer,
                                r.layer_count, self.block)
        return self.ranges(r)

    def subresources_text(self, lo: int, hi: int) -> str:
        """The subresources bytes [lo, hi) of the layout hold, for people (`plane 1 level 0 layer 0` in a
        multi-planar format, `stencil level 0 layer 0` in a depth/stencil one)."""
        planes = self.planes
        names = self.aspects if self.format in DEPTH_STENCIL else [f"plane {p}" for p in range(len(planes))]
        return ", ".join(
            ("" if len(planes) == 1 else f"{names[p]} ") + part
            for p, (extent, texel, at, end) in enumerate(planes) if lo < end and hi > at
            for part in subresources_text(extent, self.array_layers, texel, self.mip_levels, max(lo, at) - at,
                                          min(hi, end) - at, self.block).split(", "))

    def box(self, level: int, base_layer: int, layer_count: int, offset: tuple[int, int, int],
            extent: tuple[int, int, int], plane: int = 0) -> list[tuple[int, int]]:
        """The bytes of a box of texels of one mip level of one plane (its own texels), in each of the layers."""
        size, texel, at, _ = self.planes[plane]
        return [(at + lo, at + hi) for lo, hi in box_ranges(size, self.array_layers, texel, level, base_layer,
                                                            layer_count, offset, extent, self.block)]


@dataclass(frozen=True, slots=True)
class Semaphore:
    id: str
    type: str = "binary"  # "binary" | "timeline"
    initial: int = 0
    # The semaphore whose payload this one imports (vkImportSemaphoreFdKHR of the other's exported handle): two
    # handles of one payload. The loader names the payload's semaphore wherever this one is waited or signalled.
    payload_of: str | None = None


@dataclass(frozen=True, slots=True)
class Fence:
    id: str
    signaled: bool = False


@dataclass(frozen=True, slots=True)
class Event:
    id: str


@dataclass(frozen=True, slots=True)
class ShaderDecl:
    """An abstract shader: per binding, "read", "write", "read_write", "uniform", "atomic", "sampled" or "none"."""

    id: str
    bindings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Data:
    """Contents for host_write/update: a pattern or literal base64 bytes."""

    pattern: str | None = None
    value: int | None = None
    seed: int | None = None
    base64: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Tagged:
    """What every command and host op may carry: an `id` to refer to it by, a `label` for people, and the
    `source` line (file:line) of the program that issued it; `source` is no part of the operation's value."""

    id: str | None = None
    label: str | None = None
    source: str | None = field(default=None, compare=False)


# ---- commands ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Region:
    src_offset: int
    dst_offset: int
    size: int


@dataclass(frozen=True, slots=True)
class Copy(Tagged):
    src: str
    dst: str
    regions: tuple[Region, ...]


@dataclass(frozen=True, slots=True)
class Fill(Tagged):
    dst: str
    offset: int
    size: int
    value: int = 0


@dataclass(frozen=True, slots=True)
class Update(Tagged):
    dst: str
    offset: int
    size: int
    data: Data | None = None


@dataclass(frozen=True, slots=True)
class Binding:
    buffer: str  # or a storage image's id, with `subresources`
    offset: int
    size: int
    access: str  # "read" | "write" | "read_write" | "uniform" | "atomic" | "sampled" (an image's) | "none"
    subresources: Subresources | None = None  # a storage image binding: the view's levels and layers
    ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)  # its bytes (loader: model/images.py)


@dataclass(frozen=True, slots=True)
class ImageRegion:
    """VkBufferImageCopy: a box of one mip level's layers, and where its texels lie in the buffer (row length and
    image height in texels; 0: the box's own)."""

    buffer_offset: int
    buffer_row_length: int
    buffer_image_height: int
    mip_level: int
    base_array_layer: int
    layer_count: int
    image_offset: tuple[int, int, int]
    image_extent: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class ImageCopyRegion:
    """VkImageCopy."""

    src_mip_level: int
    src_base_array_layer: int
    dst_mip_level: int
    dst_base_array_layer: int
    layer_count: int
    src_offset: tuple[int, int, int]
    dst_offset: tuple[int, int, int]
    extent: tuple[int, int, int]
    src_plane: int = 0  # VK_IMAGE_ASPECT_PLANE_n_BIT of a multi-planar image (0: color, or plane 0)
    dst_plane: int = 0


@dataclass(frozen=True, slots=True)
class ImageCopy(Tagged):
    """A copy to or from an image; `regions` as written (ImageRegion, or ImageCopyRegion between images), and the bytes
    each side touches, resolved by the loader (a buffer's rows; an image's layout, model/images.py)."""

    src: str
    dst: str
    regions: tuple
    src_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    dst_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)


@dataclass(frozen=True, slots=True)
class CopyBufferToImage(ImageCopy):
    """vkCmdCopyBufferToImage: regions of ImageRegion."""


@dataclass(frozen=True, slots=True)
class CopyImageToBuffer(ImageCopy):
    """vkCmdCopyImageToBuffer: regions of ImageRegion."""


@dataclass(frozen=True, slots=True)
class CopyImage(ImageCopy):
    """vkCmdCopyImage: regions of ImageCopyRegion."""


@dataclass(frozen=True, slots=True)
class ResolveImage(Tagged):
    """vkCmdResolveImage: regions of ImageCopyRegion (VkImageResolve has VkImageCopy's fields), from a multisampled
    image's texels (all their samples) to a single-sampled one's."""

    src: str
    dst: str
    regions: tuple[ImageCopyRegion, ...]
    src_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    dst_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)


@dataclass(frozen=True, slots=True)
class ImageBlit:
    """VkImageBlit: each side's two corners (srcOffsets, dstOffsets), in one mip level's layers."""

    src_mip_level: int
    src_base_array_layer: int
    dst_mip_level: int
    dst_base_array_layer: int
    layer_count: int
    src_offsets: tuple[tuple[int, int, int], tuple[int, int, int]]
    dst_offsets: tuple[tuple[int, int, int], tuple[int, int, int]]


@dataclass(frozen=True, slots=True)
class BlitImage(Tagged):
    """vkCmdBlitImage: regions of ImageBlit scaled with `filter` ("nearest" or "linear"), and the bytes each side
    touches (loader: model/images.py)."""

    src: str
    dst: str
    regions: tuple[ImageBlit, ...]
    filter: str = "nearest"
    src_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)
    dst_ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)


@dataclass(frozen=True, slots=True)
class ClearColorImage(Tagged):
    image: str
    subresources: tuple[Subresources, ...]
    value: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)  # their bytes (loader)


@dataclass(frozen=True, slots=True)
class ClearDepthStencilImage(Tagged):
    """vkCmdClearDepthStencilImage: the aspects of each subresource range to `depth` and `stencil`."""

    image: str
    subresources: tuple[Subresources, ...]
    depth: float = 0.0
    stencil: int = 0
    ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)  # their bytes (loader)


@dataclass(frozen=True, slots=True)
class IndirectRef:
    buffer: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Dispatch(Tagged):
    shader: str
    bindings: tuple[Binding, ...]
    groups: tuple[int, int, int] = (1, 1, 1)
    push: tuple[float, ...] = ()
    indirect: IndirectRef | None = None  # set: dispatch_indirect


@dataclass(frozen=True, slots=True)
class BufferBarrier:
    buffer: str
    offset: int
    size: int
    src_stage: Stages
    src_access: Accesses
    dst_stage: Stages
    dst_access: Accesses
    src_family: int | None = None
    dst_family: int | None = None


@dataclass(frozen=True, slots=True)
class ImageBarrier:
    """VkImageMemoryBarrier2 of the color aspect; a layout transition where the layouts differ."""

    image: str
    subresources: Subresources
    src_stage: Stages
    src_access: Accesses
    dst_stage: Stages
    dst_access: Accesses
    old_layout: str = "general"
    new_layout: str = "general"
    src_family: int | None = None
    dst_family: int | None = None
    ranges: tuple[tuple[int, int], ...] = field(default=(), repr=False)  # the subresources' bytes (loader)

    @property
    def transition(self) -> bool:
        return self.old_layout != self.new_layout


@dataclass(frozen=True, slots=True)
class Barrier(Tagged):
    """vkCmdPipelineBarrier2: one global memory barrier, or buffer and image barriers."""

    src_stage: Stages
    src_access: Accesses
    dst_stage: Stages
    dst_access: Accesses
    buffers: tuple[BufferBarrier, ...] = ()
    images: tuple[ImageBarrier, ...] = ()


@dataclass(frozen=True, slots=True)
class SetEvent(Tagged):
    """vkCmdSetEvent (`stage`: its stageMask) or vkCmdSetEvent2 (`dependency`: its dependency info, whose source
    stages are `stage`)."""

    event: str
    stage: Stages
    dependency: Barrier | None = None

    @property
    def first_scopes(self) -> tuple[Stages, ...]:
        """The source stages of each memory dependency the set defines the first half of (7.5 vkCmdSetEvent2: one
        per memory barrier of its dependency; vkCmdSetEvent: its stageMask alone)."""
        d = self.dependency
        if d is None:
            return (self.stage,)
        # As check/barriers.compile_barrier makes entries of it: its buffer barriers, each image barrier's ranges.
        return tuple(b.src_stage for b in d.buffers) + tuple(b.src_stage for b in d.images for _ in b.ranges) \
            or (d.src_stage,)


@dataclass(frozen=True, slots=True)
class ResetEvent(Tagged):
    """vkCmdResetEvent(2)."""

    event: str
    stage: Stages


@dataclass(frozen=True, slots=True)
class WaitEvents(Tagged):
    """vkCmdWaitEvents(2): per event, the dependency its wait inserts (vkCmdWaitEvents: one for all)."""

    events: tuple[str, ...]
    dependencies: tuple[Barrier, ...]


@dataclass(frozen=True, slots=True)
class WriteBufferMarker(Tagged):
    """vkCmdWriteBufferMarker(2)AMD: a 4-byte write of `marker` at `offset` of `dst`, after earlier work of `stage`."""

    dst: str
    offset: int
    stage: Stages
    marker: int = 0


@dataclass(frozen=True, slots=True)
class CopyQueryPoolResults(Tagged):
    """vkCmdCopyQueryPoolResults: `query_count` results of `result_size` bytes each (a 32- or 64-bit value, and its
    availability word where asked), `stride` apart from `offset` of `dst`. The query pool itself is not modelled."""

    dst: str
    offset: int
    stride: int
    query_count: int = 1
    result_size: int = 4


@dataclass(frozen=True, slots=True)
class ExecuteCommands(Tagged):
    """vkCmdExecuteCommands: the secondary command buffers' commands run here, in order (spec 6.7)."""

    command_buffers: tuple[str, ...]


Command = (Copy | Fill | Update | Dispatch | Barrier | SetEvent | ResetEvent | WaitEvents | CopyBufferToImage |
           CopyImageToBuffer | CopyImage | BlitImage | ResolveImage | ClearColorImage | ClearDepthStencilImage |
           ExecuteCommands | WriteBufferMarker | CopyQueryPoolResults)

EVENT_COMMANDS = (SetEvent, ResetEvent, WaitEvents)
SYNC_COMMANDS = (Barrier, *EVENT_COMMANDS)  # the commands that synchronize and access no memory


@dataclass(frozen=True, slots=True)
class CommandBuffer:
    id: str
    commands: tuple[Command, ...]


# ---- host ops ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SemaphoreOp:
    semaphore: str
    value: int | None = None  # timeline only
    stage: Stages = frozenset({"all_commands"})


@dataclass(frozen=True, slots=True)
class Batch:
    waits: tuple[SemaphoreOp, ...] = ()
    command_buffers: tuple[str, ...] = ()
    signals: tuple[SemaphoreOp, ...] = ()


@dataclass(frozen=True, slots=True)
class Submit(Tagged):
    queue: str
    batches: tuple[Batch, ...]
    fence: str | None = None


@dataclass(frozen=True, slots=True)
class WaitFences(Tagged):
    fences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResetFences(Tagged):
    fences: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SemaphoreValue:
    semaphore: str
    value: int


@dataclass(frozen=True, slots=True)
class WaitSemaphores(Tagged):
    waits: tuple[SemaphoreValue, ...]


@dataclass(frozen=True, slots=True)
class GetSemaphoreCounterValue(WaitSemaphores):
    """vkGetSemaphoreCounterValue that read `waits[0].value`: a host wait for it, already satisfied (docs/format.md)."""


@dataclass(frozen=True, slots=True)
class SignalSemaphore(Tagged):
    semaphore: str
    value: int


@dataclass(frozen=True, slots=True)
class HostAccess(Tagged):
    """host_write / host_read / flush / invalidate over a byte range."""

    op: str
    buffer: str
    offset: int
    size: int
    data: Data | None = None


@dataclass(frozen=True, slots=True)
class QueueWaitIdle(Tagged):
    queue: str


@dataclass(frozen=True, slots=True)
class DeviceWaitIdle(Tagged):
    device: str


@dataclass(frozen=True, slots=True)
class Destroy(Tagged):
    buffer: str


@dataclass(frozen=True, slots=True)
class HostSetEvent(Tagged):
    """vkSetEvent."""

    event: str


@dataclass(frozen=True, slots=True)
class HostResetEvent(Tagged):
    """vkResetEvent."""

    event: str


HostOp = (Submit | WaitFences | ResetFences | WaitSemaphores | SignalSemaphore | HostAccess | QueueWaitIdle |
          DeviceWaitIdle | Destroy | HostSetEvent | HostResetEvent)


@dataclass(frozen=True, slots=True)
class Thread:
    id: str
    ops: tuple[HostOp, ...]


# ---- params and expect ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    min: int
    max: int


@dataclass(frozen=True, slots=True)
class ExpectedFinding:
    kind: str
    buffer: str | None = None
    first: str | None = None
    second: str | None = None
    ops: tuple[str, ...] | None = None
    params: tuple[tuple[str, int], ...] | None = None  # the counterexample's values, for a params stream
    range: tuple[int, int] | None = None  # the finding's byte range [lo, hi) in its buffer, when given


@dataclass(frozen=True, slots=True)
class Ignore:
    """A finding the stream's author accepts (`ignore`): matched as an `expect` entry is, reported as suppressed."""

    finding: ExpectedFinding
    reason: str


@dataclass(frozen=True)
class Stream:
    name: str
    devices: tuple[Device, ...]
    buffers: tuple[Buffer, ...]
    semaphores: tuple[Semaphore, ...] = ()
    fences: tuple[Fence, ...] = ()
    shaders: tuple[ShaderDecl, ...] = ()
    command_buffers: tuple[CommandBuffer, ...] = ()
    threads: tuple[Thread, ...] = ()
    params: tuple[Param, ...] = ()
    expect: tuple[ExpectedFinding, ...] | None = None
    description: str | None = None
    ignore: tuple[Ignore, ...] = ()
    events: tuple[Event, ...] = ()
    images: tuple[Image, ...] = ()
    # A params stream: every combination of values (smallest first) and its plain stream.
    instances: tuple[tuple[tuple[tuple[str, int], ...], Stream], ...] = field(default=(), compare=False, repr=False)

    @property
    def memories(self) -> tuple[Buffer, ...]:
        """Every memory the checker keeps: the buffers, and each image as a buffer of its layout's bytes."""
        return self.buffers + tuple(i.memory_view for i in self.images)

    @cached_property
    def index(self) -> StreamIndex:
        return StreamIndex(self)


def submits(stream: Stream) -> Iterator[tuple[Thread, Submit]]:
    """Each submit with its thread, thread by thread in program order."""
    return ((t, op) for t in stream.threads for op in t.ops if isinstance(op, Submit))


def batches(stream: Stream) -> Iterator[tuple[Submit, Batch]]:
    """Each batch of each submit (submits() order), with its submit."""
    return ((op, b) for _, op in submits(stream) for b in op.batches)


def idle_queues(index: StreamIndex, op: QueueWaitIdle | DeviceWaitIdle) -> list[str]:
    """Spec 5.3.4: vkQueueWaitIdle waits for one queue, vkDeviceWaitIdle for every queue of the device."""
    if isinstance(op, QueueWaitIdle):
        return [op.queue]
    return [q for q, (device, _) in index.queues.items() if device == op.device]


def queues_called(index: StreamIndex, op: object) -> list[str]:
    """The queues a host op calls (spec 7.2 submission order): a submit's, an idle wait's (5.3.4); none else."""
    if isinstance(op, Submit):
        return [op.queue]
    return idle_queues(index, op) if isinstance(op, (QueueWaitIdle, DeviceWaitIdle)) else []


SubmissionOrder = dict[str, tuple[tuple[str, int], ...]]  # queue -> its calls as (thread, op position), in order


def submission_orders(stream: Stream, most: int) -> list[SubmissionOrder] | None:
    """Spec 7.2 submission order, "the order in which vkQueueSubmit commands are executed on the host, for a
    single queue": per queue, its submits and idle waits (5.3.4: a fence submitted after every earlier
    submission) as (thread, op position). One thread's calls come in its program order; those of several threads
    to one queue in every interleaving (the queue is externally synchronized, in an order the stream does not
    record), each queue's independently. None where there are more than `most`."""
    calls: dict[str, dict[str, list]] = {q: {} for q in stream.index.queues}
    for t in stream.threads:
        for pc, op in enumerate(t.ops):
            for q in queues_called(stream.index, op):
                calls[q].setdefault(t.id, []).append((t.id, pc))
    n = 1  # how many: per queue, the ways to place each thread's calls among those of the threads before it
    for by in calls.values():
        placed = 0
        for c in by.values():
            placed += len(c)
            n *= comb(placed, len(c))
            if n > most:
                return None
    orders: list[SubmissionOrder] = [{}]
    for q, by in calls.items():
        orders = [{**order, q: merged} for order in orders for merged in _interleavings(list(by.values()))]
    return orders


def _interleavings(calls: list[list]) -> Iterator[tuple]:
    """Every merge of the sequences `calls` that keeps each one's order."""
    calls = [c for c in calls if c]
    if len(calls) <= 1:
        yield tuple(x for c in calls for x in c)
        return
    for i, c in enumerate(calls):
        for rest in _interleavings(calls[:i] + [c[1:]] + calls[i + 1:]):
            yield (c[0], *rest)


def submitted(op: object) -> list[str]:
    """The command buffers a host op submits, batch by batch (none for another op)."""
    return [cb for b in op.batches for cb in b.command_buffers] if isinstance(op, Submit) else []


class StreamIndex:
    """Lookups by id, derived from a Stream (not part of its value)."""

    def __init__(self, stream: Stream) -> None:
        self.buffers = {b.id: b for b in stream.memories}
        self.images = {i.id: i for i in stream.images}
        self.semaphores = {s.id: s for s in stream.semaphores}
        self.fences = {f.id: f for f in stream.fences}
        self.events = {e.id: e for e in stream.events}
        self.shaders = {s.id: s for s in stream.shaders}
        self.command_buffers = {c.id: c for c in stream.command_buffers}
        self.queues = {q.id: (d.id, q) for d in stream.devices for q in d.queues}
        self.devices = {d.id: d for d in stream.devices}
        self.threads = {t.id: t for t in stream.threads}
        self.ids = {c.id: format_ref(cb.id, i) for cb in stream.command_buffers
                    for i, c in enumerate(cb.commands) if c.id is not None}
        self.ids.update({op.id: format_ref(t.id, i) for t in stream.threads
                         for i, op in enumerate(t.ops) if op.id is not None})
        # Each command buffer's vkCmdExecuteCommands: one pass, only where the stream has secondaries.
        self.executes = {cb.id: tuple(c for c in cb.commands if type(c) is ExecuteCommands)
                         for cb in stream.command_buffers}
        counts: dict[str, int] = {}
        secondaries = any(self.executes.values())
        for _, b in batches(stream):
            for cb in b.command_buffers:
                for run in self.executed(cb) if secondaries else (cb,):
                    counts[run] = counts.get(run, 0) + 1
        self.resubmitted = frozenset(cb for cb, n in counts.items() if n > 1)

    def commands_of(self, cb: str) -> Iterator[tuple[str, int, Command]]:
        """(command buffer, position, command) of every command an execution of cb runs, in submission order: a
        vkCmdExecuteCommands runs its secondary command buffers' commands in its place (spec 6.7)."""
        for i, c in enumerate(self.command_buffers[cb].commands):
            if isinstance(c, ExecuteCommands):
                for s in c.command_buffers:
                    yield from self.commands_of(s)
            else:
                yield cb, i, c

    def executed(self, cb: str, within: tuple[str, ...] = ()) -> list[str]:
        """cb and the secondary command buffers its vkCmdExecuteCommands run, transitively (a cycle, which the
        loader refuses, is not followed)."""
        out = [cb]
        for c in self.executes.get(cb, ()):
            for s in c.command_buffers:
                if s not in within and s != cb:
                    out += self.executed(s, within + (cb,))
        return out

    def source(self, ref: str) -> str | None:
        """The program's file:line recorded with the command or host op `ref` names (`cb0[2]`,
        `cb0[2]@main[5]`, `main[3].batches[0].wait[1]`, an id); None where none was recorded."""
        split = split_ref(self.ids.get(ref, ref))
        if split is None:
            return None
        owner, index = split[0].owner, split[0].index
        items = self.command_buffers[owner].commands if owner in self.command_buffers else \
            self.threads[owner].ops if owner in self.threads else ()
        return items[index].source if index < len(items) else None

    def command_ref(self, cb: str, i: int, submit: str) -> str:
        """docs/format.md references: `cb0[2]`, or `cb0[2]@main[5]` when cb0 is submitted more than once."""
        return format_ref(cb, i, submit if cb in self.resubmitted else None)

    def root(self, buffer_id: str) -> tuple[str, int]:
        """The buffer whose memory `buffer_id` names, and its offset in it."""
        offset = 0
        buf = self.buffers[buffer_id]
        while buf.alias_of is not None:
            offset += buf.offset
            buf = self.buffers[buf.alias_of]
        return buf.id, offset
