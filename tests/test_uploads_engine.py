"""The uploader on a device an engine owns (issue 18): the device is created with the
`vulkan` package directly (tests/_lavapipe.py, not Runtime), the uploader is built on its
handles and the engine's submit lock, and the engine's own pipeline reads what landed."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest

from vkverify.check import check
from vkverify.shaders import load_spirv

uploads = pytest.importorskip("vkverify.runtime.uploads")

N = 100_000  # float32s: two 64 KiB slots turn over several times


@pytest.fixture
def engine(compute_device):
    return compute_device


@pytest.mark.parametrize("staged", ["1", "0"])
def test_engine_device_upload_then_its_own_dispatch(engine, tmp_path, monkeypatch, staged):
    monkeypatch.setenv("VKVERIFY_STAGED", staged)
    monkeypatch.delenv("VKVERIFY_FAULT", raising=False)
    rng = np.random.default_rng(18)
    a, b = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    path = tmp_path / "b.bin"
    b.tofile(path)
    lock = threading.Lock()
    handles = uploads.EngineDevice(engine.physical, engine.device, engine.family, engine.queue, lock)
    out, memory = engine._buffer(bytes(4 * N))
    try:
        with uploads.Uploader(handles, slot_size=64 << 10) as up:
            assert up.queue_lock is lock
            up.upload("A", 0, a)
            up.upload_file("B", 0, path, 0, b.nbytes)
            up.finish()
            bound = [(up.destinations["A"].handle, a.nbytes), (up.destinations["B"].handle, b.nbytes), (out, 4 * N)]
            engine.dispatch(load_spirv("add"), bound, struct.pack("<I", N), (64, 1, 1), submit_lock=lock)
            report, stream = up.report(), up.stream()
        c = engine.read(memory, 4 * N, np.float32)
    finally:
        engine.vk.vkDestroyBuffer(engine.device, out, None)
        engine.vk.vkFreeMemory(engine.device, memory, None)
    np.testing.assert_array_equal(c, a + b)
    assert (report.mode, report.queue, report.resident_host_bytes) == ("staged" if staged == "1" else "mapped",
                                                                       "engine", 0)
    # Staged: a submit per 64 KiB slot; mapped: the one zero-fill of the block both destinations share.
    assert report.submits >= 7 if staged == "1" else report.submits == 1
    assert check(stream) == []
    assert {b.id for b in stream.buffers} >= {"A", "B"}


def test_deferred_needs_a_runtime(engine):
    handles = uploads.EngineDevice(engine.physical, engine.device, engine.family, engine.queue)
    with uploads.Uploader(handles, slots=2) as up, pytest.raises(ValueError, match="Runtime"):
        up.deferred("W", 0, np.zeros(4, np.uint8))
