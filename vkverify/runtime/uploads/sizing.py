"""Slot sizing that measures: one small submit+wait and one probe copy at start give
the per-submit cost and the copy rate; a slot is made large enough that the cost stays
under SUBMIT_SHARE of its copy time, within a host-memory budget."""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["SLOT_BUDGET", "SLOT_PER_THREAD", "SlotPlan", "measure", "plan_slots"]

SLOTS, SLOT_SIZE = 2, 16 << 20  # engines' two 16 MiB slots: where the caller sizes one side only
SLOT_BUDGET = 256 << 20  # host memory all slots may take together
SUBMIT_SHARE = 0.05
MAX_SLOTS = 4  # more only lets the host run further ahead of a copy engine it cannot outpace
PROBE = 8 << 20  # the probe copy's bytes
PROBE_RUNS = 3
# A slot gives each host copy thread at least this many bytes. On the H200 (1 GiB, 16 threads) 32 MiB
# slots ran at 0.47-0.74 of the memcpy-beside-a-DMA ceiling in three runs, 64 MiB slots at 0.92-0.96
# in two: below that the slot's host writes, not its submit, set the pace.
SLOT_PER_THREAD = 4 << 20


@dataclass(frozen=True)
class SlotPlan:
    count: int
    size: int
    why: str

    @classmethod
    def given(cls, count: int | None, size: int | None, why: str = "given") -> SlotPlan:
        count, size = count or SLOTS, size or SLOT_SIZE
        return cls(count, size, f"{count} x {size / 2**20:g} MiB: {why}")


def plan_slots(submit_seconds: float, bytes_per_second: float, budget: int = SLOT_BUDGET,
               floor: int = 1 << 20) -> SlotPlan:
    """The smallest power-of-two slot (at least `floor`: SLOT_PER_THREAD per host copy thread) whose copy
    takes 1/SUBMIT_SHARE times one submit+wait, at most budget/MAX_SLOTS (budget/2 where the
    floor needs it); as many slots (2..MAX_SLOTS) as the budget holds."""
    need = submit_seconds / SUBMIT_SHARE * bytes_per_second
    want = max(floor, 1 << max(0, int(need - 1).bit_length()))
    # MAX_SLOTS slots in flight before larger slots: on the H200 (1 GiB, 14 threads) 2 x 128 MiB ran
    # at 0.70-0.76 of the ceiling where 4 x 64 MiB ran at 0.93-0.97 in the same processes.
    size = min(want, max(budget // MAX_SLOTS, min(floor, budget // 2)))
    capped = want > size
    count = max(2, min(MAX_SLOTS, budget // size))
    why = (f"one submit+wait {submit_seconds * 1e6:.0f} us, copies at {bytes_per_second / 1e9:.1f} GB/s: "
           f"a slot of {need / 2**20:.1f} MiB keeps each submit under {SUBMIT_SHARE:.0%} of its copy time"
           + (f", capped so that {count} fit the {budget >> 20} MiB budget" if capped else
              f", {floor >> 20} MiB at least ({SLOT_PER_THREAD >> 20} MiB per host copy thread)"
              if size == floor and need < floor else "")
           + f"; {count} slots within {budget >> 20} MiB")
    return SlotPlan(count, size, f"{count} x {size / 2**20:g} MiB: {why}")


def measure(vk, device, allocator, family: int, queue, queue_lock) -> tuple[float, float]:
    """(seconds of one empty submit+wait, bytes per second of a PROBE-byte copy from host-coherent
    into device-local memory), best of PROBE_RUNS each. Not recorded: calibration touches only its
    own objects, all waited and freed before the first upload."""
    handle = device.handle
    info = vk.VkCommandPoolCreateInfo(flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                      queueFamilyIndex=family)
    pool = vk.vkCreateCommandPool(handle, info, None)  # vkCreateCommandPool
    fence_info = vk.VkFenceCreateInfo()
    fence = vk.vkCreateFence(handle, fence_info, None)  # vkCreateFence
    src = dst = None
    try:
        src = allocator.create("upload.probe.src", PROBE, "host_coherent", vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
        dst = allocator.create("upload.probe.dst", PROBE, "device_local", vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        alloc = vk.VkCommandBufferAllocateInfo(commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                               commandBufferCount=1)
        cb = vk.vkAllocateCommandBuffers(handle, alloc)[0]  # vkAllocateCommandBuffers

        def run(copy: bool) -> float:
            begin = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            start = time.perf_counter()
            vk.vkBeginCommandBuffer(cb, begin)  # vkBeginCommandBuffer
            if copy:
                regions = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=PROBE)]
                vk.vkCmdCopyBuffer(cb, src.handle, dst.handle, 1, regions)  # vkCmdCopyBuffer
            vk.vkEndCommandBuffer(cb)  # vkEndCommandBuffer
            cbs, fences = [cb], [fence]
            submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)
            submits = [submit]
            vk.vkResetFences(handle, 1, fences)  # vkResetFences
            with queue_lock:
                vk.vkQueueSubmit(queue, 1, submits, fence)  # vkQueueSubmit
            vk.vkWaitForFences(handle, 1, fences, vk.VK_TRUE, 10**10)  # vkWaitForFences
            return time.perf_counter() - start

        empty = min(run(False) for _ in range(PROBE_RUNS))
        full = min(run(True) for _ in range(PROBE_RUNS))
    finally:
        for buf in (src, dst):
            if buf is not None:
                allocator.destroy(buf)
        vk.vkDestroyFence(handle, fence, None)  # vkDestroyFence
        vk.vkDestroyCommandPool(handle, pool, None)  # vkDestroyCommandPool
    return empty, PROBE / max(full - empty, 1e-7)
