"""Host reads in imported captures (docs/format.md): the readback pattern's read, which no capture records,
assumed after the wait that covers the copy; a page-guard fill of bytes the host only read is no host write;
a capture that lost unflushed host writes (assisted memory tracking) says so. Each on a small program run
under the capture layer: tests/_lavapipe.py's `read_back` (a copy into a staging buffer, a fence wait, a
read through the mapping), with and without a barrier to the host's reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.cli import main
from vkverify.importer import import_capture
from vkverify.importer.readback import ASSUMED
from vkverify.model import ir

from .test_import import _jsonl, _timeline, capture

READBACK = """
import numpy as np
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
data = np.arange(1024, dtype=np.uint32)
assert (d.read_back(data, host_barrier={host_barrier}) == data).all()
d.close()
"""


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("readback")
    return {"no barrier": capture(READBACK.format(host_barrier=False), tmp / "plain.gfxr"),
            "barrier": capture(READBACK.format(host_barrier=True), tmp / "barrier.gfxr"),
            "assisted": capture(READBACK.format(host_barrier=True), tmp / "assisted.gfxr",
                                GFXRECON_MEMORY_TRACKING_MODE="assisted")}


def accesses(stream: ir.Stream, op: str) -> list[ir.HostAccess]:
    """The stream's host ops `op` ("host_read", "host_write")."""
    return [o for t in stream.threads for o in t.ops if isinstance(o, ir.HostAccess) and o.op == op]


def test_the_missing_host_barrier_is_a_raw_on_the_assumed_read(captures):
    stream, summary = import_capture(captures["no barrier"])
    (read,) = accesses(stream, "host_read")
    assert read.label.startswith(f"{ASSUMED} (readback) after vkWaitForFences #")
    assert any("host reads" in a and ASSUMED in a for a in summary.assumed)
    (finding,) = check(stream)
    assert (finding.kind, finding.first_access, finding.second_access) == ("raw", "copy/transfer_write",
                                                                           "host/host_read")
    assert finding.labels[0].startswith("vkCmdCopyBuffer #") and finding.labels[1] == read.label
    assert "src copy/transfer_write -> dst host/host_read" in finding.fix
    assert finding.to_json()["labels"][1].startswith(ASSUMED)  # the JSON findings say the read is assumed


def test_the_page_guard_fill_of_the_read_page_is_no_host_write(captures):
    """The layer writes back the staging buffer's page after the host read it: without the assumed read, that
    fill is the read (labelled so); with it, the fill is dropped."""
    stream, summary = import_capture(captures["no barrier"])
    assert len(accesses(stream, "host_write")) == 2  # the source's data and the staging buffer's zeros
    assert any("fill-memory records are host reads" in a for a in summary.assumed)
    stream, summary = import_capture(captures["no barrier"], assume_reads=False)
    assert not any(ASSUMED in a for a in summary.assumed)
    (finding,) = check(stream)
    assert finding.kind == "raw" and finding.labels[1].startswith("fill memory #")
    assert finding.labels[1].endswith("a host read of bytes the device wrote (page guard)")


def test_a_barrier_to_the_host_reads_orders_the_assumed_read(captures):
    stream, _ = import_capture(captures["barrier"])
    assert len(accesses(stream, "host_read")) == 1
    assert check(stream) == []


def test_assisted_tracking_that_lost_the_host_writes_is_warned(captures):
    stream, summary = import_capture(captures["assisted"])
    assert not accesses(stream, "host_write")  # never flushed: lost
    (warning,) = summary.warnings
    assert "no captured write reached (first: vkCmdCopyBuffer #" in warning and "assisted" in warning
    assert not import_capture(captures["barrier"])[1].warnings


def test_the_cli_switch_leaves_the_assumed_reads_out(captures, tmp_path, capsys):
    for argv, assumed in (([], True), (["--no-assumed-reads"], False)):
        out = tmp_path / "s.json"
        assert main(["import", str(captures["no barrier"]), "-o", str(out), *argv]) == 0
        assert (ASSUMED in out.read_text()) == assumed
        assert ("assumed: 1 host reads" in capsys.readouterr().err) == assumed


def test_the_read_follows_the_first_wait_that_covers_the_copy_through_semaphores(tmp_path):
    """JSON lines: a copy into a staging buffer on queue q0_1 signals T=1; q0 waits for T=1 and signals a
    fence. An idle wait of q0 before that covers nothing of q0_1; the fence wait covers the copy, through
    the semaphore: the read follows it."""
    def submit(queue: int, cbs: list[int], wait: list, signal: list, fence: int | str) -> tuple[str, dict]:
        def infos(ops):
            return [{"semaphore": s, "value": v, "stageMask": "VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT"} for s, v in ops]
        return "vkQueueSubmit2", {"queue": queue, "fence": fence, "pSubmits": [{
            "pWaitSemaphoreInfos": infos(wait), "pCommandBufferInfos": [{"commandBuffer": c} for c in cbs],
            "pSignalSemaphoreInfos": infos(signal)}]}

    def buffer(handle: int, usage: int) -> list[tuple[str, dict]]:
        return [("vkCreateBuffer", {"device": 2, "pBuffer": handle, "pCreateInfo": {
                    "size": 256, "usage": usage, "sharingMode": "VK_SHARING_MODE_CONCURRENT"}}),
                ("vkBindBufferMemory", {"device": 2, "buffer": handle, "memory": 20, "memoryOffset": handle * 256})]

    coherent = {"memoryTypes": [{"propertyFlags": 0x2 | 0x4}]}  # host-visible, host-coherent
    calls = [("vkGetPhysicalDeviceMemoryProperties", {"physicalDevice": 1, "pMemoryProperties": coherent}),
             ("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 0, "pQueue": 3}),
             ("vkGetDeviceQueue", {"device": 2, "queueFamilyIndex": 0, "queueIndex": 1, "pQueue": 9}),
             ("vkAllocateMemory", {"device": 2, "pMemory": 20, "pAllocateInfo": {
                 "allocationSize": 1024, "memoryTypeIndex": 0, "pNext": None}}),
             *buffer(0, 0x21), *buffer(1, 0x2),  # a storage buffer (and copy source), a staging buffer
             ("vkMapMemory", {"device": 2, "memory": 20, "offset": 0, "size": 1024}),
             ("vkBeginCommandBuffer", {"commandBuffer": 40}),
             ("vkCmdCopyBuffer", {"commandBuffer": 40, "srcBuffer": 0, "dstBuffer": 1,
                                  "pRegions": [{"srcOffset": 0, "dstOffset": 0, "size": 256}]}),
             ("vkEndCommandBuffer", {"commandBuffer": 40}),
             _timeline(2, 4),
             ("vkCreateFence", {"device": 2, "pFence": 50, "pCreateInfo": {"flags": 0}}),
             submit(9, [40], [], [(4, 1)], "VK_NULL_HANDLE"),
             ("vkQueueWaitIdle", {"queue": 3}),
             submit(3, [], [(4, 1)], [], 50),
             ("vkWaitForFences", {"device": 2, "fenceCount": 1, "pFences": [50], "waitAll": 1})]
    stream, _ = import_capture(_jsonl(tmp_path / "chain.jsonl", calls))
    labels = [op.label for op in stream.threads[0].ops]
    assert labels[-2:] == ["vkWaitForFences #19", f"{ASSUMED} (readback) after vkWaitForFences #19"]
    (finding,) = check(stream)
    assert finding.kind == "raw" and finding.labels == ("vkCmdCopyBuffer #12", labels[-1])
