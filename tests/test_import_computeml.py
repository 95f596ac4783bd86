"""A third-party program: examples/thirdparty/computeml_dense.py (computeml: a tiled matmul, relu and a scale in
one command buffer) captured, imported and checked."""

from __future__ import annotations

import struct

import pytest

from ._thirdparty import captured

from vkverify.check import check
from vkverify.importer.gfxr import read_blocks
from vkverify.model import ir


@pytest.fixture(scope="module")
def computeml_capture(tmp_path_factory):
    path = tmp_path_factory.mktemp("computeml") / "dense.gfxr"
    stream, summary = captured("computeml", "computeml_dense.py", path)
    return path, stream, summary


def test_computeml_dense_layer_has_the_adjudicated_findings(computeml_capture):
    path, stream, summary = computeml_capture
    assert not summary.unresolved and not summary.warnings and not summary.partial
    (cb,) = [cb for cb in stream.command_buffers if cb.commands]
    matmul, relu, scale = [c for c in cb.commands if isinstance(c, ir.Dispatch)]
    barriers = [c for c in cb.commands if isinstance(c, ir.Barrier)]
    # computeml's barriers: one between each pair of kernels, compute_shader -> compute_shader; none to the host.
    assert [(b.src_stage, b.dst_stage) for b in barriers] == [({"compute_shader"}, {"compute_shader"})] * 2
    (read,) = [op for t in stream.threads for op in t.ops if isinstance(op, ir.HostAccess) and op.op == "host_read"]
    wait = next(op for t in stream.threads for op in t.ops if isinstance(op, ir.WaitFences))
    findings = {f.kind: f for f in check(stream)}
    assert sorted(findings) == ["raw"]

    # True: `.numpy()` flushes (a submit with a fence), waits for the fence (vkWaitForFences) and copies the
    # output out of its mapping (the page guard's record of that page is the read). The scale kernel wrote
    # those bytes and no barrier has dst host: sync.adoc, Fences: "Signaling a fence and waiting on the host
    # does not guarantee that the results of memory accesses will be visible to the host, as the access scope
    # of a memory dependency defined by a fence only includes device access. A memory barrier or other memory
    # dependency must be used to guarantee this."
    raw = findings["raw"]
    assert raw.buffer == scale.bindings[1].buffer and scale.bindings[1].access == "write"
    assert (raw.labels, raw.first_access, raw.second_access) == (
        (scale.label, read.label), "compute_shader/shader_storage_write", "host/host_read")
    assert read.label.startswith("fill memory #") and read.label.endswith("(page guard)")
    # The host's wait: vkWaitForFences, or the status read before it where the fence had already signaled (a
    # vkGetFenceStatus that returns VK_SUCCESS is as good as a wait: one CI run in several, by timing).
    assert wait.label.startswith(("vkWaitForFences #", "vkGetFenceStatus #"))
    assert "src compute_shader/shader_storage_write -> dst host/host_read" in raw.fix

    # Not reported since push constants are evaluated as specialization constants are (issue 24): computeml
    # allocates the matmul's output uninitialized (ops.matmul: `_out(ctx, ...)`, Context.empty) and its kernel
    # (the capture's SPIR-V, GLSL names kept) loads C only under `do_acc = (pc.flags & 4u) != 0`, accumulating
    # into it; otherwise it stores. The captured push constants (M, K, N, flags) give flags 0: the load is
    # dead, C is only written, and no uninitialized_read is reported (it was, before).
    assert matmul.bindings[2].access == "write"
    pushes = read_blocks(path).push_constants
    assert struct.unpack("<4I", pushes[min(pushes)]) == (64, 32, 16, 0)  # the matmul's: M, K, N, flags
    assert relu.bindings[0].buffer == matmul.bindings[2].buffer  # relu reads what the matmul wrote
