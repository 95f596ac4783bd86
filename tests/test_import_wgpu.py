"""A third-party program: examples/thirdparty/wgpu_passes.py (24 compute passes through wgpu-native)
captured, imported and checked; dropping any load-bearing barrier of the imported stream is found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import require_gfxreconstruct

from vkverify.check import check
from vkverify.importer import capture_env, import_capture
from vkverify.importer.readback import ASSUMED
from vkverify.model import ir
from vkverify.model.refs import split_ref
from vkverify.mutations import analyze
from vkverify.mutations.operators import drop_command, translate

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wgpu_stream(tmp_path_factory):
    try:
        import wgpu  # noqa: F401
    except ImportError as e:
        pytest.skip(f"wgpu cannot be imported ({e}); tools/test.sh installs it: pip install -e '.[thirdparty]'")
    require_gfxreconstruct()
    out = tmp_path_factory.mktemp("wgpu") / "passes.gfxr"
    done = subprocess.run([sys.executable, str(ROOT / "examples/thirdparty/wgpu_passes.py")],
                          env=capture_env(out, os.environ), capture_output=True, text=True)
    assert "DIFFERS" not in done.stdout, done.stdout  # ran, but wgpu computed something else than numpy
    if done.returncode != 0:
        pytest.skip(f"wgpu_passes.py did not run here: {done.stderr.strip()[-300:]}")
    return import_capture(out)


def missing_host_barrier(finding) -> bool:
    """The findings on wgpu, adjudicated true by the memory model (memorymodel.adoc, Location-Ordered and
    synchronization.adoc, "Host Write Ordering Guarantees" / host access): a copy writes a readback buffer;
    wgpu waits on its timeline semaphore and the host reads the buffer through its mapping (the assumed
    read: a capture records no reads), but wgpu never records a barrier with dst host / host_read (wgpu-core
    drains and drops the MAP_READ transition). A semaphore wait on the host is an execution dependency only
    ("the access scope of a memory dependency defined by a fence only includes device access"), so no
    domain operation makes the copy's writes available to the host: a read after write."""
    return (finding.kind == "raw" and finding.first_access == "copy/transfer_write"
            and finding.second_access == "host/host_read" and finding.labels[0].startswith("vkCmdCopyBuffer #")
            and finding.labels[1].startswith(f"{ASSUMED} (readback) after ")
            and "src copy/transfer_write -> dst host/host_read" in finding.fix)


def test_wgpu_passes_import_with_only_the_adjudicated_findings(wgpu_stream):
    stream, summary = wgpu_stream
    assert summary.commands["dispatch"] == 24  # one per pass
    assert summary.commands["barrier"] >= 24 and summary.submits >= 4
    # Nothing outside the mapping: no skipped call, no warning that the stream misses an ordering.
    assert not summary.skipped and not summary.warnings
    # The page guard writes back the pages of the readback buffers the host read: reads, not host writes, so
    # the only host writes left are the uploads, before the first wait.
    assert any("fill-memory records are host reads" in a for a in summary.assumed)
    (ops,) = [t.ops for t in stream.threads]
    first_wait = next(i for i, op in enumerate(ops) if isinstance(op, ir.WaitSemaphores))
    assert all(i < first_wait for i, op in enumerate(ops) if isinstance(op, ir.HostAccess) and op.op == "host_write")
    findings = check(stream)
    # wgpu_passes.py reads back three buffers, each after its own copy and semaphore wait.
    assert len(findings) == 3 and all(map(missing_host_barrier, findings)), findings
    assert len({f.buffer for f in findings}) == 3


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
