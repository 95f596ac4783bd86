"""The slot ring: `count` staging slots in one persistently mapped buffer, a command
buffer and a fence per slot (the protocol in the package docstring). Open a slot: wait its previous fence,
begin. A full slot is sealed; it is submitted once the host writes of the `lead` slots
after it are queued (half the ring), so the host threads always have a slot's bytes to
go on with while the submitting thread waits for the oldest one's writes: with only the
next slot queued, 16 threads on the H200 idled a third of the time. Submit:
its host writes done, the landing barrier, end, reset the fence, submit under the
queue's lock. Fence waits never happen under that lock."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ...model import ir
from ..errors import DeviceLost, UploadFailed
from ..memory import DeviceBuffer
from ..record import global_barrier
from .arena import COPY_ALIGN, round_up

__all__ = ["LANDING", "Signal", "Slot", "SlotRing", "record_barrier", "retire", "settle", "wait_fence"]

WAIT_SLICE_NS = 100_000_000
TAIL_PIECE = 4 << 20  # the least a call's tail puts in a slot before it is submitted
FIRST_PIECE = 8 << 20  # what a call's first slot holds (SlotRing.room): four host copy threads' least share
WAIT_LIMIT_S = 60.0
# A slot's last command: its copies (and a fresh block's fill) made visible to any later command.
LANDING = {"src_stage": ["copy", "clear"], "src_access": ["transfer_write"], "dst_stage": ["all_commands"],
           "dst_access": ["memory_read", "memory_write"], "label": "landing barrier"}
LANDING_BARRIER = ir.Barrier(**{k: frozenset(v) if isinstance(v, list) else v for k, v in LANDING.items()})
# After a fresh block's fill: the copies into the block write after it.
FILLED = {"src_stage": ["clear"], "src_access": ["transfer_write"], "dst_stage": ["copy"],
          "dst_access": ["transfer_write"], "label": "fill before copies"}
# After a fresh block's fill that the host then writes through the map (mapped mode).
FILLED_FOR_HOST = {"src_stage": ["clear"], "src_access": ["transfer_write"], "dst_stage": ["host"],
                   "dst_access": ["host_write"], "label": "fill before host writes"}


def record_barrier(vk, cb, barrier) -> None:
    """One global memory barrier (a dict as above, or an ir.Barrier as a runtime mutation leaves it) as
    vkCmdPipelineBarrier: sync1, which every device has, says the same for a global barrier."""
    names = barrier if isinstance(barrier, dict) else {
        key: getattr(barrier, key) for key in ("src_stage", "src_access", "dst_stage", "dst_access")}
    global_barrier(vk, cb, names)


def wait_fence(vk, device, fence, fence_id: str, what: str, faults, recording, label: str | None = None) -> None:
    """vkWaitForFences in slices (the `wait` fault point), recorded once it returns. DeviceLost on a
    failure or no signal in WAIT_LIMIT_S: the caller frees nothing the device may still touch."""
    fences = [fence]
    deadline = time.monotonic() + WAIT_LIMIT_S
    if faults.hit("wait"):
        raise DeviceLost(f"waiting for {what}: injected VK_ERROR_DEVICE_LOST")
    while True:
        try:
            vk.vkWaitForFences(device, 1, fences, vk.VK_TRUE, WAIT_SLICE_NS)  # vkWaitForFences
            break
        except vk.VkTimeout:  # a success code: not signalled yet
            if time.monotonic() > deadline:
                raise DeviceLost(f"waiting for {what}: no signal in {WAIT_LIMIT_S:.0f} s") from None
        except vk.VkError as error:
            raise DeviceLost(f"waiting for {what}: {type(error).__name__}") from None
    recording.op({"op": "wait_fences", "fences": [fence_id], **({"label": label} if label else {})})


@dataclass(frozen=True)
class Signal:
    """A timeline semaphore's signal (its stream id, its VkSemaphore, the value) that a submit makes."""

    id: str
    handle: object
    value: int


@dataclass(eq=False)
class Slot:
    index: int
    base: int  # in the staging buffer
    cb: object
    fence: object
    fence_id: str
    pending: bool = False  # submitted, fence not waited yet
    signaled: bool = False  # waited and not reset yet
    keep: list = field(default_factory=list)  # sources its copies read (keep-alive until the fence)
    used: int = 0
    commands: list | None = None  # the stream command buffer being recorded, None when closed
    fills: list = field(default_factory=list)  # blocks whose zero-fill this slot's command buffer holds
    reads_arrays: bool = False  # its copies read staging arrays: the caller may refill them after its fence
    writes: list = field(default_factory=list)  # host writes in flight into it: each a function that waits for it
    limit: int | None = None  # where it ends, once it holds a call's tail (SlotRing.room); None: its size

    def take(self, size: int) -> int:
        """Reserve `size` bytes at the slot's end, the next copy source rounded up to
        COPY_ALIGN; their offset in the staging buffer."""
        start = self.base + self.used
        self.used = round_up(self.used + size, COPY_ALIGN)
        return start


class SlotRing:
    """`count` slots of `size` bytes. `staging`: the slots' memory kind (host_cached: each
    host write is flushed before its submit); None: no staging buffer (mapped mode still
    submits fills through the ring). `stats`: the uploader's counters (copies, submits)."""

    def __init__(self, vk, device, allocator, family: int, queue, queue_lock, queue_id: str, count: int, size: int,
                 staging: str | None, faults, recording, stats: dict) -> None:
        self.vk, self.device, self.allocator, self.faults, self.recording = vk, device, allocator, faults, recording
        self.queue, self.queue_lock, self.queue_id, self.stats = queue, queue_lock, queue_id, stats
        self.size = round_up(size, COPY_ALIGN)
        self.slots: list[Slot] = []
        self.open_slot: Slot | None = None
        self.sealed: deque[Slot] = deque()  # full, oldest first, each submit waiting for later slots' writes
        self.lead = max(1, count // 2)  # slots whose writes are queued before a sealed slot's submit
        self.next = self.submitted = 0
        self.left = 0  # bytes the current call has still to stage (the uploader counts them down); 0: unknown
        self.ramp = self.size  # where the current call's next slot ends, while its first slots ramp up (room)
        self.pool = self.staging = self.staging_bytes = None
        handle = device.handle
        info = vk.VkCommandPoolCreateInfo(flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                          queueFamilyIndex=family)
        self.pool = vk.vkCreateCommandPool(handle, info, None)  # vkCreateCommandPool
        alloc = vk.VkCommandBufferAllocateInfo(commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               commandBufferCount=count)
        cbs = vk.vkAllocateCommandBuffers(handle, alloc)  # vkAllocateCommandBuffers
        fence_info = vk.VkFenceCreateInfo()
        for i in range(count):
            fence = vk.vkCreateFence(handle, fence_info, None)  # vkCreateFence
            self.slots.append(Slot(i, i * self.size, cbs[i], fence, f"upload.F{i}"))
            recording.declare("fences", {"id": f"upload.F{i}", "signaled": False})
        if staging is not None:
            self.staging = allocator.create("upload.staging", count * self.size, staging,
                                            vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
            self.staging_bytes = np.frombuffer(self.staging.view(0, self.staging.size), np.uint8)
            recording.declare("buffers", {"id": "upload.staging", "size": self.staging.size, "memory": staging})

    def open(self, stage_fault: bool = True) -> Slot:
        """The open slot; else the next one, once its previous fence has signalled, begun (with
        stage_fault, the `stage` fault point: a slot for bytes to stage)."""
        if self.open_slot is not None:
            return self.open_slot
        if stage_fault and self.faults.hit("stage"):
            raise UploadFailed("stage", "injected: no staging slot", injected=True)
        slot = self.slots[self.next]
        while slot in self.sealed:  # a small ring: the slot to reuse is not submitted yet
            self._submit(self.sealed.popleft())
        if slot.pending:
            if self.recording.keeps(ir.WaitFences(fences=(slot.fence_id,), label="slot reuse wait")):
                self.wait(slot, "slot reuse wait")
            else:
                # The runtime mutation dropped it: the stream refills the slot unwaited. Vulkan forbids
                # re-recording a pending command buffer, so the fence is still waited, unrecorded:
                # this mutant is the checker's (and the program's assert_race_free) to kill.
                fences = [slot.fence]
                self.vk.vkWaitForFences(self.device.handle, 1, fences, self.vk.VK_TRUE,
                                        int(WAIT_LIMIT_S * 1e9))  # vkWaitForFences
                retire(slot)
        begin = self.vk.VkCommandBufferBeginInfo(flags=self.vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self.vk.vkBeginCommandBuffer(slot.cb, begin)  # vkBeginCommandBuffer
        slot.commands, slot.used, slot.limit = [], 0, None
        self.open_slot = slot
        self.next = (slot.index + 1) % len(self.slots)
        return slot

    def begin(self, left: int) -> None:
        """A call that stages `left` bytes through the slots begins."""
        self.left, self.ramp = left, FIRST_PIECE

    def room(self) -> int:
        """Bytes left in the open slot. A call's first slot ends after FIRST_PIECE, each next one after twice as
        many, up to a whole slot: the device's first copy waits for its slot's slowest host write, and on the H100
        14 threads wrote a first 64 MiB slot in 0.51-2.35 ms while nothing copied, a quarter of that 9.9 ms upload of
        256 MiB. Where the call has less than two slots of bytes left to stage, the slot ends after half of them
        (TAIL_PIECE at least): the call's last copy, which no host write overlaps, is then small. At 256 MiB in
        4 x 64 MiB slots that last copy was a quarter of the upload."""
        slot = self.open_slot
        if slot.limit is None and self.left > 0:
            ends = []
            if self.ramp < self.size:
                ends.append(self.ramp)
                self.ramp *= 2
            if self.left < 2 * self.size:
                ends.append(max(TAIL_PIECE, round_up(self.left // 2, COPY_ALIGN)))
            if ends:
                slot.limit = min(self.size, slot.used + min(ends))
        return (slot.limit or self.size) - slot.used

    def record_copy(self, src: DeviceBuffer, src_offset: int, dst: DeviceBuffer, dst_offset: int, size: int,
                    label: str | None = None) -> None:
        """The host's write of the bytes at src_offset of `src` (flushed where host_cached), then
        their copy into `dst`, in the open slot's command buffer (the `record` fault point)."""
        vk, slot = self.vk, self.open_slot
        self.recording.op({"op": "host_write", "buffer": src.id, "offset": src_offset, "size": size,
                           **({"label": label} if label else {})})
        if src.kind == "host_cached":
            self.allocator.flush(src, src_offset, size, invalidate=False)
            self.recording.op({"op": "flush", "buffer": src.id, "offset": src_offset, "size": size})
        if self.faults.hit("record"):
            raise UploadFailed("record", "injected: the copy could not be recorded", injected=True)
        regions = [vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)]
        vk.vkCmdCopyBuffer(slot.cb, src.handle, dst.handle, 1, regions)  # vkCmdCopyBuffer
        slot.commands.append({"cmd": "copy", "src": src.id, "dst": dst.id,
                              "regions": [{"src_offset": src_offset, "dst_offset": dst_offset, "size": size}]})
        self.stats["copies"] += 1
        self.stats["bytes_staged"] += size

    def record_fill(self, block, block_id: str, buffer, for_host: bool) -> None:
        """Zero-fill a fresh block (vkCmdFillBuffer) in the open slot, ahead of the copies into
        it, or (for_host) of the host's writes through the map after this slot's fence."""
        slot = self.open_slot
        self.vk.vkCmdFillBuffer(slot.cb, buffer, 0, block.size, 0)  # vkCmdFillBuffer (sizes are multiples of 256)
        slot.commands.append({"cmd": "fill", "dst": block_id, "value": 0})
        for barrier in (FILLED, FILLED_FOR_HOST) if for_host else (FILLED,):
            record_barrier(self.vk, slot.cb, barrier)
            slot.commands.append({"cmd": "barrier", **barrier})
        slot.fills.append(block)

    def seal(self) -> None:
        """The open slot is full: submit it at a later submit_sealed() (earlier sealed ones now)."""
        self.submit_sealed()
        self.sealed.append(self.open_slot)
        self.open_slot = None

    def submit_sealed(self) -> None:
        """Submit the sealed slots that have `lead` slots' writes queued after them."""
        while len(self.sealed) >= self.lead:
            self._submit(self.sealed.popleft())

    def submit(self, signal: Signal | None = None) -> None:
        """Submit the sealed slots, then the open one; with `signal`, the last submit also signals it (a slot
        without copies where none is open: the hand-off still follows every earlier submit of the queue)."""
        while self.sealed:
            self._submit(self.sealed.popleft())
        if signal is not None and self.open_slot is None:
            self.open(stage_fault=False)
        if self.open_slot is not None:
            self._submit(self.open_slot, signal)

    def _submit(self, slot: Slot, signal: Signal | None = None) -> None:
        """Its host writes done, the landing barrier (as the runtime mutation leaves it), end, reset
        the fence, submit under the queue's lock (the `submit` fault point); with `signal`, a timeline
        semaphore's signal operation in the same batch (spec 7.4.1: its first synchronization scope holds
        every command submitted to the queue before it, the slots' copies among them)."""
        settle(slot)
        vk = self.vk
        if self.faults.hit("submit"):
            raise UploadFailed("submit", "injected: VK_ERROR_OUT_OF_HOST_MEMORY", injected=True)
        if slot.signaled:
            fences = [slot.fence]
            vk.vkResetFences(self.device.handle, 1, fences)  # vkResetFences
            self.recording.op({"op": "reset_fences", "fences": [slot.fence_id]})
            slot.signaled = False
        cb_id = f"upload.cb{self.submitted}"
        slot.commands.append({"cmd": "barrier", **LANDING})
        self.recording.add_command_buffer(cb_id, slot.commands)
        signals = () if signal is None else (ir.SemaphoreOp(signal.id, signal.value, frozenset({"all_commands"})),)
        op = ir.Submit(queue=self.queue_id, batches=(ir.Batch(command_buffers=(cb_id,), signals=signals),),
                       fence=slot.fence_id)
        landing = self.recording.last_command(cb_id, op, LANDING_BARRIER)
        if isinstance(landing, ir.Barrier) and landing.label == LANDING["label"]:
            record_barrier(vk, slot.cb, landing)
        vk.vkEndCommandBuffer(slot.cb)  # vkEndCommandBuffer
        cbs = [slot.cb]
        if signal is None:
            submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)
        else:
            semaphores, values = [signal.handle], [signal.value]
            timeline = vk.VkTimelineSemaphoreSubmitInfo(signalSemaphoreValueCount=1, pSignalSemaphoreValues=values)
            submit = vk.VkSubmitInfo(pNext=timeline, commandBufferCount=1, pCommandBuffers=cbs,
                                     signalSemaphoreCount=1, pSignalSemaphores=semaphores)
        submits = [submit]
        try:
            with self.queue_lock:  # fence waits never happen under this lock: a submit would wait on them
                vk.vkQueueSubmit(self.queue, 1, submits, slot.fence)  # vkQueueSubmit
        except vk.VkErrorDeviceLost:
            raise DeviceLost("vkQueueSubmit: VK_ERROR_DEVICE_LOST") from None
        except vk.VkError as error:
            self.recording.drop_command_buffer(cb_id)
            raise UploadFailed("submit", f"vkQueueSubmit: {type(error).__name__}") from None
        self.recording.op({"op": "submit", "queue": self.queue_id, "command_buffers": [cb_id],
                           **({} if signal is None else {"signal": [{"semaphore": signal.id, "value": signal.value}]}),
                           "fence": slot.fence_id})
        slot.commands, slot.fills, slot.pending = None, [], True
        if slot is self.open_slot:
            self.open_slot = None
        self.submitted += 1
        self.stats["submits"] += 1

    def drop_open(self) -> list:
        """Forget the sealed slots and the open one (a failed upload) once their host writes have
        ended: nothing of them reaches the device. The blocks whose fills they held, to be
        filled again."""
        fills, dropped = [], [*self.sealed, *([self.open_slot] if self.open_slot is not None else [])]
        for slot in dropped:
            try:
                settle(slot)
            except UploadFailed:
                pass  # the upload failed already
            self.vk.vkResetCommandBuffer(slot.cb, 0)  # vkResetCommandBuffer
            fills += slot.fills
            slot.fills, slot.commands, slot.reads_arrays = [], None, False
            slot.keep.clear()
        if dropped:
            self.next = dropped[0].index  # reused first: its fence was waited, or it never had one
        self.sealed.clear()
        self.open_slot = None
        return fills

    def wait(self, slot: Slot, label: str | None) -> None:
        wait_fence(self.vk, self.device.handle, slot.fence, slot.fence_id, f"slot {slot.index}", self.faults,
                   self.recording, label)
        retire(slot)

    def wait_all(self, label: str | None = None, reading_arrays: bool = False) -> None:
        """Wait every submitted slot (only those whose copies read staging arrays, if reading_arrays)."""
        for slot in self.slots:
            if slot.pending and (slot.reads_arrays or not reading_arrays):
                self.wait(slot, label)

    def close(self) -> None:
        """Free the staging buffer, fences and pool; the device is idle."""
        vk, handle = self.vk, self.device.handle
        if self.staging is not None:
            self.staging_bytes = None
            self.allocator.destroy(self.staging)
        for slot in self.slots:
            slot.keep.clear()
            vk.vkDestroyFence(handle, slot.fence, None)  # vkDestroyFence
        if self.pool is not None:
            vk.vkDestroyCommandPool(handle, self.pool, None)  # vkDestroyCommandPool (frees its command buffers)
            self.pool = None


def settle(slot: Slot) -> None:
    """Wait for every host write into `slot`; the first failure (UploadFailed) once all ended."""
    writes, slot.writes = slot.writes, []
    failure = None
    for wait in writes:
        try:
            wait()
        except UploadFailed as error:
            failure = failure or error
    if failure is not None:
        raise failure


def retire(slot: Slot) -> None:
    """Its fence was waited: its copies have run, the sources may go."""
    slot.pending, slot.signaled, slot.reads_arrays = False, True, False
    slot.keep.clear()
