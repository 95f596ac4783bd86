"""Uploader faults on Lavapipe (issue 6): every VKVERIFY_FAULT point fires, the
program goes on with the documented outcome, and the recorded stream still checks."""

from __future__ import annotations

import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

from tests.conftest import ROOT
from vkverify.check import check

runtime = pytest.importorskip("vkverify.runtime")
uploads = pytest.importorskip("vkverify.runtime.uploads")

# The hit that falls inside upload B of the scenario: A takes hits block 1, stage 1-2,
# record 1-2, submit 1-2; B needs a second block, waits slot 0's fence, and fails
# after its first chunk is in flight (stage, record, submit 4).
FAULTS = {"stage": 4, "block": 2, "record": 4, "submit": 4, "wait": 1, "commit": 1}
SIZE = 100_000  # two 64 KiB slots; two destinations do not fit one 128 KiB block


def scenario(point: str) -> dict:
    """Upload A, then B (a group B, B2 for `commit`) with the fault set on it, then C."""
    os.environ.update(VKVERIFY_STAGED="1", VKVERIFY_FAULT=f"{point}:{FAULTS[point]}")
    data = [np.random.default_rng(i).integers(0, 256, SIZE, dtype=np.uint8) for i in range(3)]
    outcome: dict = {"errors": []}
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=64 << 10, block_size=128 << 10) as up:
        up.upload("A", 0, data[0])
        expected_a = data[0].tobytes()
        kept = weakref.ref(data.pop(0))  # only the uploader holds A's source now
        for call in (lambda: up.commit([("B", 0, data[0]), ("B2", 0, data[0])]) if point == "commit"
                     else up.upload("B", 0, data[0]),
                     lambda: up.upload("C", 0, data[1]), up.finish):
            try:
                call()
            except (runtime.UploadFailed, runtime.DeviceLost) as error:
                outcome["errors"].append(error)
        outcome["source_kept"] = kept() is not None
        outcome["resident"] = sorted(n for n, b in up.destinations.items() if b.handle is not None)
        outcome["report"] = up.report()
        if not up.lost:
            rt.device_idle()
            outcome["intact"] = [rt.read_back("A") == expected_a, rt.read_back("C") == data[1].tobytes()]
        outcome["findings"] = check(up.stream())
    return outcome



@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("VKVERIFY_STAGED", "VKVERIFY_HOST_VISIBLE_CAP_MB", "VKVERIFY_FAULT"):
        monkeypatch.setenv(name, "")


@pytest.mark.parametrize("point", [p for p in uploads.FAULT_POINTS if p not in ("wait", "read")])
def test_failed_upload_releases_its_destinations(device_name, point):
    out = scenario(point)
    (error,) = out["errors"]
    assert isinstance(error, runtime.UploadFailed) and error.injected and error.point == point
    assert out["report"].faults_fired == (f"{point}:{FAULTS[point]}",)
    # A failed block never became B; a failed commit stops before B2 and releases B.
    assert error.released == ([] if point == "block" else ["B"])
    assert out["resident"] == ["A", "C"]  # one destination (the whole group) fewer; the next upload ran clean
    assert out["intact"] == [True, True]
    assert out["report"].resident_host_bytes == 0
    assert out["findings"] == []


@pytest.mark.parametrize("point", ["stage", "record", "submit"])
def test_failed_upload_from_a_staging_array(device_name, point):
    """A fault in an upload from a staging array fails that upload only: its destination
    is released, the array is refilled and uploaded again, and the stream still checks."""
    os.environ.update(VKVERIFY_STAGED="1", VKVERIFY_FAULT=f"{point}:1")
    data = np.random.default_rng(8).integers(0, 256, 2 * SIZE, dtype=np.uint8)
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=64 << 10) as up:
        array = up.staging_array(SIZE)
        array[:] = data[:SIZE]
        with pytest.raises(runtime.UploadFailed) as failed:
            up.upload("A", 0, array)
        array[:] = data[SIZE:]
        up.upload("B", 0, array)
        up.finish()
        rt.device_idle()
        assert (failed.value.point, failed.value.released) == (point, ["A"])
        assert rt.read_back("B") == data[SIZE:].tobytes()
        assert up.report().faults_fired == (f"{point}:1",)
        assert check(up.stream()) == []


def test_failed_wait_loses_the_device(device_name):
    out = scenario("wait")
    assert [type(e) for e in out["errors"]] == [runtime.DeviceLost] * 3  # B, then every later call
    assert out["report"].faults_fired == ("wait:1",)
    # Nothing the device may still touch was freed: A's source array, B's destination.
    assert out["source_kept"] and out["resident"] == ["A", "B"]
    assert out["findings"] == []


def test_every_point_under_faulthandler(device_name):
    code = ("import faulthandler, sys\n"
            "assert faulthandler.is_enabled()\n"
            "from tests.test_uploads_faults import FAULTS, scenario\n"
            "for point in FAULTS:\n"
            "    out = scenario(point)\n"
            "    assert out['findings'] == [] and out['report'].faults_fired, point\n"
            "    print(point, [type(e).__name__ for e in out['errors']], out['resident'])\n")
    run = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "Fatal Python error" not in run.stderr
    assert len(run.stdout.splitlines()) == len(FAULTS), run.stdout


def test_failed_file_read_fails_that_upload_only(device_name, tmp_path):
    """VKVERIFY_FAULT=read:2 fails the second slot's read of B (the first is in flight): B is
    released, nothing of it stays resident, and the next upload from the same file runs clean."""
    os.environ.update(VKVERIFY_STAGED="1", VKVERIFY_FAULT="read:2")
    data = np.random.default_rng(9).integers(0, 256, 3 * SIZE, dtype=np.uint8)
    path = tmp_path / "weights.bin"
    data.tofile(path)
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=64 << 10) as up:
        up.upload("A", 0, data[:SIZE])
        with pytest.raises(runtime.UploadFailed) as failed:
            up.upload_file("B", 0, path, SIZE, SIZE)
        up.upload_file("C", 0, path, 2 * SIZE, SIZE)
        up.finish()
        rt.device_idle()
        resident = sorted(n for n, b in up.destinations.items() if b.handle is not None)
        intact = [rt.read_back("A") == data[:SIZE].tobytes(), rt.read_back("C") == data[2 * SIZE:].tobytes()]
        report, findings = up.report(), check(up.stream())
    assert (failed.value.point, failed.value.injected, failed.value.released) == ("read", True, ["B"])
    assert report.faults_fired == ("read:2",)
    assert resident == ["A", "C"] and intact == [True, True]
    assert report.resident_host_bytes == 0 and findings == []


def test_short_file_fails_the_read(device_name, tmp_path):
    os.environ.update(VKVERIFY_STAGED="1")
    path = tmp_path / "short.bin"
    path.write_bytes(bytes(1000))
    with runtime.Runtime() as rt, uploads.Uploader(rt, slot_size=64 << 10) as up:
        with pytest.raises(runtime.UploadFailed) as failed:
            up.upload_file("A", 0, path, 0, 2000)
        with pytest.raises(runtime.UploadFailed) as missing:
            up.upload_file("B", 0, tmp_path / "absent.bin", 0, 10)
        up.upload_file("C", 0, path, 0, 1000)
        up.finish()
        assert check(up.stream()) == []
    assert (failed.value.point, failed.value.injected, failed.value.released) == ("read", False, ["A"])
    assert "1000" in str(failed.value) and (missing.value.point, missing.value.released) == ("read", [])
