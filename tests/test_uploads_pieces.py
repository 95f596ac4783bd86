"""The uploader's pieces alone (runtime/uploads/): slot sizing, faults, host copies and
file reads, the recording, and the arena with the slot ring on a device without the Uploader."""

from __future__ import annotations

import itertools
import mmap
import threading
import time

import numpy as np
import pytest

from vkverify.check import check
from vkverify.runtime.uploads import Faults, SlotPlan, plan_slots
from vkverify.runtime.uploads.hostio import DIRECT_ALIGN, FileSource, HostCopies, default_threads
from vkverify.runtime.uploads.recording import UploadRecording

MIB = 1 << 20


@pytest.mark.parametrize("submit_us, gbps", [(5, 10), (45, 50), (74, 39.5), (500, 50), (2000, 50)])
def test_slot_plan_keeps_submits_under_five_percent(submit_us, gbps):
    plan = plan_slots(submit_us * 1e-6, gbps * 1e9, budget=256 * MIB, floor=4 * MIB)
    assert plan.count * plan.size <= 256 * MIB and 2 <= plan.count <= 4
    assert plan.size & (plan.size - 1) == 0 and plan.size >= 4 * MIB
    capped = plan.size == 64 * MIB and plan.count == 4 and "capped" in plan.why
    assert capped or submit_us * 1e-6 <= 0.05 * plan.size / (gbps * 1e9), plan
    assert plan.why.startswith(f"{plan.count} x {plan.size // MIB} MiB: one submit+wait {submit_us} us")


@pytest.mark.parametrize("submit_us, floor_mib, budget_mib, plan", [
    (96, 56, 256, (4, 64)),  # the H200's slow probe: four slots in flight, not two of 128 MiB
    (41, 56, 256, (4, 56)),  # the floor (14 threads x 4 MiB) when the submit is cheap
    (96, 56, 64, (2, 32)),  # a budget below four floors: two slots
    (10, 4, 16, (4, 4)),
])
def test_slot_plan_keeps_four_slots_in_flight(submit_us, floor_mib, budget_mib, plan):
    got = plan_slots(submit_us * 1e-6, 39.5e9, budget=budget_mib * MIB, floor=floor_mib * MIB)
    assert (got.count, got.size // MIB) == plan and got.count * got.size <= budget_mib * MIB


def test_slot_plan_given():
    assert SlotPlan.given(None, 64 << 10) == SlotPlan(2, 64 << 10, "2 x 0.0625 MiB: given")
    assert SlotPlan.given(3, None).size == 16 * MIB


def test_faults():
    faults = Faults("read:2")
    assert [faults.hit("read") for _ in range(3)] == [False, True, False] and faults.fired == ["read:2"]
    for bad in ("nowhere", "read:x"):
        with pytest.raises(ValueError, match="VKVERIFY_FAULT"):
            Faults(bad)


def test_host_copies_and_file_reads(tmp_path):
    data = np.random.default_rng(3).integers(0, 256, 9 * MIB + 5, dtype=np.uint8)
    path = tmp_path / "f.bin"
    data.tofile(path)
    copies = HostCopies(3)
    try:
        spans = copies.pieces(data.size)
        assert spans[0][0] == 0 and spans[-1][1] == data.size
        assert all(a % DIRECT_ALIGN == 0 and b == c for (a, b), (c, _) in itertools.pairwise(spans))
        out = np.zeros_like(data)
        copies.copy(out, data)
        assert np.array_equal(out, data)
        # O_DIRECT reads need aligned memory, offsets and lengths (the uploader aligns its windows).
        aligned = np.frombuffer(mmap.mmap(-1, data.size + 4 * MIB), np.uint8)
        for direct in (False, True):
            with FileSource(path, direct) as source:
                start = DIRECT_ALIGN if source.direct else 7
                n = (data.size - start) // source.align * source.align - (0 if source.direct else 5)
                got = copies.read(source, start, aligned[:n])
                assert got == n and np.array_equal(aligned[:n], data[start:start + n])
                # Past the end: the bytes before the first short piece.
                assert copies.read(source, 0, aligned[:12 * MIB + DIRECT_ALIGN]) == data.size
    finally:
        copies.close()


def test_host_copies_run_on_their_threads_only():
    """The default pool has default_threads() workers, not the executor's own default (cores + 4):
    the pieces of queued slots must not run on more threads than the cores left to them."""
    copies = HostCopies()
    try:
        assert copies.threads == default_threads()
        idents = {f.result() for f in [copies.pool.submit(lambda: time.sleep(0.01) or threading.get_ident())
                                      for _ in range(4 * copies.threads + 4)]}
        assert len(idents) <= copies.threads
    finally:
        copies.close()


def test_recording_of_its_own():
    recording = UploadRecording.own("q0")
    recording.declare("buffers", {"id": "S", "size": 256, "memory": "host_coherent"})
    recording.declare("buffers", {"id": "D", "size": 256, "memory": "device_local"})
    recording.declare("fences", {"id": "F", "signaled": False})
    recording.add_command_buffer("cb", [{"cmd": "copy", "src": "S", "dst": "D",
                                         "regions": [{"src_offset": 0, "dst_offset": 0, "size": 256}]}])
    recording.op({"op": "host_write", "buffer": "S", "offset": 0, "size": 256})
    recording.op({"op": "submit", "queue": "q0", "command_buffers": ["cb"], "fence": "F"})
    assert check(recording.stream()) == []
    recording.op({"op": "host_write", "buffer": "S", "offset": 0, "size": 256})  # no wait: the copy may still read
    assert [f.kind for f in check(recording.stream())] == ["war"]


def test_arena_and_slot_ring_alone(device_name, monkeypatch):
    """Bytes through one slot into a destination, with nothing of the Uploader: the stream checks,
    and without the fill barrier the copy is a WAW on the fill."""
    from vkverify.runtime import Runtime
    from vkverify.runtime.uploads.arena import Arena
    from vkverify.runtime.uploads.slots import SlotRing

    monkeypatch.delenv("VKVERIFY_FAULT", raising=False)
    data = np.arange(1000, dtype=np.uint8)
    stats = dict.fromkeys(("bytes_staged", "copies", "submits"), 0)
    with Runtime() as rt:
        vk, recording, faults = rt.vk, UploadRecording.own("q0"), Faults(None)
        family, queue, lock = rt.device.queues["q0"]
        properties = vk.vkGetPhysicalDeviceMemoryProperties(rt.device.physical)
        arena = Arena(vk, rt.device, rt.allocator, properties, "device_local", 1 * MIB, faults, recording)
        ring = SlotRing(vk, rt.device, rt.allocator, family, queue, lock, "q0", 2, 64 << 10, "host_coherent",
                        faults, recording, stats)
        try:
            dst = arena.destination("W", data.size)
            slot = ring.open()
            block_id, buffer = arena.vk_buffer_of(dst.block)
            ring.record_fill(dst.block, block_id, buffer, for_host=False)
            start = slot.take(data.size)
            ring.staging_bytes[start:start + data.size] = data
            ring.record_copy(ring.staging, start, dst, 0, data.size)
            ring.submit()
            ring.wait_all()
        finally:
            vk.vkDeviceWaitIdle(rt.device.handle)
            arena.close()
            ring.close()
    stream = recording.stream()
    assert check(stream) == [] and stats == {"bytes_staged": 1000, "copies": 1, "submits": 1}
    from vkverify.model import from_dict, to_dict
    doc = to_dict(stream)
    doc["command_buffers"]["upload.cb0"] = [c for c in doc["command_buffers"]["upload.cb0"]
                                            if c.get("label") != "fill before copies"]
    assert "waw" in {f.kind for f in check(from_dict(doc))}


def test_a_call_ramps_its_first_slots_up_and_halves_its_tail(device_name, monkeypatch):
    """The pieces SlotRing.room cuts one call of 128 MiB into, in slots of 32 MiB: the first slot holds
    FIRST_PIECE (8 MiB), each next one twice as much up to a whole slot, full slots while two slots' worth is
    left, then halves down to TAIL_PIECE and the rest. Slots are opened, sealed and submitted as an upload does
    (no staging memory: no bytes are written)."""
    from vkverify.runtime import Runtime
    from vkverify.runtime.uploads.slots import SlotRing

    monkeypatch.delenv("VKVERIFY_FAULT", raising=False)
    stats = dict.fromkeys(("bytes_staged", "copies", "submits"), 0)
    pieces = []
    with Runtime() as rt:
        family, queue, lock = rt.device.queues["q0"]
        ring = SlotRing(rt.vk, rt.device, rt.allocator, family, queue, lock, "q0", 2, 32 * MIB, None,
                        Faults(None), UploadRecording.own("q0"), stats)
        try:
            for _ in range(2):  # a second call ramps up again
                ring.begin(128 * MIB)
                while ring.left:
                    slot = ring.open()
                    take = min(ring.left, ring.room())
                    slot.take(take)
                    pieces.append(take // MIB)
                    ring.left -= take
                    if ring.room() <= 0:
                        ring.seal()
                ring.submit()
                ring.wait_all()
        finally:
            rt.vk.vkDeviceWaitIdle(rt.device.handle)
            ring.close()
    assert pieces == [8, 16, 32, 32, 20, 10, 5, 4, 1] * 2 and stats["submits"] == 18
