"""The uploader's device-side hand-off (issue 28): `upload(..., signal=(T, v))` signals a timeline on the
uploading queue once the copies have landed, and a compute queue's submit that waits for T >= v reads the
bytes, the host waiting for nothing in between. Engine-shaped: the copies on a queue of their own
(`Uploader(rt, queue="upload")`, recorded as a separate queue even where Lavapipe gives both one VkQueue),
the consumer's dispatch on `compute`. The recorded stream is checked: clean with the wait, a RAW on the
destination without it (the wait is load-bearing), and the values the dispatch computed are the data's."""

from __future__ import annotations

import numpy as np
import pytest

from vkverify.check import check
from vkverify.model import UsageError, from_dict, to_dict

runtime = pytest.importorskip("vkverify.runtime")
uploads = pytest.importorskip("vkverify.runtime.uploads")

N = 50_000  # float32s: several 64 KiB slots per upload


@pytest.fixture
def env(monkeypatch):
    for name in ("VKVERIFY_STAGED", "VKVERIFY_HOST_VISIBLE_CAP_MB", "VKVERIFY_FAULT", "VKVERIFY_CHECK"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _engine_run(rt, up, weights: np.ndarray, rounds: int, wait: bool) -> list[np.ndarray]:
    """Each round: the weights uploaded with a hand-off at value round + 1, then a compute submit that waits
    for it (or not) and doubles them into Out, read back after its fence."""
    rt.create_semaphore("T", timeline=True)
    rt.create_buffer("Out", weights.nbytes, "host_coherent")
    rt.create_fence("f")
    cb = rt.command_buffer("use")
    cb.cmd_dispatch("add", ["W", "W", "Out"], (64, 1, 1), push=[weights.size])
    cb.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "host", "host_read")
    out = []
    for i in range(rounds):
        up.upload("W", 0, weights + i, signal=("T", i + 1))
        waits = [{"semaphore": "T", "value": i + 1, "stage": "compute_shader"}] if wait else []
        if i:
            rt.reset_fences(["f"])
        rt.submit("compute", ["use"], wait=waits, fence="f")
        rt.wait_fences(["f"])
        out.append(np.frombuffer(rt.host_read("Out"), np.float32).copy())
    return out


@pytest.mark.parametrize("staged", ["1", "0"])
def test_a_compute_queue_waits_for_the_uploads_signal(device_name, env, staged):
    env.setenv("VKVERIFY_STAGED", staged)
    weights = np.random.default_rng(28).standard_normal(N).astype(np.float32)
    with runtime.Runtime(("compute", "upload")) as rt, \
            uploads.Uploader(rt, slots=2, slot_size=64 << 10, queue="upload") as up:
        results = _engine_run(rt, up, weights, 3, wait=True)
        report, stream = up.report(), up.stream()
    for i, got in enumerate(results):
        np.testing.assert_array_equal(got, 2 * (weights + i))
    assert (report.mode, report.queue) == ("staged" if staged == "1" else "mapped", "given")
    # Each hand-off is a submit on `upload` that signals T; the consumer's submits wait on `compute`.
    ops = [op for t in stream.threads for op in t.ops]
    signalled = [s.value for op in ops if getattr(op, "queue", None) == "upload"
                 for b in op.batches for s in b.signals if s.semaphore == "T"]
    assert signalled == [1, 2, 3]
    assert check(stream) == []
    # Staged, the wait is load-bearing: without it the dispatch races with the copies into W. Mapped, the host
    # wrote W before the consumer's submit, which makes the writes visible to it (7.9): nothing to hand off.
    doc = to_dict(stream)
    for op in doc["threads"]["main"]:
        for batch in op.get("batches", ()):
            batch["wait"] = [w for w in batch["wait"] if w["semaphore"] != "T"]
    found = check(from_dict(doc))
    if staged == "0":
        assert found == []
        return
    assert {(f.kind, f.buffer, f.second.split("@")[0]) for f in found} == {("raw", "W", "use[0]")}
    assert len({f.second for f in found}) == 3 and all(f.first.startswith("upload.cb") for f in found), found


def test_the_runtime_check_passes_the_protocol_online(device_name, env):
    env.setenv("VKVERIFY_STAGED", "1")
    weights = np.arange(N, dtype=np.float32)
    with runtime.Runtime(("compute", "upload"), check=True) as rt, \
            uploads.Uploader(rt, slots=2, slot_size=64 << 10, queue="upload") as up:
        results = _engine_run(rt, up, weights, 2, wait=True)
        assert rt.findings() == []
    np.testing.assert_array_equal(results[1], 2 * (weights + 1))


def test_a_signal_that_names_no_timeline_is_refused(device_name, env):
    with runtime.Runtime(("compute", "upload")) as rt, uploads.Uploader(rt, queue="upload") as up:
        rt.create_semaphore("B")
        rt.create_semaphore("T", timeline=True)
        for signal, said in ((("B", 1), "its timeline semaphores: T"), (("X", 1), "'X' is no timeline"),
                             (("T",), "expected (timeline semaphore id, value)")):
            with pytest.raises(UsageError, match=r"signal") as raised:
                up.upload("W", 0, b"\0" * 16, signal=signal)
            assert said in str(raised.value)
    with runtime.Runtime(("compute",)) as rt, \
            pytest.raises(UsageError, match="expected one of 'compute', got 'upload'"):
        uploads.Uploader(rt, queue="upload")
