"""Captures a verdict can cover only in part: one that queries an event's status from the host (the stream
cannot order what the host does on seeing it) and one cut short (the program killed: a truncated block, or
whole blocks without the teardown). Each imports, says why in a line that names the calls, and `check` marks
its verdict partial (docs/format.md, Extensions). Its event sets, resets and waits are in the stream."""

from __future__ import annotations

import json
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.cli import main
from vkverify.importer import import_capture

from .test_import import _jsonl, capture

# tests/_lavapipe.py's device: a copy into a staging buffer, then vkCmdSetEvent and a vkCmdWaitEvents whose
# memory barrier (transfer_write -> host_read) makes the copy visible to the host's read after the fence;
# then the event from the host: its status, a reset and a set.
EVENTS = """
import numpy as np
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
vk = d.vk
data = np.arange(1024, dtype=np.uint32)
owned = [d._buffer(data.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT),
         d._buffer(bytes(data.nbytes), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)]
(src, _), (dst, memory) = owned
event_info = vk.VkEventCreateInfo()
event = vk.vkCreateEvent(d.device, event_info, None)
def record(cb):
    regions = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=data.nbytes)]
    vk.vkCmdCopyBuffer(cb, src, dst, 1, regions)
    vk.vkCmdSetEvent(cb, event, vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
    barriers = [vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                   dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)]
    events = [event]
    vk.vkCmdWaitEvents(cb, 1, events, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT,
                       1, barriers, 0, None, 0, None)
d._execute(record)
try:
    vk.vkGetEventStatus(d.device, event)
except vk.VkEventSet:  # the package raises every result but VK_SUCCESS
    pass
vk.vkResetEvent(d.device, event)
vk.vkSetEvent(d.device, event)
assert (d.read(memory, data.nbytes, data.dtype) == data).all()
vk.vkDestroyEvent(d.device, event, None)
for buffer, buffer_memory in owned:
    vk.vkDestroyBuffer(d.device, buffer, None)
    vk.vkFreeMemory(d.device, buffer_memory, None)
d.close()
"""


@pytest.fixture(scope="module")
def events_capture(tmp_path_factory) -> tuple[Path, dict[int, str]]:
    """The capture, uncompressed (so that a cut falls where a test puts it), and its calls by index."""
    gfxr = capture(EVENTS, tmp_path_factory.mktemp("events") / "events.gfxr", GFXRECON_CAPTURE_COMPRESSION_TYPE="NONE")
    return gfxr, _calls(gfxr)


def _calls(gfxr: Path) -> dict[int, str]:
    """The converter's calls of `gfxr`: index -> name."""
    jsonl = gfxr.with_suffix(".jsonl")
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(gfxr)], check=True, capture_output=True)
    records = (json.loads(line) for line in jsonl.read_text().splitlines()[1:])
    return {r["index"]: r["vkFunc"]["name"] for r in records if "vkFunc" in r}


def test_events_import_and_a_status_query_makes_the_verdict_partial(events_capture, capsys):
    gfxr, calls = events_capture
    stream, summary = import_capture(gfxr)
    assert summary.unmodelled == Counter(["vkGetEventStatus"])
    assert calls[summary.first_unmodelled["vkGetEventStatus"]] == "vkGetEventStatus"
    assert summary.partial and summary.cut is None and not summary.warnings
    assert not {name for name in summary.skipped if "Event" in name}  # vkCreateEvent, vkDestroyEvent: no order
    assert summary.commands["set_event"] == summary.commands["wait_events"] == 1
    assert summary.host_ops["set_event"] == summary.host_ops["reset_event"] == 1
    # The wait's memory barrier (transfer_write -> host_read) makes the copy visible to the host's read of the
    # staging buffer after the fence: no finding, where the import without events found that read's RAW.
    assert check(stream) == []
    lines = summary.partial_lines()
    first = summary.first_unmodelled["vkGetEventStatus"]
    assert lines == [(f"unmodelled: 1 vkGetEventStatus call (first #{first}): the stream format cannot hold the "
                      "ordering they make: it is missing from the stream")]
    assert main(["check", str(gfxr)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("(partial verdict)") and out[1:] == ["  " + line for line in lines]


def test_synchronization2_event_names_import_as_the_core_ones(tmp_path):
    """vkCmdSetEvent2KHR, vkCmdWaitEvents2KHR and vkCmdResetEvent2KHR are the core calls. A set whose dependency
    has two barriers is held as their union, and says so; a wait's, as one wait per barrier."""
    def info(*barriers: tuple[str, str]) -> dict:
        return {"memoryBarrierCount": len(barriers), "pMemoryBarriers": [
            {"srcStageMask": src, "srcAccessMask": "VK_ACCESS_2_TRANSFER_WRITE_BIT", "dstStageMask": dst,
             "dstAccessMask": "VK_ACCESS_2_TRANSFER_READ_BIT"} for src, dst in barriers],
            "pBufferMemoryBarriers": None, "pImageMemoryBarriers": None}
    copy, clear = "VK_PIPELINE_STAGE_2_COPY_BIT", "VK_PIPELINE_STAGE_2_CLEAR_BIT"
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}), ("vkCreateEvent", {"device": 2, "pEvent": 9}),
             ("vkBeginCommandBuffer", {"commandBuffer": 5}),
             ("vkCmdSetEvent2KHR", {"commandBuffer": 5, "event": 9, "pDependencyInfo": info((copy, copy))}),
             ("vkCmdWaitEvents2KHR", {"commandBuffer": 5, "pEvents": [9], "pDependencyInfos": [info((copy, copy))]}),
             ("vkCmdResetEvent2KHR", {"commandBuffer": 5, "event": 9, "stageMask": copy}),
             ("vkCmdSetEvent2", {"commandBuffer": 5, "event": 9,
                                 "pDependencyInfo": info((copy, copy), (clear, clear))}),
             ("vkCmdWaitEvents2", {"commandBuffer": 5, "pEvents": [9],
                                   "pDependencyInfos": [info((copy, copy), (clear, clear))]}),
             ("vkEndCommandBuffer", {"commandBuffer": 5}),
             ("vkDestroyEvent", {"device": 2, "event": 9}), ("vkDestroyDevice", {"device": 2})]
    stream, summary = import_capture(_jsonl(tmp_path / "events2.jsonl", calls))
    assert not summary.partial and not summary.skipped and not summary.unmodelled
    (cb,) = stream.command_buffers
    assert [type(c).__name__ for c in cb.commands] == ["SetEvent", "WaitEvents", "ResetEvent", "SetEvent",
                                                       "WaitEvents", "WaitEvents"]
    first, _, _, widened, *split = cb.commands
    assert first.dependency.src_stage == first.dependency.dst_stage == {"copy"}
    assert widened.stage == widened.dependency.src_stage == {"copy", "clear"}
    assert [w.dependencies[0].src_stage for w in split] == [{"copy"}, {"clear"}]
    assert summary.warnings == [("vkCmdSetEvent2 #7: its 2 barriers are held as one dependency from the union of "
                                 "their scopes, which may order more than the program does")]


def _block_ends(data: bytes) -> list[int]:
    """The byte after each block of a .gfxr (GFXReconstruct's format.h: a file header with its options, then
    blocks of {u64 size, u32 type} and a payload). Block i is the converter's call #i."""
    (options,) = struct.unpack_from("<I", data, 12)
    pos, ends = 16 + 8 * options, []
    while pos < len(data):
        pos += 12 + struct.unpack_from("<Q", data, pos)[0]
        ends.append(pos)
    return ends


def test_a_capture_cut_short_is_partial_and_names_its_last_call(events_capture, tmp_path, capsys):
    """The capture cut between blocks (no teardown: no vkDestroyDevice) and inside blocks (truncated), before
    the events and after them: each imports what it holds, names the last whole call, and `check` marks the
    verdict partial, its exit code still saying whether there are findings."""
    gfxr, calls = events_capture
    data = gfxr.read_bytes()
    ends = _block_ends(data)
    first = {name: min(i for i, n in calls.items() if n == name) for name in set(calls.values())}
    bind, submit, wait = (first[n] for n in ("vkBindBufferMemory", "vkQueueSubmit", "vkWaitForFences"))
    cuts = {"bind": (ends[bind], bind), "submit": (ends[submit] - 5, submit - 1), "wait": (ends[wait], wait),
            "teardown": (len(data) - 7, len(ends) - 2)}  # (bytes kept, the last whole block)
    paths = []
    for name, (size, _) in cuts.items():
        paths.append(tmp_path / f"{name}.gfxr")
        paths[-1].write_bytes(data[:size])
    code = main(["check", "--format", "json", *map(str, paths)])
    results = json.loads(capsys.readouterr().out)
    assert code == (1 if any(r["findings"] for r in results) else 0)
    for result, (name, (size, block)) in zip(results, cuts.items()):
        last = max(i for i in calls if i <= block)
        (line,) = [line for line in result["partial"] if line.startswith("cut short: ")]
        assert f"ends at call #{last} {calls[last]}" in line, (name, line)
        whole = size in ends
        assert ("without vkDestroyDevice of gpu0" in line) == whole and ("truncated (block" in line) != whole
    # Before the status query, the cut is the only reason; after the wait, the event orders the host's read.
    assert [line[:10] for line in results[0]["partial"]] == ["cut short:"]
    assert results[2]["findings"] == []
    assert main(["import", str(paths[1]), "-o", str(tmp_path / "s.json")]) == 0
    assert f"cut short: the capture is truncated (block {submit} at byte" in capsys.readouterr().err


def test_a_compressed_capture_cut_short_is_read_to_its_last_whole_block(small_capture, tmp_path):
    """The layer's default, LZ4 blocks: the import decompresses the cut file (gfxrecon-compress reads it to its
    last whole block, as the converter does) and says where it ends."""
    cut = tmp_path / "cut.gfxr"
    cut.write_bytes(small_capture[0].read_bytes()[:-7])
    _, summary = import_capture(cut)
    last = max(_calls(cut).items())
    assert summary.partial and summary.cut.startswith("the capture is truncated (block ")
    assert f"it ends at call #{last[0]} {last[1]}, the last whole call" in summary.cut


def test_a_command_the_importer_does_not_read_makes_the_verdict_partial(tmp_path):
    """A buffer marker writes 4 bytes the stream cannot hold yet: never dropped in silence. State, queries and
    timestamps access no buffer and order nothing; ray tracing is outside the format, counted as skipped."""
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             *((name, {"commandBuffer": 5}) for name in ("vkCmdWriteBufferMarkerAMD", "vkCmdWriteBufferMarkerAMD",
                                                         "vkCmdSetDeviceMask", "vkCmdWriteTimestamp2",
                                                         "vkCmdBeginQuery", "vkCmdBuildAccelerationStructuresKHR")),
             ("vkDestroyDevice", {"device": 2})]
    _, summary = import_capture(_jsonl(tmp_path / "marker.jsonl", calls))
    assert summary.unknown == Counter({"vkCmdWriteBufferMarkerAMD": 2}) and summary.partial
    assert summary.skipped == Counter(["vkCmdBuildAccelerationStructuresKHR"])
    assert summary.partial_lines() == [
        ("unknown: 2 vkCmdWriteBufferMarkerAMD calls (first #2): a command this importer does not read: what it "
         "accesses and orders is missing from the stream")]
