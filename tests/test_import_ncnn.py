"""Third-party programs: examples/thirdparty/ncnn_layers.py and ncnn_pooling.py (ncnn, use_vulkan_compute)
captured, imported and checked."""

from __future__ import annotations

import pytest

from ._thirdparty import captured
from .differential import disagreements

from vkverify.check import check
from vkverify.importer.readback import READ_SHOWN
from vkverify.model import ir, to_dict


@pytest.fixture(scope="module")
def ncnn_stream(tmp_path_factory):
    return captured("ncnn", "ncnn_layers.py", tmp_path_factory.mktemp("ncnn") / "layers.gfxr")


def test_ncnn_resolves_every_dispatch_and_orders_its_readback(ncnn_stream):
    """ncnn binds its buffers with vkCmdPushDescriptorSetWithTemplateKHR, and reads its output blob through
    its mapping (no staging copy: Lavapipe's memory is device-local and host-visible) after a barrier from
    the compute shader to the host and a fence wait. The page guard records that read as a fill of the
    page: a host read, ordered by the barrier. No hazard."""
    stream, summary = ncnn_stream
    assert summary.commands["dispatch"] == 4  # the input's packing and the three layers
    assert not summary.unresolved and not summary.warnings
    assert all(c.bindings for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.Dispatch))
    barriers = [c for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.Barrier)]
    assert any("host" in b.dst_stage for b in barriers)
    (read,) = [op for t in stream.threads for op in t.ops if isinstance(op, ir.HostAccess) and op.op == "host_read"]
    assert read.label.startswith("fill memory #") and read.label.endswith("(page guard)")
    assert check(stream) == []
    assert not disagreements(to_dict(stream))  # nor does the slow reference (spec 7.1 read literally)


@pytest.fixture(scope="module")
def pooling_stream(tmp_path_factory):
    return captured("ncnn", "ncnn_pooling.py", tmp_path_factory.mktemp("ncnn") / "pooling.gfxr")


def test_ncnn_small_output_blob_page_is_a_host_read_of_the_blob(pooling_stream):
    """examples/thirdparty/ncnn_pooling.py: a 48-byte output blob in a page of ncnn's blob buffer whose other
    bytes are the layers' intermediate blobs. The page guard records the page the host read; taken whole as a
    host write, it gave a waw against each dispatch that wrote an intermediate blob in it (2 here; 9 on a
    user's larger network): false, for ncnn only reads the output (`extract` downloads it through the
    mapping), and its barrier from the shader's writes to host/host_read over the output blob makes them
    visible to that read (sync.adoc, buffer memory barriers: the access scopes are limited to the range). Read
    range by range, the record is a host read of the 48 bytes, nothing of the intermediate blobs (each read by
    the next layer since it was written), and a host write of the never-written rest. No hazard."""
    stream, summary = pooling_stream
    assert summary.commands["dispatch"] >= 3 and not summary.unresolved and not summary.warnings
    (read,) = [op for t in stream.threads for op in t.ops if isinstance(op, ir.HostAccess) and op.op == "host_read"]
    assert read.size == 48 and read.label.startswith("fill memory #") and read.label.endswith(READ_SHOWN)
    # The bytes the dispatches wrote beside the blob are no host access of the record.
    written = [(b.offset, b.offset + b.size) for cb in stream.command_buffers for c in cb.commands
               if isinstance(c, ir.Dispatch) for b in c.bindings if b.buffer == read.buffer and b.access != "read"]
    record = [op for t in stream.threads for op in t.ops if isinstance(op, ir.HostAccess)
              and op.label.startswith(read.label.split(":")[0] + ":")]
    assert not any(op.op == "host_write" and op.offset < hi and lo < op.offset + op.size
                   for op in record for lo, hi in written)
    assert check(stream) == []
    assert not disagreements(to_dict(stream))
