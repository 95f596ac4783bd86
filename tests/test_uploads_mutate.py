"""Runtime mutation of the staged uploader (issue 7): `vkverify mutate -- <the uploader's test
command>` kills every candidate of the uploader on a short configuration: 64 KiB slots, ~200 KiB
uploaded (4 slot submits, both slots reused), a dispatch on the upload queue reading the last
slot's bytes before finish().

The candidates, by the happens-before model:
- the slot reuse waits (war, fence): dropped, the host refills a slot the copy may still read;
- the last slot's landing barrier (raw): the reader is submitted on the upload queue with no
  host wait in between, so that barrier alone makes the copy's writes visible to it. The earlier
  slots' landing barriers are not candidates: a reader of their bytes after upload() returns is
  also ordered by the next slot's (a global barrier on the same queue) and by the reuse waits;
  the probe that numbers them at their submit stands for a reader that never comes (the list run
  drops them, see vkverify/mutations/live.py). After finish() no landing barrier is, on any
  queue: a fence signal makes every device write available, and a submit after the host's wait
  makes available writes visible to all its device accesses (the checker's submit acquires the
  host's clock for every stage's visibility); a semaphore to another queue is a full memory
  dependency of its own (docs/format.md, rule 6).
- the fill barrier of the fresh block (waw): the zero fill before the first slot's copies.
The landing barrier orders transfer writes before later reads and writes, RAW and WAW pairs, so it
counts under target raw, not war; the gate therefore runs `--target all`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import python_path
from vkverify.mutations.gate import read_list
from vkverify.mutations.live import Selection, environment

pytest.importorskip("vulkan")

PROGRAM = '''
import hashlib

import numpy as np

from vkverify.check import check
from vkverify.runtime import Runtime
from vkverify.runtime.uploads import Uploader

SIZE, TAIL = 200 << 10, 4096


def test_staged_upload_through_reused_slots(monkeypatch):
    monkeypatch.setenv("VKVERIFY_STAGED", "1")
    data = np.random.default_rng(7).integers(0, 256, SIZE, dtype=np.uint8)
    with Runtime() as rt, Uploader(rt, slots=2, slot_size=64 << 10) as up:
        up.upload("W", 0, data)
        rt.create_buffer("Tail", TAIL, "host_coherent")
        reader = rt.command_buffer("reader")  # on the upload queue, before finish()
        reader.cmd_dispatch("copy", [{"buffer": "W", "offset": SIZE - TAIL, "size": TAIL}, "Tail"], (4, 1, 1),
                            push=[TAIL // 4])
        rt.submit("q0", ["reader"])
        up.finish()
        rt.device_idle()
        digest = hashlib.sha256(rt.read_back("W")[:SIZE]).hexdigest()
        tail = rt.read_back("Tail")
        stream = up.stream()
    assert digest == hashlib.sha256(data).hexdigest()
    assert tail == data[-TAIL:].tobytes()
    assert check(stream) == []
'''


def _pytest(tmp_path) -> list[str]:
    path = tmp_path / "test_up.py"
    path.write_text(PROGRAM)
    # Plain asserts: rewriting every vkverify module (the pytest11 plugin's package) costs ~2 s a run.
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--assert=plain", str(path)]


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}
    return {**env, "PYTHONPATH": python_path(), **extra}


def test_uploader_candidates_are_listed(device_name, tmp_path):
    listing = tmp_path / "candidates.jsonl"
    done = subprocess.run(_pytest(tmp_path), env=_env(**environment(Selection("list", file=str(listing)))),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    listed = read_list(str(listing)).candidates
    by_target = {}
    for c in listed:
        by_target.setdefault(c.target, set()).add((c.operator, c.op))
    labels = {c.op: c.description.split("(")[1].split(")")[0] for c in listed}
    # 2 reuse waits (4 fills of 2 slots), each under war and fence.
    assert by_target["war"] == by_target["fence"] == {("drop_host_wait", "main[3]"), ("drop_host_wait", "main[6]")}
    # The last slot's landing barrier (upload.cb3, the 4th submit): dropped, weakened, each mask narrowed.
    assert by_target["raw"] == {(o, "upload.cb3[1]") for o in ("drop_barrier", "weaken_barrier",
                                                               "narrow_barrier_src_stage", "narrow_barrier_dst_stage")}
    assert {op for _, op in by_target["waw"]} == {"upload.cb0[1]"}
    assert by_target.keys() == {"war", "fence", "raw", "waw"}
    assert labels == {"main[3]": "'slot reuse wait'", "main[6]": "'slot reuse wait'",
                      "upload.cb3[1]": "'landing barrier'", "upload.cb0[1]": "'fill before copies'"}
    # Each is named by the program's line that caused it: the upload() call.
    assert {c.source for c in listed} == {"test_up.py:17"}


def test_every_candidate_of_the_uploader_dies(device_name, tmp_path):
    argv = [sys.executable, "-m", "vkverify.cli", "mutate", "--target", "all", "-j", "2", "--", *_pytest(tmp_path)]
    done = subprocess.run(argv, env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    # The 2 reuse waits fold into one mutant (one call site: the upload() line), 4 landing barrier and 4
    # fill barrier mutants (a wait counts once under all).
    assert "score 100.0% (9/9 mutants killed" in done.stdout, done.stdout + done.stderr[-2000:]
