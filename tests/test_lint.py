"""vkverify/, tests/ and benchmarks/ pass ruff under the project's config (pyproject.toml [tool.ruff])."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def test_ruff_check_is_clean():
    # The venv's own ruff (the test extra pins its version: its default rules are part of the config) first.
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it): the lint check did not run")
    done = subprocess.run([ruff, "check", "--no-cache", "vkverify", "tests", "benchmarks"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
