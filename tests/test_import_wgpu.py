"""A third-party program: examples/thirdparty/wgpu_passes.py (24 compute passes through wgpu-native)
captured, imported and checked; dropping one load-bearing barrier of the imported stream is found."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.importer import import_capture

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wgpu_stream(tmp_path_factory):
    try:
        import wgpu  # noqa: F401
    except ImportError as e:
        pytest.skip(f"wgpu cannot be imported ({e}); pip install wgpu")
    if shutil.which("gfxrecon-convert") is None:
        pytest.skip("GFXReconstruct (gfxrecon-convert) is not installed")
    out = tmp_path_factory.mktemp("wgpu") / "passes.gfxr"
    env = dict(os.environ, VK_INSTANCE_LAYERS="VK_LAYER_LUNARG_gfxreconstruct", GFXRECON_CAPTURE_FILE=str(out),
               GFXRECON_CAPTURE_FILE_TIMESTAMP="false", GFXRECON_PAGE_GUARD_ALIGN_BUFFER_SIZES="true")
    done = subprocess.run([sys.executable, str(ROOT / "examples/thirdparty/wgpu_passes.py")], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"wgpu_passes.py did not run here: {done.stderr.strip()[-300:]}")
    return import_capture(out)


def test_wgpu_passes_import_without_findings(wgpu_stream):
    stream, summary = wgpu_stream
    assert summary.commands["dispatch"] == 24 and summary.commands["barrier"] >= 24
    assert summary.submits >= 4
    assert check(stream) == []


def test_dropping_a_load_bearing_barrier_is_found(wgpu_stream):
    """wgpu puts one barrier before each pass; the first whose removal the checker notices is reported
    as a hazard between two of the program's own calls."""
    stream, _ = wgpu_stream
    for cb_index, cb in enumerate(stream.command_buffers):
        for i, c in enumerate(cb.commands):
            if not c.label.startswith("vkCmdPipelineBarrier") or "compute_shader" not in c.dst_stage:
                continue
            cbs = list(stream.command_buffers)
            cbs[cb_index] = replace(cb, commands=cb.commands[:i] + cb.commands[i + 1:])
            findings = check(replace(stream, command_buffers=tuple(cbs)))
            if findings:
                assert {f.kind for f in findings} <= {"raw", "war", "waw"}
                assert all(label.startswith(("vkCmd", "fill memory")) for f in findings for label in f.labels)
                return
    pytest.fail("no barrier before a dispatch is load-bearing")
