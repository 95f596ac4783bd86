"""`vkverify mutate -- CMD` as a CI gate on a small downstream project (tests/downstream: an engine
on vkverify's runtime with a kernel of its own, a good test and a weak one; their files are named
check_*.py so that this suite does not collect them). Each mutant folds every frame's instance of
one call site: the barrier between the two dispatches (engine.py:30, dropped, weakened and either
stage mask narrowed) and the fence wait (engine.py:36), 5 mutants under --target all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import ROOT

pytest.importorskip("vulkan")
DOWNSTREAM = ROOT / "tests" / "downstream"
SITES = {("drop_barrier", "engine.py:30"), ("weaken_barrier", "engine.py:30"),
         ("narrow_barrier_src_stage", "engine.py:30"), ("narrow_barrier_dst_stage", "engine.py:30"),
         ("drop_host_wait", "engine.py:36")}


@pytest.fixture(scope="module")
def project(tmp_path_factory, device_name):
    path = tmp_path_factory.mktemp("downstream") / "project"
    shutil.copytree(DOWNSTREAM, path, ignore=shutil.ignore_patterns("__pycache__", ".vkverify*"))
    return path


def mutate(project, *options: str, command: tuple[str, ...] | None = None, test: str = "check_good.py"):
    command = command or (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_") and k != "PYTEST_CURRENT_TEST"}
    return subprocess.run([sys.executable, "-m", "vkverify.cli", "mutate", *options, "--", *command], cwd=project,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=600)


def test_the_good_test_kills_every_mutant(project):
    done = mutate(project, "--target", "all", "-j", "2", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {(m["operator"], m["source"]) for m in report["mutants"]} == SITES
    assert report["score"] == 100.0 and all(m["killed"] for m in report["mutants"])
    # One progress line per mutant, after the listing's.
    assert done.stderr.startswith("vkverify mutate: listing candidates")
    assert len(re.findall(r"^vkverify mutate: \[\d/5\] \w+ engine\.py:3[06] \w+ killed [\d.]+ s$", done.stderr,
                          re.M)) == 5, done.stderr


def test_the_weak_test_leaves_survivors_named_by_their_line(project):
    junit = project / "weak.xml"
    options = ("--target", "all", "-j", "2", "--fail-under", "100", "--junit", str(junit))
    done = mutate(project, *options, test="check_weak.py")
    assert done.returncode == 1, done.stdout + done.stderr
    survivors = done.stdout.split("survivors:\n")[1].splitlines()
    assert len(survivors) == 5 and all(re.search(r" at engine\.py:3[06]", s) for s in survivors), done.stdout
    failed = [case for case in ET.parse(junit).getroot().iter("testcase") if case.find("failure") is not None]
    assert {(case.get("name").split(":")[0], f"{case.get('file')}:{case.get('line')}") for case in failed} == SITES

    # Nothing changed: the rerun takes the listing and every verdict from the cache, and runs nothing.
    again = mutate(project, *options, test="check_weak.py")
    assert again.returncode == 1
    assert "listing from the cache" in again.stderr and "0 reader runs, 5 from the cache" in again.stdout, again.stderr


def test_nothing_to_mutate_is_exit_2_with_the_reason(project):
    done = mutate(project, command=(sys.executable, "-c", "pass"))
    assert done.returncode == 2 and "0 mutants: the command never opened a vkverify Runtime" in done.stderr, done.stderr
    done = mutate(project, "--target", "semaphore")
    assert done.returncode == 2 and "0 mutants: nothing load-bearing for target semaphore" in done.stderr, done.stderr


def test_options_of_stream_mutants_are_refused_with_only_a_command(project):
    done = mutate(project, "--readers", "sim")
    assert done.returncode == 2 and "--readers concern stream mutants" in done.stderr, done.stderr
