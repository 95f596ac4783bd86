"""Events (spec 7.5, issue 25) on a device: the runtime records vkCmdSetEvent / vkCmdWaitEvents for the stage
form and vkCmdSetEvent2 / vkCmdWaitEvents2 for the dependency form, resets as it records barriers, and vkSetEvent /
vkResetEvent for the host's (runtime/record.py Recorder.event). On Lavapipe, under the validation layer, a stream
using both forms and a host set replays with no message and with the simulator's digests; a hazard between a set
and its wait is reported by the layer where the checker reports it; a wait whose source stages are not its set's
is reported by the layer (what the runtime records is what the stream says)."""

from __future__ import annotations

import copy
import json

import pytest

from vkverify.check import check
from vkverify.cli import main
from vkverify.model import from_dict
from vkverify.sim import simulate
from vkverify.sim.order import reference_order

runtime = pytest.importorskip("vkverify.runtime")

_COPY_TO_COMPUTE = {"src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["compute_shader"],
                    "dst_access": ["shader_storage_read"]}
_COMPUTE_TO_COPY = {"src_stage": ["compute_shader"], "src_access": ["shader_storage_write"], "dst_stage": ["copy"],
                    "dst_access": ["transfer_read"]}

# E1: vkCmdSetEvent, waited by vkCmdWaitEvents (one top-level dependency); E2: vkCmdSetEvent2, waited by
# vkCmdWaitEvents2; H: set by the host before the submit. The second wait names all three: one vkCmdWaitEvents2
# for E2 and H, one vkCmdWaitEvents for E1.
BOTH_FORMS = {
    "format": "vkverify-stream/1", "name": "events-both-forms",
    "buffers": [{"id": "A", "size": 4096, "memory": "host_coherent"}, {"id": "B", "size": 4096},
                {"id": "D", "size": 4096}, {"id": "F", "size": 4096},
                {"id": "Out", "size": 4096, "memory": "host_coherent"}],
    "events": [{"id": "E1"}, {"id": "E2"}, {"id": "H"}],
    "shaders": {"transform": {"bindings": ["read", "write"]}},
    "command_buffers": {"cb0": [
        {"cmd": "copy", "src": "A", "dst": "B"},
        {"cmd": "set_event", "event": "E1", "stage": ["copy"]},
        {"cmd": "fill", "dst": "F", "value": 7},
        {"cmd": "wait_events", "events": ["E1"], **_COPY_TO_COMPUTE},
        {"cmd": "dispatch", "shader": "transform", "groups": [16, 1, 1],
         "bindings": [{"buffer": "B", "access": "read"}, {"buffer": "D", "access": "write"}]},
        {"cmd": "set_event", "event": "E2", **_COMPUTE_TO_COPY},
        {"cmd": "wait_events", "events": ["E2", "H", "E1"], "dependencies": [
            _COMPUTE_TO_COPY,
            {"src_stage": ["host"], "src_access": ["host_write"], "dst_stage": ["copy"],
             "dst_access": ["transfer_read"]},
            {"src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["copy"],
             "dst_access": ["transfer_write"]}]},
        {"cmd": "copy", "src": "D", "dst": "Out"},
        {"cmd": "reset_event", "event": "E1", "stage": ["copy"]},
        {"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["host"],
         "dst_access": ["host_read"]},
    ]},
    "threads": {"main": [
        {"op": "host_write", "buffer": "A", "offset": 0, "size": 4096},
        {"op": "set_event", "event": "H"},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
        {"op": "device_wait_idle"},
        {"op": "host_read", "buffer": "Out", "offset": 0, "size": 4096},
        {"op": "reset_event", "event": "H"},
    ]},
}

# cb0[2] reads A after the set: in neither scope of the wait, so nothing orders it before cb0[4]'s write.
BETWEEN = {
    "format": "vkverify-stream/1", "name": "events-hazard-between-set-and-wait",
    "buffers": [{"id": "A", "size": 256, "memory": "host_coherent"}, {"id": "B", "size": 256},
                {"id": "C", "size": 256}],
    "events": [{"id": "E"}],
    "command_buffers": {"cb0": [
        {"cmd": "copy", "src": "A", "dst": "B"},
        {"cmd": "set_event", "event": "E", "stage": ["copy"]},
        {"cmd": "copy", "src": "A", "dst": "C"},
        {"cmd": "wait_events", "events": ["E"], "src_stage": ["copy"], "dst_stage": ["copy"]},
        {"cmd": "fill", "dst": "A", "value": 5},
    ]},
    "threads": {"main": [
        {"op": "host_write", "buffer": "A", "offset": 0, "size": 256},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
        {"op": "device_wait_idle"},
    ]},
}


def dependency_form(doc: dict) -> dict:
    """BETWEEN with vkCmdSetEvent2 / vkCmdWaitEvents2."""
    doc = copy.deepcopy(doc)
    commands = doc["command_buffers"]["cb0"]
    commands[1] = {"cmd": "set_event", "event": "E", "src_stage": ["copy"], "dst_stage": ["copy"]}
    commands[3] = {"cmd": "wait_events", "events": ["E"], "dependencies": [{"src_stage": ["copy"],
                                                                            "dst_stage": ["copy"]}]}
    return doc


def test_both_forms_replay_cleanly_with_the_simulator_s_digests(device_name, tmp_path, capsys):
    stream = from_dict(BOTH_FORMS)
    assert check(stream) == []
    result = runtime.replay(stream, syncval=True)
    assert [(m.id_name, m.text) for m in result.messages] == []
    assert result.reference == {}, result.reference
    assert result.recorded == stream  # events declared, every event command and host op recorded as given
    assert set(result.digests) == {"A", "B", "D", "F", "Out"} and result.reads.keys() == {"main[4]"}
    path = tmp_path / "events.json"
    path.write_text(json.dumps(BOTH_FORMS))
    assert main(["replay", "--syncval", str(path)]) == 0  # 0: every digest is the simulator's
    assert capsys.readouterr().out.splitlines()[-1] == "  reference: all digests equal"


@pytest.mark.parametrize("form", ["stage", "dependency"])
def test_a_hazard_between_set_and_wait_is_the_layer_s_too(device_name, form):
    """The layer sees the recorded set and wait as what they are: were the wait recorded as a barrier, or the
    set where the wait is, the copy between them would be ordered and the layer would report nothing."""
    stream = from_dict(BETWEEN if form == "stage" else dependency_form(BETWEEN))
    findings = check(stream)
    assert [(f.kind, f.first, f.second) for f in findings] == [("war", "cb0[2]", "cb0[4]")]
    result = runtime.replay(stream, syncval=True)
    assert result.agreement.only_vkverify == result.agreement.only_layer == []
    assert [f for f, _ in result.agreement.shared] == findings
    assert result.reference == {}, result.reference


def test_a_wait_with_other_source_stages_than_its_set_shows_under_the_layer(device_name):
    """VUID-vkCmdWaitEvents-srcStageMask-01158: vkCmdWaitEvents's srcStageMask is its events' stageMasks; the
    runtime records the stream's wait as given, so the layer names the misuse."""
    doc = copy.deepcopy(BOTH_FORMS)
    doc["command_buffers"]["cb0"][3]["src_stage"] = ["compute_shader"]
    result = runtime.replay(from_dict(doc), syncval=True)
    assert "VUID-vkCmdWaitEvents-srcStageMask-01158" in {m.id_name for m in result.messages}


def test_event_commands_are_no_steps_and_the_simulator_confirms_the_hazard():
    """The simulator executes no event command (they access no memory) and perturbs what the checker leaves
    unordered across a set and its wait: the fill lands before the copy between them reads A."""
    for doc in (BETWEEN, dependency_form(BETWEEN)):
        stream = from_dict(doc)
        assert [s.ref for s in reference_order(stream)] == ["main[0]", "cb0[0]", "cb0[2]", "cb0[4]"]
        report = simulate(stream, schedules=4)
        assert [v.verdict for v in report.verdicts] == ["confirmed"]
    assert "main[1]" not in {s.ref for s in reference_order(from_dict(BOTH_FORMS))}  # the host's set_event
