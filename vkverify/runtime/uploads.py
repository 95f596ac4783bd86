"""Staged uploads (PROTOCOLS.md 1): data into DEVICE_LOCAL memory through host
staging slots, or through the map where the device has a large host-visible window.

    with Runtime() as rt, Uploader(rt) as up:
        up.upload("W0", 0, weights)                # any size, streamed through the slots
        staging = up.staging_array(n)              # host memory the copy reads straight from:
        dequantize(q, out=staging); up.upload("W4", 0, staging)  # no host copy (returns once read)
        up.commit([("W1", 0, a), ("W2", 0, b)])    # one submit: all or nothing
        up.deferred("W3", 0, c)                    # copied at the head of the next command buffer reading W3
        up.finish()                                # landed: any queue may read
        up.report()                                # bytes staged, copies, submits, ...
        check(up.stream())                         # everything it did, recorded

A destination is a stream buffer: an alias of an arena block, created by the
first upload that names it, bound in the runtime's command buffers by its id.
The uploader records into the runtime's stream (thread `thread`), so the
program's readers and the uploads are checked together.

Throughput: each staged byte crosses host memory three times (read from the
source, written into a slot, read by the copy). On the H200's host that, not
PCIe, is the bound: a 1 GiB upload reaches about 0.3 of one raw vkCmdCopyBuffer's
throughput with the default slots, about 0.63 with Uploader(slots=2,
slot_size=128 << 20), and a host copy running beside a device copy caps it near
0.69 (benchmarks/uploads.py, benchmarks/upload_paths.py). A source produced in
place in a staging_array() crosses it once more (a buffered file read into it is
a host copy of its own; O_DIRECT, decompression or dequantization into it is not).

Environment: VKVERIFY_STAGED=1|0 forces or forbids staging;
VKVERIFY_HOST_VISIBLE_CAP_MB=N caps the host-visible heap the placement rule
sees; VKVERIFY_FAULT=<point>[:n] fails the n-th hit of a point (FAULT_POINTS).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..model import ir
from .errors import DeviceFault, DeviceLost, RuntimeFault, UploadFailed
from .memory import Block, DeviceBuffer, choose_type, flag_names
from .record import Recorder, global_barrier

BLOCK_SIZE = 256 << 20
SLOT_SIZE = 16 << 20
COPY_ALIGN = 256  # PROTOCOLS.md 1: each copy's source offset is rounded up to 256 bytes
# Host copies larger than this are split across the copy threads, in pieces no smaller. On the
# H200 a 16 MiB slot copied in 1 MiB pieces by 16 threads ran at 0.22 of the raw copy, in 2 MiB
# pieces by 8 at 0.35: below a few MiB a piece costs more to hand out than to copy.
COPY_SPLIT = 2 << 20
WAIT_SLICE_NS = 100_000_000
WAIT_LIMIT_S = 60.0
FAULT_POINTS = ("stage", "block", "record", "submit", "wait", "commit")
UPLOAD_QUEUE = "upload"  # the stream queue id a program requests for uploads (choose_queue)
# A slot's last command: its copies (and a fresh block's fill) made visible to any later command.
LANDING = {"src_stage": ["copy", "clear"], "src_access": ["transfer_write"], "dst_stage": ["all_commands"],
           "dst_access": ["memory_read", "memory_write"], "label": "landing barrier"}
# The same, as IR: loading the slot's command buffer through the loader per submit cost ~1 ms a slot.
LANDING_BARRIER = ir.Barrier(**{k: frozenset(v) if isinstance(v, list) else v for k, v in LANDING.items()})
# After a fresh block's fill: the copies into the block write after it.
FILLED = {"src_stage": ["clear"], "src_access": ["transfer_write"], "dst_stage": ["copy"],
          "dst_access": ["transfer_write"], "label": "fill before copies"}
# After a fresh block's fill that the host then writes through the map (mapped mode).
FILLED_FOR_HOST = {"src_stage": ["clear"], "src_access": ["transfer_write"], "dst_stage": ["host"],
                   "dst_access": ["host_write"], "label": "fill before host writes"}


# ---- the placement rule --------------------------------------------------------


def staged(heaps: list[dict], types: list[dict], env=os.environ) -> tuple[bool, str]:
    """PROTOCOLS.md 1: staged when the device-local host-visible heap is under a
    quarter of the largest device-local heap, or absent. VKVERIFY_STAGED forces
    either way; VKVERIFY_HOST_VISIBLE_CAP_MB caps the host-visible heap the rule sees
    (a small BAR window emulated on any card). heaps: {size, device_local};
    types: {heap, flags} (flag names), as `vkverify devices` lists them."""
    local = [h["size"] for h in heaps if h["device_local"]]
    largest = max(local, default=0)
    bar = max((heaps[t["heap"]]["size"] for t in types
               if {"DEVICE_LOCAL", "HOST_VISIBLE"} <= set(t["flags"])), default=0)
    cap = env.get("VKVERIFY_HOST_VISIBLE_CAP_MB")
    if cap:
        bar = min(bar, int(cap) << 20)
    decision = bar < largest / 4
    why = (f"device-local host-visible heap {bar >> 20} MiB{' (capped)' if cap else ''}, "
           f"largest device-local heap {largest >> 20} MiB")
    forced = env.get("VKVERIFY_STAGED")
    if forced in ("0", "1"):
        decision, why = forced == "1", f"VKVERIFY_STAGED={forced} ({why})"
    return decision, f"{'staged' if decision else 'mapped'}: {why}"


def memory_layout(vk, physical) -> tuple[list[dict], list[dict]]:
    """The device's heaps and memory types in the placement rule's terms."""
    memory = vk.vkGetPhysicalDeviceMemoryProperties(physical)  # vkGetPhysicalDeviceMemoryProperties
    heaps = [{"size": memory.memoryHeaps[i].size,
              "device_local": bool(memory.memoryHeaps[i].flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)}
             for i in range(memory.memoryHeapCount)]
    types = [{"heap": memory.memoryTypes[i].heapIndex, "flags": flag_names(vk, memory.memoryTypes[i].propertyFlags)}
             for i in range(memory.memoryTypeCount)]
    return heaps, types


# ---- faults and the report --------------------------------------------------------


class Faults:
    """VKVERIFY_FAULT=<point>[:n]: the n-th hit (default 1) of `point` fails."""

    def __init__(self, spec: str | None) -> None:
        self.point, self.nth, self.hits, self.fired = None, 1, dict.fromkeys(FAULT_POINTS, 0), []
        if spec:
            point, _, nth = spec.partition(":")
            if point not in FAULT_POINTS or (nth and not nth.isdigit()):
                raise ValueError(f"VKVERIFY_FAULT={spec!r} must be <point>[:n] with point one of {FAULT_POINTS}")
            self.point, self.nth = point, int(nth or 1)

    def hit(self, point: str) -> bool:
        self.hits[point] += 1
        if point == self.point and self.hits[point] == self.nth:
            self.fired.append(f"{point}:{self.nth}")
            return True
        return False


@dataclass(frozen=True)
class UploadReport:
    mode: str  # "staged" | "mapped"
    reason: str  # the placement rule's words
    queue: str  # "transfer" | "spare" | "main": which queue the uploads go to (PROTOCOLS.md 1)
    bytes_staged: int  # through staging slots (staged) or written through the map (mapped)
    copies: int  # vkCmdCopyBuffer regions recorded
    submits: int
    blocks_zero_filled: int
    resident_host_bytes: int  # destination bytes that live only in host memory now
    faults_fired: tuple[str, ...]


# ---- the uploader ---------------------------------------------------------------


@dataclass(eq=False)
class Slot:
    index: int
    base: int  # in the staging buffer
    cb: object
    fence: object
    fence_id: str
    pending: bool = False  # submitted, fence not waited yet
    signaled: bool = False  # waited and not reset yet
    keep: list = field(default_factory=list)  # source arrays its copies read (keep-alive until the fence)
    used: int = 0
    commands: list | None = None  # the stream command buffer being recorded, None when closed
    fills: list = field(default_factory=list)  # blocks whose zero-fill this slot's command buffer holds
    reads_arrays: bool = False  # its copies read staging arrays: the caller may refill them after its fence


@dataclass(eq=False)
class Deferred:
    dst: DeviceBuffer
    offset: int
    source: DeviceBuffer  # host-coherent, holds the bytes until the consumer's copy has run
    consumed: bool = False  # its copy is at the head of a submitted command buffer
    fence: str | None = None  # the uploader's fence on that submit; None: the program's own, held until close


class Uploader:
    """One per device (Runtime): its own command pool, `slots` staging slots of
    `slot_size` bytes in one persistently mapped buffer, a command buffer and a
    fence per slot, destinations from an arena of `block_size` blocks. One
    upload at a time (its lock); `queue_lock` is the lock every submit to the
    uploader's VkQueue takes (the program's too, when that is the main queue).
    `staging`: the slots' memory kind, host_coherent or host_cached (each host copy is
    then flushed before its submit)."""

    def __init__(self, rt, slots: int = 2, slot_size: int = SLOT_SIZE, block_size: int = BLOCK_SIZE,
                 thread: str = "main", copy_threads: int | None = None, staging: str = "host_coherent") -> None:
        if staging not in ("host_coherent", "host_cached"):
            raise ValueError(f"staging memory kind {staging!r}: host_coherent or host_cached")
        if rt.uploader is not None:
            raise ValueError("the runtime already has an uploader (one per device)")
        vk = self.vk = rt.vk
        self.rt, self.thread, self.slot_size = rt, thread, -(-slot_size // COPY_ALIGN) * COPY_ALIGN
        self.block_size = -(-block_size // COPY_ALIGN) * COPY_ALIGN
        self.faults = Faults(os.environ.get("VKVERIFY_FAULT"))
        self.lost = self.closed = False
        self._lock = threading.Lock()
        self.stats = dict.fromkeys(("bytes_staged", "copies", "submits", "blocks_zero_filled"), 0)
        heaps, types = memory_layout(vk, rt.device.physical)
        self.staged, self.reason = staged(heaps, types)
        self.queue_id, self.queue_kind = choose_queue(rt)
        self.family, self.queue, self.queue_lock = rt.device.queues[self.queue_id]
        self.properties = vk.vkGetPhysicalDeviceMemoryProperties(rt.device.physical)
        self.kind = "device_local" if self.staged else (
            "device_host_visible" if any({"DEVICE_LOCAL", "HOST_VISIBLE"} <= set(t["flags"]) for t in types)
            else "host_coherent")
        self.blocks: list[tuple[str, Block, object]] = []  # (stream id, block, VkBuffer over it)
        self.unfilled: set[int] = set()  # ids of blocks not zero-filled yet
        self.destinations: dict[str, DeviceBuffer] = {}
        self.deferred_copies: list[Deferred] = []
        self.n_cbs = self.n_deferred = 0
        self.pool = self.staging = None
        self.slots: list[Slot] = []
        self.arrays: list[tuple[int, DeviceBuffer]] = []  # staging_array(): (host address, buffer)
        self.open: Slot | None = None
        self.next = 0
        self.copy_threads = copy_threads or min(16, os.cpu_count() or 1)
        self.pool_threads = ThreadPoolExecutor(self.copy_threads)
        try:
            info = vk.VkCommandPoolCreateInfo(flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                              queueFamilyIndex=self.family)
            self.pool = vk.vkCreateCommandPool(rt.device.handle, info, None)  # vkCreateCommandPool
            alloc = vk.VkCommandBufferAllocateInfo(commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                                   commandBufferCount=slots)
            cbs = vk.vkAllocateCommandBuffers(rt.device.handle, alloc)  # vkAllocateCommandBuffers
            fence_info = vk.VkFenceCreateInfo()
            for i in range(slots):
                fence = vk.vkCreateFence(rt.device.handle, fence_info, None)  # vkCreateFence
                self.slots.append(Slot(i, i * self.slot_size, cbs[i], fence, f"upload.F{i}"))
                self._declare("fences", {"id": f"upload.F{i}", "signaled": False})
            if self.staged:
                self.staging = rt.allocator.create("upload.staging", slots * self.slot_size, staging,
                                                   vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
                self.staging_bytes = np.frombuffer(self.staging.view(0, self.staging.size), np.uint8)
                self._declare("buffers", {"id": "upload.staging", "size": self.staging.size, "memory": staging})
        except BaseException:
            self.close()
            raise
        rt.uploader = self

    # ---- the API ----------------------------------------------------------------

    def upload(self, dst: str, offset: int, data) -> None:
        """Put `data` (numpy array or bytes) at `offset` of destination `dst`,
        creating it (offset + data size bytes) on first use. Returns once every
        byte is in a submitted slot (from a staging_array(): copied); on the
        uploader's own queue later submits may read it (the landing barrier),
        other queues after `finish()`.
        UploadFailed: this upload failed and `dst` is released. DeviceLost."""
        self._transfer([(dst, offset, data)], group=False)

    def staging_array(self, shape, dtype=np.uint8) -> np.ndarray:
        """A zeroed array in host-coherent memory of its own, valid until close(). Filled
        in place (dequantized or decompressed into it, say) and handed to upload() or
        commit(), whole or a slice, it is copied straight to the device, without the host
        copy into a slot; that call returns once the device has read it, so the caller
        may refill it."""
        with self._lock:
            self._alive()
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            array_id = f"upload.array{len(self.arrays)}"
            try:
                buf = self.rt.allocator.create(array_id, max(nbytes, 4), "host_coherent",
                                               self.vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
            except RuntimeFault as error:
                raise UploadFailed("stage", f"staging array: {error}") from None
            view = np.frombuffer(buf.view(0, nbytes), np.uint8)
            view[:] = 0
            self.arrays.append((view.ctypes.data, buf))
            self._declare("buffers", {"id": array_id, "size": buf.size, "memory": "host_coherent"})
            return view.view(dtype).reshape(shape)

    def commit(self, group) -> None:
        """Several (dst, offset, data) in one submit (streamed through the slots
        when they do not fit one): all or nothing. UploadFailed: none of the
        group's destinations is left resident. DeviceLost."""
        self._transfer(list(group), group=True)

    def deferred(self, dst: str, offset: int, data) -> None:
        """Hold `data` in host memory; the copy is recorded at the head of the next
        command buffer submitted through the runtime that reads `dst` (mapped
        mode: written through the map now). UploadFailed, DeviceLost."""
        with self._lock:
            self._alive()
            raw = as_bytes(data)
            try:
                buf = self._destination(dst, offset + raw.size)
                if not self.staged:
                    self._write_mapped(buf, offset, raw)
                    return
                if id(buf.block) in self.unfilled:
                    # The consumer may run on any queue: fill the fresh block now and wait for it.
                    self._fill_now(buf.block)
                source = self.rt.allocator.create(f"upload.deferred{self.n_deferred}", max(raw.size, 4),
                                                  "host_coherent", self.vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
            except UploadFailed as error:
                self._fail(error, [dst])
                raise
            self.n_deferred += 1
            source.view(0, raw.size)[:] = raw
            self.rt.buffers[source.id] = source
            self._declare("buffers", {"id": source.id, "size": source.size, "memory": "host_coherent"})
            self._op({"op": "host_write", "buffer": source.id, "offset": 0, "size": raw.size,
                      "label": f"deferred upload of {dst}"})
            self.deferred_copies.append(Deferred(buf, offset, source))

    def finish(self) -> None:
        """Submit the open slot and wait for every slot and every consumed deferred
        copy: the data has landed, any queue may read it. DeviceLost."""
        with self._lock:
            self._alive()
            if self.open is not None:
                self._submit_open()
            self._wait_all()
            for d in [d for d in self.deferred_copies if d.fence is not None]:
                self._wait_fence(self.rt.fences[d.fence], d.fence, f"deferred copy into {d.dst.id}")
                self._op({"op": "destroy", "buffer": d.source.id})
                self.rt.allocator.destroy(d.source)
                self.deferred_copies.remove(d)

    def report(self) -> UploadReport:
        pending = sum(d.source.size for d in self.deferred_copies if not d.consumed)
        host_types = {i for i in range(self.properties.memoryTypeCount) if not self.properties.memoryTypes[i]
                      .propertyFlags & self.vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT}
        in_host = sum(b.size for b in self.destinations.values() if b.handle is not None
                      and b.block.type_index in host_types)
        return UploadReport("staged" if self.staged else "mapped", self.reason, self.queue_kind,
                            resident_host_bytes=pending + in_host, faults_fired=tuple(self.faults.fired),
                            **self.stats)

    def stream(self) -> ir.Stream:
        """The runtime's stream: every upload, and what the program did around them."""
        return self.rt.stream()

    def before_submit(self, op: ir.Submit) -> ir.Submit:
        """The runtime's hook before a submit: pending deferred copies go to the
        head of the first command buffer of `op` that reads their destination and
        is not recorded yet; without a fence of its own, the submit gets one that
        `finish()` waits before freeing the held bytes."""
        with self._lock:
            waiting = [d for d in self.deferred_copies if not d.consumed]
            if not waiting or self.lost:
                return op
            consumed = []
            for cb_id in (c for b in op.batches for c in b.command_buffers):
                if any(key[0] == cb_id for key in self.rt.recorded):
                    continue
                reads = reads_of(self.rt._commands(cb_id))
                head = []
                for d in [d for d in waiting if d.dst.id in reads]:
                    head.append({"cmd": "copy", "src": d.source.id, "dst": d.dst.id, "label": "deferred upload",
                                 "regions": [{"src_offset": 0, "dst_offset": d.offset, "size": d.source.size}]})
                    waiting.remove(d)
                    consumed.append(d)
                    self.stats["copies"] += 1
                if head:
                    self.rt.command_buffers[cb_id][:0] = head + [{"cmd": "barrier", **LANDING, "src_stage": ["copy"]}]
            if not consumed:
                return op
            fence = None
            if op.fence is None:
                fence = f"upload.deferredF{len(self.rt.fences)}"
                self.rt.create_fence(fence)
                op = dataclasses.replace(op, fence=fence)
            for d in consumed:
                # A program's own fence may be reset before finish(): then the bytes wait for close().
                d.consumed, d.fence = True, fence
            return op

    def close(self) -> None:
        """Wait for the device, free what the uploader created; idempotent. Not
        recorded: teardown, like Runtime.close."""
        if self.closed:
            return
        self.closed = True
        vk, rt = self.vk, self.rt
        handle = rt.device.handle
        self.pool_threads.shutdown()
        try:
            vk.vkDeviceWaitIdle(handle)  # vkDeviceWaitIdle
        except vk.VkError:
            pass  # a lost device: its work counts as complete, destroying is allowed
        for d in self.deferred_copies:
            rt.allocator.destroy(d.source)
        self.deferred_copies.clear()
        for buf in self.destinations.values():
            rt.allocator.destroy(buf)
        for _, block, buffer in self.blocks:
            vk.vkDestroyBuffer(handle, buffer, None)  # vkDestroyBuffer
            if block.mapped is not None:
                vk.vkUnmapMemory(handle, block.memory)  # vkUnmapMemory
            vk.vkFreeMemory(handle, block.memory, None)  # vkFreeMemory
        self.blocks.clear()
        if self.staging is not None:
            self.staging_bytes = None
            rt.allocator.destroy(self.staging)
        for _, array in self.arrays:
            rt.allocator.destroy(array)
        self.arrays.clear()
        for slot in self.slots:
            slot.keep.clear()
            vk.vkDestroyFence(handle, slot.fence, None)  # vkDestroyFence
        if self.pool is not None:
            vk.vkDestroyCommandPool(handle, self.pool, None)  # vkDestroyCommandPool (frees its command buffers)
        if rt.uploader is self:
            rt.uploader = None

    def __enter__(self) -> Uploader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- one transfer ---------------------------------------------------------------

    def _transfer(self, items: list, group: bool) -> None:
        with self._lock:
            self._alive()
            try:
                for i, (dst, offset, data) in enumerate(items):
                    if group and i == 1 and self.faults.hit("commit"):
                        raise UploadFailed("commit", "injected after the first tensor", injected=True)
                    raw = as_bytes(data)
                    buf = self._destination(dst, offset + raw.size)
                    array = self._array_of(raw)
                    if self.staged and array is not None:
                        self._copy_array(buf, offset, *array, raw.size)
                    elif self.staged:
                        self._stage(buf, offset, raw, data)
                    else:
                        self._write_mapped(buf, offset, raw)
                if self.open is not None:
                    self._submit_open()
            except UploadFailed as error:
                self._fail(error, [dst for dst, _, _ in items])
                raise
            for slot in self.slots:
                if slot.pending and slot.reads_arrays:
                    self._wait_slot(slot, "staging array read")

    def _fail(self, error: UploadFailed, names: list[str]) -> None:
        """A failed upload: drop the open slot, wait what is in flight (it may copy
        into the destinations), release them. The next upload starts clean."""
        slot, self.open = self.open, None
        if slot is not None:
            self.vk.vkResetCommandBuffer(slot.cb, 0)  # vkResetCommandBuffer
            slot.commands, slot.reads_arrays = None, False
            slot.keep.clear()  # never submitted: nothing of it reaches the device
            self.unfilled.update(id(b) for b in slot.fills)
            slot.fills.clear()
        self._wait_all()
        for buf in (self.destinations.get(n) for n in dict.fromkeys(names)):
            if buf is not None and buf.handle is not None:
                self._op({"op": "destroy", "buffer": buf.id, "label": "failed upload"})
                self.rt.allocator.destroy(buf)
                error.released.append(buf.id)

    def _alive(self) -> None:
        if self.lost:
            raise DeviceLost("a fence wait of the uploader failed earlier: the device counts as lost")
        if self.closed:
            raise ValueError("the uploader is closed")

    # ---- destinations and the arena ---------------------------------------------------

    def _destination(self, dst: str, size: int) -> DeviceBuffer:
        buf = self.destinations.get(dst)
        if buf is not None:
            if buf.handle is None:
                raise ValueError(f"destination {dst!r} was released by a failed upload: upload under a new name")
            if size > buf.size:
                raise ValueError(f"{size} bytes do not fit destination {dst!r} ({buf.size} bytes)")
            return buf
        if dst in self.rt.buffers:
            raise ValueError(f"{dst!r} is a buffer of the program, not an upload destination")
        vk, handle = self.vk, self.rt.device.handle
        buffer = self._vk_buffer(dst, size)
        requirements = vk.vkGetBufferMemoryRequirements(handle, buffer)  # vkGetBufferMemoryRequirements
        align = max(requirements.alignment, COPY_ALIGN)
        try:
            block_id, block, start = self._place(size, align, requirements.memoryTypeBits)
        except UploadFailed:
            vk.vkDestroyBuffer(handle, buffer, None)  # vkDestroyBuffer
            raise
        vk.vkBindBufferMemory(handle, buffer, block.memory, start)  # vkBindBufferMemory
        block.live += 1
        buf = DeviceBuffer(dst, buffer, block, start, size, self.kind)
        self.destinations[dst] = self.rt.buffers[dst] = buf
        self._declare("buffers", {"id": dst, "alias_of": block_id, "offset": start, "size": size})
        return buf

    def _place(self, size: int, align: int, type_bits: int) -> tuple[str, Block, int]:
        """Bump-allocate from the last block; a destination larger than a block gets its own."""
        if self.blocks:
            block_id, block, _ = self.blocks[-1]
            start = -(-block.used // align) * align
            if start + size <= block.size:
                block.used = start + size
                return block_id, block, start
        if self.faults.hit("block"):
            raise UploadFailed("block", "injected: VK_ERROR_OUT_OF_DEVICE_MEMORY", injected=True)
        vk, handle = self.vk, self.rt.device.handle
        block_size = max(self.block_size, -(-size // COPY_ALIGN) * COPY_ALIGN)
        block_id = f"upload.block{len(self.blocks)}"
        buffer = self._vk_buffer(block_id, block_size)
        requirements = vk.vkGetBufferMemoryRequirements(handle, buffer)  # vkGetBufferMemoryRequirements
        type_index = choose_type(vk, self.properties, self.kind, type_bits & requirements.memoryTypeBits)
        info = vk.VkMemoryAllocateInfo(allocationSize=requirements.size, memoryTypeIndex=type_index)
        try:
            memory = vk.vkAllocateMemory(handle, info, None)  # vkAllocateMemory
        except vk.VkError as error:
            vk.vkDestroyBuffer(handle, buffer, None)  # vkDestroyBuffer
            raise UploadFailed("block", f"vkAllocateMemory: {type(error).__name__}") from None
        vk.vkBindBufferMemory(handle, buffer, memory, 0)  # vkBindBufferMemory
        block = Block(memory, type_index, block_size, used=size)
        if not self.staged:
            block.mapped = vk.vkMapMemory(handle, memory, 0, block_size, 0)  # vkMapMemory
        self.blocks.append((block_id, block, buffer))
        self.unfilled.add(id(block))
        self._declare("buffers", {"id": block_id, "size": block_size, "memory": self.kind})
        return block_id, block, 0

    def _vk_buffer(self, name: str, size: int):
        """Concurrent: uploads and their readers may be on different families (PROTOCOLS.md 1)."""
        vk = self.vk
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
                 | vk.VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT)
        try:
            return self.rt.allocator.buffer(name, size, usage, "concurrent")
        except DeviceFault as error:
            raise UploadFailed("block", f"vkCreateBuffer: {error.error}") from None

    def _block(self, block: Block) -> tuple[str, object]:
        return next((i, b) for i, blk, b in self.blocks if blk is block)

    # ---- mapped mode -----------------------------------------------------------

    def _write_mapped(self, buf: DeviceBuffer, offset: int, raw: np.ndarray) -> None:
        if id(buf.block) in self.unfilled:
            self._fill_now(buf.block)
        view = np.frombuffer(buf.view(offset, raw.size), np.uint8)
        self._copy(view, raw)
        self._op({"op": "host_write", "buffer": buf.id, "offset": offset, "size": raw.size})
        flags = self.properties.memoryTypes[buf.block.type_index].propertyFlags
        if not flags & self.vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT:
            self.rt.allocator.flush(buf, offset, raw.size, invalidate=False)
            self._op({"op": "flush", "buffer": buf.id, "offset": offset, "size": raw.size})
        self.stats["bytes_staged"] += raw.size

    # ---- staged mode: slots -----------------------------------------------------------

    def _stage(self, buf: DeviceBuffer, offset: int, raw: np.ndarray, source) -> None:
        """Stream `raw` through the slots: copy into the open slot, record the
        copy, submit when the slot is full."""
        pos = 0
        while pos < raw.size:
            slot = self._slot_for(buf)
            take = min(raw.size - pos, self.slot_size - slot.used)
            start = slot.base + slot.used
            self._copy(self.staging_bytes[start:start + take], raw[pos:pos + take])
            self._record_copy(slot, self.staging, start, buf, offset + pos, take)
            slot.keep.append(source)
            slot.used = -(-(slot.used + take) // COPY_ALIGN) * COPY_ALIGN
            pos += take
            if slot.used >= self.slot_size:
                self._submit_open()

    def _slot_for(self, buf: DeviceBuffer) -> Slot:
        """The open slot (the `stage` fault point), with the zero-fill of buf's fresh block first."""
        if self.open is None and self.faults.hit("stage"):
            raise UploadFailed("stage", "injected: no staging slot", injected=True)
        slot = self._open_slot()
        if id(buf.block) in self.unfilled:
            self._stage_fill(slot, buf.block)
        return slot

    def _record_copy(self, slot: Slot, src: DeviceBuffer, src_offset: int, buf: DeviceBuffer, dst_offset: int,
                     size: int, label: str | None = None) -> None:
        """The host's write of the bytes at src_offset of `src` (flushed where host_cached), then
        their copy into `buf`, in the slot's command buffer."""
        vk = self.vk
        self._op({"op": "host_write", "buffer": src.id, "offset": src_offset, "size": size,
                  **({"label": label} if label else {})})
        if src.kind == "host_cached":
            self.rt.allocator.flush(src, src_offset, size, invalidate=False)
            self._op({"op": "flush", "buffer": src.id, "offset": src_offset, "size": size})
        if self.faults.hit("record"):
            raise UploadFailed("record", "injected: the copy could not be recorded", injected=True)
        regions = [vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)]
        vk.vkCmdCopyBuffer(slot.cb, src.handle, buf.handle, 1, regions)  # vkCmdCopyBuffer
        slot.commands.append({"cmd": "copy", "src": src.id, "dst": buf.id,
                              "regions": [{"src_offset": src_offset, "dst_offset": dst_offset, "size": size}]})
        self.stats["copies"] += 1
        self.stats["bytes_staged"] += size

    def _array_of(self, raw: np.ndarray) -> tuple[DeviceBuffer, int] | None:
        """The staging array `raw` lies in, and where in it; None for any other memory."""
        address = raw.ctypes.data
        for base, buf in self.arrays:
            if base <= address and address + raw.size <= base + buf.size:
                return buf, address - base
        return None

    def _copy_array(self, buf: DeviceBuffer, offset: int, array: DeviceBuffer, at: int, size: int) -> None:
        """One copy from a staging array, in the open slot's command buffer (its fence, waited
        before upload() returns, tells the caller it may refill the array)."""
        slot = self._slot_for(buf)
        self._record_copy(slot, array, at, buf, offset, size, "the caller's bytes, in a staging array")
        slot.reads_arrays = True

    def _open_slot(self) -> Slot:
        """The open slot; else the next one, once its previous fence has signalled."""
        if self.open is not None:
            return self.open
        slot = self.slots[self.next]
        if slot.pending:
            wait = ir.WaitFences(fences=(slot.fence_id,), label="slot reuse wait")
            if self.rt.mutator is not None and self.rt.mutator.before(self.thread, wait) is None:
                # The runtime mutation dropped it: the stream refills the slot unwaited. Vulkan forbids
                # re-recording a pending command buffer, so the fence is still waited, unrecorded:
                # this mutant is the checker's (and the program's assert_race_free) to kill.
                fences = [slot.fence]
                self.vk.vkWaitForFences(self.rt.device.handle, 1, fences, self.vk.VK_TRUE,
                                        int(WAIT_LIMIT_S * 1e9))  # vkWaitForFences
                self._retire(slot)
            else:
                self._wait_slot(slot, "slot reuse wait")
        begin = self.vk.VkCommandBufferBeginInfo(flags=self.vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self.vk.vkBeginCommandBuffer(slot.cb, begin)  # vkBeginCommandBuffer
        slot.commands, slot.used = [], 0
        self.open = slot
        return slot

    def _stage_fill(self, slot: Slot, block: Block) -> None:
        """Zero-fill a fresh block (vkCmdFillBuffer) ahead of the copies into it:
        fresh memory can hold another run's bytes (PROTOCOLS.md 1)."""
        vk = self.vk
        block_id, buffer = self._block(block)
        vk.vkCmdFillBuffer(slot.cb, buffer, 0, block.size, 0)  # vkCmdFillBuffer (block sizes are multiples of 256)
        global_barrier(vk, slot.cb, FILLED)
        slot.commands += [{"cmd": "fill", "dst": block_id, "value": 0}, {"cmd": "barrier", **FILLED}]
        self.unfilled.discard(id(block))
        slot.fills.append(block)
        self.stats["blocks_zero_filled"] += 1

    def _fill_now(self, block: Block) -> None:
        """Zero-fill a fresh block in a submit of its own and wait for it: host
        writes (mapped) or another queue's copies (deferred) follow it. The host's
        writes over the fill need it made available to the host domain (memory model,
        "Location-Ordered"): a fence wait alone does not."""
        slot = self._open_slot()
        self._stage_fill(slot, block)
        global_barrier(self.vk, slot.cb, FILLED_FOR_HOST)
        slot.commands.append({"cmd": "barrier", **FILLED_FOR_HOST})
        self._submit_open()
        self._wait_all()

    def _submit_open(self) -> None:
        """Landing barrier (transfer_write -> memory_read|memory_write, copy ->
        all_commands), end, reset the fence, submit under the queue's lock."""
        vk, slot = self.vk, self.open
        if self.faults.hit("submit"):
            raise UploadFailed("submit", "injected: VK_ERROR_OUT_OF_HOST_MEMORY", injected=True)
        if slot.signaled:
            fences = [slot.fence]
            vk.vkResetFences(self.rt.device.handle, 1, fences)  # vkResetFences
            self._op({"op": "reset_fences", "fences": [slot.fence_id]})
            slot.signaled = False
        cb_id = f"upload.cb{self.n_cbs}"
        self.n_cbs += 1
        slot.commands.append({"cmd": "barrier", **LANDING})
        entry = {"op": "submit", "queue": self.queue_id, "command_buffers": [cb_id], "fence": slot.fence_id}
        with self.rt._lock:
            self.rt.command_buffers[cb_id] = slot.commands
        landing = LANDING_BARRIER
        if self.rt.mutator is not None:
            # The runtime mutation's decision, as for the program's submits: it may replace the
            # command buffer in the stream (the landing barrier dropped, weakened or narrowed).
            op = ir.Submit(queue=self.queue_id, batches=(ir.Batch(command_buffers=(cb_id,)),), fence=slot.fence_id)
            self.rt.mutator.before(self.thread, op)  # the submit itself is the same: no semaphores
            landing = self.rt._commands(cb_id)[-1]
        if isinstance(landing, ir.Barrier) and landing.label == LANDING["label"]:
            Recorder(self.rt, slot.cb, cb_id, None).barrier(landing)  # vkCmdPipelineBarrier
        vk.vkEndCommandBuffer(slot.cb)  # vkEndCommandBuffer
        cbs = [slot.cb]
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)
        submits = [submit]
        try:
            with self.queue_lock:  # fence waits never happen under this lock (PROTOCOLS.md 1)
                vk.vkQueueSubmit(self.queue, 1, submits, slot.fence)  # vkQueueSubmit
        except vk.VkErrorDeviceLost:
            self.lost = True
            raise DeviceLost("vkQueueSubmit: VK_ERROR_DEVICE_LOST") from None
        except vk.VkError as error:
            with self.rt._lock:
                self.rt.command_buffers.pop(cb_id, None)
            raise UploadFailed("submit", f"vkQueueSubmit: {type(error).__name__}") from None
        self._op(entry)
        slot.commands, slot.fills, slot.pending = None, [], True
        self.open = None
        self.next = (slot.index + 1) % len(self.slots)
        self.stats["submits"] += 1

    def _wait_all(self) -> None:
        for slot in self.slots:
            if slot.pending:
                self._wait_slot(slot, None)

    def _wait_slot(self, slot: Slot, label: str | None) -> None:
        self._wait_fence(slot.fence, slot.fence_id, f"slot {slot.index}", label)
        self._retire(slot)

    @staticmethod
    def _retire(slot: Slot) -> None:
        """Its fence was waited: its copies have run, the sources may go."""
        slot.pending, slot.signaled, slot.reads_arrays = False, True, False
        slot.keep.clear()

    def _wait_fence(self, fence, fence_id: str, what: str, label: str | None = None) -> None:
        """vkWaitForFences in slices, outside the queue lock. A failure marks the
        device lost; nothing the device may still touch is freed."""
        vk = self.vk
        fences = [fence]
        deadline = time.monotonic() + WAIT_LIMIT_S
        if self.faults.hit("wait"):
            self.lost = True
            raise DeviceLost(f"waiting for {what}: injected VK_ERROR_DEVICE_LOST")
        while True:
            try:
                vk.vkWaitForFences(self.rt.device.handle, 1, fences, vk.VK_TRUE, WAIT_SLICE_NS)  # vkWaitForFences
                break
            except vk.VkTimeout:  # a success code: not signalled yet
                if time.monotonic() > deadline:
                    self.lost = True
                    raise DeviceLost(f"waiting for {what}: no signal in {WAIT_LIMIT_S:.0f} s") from None
            except vk.VkError as error:
                self.lost = True
                raise DeviceLost(f"waiting for {what}: {type(error).__name__}") from None
        self._op({"op": "wait_fences", "fences": [fence_id], **({"label": label} if label else {})})

    # ---- host copies and recording ------------------------------------------------

    def _copy(self, out: np.ndarray, raw: np.ndarray) -> None:
        """memcpy, split across the copy threads when large: numpy copies release the GIL,
        and one thread's memcpy is slower than a transfer queue (benchmarks/upload_paths.py)."""
        n = raw.size
        if n <= COPY_SPLIT:
            out[:] = raw
            return
        piece = max(COPY_SPLIT, -(-n // self.copy_threads))
        pieces = [(a, min(a + piece, n)) for a in range(0, n, piece)]
        list(self.pool_threads.map(lambda p: out.__setitem__(slice(*p), raw[p[0]:p[1]]), pieces))

    def _op(self, entry: dict) -> None:
        with self.rt._lock:
            self.rt.threads.setdefault(self.thread, []).append(entry)

    def _declare(self, key: str, entry: dict) -> None:
        with self.rt._lock:
            self.rt.doc[key].append(entry)


def as_bytes(data) -> np.ndarray:
    """The bytes of a numpy array (any dtype, C order) or a bytes-like object, uncopied where possible."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(data).cast("B"), np.uint8)


def reads_of(commands) -> set[str]:
    """Buffers a command buffer's commands read."""
    out: set[str] = set()
    for c in commands:
        if isinstance(c, ir.Copy):
            out.add(c.src)
        elif isinstance(c, ir.Dispatch):
            out.update(b.buffer for b in c.bindings if b.access != "write")
            if c.indirect is not None:
                out.add(c.indirect.buffer)
    return out


def choose_queue(rt) -> tuple[str, str]:
    """The stream queue uploads go to, and why (PROTOCOLS.md 1): the `upload`
    queue (QueueRequest("upload", group=1, compute=False)) on a transfer-only
    family, else on a VkQueue no other stream queue shares, else the main queue."""
    vk, queues = rt.vk, rt.device.queues
    main = next(iter(queues))
    if UPLOAD_QUEUE not in queues:
        return main, "main"
    family, _, lock = queues[UPLOAD_QUEUE]
    flags = vk.vkGetPhysicalDeviceQueueFamilyProperties(rt.device.physical)[family].queueFlags
    if sum(other is lock for _, _, other in queues.values()) > 1:
        # Shared with the program's queue: record on that queue's id, so the stream
        # orders the uploads with the program's submits as the device does.
        return next(q for q, (_, _, other) in queues.items() if other is lock and q != UPLOAD_QUEUE), "main"
    if not flags & (vk.VK_QUEUE_COMPUTE_BIT | vk.VK_QUEUE_GRAPHICS_BIT):
        return UPLOAD_QUEUE, "transfer"
    return UPLOAD_QUEUE, "spare"

