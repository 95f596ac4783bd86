"""Query result copies and buffer markers replayed on the device, with the simulator's bytes.

A copy's queries are pipeline statistics queries of compute shader invocations over no command (runtime/record.py,
Recorder.query_results): every value 0, every availability word 1, which the simulator writes too. Markers need
VK_AMD_buffer_marker: a device without it (Lavapipe) refuses the stream, naming the extension."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from hypothesis import assume, given, settings

from tests.conftest import ROOT
from tests.differential import SETTINGS, marker_streams
from vkverify.model import from_dict, load
from vkverify.sim import reference

runtime = pytest.importorskip("vkverify.runtime")

SYNCVAL = ROOT / "tests" / "syncval"


def query_stream(results: list[dict]) -> dict:
    """B filled with 0xFF bytes, then the query result copies `results` into it, then a host read of B."""
    return {
        "format": "vkverify-stream/1", "name": "queries",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "B", "size": 256, "memory": "host_coherent"}],
        "command_buffers": {"cb0": [
            {"cmd": "fill", "dst": "B", "value": 0xFFFFFFFF},
            {"cmd": "barrier", "src_stage": ["transfer"], "src_access": ["transfer_write"], "dst_stage": ["copy"],
             "dst_access": ["transfer_write"]},
            *({"cmd": "copy_query_pool_results", "dst": "B", **r} for r in results),
            {"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"], "dst_stage": ["host"],
             "dst_access": ["host_read"]}]},
        "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
                             {"op": "wait_fences", "fences": ["F"]},
                             {"op": "host_read", "buffer": "B", "offset": 0, "size": 256}]},
        "fences": [{"id": "F"}],
    }


RESULTS = [{"offset": 0, "result_size": 4}, {"offset": 8, "result_size": 8},
           {"offset": 32, "result_size": 16, "query_count": 3, "stride": 24},
           {"offset": 128, "result_size": 4, "query_count": 2, "stride": 12}]


def test_the_simulator_writes_value_0_and_availability_1():
    b = np.frombuffer(reference(from_dict(query_stream(RESULTS))).buffers["B"], np.uint32)
    assert list(b[:5]) == [0, 0xFFFFFFFF, 0, 0, 0xFFFFFFFF]  # a 32-bit value, then a 64-bit one at 8
    assert [list(b[w:w + 4]) for w in (8, 14, 20)] == [[0, 0, 1, 0]] * 3  # 64-bit value, 64-bit availability
    assert list(b[32:36]) == [0, 0xFFFFFFFF, 0xFFFFFFFF, 0]  # 32-bit values 12 bytes apart


def test_query_result_copies_replay_with_the_simulator_s_bytes(device_name):
    """Values and availability words of 32- and 64-bit results, one query or several at a stride, over bytes that
    are not 0: the device's B and host read equal the simulator's, with no validation error."""
    result = runtime.replay(from_dict(query_stream(RESULTS)), syncval=True)
    assert [m.text for m in result.messages if m.severity == "error"] == []
    assert result.reference == {}, result.reference
    assert result.reads.keys() == {"main[2]"}


@pytest.mark.parametrize("name", ["NegativeSyncVal.CmdQuery-1", "NegativeSyncVal.CmdQuery-2",
                                  "PositiveSyncVal.SingleQueryCopyIgnoresStride"])
def test_syncval_query_streams_replay_and_agree_with_the_layer(device_name, name):
    """The ports of syncval's query tests: the simulator's digests, and the layer's hazard on the copy is vkverify's
    (it takes the copy's range as stride x count: the replay gives one query's stride as its result size)."""
    stream = load(SYNCVAL / f"{name}.json")
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    assert (result.agreement.only_vkverify, result.agreement.only_layer) == ([], [])
    assert len(result.agreement.shared) == len(result.findings) == len(stream.expect)


def test_a_result_size_with_no_vulkan_layout_is_refused():
    doc = query_stream([{"offset": 0, "result_size": 12}])
    assert runtime.replayable(from_dict(doc)) == (
        "cb0[2]: a query result of 12 bytes has no Vulkan layout (4, 8: one 32- or 64-bit value; 16: a 64-bit value "
        "and its availability)")


def offers_buffer_markers() -> bool:
    with runtime.Runtime() as rt:
        offered = {e.extensionName for e in rt.vk.vkEnumerateDeviceExtensionProperties(rt.device.physical, None)}
    return "VK_AMD_buffer_marker" in offered


@pytest.mark.parametrize("name", ["PositiveSyncVal.AmdBufferMarker", "PositiveSyncVal.AmdBufferMarkerDuplicated3",
                                  "NegativeSyncVal.AmdBufferMarker"])
def test_buffer_markers_replay_where_the_device_offers_them(device_name, name):
    """With VK_AMD_buffer_marker: the simulator's digests (each marker's word) and the layer's verdict; without it
    the replay refuses the stream naming the extension, and the test skips saying so."""
    stream = load(SYNCVAL / f"{name}.json")
    assert runtime.replayable(stream) is None
    if not offers_buffer_markers():
        with pytest.raises(runtime.Unsupported, match=re.escape(f"{device_name} offers no VK_AMD_buffer_marker")):
            runtime.replay(stream)
        pytest.skip(f"{device_name} offers no VK_AMD_buffer_marker: buffer markers are not replayed")
    result = runtime.replay(stream, syncval=True)
    assert result.reference == {}, result.reference
    assert [m.text for m in result.messages if m.severity == "error" and not m.id_name.startswith("SYNC")] == []


def without_markers(doc: dict) -> dict:
    out = copy.deepcopy(doc)
    out["command_buffers"] = {k: [c for c in v if c["cmd"] != "write_buffer_marker"] or [
        {"cmd": "fill", "dst": "C", "value": 3}] for k, v in out["command_buffers"].items()}
    return out


@settings(max_examples=30, **SETTINGS)
@given(doc=marker_streams())
def test_generated_query_and_marker_streams_replay_with_the_simulator_s_digests(device_name, doc):
    """Streams of tests/differential.py's marker_streams (their markers left out where the device has no
    VK_AMD_buffer_marker): query result copies among reads, writes, atomics, fills and copies of the same words, on
    one queue or two; Lavapipe runs one command after another, so hazards or not, every digest and the host read
    equal the simulator's. Left out: a host read before any wait (it races the device: no one digest) and results
    of 12 bytes (refused). benchmarks/replay_generated.py --markers runs many more."""
    ops = doc["threads"]["main"]
    assume(ops[-3]["op"] in ("wait_fences", "device_wait_idle"))
    assume(all(c.get("result_size") != 12 for cb in doc["command_buffers"].values() for c in cb))
    stream = from_dict(doc if offers_buffer_markers() else without_markers(doc))
    assert runtime.replayable(stream) is None
    assert runtime.replay(stream).reference == {}
