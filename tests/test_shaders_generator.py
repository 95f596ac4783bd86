"""The SPIR-V generator: `python -m vkverify.shaders build | check`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vkverify.shaders.build import main
from vkverify.shaders.library import SHADER_DIR

pytestmark = pytest.mark.skipif(shutil.which("glslangValidator") is None,
                                reason="glslangValidator not installed")


@pytest.fixture
def shader_copy(tmp_path) -> Path:
    copy = tmp_path / "shaders"
    copy.mkdir()
    for pattern in ("*.comp", "*.glsl", "*.spv"):
        for path in SHADER_DIR.glob(pattern):
            shutil.copy(path, copy)
    return copy


def test_every_source_has_committed_spirv():
    assert {p.stem for p in SHADER_DIR.glob("*.comp")} == {p.stem for p in SHADER_DIR.glob("*.spv")}


def test_check_passes_on_the_package():
    run = subprocess.run([sys.executable, "-m", "vkverify.shaders", "--check"], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == ""


def test_check_names_an_altered_file(shader_copy, capsys):
    altered = shader_copy / "add.spv"
    data = bytearray(altered.read_bytes())
    data[-8] ^= 1
    altered.write_bytes(bytes(data))
    assert main(["check", "--dir", str(shader_copy)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [f"mismatch: {altered} (differs from its source)"]


def test_check_names_missing_and_orphan_spirv(shader_copy, capsys):
    (shader_copy / "copy.spv").unlink()
    (shader_copy / "orphan.spv").write_bytes(b"")
    assert main(["--check", "--dir", str(shader_copy)]) == 1
    out = capsys.readouterr().out
    assert "copy.spv (not committed)" in out and "orphan.spv (no source)" in out


def test_check_names_a_source_that_does_not_compile(shader_copy, capsys):
    (shader_copy / "fill.comp").write_text("#version 450\nvoid main() { nonsense; }\n")
    assert main(["--check", "--dir", str(shader_copy)]) == 1
    captured = capsys.readouterr()
    assert "fill.comp: compile failed" in captured.err
    assert "mismatch" in captured.out and "fill.comp" in captured.out


def test_build_reproduces_the_committed_bytes(shader_copy):
    for path in shader_copy.glob("*.spv"):
        path.unlink()
    assert main(["build", "--dir", str(shader_copy)]) == 0
    for path in SHADER_DIR.glob("*.spv"):
        assert (shader_copy / path.name).read_bytes() == path.read_bytes(), path.name


def test_missing_glslang_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["--check"]) == 2
    assert "glslangValidator not found" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["build", "--check"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "usage" in capsys.readouterr().err
