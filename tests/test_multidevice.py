"""Multi-device replay on Lavapipe: logical devices on one physical device
stand in for GPUs (proxy threads bridge their timelines), the ring all-reduce
against the simulator's reference, and refusals of what cannot be shared."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from vkverify.check import check
from vkverify.model import from_dict
from vkverify.model.params import instantiate

runtime = pytest.importorskip("vkverify.runtime")
RING = ROOT / "tests" / "corpus" / "80-ring-allreduce-params.json"



def _ring(n: int):
    return from_dict(instantiate(json.loads(RING.read_text()), {"n": n}), str(RING))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_allreduce_on_logical_devices(device_name, n, monkeypatch, capfd):
    monkeypatch.setenv("VKVERIFY_PROXY", "1")
    result = runtime.replay(_ring(n), syncval=n == 2)
    assert result.reference == {}, result.reference
    recorded = result.recorded
    proxies = [t.id for t in recorded.threads if t.id.startswith("proxy_")]
    assert len(proxies) == 2 * n  # X{d} and C{d}, each waited on by one other device
    assert check(recorded) == []
    assert "VKVERIFY_PROXY=1" in recorded.description
    assert "proxy thread proxy_X0_gpu1" in capfd.readouterr().err
    errors = [m.text for m in result.messages if m.severity == "error" and not m.id_name.startswith("SYNC-HAZARD")]
    assert errors == []


def test_recorded_race_is_found(device_name):
    """The mutant without the cross-round wait: in the recorded stream, proxy
    ops included, each receive slot's reduce of round 0 still races with the
    copy of round 1 (a war or a raw: the checker's serial order decides which)."""
    doc = json.loads((ROOT / "tests" / "corpus" / "81-ring-allreduce-no-cross-round-wait.json").read_text())
    result = runtime.replay(from_dict(instantiate(doc, {"n": 2})))
    racing = {(f.buffer, frozenset((f.first, f.second))) for f in check(result.recorded) if f.racing}
    assert racing == {("R0", frozenset({"recv0_0[0]", "send1_1[0]"})), ("R1", frozenset({"recv1_0[0]", "send0_1[0]"}))}


def _two_devices(buffers: list, semaphores: list, threads: dict) -> dict:
    return {"format": "vkverify-stream/1", "name": "refused",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0"}]}, {"id": "gpu1", "queues": [{"id": "q1"}]}],
            "buffers": buffers, "semaphores": semaphores,
            "command_buffers": {"fill0": [{"cmd": "fill", "dst": "P"}], "fill1": [{"cmd": "fill", "dst": "P"}]},
            "threads": threads}


def test_refuses_device_memory_shared_by_two_devices(device_name):
    doc = _two_devices([{"id": "P", "size": 4096, "memory": "device_local", "devices": ["gpu0", "gpu1"]}], [],
                       {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["fill0"]}]})
    with pytest.raises(runtime.Unsupported, match="buffer 'P' is shared by gpu0, gpu1 but is device_local"):
        runtime.replay(from_dict(doc))


def test_refuses_timeline_signalled_on_two_devices_without_export(device_name, monkeypatch):
    monkeypatch.setenv("VKVERIFY_PROXY", "1")
    doc = _two_devices([{"id": "P", "size": 4096, "memory": "host_coherent", "devices": ["gpu0", "gpu1"]}],
                       [{"id": "T", "type": "timeline"}],
                       {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["fill0"],
                                  "signal": [{"semaphore": "T", "value": 1}]},
                                 {"op": "submit", "queue": "q1", "command_buffers": ["fill1"],
                                  "wait": [{"semaphore": "T", "value": 1}], "signal": [{"semaphore": "T", "value": 2}]},
                                 {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 2}]}]})
    with pytest.raises(runtime.Unsupported, match="timeline 'T' is signalled on gpu0 and gpu1 and cannot be shared"):
        runtime.replay(from_dict(doc))
