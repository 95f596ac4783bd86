"""Multi-device replay on Lavapipe: logical devices on one physical device
stand in for GPUs (proxy threads bridge their timelines; shared buffers are
imported host memory, or per-device copies the proxies copy through the host),
the ring all-reduce against the simulator's reference, and refusals of what
cannot be shared."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.conftest import ROOT
from vkverify.check import check
from vkverify.model import from_dict, ir
from vkverify.model.dump import to_dict
from vkverify.model.params import instantiate

runtime = pytest.importorskip("vkverify.runtime")
multidevice = pytest.importorskip("vkverify.runtime.multidevice")
sharing = pytest.importorskip("vkverify.runtime.sharing")
RING = ROOT / "tests" / "corpus" / "80-ring-allreduce-params.json"
PROXY_CORPUS = ROOT / "tests" / "corpus" / "84-proxy-thread-bridges-timelines.json"


def _ring(n: int):
    return from_dict(instantiate(json.loads(RING.read_text()), {"n": n}), str(RING))


def _share(monkeypatch, share: str) -> None:
    if share == "copy":
        monkeypatch.setenv("VKVERIFY_SHARE", "copy")
    else:  # import: the default where the driver has VK_EXT_external_memory_host
        monkeypatch.delenv("VKVERIFY_SHARE", raising=False)


@pytest.mark.parametrize("share", ["import", "copy"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_allreduce_on_logical_devices(device_name, n, share, monkeypatch, capfd):
    monkeypatch.setenv("VKVERIFY_PROXY", "1")
    _share(monkeypatch, share)
    result = runtime.replay(_ring(n), syncval=n == 2)
    assert result.reference == {}, result.reference
    recorded = result.recorded
    # X{d} and C{d}, each waited on by one other device; under copy, X{d}'s proxy copies the receive
    # slot x{d} wrote to the next device, between its wait and its signal, at every step.
    copies = 2 * (n - 1) if share == "copy" else 0
    expected = {f"proxy_X{d}_gpu{(d + 1) % n}": [("host_read", f"R{(d + 1) % n}"),
                                                 ("host_write", f"R{(d + 1) % n}")] * copies for d in range(n)}
    expected |= {f"proxy_C{d}_gpu{(d - 1) % n}": [] for d in range(n)}
    assert {t.id: [(op.op, op.buffer) for op in t.ops if isinstance(op, ir.HostAccess)]
            for t in recorded.threads if t.id.startswith("proxy_")} == expected
    assert check(recorded) == []
    assert "VKVERIFY_PROXY=1" in recorded.description
    assert ("VKVERIFY_SHARE=copy" in recorded.description) == (share == "copy")
    assert any("proxy thread proxy_X0_gpu1" in note for note in result.notes)
    assert "vkverify replay:" not in capfd.readouterr().err  # the engine prints nothing: the notes are the caller's
    errors = [m.text for m in result.messages if m.severity == "error" and not m.id_name.startswith("SYNC-HAZARD")]
    assert errors == []


def test_replay_command_prints_the_notes(device_name, capsys):
    """`vkverify replay` shows how the devices share, one stderr line a note, from the result."""
    from vkverify.cli import main

    assert main(["replay", str(PROXY_CORPUS)]) == 0
    err = capsys.readouterr().err
    assert "vkverify replay: gpu0: " in err and "vkverify replay: gpu1: " in err


def test_recorded_race_is_found(device_name):
    """The mutant without the cross-round wait: in the recorded stream, proxy
    ops included, each receive slot's reduce of round 0 still races with the
    copy of round 1 (a war or a raw: the checker's serial order decides which)."""
    doc = json.loads((ROOT / "tests" / "corpus" / "81-ring-allreduce-no-cross-round-wait.json").read_text())
    result = runtime.replay(from_dict(instantiate(doc, {"n": 2})))
    racing = {(f.buffer, frozenset((f.first, f.second))) for f in check(result.recorded) if f.racing}
    assert racing == {("R0", frozenset({"recv0_0[0]", "send1_1[0]"})), ("R1", frozenset({"recv1_0[0]", "send0_1[0]"}))}


def test_ring_allreduce_without_host_copies_differs(device_name):
    """The copies carry the data: the copy plan with its copies left out
    reduces stale receive slots, and the digests leave the reference."""
    stream = _ring(2)
    chosen = sharing.plan(stream, sharing.choose_physical(stream, None), force_proxy=True, force_copy=True)
    skipped = replace(chosen, bridges=tuple(replace(b, copies={}) for b in chosen.bridges))
    assert {"buffer D0", "buffer D1"} <= set(multidevice.replay_plan(stream, skipped).reference)


def test_recorded_copy_after_its_signal_is_found(device_name, monkeypatch):
    """The checker verifies the copies: each proxy's host_write moved after the
    signal that releases the consumer races with the consumer's use of the slot."""
    monkeypatch.setenv("VKVERIFY_SHARE", "copy")
    doc = to_dict(runtime.replay(_ring(2)).recorded)
    for ops in doc["threads"].values():
        for i in [i for i, op in enumerate(ops) if op["op"] == "host_write"]:
            ops[i], ops[i + 1] = ops[i + 1], ops[i]
    racing = {f.buffer for f in check(from_dict(doc)) if f.racing and "proxy_X" in f.first + f.second}
    assert racing == {"R0", "R1"}


def _two_devices(buffers: list, semaphores: list, threads: dict) -> dict:
    return {"format": "vkverify-stream/1", "name": "refused",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0"}]}, {"id": "gpu1", "queues": [{"id": "q1"}]}],
            "buffers": buffers, "semaphores": semaphores,
            "command_buffers": {"fill0": [{"cmd": "fill", "dst": "P"}], "fill1": [{"cmd": "fill", "dst": "P"}]},
            "threads": threads}


DEVICE_MEMORY = _two_devices(
    [{"id": "P", "size": 4096, "memory": "device_local", "devices": ["gpu0", "gpu1"]}], [],
    {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["fill0"]}]})
# P written on both devices, T signalled on both.
BOTH_WRITE = _two_devices(
    [{"id": "P", "size": 4096, "memory": "host_coherent", "devices": ["gpu0", "gpu1"]}],
    [{"id": "T", "type": "timeline"}],
    {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["fill0"], "signal": [{"semaphore": "T", "value": 1}]},
              {"op": "submit", "queue": "q1", "command_buffers": ["fill1"],
               "wait": [{"semaphore": "T", "value": 1}], "signal": [{"semaphore": "T", "value": 2}]},
              {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 2}]}]})


@pytest.mark.parametrize("doc, env, match", [
    (DEVICE_MEMORY, {}, "buffer 'P' is shared by gpu0, gpu1 but is device_local"),
    (BOTH_WRITE, {"VKVERIFY_PROXY": "1"}, "timeline 'T' is signalled on gpu0 and gpu1 and cannot be shared"),
    (BOTH_WRITE, {"VKVERIFY_SHARE": "copy"},
     r"buffer 'P' is copied through the host \(VKVERIFY_SHARE=copy\) but written on gpu0 and gpu1"),
    # The stream's own proxy thread orders gpu1's read, but no runtime proxy is there to copy P.
    (json.loads(PROXY_CORPUS.read_text()), {"VKVERIFY_SHARE": "copy"},
     "buffer 'P' is copied through the host .* used on gpu1, but no proxy thread copies gpu0's writes"),
], ids=["device-memory", "timeline-signalled-on-two-devices", "copy-written-on-two-devices", "copy-without-proxy"])
def test_refuses_what_cannot_be_shared(device_name, doc, env, match, monkeypatch):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(runtime.Unsupported, match=match):
        runtime.replay(from_dict(doc))
