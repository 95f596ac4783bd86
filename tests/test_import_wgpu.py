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


def readback_reuse(finding) -> bool:
    """The one finding on wgpu, adjudicated true by the memory model (memorymodel.adoc, Location-Ordered):
    a copy writes a readback buffer; wgpu waits on its semaphore and maps it, but never records a barrier
    with dst host (wgpu-core drains and drops the MAP_READ transition), so no device-to-host domain
    operation exists. The capture layer's `fill memory` then writes the page back through the next buffer
    bound to the same memory: a host write after a device write with no DOM(device, host) between them.
    (wgpu's own host reads of the page have the same gap, but a capture does not record reads.)"""
    return (finding.kind == "waw" and finding.first_access == "copy/transfer_write"
            and finding.second_access == "host/host_write" and finding.labels[1].startswith("fill memory")
            and "dst host/host_write" in finding.fix)


def test_wgpu_passes_import_with_only_the_adjudicated_findings(wgpu_stream):
    stream, summary = wgpu_stream
    assert summary.commands["dispatch"] == 24  # one per pass
    assert summary.commands["barrier"] >= 24 and summary.submits >= 4
    # Nothing outside the mapping: no skipped call, no warning that the stream misses an ordering.
    assert not summary.skipped and not summary.warnings
    findings = check(stream)
    # wgpu_passes.py reads back three buffers; the two later readback buffers reuse the first's memory.
    assert len(findings) == 2 and all(map(readback_reuse, findings)), findings


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
