"""GPU timestamps of replayed command buffers (runtime/timestamps.py), on the device the runtime tests use."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from vkverify.model import UsageError, from_dict, load


def test_each_submitted_command_buffer_gets_its_gpu_time_and_the_values_stay_right(device_name):
    from vkverify.runtime import replay

    stream = load(ROOT / "examples" / "staged-upload.json")
    timed = replay(stream, timestamps=True)
    assert set(timed.gpu_ns) == {cb.id for cb in stream.command_buffers}
    assert all(ns > 0 for ns in timed.gpu_ns.values()), timed.gpu_ns
    assert timed.reference == {}, "the timestamps changed what the stream computes"
    assert replay(stream).gpu_ns == {}, "timed without asking"


def test_a_command_buffer_submitted_twice_is_timed_per_submission(device_name):
    from vkverify.runtime import replay

    stream = from_dict({
        "format": "vkverify-stream/1", "name": "twice",
        "buffers": [{"id": "A", "size": 4096, "memory": "device_local"}], "fences": [{"id": "F"}],
        "command_buffers": {"cb0": [{"cmd": "fill", "dst": "A", "offset": 0, "size": 4096, "value": 1}]},
        "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
                             {"op": "wait_fences", "fences": ["F"]}, {"op": "reset_fences", "fences": ["F"]},
                             {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
                             {"op": "wait_fences", "fences": ["F"]}]}})
    timed = replay(stream, timestamps=True)
    assert set(timed.gpu_ns) == {"cb0@main[0]", "cb0@main[3]"}, timed.gpu_ns
    assert timed.reference == {}


def test_gpu_time_is_asked_of_a_runtime_made_to_take_it(device_name):
    from vkverify.runtime import Runtime, Unsupported, replay

    with Runtime() as rt, pytest.raises(UsageError, match="timestamps=True"):
        rt.gpu_nanoseconds()
    with pytest.raises(Unsupported, match="one device"):
        replay(load(ROOT / "tests" / "corpus" / "84-proxy-thread-bridges-timelines.json"), timestamps=True)
