"""A third-party program: examples/thirdparty/taichi_fields.py (Taichi, arch=vulkan) captured, imported and
checked; every finding adjudicated from the spec text."""

from __future__ import annotations

import pytest

from ._thirdparty import captured, missing_host_barrier
from .differential import disagreements

from vkverify.check import check
from vkverify.model import to_dict


@pytest.fixture(scope="module")
def taichi_stream(tmp_path_factory):
    return captured("taichi", "taichi_fields.py", tmp_path_factory.mktemp("taichi") / "fields.gfxr")


def recycled_readback(finding) -> bool:
    """True by the memory model (mm.adoc, Location-Ordered; sync.adoc, Fences and host access types): Taichi
    frees the readback staging buffer after reading it and binds the next kernel's argument buffer over the
    same bytes, which the host writes. The copy's write was never made available to the host (no barrier
    with dst host after it; a queue idle wait orders execution only), so the host's write after it is a
    write after write."""
    return (finding.kind == "waw" and finding.first_access == "copy/transfer_write"
            and finding.second_access == "host/host_write" and finding.labels[1].startswith("fill memory #")
            and "src copy/transfer_write -> dst host/host_write" in finding.fix)


def adjudicated(finding) -> bool:
    return missing_host_barrier(finding) or recycled_readback(finding)


def test_taichi_has_only_the_adjudicated_findings(taichi_stream):
    """Taichi's SPIR-V carries no NonWritable/NonReadable: its bindings are reflected by use (its ext_arr
    bindings are load-only or store-only), without which a store-only binding would read uninitialized bytes
    and a load-only one would be a write."""
    stream, summary = taichi_stream
    assert summary.commands["dispatch"] == 7  # two uploads, three kernels, two readbacks
    assert not summary.skipped and not summary.warnings and not summary.unresolved
    findings = check(stream)
    assert all(map(adjudicated, findings)), [f for f in findings if not adjudicated(f)]
    # x.to_numpy() and y.to_numpy(): a kernel writes an array, a copy takes it to a staging buffer, a queue
    # idle wait, a read through the mapping; Taichi records no barrier with dst host anywhere.
    assert sum(map(missing_host_barrier, findings)) == 2
    assert sum(map(recycled_readback, findings)) == 1
    assert not disagreements(to_dict(stream))  # the slow reference (spec 7.1 read literally) finds the same
