"""The pytest plugin in a program's own test run: the device option and its header, a failing test's
recorded stream for explain and graph, and the program's lines in the online check's HazardError
and in assert_race_free."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import python_path
from vkverify.cli import main as vkverify

pytest.importorskip("vulkan")

PROGRAM = '''
import pytest

from vkverify.runtime import HazardError


def record(rt):
    rt.create_buffer("A", 256, "host_coherent")
    rt.create_buffer("B", 256)
    cb = rt.command_buffer("cb0")
    cb.cmd_copy_buffer("A", "B")
    cb.cmd_dispatch("fill", ["B"], (1, 1, 1), push=[64, 7])
    rt.submit("q0", ["cb0"], id="frame")


def test_fails(vk_runtime):
    vk_runtime.check = False
    record(vk_runtime)
    assert False, "the program's own assertion"


def test_racing(vk_runtime):
    with pytest.raises(HazardError) as raised:
        record(vk_runtime)
    assert str(raised.value).startswith("main[0] at test_prog.py:13: 1 hazard(s), first: waw on B"), str(raised.value)
    assert "(first cb0[0] at test_prog.py:11, second cb0[1] at test_prog.py:12)" in str(raised.value)


def test_unchecked(vk_runtime, assert_race_free):
    vk_runtime.check = False
    record(vk_runtime)
    assert_race_free(vk_runtime)
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory, device_name):
    path = tmp_path_factory.mktemp("plugin")
    (path / "test_prog.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_") and k != "PYTEST_CURRENT_TEST"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vk-device", "llvmpipe",
                           "test_prog.py"], cwd=path,
                          env={**env, "PYTHONPATH": python_path()}, capture_output=True, text=True, timeout=300,
                          check=False)
    return path, done


def test_the_header_names_the_device_asked_for(run):
    _, done = run
    assert "vkverify: vk_runtime device 'llvmpipe' (--vk-device)" in done.stdout, done.stdout


def test_online_hazards_name_the_programs_lines(run):
    _, done = run
    assert "2 failed, 1 passed" in done.stdout and "FAILED test_prog.py::test_racing" not in done.stdout, done.stdout


def test_assert_race_free_names_the_programs_lines(run):
    _, done = run
    # The copy (line 11) writes B, the fill (line 12) writes it again with no barrier between.
    assert "first:  cb0[0] copy/transfer_write at test_prog.py:11" in done.stdout, done.stdout
    assert "second: cb0[1] compute_shader/shader_storage_write at test_prog.py:12" in done.stdout


def test_a_failing_tests_stream_is_written_for_explain_and_graph(run, capsys):
    path, done = run
    assert done.returncode == 1
    streams = path / ".vkverify" / "streams"
    written = sorted(p.name for p in streams.iterdir())
    # test_unchecked fails too (assert_race_free): each failing test's stream, none of the passing one.
    assert written == ["test_prog.py_test_fails.json", "test_prog.py_test_unchecked.json"], written
    stream = str(streams / "test_prog.py_test_fails.json")
    assert f"its recorded stream: {stream}" in done.stdout
    assert vkverify(["explain", stream, "cb0[0]", "cb0[1]"]) == 1  # not ordered: the missing barrier
    assert "cb0[0]" in capsys.readouterr().out
    assert vkverify(["graph", stream]) == 0
    assert "digraph" in capsys.readouterr().out


def test_every_tests_stream_is_written_on_request(tmp_path, device_name):
    """--vk-streams-all: the passing test's stream too, into the directory --vk-streams names."""
    (tmp_path / "test_prog.py").write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_") and k != "PYTEST_CURRENT_TEST"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vk-streams-all",
                           "--vk-streams", "out", "test_prog.py"], cwd=tmp_path,
                          env={**env, "PYTHONPATH": python_path()}, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 1, done.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "test_prog.py_test_fails.json", "test_prog.py_test_racing.json", "test_prog.py_test_unchecked.json"]


THREE = '''
def test_one():
    assert False, "one"


def test_two():
    assert False, "two"


def test_three():
    pass
'''


def test_under_the_gate_a_mutants_run_keeps_its_tests_and_stops_at_the_first_failure(tmp_path):
    """The listing run names every test collected, with its file; a mutant's run deselects the tests its
    selection does not name and stops at its first failing test (its verdict needs no more)."""
    from vkverify.mutations.gate import read_list
    from vkverify.mutations.live import Selection, environment

    (tmp_path / "test_three.py").write_text(THREE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_") and k != "PYTEST_CURRENT_TEST"}

    def pytest_with(chosen: Selection) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_three.py"],
                              cwd=tmp_path, env={**env, "PYTHONPATH": python_path(), **environment(chosen)},
                              capture_output=True, text=True, timeout=300, check=False)
    listed = tmp_path / "list.jsonl"
    pytest_with(Selection("list", file=str(listed)))
    assert read_list(str(listed)).coverage.tests == {f"test_three.py::test_{n}": str(tmp_path / "test_three.py")
                                                     for n in ("one", "two", "three")}
    site = ("drop_barrier", "lib.py:1", "", "")
    done = pytest_with(Selection("raw", site=site, tests=("test_three.py::test_two", "test_three.py::test_one")))
    assert done.returncode == 1 and "1 failed, 1 deselected" in done.stdout, done.stdout
    assert "FAILED test_three.py::test_one" in done.stdout and "test_two" not in done.stdout, done.stdout
    done = pytest_with(Selection("raw", site=site, tests=("test_three.py::test_three",)))
    assert done.returncode == 0 and "1 passed, 2 deselected" in done.stdout, done.stdout
