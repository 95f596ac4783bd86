"""Runtime mutation on examples/engine: the candidate list, mutated runs that fail, and the
engine's tests killing every mutant, by values and by the online check; with both off, the
survivor is named.

Kept short (2 cores): only test_frames_match_numpy runs, the one whose values matter (the other
kills its mutants with assert_race_free), and the driver runs target `fence` only; the full
`vkverify mutate --target all -- pytest examples/engine` takes about two minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.conftest import ROOT, python_path
from vkverify.mutations.gate import Candidate, chosen, read_list, run_command
from vkverify.mutations.live import Selection, environment

pytest.importorskip("vulkan")
ENGINE = ROOT / "examples" / "engine"
ASSERTION = "        assert np.array_equal(out, want_out) and total == want_total\n"


def _line(code: str) -> str:
    """`examples/engine/engine.py:N`, N the line of the engine that holds `code` (once)."""
    [n] = [i for i, text in enumerate((ENGINE / "engine.py").read_text().splitlines(), 1) if code in text]
    return f"examples/engine/engine.py:{n}"


BARRIER_LINE, WAIT_LINE = _line("a.cmd_pipeline_barrier2(*COMPUTE_RW)"), _line('rt.wait_fences(["F"])')
FRAME_WAIT_LINE = _line('rt.submit("q0"')  # a frame's wait for the previous one's second submit


def _pytest(path, **env) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path), "-k", "match"]
    return subprocess.run(argv, env={**os.environ, "PYTHONPATH": python_path(), **env}, cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def listing(tmp_path_factory):
    path = tmp_path_factory.mktemp("engine") / "candidates.jsonl"
    done = _pytest(ENGINE, **environment(Selection("list", file=str(path))))
    assert done.returncode == 0, done.stdout[-2000:]
    return read_list(str(path))


def test_list_names_the_candidates_and_mutates_nothing(listing):
    found = {(c.target, c.operator, c.op) for c in listing.candidates}
    assert {("raw", "drop_barrier", "a0[1]"), ("waw", "weaken_barrier", "b1[1]"),
            ("semaphore", "drop_wait", "main[7].batches[0].wait[0]"), ("fence", "drop_host_wait", "main[14]")} <= found
    # The uploads' landing barriers are not candidates: finish() waits for them before any frame reads.
    assert not [c for c in listing.candidates if "landing barrier" in c.description]
    assert all(c.where.endswith("test_engine.py::test_frames_match_numpy") for c in listing.candidates)
    # Each is named by the engine's line that issued it.
    sources = {(c.operator, c.op): c.source for c in listing.candidates}
    assert sources["drop_barrier", "a0[1]"] == sources["drop_barrier", "a1[1]"] == BARRIER_LINE
    assert sources["drop_host_wait", "main[14]"] == WAIT_LINE


def test_the_whole_list_is_pinned(listing):
    """Every candidate, in order, as the list run found them before it was made cheaper (issue 29:
    tests/engine_candidates.jsonl): an analysis made faster must find the same mutants."""
    lines = (ROOT / "tests" / "engine_candidates.jsonl").read_text().splitlines()
    assert listing.candidates == [Candidate.parse(json.loads(line)) for line in lines]


@pytest.mark.parametrize("fold", ["all", "waw"])
def test_a_folded_listing_gives_the_gate_the_same_mutants(listing, tmp_path, fold):
    """Folded (the gate's default, folding a call site's iterations into one mutant), the list run asks a site
    once per test once a candidate there is borne out under the fold's target: the gate gets the same mutants
    (same site, operator, first candidate, target, tests) from fewer lines."""
    path = tmp_path / "folded.jsonl"
    done = _pytest(ENGINE, **environment(Selection("list", file=str(path), fold=fold)))
    assert done.returncode == 0, done.stdout[-2000:]
    folded = read_list(str(path))

    def mutants(found, target):
        return [replace(m, description=re.sub(r" \(\d+ iterations listed, the first [^)]*\)$", "", m.description))
                for m in chosen(found.candidates, target, coverage=found.coverage)]
    targets = ["all", "raw", "waw", "war", "fence", "semaphore"] if fold == "all" else [fold]
    for target in targets:
        assert mutants(folded, target) == mutants(listing, target), target
    assert len(folded.candidates) < len(listing.candidates)
    assert folded.sync_sites == listing.sync_sites and folded.unneeded == listing.unneeded


@pytest.mark.parametrize("target, operator, op, caught_by", [
    ("raw", "drop_barrier", "a0[1]", "HazardError: main[6]"),  # the online check stops the submit
    # The last frame's wait: the online check catches the host read that races the device, whatever the timing.
    ("fence", "drop_host_wait", "main[14]", "HazardError: main[14]"),
])
def test_a_mutated_run_fails(listing, target, operator, op, caught_by):
    [c] = [c for c in listing.candidates if (c.target, c.operator, c.op) == (target, operator, op)]
    done = _pytest(ENGINE, **environment(Selection(target, c.where, k=c.k)))
    assert done.returncode == 1 and caught_by in done.stdout, done.stdout[-2000:]


def survivors(argv: list[str]) -> tuple[int, list[tuple[str, str, str]]]:
    """(mutants, survivors as (operator, the engine's line, test)) of target fence. Each frame's wait is
    one call site, one mutant: dropped in every frame, no wait is left to meet a fence that was reset
    while pending, and a dropped wait is killed by structure (the online check, or its absence leaves it
    alive), never by whether the host read happened to race the device."""
    outcomes, _, _ = run_command(argv, "fence", jobs=2, quiet=True)
    return len(outcomes), [(o.mutant.operator, o.mutant.source.rsplit("/", 1)[-1], o.mutant.file.rsplit("::", 1)[1])
                           for o in outcomes if not o.killed]


def test_every_mutant_dies_until_the_value_assertion_and_the_online_check_are_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", python_path())
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "match"]
    assert survivors([*argv, str(ENGINE)]) == (1, [])

    copy = tmp_path / "engine"
    shutil.copytree(ENGINE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    test = copy / "test_engine.py"
    assert ASSERTION in test.read_text()
    test.write_text(test.read_text().replace(ASSERTION, ""))
    # Without the value assertion the online check still sees the dropped waits: a host read racing the device.
    assert survivors([*argv, str(copy)]) == (1, [])
    # With the online check off as well, nothing is left to see them: the mutant survives, named by its line.
    monkeypatch.setenv("VKVERIFY_CHECK", "0")
    assert survivors([*argv, str(copy)]) == (1, [("drop_host_wait", WAIT_LINE.rsplit("/", 1)[1],
                                                             "test_frames_match_numpy")])


def test_the_lines_no_test_needed_are_named(listing):
    """--report-redundant with a command: the synchronization lines whose mutation opened a hazard in no run. A
    frame's q0 submit waits on T for the previous frame's q1 submit, which the host already waited for (its fence,
    at the end of that frame) before recording this one: no test needs that wait. The barrier between a frame's
    dispatches and that fence wait are needed; a submit's signal is no site (no operator mutates it)."""
    assert ["semaphore wait", FRAME_WAIT_LINE] in listing.unneeded
    assert {site[1] for site in listing.unneeded}.isdisjoint({BARRIER_LINE, WAIT_LINE})
    assert all(site in listing.sync_sites for site in listing.unneeded)
    assert {kind for kind, _ in listing.sync_sites} <= {"barrier", "semaphore wait", "wait_fences"}


def test_report_redundant_with_a_command_prints_and_writes_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", python_path())
    out = tmp_path / "gate.json"
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "mutate", "--target", "fence", "--report-redundant",
                           "--no-cache", "--json", str(out), "--", sys.executable, "-m", "pytest", "-q", "-p",
                           "no:cacheprovider", "-k", "match", str(ENGINE)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "redundant in the command's runs:" in done.stdout
    assert f"  {FRAME_WAIT_LINE} semaphore wait: no test needed it" in done.stdout
    [runs] = json.loads(out.read_text())["redundant"].values()
    assert any(r["op"] == f"{FRAME_WAIT_LINE} semaphore wait" and r["pair"] is None for r in runs)
