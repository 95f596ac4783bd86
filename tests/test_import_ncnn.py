"""A third-party program: examples/thirdparty/ncnn_layers.py (ncnn, use_vulkan_compute) captured, imported
and checked."""

from __future__ import annotations

import pytest

from ._thirdparty import captured
from .differential import disagreements

from vkverify.check import check
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
