"""The runtime on Lavapipe: corpus replays, recorded streams, clean teardown,
online checking, and faults."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import CORPUS, ROOT
from vkverify.check import check
from vkverify.model import from_dict, ir, load
from vkverify.model.dump import to_dict
from vkverify.model.data import ref_hash
from vkverify.shaders import generic

runtime = pytest.importorskip("vkverify.runtime")



def _hazard_free() -> list:
    return [p for p in CORPUS if not load(p).expect]


@pytest.mark.parametrize("path", _hazard_free(), ids=lambda p: p.stem[:2])
def test_corpus_replay(device_name, path):
    stream = load(path)
    reason = runtime.replayable(stream)
    if reason is not None:
        pytest.skip(f"not replayable: {reason}")
    try:
        result = runtime.replay(stream, syncval=True)
    except runtime.Unsupported as error:  # this device lacks what the stream needs (e.g. a second queue)
        pytest.skip(f"not runnable on {device_name}: {error}")
    # The runtime's own record of what it issued is hazard-free too.
    assert check(result.recorded) == []
    # Under the validation layer: no error at all (teardown included: leaks are errors)
    # except hazards the layer reports where vkverify proves none (test_runtime_syncval).
    errors = [m.text for m in result.messages if m.severity == "error" and not m.id_name.startswith("SYNC-HAZARD")]
    assert errors == []
    if result.reference is None:
        pytest.skip(f"digests not compared: {result.reference_note}")
    assert result.reference == {}, result.reference


@pytest.mark.parametrize("stem", ["161-atomic-dispatches-two-queues", "164-atomic-total-read-after-both-queues"])
def test_atomic_bindings_replay_with_the_simulator_s_sums(device_name, stem):
    """An abstract shader's atomic binding runs as the library's atomic_add kernel beside the generic kernel
    (runtime/record.py); the device's sums equal the simulator's (semantics.atomic_addends), in whatever order
    the two queues' atomics met. Fails where replay refuses the stream, as it did before atomic_add."""
    result = runtime.replay(load(ROOT / "tests" / "corpus" / f"{stem}.json"))
    assert result.reference == {}, result.reference


def _program(rt, with_barrier: bool) -> None:
    rt.create_buffer("A", 4096, "host_coherent")
    rt.create_buffer("B", 4096)
    rt.create_buffer("Out", 4096)
    rt.create_fence("F")
    rt.declare_shader("transform", ["read", "write"])
    rt.host_write("A", np.arange(1024, dtype=np.uint32).tobytes())
    cb = rt.command_buffer("cb0")
    cb.cmd_copy_buffer("A", "B")
    if with_barrier:
        cb.cmd_pipeline_barrier2("copy", "transfer_write", "compute_shader", "shader_storage_read")
    cb.cmd_dispatch("transform", ["B", "Out"], groups=(4, 1, 1))
    rt.submit("q0", ["cb0"], fence="F")


def test_online_check_raises_before_submit(device_name, monkeypatch):
    monkeypatch.setenv("VKVERIFY_CHECK", "1")
    with runtime.Runtime(validation=True) as rt:
        with pytest.raises(runtime.HazardError) as caught:
            _program(rt, with_barrier=False)
        found = [(f.kind, f.buffer, f.first, f.second) for f in caught.value.findings]
        assert found == [("raw", "B", "cb0[0]", "cb0[1]")]
        rt.device_idle()
        # Nothing ran: no submit was recorded and the copy never reached B.
        assert [op["op"] for op in rt.threads["main"]] == ["host_write"]
        assert rt.read_back("B") == bytes(4096)
        messages = rt.instance.messages
    assert [m.text for m in messages if m.severity == "error"] == []


def test_online_check_runs_with_the_barrier(device_name, monkeypatch):
    monkeypatch.setenv("VKVERIFY_CHECK", "1")
    with runtime.Runtime(validation=True) as rt:
        _program(rt, with_barrier=True)
        rt.wait_fences(["F"])
        out = np.frombuffer(rt.read_back("Out"), np.uint32)
        stream = rt.stream()
        messages = rt.instance.messages
    # The generic kernel's contract, computed by hand in numpy.
    expected = generic([np.arange(1024, dtype=np.uint32)], [1024], ref_hash("cb0[2]"))[0]
    assert np.array_equal(out, expected)
    assert check(stream) == []
    assert [m.text for m in messages if m.severity == "error"] == []


@pytest.mark.parametrize("with_barrier", [False, True])
def test_the_incremental_state_finds_what_a_check_of_the_recorded_stream_finds(device_name, with_barrier):
    """Runtime.findings (check/incremental.py, fed as ops are recorded) against check() of rt.stream()."""
    with runtime.Runtime(check=False) as rt:
        _program(rt, with_barrier)
        rt.wait_fences(["F"])
        rt.host_read("A")
        found, stream = rt.findings(), rt.stream()
    assert found == check(stream)
    assert [(f.kind, f.first, f.second) for f in found] == ([] if with_barrier else [("raw", "cb0[0]", "cb0[1]")])


def test_allocation_failure_exits_3(device_name, tmp_path):
    doc = json.loads((ROOT / "tests" / "corpus" / "37-fill-before-read.json").read_text())
    doc["buffers"].append({"id": "Huge", "size": 1 << 44, "memory": "device_local"})
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc))
    run = subprocess.run([sys.executable, "-m", "vkverify.cli", "replay", str(path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 3, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "buffer Huge" in lines[0] and "Traceback" not in run.stderr, run.stderr


def replay_cli(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vkverify.cli", "replay", str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)


def test_replay_keeps_the_stream_s_device_id(device_name, tmp_path):
    """Issue 30 point 7: a device not named gpu0 with device_wait_idle was `<runtime>: threads.main[2].device:
    unknown device` (the recorded stream named its device gpu0)."""
    doc = json.loads((ROOT / "tests" / "corpus" / "37-fill-before-read.json").read_text())
    doc["devices"] = [{"id": "dev0", "queues": [{"id": "q0", "family": 0}]}]
    doc["buffers"] = [{k: v for k, v in b.items() if k != "device"} for b in doc["buffers"]]
    submits = [{"op": "submit", "queue": "q0", "command_buffers": [cb]} for cb in doc["command_buffers"]]
    doc["threads"] = {"main": submits + [{"op": "device_wait_idle", "device": "dev0"}]}
    path = tmp_path / "dev0.json"
    path.write_text(json.dumps(doc))
    run = replay_cli(path)
    assert run.returncode == 0 and "reference: all digests equal" in run.stdout, run.stderr
    with runtime.Runtime(device_id="dev0") as rt:
        rt.device_wait_idle()
        assert rt.stream().threads[0].ops == (ir.DeviceWaitIdle("dev0", source=rt.stream().threads[0].ops[0].source),)


def test_a_stream_the_device_cannot_run_is_exit_2_naming_the_file(device_name, tmp_path):
    """An abstract shader with more bindings than the generic kernels take: a traceback (ValueError), before."""
    accesses = ["read"] * 5 + ["write"]
    doc = {"format": "vkverify-stream/1", "name": "wide", "buffers": [{"id": f"b{i}", "size": 64} for i in range(6)],
           "shaders": {"k": {"bindings": accesses}},
           "command_buffers": {"cb0": [{"cmd": "fill", "dst": f"b{i}", "value": i} for i in range(6)] + [
               {"cmd": "barrier", "src_stage": "clear", "src_access": "transfer_write", "dst_stage": "compute_shader",
                "dst_access": ["shader_storage_read", "shader_storage_write"]},
               {"cmd": "dispatch", "shader": "k", "bindings": [{"buffer": f"b{i}"} for i in range(6)]}]},
           "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}}
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc))
    assert check(load(path)) == []
    run = replay_cli(path)
    assert (run.returncode, run.stdout) == (2, "") and run.stderr == (
        f"{path}: wide: cb0[7] (abstract shader 'k'): generic kernels take 0..4 read and 1..4 written bindings, "
        "not 5 and 1\n")


def test_layer_self_diagnosed_timeout_is_not_a_program_error(device_name):
    """The layer's timeout in its own timeline bookkeeping is kept, as "internal", out of the
    errors a replay reports; an error about the program stays an error."""
    with runtime.Runtime() as rt:
        vk, instance = rt.vk, rt.instance
        before = len(instance.messages)
        for id_name in ("UNASSIGNED-VkSemaphore-state-timeout", "VUID-vkQueueSubmit-pSubmits-04626"):
            data = vk.VkDebugUtilsMessengerCallbackDataEXT(pMessageIdName=id_name, pMessage="text")
            instance._on_message(vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT, 0, data, None)
        got = [(m.id_name, m.severity) for m in instance.messages[before:]]
    assert got == [("UNASSIGNED-VkSemaphore-state-timeout", "internal"), ("VUID-vkQueueSubmit-pSubmits-04626", "error")]


def test_host_signal_releases_a_wait_on_a_shared_queue(device_name):
    """Where q0 and q1 share one VkQueue (Lavapipe), a wait that a later submit signals would
    block forever and is refused; one the host signals later in the same thread runs, unless
    a host wait the blocked VkQueue holds up comes before the signal."""
    corpus = {p.stem.split("-")[0]: p for p in CORPUS}
    try:
        runtime.replay(load(corpus["77"]))
        pytest.skip(f"{device_name} gives each stream queue a VkQueue of its own")
    except runtime.Unsupported as error:
        assert "block forever" in str(error)
    result = runtime.replay(load(corpus["117"]))
    assert result.reference == {}  # ran, and equal to the simulator's reference
    doc = json.loads(corpus["117"].read_text())
    doc["threads"]["main"].insert(1, {"op": "queue_wait_idle", "queue": "q1"})
    held_up = from_dict(doc)
    assert check(held_up) == []  # in the model q1 is idle at once
    with pytest.raises(runtime.Unsupported, match="block forever"):
        runtime.replay(held_up)


def test_a_host_wait_the_shared_queue_does_not_hold_up_runs(device_name):
    """A host wait between the blocked wait's submit and the host signal that releases it blocks forever only
    where it waits for the blocked VkQueue (the walk decides): one for a value the timeline already has runs."""
    corpus = {p.stem.split("-")[0]: p for p in CORPUS}
    doc = json.loads(corpus["117"].read_text())
    doc["threads"]["main"].insert(1, {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 0}]})
    assert runtime.replay(from_dict(doc)).reference == {}


def test_unknown_device_is_a_clear_error(device_name):
    with pytest.raises(runtime.NoDevice, match="no device matches"):
        runtime.Runtime(device="no-such-gpu")


def test_devices_cli(device_name):
    run = subprocess.run([sys.executable, "-m", "vkverify.cli", "devices"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert device_name in run.stdout and "upload rule:" in run.stdout and "queue family 0" in run.stdout


# Each workgroup writes the dispatch's size (x, y, z as decimal digits) at its flat index: the bytes
# show how many groups ran and in what shape, which an indirect dispatch reads from a buffer.
GROUP_COUNTS = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer Out { uint sizes[]; };
void main() {
    uvec3 g = gl_WorkGroupID, n = gl_NumWorkGroups;
    sizes[(g.z * n.y + g.y) * n.x + g.x] = n.x * 10000u + n.y * 100u + n.z;
}
"""


def test_indirect_dispatch_recorded_and_run(device_name, tmp_path):
    """vkCmdDispatchIndirect through the runtime: a dispatch writes the group counts (3, 2, 1) at byte 16 of
    device-local Args, a barrier makes them visible to draw_indirect/indirect_command_read, and the indirect
    dispatch reads them there. The stream records the indirect read (without the barrier the checker finds
    the RAW on Args), and exactly 3 x 2 x 1 groups ran."""
    if shutil.which("glslangValidator") is None:
        pytest.skip("glslangValidator is not installed (Debian: glslang-tools)")
    source = tmp_path / "group_counts.comp"
    source.write_text(GROUP_COUNTS)
    subprocess.run(["glslangValidator", "-V", "--target-env", "vulkan1.1", str(source), "-o",
                    str(tmp_path / "group_counts.spv")], check=True, capture_output=True)
    with runtime.Runtime(check=True) as rt:
        assert rt.load_shader("group_counts", (tmp_path / "group_counts.spv").read_bytes()) == ("write",)
        rt.create_buffer("Counts", 64, "host_coherent")
        rt.create_buffer("Args", 64)
        rt.create_buffer("Out", 256)
        rt.create_fence("F")
        rt.host_write("Counts", np.array([0, 0, 0, 0, 3, 2, 1], np.uint32).tobytes())
        cb = rt.command_buffer("cb0")
        cb.cmd_dispatch("copy", ["Counts", "Args"], push=[7])
        cb.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "draw_indirect", "indirect_command_read")
        cb.cmd_dispatch("group_counts", ["Out"], indirect={"buffer": "Args", "offset": 16})
        rt.submit("q0", ["cb0"], fence="F")
        rt.wait_fences(["F"])
        out = np.frombuffer(rt.read_back("Out"), np.uint32)
        stream = rt.stream()
    assert out[:6].tolist() == [30201] * 6 and not out[6:].any()
    indirect = stream.index.command_buffers["cb0"].commands[2]
    assert isinstance(indirect, ir.Dispatch) and indirect.indirect == ir.IndirectRef("Args", 16)
    assert check(stream) == []
    doc = to_dict(stream)
    del doc["command_buffers"]["cb0"][1]
    raw = [(f.kind, f.buffer, f.first, f.second, f.range) for f in check(from_dict(doc))]
    assert raw == [("raw", "Args", "cb0[0]", "cb0[1]", (16, 28))]


def test_a_comment_on_the_recording_line_accepts_an_online_finding(device_name):
    """`# vkverify: ignore[raw]` on the line that recorded the racing dispatch: the online check raises nothing
    and rt.findings() leaves it out; the same program without the comment raises HazardError."""
    from vkverify.runtime import HazardError

    def record(rt, accepted: bool) -> None:
        rt.create_buffer("A", 256)
        rt.create_buffer("B", 256)
        cb = rt.command_buffer("c")
        cb.cmd_fill_buffer("A", value=1)
        if accepted:
            cb.cmd_copy_buffer("A", "B")  # vkverify: ignore[raw]
        else:
            cb.cmd_copy_buffer("A", "B")
        rt.submit("q0", ["c"])

    with runtime.Runtime(check=True) as rt:
        record(rt, accepted=True)
        assert rt.findings() == [] and [f.kind for f in check(rt.stream())] == ["raw"]
    with runtime.Runtime(check=True) as rt, pytest.raises(HazardError, match="raw"):
        record(rt, accepted=False)


@pytest.mark.parametrize("second_barrier", [True, False])
def test_two_queues_count_into_one_histogram_with_atomics(device_name, second_barrier):
    """The library's histogram adds to its bins with atomics only: recorded as an "atomic" binding, its
    dispatches on two queues need nothing between them (docs/format.md rule 10), and the bins hold both counts.
    The host's read of the bins must still come after each queue's barrier to the host: without q1's, its
    atomic write is a raw against the read."""
    n = 256
    with runtime.Runtime(("q0", "q1"), check=False) as rt:
        rt.create_buffer("Src", 4 * n, "host_coherent")
        rt.create_buffer("Bins", 64, "host_coherent")
        rt.host_write("Src", np.arange(n, dtype=np.uint32).tobytes())
        rt.host_write("Bins", bytes(64))
        for q in ("q0", "q1"):
            cb = rt.command_buffer(f"count_{q}")
            cb.cmd_dispatch("histogram", ["Src", "Bins"], (4, 1, 1), push=[n, 16])
            if q == "q0" or second_barrier:
                cb.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "host", "host_read")
            rt.submit(q, [f"count_{q}"])
        rt.device_wait_idle()
        bins = np.frombuffer(rt.host_read("Bins"), np.uint32)
        found, stream = rt.findings(), rt.stream()
    assert [b.access for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.Dispatch)
            for b in c.bindings] == ["read", "atomic"] * 2
    assert bins.tolist() == [2 * n // 16] * 16
    expected = [] if second_barrier else [("raw", "count_q1[0]", "main[5]")]
    assert [(f.kind, f.first, f.second) for f in found] == expected
