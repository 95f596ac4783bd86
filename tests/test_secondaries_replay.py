"""Secondary command buffers (spec 6.7, issue 25) on a device: the runtime records each as a VkCommandBuffer of level
SECONDARY (a VkCommandBufferInheritanceInfo with no render pass) when the primary that executes it reaches its
vkCmdExecuteCommands, once per submission where the stream names its commands per submission (runtime.py
_vk_command_buffer). On Lavapipe, under the validation layer, a secondary with barriers, a copy and a dispatch,
executed by two primaries, one of them submitted twice, replays with no message and with the simulator's digests
(the abstract shader's values depend on the reference `s0[3]@main[2]`, so a secondary recorded once for all its
runs would differ); the layer reports the hazards between a secondary and its primary that the checker reports."""

from __future__ import annotations

import copy
import json

import pytest

from vkverify.check import check
from vkverify.cli import main
from vkverify.model import from_dict
from vkverify.sim import reference
from vkverify.sim.order import reference_order

runtime = pytest.importorskip("vkverify.runtime")

_ALL = {"src_stage": ["copy", "compute_shader"], "src_access": ["transfer_write", "shader_storage_write"],
        "dst_stage": ["copy", "compute_shader"],
        "dst_access": ["transfer_read", "transfer_write", "shader_storage_read", "shader_storage_write"]}

# s0 runs in cb1 (main[1]), then in cb0 at each of its two submits (main[2], main[5]).
CLEAN = {
    "format": "vkverify-stream/1", "name": "secondaries-clean",
    "buffers": [{"id": "A", "size": 256, "memory": "host_coherent"}, {"id": "B", "size": 256},
                {"id": "C", "size": 256}, {"id": "D", "size": 256},
                {"id": "Out", "size": 256, "memory": "host_coherent"}],
    "shaders": {"transform": {"bindings": ["read", "write"]}},
    "command_buffers": {
        "s0": [{"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["copy"],
                "dst_access": ["transfer_read", "transfer_write"]},
               {"cmd": "copy", "src": "B", "dst": "C"},
               {"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"],
                "dst_stage": ["compute_shader"], "dst_access": ["shader_storage_read"]},
               {"cmd": "dispatch", "shader": "transform", "groups": [1, 1, 1],
                "bindings": [{"buffer": "C", "access": "read"}, {"buffer": "D", "access": "write"}]}],
        "cb0": [{"cmd": "barrier", **_ALL},
                {"cmd": "copy", "src": "A", "dst": "B", "regions": [{"src_offset": 0, "dst_offset": 0, "size": 128}]},
                {"cmd": "execute_commands", "command_buffers": ["s0"]},
                {"cmd": "barrier", "src_stage": ["compute_shader"], "src_access": ["shader_storage_write"],
                 "dst_stage": ["copy"], "dst_access": ["transfer_read"]},
                {"cmd": "copy", "src": "D", "dst": "Out"},
                {"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["host"],
                 "dst_access": ["host_read"]}],
        "cb1": [{"cmd": "barrier", **_ALL},
                {"cmd": "copy", "src": "A", "dst": "B"},
                {"cmd": "execute_commands", "command_buffers": ["s0"]}]},
    "threads": {"main": [
        {"op": "host_write", "buffer": "A", "offset": 0, "size": 256},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb1"]},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
        {"op": "device_wait_idle"},
        {"op": "host_read", "buffer": "Out", "offset": 0, "size": 256},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
        {"op": "device_wait_idle"}]},
}

# s0 reads what cb0[0] wrote, cb0[2] reads what s1 wrote and overwrites what s0 reads: no barrier anywhere.
RACE = {
    "format": "vkverify-stream/1", "name": "secondary-races-primary",
    "buffers": [{"id": "A", "size": 256, "memory": "host_coherent"}, {"id": "B", "size": 256},
                {"id": "C", "size": 256}, {"id": "D", "size": 256}],
    "command_buffers": {
        "s0": [{"cmd": "copy", "src": "B", "dst": "C"}],
        "s1": [{"cmd": "copy", "src": "A", "dst": "D"}],
        "cb0": [{"cmd": "copy", "src": "A", "dst": "B"},
                {"cmd": "execute_commands", "command_buffers": ["s0", "s1"]},
                {"cmd": "copy", "src": "D", "dst": "B"}]},
    "threads": {"main": [
        {"op": "host_write", "buffer": "A", "offset": 0, "size": 256},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
        {"op": "device_wait_idle"}]},
}


# s0 waits for the event cb0 sets before executing it (vkCmdSetEvent): its wait must be vkCmdWaitEvents.
EVENT = {
    "format": "vkverify-stream/1", "name": "secondary-waits-primary-event",
    "buffers": [{"id": "A", "size": 256, "memory": "host_coherent"}, {"id": "B", "size": 256},
                {"id": "C", "size": 256}],
    "events": [{"id": "E"}],
    "command_buffers": {
        "s0": [{"cmd": "wait_events", "events": ["E"], "src_stage": ["copy"], "src_access": ["transfer_write"],
                "dst_stage": ["copy"], "dst_access": ["transfer_read"]},
               {"cmd": "copy", "src": "B", "dst": "C"}],
        "cb0": [{"cmd": "copy", "src": "A", "dst": "B"},
                {"cmd": "set_event", "event": "E", "stage": ["copy"]},
                {"cmd": "execute_commands", "command_buffers": ["s0"]}]},
    "threads": {"main": [
        {"op": "host_write", "buffer": "A", "offset": 0, "size": 256},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
        {"op": "device_wait_idle"}]},
}


def test_the_simulator_runs_a_secondary_s_commands_in_place_per_submission():
    stream = from_dict(CLEAN)
    assert [s.ref for s in reference_order(stream)] == [
        "main[0]", "cb1[1]", "s0[1]@main[1]", "s0[3]@main[1]", "cb0[1]@main[2]", "s0[1]@main[2]", "s0[3]@main[2]",
        "cb0[4]@main[2]", "main[4]", "cb0[1]@main[5]", "s0[1]@main[5]", "s0[3]@main[5]", "cb0[4]@main[5]"]
    # D holds what s0's last run computed, from its own reference: each run is a dispatch of its own.
    once = copy.deepcopy(CLEAN)
    once["threads"]["main"] = once["threads"]["main"][:5]
    assert reference(stream).digests["D"] != reference(from_dict(once)).digests["D"]


def test_secondaries_replay_cleanly_with_the_simulator_s_digests(device_name, tmp_path, capsys):
    stream = from_dict(CLEAN)
    assert check(stream) == []
    result = runtime.replay(stream, syncval=True)
    assert [(m.id_name, m.text) for m in result.messages] == []
    assert result.reference == {}, result.reference
    assert result.recorded == stream  # every command buffer and execute_commands recorded as given
    path = tmp_path / "secondaries.json"
    path.write_text(json.dumps(CLEAN))
    assert main(["replay", "--syncval", str(path)]) == 0  # 0: every digest is the simulator's
    assert capsys.readouterr().out.splitlines()[-1] == "  reference: all digests equal"


def test_a_secondary_waits_for_its_primary_s_event_as_the_set_was_recorded(device_name):
    """A secondary recorded before its primary's commands would take the wait's kind before the set's
    (VUID-vkCmdWaitEvents2-pEvents-03837) and the layer would see the copy unordered."""
    stream = from_dict(EVENT)
    assert check(stream) == []
    result = runtime.replay(stream, syncval=True)
    assert [(m.id_name, m.text) for m in result.messages] == []
    assert result.reference == {}, result.reference


def test_the_layer_reports_a_secondary_racing_its_primary(device_name, capsys):
    stream = from_dict(RACE)
    findings = check(stream)
    assert [(f.kind, f.first, f.second) for f in findings] == [
        ("raw", "cb0[0]", "s0[0]"), ("raw", "s1[0]", "cb0[2]"), ("waw", "cb0[0]", "cb0[2]"),
        ("war", "s0[0]", "cb0[2]")]
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    shared = [(f.kind, f.first, f.second) for f, _ in result.agreement.shared]
    assert shared == [("raw", "cb0[0]", "s0[0]"), ("raw", "s1[0]", "cb0[2]"), ("war", "s0[0]", "cb0[2]")]
    assert result.agreement.only_layer == []
    # The one the layer leaves out is no secondary's: two copy writes, which layer 1.3.239 does not pair.
    assert [runtime.syncval.explain_only_vkverify(stream, f) for f in result.agreement.only_vkverify] == [
        "two writes of the same stage and access: the layer reports no WAW between them"]


def test_a_nested_secondary_is_refused():
    """Lavapipe of Mesa 22.3 has no VK_EXT_nested_command_buffer, and the runtime does not enable it: replay says
    so instead of recording what the layer would refuse (VUID-vkCmdExecuteCommands-bufferlevel-00088)."""
    doc = copy.deepcopy(RACE)
    doc["command_buffers"]["s2"] = [{"cmd": "execute_commands", "command_buffers": ["s1"]}]
    doc["command_buffers"]["cb0"][1]["command_buffers"] = ["s0", "s2"]
    stream = from_dict(doc)
    with pytest.raises(runtime.Unsupported, match="'s2' executes another: nesting needs "
                                                  "VK_EXT_nested_command_buffer"):
        runtime.replay(stream)


def test_nested_secondaries_on_the_device(device_name):
    with runtime.Runtime() as rt:
        offered = {e.extensionName for e in rt.vk.vkEnumerateDeviceExtensionProperties(rt.device.physical, None)}
    if "VK_EXT_nested_command_buffer" not in offered:
        pytest.skip(f"{device_name} offers no VK_EXT_nested_command_buffer: nested secondaries are not replayed")
    pytest.xfail(f"{device_name} offers VK_EXT_nested_command_buffer, which the runtime does not enable yet")
