"""Every example of the user guides in docs/ runs, in a folder of its own, as a reader would run it.

A guide's fenced blocks, in order: ```python file=NAME``` is written to NAME; ```python``` runs as a
script and must exit 0; each line of ```sh``` runs in bash and must exit 0, or N where the line ends
with `# exit N`; in ```yaml``` (a CI workflow), each `run:` line that calls vkverify runs with the
matrix's first value. The folder links examples/ and tests/ of this checkout, and PATH starts with
this interpreter's bin/, so `python` and `vkverify` are the ones under test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, python_path, require_gfxreconstruct

GUIDES = ("runtime.md", "testing.md", "capture.md", "optimize.md")
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
EXIT = re.compile(r"\s+#\s*exit (\d+)\s*$")


def blocks(text: str) -> list[tuple[str, str, str]]:
    """(language, info after it, body) of each fenced block."""
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(text)]


def shell_lines(language: str, body: str) -> list[str]:
    if language == "sh":
        return [line for line in body.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if language == "yaml":
        runs = (m.group(1) for m in re.finditer(r"^\s*-?\s*run:\s*(.+)$", body, re.MULTILINE))
        return [re.sub(r"\$\{\{\s*matrix\.\w+\s*\}\}", "1", run) for run in runs if run.startswith("vkverify ")]
    return []


def run_guide(guide: str, folder: Path) -> list[str]:
    """Runs the guide's examples in `folder`; returns what each ran, for the test's message."""
    for name in ("examples", "tests"):
        (folder / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_") and k != "PYTEST_CURRENT_TEST"}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=python_path())
    ran = []
    for n, (language, info, body) in enumerate(blocks((ROOT / "docs" / guide).read_text())):
        if language == "python" and info.startswith("file="):
            (folder / info.removeprefix("file=")).write_text(body)
            continue
        if language == "python":
            script = folder / f"example_{n}.py"
            script.write_text(body)
            commands = [(f"python {script.name}", 0)]
        else:
            commands = [(EXIT.sub("", line), int(m.group(1)) if (m := EXIT.search(line)) else 0)
                        for line in shell_lines(language, body)]
        for command, expected in commands:
            done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=600, check=False)
            assert done.returncode == expected, (f"docs/{guide}: `{command}` exited {done.returncode}, expected "
                                                 f"{expected}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            ran.append(command)
    return ran


@pytest.mark.parametrize("guide", GUIDES)
def test_every_example_of_the_guide_runs(guide, tmp_path, device_name):
    if guide == "capture.md":
        require_gfxreconstruct()
    ran = run_guide(guide, tmp_path)
    assert ran, f"docs/{guide} has no example"


def test_the_guides_examples_are_found():
    """The extraction the test above relies on: the blocks each guide is known to hold."""
    found = {guide: [(language, info) for language, info, _ in blocks((ROOT / "docs" / guide).read_text())]
             for guide in GUIDES}
    assert found["runtime.md"].count(("python", "")) == 5 and ("sh", "") in found["runtime.md"]
    assert ("python", "file=test_frame.py") in found["testing.md"] and ("yaml", "") in found["testing.md"]
    yaml = next(body for language, _, body in blocks((ROOT / "docs" / "testing.md").read_text()) if language == "yaml")
    assert [line.split(" --")[0] for line in shell_lines("yaml", yaml)] == ["vkverify mutate"]
    assert ("python", "file=program.py") in found["capture.md"]


def test_the_readme_points_to_the_guides():
    readme = (ROOT / "README.md").read_text()
    for guide in GUIDES:
        assert f"docs/{guide}" in readme, guide
