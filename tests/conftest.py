from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vkverify.model import ir

ROOT = Path(__file__).resolve().parent.parent
# A downstream project that tests/test_gate.py runs in a copy: its conftest must not join this suite's.
collect_ignore = ["downstream"]
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.json"))
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


def image_binding_accesses(stream) -> list[str]:
    """The access of each image binding of the stream's dispatches (a binding with subresources: model/ir.py)."""
    return [b.access for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.Dispatch)
            for b in c.bindings if b.subresources is not None]


def python_path() -> str:
    """PYTHONPATH for a process a test starts: this checkout first, then the environment's (a machine whose
    packages come through PYTHONPATH, as the device machines' do, needs them in the process too)."""
    return os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.fixture(autouse=True)
def imported_documents_valid(monkeypatch):
    """Every capture a test imports in this process (`vkverify import` in-process too): the translator's document
    passes the value and schema checks that the import skips for speed (importer._stream, and `vkverify import`,
    which writes the document unloaded), and gives the stream the import gave."""
    from vkverify import importer
    from vkverify.model import from_dict

    unchecked = importer.import_document

    def checked(path, *args, **kwargs):
        doc, summary = unchecked(path, *args, **kwargs)
        file = str(path)
        stream = importer._stream(doc, file)  # first: it makes the captured bytes text
        assert from_dict(doc, file) == stream, f"{file}: the strict load of the document differs"
        return doc, summary

    monkeypatch.setattr(importer, "import_document", checked)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def device_name() -> str:
    """The Vulkan device the runtime tests run on; they skip, saying why, where there is none."""
    runtime = pytest.importorskip("vkverify.runtime")
    try:
        with runtime.Runtime() as rt:
            return rt.device.name
    except runtime.NoDevice as error:
        pytest.skip(f"no Vulkan ICD: {error}")


@pytest.fixture(scope="module")
def compute_device():
    """A device created with the `vulkan` package directly (tests/_lavapipe.py), as an engine does."""
    from tests._lavapipe import ComputeDevice, NoDevice

    try:
        device = ComputeDevice()
    except NoDevice as error:
        pytest.skip(f"no Vulkan ICD found: {error}")
    yield device
    device.close()


def require_gfxreconstruct() -> None:
    """Import tests need GFXReconstruct; tools/install.sh installs it, so in CI its absence is a failure."""
    if shutil.which("gfxrecon-convert") is None:
        message = "GFXReconstruct (gfxrecon-convert) is not installed; tools/install.sh installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def compile_glsl(source: str, directory: Path) -> Path:
    """`source`, a compute shader, compiled by glslangValidator into directory/k.spv."""
    import subprocess

    (directory / "k.comp").write_text(source)
    subprocess.run(["glslangValidator", "-V", "-o", str(directory / "k.spv"), str(directory / "k.comp")],
                   check=True, capture_output=True)
    return directory / "k.spv"


@pytest.fixture(scope="session")
def small_capture(tmp_path_factory) -> tuple[Path, list[str]]:
    """A .gfxr of tests/test_import.py's `add` program and its converter lines (the bad-input tests break them)."""
    import subprocess

    from .test_import import PROGRAM, capture

    tmp = tmp_path_factory.mktemp("capture")
    gfxr = capture(PROGRAM, tmp / "add.gfxr")
    jsonl = tmp / "add.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(gfxr)], check=True, capture_output=True)
    return gfxr, jsonl.read_text().splitlines()
