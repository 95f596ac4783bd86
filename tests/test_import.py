"""The GFXReconstruct importer: a small Vulkan program captured at test time, imported and checked;
bad captures rejected with one line and exit 2; the flag tables."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.cli import main
from vkverify.importer import CaptureError, import_capture
from vkverify.importer.flags import access_names, memory_kind, stage_names

ROOT = Path(__file__).resolve().parent.parent
# tests/_lavapipe.py runs `add` (c = a + b) with a compute->host barrier after the dispatch and a fence wait.
PROGRAM = """
import numpy as np
from tests._lavapipe import ComputeDevice
from vkverify.shaders import interface, load_spirv, pack_push
d = ComputeDevice()
n = 16
d.run(load_spirv("add"), [np.arange(n, dtype=np.float32)] * 2 + [np.zeros(n, np.float32)],
      pack_push(interface("add"), [n]), (1, 1, 1))
d.close()
"""


def capture(program: str, out: Path) -> Path:
    if shutil.which("gfxrecon-convert") is None:
        pytest.skip("GFXReconstruct (gfxrecon-convert) is not installed")
    env = dict(os.environ, VK_INSTANCE_LAYERS="VK_LAYER_LUNARG_gfxreconstruct", GFXRECON_CAPTURE_FILE=str(out),
               GFXRECON_CAPTURE_FILE_TIMESTAMP="false", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        pytest.skip(f"the program did not run under the capture layer: {done.stderr.strip()[-300:]}")
    return out


@pytest.fixture(scope="module")
def add_capture(tmp_path_factory) -> Path:
    return capture(PROGRAM, tmp_path_factory.mktemp("cap") / "add.gfxr")


def test_gfxr_maps_dispatch_barrier_submit_and_host_writes(add_capture):
    stream, summary = import_capture(add_capture)
    (cb,) = [cb for cb in stream.command_buffers if cb.commands]
    dispatch, barrier = cb.commands
    assert dispatch.label.startswith("vkCmdDispatch #")
    assert [b.access for b in dispatch.bindings] == ["read", "read", "write"]  # from the SPIR-V's decorations
    assert (barrier.src_stage, barrier.src_access) == ({"compute_shader"}, {"shader_write"})
    assert (barrier.dst_stage, barrier.dst_access) == ({"host"}, {"host_read"})
    assert summary.host_ops["submit"] == 1 and summary.host_ops["wait_fences"] == 1
    assert summary.host_ops["host_write"] >= 3  # the three uploads, from the fill-memory records
    assert {b.memory for b in stream.buffers} == {"device_host_visible"}  # Lavapipe's one memory type
    assert check(stream) == []


def test_jsonl_assumes_host_writes_and_read_write_without_spirv(add_capture, tmp_path):
    jsonl = tmp_path / "add.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(add_capture)], check=True, capture_output=True)
    stream, summary = import_capture(jsonl)
    assert summary.assumed and "host write of the whole mapped range" in summary.assumed[0]
    assert any("read_write" in w for w in summary.warnings)
    dispatch = next(c for cb in stream.command_buffers for c in cb.commands if c.label.startswith("vkCmdDispatch"))
    assert {b.access for b in dispatch.bindings} == {"read_write"}


def test_cli_import_and_check_accept_captures(add_capture, tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["import", str(add_capture), "-o", str(out)]) == 0
    assert "imported" in capsys.readouterr().err
    assert main(["check", str(out)]) == 0
    assert main(["check", str(add_capture)]) == 0


def _bad(tmp_path: Path, add_capture: Path) -> dict[str, Path]:
    truncated = tmp_path / "cut.gfxr"
    truncated.write_bytes(add_capture.read_bytes()[:3000])
    jsonl = tmp_path / "full.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(add_capture)], check=True, capture_output=True)
    lines = jsonl.read_text().splitlines()
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join([lines[0].replace('"json-version":"0.8.0"', '"json-version":"1.0.0"')] + lines[1:]))
    nodev = tmp_path / "nodev.jsonl"
    nodev.write_text("\n".join(line for line in lines if "vkCreateDevice" not in line))
    return {"truncated": truncated, "json-version": other, "vkCreateDevice": nodev}


@pytest.mark.parametrize("case", ["truncated", "json-version", "vkCreateDevice"])
def test_bad_captures_exit_2_with_one_line(add_capture, tmp_path, capsys, case):
    path = _bad(tmp_path, add_capture)[case]
    with pytest.raises(CaptureError):
        import_capture(path)
    for argv in (["import", str(path)], ["check", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and case.split("-")[0].lower() in err[0].lower() and "Traceback" not in err[0]


def test_flag_tables():
    assert stage_names(0x800 | 0x1000) == ["compute_shader", "transfer"]
    assert stage_names(0x80) == ["none"]  # fragment shader: no compute or transfer work there
    assert stage_names(0x100000000 | 0x800000000) == ["clear", "copy"]
    assert access_names(0x40 | 0x2000) == ["host_read", "shader_write"]
    assert access_names(0x400000000) == ["shader_storage_write"]
    assert [memory_kind(f) for f in (0x1, 0x6, 0x2, 0xF)] == [
        "device_local", "host_coherent", "host_cached", "device_host_visible"]
