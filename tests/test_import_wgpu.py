"""A third-party program: examples/thirdparty/wgpu_passes.py (24 compute passes through wgpu-native)
captured, imported and checked; dropping any load-bearing barrier of the imported stream is found."""

from __future__ import annotations

import pytest

from ._thirdparty import captured, missing_host_barrier
from .differential import disagreements

from vkverify.check import check
from vkverify.model import ir, to_dict
from vkverify.model.refs import split_ref
from vkverify.mutations import analyze
from vkverify.mutations.operators import drop_command, translate


@pytest.fixture(scope="module")
def wgpu_stream(tmp_path_factory):
    return captured("wgpu", "wgpu_passes.py", tmp_path_factory.mktemp("wgpu") / "passes.gfxr")


def test_wgpu_passes_import_with_only_the_adjudicated_findings(wgpu_stream):
    stream, summary = wgpu_stream
    assert summary.commands["dispatch"] == 24  # one per pass
    assert summary.commands["barrier"] >= 24 and summary.submits >= 4
    # Nothing outside the mapping: no skipped call, no warning that the stream misses an ordering.
    assert not summary.skipped and not summary.warnings and not summary.unresolved
    # The page guard writes back the pages of the readback buffers the host read: reads, not host writes, so
    # the only host writes left are the uploads, before the first wait.
    assert any("fill-memory records are host reads" in a for a in summary.assumed)
    (ops,) = [t.ops for t in stream.threads]
    first_wait = next(i for i, op in enumerate(ops) if isinstance(op, ir.WaitSemaphores))
    assert all(i < first_wait for i, op in enumerate(ops) if isinstance(op, ir.HostAccess) and op.op == "host_write")
    findings = check(stream)
    # wgpu_passes.py reads back three buffers, each after its own copy and semaphore wait; wgpu never records
    # a barrier with dst host (wgpu-core drains and drops the MAP_READ transition).
    assert len(findings) == 3 and all(map(missing_host_barrier, findings)), findings
    assert len({f.buffer for f in findings}) == 3
    assert not disagreements(to_dict(stream))  # the slow reference (spec 7.1 read literally) finds the same


def test_dropping_each_load_bearing_barrier_is_found(wgpu_stream):
    """Every barrier the happens-before model finds load-bearing, dropped from the imported stream, gives
    findings, and only on pairs that barrier alone ordered."""
    stream, _ = wgpu_stream
    before = {(f.kind, f.first, f.second) for f in check(stream)}
    analysis = analyze(stream)
    barriers = [head for head, rest in map(split_ref, sorted(analysis.load_bearing))
                if head.owner in stream.index.command_buffers and not rest]  # whole barriers, not one entry
    assert len(barriers) >= 20  # most of the 24 passes depend on the one before, through wgpu's barrier
    for barrier in barriers:
        mutant, refmap = drop_command(stream, barrier.owner, barrier.index)
        found = {(f.kind, translate(f.first, refmap), translate(f.second, refmap))
                 for f in check(mutant) if f.first} - before
        ordered = {(p.kind, p.first.ref, p.second.ref) for p in analysis.load_bearing[str(barrier)]}
        assert found and found <= ordered, str(barrier)
