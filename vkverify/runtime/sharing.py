"""How the devices of a multi-device replay share a stream's objects: the plan, decided before
anything is created, from what each physical device supports.

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

import os
from dataclasses import dataclass

from ..model import ir
from ..model.accesses import command_accesses
from .create import owners
from .device import Instance, pick_physical
from .errors import Unsupported

__all__ = ["HOST_MEMORY", "PROXY_ENV", "SEMAPHORE_FD", "SHARE_ENV", "Bridge", "Copied", "Physical", "SharingPlan",
           "choose_physical", "device_of_queue", "plan"]

PROXY_ENV = "VKVERIFY_PROXY"
SHARE_ENV = "VKVERIFY_SHARE"

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
class SharingPlan:
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


def device_of_queue(stream: ir.Stream) -> dict[str, str]:
    return {q: d for q, (d, _) in stream.index.queues.items()}


def _accesses(stream: ir.Stream, batch: ir.Batch):
    """(root buffer, lo, hi, writes) of each access the batch's commands make, in root offsets."""
    for cb in batch.command_buffers:
        for _, _, command in stream.index.commands_of(cb):
            for _, _, write, buffer, lo, hi, *_ in command_accesses(command):
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
    for t, op in ir.submits(stream):
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


def plan(stream: ir.Stream, physical: dict[str, Physical], force_proxy: bool, force_copy: bool) -> SharingPlan:
    """How each shared object is shared between the chosen devices; Unsupported
    naming the object and the reason where it cannot be."""
    using, writers = _device_uses(stream)
    shared, copied = _share_buffers(stream, physical, writers, force_copy)
    home = _fence_homes(stream)
    bridges = _bridges(stream, physical, copied, home, force_proxy)
    _check_copies_reach(copied, using, writers, bridges)
    return SharingPlan(physical, home, bridges, shared, copied)


def _device_uses(stream: ir.Stream) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(root buffer -> the devices whose commands access it, -> those whose commands write it);
    Unsupported where a command uses a buffer that is not its device's memory."""
    on = device_of_queue(stream)
    using: dict[str, set[str]] = {}
    writers: dict[str, set[str]] = {}
    for op, b in ir.batches(stream):
        for cb in b.command_buffers:
            for _, _, c in stream.index.commands_of(cb):
                for buf in sorted(_command_buffers(c)):
                    if on[op.queue] not in owners(stream, buf):
                        raise Unsupported(f"{cb} runs on {on[op.queue]} but buffer {buf!r} is memory of "
                                          f"{', '.join(owners(stream, buf))} only")
        for root, _, _, write in _accesses(stream, b):
            using.setdefault(root, set()).add(on[op.queue])
            if write:
                writers.setdefault(root, set()).add(on[op.queue])
    return using, writers


def _share_buffers(stream: ir.Stream, physical: dict[str, Physical], writers: dict[str, set[str]],
                   force_copy: bool) -> tuple[tuple[str, ...], dict[str, Copied]]:
    """The buffers of several devices imported as host memory by each, and those copied through the host
    instead (a device lacks the extension, or VKVERIFY_SHARE=copy)."""
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
    return tuple(shared), copied


def _fence_homes(stream: ir.Stream) -> dict[str, str]:
    """Fence -> the one device whose submits carry it (else the first device)."""
    on = device_of_queue(stream)
    users: dict[str, set[str]] = {}
    for _, op in ir.submits(stream):
        if op.fence is not None:
            users.setdefault(op.fence, set()).add(on[op.queue])
    home = {}
    for fence in stream.fences:
        devices = sorted(users.get(fence.id, ()))
        if len(devices) > 1:
            raise Unsupported(f"fence {fence.id!r} is submitted on {' and '.join(devices)}: "
                              "a fence belongs to one device")
        home[fence.id] = devices[0] if devices else stream.devices[0].id
    return home


def _bridges(stream: ir.Stream, physical: dict[str, Physical], copied: dict[str, Copied], home: dict[str, str],
             force_proxy: bool) -> tuple[Bridge, ...]:
    """Each semaphore's home device (added to `home`: the first that signals it, else that waits it) and
    a bridge to each other device that uses it: the exported semaphore, else a proxy thread."""
    on = device_of_queue(stream)
    submitted = list(ir.batches(stream))
    bridges = []
    for sem in stream.semaphores:
        signalled = sorted({on[op.queue] for op, b in submitted for s in b.signals if s.semaphore == sem.id})
        waited = sorted({on[op.queue] for op, b in submitted for w in b.waits if w.semaphore == sem.id}
                        - set(signalled))
        home[sem.id] = (signalled or waited or [stream.devices[0].id])[0]
        users = signalled + waited
        if len(users) < 2:
            continue
        if sem.type == "binary":
            raise Unsupported(f"binary semaphore {sem.id!r} is used on {' and '.join(users)}: only timeline "
                              "semaphores are shared across devices")
        values = sorted({s.value for _, b in submitted for s in b.signals if s.semaphore == sem.id}
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
    return tuple(bridges)


def _check_copies_reach(copied: dict[str, Copied], using: dict[str, set[str]], writers: dict[str, set[str]],
                        bridges: tuple[Bridge, ...]) -> None:
    """Unsupported where a copied buffer's writes reach a device that uses it through no proxy's copy."""
    for c in copied.values():
        if c.buffer not in writers:  # only the host writes it, and host writes go to every copy
            continue
        for d in sorted(using.get(c.buffer, set()) - {c.source}):
            if not any(r[0] == c.buffer for br in bridges if (br.home, br.other) == (c.source, d)
                       for ranges in br.copies.values() for r in ranges):
                raise Unsupported(f"buffer {c.buffer!r} is copied through the host ({c.why}) and used on {d}, but no "
                                  f"proxy thread copies {c.source}'s writes to it: no timeline that {d} waits is "
                                  f"signalled after them on {c.source}")


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
