"""benchmarks/uploads.py's table on Lavapipe (issue 18): every row and the targets line come
out of one run. Speed is not asserted here: the H200 numbers come from benchmarks/device_uploads.sh."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT, python_path


def test_upload_table_runs(device_name, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "uploads.py"), "--mib", "4", "--runs", "1",
                           "--also", "2x1"], env={**env, "PYTHONPATH": python_path(), "TMPDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "every path's destination read back equal to the data after its last run", done.stdout
    rows = ["raw", "ceiling", "staged", "staged 2x1", "file", "file direct", "hand-off", "in place", "mapped"]
    assert [line[2:16].strip() for line in lines[3:-1]] == rows, done.stdout
    assert "submit+wait" in lines[5] and lines[-1].startswith("  targets (median of the rounds' ratios")
