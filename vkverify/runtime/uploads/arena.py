"""Destinations: stream buffers aliasing blocks of one memory type, bump-allocated
in order; a destination larger than a block gets a block of its own."""

from __future__ import annotations

from ..errors import DeviceFault, UploadFailed
from ..memory import Block, DeviceBuffer, choose_type

__all__ = ["COPY_ALIGN", "Arena", "round_up"]

COPY_ALIGN = 256  # copy offsets and destinations round up to 256 bytes, as engines' uploaders do


def round_up(n: int, align: int) -> int:
    return -(-n // align) * align


class Arena:
    """Blocks of `block_size` bytes of memory kind `kind` (mapped when host-visible),
    each a stream buffer `upload.block<i>`; destinations are aliases of them. A fresh
    block is `unfilled` until its zero-fill is recorded (fresh memory can hold another
    run's bytes)."""

    def __init__(self, vk, device, allocator, properties, kind: str, block_size: int, faults, recording) -> None:
        self.vk, self.device, self.allocator, self.properties = vk, device, allocator, properties
        self.kind, self.block_size = kind, round_up(block_size, COPY_ALIGN)
        self.faults, self.recording = faults, recording
        self.blocks: list[tuple[str, Block, object]] = []  # (stream id, block, VkBuffer over it)
        self.unfilled: set[int] = set()  # ids of blocks not zero-filled yet
        self.destinations: dict[str, DeviceBuffer] = {}

    def destination(self, dst: str, size: int) -> DeviceBuffer:
        """Destination `dst`, created (`size` bytes) on first use. ValueError for a name
        released by a failed upload, a size beyond it, or a buffer of the program."""
        buf = self.destinations.get(dst)
        if buf is not None:
            if buf.handle is None:
                raise ValueError(f"destination {dst!r} was released by a failed upload: upload under a new name")
            if size > buf.size:
                raise ValueError(f"{size} bytes do not fit destination {dst!r} ({buf.size} bytes)")
            return buf
        if self.recording.taken(dst):
            raise ValueError(f"{dst!r} is a buffer of the program, not an upload destination")
        vk, handle = self.vk, self.device.handle
        buffer = self._vk_buffer(dst, size)
        requirements = vk.vkGetBufferMemoryRequirements(handle, buffer)  # vkGetBufferMemoryRequirements
        try:
            block_id, block, start = self._place(size, max(requirements.alignment, COPY_ALIGN),
                                                 requirements.memoryTypeBits)
        except UploadFailed:
            vk.vkDestroyBuffer(handle, buffer, None)  # vkDestroyBuffer
            raise
        vk.vkBindBufferMemory(handle, buffer, block.memory, start)  # vkBindBufferMemory
        block.live += 1
        buf = DeviceBuffer(dst, buffer, block, start, size, self.kind)
        self.destinations[dst] = buf
        self.recording.name_buffer(buf)
        self.recording.declare("buffers", {"id": dst, "alias_of": block_id, "offset": start, "size": size})
        return buf

    def fresh(self, block: Block) -> bool:
        return id(block) in self.unfilled

    def filled(self, block: Block) -> None:
        self.unfilled.discard(id(block))

    def unfill(self, blocks: list[Block]) -> None:
        """Their fills were never submitted (a failed upload dropped the slot holding them)."""
        self.unfilled.update(id(b) for b in blocks)

    def vk_buffer_of(self, block: Block) -> tuple[str, object]:
        """The stream id and the VkBuffer of `block`."""
        return next((i, b) for i, blk, b in self.blocks if blk is block)

    def release(self, names) -> list[str]:
        """Destroy the named destinations that exist (a failed upload's), recorded; their ids."""
        released = []
        for buf in (self.destinations.get(n) for n in dict.fromkeys(names)):
            if buf is not None and buf.handle is not None:
                self.recording.op({"op": "destroy", "buffer": buf.id, "label": "failed upload"})
                self.allocator.destroy(buf)
                released.append(buf.id)
        return released

    def resident_host_bytes(self) -> int:
        """Bytes of live destinations in memory that is not device-local."""
        local = self.vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
        return sum(b.size for b in self.destinations.values() if b.handle is not None
                   and not self.properties.memoryTypes[b.block.type_index].propertyFlags & local)

    def coherent(self, buf: DeviceBuffer) -> bool:
        flags = self.properties.memoryTypes[buf.block.type_index].propertyFlags
        return bool(flags & self.vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)

    def close(self) -> None:
        """Free every destination and block; the device is idle."""
        vk, handle = self.vk, self.device.handle
        for buf in self.destinations.values():
            self.allocator.destroy(buf)
        for _, block, buffer in self.blocks:
            vk.vkDestroyBuffer(handle, buffer, None)  # vkDestroyBuffer
            if block.mapped is not None:
                vk.vkUnmapMemory(handle, block.memory)  # vkUnmapMemory
            vk.vkFreeMemory(handle, block.memory, None)  # vkFreeMemory
        self.blocks.clear()

    def _place(self, size: int, align: int, type_bits: int) -> tuple[str, Block, int]:
        """Bump-allocate from the last block, else a new one (the `block` fault point)."""
        if self.blocks:
            block_id, block, _ = self.blocks[-1]
            start = round_up(block.used, align)
            if start + size <= block.size:
                block.used = start + size
                return block_id, block, start
        if self.faults.hit("block"):
            raise UploadFailed("block", "injected: VK_ERROR_OUT_OF_DEVICE_MEMORY", injected=True)
        vk, handle = self.vk, self.device.handle
        block_size = max(self.block_size, round_up(size, COPY_ALIGN))
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
        if self.kind != "device_local":  # mapped mode: the host writes destinations through the map
            block.mapped = vk.vkMapMemory(handle, memory, 0, block_size, 0)  # vkMapMemory
        self.blocks.append((block_id, block, buffer))
        self.unfilled.add(id(block))
        self.recording.declare("buffers", {"id": block_id, "size": block_size, "memory": self.kind})
        return block_id, block, 0

    def _vk_buffer(self, name: str, size: int):
        """Concurrent: uploads and their readers may be on different families."""
        vk = self.vk
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
                 | vk.VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT)
        try:
            return self.allocator.buffer(name, size, usage, "concurrent")
        except DeviceFault as error:
            raise UploadFailed("block", f"vkCreateBuffer: {error.error}") from None
