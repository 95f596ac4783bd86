"""Runtime mutation of the staged uploader (issue 7): `vkverify mutate --target war -- <the
uploader's test command>` kills every WAR candidate of the uploader on a short configuration:
64 KiB slots, ~200 KiB uploaded (the slots are reused), a reader on the upload queue before finish.

The slot reuse wait (dropped: the host refills a slot the copy may still read: a WAR pair) and
the uploader's submits (its barriers) go through the runtime's mutator like the program's own."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from vkverify.runtime.mutate import read_list

pytest.importorskip("vulkan")

PROGRAM = '''
import hashlib

import numpy as np

from vkverify.check import check
from vkverify.runtime import Runtime
from vkverify.runtime.uploads import Uploader

SIZE = 200 << 10


def test_staged_upload_through_reused_slots(monkeypatch):
    monkeypatch.setenv("VKVERIFY_STAGED", "1")
    data = np.random.default_rng(7).integers(0, 256, SIZE, dtype=np.uint8)
    with Runtime() as rt, Uploader(rt, slots=2, slot_size=64 << 10) as up:
        up.upload("W", 0, data)
        rt.create_buffer("Tail", 4096, "host_coherent")  # read on the upload queue before finish()
        rt.command_buffer("reader").cmd_copy_buffer("W", "Tail", [(SIZE - 4096, 0, 4096)])
        rt.submit("q0", ["reader"])
        up.finish()
        rt.device_idle()
        digest = hashlib.sha256(rt.read_back("W")[:SIZE]).hexdigest()
        tail = rt.read_back("Tail")
        stream = up.stream()
    assert digest == hashlib.sha256(data).hexdigest()
    assert tail == data[-4096:].tobytes()
    assert check(stream) == []
'''


def _program(tmp_path):
    path = tmp_path / "test_up.py"
    path.write_text(PROGRAM)
    return path


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_uploader_candidates_are_listed(device_name, tmp_path):
    listing = tmp_path / "candidates.tsv"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(_program(tmp_path))]
    done = subprocess.run(argv, env=_env(VKVERIFY_MUTATE=f"list:{listing}"), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    found = {(c.target, c.operator, c.op, c.description) for c in read_list(str(listing))}
    waits = {(t, op) for t, o, op, d in found if o == "drop_host_wait" and "'slot reuse wait'" in d}
    # 2 reuse waits (4 fills of 2 slots), each under war and fence
    assert {t for t, _ in waits} == {"war", "fence"} and len(waits) == 4, found
    # The uploader's submits are asked too: the fill barrier of its first slot orders the fill before
    # that slot's copies (waw). Its landing barriers are not candidates here: at their submit no reader
    # exists yet, and the reader is ordered by the last slot's landing barrier alone.
    assert ("waw", "drop_barrier", "upload.cb0[1]") in {(t, o, op) for t, o, op, _ in found}, found


def test_every_war_candidate_of_the_uploader_dies(device_name, tmp_path):
    argv = [sys.executable, "-m", "vkverify.cli", "mutate", "--target", "war", "-j", "2", "--",
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(_program(tmp_path))]
    done = subprocess.run(argv, env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and " 0 survivors" in done.stdout, done.stdout + done.stderr[-2000:]
    mutants = int(done.stdout.split(" mutants,")[0].split()[-1])
    assert mutants >= 1, done.stdout
