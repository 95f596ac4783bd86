"""Test support: run a program of examples/thirdparty/ under the capture layer and import its capture."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vkverify.check import Finding
from vkverify.importer import ImportSummary, capture_env, import_capture
from vkverify.importer.readback import ASSUMED
from vkverify.model import ir

from .conftest import ROOT, require_gfxreconstruct


def captured(package: str, program: str, out: Path) -> tuple[ir.Stream, ImportSummary]:
    """examples/thirdparty/`program`, which uses `package`, captured into `out` and imported. Skips, saying
    why, where the package cannot be imported (tools/test.sh installs the `thirdparty` extra) or the
    program cannot run here; fails where it ran and computed something else than numpy."""
    try:
        importlib.import_module(package)
    except ImportError as e:
        pytest.skip(f"{package} cannot be imported ({e}); tools/test.sh installs it: pip install -e '.[thirdparty]'")
    require_gfxreconstruct()
    done = subprocess.run([sys.executable, str(ROOT / "examples/thirdparty" / program)],
                          env=capture_env(out, os.environ), capture_output=True, text=True, check=False)
    assert "DIFFERS" not in done.stdout, done.stdout
    if done.returncode != 0:
        pytest.skip(f"{program} did not run here: {done.stderr.strip()[-300:]}")
    return import_capture(out)


def missing_host_barrier(finding: Finding) -> bool:
    """A readback without a barrier to the host, adjudicated true by the memory model: a copy writes a
    staging buffer; the program waits for it (a fence, a semaphore or an idle wait) and the host reads the
    buffer through its mapping (the assumed read: a capture records no reads), with no barrier with dst
    host / host_read between. sync.adoc, Fences: "Signaling a fence and waiting on the host does not
    guarantee that the results of memory accesses will be visible to the host, as the access scope of a
    memory dependency defined by a fence only includes device access. A memory barrier or other memory
    dependency must be used to guarantee this" (a semaphore or idle wait on the host likewise): no domain
    operation makes the copy's writes available to the host (mm.adoc, Location-Ordered): a read after
    write."""
    return (finding.kind == "raw" and finding.first_access == "copy/transfer_write"
            and finding.second_access == "host/host_read" and finding.labels[0].startswith("vkCmdCopyBuffer #")
            and finding.labels[1].startswith(f"{ASSUMED} (readback) after ")
            and "src copy/transfer_write -> dst host/host_read" in finding.fix)
