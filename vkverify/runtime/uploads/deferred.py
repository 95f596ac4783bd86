"""Deferred copies: bytes held in host-coherent memory until the runtime's next submit
that reads their destination, whose first command buffer copies them at its head."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...model import ir
from ...model.accesses import binding_reads
from ..memory import DeviceBuffer
from .slots import LANDING

__all__ = ["Deferred", "DeferredCopies", "reads_of"]


@dataclass(eq=False)
class Deferred:
    dst: DeviceBuffer
    offset: int
    source: DeviceBuffer  # host-coherent, holds the bytes until the consumer's copy has run
    consumed: bool = False  # its copy is at the head of a submitted command buffer
    fence: str | None = None  # the uploader's fence on that submit; None: the program's own, held until close


class DeferredCopies:
    """The deferred copies of one uploader on a Runtime (`rt`), whose submits carry them."""

    def __init__(self, rt, recording, stats: dict) -> None:
        self.rt, self.recording, self.stats = rt, recording, stats
        self.copies: list[Deferred] = []
        self.held = 0

    def hold(self, dst: DeviceBuffer, offset: int, raw) -> None:
        """Put `raw` in a host-coherent buffer of its own until a reader of `dst` is submitted.
        RuntimeFault where it cannot be created."""
        vk = self.rt.vk
        source = self.rt.allocator.create(f"upload.deferred{self.held}", max(raw.size, 4), "host_coherent",
                                          vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
        self.held += 1
        source.view(0, raw.size)[:] = raw
        self.recording.name_buffer(source)
        self.recording.declare("buffers", {"id": source.id, "size": source.size, "memory": "host_coherent"})
        self.recording.op({"op": "host_write", "buffer": source.id, "offset": 0, "size": raw.size,
                           "label": f"deferred upload of {dst.id}"})
        self.copies.append(Deferred(dst, offset, source))

    def before_submit(self, op: ir.Submit) -> ir.Submit:
        """Pending copies go to the head of the first command buffer of `op` that reads their
        destination and is not recorded yet; without a fence of its own, the submit gets one that
        `finish()` waits before freeing the held bytes."""
        waiting = [d for d in self.copies if not d.consumed]
        consumed = []
        for cb_id in (c for b in op.batches for c in b.command_buffers):
            if self.rt.was_recorded(cb_id):
                continue
            reads = reads_of(self.rt.record.commands(cb_id))
            head = []
            for d in [d for d in waiting if d.dst.id in reads]:
                head.append({"cmd": "copy", "src": d.source.id, "dst": d.dst.id, "label": "deferred upload",
                             "regions": [{"src_offset": 0, "dst_offset": d.offset, "size": d.source.size}]})
                waiting.remove(d)
                consumed.append(d)
                self.stats["copies"] += 1
            if head:
                self.rt.record.prepend_commands(cb_id, head + [{"cmd": "barrier", **LANDING, "src_stage": ["copy"]}])
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

    def pending(self) -> bool:
        return any(not d.consumed for d in self.copies)

    def pending_bytes(self) -> int:
        return sum(d.source.size for d in self.copies if not d.consumed)

    def release_copied(self, wait) -> None:
        """Wait (wait(fence handle, fence id, what)) the fence of each consumed copy, free its bytes."""
        for d in [d for d in self.copies if d.fence is not None]:
            wait(self.rt.fences[d.fence], d.fence, f"deferred copy into {d.dst.id}")
            self.recording.op({"op": "destroy", "buffer": d.source.id})
            self.rt.allocator.destroy(d.source)
            self.copies.remove(d)

    def close(self) -> None:
        """Free every held source; the device is idle."""
        for d in self.copies:
            self.rt.allocator.destroy(d.source)
        self.copies.clear()


def reads_of(commands) -> set[str]:
    """Buffers a command buffer's commands read."""
    out: set[str] = set()
    for c in commands:
        if isinstance(c, ir.Copy):
            out.add(c.src)
        elif isinstance(c, ir.Dispatch):
            out.update(b.buffer for b in c.bindings if binding_reads(b.access))
            if c.indirect is not None:
                out.add(c.indirect.buffer)
    return out
