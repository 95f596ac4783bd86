"""Memory types by the stream format's memory kinds, blocks, sub-allocated buffers.

Buffers are bump-allocated from 64 MiB blocks of one memory type and one stream
memory kind (larger ones get a block of their own); a block is freed when its
last buffer is. Each block's debug name is its kind: where kinds share a memory
type (Lavapipe's one type is coherent), a capture still says which kind the
stream asked for, and its buffers are not mixed with another kind's. An alias
is a second VkBuffer bound to its root's memory at the root's offset plus its
own, so both name the same bytes, as the format says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .errors import DeviceFault, Unsupported

__all__ = ["Allocator", "Block", "DeviceBuffer", "choose_type", "flag_bits", "flag_names"]

BLOCK_SIZE = 64 << 20

# kind -> (required flags, flags we would rather not have), by name.
KIND_FLAGS = {
    "device_local": (("DEVICE_LOCAL",), ("HOST_VISIBLE",)),
    "host_coherent": (("HOST_VISIBLE", "HOST_COHERENT"), ("DEVICE_LOCAL",)),
    "host_cached": (("HOST_VISIBLE", "HOST_CACHED"), ("HOST_COHERENT",)),
    "device_host_visible": (("DEVICE_LOCAL", "HOST_VISIBLE"), ()),
}


def flag_bits(vk, names) -> int:
    out = 0
    for n in names:
        out |= getattr(vk, f"VK_MEMORY_PROPERTY_{n}_BIT")
    return out


def flag_names(vk, bits: int) -> list[str]:
    return [n for n in ("DEVICE_LOCAL", "HOST_VISIBLE", "HOST_COHERENT", "HOST_CACHED", "LAZILY_ALLOCATED")
            if bits & getattr(vk, f"VK_MEMORY_PROPERTY_{n}_BIT")]


def choose_type(vk, properties, kind: str, allowed_bits: int = ~0) -> int:
    """The memory type index for `kind`: every required flag, as few unwanted
    ones as possible, then the largest heap. Unsupported when there is none."""
    need, avoid = (flag_bits(vk, f) for f in KIND_FLAGS[kind])
    candidates = [i for i in range(properties.memoryTypeCount)
                  if allowed_bits >> i & 1 and properties.memoryTypes[i].propertyFlags & need == need]
    if not candidates:
        raise Unsupported(f"the device has no memory type for {kind!r} (needs {' | '.join(KIND_FLAGS[kind][0])})")

    def rank(i: int) -> tuple:
        t = properties.memoryTypes[i]
        return (t.propertyFlags & avoid).bit_count(), -properties.memoryHeaps[t.heapIndex].size, i
    return min(candidates, key=rank)


@dataclass(eq=False)
class Block:
    memory: object
    type_index: int
    size: int
    used: int = 0
    live: int = 0  # buffers bound to it that are not destroyed
    mapped: object = None  # cffi buffer over the whole block when host-visible
    kind: str | None = None  # the stream memory kind of its buffers (None: a block outside the Allocator's)


@dataclass(eq=False)
class DeviceBuffer:
    """One stream buffer: its VkBuffer, and where its bytes are."""

    id: str
    handle: object
    block: Block
    offset: int  # in the block
    size: int
    kind: str
    sharing: str = "concurrent"  # the stream's sharing mode (docs/format.md)

    def view(self, offset: int, size: int) -> memoryview:
        """The mapped bytes [offset, offset+size) of this buffer."""
        start = self.offset + offset
        return memoryview(self.block.mapped)[start:start + size]


@dataclass(eq=False)
class Allocator:
    device: object  # runtime.device.LogicalDevice
    blocks: list[Block] = field(default_factory=list)

    @property
    def vk(self):
        return self.device.instance.vk

    def create(self, id: str, size: int, kind: str, usage: int, sharing: str = "concurrent") -> DeviceBuffer:
        vk, handle = self.vk, self.device.handle
        properties = vk.vkGetPhysicalDeviceMemoryProperties(self.device.physical)  # vkGetPhysicalDeviceMemoryProperties
        buffer = self.buffer(id, size, usage, sharing)
        try:
            requirements = vk.vkGetBufferMemoryRequirements(handle, buffer)  # vkGetBufferMemoryRequirements
            type_index = choose_type(vk, properties, kind, requirements.memoryTypeBits)
            block, offset = self._place(id, type_index, kind, requirements.size, requirements.alignment, properties)
            vk.vkBindBufferMemory(handle, buffer, block.memory, offset)  # vkBindBufferMemory
        except BaseException:
            vk.vkDestroyBuffer(handle, buffer, None)  # vkDestroyBuffer
            raise
        block.live += 1
        return DeviceBuffer(id, buffer, block, offset, size, kind, sharing)

    def alias(self, id: str, root: DeviceBuffer, offset: int, size: int, usage: int) -> DeviceBuffer:
        vk = self.vk
        buffer = self.buffer(id, size, usage, root.sharing)
        requirements = vk.vkGetBufferMemoryRequirements(self.device.handle, buffer)  # vkGetBufferMemoryRequirements
        if (root.offset + offset) % requirements.alignment:
            vk.vkDestroyBuffer(self.device.handle, buffer, None)  # vkDestroyBuffer
            raise Unsupported(f"alias {id!r} at offset {offset}: the device needs buffers aligned to "
                              f"{requirements.alignment} bytes")
        vk.vkBindBufferMemory(self.device.handle, buffer, root.block.memory, root.offset + offset)  # vkBindBufferMemory
        root.block.live += 1
        return DeviceBuffer(id, buffer, root.block, root.offset + offset, size, root.kind, root.sharing)

    def buffer(self, id: str, size: int, usage: int, sharing: str, external: int = 0):
        """A VkBuffer named `id`. A concurrent stream buffer is VK_SHARING_MODE_CONCURRENT over
        every family the device's queues use, where they use several: an exclusive buffer used
        on another family without an ownership transfer has undefined contents
        (vkspec 12.7 "Resource Sharing Mode"). external: the handle types of memory it will be
        bound to (VkExternalMemoryBufferCreateInfo), if imported."""
        vk = self.vk
        info = vk.VkBufferCreateInfo(
            pNext=vk.VkExternalMemoryBufferCreateInfo(handleTypes=external) if external else None,
            size=max(size, 4), usage=usage, **self.sharing_fields(sharing))
        try:
            buffer = vk.vkCreateBuffer(self.device.handle, info, None)  # vkCreateBuffer
        except vk.VkError as error:
            raise DeviceFault(f"buffer {id}", "vkCreateBuffer", type(error).__name__) from None
        self.device.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_BUFFER, buffer, id)
        return buffer

    def sharing_fields(self, sharing: str) -> dict:
        """A create info's sharing mode for the stream's `sharing`: concurrent over every family the device's
        queues use, where they use several (buffer() says why)."""
        vk = self.vk
        families = sorted({family for family, _, _ in self.device.queues.values()})
        if sharing == "concurrent" and len(families) > 1:
            return {"sharingMode": vk.VK_SHARING_MODE_CONCURRENT, "queueFamilyIndexCount": len(families),
                    "pQueueFamilyIndices": families}
        return {"sharingMode": vk.VK_SHARING_MODE_EXCLUSIVE, "queueFamilyIndexCount": 0, "pQueueFamilyIndices": None}

    def bind_image(self, id: str, image, kind: str):
        """Device memory of its own for VkImage `image` (an optimal-tiling image shares no block with buffers:
        bufferImageGranularity), bound; the caller frees it after destroying the image."""
        vk, handle = self.vk, self.device.handle
        properties = vk.vkGetPhysicalDeviceMemoryProperties(self.device.physical)  # vkGetPhysicalDeviceMemoryProperties
        requirements = vk.vkGetImageMemoryRequirements(handle, image)  # vkGetImageMemoryRequirements
        try:
            type_index = choose_type(vk, properties, kind, requirements.memoryTypeBits)
        except Unsupported:  # NVIDIA's optimal-tiling images take no host-visible type; the host reaches no image
            type_index = choose_type(vk, properties, "device_local", requirements.memoryTypeBits)
        memory = self._allocate(f"image {id}", type_index, kind, requirements.size)
        vk.vkBindImageMemory(handle, image, memory, 0)  # vkBindImageMemory
        return memory

    def _place(self, id: str, type_index: int, kind: str, size: int, alignment: int,
               properties) -> tuple[Block, int]:
        for block in self.blocks:
            start = -(-block.used // alignment) * alignment
            if (block.type_index, block.kind) == (type_index, kind) and start + size <= block.size:
                block.used = start + size
                return block, start
        heap = properties.memoryHeaps[properties.memoryTypes[type_index].heapIndex]
        block_size = max(size, min(BLOCK_SIZE, heap.size // 4))
        if size > heap.size:
            # Drivers may overcommit instead of failing; the heap's size is the contract.
            raise DeviceFault(f"buffer {id}", "vkAllocateMemory",
                              f"VK_ERROR_OUT_OF_DEVICE_MEMORY ({size} bytes, heap {heap.size})")
        block = Block(self._allocate(f"buffer {id}", type_index, kind, block_size), type_index, block_size, used=size,
                      kind=kind)
        self.blocks.append(block)
        flags = properties.memoryTypes[type_index].propertyFlags
        if flags & self.vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT:
            block.mapped = self.vk.vkMapMemory(self.device.handle, block.memory, 0, block_size, 0)  # vkMapMemory
        return block, 0

    def _allocate(self, what: str, type_index: int, kind: str, size: int):
        vk = self.vk
        info = vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=type_index)
        try:
            memory = vk.vkAllocateMemory(self.device.handle, info, None)  # vkAllocateMemory
        except vk.VkError as error:
            raise DeviceFault(what, "vkAllocateMemory", type(error).__name__) from None
        self.device.instance.name(self.device.handle, vk.VK_OBJECT_TYPE_DEVICE_MEMORY, memory, kind)
        return memory

    def destroy(self, buffer: DeviceBuffer) -> None:
        """vkDestroyBuffer, and vkFreeMemory of its block once no buffer uses it."""
        handle, buffer.handle = buffer.handle, None
        if handle is None:
            return
        self.vk.vkDestroyBuffer(self.device.handle, handle, None)  # vkDestroyBuffer
        buffer.block.live -= 1
        if buffer.block.live == 0:
            self._free(buffer.block)

    def _free(self, block: Block) -> None:
        if block in self.blocks:
            self.blocks.remove(block)
            if block.mapped is not None:
                block.mapped = None
                self.vk.vkUnmapMemory(self.device.handle, block.memory)  # vkUnmapMemory
            self.vk.vkFreeMemory(self.device.handle, block.memory, None)  # vkFreeMemory

    def release(self) -> None:
        for block in list(self.blocks):
            self._free(block)

    @cached_property
    def non_coherent_atom_size(self) -> int:
        # Asked once: the runtime flushes or invalidates around every host access.
        return self.vk.vkGetPhysicalDeviceProperties(self.device.physical).limits.nonCoherentAtomSize

    def flush(self, buffer: DeviceBuffer, offset: int, size: int, invalidate: bool) -> None:
        """vkFlushMappedMemoryRanges / vkInvalidateMappedMemoryRanges over the
        range, widened to nonCoherentAtomSize as Vulkan requires."""
        vk = self.vk
        atom = self.non_coherent_atom_size
        start = (buffer.offset + offset) // atom * atom
        end = min(-(-(buffer.offset + offset + size) // atom) * atom, buffer.block.size)
        ranges = [vk.VkMappedMemoryRange(memory=buffer.block.memory, offset=start, size=end - start)]
        if invalidate:
            vk.vkInvalidateMappedMemoryRanges(self.device.handle, 1, ranges)  # vkInvalidateMappedMemoryRanges
        else:
            vk.vkFlushMappedMemoryRanges(self.device.handle, 1, ranges)  # vkFlushMappedMemoryRanges
