"""Staged uploads on Lavapipe (issue 6): identical digests in every placement,
the recorded stream checked, and its two load-bearing synchronizations."""

from __future__ import annotations

import gc
import hashlib
import weakref

import numpy as np
import pytest

from vkverify.check import check
from vkverify.model import from_dict, to_dict

runtime = pytest.importorskip("vkverify.runtime")
uploads = pytest.importorskip("vkverify.runtime.uploads")

BIG = 100 << 20
SIZES = {"1B": 1, "64KiB-1": (64 << 10) - 1, "16MiB+1": (16 << 20) + 1, "100MiB": BIG}
# name -> (environment, Uploader keywords)
CONFIGS = {
    "mapped": ({"VKVERIFY_STAGED": "0"}, {}),
    "staged": ({"VKVERIFY_STAGED": "1"}, {}),
    "cap246": ({"VKVERIFY_HOST_VISIBLE_CAP_MB": "246"}, {}),
    "slot64k": ({"VKVERIFY_STAGED": "1"}, {"slots": 1, "slot_size": 64 << 10}),
    "cached-slots": ({"VKVERIFY_STAGED": "1"}, {"staging": "host_cached"}),  # flushed before each submit
}



@pytest.fixture(scope="module")
def source() -> np.ndarray:
    return np.random.default_rng(6).integers(0, 256, BIG, dtype=np.uint8)


@pytest.fixture
def env(monkeypatch):
    for name in ("VKVERIFY_STAGED", "VKVERIFY_HOST_VISIBLE_CAP_MB", "VKVERIFY_FAULT"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _digests(rt, sizes: dict) -> dict:
    rt.device_idle()
    return {name: hashlib.sha256(rt.read_back(name)[:n]).hexdigest() for name, n in sizes.items()}


@pytest.mark.parametrize("config", CONFIGS)
def test_digests_identical(device_name, source, env, config):
    """1 byte, 64 KiB-1, 16 MiB+1 and 100 MiB land byte for byte in every
    configuration (about 1-3 s each on Lavapipe)."""
    variables, keywords = CONFIGS[config]
    for name, value in variables.items():
        env.setenv(name, value)
    with runtime.Runtime() as rt, uploads.Uploader(rt, **keywords) as up:
        for name, n in SIZES.items():
            up.upload(name, 0, source[:n])
        up.finish()
        report = up.report()
        digests = _digests(rt, SIZES)
        stream = up.stream()
    assert report.mode == ("mapped" if config == "mapped" else "staged"), report.reason
    if config == "cap246":
        assert "capped" in report.reason and "VKVERIFY_STAGED" not in report.reason
    assert digests == {name: hashlib.sha256(source[:n]).hexdigest() for name, n in SIZES.items()}
    assert report.resident_host_bytes == 0
    assert report.bytes_staged == sum(SIZES.values())
    assert check(stream) == []
    if keywords.get("staging") == "host_cached":
        # The flush after each host copy is load-bearing: without it a copy reads bytes the host has not flushed.
        unflushed = from_dict(_without(to_dict(stream), lambda op: op.get("op") == "flush"))
        assert ("raw", "upload.staging") in {(f.kind, f.buffer) for f in check(unflushed)}


def _reader(rt, dst: str, size: int) -> None:
    """A copy of the last bytes of `dst`, submitted on the uploader's queue before finish():
    only the landing barrier orders it after the slots that are still in flight."""
    rt.create_buffer("Tail", 4096, "host_coherent")
    rt.command_buffer("reader").cmd_copy_buffer(dst, "Tail", [(size - 4096, 0, 4096)])
    rt.submit("q0", ["reader"])


def _without(doc: dict, drop) -> dict:
    doc["threads"] = {t: [op for op in ops if not drop(op)] for t, ops in doc["threads"].items()}
    doc["command_buffers"] = {cb: [c for c in cmds if not drop(c)] for cb, cmds in doc["command_buffers"].items()}
    return doc


def test_big_staged_upload(device_name, source, env):
    env.setenv("VKVERIFY_STAGED", "1")
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=16 << 20) as up:  # 2 slots of 16 MiB
        up.upload("Big", 0, source)
        _reader(rt, "Big", BIG)
        up.finish()
        report = up.report()
        digests = _digests(rt, {"Big": BIG})
        stream = up.stream()
    assert digests["Big"] == hashlib.sha256(source).hexdigest()
    assert (report.submits, report.copies, report.blocks_zero_filled, report.resident_host_bytes) == (9, 9, 1, 0)
    # A first slot of 8 MiB (the first copy waits for less host writing), full 16 MiB slots while two slots' worth
    # is left, then the tail halves (4 MiB at least): the last copy, which no host write overlaps, is 3 MiB, not 4.
    sizes = [c.regions[0].size >> 20 for cb in stream.command_buffers for c in cb.commands
             if type(c).__name__ == "Copy" and c.dst == "Big"]
    assert sizes == [8] + [16] * 4 + [14, 7, 4, 3], sizes
    _assert_load_bearing(stream)


def _assert_load_bearing(stream) -> None:
    """The stream checks; the fence wait before a slot is refilled is load-bearing (without it, a WAR
    on the staging buffer), and so is the landing barrier (the reader reads bytes of a copy nothing
    made visible)."""
    assert check(stream) == []
    no_wait = from_dict(_without(to_dict(stream), lambda op: op.get("label") == "slot reuse wait"))
    assert ("war", "upload.staging") in {(f.kind, f.buffer) for f in check(no_wait)}
    no_landing = from_dict(_without(to_dict(stream), lambda c: c.get("label") == "landing barrier"))
    raws = [(f.buffer, f.second) for f in check(no_landing) if f.kind == "raw"]
    assert raws and all(buffer == "Big" and second == "reader[0]" for buffer, second in raws), raws


def test_staging_array_is_copied_without_a_host_copy(device_name, source, env):
    """A source filled in place in a staging array reaches the device without passing
    through the slots; refilling the array after upload() returns is ordered by the
    fence upload() waited, and without that wait the refill is a WAR on the array."""
    env.setenv("VKVERIFY_STAGED", "1")
    n = (16 << 20) + 1
    with runtime.Runtime() as rt, uploads.Uploader(rt) as up:
        array = up.staging_array(n)
        array[:] = source[:n]
        up.upload("A", 0, array)
        array[:] = source[-n:]  # refilled once upload() has returned
        up.commit([("B", 0, array[1:]), ("C", 0, array[:4096])])  # slices of it
        up.finish()
        report = up.report()
        digests = _digests(rt, {"A": n, "B": n - 1, "C": 4096})
        stream = up.stream()
    assert digests == {"A": _sha(source[:n]), "B": _sha(source[-n + 1:]), "C": _sha(source[-n:][:4096])}
    assert report.bytes_staged == 2 * n + 4095
    written = {op["buffer"] for op in to_dict(stream)["threads"]["main"] if op["op"] == "host_write"}
    assert written == {"upload.array0"}  # nothing went through upload.staging
    assert check(stream) == []
    unwaited = from_dict(_without(to_dict(stream), lambda op: op.get("label") == "staging array read"))
    assert ("war", "upload.array0") in {(f.kind, f.buffer) for f in check(unwaited)}


def _sha(data: np.ndarray) -> str:
    return hashlib.sha256(data).hexdigest()


def test_sources_kept_alive_until_their_fence(device_name, env):
    env.setenv("VKVERIFY_STAGED", "1")
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=64 << 10) as up:
        data = np.arange(1 << 15, dtype=np.uint32)  # 128 KiB: both slots
        alive = weakref.ref(data)
        up.upload("A", 0, data)
        del data
        gc.collect()
        assert alive() is not None  # the last slot's fence has not been waited
        up.finish()
        gc.collect()
        assert alive() is None


def test_deferred_copy_at_the_head_of_its_reader(device_name, env):
    env.setenv("VKVERIFY_STAGED", "1")
    data = np.arange(1024, dtype=np.uint32)
    with runtime.Runtime() as rt, uploads.Uploader(rt) as up:
        up.deferred("W", 0, data)
        assert up.report().resident_host_bytes == data.nbytes
        rt.create_buffer("Out", data.nbytes, "host_coherent")
        rt.command_buffer("use").cmd_copy_buffer("W", "Out")
        rt.submit("q0", ["use"])
        up.finish()
        report = up.report()
        out = rt.read_back("Out")
        stream = up.stream()
    assert out == data.tobytes()
    assert report.resident_host_bytes == 0
    cmds = stream.index.command_buffers["use"].commands
    assert (cmds[0].src, cmds[0].dst, cmds[1].label) == ("upload.deferred0", "W", "landing barrier")
    assert check(stream) == []


def test_placement_rule():
    heaps = [{"size": 24 << 30, "device_local": True}, {"size": 64 << 30, "device_local": False}]
    bar = [{"heap": 0, "flags": ["DEVICE_LOCAL"]}, {"heap": 1, "flags": ["HOST_VISIBLE", "HOST_COHERENT"]}]
    assert uploads.staged(heaps, bar, {})[0]  # no device-local host-visible type
    full = bar + [{"heap": 0, "flags": ["DEVICE_LOCAL", "HOST_VISIBLE", "HOST_COHERENT"]}]
    assert not uploads.staged(heaps, full, {})[0]
    assert uploads.staged(heaps, full, {"VKVERIFY_HOST_VISIBLE_CAP_MB": "256"})[0]
    assert not uploads.staged(heaps, bar, {"VKVERIFY_STAGED": "0"})[0]
    assert uploads.staged(heaps, full, {"VKVERIFY_STAGED": "1"})[0]


def test_queue_choice_on_one_queue_device(device_name):
    """Lavapipe has one queue: uploads share the main queue and its lock."""
    request = runtime.QueueRequest(uploads.UPLOAD_QUEUE, group=1, compute=False)
    with runtime.Runtime({"q0": runtime.QueueRequest("q0"), "upload": request}) as rt, uploads.Uploader(rt) as up:
        families = rt.vk.vkGetPhysicalDeviceQueueFamilyProperties(rt.device.physical)
        if sum(f.queueCount for f in families) > 1:
            pytest.skip(f"{rt.device.name} has more than one queue")
        assert (up.queue_id, up.queue_kind) == ("q0", "main")
        assert up.queue_lock is rt.device.queues["q0"][2]


# Paths other than a numpy array, each at every size: name -> (environment, how the bytes go in)
PATHS = {
    "file": ({"VKVERIFY_STAGED": "1"}, {"direct": False}),
    "file-direct": ({"VKVERIFY_STAGED": "1"}, {"direct": True}),  # O_DIRECT where the file system takes it
    "file-mapped": ({"VKVERIFY_STAGED": "0"}, {"direct": True}),
    "in-place": ({"VKVERIFY_STAGED": "1"}, None),
}
SKEW = 4097  # the file holds SKEW bytes before the source: reads start off any block boundary


@pytest.fixture(scope="module")
def source_file(source, tmp_path_factory):
    path = tmp_path_factory.mktemp("uploads") / "weights.bin"
    with open(path, "wb") as f:
        f.write(bytes(SKEW))
        f.write(source.tobytes())
    return path


def _upload_by_path(up, path_kind, name, n, source, source_file) -> None:
    if path_kind == "in-place":
        array = up.staging_array(n)
        array[:] = source[:n]
        up.upload(name, 0, array)
    else:
        up.upload_file(name, 0, source_file, SKEW, n, **PATHS[path_kind][1])


@pytest.mark.parametrize("path_kind", PATHS)
def test_digests_identical_by_path(device_name, source, source_file, env, path_kind):
    """The same four sizes from a file (buffered, O_DIRECT, through the map) and from a
    staging array filled in place land byte for byte as from a numpy array."""
    for name, value in PATHS[path_kind][0].items():
        env.setenv(name, value)
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=16 << 20) as up:
        for name, n in SIZES.items():
            _upload_by_path(up, path_kind, name, n, source, source_file)
        up.finish()
        report = up.report()
        digests = _digests(rt, SIZES)
        stream = up.stream()
    assert digests == {name: hashlib.sha256(source[:n]).hexdigest() for name, n in SIZES.items()}
    assert (report.resident_host_bytes, report.bytes_staged) == (0, sum(SIZES.values()))
    assert check(stream) == []
    if path_kind.startswith("file"):  # no array in between: the host wrote only slots or the map
        written = {op["buffer"] for op in to_dict(stream)["threads"]["main"] if op["op"] == "host_write"}
        assert written == ({"upload.staging"} if report.mode == "staged" else set(SIZES))


def test_big_upload_from_a_file(device_name, source, source_file, env):
    """100 MiB from a file through two 16 MiB slots: the stream checks, and without the slot
    reuse wait it is a WAR on the staging buffer, without the landing barrier a RAW."""
    env.setenv("VKVERIFY_STAGED", "1")
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=16 << 20) as up:
        up.upload_file("Big", 0, source_file, SKEW, BIG)
        _reader(rt, "Big", BIG)
        up.finish()
        digests = _digests(rt, {"Big": BIG})
        stream = up.stream()
    assert digests["Big"] == hashlib.sha256(source).hexdigest()
    _assert_load_bearing(stream)


def test_measured_slot_sizing_is_reported(device_name, env):
    """With neither slots nor slot_size the ring is sized by measurement, within the budget."""
    env.setenv("VKVERIFY_STAGED", "1")
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_budget=64 << 20) as up:
        report = up.report()
    assert 2 <= report.slots and report.slots * report.slot_size <= 64 << 20
    assert "submit+wait" in report.sizing and f"{report.slots} x " in report.sizing
    with runtime.Runtime() as rt, uploads.Uploader(rt, slots=3) as up:
        assert (up.report().slots, up.report().slot_size, up.report().sizing) == (3, 16 << 20, "3 x 16 MiB: given")
