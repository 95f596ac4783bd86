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


def spans(size: int, threads: int) -> list[tuple[int, int]]:
    """[start, end) of each thread's share of a copy, in whole pages."""
    pieces = np.array_split(np.arange(size // 4096 + 1) * 4096, threads)
    return [(p[0], min(p[-1] + 4096, size)) for p in pieces if len(p)]


def threaded_copy(pool: ThreadPoolExecutor, out: np.ndarray, src: np.ndarray, shares: list) -> None:
    list(pool.map(lambda s: out.__setitem__(slice(*s), src[slice(*s)]), shares))


def memcpy_seconds(out: np.ndarray, src: np.ndarray, threads: int, runs: int = 3) -> float:
    shares = spans(src.size, threads)
    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(runs):
            start = time.perf_counter()
            threaded_copy(pool, out, src, shares)
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

    def start(self, src, dst, size: int) -> None:
        vk = self.vk
        vk.vkResetCommandBuffer(self.cb, 0)
        vk.vkBeginCommandBuffer(self.cb, vk.VkCommandBufferBeginInfo())
        vk.vkCmdCopyBuffer(self.cb, src, dst, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=size)])
        vk.vkEndCommandBuffer(self.cb)
        vk.vkResetFences(self.device, 1, [self.fence])
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[self.cb])],
                         self.fence)

    def wait(self) -> None:
        self.vk.vkWaitForFences(self.device, 1, [self.fence], self.vk.VK_TRUE, 60 * 10**9)

    def seconds(self, src, dst, size: int, runs: int = 3) -> float:
        best = float("inf")
        for _ in range(runs + 1):  # the first run is not timed: page tables and clocks warm up
            start = time.perf_counter()
            self.start(src, dst, size)
            self.wait()
            best = min(best, time.perf_counter() - start)
        return best

    def overlapped(self, src, dst, size: int, out: np.ndarray, data: np.ndarray, threads: int,
                   runs: int = 3) -> tuple[float, float]:
        """The copy and a `threads`-way memcpy of `data` into `out` started together:
        (memcpy seconds, seconds until both ended), each the best of `runs`."""
        shares = spans(data.size, threads)
        best = [float("inf")] * 2
        with ThreadPoolExecutor(threads) as pool:
            for _ in range(runs):
                start = time.perf_counter()
                self.start(src, dst, size)
                threaded_copy(pool, out, data, shares)
                host = time.perf_counter() - start
                self.wait()
                both = time.perf_counter() - start
                best = [min(b, t) for b, t in zip(best, (host, both))]
        return best[0], best[1]

    def close(self) -> None:
        self.vk.vkDestroyFence(self.device, self.fence, None)
        self.vk.vkDestroyCommandPool(self.device, self.pool, None)


def pipelined_import(rt: Runtime, copier: Copier, array: np.ndarray, dst, chunk: int, threads: int,
                     align: int, type_index: int) -> tuple[float, float]:
    """`array` imported in page-aligned chunks of `chunk` bytes by `threads`
    threads, each chunk's copy submitted as soon as its import returns (in
    order); (seconds until the last copy ended, seconds to free the imports)."""
    vk, device = rt.vk, rt.device.handle
    host_bit = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
    first = array.ctypes.data - array.ctypes.data % align
    end = array.ctypes.data + array.size
    spans = [(a, min(a + chunk, -(-end // align) * align)) for a in range(first, end, chunk)]

    def imported(span):
        a, b = span
        memory = allocate(vk, device, b - a, type_index, vk.VkImportMemoryHostPointerInfoEXT(
            handleType=host_bit, pHostPointer=vk.ffi.cast("void *", a)))
        return memory, copier.buffer(b - a, memory, vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
                                     vk.VkExternalMemoryBufferCreateInfo(handleTypes=host_bit))

    cbs = vk.vkAllocateCommandBuffers(device, vk.VkCommandBufferAllocateInfo(
        commandPool=copier.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=len(spans)))
    vk.vkResetFences(device, 1, [copier.fence])
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        made = []
        for k, ((a, b), (memory, buffer)) in enumerate(zip(spans, pool.map(imported, spans))):
            cb = cbs[k]
            lo, hi = max(a, array.ctypes.data), min(b, end)
            vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
            vk.vkCmdCopyBuffer(cb, buffer, dst, 1, [vk.VkBufferCopy(
                srcOffset=lo - a, dstOffset=lo - array.ctypes.data, size=hi - lo)])
            vk.vkEndCommandBuffer(cb)
            last = k == len(spans) - 1
            vk.vkQueueSubmit(copier.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])],
                             copier.fence if last else vk.VK_NULL_HANDLE)
            made.append((memory, buffer))
        copier.wait()
        landed = time.perf_counter() - start
        start = time.perf_counter()
        for memory, buffer in made:
            vk.vkDestroyBuffer(device, buffer, None)
            vk.vkFreeMemory(device, memory, None)
        freed = time.perf_counter() - start
    vk.vkFreeCommandBuffers(device, copier.pool, len(cbs), cbs)
    return landed, freed


def allocate(vk, device, size: int, type_index: int, pnext=None):
    return vk.vkAllocateMemory(device, vk.VkMemoryAllocateInfo(pNext=pnext, allocationSize=size,
                                                               memoryTypeIndex=type_index), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--overlap-threads", type=int, nargs="*", default=[4, 8, 16],
                        help="memcpy threads while a copy from another host-coherent buffer runs")
    parser.add_argument("--chunk-mib", type=int, nargs="*", default=[16, 64, 256],
                        help="chunk sizes of the pipelined import")
    parser.add_argument("--import-threads", type=int, nargs="*", default=[1, 4, 8])
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
    overlaps = []
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
        if flags & vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT and not flags & vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT:
            overlaps.append((i, memory, mapped, buffer, copy, many))
            continue
        vk.vkDestroyBuffer(device, buffer, None)
        vk.vkUnmapMemory(device, memory)
        vk.vkFreeMemory(device, memory, None)
    for i, memory, mapped, buffer, copy, many in overlaps[:1]:
        # A staged upload's two halves at once: does the host copy slow the device's reads of host memory?
        other = allocate(vk, device, size, i)
        out = np.frombuffer(vk.vkMapMemory(device, other, 0, size, 0), np.uint8)
        for n in args.overlap_threads:
            host, both = copier.overlapped(buffer, dst, size, out, src, n)
            print(f"type {i}: copy ({copy:.1f} GB/s alone) with a {n}-thread memcpy into the same type: "
                  f"memcpy {gbps(size, host):.1f} GB/s, both done in {both * 1e3:.1f} ms "
                  f"(alone, one after the other: {(size / copy + size / many) / 1e6:.1f} ms)")
        vk.vkUnmapMemory(device, other)
        vk.vkFreeMemory(device, other, None)
    for _, memory, mapped, buffer, _, _ in overlaps:
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
        for chunk in args.chunk_mib:
            for n in args.import_threads:
                runs = [pipelined_import(rt, copier, src, dst, chunk << 20, n, align, type_index) for _ in range(3)]
                landed, freed = min(runs)
                print(f"pipelined import, {chunk} MiB chunks, {n} import threads: landed in {landed * 1e3:.1f} ms "
                      f"({gbps(size, landed):.1f} GB/s; the copy alone {copy * 1e3:.1f} ms), "
                      f"free {freed * 1e3:.1f} ms")
    else:
        print(f"{HOST_MEMORY}: not supported")
    vk.vkDestroyBuffer(device, dst, None)
    vk.vkFreeMemory(device, dst_memory, None)
    copier.close()
    rt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
