"""Where a staged upload's time goes on this device (issue 6): the host copy
into the staging memory, and the device copy out of it.

    python benchmarks/upload_paths.py [--mib 1024] [--threads 16]

For each host-visible memory type: the host's memcpy bandwidth into a mapping
of it (one thread, then `threads`), as a ratio to memcpy between two numpy
arrays, and one vkCmdCopyBuffer of `mib` MiB from it into device-local
memory. With VK_EXT_external_memory_host, also a numpy array's own pages
imported (vkAllocateMemory with VkImportMemoryHostPointerInfoEXT): the import's
cost and the copy from them, which skips the host copy altogether.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from vkverify.runtime import Runtime
from vkverify.runtime.memory import choose_type, flag_names

HOST_MEMORY = "VK_EXT_external_memory_host"


def gbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e9


def memcpy_seconds(out: np.ndarray, src: np.ndarray, threads: int, runs: int = 3) -> float:
    pieces = np.array_split(np.arange(src.size // 4096 + 1) * 4096, threads)
    spans = [(p[0], min(p[-1] + 4096, src.size)) for p in pieces if len(p)]
    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(runs):
            start = time.perf_counter()
            list(pool.map(lambda s: out.__setitem__(slice(*s), src[slice(*s)]), spans))
            best = min(best, time.perf_counter() - start)
    return best


class Copier:
    """One command buffer and fence: times vkCmdCopyBuffer of `size` bytes between two VkBuffers."""

    def __init__(self, rt: Runtime) -> None:
        vk, device = rt.vk, rt.device.handle
        self.vk, self.device = vk, device
        self.family, self.queue, _ = rt.device.queues["q0"]
        self.pool = vk.vkCreateCommandPool(device, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=self.family), None)
        self.cb = vk.vkAllocateCommandBuffers(device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        self.fence = vk.vkCreateFence(device, vk.VkFenceCreateInfo(), None)

    def buffer(self, size: int, memory, usage: int, pnext=None):
        vk = self.vk
        buffer = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            pNext=pnext, size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        vk.vkBindBufferMemory(self.device, buffer, memory, 0)
        return buffer

    def seconds(self, src, dst, size: int, runs: int = 3) -> float:
        vk = self.vk
        best = float("inf")
        for _ in range(runs + 1):  # the first run is not timed: page tables and clocks warm up
            vk.vkResetCommandBuffer(self.cb, 0)
            vk.vkBeginCommandBuffer(self.cb, vk.VkCommandBufferBeginInfo())
            vk.vkCmdCopyBuffer(self.cb, src, dst, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=size)])
            vk.vkEndCommandBuffer(self.cb)
            vk.vkResetFences(self.device, 1, [self.fence])
            start = time.perf_counter()
            vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[self.cb])],
                             self.fence)
            vk.vkWaitForFences(self.device, 1, [self.fence], vk.VK_TRUE, 60 * 10**9)
            best = min(best, time.perf_counter() - start)
        return best

    def close(self) -> None:
        self.vk.vkDestroyFence(self.device, self.fence, None)
        self.vk.vkDestroyCommandPool(self.device, self.pool, None)


def allocate(vk, device, size: int, type_index: int, pnext=None):
    return vk.vkAllocateMemory(device, vk.VkMemoryAllocateInfo(pNext=pnext, allocationSize=size,
                                                               memoryTypeIndex=type_index), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args()
    size = args.mib << 20
    src = np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8)
    base = {n: gbps(size, memcpy_seconds(np.empty_like(src), src, n)) for n in (1, args.threads)}
    print(f"memcpy numpy -> numpy: {base[1]:.1f} GB/s (1 thread), {base[args.threads]:.1f} GB/s "
          f"({args.threads} threads)")
    probe = Runtime()
    has_import = HOST_MEMORY in {e.extensionName for e in probe.vk.vkEnumerateDeviceExtensionProperties(
        probe.device.physical, None)}
    probe.close()
    rt = Runtime(extensions=(HOST_MEMORY,) if has_import else ())
    vk, device = rt.vk, rt.device.handle
    copier = Copier(rt)
    props = vk.vkGetPhysicalDeviceMemoryProperties(rt.device.physical)
    usage_src, usage_dst = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT, vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
    local = choose_type(vk, props, "device_local")
    dst_memory = allocate(vk, device, size, local)
    dst = copier.buffer(size, dst_memory, usage_dst)
    name = vk.vkGetPhysicalDeviceProperties(rt.device.physical).deviceName
    print(f"{name}; {size >> 20} MiB into device-local type {local}")
    print(f"{'memory type':<40} {'memcpy 1':>9} {'memcpy N':>9} {'ratio N':>8} {'copy GB/s':>10}")
    for i in range(props.memoryTypeCount):
        flags = props.memoryTypes[i].propertyFlags
        if not flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT or \
                props.memoryHeaps[props.memoryTypes[i].heapIndex].size < size:
            continue
        memory = allocate(vk, device, size, i)
        mapped = np.frombuffer(vk.vkMapMemory(device, memory, 0, size, 0), np.uint8)
        one, many = (gbps(size, memcpy_seconds(mapped, src, n)) for n in (1, args.threads))
        buffer = copier.buffer(size, memory, usage_src)
        copy = gbps(size, copier.seconds(buffer, dst, size))
        name = f"{i}: {'|'.join(flag_names(vk, flags))}"
        print(f"{name:<40} {one:>9.1f} {many:>9.1f} {many / base[args.threads]:>8.2f} {copy:>10.1f}")
        vk.vkDestroyBuffer(device, buffer, None)
        vk.vkUnmapMemory(device, memory)
        vk.vkFreeMemory(device, memory, None)
    if has_import:
        host_bit = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
        limits = vk.VkPhysicalDeviceExternalMemoryHostPropertiesEXT()
        vk.vkGetPhysicalDeviceProperties2(rt.device.physical, vk.VkPhysicalDeviceProperties2(pNext=limits))
        align = limits.minImportedHostPointerAlignment
        pages = np.empty(size + align, np.uint8)
        skip = -pages.ctypes.data % align
        array = pages[skip:skip + size]
        array[:] = src
        pointer = vk.ffi.cast("void *", array.ctypes.data)
        query = vk.vkGetDeviceProcAddr(device, "vkGetMemoryHostPointerPropertiesEXT")
        allowed = query(device, host_bit, pointer, vk.VkMemoryHostPointerPropertiesEXT()).memoryTypeBits
        type_index = next(i for i in range(props.memoryTypeCount) if allowed >> i & 1)
        start = time.perf_counter()
        memory = allocate(vk, device, size, type_index,
                          vk.VkImportMemoryHostPointerInfoEXT(handleType=host_bit, pHostPointer=pointer))
        buffer = copier.buffer(size, memory, usage_src, vk.VkExternalMemoryBufferCreateInfo(handleTypes=host_bit))
        imported = time.perf_counter() - start
        copy = copier.seconds(buffer, dst, size)
        print(f"imported numpy pages (type {type_index}, alignment {align}): import {imported * 1e3:.1f} ms, "
              f"copy {gbps(size, copy):.1f} GB/s, import + copy {gbps(size, imported + copy):.1f} GB/s")
        vk.vkDestroyBuffer(device, buffer, None)
        vk.vkFreeMemory(device, memory, None)
    else:
        print(f"{HOST_MEMORY}: not supported")
    vk.vkDestroyBuffer(device, dst, None)
    vk.vkFreeMemory(device, dst_memory, None)
    copier.close()
    rt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
