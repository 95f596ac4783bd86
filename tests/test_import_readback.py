"""Host reads in imported captures (docs/format.md): the readback pattern's read, which no capture records,
assumed after the wait that covers the copy; a page-guard fill of bytes the host only read is no host write;
a capture that lost unflushed host writes (assisted memory tracking) says so. Each on a small program run
under the capture layer: tests/_lavapipe.py's `read_back` (a copy into a staging buffer, a fence wait, a
read through the mapping), with and without a barrier to the host's reads."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.cli import main
from vkverify.importer import call_index, import_capture
from vkverify.importer import readback
from vkverify.importer.translate import ASSUMED_WRITE, INVALIDATED_READ
from vkverify.importer.readback import ASSUMED, READ_SHOWN, WRITE_FRESH
from vkverify.model import ir
from vkverify.mutations.operators import drop_command

from ._thirdparty import missing_host_barrier
from .conftest import compile_glsl
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


# ncnn's output blob: one VkBuffer whose memory the program keeps mapped whole, its blobs at offsets in it. The
# dispatch reads the input blob [0, 64) and writes a 48-byte output blob at 1024; a barrier from the shader's
# writes to host/host_read (tests/_lavapipe.py's `dispatch`), a fence wait, and the host reads the 48 bytes
# through the mapping. The page guard records the whole 4 KiB page.
OUTPUT_BLOB = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer In { uint a[16]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint o[12]; };
void main() { for (uint i = 0u; i < 12u; i++) o[i] = a[i] + a[i + 4u]; }
"""
BLOB_PROGRAM = """
import numpy as np
from pathlib import Path
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
data = np.zeros(1024, np.uint32)
data[:16] = np.arange(16) * 3
buffer, memory = d._buffer(data.tobytes())
d.dispatch(Path({spirv!r}).read_bytes(), [(buffer, 64, 0), (buffer, 48, 1024)], b"", (1, 1, 1))
mapped = d.vk.vkMapMemory(d.device, memory, 0, 4096, 0)
out = np.frombuffer(bytes(mapped[1024:1072]), np.uint32)
d.vk.vkUnmapMemory(d.device, memory)
assert (out == data[:12] + data[4:16]).all(), out
d.vk.vkDestroyBuffer(d.device, buffer, None)
d.vk.vkFreeMemory(d.device, memory, None)
d.close()
"""


@pytest.fixture(scope="module")
def blob_capture(tmp_path_factory) -> Path:
    if shutil.which("glslangValidator") is None:
        pytest.skip("glslangValidator not installed")
    tmp = tmp_path_factory.mktemp("blob")
    return capture(BLOB_PROGRAM.format(spirv=str(compile_glsl(OUTPUT_BLOB, tmp))), tmp / "blob.gfxr")


def test_the_page_of_a_small_output_blob_is_a_host_read_of_the_blob_only(blob_capture):
    """The record of the page the host read is, byte range by byte range: the input blob and the zeros around
    it, which it repeats from the upload's record, no access; the 48 bytes the dispatch wrote and the barrier
    makes available to the host, a host read. Taken whole as a
    host write (before), it was a waw against the dispatch's write: the barrier's dst access is host_read only,
    which makes the write visible to host reads, not to host writes (sync.adoc, "Access Types") - false, for
    the host only read (the program above)."""
    stream, _ = import_capture(blob_capture)
    (read,) = accesses(stream, "host_read")
    assert (read.offset, read.size) == (1024, 48) and read.label.endswith(f": {READ_SHOWN}")
    (write,) = accesses(stream, "host_write")  # the upload
    assert write.label.startswith("fill memory #") and write.label.endswith(WRITE_FRESH)
    assert check(stream) == []


def test_without_the_barrier_the_blob_read_is_a_raw(blob_capture, tmp_path):
    """The same stream less the dispatch's barrier to the host: the inferred host read is a raw against the
    dispatch's write (no memory dependency makes it visible to the host), named by the record's label."""
    stream, _ = import_capture(blob_capture)
    (cb,) = [cb for cb in stream.command_buffers if cb.commands]
    mutant, _ = drop_command(stream, cb.id, next(i for i, c in enumerate(cb.commands) if isinstance(c, ir.Barrier)))
    (finding,) = check(mutant)
    assert (finding.kind, finding.range, finding.second_access) == ("raw", (1024, 1072), "host/host_read")
    assert finding.labels[1].endswith(READ_SHOWN)


# Kompute's logistic regression copies each output into its staging buffer every iteration, and reads some of
# them (tensor.data()), never `l_out`'s. Here: each iteration copies `src` into staging buffers s1 and s2, which
# stay mapped, waits for the fence (no barrier to the host: Kompute's is on the copy's source) and reads s1
# through its mapping; then the program submits once more, or (as Kompute's teardown does) flushes each mapping.
STAGING_PROGRAM = """
import numpy as np
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
vk = d.vk
data = np.arange(1024, dtype=np.uint32)
src = d._buffer(data.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
s1, s2 = (d._buffer(bytes(4096), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT) for _ in range(2))
m1, m2 = (vk.vkMapMemory(d.device, memory, 0, 4096, 0) for _, memory in (s1, s2))

def record(cb):
    regions = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=4096)]
    vk.vkCmdCopyBuffer(cb, src[0], s1[0], 1, regions)
    vk.vkCmdCopyBuffer(cb, src[0], s2[0], 1, regions)

for _ in range(3):
    d._execute(record)
    assert (np.frombuffer(bytes(m1[:4096]), np.uint32) == data).all()
if {flush}:
    for _, memory in (s1, s2):
        ranges = [vk.VkMappedMemoryRange(memory=memory, offset=0, size=4096)]
        vk.vkFlushMappedMemoryRanges(d.device, 1, ranges)
else:
    d._execute(lambda cb: None)
for buffer, memory in (src, s1, s2):
    if memory is not src[1]:
        vk.vkUnmapMemory(d.device, memory)
    vk.vkDestroyBuffer(d.device, buffer, None)
    vk.vkFreeMemory(d.device, memory, None)
d.close()
"""


@pytest.fixture(scope="module", params=["submit", "flush"])
def staging_capture(request, tmp_path_factory) -> Path:
    program = STAGING_PROGRAM.format(flush=request.param == "flush")
    return capture(program, tmp_path_factory.mktemp("staging") / f"{request.param}.gfxr")


def test_no_host_read_is_assumed_on_a_staging_buffer_the_program_never_reads(staging_capture, tmp_path):
    """s1 is read after each wait: the page guard records its page by the next submit, the assumed reads stand,
    and each is a raw (true: sync.adoc, Fences, "Signaling a fence and waiting on the host does not guarantee
    that the results of memory accesses will be visible to the host"; no barrier has dst host). s2 is never read:
    no record covers its bytes before the next copy rewrites them, or the last submit or flush, so no read is
    assumed there (before: a raw per iteration, false, for the program never reads s2). JSON lines carry no
    records to go by: a read is assumed on both."""
    stream, summary = import_capture(staging_capture)
    reads = accesses(stream, "host_read")
    findings = check(stream)
    assert len(reads) == 3 and len({r.buffer for r in reads}) == 1
    assert all(r.label.startswith(f"{ASSUMED} (readback) after vkWaitForFences #") for r in reads)
    assert all(r.label.endswith(readback.CONFIRMED) for r in reads)  # the finding says what the read stands on
    assert len(findings) == 3 and all(map(missing_host_barrier, findings))
    assert {f.buffer for f in findings} == {reads[0].buffer}
    assert any(a.startswith("3 host reads") for a in summary.assumed)
    jsonl = tmp_path / "staging.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(staging_capture)], check=True,
                   capture_output=True)
    reads = accesses(import_capture(jsonl)[0], "host_read")
    assert len(reads) == 6 and len({r.buffer for r in reads}) == 2
    assert all(r.label.endswith(f"after vkWaitForFences #{call_index(r.label)}") for r in reads)


# wgpu's readback: the program reads the staging buffer through its mapping and destroys the buffer (the memory
# stays mapped); the layer writes the record of the read page at the next submit, when no buffer holds its bytes.
DESTROYED_PROGRAM = """
import numpy as np
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
vk = d.vk
data = np.arange(1024, dtype=np.uint32)
src = d._buffer(data.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
staging, memory = d._buffer(bytes(4096), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
mapped = vk.vkMapMemory(d.device, memory, 0, 4096, 0)
region = vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=4096)
d._execute(lambda cb: vk.vkCmdCopyBuffer(cb, src[0], staging, 1, [region]))
assert (np.frombuffer(bytes(mapped[:4096]), np.uint32) == data).all()
vk.vkDestroyBuffer(d.device, staging, None)
d._execute(lambda cb: None)
vk.vkUnmapMemory(d.device, memory)
vk.vkFreeMemory(d.device, memory, None)
vk.vkDestroyBuffer(d.device, src[0], None)
vk.vkFreeMemory(d.device, src[1], None)
d.close()
"""


def test_a_record_of_a_destroyed_buffers_bytes_confirms_the_read(tmp_path):
    """The record at the submit after the destroy holds the bytes the host read, though no buffer holds them any
    more: the assumed read stands on it, and is a raw (no barrier to the host). Before, the record was dropped
    with the buffer gone, and the read was taken as never made (a submit came after its wait with no record):
    wgpu_passes.py lost a readback's finding in a few runs of 60, where its allocator put the next staging
    buffer elsewhere in the memory."""
    stream, _ = import_capture(capture(DESTROYED_PROGRAM, tmp_path / "destroyed.gfxr"))
    (read,) = accesses(stream, "host_read")
    assert read.label.endswith(readback.CONFIRMED), read.label
    (finding,) = check(stream)
    assert missing_host_barrier(finding) and finding.buffer == read.buffer


def test_docs_name_what_each_inferred_access_is_inferred_from(root):
    """docs/format.md, "Host reads in imported captures", gives every label the walk puts on an inferred access."""
    text = " ".join((root / "docs" / "format.md").read_text().split())
    labels = [READ_SHOWN, WRITE_FRESH, readback.WRITE_CHANGED, readback.WRITE_RECYCLED, readback.WRITE_REUSED,
              readback.WRITE_UNWAITED, readback.WRITE_FLUSHED, f"{ASSUMED} (readback) after", readback.CONFIRMED,
              readback.UNCONFIRMED, ASSUMED_WRITE, INVALIDATED_READ]
    assert [label for label in labels if label not in text] == []
