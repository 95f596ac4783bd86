"""Replay of streams with several `devices` (PROTOCOLS.md section 3).

One Runtime (its own instance, VkDevice and queues) per stream device; on a
machine with fewer physical devices than the stream has, several logical
devices share one physical device (Lavapipe stands in for GPUs that way).

What several devices share, and how (`plan`):
- A buffer listed with `devices` is host memory: one page-aligned host
  allocation imported into every device with VK_EXT_external_memory_host, so
  all devices and the host see the same bytes. Where a device lacks the
  extension (or with VKVERIFY_SHARE=copy) each device gets its own
  host-visible copy instead: the device whose commands write the buffer holds
  the latest bytes, and the proxy thread of each timeline it signals to another
  device copies, between its wait and its signal, the ranges that device wrote
  in the batches the wait orders (host_read there, host_write on the other
  device's copy; a barrier to the host, appended to the signalling batch,
  makes the writes available to the host). Host writes go to every copy, host
  reads read the writer's. The recorded stream carries these host ops and
  barriers, so `vkverify check` verifies that each copy is ordered after the
  writes and before the reads.
- A timeline semaphore used by queues of several devices lives on its home
  device (the one whose queues signal it). Where both devices have the same
  driver UUID and can export and import timeline semaphores as OPAQUE_FD, the
  other device imports it; otherwise (or with VKVERIFY_PROXY=1) the other
  device gets a local timeline `S@gpuX` and a proxy host thread waits for each
  value the stream signals on S and signals it on `S@gpuX`. The recorded
  stream carries the mirrors and the proxy threads, so `vkverify check`
  verifies the bridge too.
- Anything else shared across devices (binary semaphores, fences, a timeline
  signalled by two devices with no export path, device memory, a copied buffer
  written on two devices or with no proxy thread to carry its writes to a
  device that uses it) is refused.
"""

from __future__ import annotations

import base64
import hashlib
import mmap
import os
import sys
import threading
from dataclasses import dataclass, replace

from ..model.accesses import command_accesses
from ..model import from_dict, ir
from ..model.data import data_bytes
from ..model.dump import command_to_dict, host_op_to_dict, to_dict
from ..model.refs import format_ref
from .device import Instance, pick_physical
from .errors import DeviceFault, RuntimeFault, Unsupported
from .memory import Block, DeviceBuffer, choose_type
from .replay import ReplayResult, _queue_requests, _shared_queue_deadlock, compare_reference, run_thread_ops
from .runtime import Runtime

PROXY_ENV = "VKVERIFY_PROXY"
SHARE_ENV = "VKVERIFY_SHARE"
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
HOST_MEMORY = "VK_EXT_external_memory_host"
SEMAPHORE_FD = "VK_KHR_external_semaphore_fd"


@dataclass(frozen=True)
class Physical:
    """What sharing needs to know of a physical device."""

    index: int  # in vkEnumeratePhysicalDevices order (stable across instances)
    name: str
    driver_uuid: bytes
    extensions: frozenset[str]  # of HOST_MEMORY and SEMAPHORE_FD, those it has
    timeline_fd: bool  # timeline semaphores exportable and importable as OPAQUE_FD
    host_alignment: int  # minImportedHostPointerAlignment (0 without HOST_MEMORY)


@dataclass(frozen=True)
class Bridge:
    """Timeline `semaphore`, created on `home`, also waited on by `other`'s queues."""

    semaphore: str
    home: str
    other: str
    proxy: bool  # False: `other` imports the exported semaphore
    values: tuple[int, ...]  # the values a proxy forwards, ascending
    why: str
    # value -> (buffer, lo, hi) ranges of copied buffers the proxy copies from home to other before signalling it
    copies: dict[int, tuple[tuple[str, int, int], ...]]

    @property
    def mirror(self) -> str:
        return f"{self.semaphore}@{self.other}"

    @property
    def thread(self) -> str:
        return f"proxy_{self.semaphore}_{self.other}"

    def note(self) -> str:
        if self.proxy:
            copied = sorted({r[0] for ranges in self.copies.values() for r in ranges})
            copying = f", copying {', '.join(copied)} from {self.home} to {self.other} in between" if copied else ""
            return (f"semaphore {self.semaphore}: proxy thread {self.thread} waits it on {self.home}, signals "
                    f"{self.mirror} on {self.other}{copying} ({self.why})")
        return f"semaphore {self.semaphore}: exported by {self.home}, imported by {self.other} (OPAQUE_FD)"


@dataclass(frozen=True)
class Copied:
    """A buffer of several devices held as one host-visible copy per device."""

    buffer: str
    source: str  # the device whose commands write it (else its first device): its copy holds the latest bytes
    why: str


@dataclass(frozen=True)
class Plan:
    physical: dict[str, Physical]  # stream device -> physical device
    home: dict[str, str]  # semaphore and fence -> the device it is created on
    bridges: tuple[Bridge, ...]
    shared: tuple[str, ...]  # buffers imported as host memory by several devices
    copied: dict[str, Copied]  # buffers copied through the host instead

    def notes(self, stream: ir.Stream) -> list[str]:
        devices = [f"{d}: {p.name} (physical {p.index})" for d, p in self.physical.items()]
        buffers = [f"buffer {b}: host memory imported by {', '.join(stream.index.buffers[b].devices)} ({HOST_MEMORY})"
                   for b in self.shared]
        copies = [f"buffer {c.buffer}: a host-visible copy on each of "
                  f"{', '.join(stream.index.buffers[c.buffer].devices)}, {c.source}'s writes copied through the host "
                  f"by proxy threads ({c.why})" for c in self.copied.values()]
        return devices + buffers + copies + [b.note() for b in self.bridges]


def _device_of_queue(stream: ir.Stream) -> dict[str, str]:
    return {q: d for q, (d, _) in stream.index.queues.items()}


def _owners(stream: ir.Stream, buffer: str) -> tuple[str, ...]:
    """The devices whose memory `buffer` is (an alias: its root's)."""
    return stream.index.buffers[stream.index.root(buffer)[0]].devices


def _accesses(stream: ir.Stream, batch: ir.Batch):
    """(root buffer, lo, hi, writes) of each access the batch's commands make, in root offsets."""
    for cb in batch.command_buffers:
        for command in stream.index.command_buffers[cb].commands:
            for _, _, write, buffer, lo, hi in command_accesses(command):
                root, base = stream.index.root(buffer)
                yield root, base + lo, base + hi, write is not None


def _host_copies(stream: ir.Stream, semaphore: str, other: str, copied: dict[str, Copied],
                 values: tuple[int, ...]) -> dict[int, tuple[tuple[str, int, int], ...]]:
    """Value -> the (buffer, lo, hi) ranges of copied buffers of `other` that the proxy copies before
    signalling it: what the batches its signal orders wrote (its batch and those its thread submitted
    before it to its queue; other threads' submits have no static order with it), less what a smaller
    value's copy already carried."""
    runs: dict[tuple[str, str], list[ir.Batch]] = {}  # (thread, queue) -> its batches in submission order
    signalled: dict[int, tuple[tuple[str, str], int]] = {}  # value -> its run and the batches up to its signal
    for t in stream.threads:
        for op in t.ops:
            if isinstance(op, ir.Submit):
                run = runs.setdefault((t.id, op.queue), [])
                for batch in op.batches:
                    run.append(batch)
                    signalled.update({s.value: ((t.id, op.queue), len(run)) for s in batch.signals
                                      if s.semaphore == semaphore})
    done: dict[tuple[str, str], int] = {}
    out = {}
    for value in values:
        if value not in signalled:  # signalled by the host: no device writes to copy
            continue
        run, end = signalled[value]
        ranges = sorted((root, lo, hi) for batch in runs[run][done.get(run, 0):end]
                        for root, lo, hi, write in _accesses(stream, batch)
                        if write and root in copied and other in stream.index.buffers[root].devices)
        done[run] = end
        merged: list[tuple[str, int, int]] = []
        for root, lo, hi in ranges:
            if merged and merged[-1][0] == root and lo <= merged[-1][2]:
                merged[-1] = (root, merged[-1][1], max(hi, merged[-1][2]))
            else:
                merged.append((root, lo, hi))
        if merged:
            out[value] = tuple(merged)
    return out


def _command_buffers(command: ir.Command) -> set[str]:
    if isinstance(command, ir.Copy):
        return {command.src, command.dst}
    if isinstance(command, (ir.Fill, ir.Update)):
        return {command.dst}
    if isinstance(command, ir.Dispatch):
        return {b.buffer for b in command.bindings} | ({command.indirect.buffer} if command.indirect else set())
    return {b.buffer for b in command.buffers}


def plan(stream: ir.Stream, physical: dict[str, Physical], force_proxy: bool, force_copy: bool) -> Plan:
    """How each shared object is shared between the chosen devices; Unsupported
    naming the object and the reason where it cannot be."""
    on = _device_of_queue(stream)
    submits = [op for t in stream.threads for op in t.ops if isinstance(op, ir.Submit)]
    using: dict[str, set[str]] = {}  # root buffer -> the devices whose commands access it
    writers: dict[str, set[str]] = {}
    for op in submits:
        for b in op.batches:
            for cb in b.command_buffers:
                for c in stream.index.command_buffers[cb].commands:
                    for buf in sorted(_command_buffers(c)):
                        if on[op.queue] not in _owners(stream, buf):
                            raise Unsupported(f"{cb} runs on {on[op.queue]} but buffer {buf!r} is memory of "
                                              f"{', '.join(_owners(stream, buf))} only")
            for root, _, _, write in _accesses(stream, b):
                using.setdefault(root, set()).add(on[op.queue])
                if write:
                    writers.setdefault(root, set()).add(on[op.queue])
    shared, copied = [], {}
    for buf in stream.buffers:
        if buf.alias_of is not None or len(buf.devices) < 2:
            continue
        if buf.memory != "host_coherent":
            raise Unsupported(f"buffer {buf.id!r} is shared by {', '.join(buf.devices)} but is {buf.memory} memory: "
                              "only host_coherent memory (imported by every device, or copied through the host) "
                              "is shared")
        lacking = [d for d in buf.devices if HOST_MEMORY not in physical[d].extensions]
        if not (force_copy or lacking):
            shared.append(buf.id)
            continue
        why = f"{SHARE_ENV}=copy" if force_copy else f"{physical[lacking[0]].name} ({lacking[0]}) lacks {HOST_MEMORY}"
        written = sorted(writers.get(buf.id, ()))
        if len(written) > 1:
            raise Unsupported(f"buffer {buf.id!r} is copied through the host ({why}) but written on "
                              f"{' and '.join(written)}: the copies carry the writes of one device")
        copied[buf.id] = Copied(buf.id, (written or buf.devices)[0], why)
    home: dict[str, str] = {}
    fence_users: dict[str, set[str]] = {}
    for op in submits:
        if op.fence is not None:
            fence_users.setdefault(op.fence, set()).add(on[op.queue])
    for fence in stream.fences:
        users = sorted(fence_users.get(fence.id, ()))
        if len(users) > 1:
            raise Unsupported(f"fence {fence.id!r} is submitted on {' and '.join(users)}: "
                              "a fence belongs to one device")
        home[fence.id] = users[0] if users else stream.devices[0].id
    bridges = []
    for sem in stream.semaphores:
        signalled = sorted({on[op.queue] for op in submits for b in op.batches for s in b.signals
                            if s.semaphore == sem.id})
        waited = sorted({on[op.queue] for op in submits for b in op.batches for w in b.waits
                         if w.semaphore == sem.id} - set(signalled))
        home[sem.id] = (signalled or waited or [stream.devices[0].id])[0]
        users = signalled + waited
        if len(users) < 2:
            continue
        if sem.type == "binary":
            raise Unsupported(f"binary semaphore {sem.id!r} is used on {' and '.join(users)}: only timeline "
                              "semaphores are shared across devices")
        values = sorted({s.value for op in submits for b in op.batches for s in b.signals if s.semaphore == sem.id}
                        | {op.value for t in stream.threads for op in t.ops
                           if isinstance(op, ir.SignalSemaphore) and op.semaphore == sem.id})
        for other in users[1:]:
            # A host copy needs a host thread between the devices: the proxy's.
            copying = [c.buffer for c in copied.values()
                       if {home[sem.id], other} <= set(stream.index.buffers[c.buffer].devices)]
            forced = (f"{PROXY_ENV}=1" if force_proxy
                      else f"buffer {copying[0]} is copied through the host" if copying else None)
            why = _no_export(physical[home[sem.id]], physical[other], forced)
            if why is not None and len(signalled) > 1:
                raise Unsupported(f"timeline {sem.id!r} is signalled on {' and '.join(signalled)} and cannot be "
                                  f"shared ({why}); a proxy thread forwards the signals of one device only")
            forwarded = tuple(v for v in values if v > sem.initial)
            bridges.append(Bridge(sem.id, home[sem.id], other, why is not None, forwarded, why or "",
                                  _host_copies(stream, sem.id, other, copied, forwarded) if why else {}))
    for c in copied.values():
        if c.buffer not in writers:  # only the host writes it, and host writes go to every copy
            continue
        for d in sorted(using.get(c.buffer, set()) - {c.source}):
            if not any(r[0] == c.buffer for br in bridges if (br.home, br.other) == (c.source, d)
                       for ranges in br.copies.values() for r in ranges):
                raise Unsupported(f"buffer {c.buffer!r} is copied through the host ({c.why}) and used on {d}, but no "
                                  f"proxy thread copies {c.source}'s writes to it: no timeline that {d} waits is "
                                  f"signalled after them on {c.source}")
    return Plan(physical, home, tuple(bridges), tuple(shared), copied)


def _no_export(a: Physical, b: Physical, forced: str | None) -> str | None:
    """Why a timeline semaphore of `a` cannot be imported by `b` (`forced`: why a proxy must be used
    anyway), or None."""
    if forced is not None:
        return forced
    for p in (a, b):
        if SEMAPHORE_FD not in p.extensions:
            return f"{p.name} lacks {SEMAPHORE_FD}"
        if not p.timeline_fd:
            return f"{p.name} cannot export and import timeline semaphores as OPAQUE_FD"
    if a.driver_uuid != b.driver_uuid:
        return "the driver UUIDs differ"
    return None


# ---- physical devices -------------------------------------------------------------


def _physical(vk, handle, index: int) -> Physical:
    ids = vk.VkPhysicalDeviceIDProperties()
    host = vk.VkPhysicalDeviceExternalMemoryHostPropertiesEXT(pNext=ids)
    props = vk.VkPhysicalDeviceProperties2(pNext=host)
    vk.vkGetPhysicalDeviceProperties2(handle, props)  # vkGetPhysicalDeviceProperties2
    extensions = frozenset(e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(handle, None)
                           ) & {HOST_MEMORY, SEMAPHORE_FD}  # vkEnumerateDeviceExtensionProperties
    timeline = vk.VkSemaphoreTypeCreateInfo(semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE)
    info = vk.VkPhysicalDeviceExternalSemaphoreInfo(
        pNext=timeline, handleType=vk.VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT)
    # vkGetPhysicalDeviceExternalSemaphoreProperties
    external = vk.vkGetPhysicalDeviceExternalSemaphoreProperties(handle, info)
    both = vk.VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT | vk.VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT
    return Physical(index, vk.ffi.string(props.properties.deviceName).decode(), bytes(ids.driverUUID), extensions,
                    external.externalSemaphoreFeatures & both == both,
                    host.minImportedHostPointerAlignment if HOST_MEMORY in extensions else 0)


def choose_physical(stream: ir.Stream, device: str | None) -> dict[str, Physical]:
    """Stream device -> physical device. device: one selector (index or name
    part) for all, or one per stream device separated by commas; default
    VKVERIFY_DEVICE for all, else the devices of the best type in turn."""
    probe = Instance()
    try:
        vk, handles = probe.vk, probe.physical_devices()
        if device is not None and "," in device:
            wanted = device.split(",")
            if len(wanted) != len(stream.devices):
                raise Unsupported(f"{len(wanted)} device selectors for {len(stream.devices)} stream devices")
            chosen = [pick_physical(probe, w) for w in wanted]
        else:
            best = pick_physical(probe, device)
            if device is not None or os.environ.get("VKVERIFY_DEVICE"):
                chosen = [best] * len(stream.devices)
            else:
                kind = vk.vkGetPhysicalDeviceProperties(best).deviceType
                same = [h for h in handles if vk.vkGetPhysicalDeviceProperties(h).deviceType == kind]
                chosen = [same[k % len(same)] for k in range(len(stream.devices))]
        return {d.id: _physical(vk, h, handles.index(h)) for d, h in zip(stream.devices, chosen)}
    finally:
        probe.release()


# ---- creating what is shared ------------------------------------------------------


class HostAllocation:
    """Page-aligned host memory that devices import; freed only after every
    device memory importing it is (the keep-alive rule of PROTOCOLS.md 1)."""

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

    def __init__(self, stream: ir.Stream, plan: Plan, syncval: bool) -> None:
        self.stream, self.plan = stream, plan
        self.on = _device_of_queue(stream)
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
                rt = Runtime(_queue_requests(stream, d), device=str(physical.index), validation=syncval,
                             syncval=syncval, check=False, name=stream.name,
                             extensions=tuple(sorted(physical.extensions)), device_id=d.id)
                self.runtimes[d.id] = rt
                # One abort for all: a failure on one device stops every device's waits.
                rt.aborted = self.aborted
        except BaseException:
            self.close()
            raise

    def create(self) -> None:
        stream, plan, rts = self.stream, self.plan, self.runtimes
        for d, rt in rts.items():
            reason = _shared_queue_deadlock(stream, rt)
            if reason is not None:
                raise Unsupported(f"{stream.name} on {d}: {reason}")

        def depth(b: ir.Buffer) -> int:
            return 0 if b.alias_of is None else 1 + depth(stream.index.buffers[b.alias_of])
        for b in sorted(stream.buffers, key=depth):
            if b.id in plan.shared:
                host = HostAllocation(rts[b.devices[0]].vk, b.size,
                                      max(plan.physical[d].host_alignment for d in b.devices))
                self.hosts.append(host)
                for d in b.devices:
                    import_host_buffer(rts[d], b.id, b.size, host, b.sharing)
            else:
                for d in _owners(stream, b.id):
                    rts[d].create_buffer(b.id, b.size, b.memory, b.alias_of, b.offset, b.sharing)
        bridged = {}
        for br in plan.bridges:
            bridged.setdefault(br.semaphore, []).append(br)
        for s in stream.semaphores:
            home = rts[plan.home[s.id]]
            if s.id not in bridged:
                home.create_semaphore(s.id, s.type == "timeline", s.initial)
                continue
            create_timeline(home, s.id, s.initial, export=any(not br.proxy for br in bridged[s.id]))
            for br in bridged[s.id]:
                if br.proxy:
                    create_timeline(rts[br.other], s.id, s.initial, export=False)
                else:
                    import_timeline(rts[br.other], s.id, s.initial, export_fd(home, s.id))
        for f in stream.fences:
            rts[plan.home[f.id]].create_fence(f.id, f.signaled)
        for rt in rts.values():
            for s in stream.shaders:
                rt.declare_shader(s.id, s.bindings)
            for cb in stream.command_buffers:
                rt.load_command_buffer(cb)
            rt.load_command_buffer(HOST_READ_BARRIER)
            rt.load_command_buffer(HOST_WRITE_BARRIER)

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
                return [(_owners(stream, op.buffer)[0], op)]
            # One copy per device: a read takes the writing device's, anything else goes to every copy.
            return [(copied.source, op)] if op.op == "host_read" else [(d, op) for d in _owners(stream, op.buffer)]
        if isinstance(op, ir.Destroy):
            return [(d, op) for d in _owners(stream, op.buffer)]
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
        errors: list[BaseException] = []

        def run_thread(thread: ir.Thread) -> None:
            run_thread_ops(self.execute, self.stream, thread, reads)

        def guarded(target, arg) -> None:
            try:
                target(arg)
            except BaseException as error:  # noqa: BLE001 - reported by the caller; the others stop waiting
                errors.append(error)
                self.aborted.set()

        work = [(run_thread, t, t.id) for t in self.stream.threads] + \
               [(self.forward, b, b.thread) for b in self.plan.bridges if b.proxy]
        workers = [threading.Thread(target=guarded, args=(fn, arg), name=f"vkverify-{name}") for fn, arg, name in work]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        if errors:
            raise next((e for e in errors if isinstance(e, RuntimeFault)), errors[0])
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
    """`replay` for a stream with several devices; the sharing choices go to stderr
    and into the recorded stream's description."""
    chosen = plan(stream, choose_physical(stream, device), os.environ.get(PROXY_ENV) == "1",
                  os.environ.get(SHARE_ENV) == "copy")
    for note in chosen.notes(stream):
        print(f"vkverify replay: {note}", file=sys.stderr)
    return replay_plan(stream, chosen, syncval)


def replay_plan(stream: ir.Stream, chosen: Plan, syncval: bool = False) -> ReplayResult:
    """The multi-device replay of `stream` as `chosen` shares its objects."""
    run = MultiDevice(stream, chosen, syncval)
    try:
        run.create()
        reads = run.run()
        digests = run.digests()
        names = ", ".join(f"{d}: {p.name}" for d, p in chosen.physical.items())
        result = ReplayResult(stream.name, names, digests, reads, run.recorded())
    finally:
        run.close()
    result.messages = run.messages()
    if syncval:
        from ..check import check
        from .syncval import agreement, layer_findings
        result.findings = check(stream)
        result.agreement = agreement(result.findings, layer_findings(result.messages))
    result.reference, result.reference_note = compare_reference(stream, result)
    return result
