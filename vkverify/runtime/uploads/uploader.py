"""The Uploader: the placement rule, the arena, the slot ring, host copies and file
reads, deferred copies and faults, put together behind upload(), upload_file(),
commit(), deferred() and finish() (see the package's docstring)."""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Self

import numpy as np

from ...model import UsageError, ir
from ..errors import DeviceLost, RuntimeFault, UploadFailed
from ..memory import DeviceBuffer
from .arena import Arena, round_up
from .deferred import DeferredCopies
from .faults import Faults
from .hostio import FileSource, HostCopies
from .placement import destination_kind, memory_layout, staged
from .site import Site
from .sizing import SLOT_BUDGET, SLOT_PER_THREAD, SlotPlan, measure, plan_slots
from .slots import Signal, SlotRing, wait_fence

__all__ = ["UploadReport", "Uploader", "as_bytes"]

BLOCK_SIZE = 256 << 20


@dataclass(frozen=True)
class UploadReport:
    mode: str  # "staged" | "mapped"
    reason: str  # the placement rule's words
    queue: str  # "transfer" | "spare" | "main" | "engine" | "given": which queue the uploads go to (choose_queue)
    bytes_staged: int  # through staging slots (staged) or written through the map (mapped)
    copies: int  # vkCmdCopyBuffer regions recorded
    submits: int
    blocks_zero_filled: int
    resident_host_bytes: int  # destination bytes that live only in host memory now
    faults_fired: tuple[str, ...]
    slots: int
    slot_size: int
    sizing: str  # how the slots were sized, and why


class Uploader:
    """One per device: its own command pool, staging slots in one persistently mapped
    buffer, a command buffer and a fence per slot, destinations from an arena of
    `block_size` blocks. One upload at a time (its lock); `queue_lock` is the lock every
    submit to the uploader's VkQueue takes (the program's too, when that is the main queue).

    target: a Runtime, or an EngineDevice (a device the engine owns; the uploads are
    recorded in a stream of their own). slots, slot_size: the slot ring; with neither, both
    are measured within `slot_budget` bytes (sizing.py); with one, the other is the
    protocol's (two slots of 16 MiB). staging: the slots' memory kind, host_coherent or host_cached (each host copy is
    then flushed before its submit). copy_threads: host copy threads (hostio.default_threads). queue: the
    Runtime's stream queue for the copies (default: placement.choose_queue's); recorded as that queue even where
    it shares a VkQueue with another, so the stream is checked as a device with separate queues runs it."""

    def __init__(self, target, slots: int | None = None, slot_size: int | None = None,
                 block_size: int = BLOCK_SIZE, thread: str = "main", copy_threads: int | None = None,
                 staging: str = "host_coherent", slot_budget: int = SLOT_BUDGET, queue: str | None = None) -> None:
        if staging not in ("host_coherent", "host_cached"):
            raise ValueError(f"staging memory kind {staging!r}: host_coherent or host_cached")
        site = Site.of(target, thread, queue)
        if site.runtime is not None and site.runtime.uploader is not None:
            raise ValueError("the runtime already has an uploader (one per device)")
        self.site, self.vk, self.thread = site, site.vk, thread
        self.faults = Faults(os.environ.get("VKVERIFY_FAULT"))
        self.lost = self.closed = False
        self._lock = threading.Lock()
        self.stats = dict.fromkeys(("bytes_staged", "copies", "submits", "blocks_zero_filled"), 0)
        heaps, types = memory_layout(site.vk, site.device.physical)
        self.staged, self.reason = staged(heaps, types)
        properties = site.vk.vkGetPhysicalDeviceMemoryProperties(site.device.physical)
        self.arena = Arena(site.vk, site.device, site.allocator, properties, destination_kind(self.staged, types),
                           block_size, self.faults, site.recording)
        self.copies = HostCopies(copy_threads)
        self.deferred_copies = DeferredCopies(site.runtime, site.recording, self.stats) if site.runtime else None
        self.arrays: list[tuple[int, DeviceBuffer]] = []  # staging_array(): (host address, buffer)
        self.ring: SlotRing | None = None
        try:
            self.plan = self._plan(slots, slot_size, slot_budget)
            self.ring = SlotRing(site.vk, site.device, site.allocator, site.family, site.queue, site.queue_lock,
                                 site.queue_id, self.plan.count, self.plan.size, staging if self.staged else None,
                                 self.faults, site.recording, self.stats)
        except BaseException:
            self.close()
            raise
        if site.runtime is not None:
            site.runtime.uploader = self

    def _plan(self, slots: int | None, slot_size: int | None, budget: int) -> SlotPlan:
        if not self.staged:
            return SlotPlan.given(slots, slot_size, "mapped: the slots carry only zero-fills")
        if slots is not None or slot_size is not None:
            return SlotPlan.given(slots, slot_size)
        s = self.site
        submit_seconds, rate = measure(s.vk, s.device, s.allocator, s.family, s.queue, s.queue_lock)
        return plan_slots(submit_seconds, rate, budget, floor=SLOT_PER_THREAD * self.copies.threads)

    # ---- what the caller sees ------------------------------------------------------

    @property
    def queue_id(self) -> str:
        return self.site.queue_id

    @property
    def queue_kind(self) -> str:
        return self.site.queue_kind

    @property
    def queue_lock(self):
        return self.site.queue_lock

    @property
    def destinations(self) -> dict[str, DeviceBuffer]:
        return self.arena.destinations

    # ---- the API ----------------------------------------------------------------

    def upload(self, dst: str, offset: int, data, signal: tuple[str, int] | None = None) -> None:
        """Put `data` (numpy array or bytes) at `offset` of destination `dst`,
        creating it (offset + data size bytes) on first use. Returns once every
        byte is in a submitted slot (from a staging_array(): copied); on the
        uploader's own queue later submits may read it (the landing barrier),
        other queues after `finish()`, or, with `signal` = (timeline semaphore id, value),
        once they wait for that value: the uploader's queue signals it when the bytes have
        landed (the device-side hand-off; the host waits for nothing).
        UploadFailed: this upload failed and `dst` is released. DeviceLost.
        UsageError: `signal` names no timeline semaphore of the runtime."""
        self._transfer([(dst, offset, data)], group=False, signal=signal)

    def upload_file(self, dst: str, offset: int, path, file_offset: int, size: int, direct: bool = False,
                    signal: tuple[str, int] | None = None) -> None:
        """Put `size` bytes of the file at `path` from `file_offset` (a tensor of a safetensors or
        GGUF file, say) at `offset` of `dst`, read straight into the mapped slots (staged) or the
        mapped destination (mapped), no array in between; each slot's read overlaps the copies
        of the slots before it. direct: O_DIRECT where the file system takes it (the disk writes
        the slot, no page-cache copy: for files larger than the page cache holds), else buffered;
        not the default, since a file already in the page cache came 14 times slower through
        O_DIRECT on the H200's host (benchmarks/uploads.py). Returns, and signals, as upload() does.
        UploadFailed (point `read` for a failing or short read): `dst` is released. DeviceLost."""
        handoff = self._signal(signal)
        with self._call():
            try:
                source = FileSource(path, direct and self.staged)
            except OSError as error:  # nothing was created yet
                raise UploadFailed("read", f"{path}: {error.strerror}") from None
            with source:
                try:
                    buf = self.arena.destination(dst, offset + size)
                    if self.staged:
                        self.ring.begin(size)
                        self._stage_file(buf, offset, source, file_offset, size)
                    else:
                        self._write_mapped(buf, offset, size,
                                           lambda view: self._read(source, file_offset, view, size)())
                    self._submit_open(handoff)
                except UploadFailed as error:
                    self._fail(error, [dst])
                    raise

    def staging_array(self, shape, dtype=np.uint8) -> np.ndarray:
        """A zeroed array in host-coherent memory of its own, valid until close(): the
        zero-copy path for producers. Filled in place (dequantized, decompressed or read
        with O_DIRECT into it, say) and handed to upload() or commit(), whole or a slice, it
        is copied straight to the device, without the host copy into a slot; that call
        returns once the device has read it, so the caller may refill it."""
        with self._call():
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
            array_id = f"upload.array{len(self.arrays)}"
            try:
                buf = self.site.allocator.create(array_id, max(nbytes, 4), "host_coherent",
                                                 self.vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
            except RuntimeFault as error:
                raise UploadFailed("stage", f"staging array: {error}") from None
            view = np.frombuffer(buf.view(0, nbytes), np.uint8)
            view[:] = 0
            self.arrays.append((view.ctypes.data, buf))
            self.site.recording.declare("buffers", {"id": array_id, "size": buf.size, "memory": "host_coherent"})
            return view.view(dtype).reshape(shape)

    def commit(self, group, signal: tuple[str, int] | None = None) -> None:
        """Several (dst, offset, data) in one submit (streamed through the slots
        when they do not fit one): all or nothing; `signal` as upload()'s. UploadFailed: none of the
        group's destinations is left resident. DeviceLost."""
        self._transfer(list(group), group=True, signal=signal)

    def deferred(self, dst: str, offset: int, data) -> None:
        """Hold `data` in host memory; the copy is recorded at the head of the next
        command buffer submitted through the runtime that reads `dst` (mapped
        mode: written through the map now). UploadFailed, DeviceLost. ValueError on
        an engine's device (no runtime submits to carry the copy)."""
        if self.deferred_copies is None:
            raise ValueError("deferred() needs a Runtime: its submits carry the copies; use upload()")
        with self._call():
            raw = as_bytes(data)
            try:
                buf = self.arena.destination(dst, offset + raw.size)
                if not self.staged:
                    self._write_mapped(buf, offset, raw.size, lambda view: self.copies.copy(view, raw))
                    return
                if self.arena.fresh(buf.block):
                    # The consumer may run on any queue: fill the fresh block now and wait for it.
                    self._fill_now(buf.block)
            except UploadFailed as error:
                self._fail(error, [dst])
                raise
            self.deferred_copies.hold(buf, offset, raw)

    def finish(self) -> None:
        """Submit the open slot and wait for every slot and every consumed deferred
        copy: the data has landed, any queue may read it. DeviceLost."""
        with self._call():
            self._submit_open()
            self.ring.wait_all()
            if self.deferred_copies is not None:
                self.deferred_copies.release_copied(self._wait_fence)

    def report(self) -> UploadReport:
        pending = self.deferred_copies.pending_bytes() if self.deferred_copies is not None else 0
        return UploadReport("staged" if self.staged else "mapped", self.reason, self.queue_kind,
                            resident_host_bytes=pending + self.arena.resident_host_bytes(),
                            faults_fired=tuple(self.faults.fired), slots=self.plan.count,
                            slot_size=self.ring.size, sizing=self.plan.why, **self.stats)

    def stream(self) -> ir.Stream:
        """The recorded stream: every upload, and on a Runtime what the program did around them."""
        return self.site.recording.stream()

    def before(self, thread: str, op: ir.HostOp) -> ir.HostOp:
        """The runtime's hook (runtime.py): pending deferred copies join a submit (deferred.py)."""
        with self._lock:
            if not isinstance(op, ir.Submit) or self.lost or not self.deferred_copies.pending():
                return op
            return self.deferred_copies.before_submit(op)

    def close(self) -> None:
        """Wait for the uploader's work, free what it created; idempotent. Not
        recorded: teardown, like Runtime.close."""
        if self.closed:
            return
        self.closed = True
        self.copies.close()
        self._idle()
        if self.deferred_copies is not None:
            self.deferred_copies.close()
        self.arena.close()
        if self.ring is not None:
            self.ring.close()
        for _, array in self.arrays:
            self.site.allocator.destroy(array)
        self.arrays.clear()
        runtime = self.site.runtime
        if runtime is None:
            self.site.allocator.release()
        elif runtime.uploader is self:
            runtime.uploader = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- one call ---------------------------------------------------------------------

    @contextmanager
    def _call(self):
        """One API call: under the uploader's lock, on a live device; a DeviceLost marks it lost."""
        with self._lock:
            if self.lost:
                raise DeviceLost("a fence wait of the uploader failed earlier: the device counts as lost")
            if self.closed:
                raise ValueError("the uploader is closed")
            try:
                yield
            except DeviceLost:
                self.lost = True
                raise

    def _idle(self) -> None:
        """The device is done with everything the uploader submitted. A Runtime's whole device
        (the program's submits carry deferred copies); an engine's, only the uploader's fences:
        vkDeviceWaitIdle would need every queue of the engine externally synchronized."""
        vk, handle = self.vk, self.site.device.handle
        try:
            if self.site.runtime is not None:
                vk.vkDeviceWaitIdle(handle)  # vkDeviceWaitIdle
            elif self.ring is not None:
                fences = [s.fence for s in self.ring.slots if s.pending]
                if fences:
                    vk.vkWaitForFences(handle, len(fences), fences, vk.VK_TRUE, 10**10)  # vkWaitForFences
        except vk.VkError:
            pass  # a lost device: its work counts as complete, destroying is allowed

    def _signal(self, signal: tuple[str, int] | None) -> Signal | None:
        """The hand-off's signal: `signal` = (a timeline semaphore of the runtime, a value), checked."""
        if signal is None:
            return None
        semaphores = self.site.runtime.semaphores if self.site.runtime is not None else {}
        if not (isinstance(signal, tuple) and len(signal) == 2 and isinstance(signal[1], int)):
            raise UsageError("signal", f"expected (timeline semaphore id, value), got {signal!r}")
        semaphore, value = signal
        if semaphores.get(semaphore, (None, None))[1] != "timeline":
            timelines = sorted(k for k, (_, kind) in semaphores.items() if kind == "timeline")
            raise UsageError("signal", f"{semaphore!r} is no timeline semaphore of the runtime (its timeline "
                                       f"semaphores: {', '.join(timelines) or 'none'}; an engine's device: none)")
        return Signal(semaphore, semaphores[semaphore][0], value)

    def _transfer(self, items: list, group: bool, signal: tuple[str, int] | None = None) -> None:
        handoff = self._signal(signal)
        with self._call():
            try:
                # The bytes staged through the slots (not those of staging arrays), counted down by the loops below.
                self.ring.begin(sum(as_bytes(data).size for _, _, data in items
                                    if self._array_of(as_bytes(data)) is None) if self.staged else 0)
                for i, (dst, offset, data) in enumerate(items):
                    if group and i == 1 and self.faults.hit("commit"):
                        raise UploadFailed("commit", "injected after the first tensor", injected=True)
                    raw = as_bytes(data)
                    buf = self.arena.destination(dst, offset + raw.size)
                    array = self._array_of(raw)
                    if self.staged and array is not None:
                        self._copy_array(buf, offset, *array, raw.size)
                    elif self.staged:
                        self._stage(buf, offset, raw, data)
                    else:
                        self._write_mapped(buf, offset, raw.size, lambda view, raw=raw: self.copies.copy(view, raw))
                self._submit_open(handoff)
            except UploadFailed as error:
                self._fail(error, [dst for dst, _, _ in items])
                raise
            self.ring.wait_all("staging array read", reading_arrays=True)

    def _fail(self, error: UploadFailed, names: list[str]) -> None:
        """A failed upload: drop the open slot, wait what is in flight (it may copy
        into the destinations), release them. The next upload starts clean."""
        self.arena.unfill(self.ring.drop_open())
        self.ring.wait_all()
        error.released.extend(self.arena.release(names))

    def _submit_open(self, signal: Signal | None = None) -> None:
        self.ring.submit(signal)

    def _wait_fence(self, fence, fence_id: str, what: str) -> None:
        wait_fence(self.vk, self.site.device.handle, fence, fence_id, what, self.faults, self.site.recording)

    # ---- mapped mode -----------------------------------------------------------

    def _write_mapped(self, buf: DeviceBuffer, offset: int, size: int, put) -> None:
        """put(view) writes the `size` bytes at `offset` of `buf` through the map; recorded, and
        flushed where the memory is not coherent."""
        if self.arena.fresh(buf.block):
            self._fill_now(buf.block)
        put(np.frombuffer(buf.view(offset, size), np.uint8))
        recording = self.site.recording
        recording.op({"op": "host_write", "buffer": buf.id, "offset": offset, "size": size})
        if not self.arena.coherent(buf):
            self.site.allocator.flush(buf, offset, size, invalidate=False)
            recording.op({"op": "flush", "buffer": buf.id, "offset": offset, "size": size})
        self.stats["bytes_staged"] += size

    def _fill_now(self, block) -> None:
        """Zero-fill a fresh block in a submit of its own and wait for it: host writes
        (mapped) or another queue's copies (deferred) follow it. The host's writes over
        the fill need it made available to the host domain (memory model,
        "Location-Ordered"): a fence wait alone does not."""
        self.ring.open(stage_fault=False)
        self._record_fill(block, for_host=True)
        self.ring.submit()
        self.ring.wait_all()

    def _record_fill(self, block, for_host: bool) -> None:
        block_id, buffer = self.arena.vk_buffer_of(block)
        self.ring.record_fill(block, block_id, buffer, for_host)
        self.arena.filled(block)
        self.stats["blocks_zero_filled"] += 1

    # ---- staged mode -------------------------------------------------------------

    def _slot_for(self, buf: DeviceBuffer):
        """The open slot, with the zero-fill of buf's fresh block first."""
        slot = self.ring.open()
        if self.arena.fresh(buf.block):
            self._record_fill(buf.block, for_host=False)
        return slot

    def _stage(self, buf: DeviceBuffer, offset: int, raw: np.ndarray, source) -> None:
        """Stream `raw` through the slots: queue its host copy into the open slot, record the
        copy, submit the sealed slots whose turn came, seal this one when full."""
        ring, pos = self.ring, 0
        while pos < raw.size:
            slot = self._slot_for(buf)
            take = min(raw.size - pos, ring.room())
            start = slot.take(take)
            slot.writes.append(self.copies.copy_async(ring.staging_bytes[start:start + take], raw[pos:pos + take]))
            ring.record_copy(ring.staging, start, buf, offset + pos, take)
            slot.keep.append(source)
            ring.submit_sealed()
            pos += take
            ring.left -= take
            if ring.room() <= 0:
                ring.seal()

    def _stage_file(self, buf: DeviceBuffer, offset: int, source: FileSource, file_offset: int, size: int) -> None:
        """Stream `size` bytes of `source` through the slots: each read is queued into the open
        slot (a window aligned for O_DIRECT, the copy starting at the wanted byte) and its copy
        recorded; submit the sealed slots whose turn came, seal this one when full."""
        ring, pos = self.ring, 0
        while pos < size:
            slot = self._slot_for(buf)
            align = source.align
            pad = -(ring.staging_bytes.ctypes.data + slot.base + slot.used) % align
            skew = (file_offset + pos) % align
            window = min(round_up(skew + size - pos, align), (ring.room() - pad) // align * align)
            take = min(size - pos, window - skew)
            if take <= 0:  # no aligned room left in this slot
                ring.seal()
                continue
            start = slot.take(pad + window) + pad
            slot.writes.append(self._read(source, file_offset + pos - skew, ring.staging_bytes[start:start + window],
                                          skew + take))
            ring.record_copy(ring.staging, start + skew, buf, offset + pos, take, "read from a file")
            ring.submit_sealed()
            pos += take
            ring.left -= take
            if ring.room() <= 0:
                ring.seal()

    def _read(self, source: FileSource, file_offset: int, out: np.ndarray, need: int):
        """Queue a read into `out` (the `read` fault point); a function that waits for it and
        raises UploadFailed unless `need` bytes came."""
        if self.faults.hit("read"):
            raise UploadFailed("read", "injected: EIO", injected=True)
        wait = self.copies.read_async(source, file_offset, out)

        def done() -> None:
            try:
                got = wait()
            except OSError as error:
                raise UploadFailed("read", f"{source.path}: {error.strerror}") from None
            if got < need:
                raise UploadFailed("read", f"{source.path} ends at byte {file_offset + got}, "
                                           f"{need - got} bytes short")
        return done

    def _array_of(self, raw: np.ndarray) -> tuple[DeviceBuffer, int] | None:
        """The staging array `raw` lies in, and where in it; None for any other memory."""
        address = raw.ctypes.data
        for base, buf in self.arrays:
            if base <= address and address + raw.size <= base + buf.size:
                return buf, address - base
        return None

    def _copy_array(self, buf: DeviceBuffer, offset: int, array: DeviceBuffer, at: int, size: int) -> None:
        """One copy from a staging array, in the open slot's command buffer (its fence, waited
        before upload() returns, tells the caller it may refill the array)."""
        slot = self._slot_for(buf)
        self.ring.record_copy(array, at, buf, offset, size, "the caller's bytes, in a staging array")
        slot.reads_arrays = True


def as_bytes(data) -> np.ndarray:
    """The bytes of a numpy array (any dtype, C order) or a bytes-like object, uncopied where possible."""
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(data).cast("B"), np.uint8)
