"""Replay of streams with several `devices`, as tensor-parallel engines run them (pinned host
memory shared by the devices, exported timeline semaphores or host proxy threads between them).

One Runtime (its own instance, VkDevice and queues) per stream device; on a
machine with fewer physical devices than the stream has, several logical
devices share one physical device (Lavapipe stands in for GPUs that way).

How they share buffers and semaphores: sharing.py's plan.
"""

from __future__ import annotations

import base64
import hashlib
import mmap
import os
import threading
from dataclasses import replace

from ..model import from_dict, ir
from ..model.data import data_bytes
from ..model.dump import command_to_dict, host_op_to_dict, to_dict
from ..model.refs import format_ref
from .create import create_objects, owners, queue_requests
from .errors import DeviceFault
from .host_threads import run_concurrently, run_thread_ops
from .memory import Block, DeviceBuffer, choose_type
from .replay_result import ReplayResult, finish
from .runtime import Runtime
from .sharing import PROXY_ENV, SHARE_ENV, Bridge, SharingPlan, choose_physical, device_of_queue, plan

__all__ = ["HostAllocation", "MultiDevice", "create_timeline", "export_fd", "import_host_buffer", "import_timeline",
           "replay_devices", "replay_plan"]

# The replay's own command buffers, named apart from a stream's (no `@`: that spells a submission).
# Appended to each batch whose signal a proxy's host copy waits for: the signal makes the batch's
# writes available to the device domain only, the host's read needs them made available to the host.
HOST_READ_BARRIER = ir.CommandBuffer("replay:host_read_barrier", (ir.Barrier(
    frozenset({"all_commands"}), frozenset({"memory_write"}), frozenset({"host"}), frozenset({"host_read"})),))
# Put before each batch that waits for a proxied timeline whose proxy copies buffers: the proxy's host writes
# come after the submit and are released by vkSignalSemaphore, which orders execution only; this barrier
# performs the domain operation from host to device (docs/format.md, "Readings"; corpus 82, 117).
HOST_WRITE_BARRIER = ir.CommandBuffer("replay:host_write_barrier", (ir.Barrier(
    frozenset({"host"}), frozenset({"host_write"}), frozenset({"all_commands"}),
    frozenset({"memory_read", "memory_write"})),))


# ---- creating what is shared ------------------------------------------------------


class HostAllocation:
    """Page-aligned host memory that devices import; freed only after every
    device memory importing it is (keep-alive: the host memory outlives every device use)."""

    def __init__(self, vk, size: int, alignment: int) -> None:
        self.size = -(-size // alignment) * alignment
        self._map = mmap.mmap(-1, self.size + alignment)
        self._view = vk.ffi.from_buffer(self._map)
        skip = -int(vk.ffi.cast("uintptr_t", self._view)) % alignment
        self.pointer = vk.ffi.cast("void *", self._view + skip)
        self._vk = vk

    def release(self) -> None:
        view, self._view = self._view, None
        if view is not None:
            self._vk.ffi.release(view)
            self._map.close()


def import_host_buffer(rt: Runtime, id: str, size: int, host: HostAllocation, sharing: str) -> None:
    """Buffer `id` of `rt`, bound to memory imported from `host`; the runtime
    frees it like its own (its block is in the runtime's allocator)."""
    vk, device = rt.vk, rt.device.handle
    host_bit = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
    usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
             | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT)
    if sharing == "concurrent":  # as Runtime.create_buffer: say so, whatever the VkBuffer's sharing mode
        rt.instance.note("concurrent")
    handle = rt.allocator.buffer(id, size, usage, sharing, external=host_bit)  # vkCreateBuffer
    try:
        requirements = vk.vkGetBufferMemoryRequirements(device, handle)  # vkGetBufferMemoryRequirements
        pointer_properties = vk.vkGetDeviceProcAddr(device, "vkGetMemoryHostPointerPropertiesEXT")
        # Passed in, not left to the binding: it would allocate the struct without its sType.
        pointer = vk.VkMemoryHostPointerPropertiesEXT()
        # vkGetMemoryHostPointerPropertiesEXT
        allowed = pointer_properties(device, host_bit, host.pointer, pointer).memoryTypeBits
        properties = vk.vkGetPhysicalDeviceMemoryProperties(rt.device.physical)  # vkGetPhysicalDeviceMemoryProperties
        type_index = choose_type(vk, properties, "host_coherent", requirements.memoryTypeBits & allowed)
        source = vk.VkImportMemoryHostPointerInfoEXT(handleType=host_bit, pHostPointer=host.pointer)
        allocate = vk.VkMemoryAllocateInfo(pNext=source, allocationSize=host.size, memoryTypeIndex=type_index)
        try:
            memory = vk.vkAllocateMemory(device, allocate, None)  # vkAllocateMemory
        except vk.VkError as error:
            raise DeviceFault(f"buffer {id}", "vkAllocateMemory (host pointer import)", type(error).__name__) from None
        vk.vkBindBufferMemory(device, handle, memory, 0)  # vkBindBufferMemory
    except BaseException:
        vk.vkDestroyBuffer(device, handle, None)  # vkDestroyBuffer
        raise
    # Mapped through Vulkan (not the host view) so flush, invalidate and unmap act on this memory.
    mapped = vk.vkMapMemory(device, memory, 0, host.size, 0)  # vkMapMemory
    block = Block(memory, type_index, host.size, used=host.size, live=1, mapped=mapped)
    rt.allocator.blocks.append(block)
    rt.buffers[id] = DeviceBuffer(id, handle, block, 0, size, "host_coherent", sharing)


def create_timeline(rt: Runtime, id: str, initial: int, export: bool) -> None:
    """Timeline `id` on `rt`; export: one that `export_fd` can hand to another device."""
    vk, device = rt.vk, rt.device.handle
    fd_bit = vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT
    exported = vk.VkExportSemaphoreCreateInfo(handleTypes=fd_bit) if export else None
    kind = vk.VkSemaphoreTypeCreateInfo(pNext=exported, semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE,
                                        initialValue=initial)
    info = vk.VkSemaphoreCreateInfo(pNext=kind)
    handle = vk.vkCreateSemaphore(device, info, None)  # vkCreateSemaphore
    rt.instance.name(device, vk.VK_OBJECT_TYPE_SEMAPHORE, handle, id)
    rt.semaphores[id] = (handle, "timeline")


def export_fd(rt: Runtime, id: str) -> int:
    """An OPAQUE_FD of exported timeline `id` (each import consumes one)."""
    vk, device = rt.vk, rt.device.handle
    get_fd = vk.vkGetDeviceProcAddr(device, "vkGetSemaphoreFdKHR")
    info = vk.VkSemaphoreGetFdInfoKHR(semaphore=rt.semaphores[id][0],
                                      handleType=vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT)
    return get_fd(device, info)  # vkGetSemaphoreFdKHR


def import_timeline(rt: Runtime, id: str, initial: int, fd: int) -> None:
    """Timeline `id` on `rt` whose payload becomes the exported one (the fd is
    consumed by a successful import)."""
    vk, device = rt.vk, rt.device.handle
    create_timeline(rt, id, initial, export=False)
    import_fd = vk.vkGetDeviceProcAddr(device, "vkImportSemaphoreFdKHR")
    info = vk.VkImportSemaphoreFdInfoKHR(semaphore=rt.semaphores[id][0],
                                         handleType=vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT, fd=fd)
    try:
        import_fd(device, info)  # vkImportSemaphoreFdKHR
    except vk.VkError as error:
        os.close(fd)
        raise DeviceFault(f"semaphore {id}", "vkImportSemaphoreFdKHR", type(error).__name__) from None


# ---- the replay ---------------------------------------------------------------------


class MultiDevice:
    """The runtimes of one multi-device replay, the shared objects, and the
    stream as replayed (stream ops plus proxy threads)."""

    def __init__(self, stream: ir.Stream, plan: SharingPlan, syncval: bool) -> None:
        self.stream, self.plan = stream, plan
        self.on = device_of_queue(stream)
        self.runtimes: dict[str, Runtime] = {}
        self.hosts: list[HostAllocation] = []
        self.aborted = threading.Event()
        self._lock = threading.Lock()
        self.threads: dict[str, list[dict]] = {}
        # Submits on the proxied device name its local timeline.
        self.renamed = {(b.other, b.semaphore): b.mirror for b in plan.bridges if b.proxy}
        # The signals that host copies wait for, by (semaphore, value).
        self.copied_after = {(b.semaphore, v) for b in plan.bridges for v in b.copies}
        # The (device, semaphore) waits that a proxy's host copies come before.
        self.copied_before = {(b.other, b.semaphore) for b in plan.bridges if b.proxy and b.copies}
        try:
            for d in stream.devices:
                physical = plan.physical[d.id]
                rt = Runtime(queue_requests(stream, d), device=str(physical.index), validation=syncval,
                             syncval=syncval, check=False, name=stream.name,
                             extensions=tuple(sorted(physical.extensions)), device_id=d.id)
                self.runtimes[d.id] = rt
                # One abort for all: a failure on one device stops every device's waits.
                rt.aborted = self.aborted
        except BaseException:
            self.close()
            raise

    def create(self) -> None:
        """The stream's objects on every device (create.create_objects), what they share as the plan says."""
        stream, plan, rts = self.stream, self.plan, self.runtimes

        def shared_buffer(b: ir.Buffer) -> bool:
            if b.id not in plan.shared:
                return False
            host = HostAllocation(rts[b.devices[0]].vk, b.size, max(plan.physical[d].host_alignment for d in b.devices))
            self.hosts.append(host)
            for d in b.devices:
                import_host_buffer(rts[d], b.id, b.size, host, b.sharing)
            return True
        bridged: dict[str, list[Bridge]] = {}
        for br in plan.bridges:
            bridged.setdefault(br.semaphore, []).append(br)

        def bridged_timeline(s: ir.Semaphore) -> bool:
            if s.id not in bridged:
                return False
            home = rts[plan.home[s.id]]
            create_timeline(home, s.id, s.initial, export=any(not br.proxy for br in bridged[s.id]))
            for br in bridged[s.id]:
                if br.proxy:
                    create_timeline(rts[br.other], s.id, s.initial, export=False)
                else:
                    import_timeline(rts[br.other], s.id, s.initial, export_fd(home, s.id))
            return True
        create_objects(stream, rts, plan.home, shared_buffer, bridged_timeline, (HOST_READ_BARRIER, HOST_WRITE_BARRIER))

    # ---- host ops -------------------------------------------------------------------

    def _parts(self, op: ir.HostOp) -> list[tuple[str, ir.HostOp]]:
        """(device, op) pairs that run `op`: a wait-all over several devices'
        objects waits on each device in turn, which ends when all are reached."""
        home, on, stream = self.plan.home, self.on, self.stream
        if isinstance(op, (ir.Submit, ir.QueueWaitIdle)):
            return [(on[op.queue], op)]
        if isinstance(op, ir.DeviceWaitIdle):
            return [(op.device, op)]
        if isinstance(op, ir.SignalSemaphore):
            return [(home[op.semaphore], op)]
        if isinstance(op, ir.HostAccess):
            copied = self.plan.copied.get(stream.index.root(op.buffer)[0])
            if copied is None:  # one memory, whichever device maps it
                return [(owners(stream, op.buffer)[0], op)]
            # One copy per device: a read takes the writing device's, anything else goes to every copy.
            return [(copied.source, op)] if op.op == "host_read" else [(d, op) for d in owners(stream, op.buffer)]
        if isinstance(op, ir.Destroy):
            return [(d, op) for d in owners(stream, op.buffer)]
        if isinstance(op, ir.WaitSemaphores):
            by: dict[str, list] = {}
            for w in op.waits:
                by.setdefault(home[w.semaphore], []).append(w)
            return [(d, ir.WaitSemaphores(tuple(ws))) for d, ws in by.items()]
        by_fence: dict[str, list] = {}
        for f in op.fences:
            by_fence.setdefault(home[f], []).append(f)
        return [(d, type(op)(tuple(fs))) for d, fs in by_fence.items()]

    def _record(self, thread: str, op: ir.HostOp) -> str:
        entry = host_op_to_dict(op)
        if isinstance(op, ir.Submit):
            device = self.on[op.queue]
            for batch in entry["batches"]:
                for s in batch["wait"] + batch["signal"]:
                    s["semaphore"] = self.renamed.get((device, s["semaphore"]), s["semaphore"])
        with self._lock:
            ops = self.threads.setdefault(thread, [])
            ops.append(entry)
            return format_ref(thread, len(ops) - 1)

    def execute(self, thread: str, op: ir.HostOp, at: dict | None = None):
        if isinstance(op, ir.Submit):
            device = self.on[op.queue]
            op = replace(op, batches=tuple(replace(b, command_buffers=(
                (HOST_WRITE_BARRIER.id,) if any((device, w.semaphore) in self.copied_before for w in b.waits) else ())
                + b.command_buffers + (
                (HOST_READ_BARRIER.id,) if any((s.semaphore, s.value) in self.copied_after for s in b.signals) else ()))
                for b in op.batches))
        ref = self._record(thread, op)
        if isinstance(op, ir.HostAccess) and op.op == "host_write" and op.data is None:
            # The default pattern is seeded by the op's reference, which only this stream-wide count knows.
            data = data_bytes(None, op.size, op.buffer, ref)
            op = replace(op, data=ir.Data(base64=base64.b64encode(data).decode()))
        out = None
        for device, part in self._parts(op):
            try:
                out = self.runtimes[device].execute(thread, part, at)
            except DeviceFault as error:  # the device's own count of ops is not the stream's reference
                raise DeviceFault(f"{ref} on {device}", error.function, error.error) from None
        return out

    def forward(self, bridge: Bridge) -> None:
        """The proxy thread of one bridge: each value reached on the home
        timeline is signalled on the other device's, after the host copies of
        what the home device wrote before signalling it."""
        home, other = self.runtimes[bridge.home], self.runtimes[bridge.other]
        for value in bridge.values:
            wait = ir.WaitSemaphores((ir.SemaphoreValue(bridge.semaphore, value),))
            self._record(bridge.thread, wait)
            home.execute(bridge.thread, wait)
            # With HOST_READ_BARRIER the wait makes the home device's writes visible to the host, and the copies
            # are host_coherent memory: no invalidate before the read, nor flush before the signal.
            for buffer, lo, hi in bridge.copies.get(value, ()):
                read = ir.HostAccess("host_read", buffer, lo, hi - lo)
                self._record(bridge.thread, read)
                data = home.execute(bridge.thread, read)
                write = ir.HostAccess("host_write", buffer, lo, hi - lo,
                                      ir.Data(base64=base64.b64encode(data).decode()))
                self._record(bridge.thread, write)
                other.execute(bridge.thread, write)
            self._record(bridge.thread, ir.SignalSemaphore(bridge.mirror, value))
            other.execute(bridge.thread, ir.SignalSemaphore(bridge.semaphore, value))

    def run(self) -> dict[str, str]:
        """Every stream thread and every proxy thread, concurrently; host_read digests by reference."""
        reads: dict[str, str] = {}

        def run_thread(thread: ir.Thread) -> None:
            run_thread_ops(self.execute, self.stream, thread, reads)
        run_concurrently([(run_thread, t, t.id) for t in self.stream.threads]
                         + [(self.forward, b, b.thread) for b in self.plan.bridges if b.proxy], self.aborted)
        return reads

    def digests(self) -> dict[str, str]:
        for rt in self.runtimes.values():
            rt.device_idle()
        out = {}
        for b in self.stream.buffers:
            rt = self.runtimes[self.plan.copied[b.id].source if b.id in self.plan.copied else b.devices[0]]
            if b.alias_of is None and rt.buffers[b.id].handle is not None:
                out[b.id] = hashlib.sha256(rt.read_back(b.id)).hexdigest()
        return out

    def recorded(self) -> ir.Stream:
        """The stream as replayed: mirrors of proxied timelines, proxy threads,
        and the sharing choices in the description."""
        doc = to_dict(self.stream)
        doc.pop("params", None)
        doc.pop("expect", None)
        doc["description"] = "Replayed on several devices. " + "; ".join(self.plan.notes(self.stream))
        initial = {s.id: s.initial for s in self.stream.semaphores}
        doc["semaphores"] += [{"id": b.mirror, "type": "timeline", "initial": initial[b.semaphore]}
                              for b in self.plan.bridges if b.proxy]
        doc["threads"] = {t: list(ops) for t, ops in self.threads.items()}
        for cb, used in ((HOST_READ_BARRIER, self.copied_after), (HOST_WRITE_BARRIER, self.copied_before)):
            if used:
                doc["command_buffers"][cb.id] = [command_to_dict(c) for c in cb.commands]
        return from_dict(doc, "<multi-device replay>")

    def messages(self) -> list:
        return [m for rt in self.runtimes.values() for m in rt.instance.messages]

    def close(self) -> None:
        """Every runtime, then the host memory they imported; idempotent."""
        for rt in reversed(list(self.runtimes.values())):
            rt.close()
        for host in self.hosts:
            host.release()


def replay_devices(stream: ir.Stream, device: str | None = None, syncval: bool = False) -> ReplayResult:
    """`replay` for a stream with several devices; the sharing choices are in the result's `notes`
    and in the recorded stream's description."""
    chosen = plan(stream, choose_physical(stream, device), os.environ.get(PROXY_ENV) == "1",
                  os.environ.get(SHARE_ENV) == "copy")
    return replay_plan(stream, chosen, syncval)


def replay_plan(stream: ir.Stream, chosen: SharingPlan, syncval: bool = False) -> ReplayResult:
    """The multi-device replay of `stream` as `chosen` shares its objects."""
    run = MultiDevice(stream, chosen, syncval)
    try:
        run.create()
        reads = run.run()
        digests = run.digests()
        names = ", ".join(f"{d}: {p.name}" for d, p in chosen.physical.items())
        result = ReplayResult(stream.name, names, digests, reads, run.recorded(), notes=chosen.notes(stream))
    finally:
        run.close()
    return finish(result, stream, run.messages(), syncval)
