"""`vkverify mutate -- CMD` as a CI gate on a small downstream project (tests/downstream: an engine
on vkverify's runtime with a kernel of its own, a good test and a weak one; their files are named
check_*.py so that this suite does not collect them). Each mutant folds every frame's instance of
one call site: the barrier between the two dispatches (engine.py:30) and the one into the host stage
(engine.py:32), each dropped, weakened and either stage mask narrowed, and the fence wait
(engine.py:36): 9 mutants under --target all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from tests._processes import alive
from tests.conftest import ROOT, python_path
from vkverify.mutations import live
from vkverify.mutations.forks import Runs, Server
from vkverify.mutations.gate import listing, read_list
from vkverify.mutations.kills import kill_detail, killed_by, read_hazards
from vkverify.mutations.live import Selection, environment
from vkverify.mutations.processes import Processes
from vkverify.runtime import HazardError, Runtime

pytest.importorskip("vulkan")
DOWNSTREAM = ROOT / "tests" / "downstream"
SITES = {(operator, f"engine.py:{line}") for line in (30, 32)
         for operator in ("drop_barrier", "weaken_barrier", "narrow_barrier_src_stage", "narrow_barrier_dst_stage")}
SITES.add(("drop_host_wait", "engine.py:36"))


@pytest.fixture(scope="module")
def project(tmp_path_factory, device_name):
    path = tmp_path_factory.mktemp("downstream") / "project"
    shutil.copytree(DOWNSTREAM, path, ignore=shutil.ignore_patterns("__pycache__", ".vkverify*"))
    return path


def start(project, *options: str, command: tuple[str, ...] | None = None, test: str = "check_good.py",
          **env) -> subprocess.Popen:
    """`vkverify mutate OPTIONS -- COMMAND` in `project`, running (its output piped)."""
    command = command or (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_") and k != "PYTEST_CURRENT_TEST"}
    return subprocess.Popen([sys.executable, "-m", "vkverify.cli", "mutate", *options, "--", *command], cwd=project,
                            env={**clean, "PYTHONPATH": python_path(), **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finished(gate: subprocess.Popen, timeout: float = 600) -> subprocess.CompletedProcess:
    try:
        out, err = gate.communicate(timeout=timeout)
    finally:
        gate.kill()
    return subprocess.CompletedProcess(gate.args, gate.returncode, out, err)


def mutate(project, *options: str, **kwargs) -> subprocess.CompletedProcess:
    return finished(start(project, *options, **kwargs))


def test_the_good_test_kills_every_mutant(project):
    done = mutate(project, "--target", "all", "-j", "2", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {(m["operator"], m["source"]) for m in report["mutants"]} == SITES
    assert report["score"] == 100.0 and all(m["killed"] for m in report["mutants"])
    # Its own assertions (assert_race_free, the online check off) kill each: the failing test is named.
    assert report["scores"] == {"structural": 100.0, "behavioural": 100.0} and report["require"] == "structural"
    assert {m["killed_by"] for m in report["mutants"]} == {"assertion"}
    # assert_race_free's failure, or (the fence wait dropped, where the read races the device) the values'.
    assert all(re.match(r"exit 1: check_good\.py::test_frames: (Failed: <recorded>: vk_runtime: |assert False "
                        r"\(check_good\.py:14: assert np\.array_equal)", m["verdicts"]["command"]["detail"])
               for m in report["mutants"]), report["mutants"]
    # One progress line per mutant, after the listing's.
    assert done.stderr.startswith("vkverify mutate: listing candidates")
    assert len(re.findall(r"^vkverify mutate: \[\d/9\] \w+ engine\.py:3[026] \w+ killed by assertion [\d.]+ s$",
                          done.stderr, re.MULTILINE)) == 9, done.stderr


def test_the_weak_test_scores_full_structurally_and_nothing_behaviourally(project, tmp_path):
    """The user's case: the online check on (vk_runtime's default) kills every mutant of the weak test, which
    checks only shapes, so it scores 100% structurally; its own assertions kill none (the online check only
    wrote what it found, the run went on), so `--require behavioural` fails it. JSON and JUnit hold the kill
    table: what killed each mutant and how."""
    junit, report = tmp_path / "weak.xml", tmp_path / "weak.json"
    options = ("--target", "all", "-j", "2", "--junit", str(junit), "--json", str(report))
    done = mutate(project, *options, "--require", "behavioural", "--fail-under", "100", test="check_weak.py",
                  VKVERIFY_CHECK="1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "structural 100.0%, behavioural 0.0% (0/9 killed by the command's own assertions); killed by: " \
           "online_check 9, assertion 0, crash 0, hang 0; --fail-under applies to behavioural" in done.stdout
    judged = json.loads(report.read_text())
    assert judged["score"] == 100.0 and judged["scores"] == {"structural": 100.0, "behavioural": 0.0}
    assert judged["require"] == "behavioural"
    assert {(m["operator"], m["source"], m["killed_by"]) for m in judged["mutants"]} == \
        {(operator, source, "online_check") for operator, source in SITES}
    assert all(re.match(r"exit 0; online check: main\[\d\] at engine\.py:3[57]: \d hazard\(s\), first: raw ",
                        m["verdicts"]["command"]["detail"]) for m in judged["mutants"]), judged["mutants"]
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "9"
    suite = root.find("testsuite")
    assert {p.get("name"): p.get("value") for p in suite.findall("properties/property")} == \
        {"score.structural": "100.0", "score.behavioural": "0.0", "require": "behavioural"}
    for case in suite.iter("testcase"):
        properties = {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        assert properties["killed_by"] == "online_check" and "online check: main[" in properties["detail"]
        assert case.find("failure").get("message").startswith(
            "not caught by the command's own assertions (killed by online_check) at engine.py:3")

    # Gated structurally (the default), the same verdicts (from the cache) pass.
    again = mutate(project, *options, test="check_weak.py", VKVERIFY_CHECK="1")
    assert again.returncode == 0 and "0 reader runs, 9 from the cache" in again.stdout, again.stdout + again.stderr
    assert ET.parse(junit).getroot().get("failures") == "0"


def test_a_failing_test_is_named_with_its_assertion(tmp_path):
    """The kill detail from pytest's output: the first failing test, its message and the assertion's line;
    from another command's, its last line."""
    (tmp_path / "test_values.py").write_text(
        "def helper(x):\n    assert x == 2, 'x is not two'\n\n\ndef test_ok():\n    pass\n\n\n"
        "def test_values():\n    helper(3)\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_values.py"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert killed_by(done.returncode, []) == "assertion"
    assert kill_detail("assertion", done.returncode, done.stdout + done.stderr, []) == \
        "exit 1: test_values.py::test_values: AssertionError: x is not two (test_values.py:2: " \
        "assert x == 2, 'x is not two')"
    assert kill_detail("assertion", 3, "Traceback ...\nValueError: bad frame\n", []) == "exit 3: ValueError: bad frame"


def test_what_killed_a_run():
    """A signal is a crash; a failure with a HazardError raised to it is the online check's, as is a pass
    that the check wrote hazards of; any other failure is the command's own assertions."""
    written, raised = {"hazard": "h", "raised": False}, {"hazard": "h", "raised": True}
    assert [killed_by(-11, []), killed_by(1, [written]), killed_by(1, [written, raised]), killed_by(0, [written]),
            killed_by(0, [])] == ["crash", "assertion", "online_check", "online_check", None]


def test_the_weak_test_leaves_survivors_named_by_their_line(project):
    # Half the mutants (shard 1 of 2), to keep the suite short: each survives.
    junit = project / "weak.xml"
    options = ("--target", "all", "-j", "2", "--shard", "1/2", "--fail-under", "100", "--junit", str(junit))
    done = mutate(project, *options, test="check_weak.py")
    assert done.returncode == 1, done.stdout + done.stderr
    survivors = done.stdout.split("survivors:\n")[1].splitlines()
    assert len(survivors) == 5 and all(re.search(r" at engine\.py:3[026]", s) for s in survivors), done.stdout
    failed = [case for case in ET.parse(junit).getroot().iter("testcase") if case.find("failure") is not None]
    named = {(case.get("name").split(":")[0], f"{case.get('file')}:{case.get('line')}") for case in failed}
    assert len(failed) == len(named) == 5 and named < SITES

    # Nothing changed: the rerun takes the listing and every verdict from the cache, and runs nothing.
    again = mutate(project, *options, test="check_weak.py")
    assert again.returncode == 1
    assert "listing from the cache" in again.stderr and "0 reader runs, 5 from the cache" in again.stdout, again.stderr


def test_nothing_to_mutate_is_exit_2_with_the_reason(project):
    done = mutate(project, command=(sys.executable, "-c", "pass"))
    assert done.returncode == 2 and "0 mutants: the command never opened a vkverify Runtime" in done.stderr, done.stderr
    done = mutate(project, "--target", "semaphore")
    assert done.returncode == 2 and "0 mutants: nothing load-bearing for target semaphore" in done.stderr, done.stderr
    # No such device: vk_runtime skips the test, which then passes having opened no Runtime.
    done = mutate(project, VKVERIFY_DEVICE="no such device")
    assert done.returncode == 2 and "0 mutants: no Vulkan device: no device matches 'no such device'" in done.stderr, \
        done.stderr


def test_the_readers_of_stream_mutants_are_refused_with_only_a_command(project):
    done = mutate(project, "--readers", "sim")
    assert done.returncode == 2 and "--readers concerns stream mutants" in done.stderr, done.stderr


def test_candidates_are_numbered_per_test(project, monkeypatch):
    """What pytest-xdist needs: a test's candidates do not depend on what ran before it in the process.
    Both tests run the same frames, so in one process each has the same numbering, from 0."""
    monkeypatch.chdir(project)
    found, _ = listing([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "check_good.py",
                        "check_weak.py"], None, lambda line: None)
    by_test = {}
    for c in found.candidates:
        by_test.setdefault(c.where, set()).add((c.target, c.k, c.operator, c.op, c.source))
    assert sorted(by_test) == ["check_good.py::test_frames", "check_weak.py::test_frames"]
    good, weak = by_test.values()
    assert good == weak and min(k for _, k, *_ in good) == 0


ROUNDTRIP = '''
def roundtrip(rt):
    rt.create_buffer("B", 256, "host_coherent")
    rt.create_fence("F")
    rt.command_buffer("cb").cmd_fill_buffer("B").cmd_pipeline_barrier2("clear", "transfer_write", "host", "host_read")
    rt.submit("q0", ["cb"], fence="F")
    rt.wait_fences(["F"])
    return rt.host_read("B")
'''

# Each test logs its pid and name: which tests each run of the command ran.
TEST_OF = '''
import os

from lib_{x} import roundtrip


def test_{x}(vk_runtime, assert_race_free):
    with open("ran.log", "a") as log:
        log.write(f"{{os.getpid()}} {x}\\n")
    assert roundtrip(vk_runtime) == bytes(256)
    assert_race_free(vk_runtime)
'''


def runs(project) -> list[str]:
    """The tests each run of the command ran, since the last call (sorted)."""
    log = project / "ran.log"
    by_pid: dict[str, str] = {}
    for line in log.read_text().splitlines():
        pid, test = line.split()
        by_pid[pid] = by_pid.get(pid, "") + test
    log.unlink()
    return sorted(by_pid.values())


def test_a_mutant_runs_the_tests_that_reach_its_site_and_keeps_its_verdict_while_they_are_unchanged(tmp_path,
                                                                                                    device_name):
    """Two tests, each reaching the fence wait of a module of its own (lib_a.py:7, lib_b.py:7): each mutant's
    run runs only the test that reached its site, which its kill detail names. An edit to lib_b.py reruns only
    lib_b's mutant; an edit to test_a.py only lib_a's (each listing again, which runs both tests)."""
    for x in "ab":
        (tmp_path / f"lib_{x}.py").write_text(ROUNDTRIP)
        (tmp_path / f"test_{x}.py").write_text(TEST_OF.format(x=x))
    options = ("--target", "fence", "-j", "1", "--format", "json", "--cache", str(tmp_path / "cache"))
    command = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_a.py", "test_b.py")

    def gate(rerun: str | None) -> dict:
        done = mutate(tmp_path, *options, command=command, VKVERIFY_CHECK="0")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "no test selection" not in done.stderr
        report = json.loads(done.stdout)
        assert report["stats"] == ({"executed": 2, "cached": 0} if rerun is None else {"executed": 1, "cached": 1})
        ran = re.findall(r"^vkverify mutate: \[\d/\d\] fence (\S+) drop_host_wait", done.stderr, re.MULTILINE)
        assert ran == ([rerun] if rerun else ["lib_a.py:7", "lib_b.py:7"] if ran[0] < ran[1] else
                       ["lib_b.py:7", "lib_a.py:7"]), done.stderr
        return report

    report = gate(None)
    assert {(m["source"], m["file"], m["killed_by"]) for m in report["mutants"]} == \
        {("lib_a.py:7", "test_a.py::test_a", "assertion"), ("lib_b.py:7", "test_b.py::test_b", "assertion")}
    assert all(m["verdicts"]["command"]["detail"].startswith(f"exit 1: {m['file']}: Failed: <recorded>: ")
               for m in report["mutants"]), report["mutants"]
    assert runs(tmp_path) == ["a", "ab", "b"]  # the listing, then each mutant
    with open(tmp_path / "lib_b.py", "a") as f:
        f.write("# an edit\n")
    gate("lib_b.py:7")
    assert runs(tmp_path) == ["ab", "b"]
    with open(tmp_path / "test_a.py", "a") as f:
        f.write("# an edit\n")
    gate("lib_a.py:7")
    assert runs(tmp_path) == ["a", "ab"]


def test_without_the_plugin_each_mutant_runs_the_whole_command_and_the_gate_says_so(tmp_path, device_name):
    """A command that is not pytest gives no test to select: its one mutant runs it whole, said once."""
    (tmp_path / "lib_a.py").write_text(ROUNDTRIP)
    (tmp_path / "main.py").write_text("from lib_a import roundtrip\nfrom vkverify.runtime import Runtime\n\n"
                                      "with Runtime() as rt:\n    roundtrip(rt)\n")
    done = mutate(tmp_path, "--target", "fence", "--no-cache", "--format", "json", command=(sys.executable, "main.py"),
                  VKVERIFY_CHECK="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("vkverify mutate: no test selection: the listing run loaded no vkverify pytest plugin, "
                             "so each mutant runs the whole command") == 1, done.stderr
    mutants = json.loads(done.stdout)["mutants"]
    assert [(m["source"], m["killed_by"]) for m in mutants] == [("lib_a.py:7", "online_check")], mutants


HOST_OPS = '''
def test_host_ops(vk_runtime):
    rt = vk_runtime
    rt.create_buffer("H", 256, "host_cached")
    rt.create_buffer("R", 256, "host_cached")
    rt.create_fence("F")
    rt.host_write("H", bytes(range(256)))
    rt.flush("H")
    cb = rt.command_buffer("cb")
    cb.cmd_copy_buffer("H", "R")
    cb.cmd_pipeline_barrier2("copy", "transfer_write", "host", "host_read")
    rt.submit("q0", ["cb"], fence="F")
    rt.wait_fences(["F"])
    rt.invalidate("R")
    assert rt.host_read("R") == bytes(range(256))
'''


def test_flushes_and_invalidates_are_runtime_mutants(tmp_path, device_name):
    """Target host: dropping the flush before the device reads the host's bytes, or the invalidate
    before the host reads the device's; the online check kills each (vk_runtime's default)."""
    (tmp_path / "test_host.py").write_text(HOST_OPS)
    done = mutate(tmp_path, "--target", "host", "--format", "json", "-q", test="test_host.py")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {(m["operator"], m["source"], m["killed"]) for m in report["mutants"]} == {
        ("drop_flush", "test_host.py:8", True), ("drop_invalidate", "test_host.py:14", True)}
    assert done.stderr == ""  # -q: no progress lines


def test_call_sites_fold_unless_per_iteration():
    """Two frames' instances of one barrier line, in two tests, fold into one mutant that changes all four and
    runs both tests; the fence wait of another line, reached by one test, stays apart and runs that test only;
    `all` counts a candidate of two targets once. Per iteration, a mutant is one candidate of one test."""
    from vkverify.mutations.gate import Candidate, Coverage, chosen
    from vkverify.mutations.live import Selection

    def candidate(k, target, operator, op, line, test="t.py::test"):
        return Candidate(k, target, operator, op, test, f"engine.py:{line}", None, "")
    listed = [candidate(0, "raw", "drop_barrier", "frame0[1]", 30),
              candidate(1, "raw", "drop_barrier", "frame1[1]", 30),
              candidate(0, "raw", "drop_barrier", "frame0[1]", 30, "u.py::test"),
              candidate(1, "raw", "drop_barrier", "frame1[1]", 30, "u.py::test"),
              candidate(0, "fence", "drop_host_wait", "main[2]", 36),
              candidate(0, "war", "drop_host_wait", "main[2]", 36)]
    coverage = Coverage({"t.py::test": "t.py", "v.py::test": "v.py", "u.py::test": "u.py"},
                        [{"t.py::test": ["t.py", "engine.py"]}, {"u.py::test": ["u.py", "engine.py"]}])
    folded = chosen(listed, "all", coverage=coverage)
    assert [(m.operator, m.source, m.file, m.selection) for m in folded] == [
        ("drop_barrier", "engine.py:30", "t.py::test, u.py::test",
         Selection("raw", site=("drop_barrier", "engine.py:30", "", ""), tests=("t.py::test", "u.py::test"))),
        ("drop_host_wait", "engine.py:36", "t.py::test",
         Selection("fence", site=("drop_host_wait", "engine.py:36", "", ""), tests=("t.py::test",)))]
    assert "4 iterations" in folded[0].description
    assert [m.selection for m in chosen(listed, "raw", per_iteration=True, coverage=coverage)][:2] == [
        Selection("raw", "t.py::test", k=0, tests=("t.py::test",)),
        Selection("raw", "t.py::test", k=1, tests=("t.py::test",))]
    assert [m.selection.target for m in chosen(listed, "war")] == ["war"]
    # Without the plugin's list of tests, or for a site reached outside a test, a mutant runs every test.
    assert chosen(listed, "fence")[0].selection.tests == ()
    assert Coverage({"t.py::test": "t.py"}).selected({"t.py::test", "rt"}) == ()


def test_tests_sharing_a_runtime_are_selected_together():
    """What a test ran before in a Runtime it shares shapes what a later test's op sees: a site reached in one
    selects every test its Runtime served, and so on across Runtimes."""
    from vkverify.mutations.gate import Coverage

    runtimes = [{"a": [], "b": []}, {"b": [], "c": []}, {"d": []}]  # per Runtime, the tests it served
    coverage = Coverage(dict.fromkeys(["a", "b", "c", "d"], "x.py"), runtimes)
    assert coverage.selected({"c"}) == ("a", "b", "c") and coverage.selected({"d"}) == ("d",)


def test_a_labelled_fence_wait_is_analysed_once(device_name, tmp_path, monkeypatch):
    """A fence wait is analysed at the submit of its fence (live.Mutator.before); the wait that comes with a
    label is the same wait, not a second one to analyse: one drop_host_wait candidate, described by its label."""
    listing = tmp_path / "list.jsonl"
    monkeypatch.setenv(live.ENV, environment(Selection("list", file=str(listing)))[live.ENV])
    with Runtime(check=False, name="labelled", hooks=[live.mutator]) as rt:
        rt.create_buffer("B", 256, "host_coherent")
        rt.create_fence("F")
        rt.command_buffer("cb").cmd_fill_buffer("B").cmd_pipeline_barrier2("clear", "transfer_write", "host",
                                                                           "host_read")
        rt.submit("q0", ["cb"], fence="F")
        rt.wait_fences(["F"], label="wait F")
        analysed = [(s.mutant.operator, s.mutant.op, s.mutant.description) for s in rt.hooks[0]._shadows.values()]
        rt.host_read("B")
    assert [a for a in analysed if a[0] == "drop_host_wait"] == [
        ("drop_host_wait", "main[1]", "drop wait_fences main[1] ('wait F')")]
    waits = [(c.target, c.op, c.label, c.description) for c in read_list(str(listing)).candidates
             if c.operator == "drop_host_wait"]
    assert waits == [("fence", "main[1]", "wait F", "drop wait_fences main[1] ('wait F')")]


def test_a_folded_listing_asks_a_site_again_for_a_target_not_yet_listed(device_name, tmp_path, monkeypatch):
    """One barrier line orders a fill before a copy that reads its bytes in the first submit (RAW), a copy before a
    fill that overwrites its source in the second (WAR). Folded under `all`, the second iteration is not asked (the
    site is listed); under `war` it is, the first having listed only a RAW; unfolded, both are."""
    def program() -> list:
        monkeypatch.setenv(live.ENV, environment(Selection("list", file=str(path), fold=fold))[live.ENV])
        with Runtime(check=False, name="fold", hooks=[live.mutator]) as rt:
            for name in "ABCD":
                rt.create_buffer(name, 256)
            rt.create_fence("F")
            steps = [(lambda b: b.cmd_fill_buffer("A"), lambda b: b.cmd_copy_buffer("A", "B")),
                     (lambda b: b.cmd_copy_buffer("C", "D"), lambda b: b.cmd_fill_buffer("C"))]
            for cb, (first, then) in enumerate(steps):
                then(first(rt.command_buffer(f"cb{cb}")).cmd_pipeline_barrier2(
                    ["clear", "copy"], "transfer_write", ["clear", "copy"], ["transfer_read", "transfer_write"]))
                rt.submit("q0", [f"cb{cb}"], fence="F")
                rt.wait_fences(["F"])
                rt.reset_fences(["F"])
        return sorted({(c.target, c.op) for c in read_list(str(path)).candidates if c.operator == "drop_barrier"})

    for fold, expected in [("", [("raw", "cb0[1]"), ("war", "cb1[1]")]), ("all", [("raw", "cb0[1]")]),
                           ("war", [("raw", "cb0[1]"), ("war", "cb1[1]")]), ("raw", [("raw", "cb0[1]")])]:
        path = tmp_path / f"list_{fold}.jsonl"
        assert program() == expected, fold


def host_signal_program(rt: Runtime) -> None:
    """A batch waits for the host's signal (submitted before it, after the host's write); the host waits for
    the batch's fence and reads what it copied. The signal's line is `program:signal`."""
    rt.create_buffer("H", 256, "host_coherent")
    rt.create_buffer("R", 256, "host_coherent")
    rt.create_semaphore("T", timeline=True)
    rt.create_fence("F")
    cb = rt.command_buffer("cb")
    cb.cmd_copy_buffer("H", "R")
    cb.cmd_pipeline_barrier2("copy", "transfer_write", "host", "host_read")
    rt.submit("q0", ["cb"], wait=[{"semaphore": "T", "value": 1}], fence="F")
    rt.host_write("H", bytes(range(256)))
    rt.signal_semaphore("T", 1, source="program:signal")
    rt.wait_fences(["F"])
    assert rt.host_read("R") == bytes(range(256))


def test_a_host_signal_a_recorded_batch_waits_for_is_a_runtime_candidate(device_name, tmp_path, monkeypatch):
    """Target semaphore: dropping the signal leaves the batch blocked, which the listing's shadow finds at
    the close."""
    listing = tmp_path / "list.jsonl"
    monkeypatch.setenv(live.ENV, environment(Selection("list", file=str(listing)))[live.ENV])
    with Runtime(check=False, name="signal", hooks=[live.mutator]) as rt:
        host_signal_program(rt)
    signals = [(c.target, c.operator, c.op) for c in read_list(str(listing)).candidates if c.operator == "drop_signal"]
    assert signals == [("semaphore", "drop_signal", "main[2]")]


def test_a_dropped_host_signal_is_killed_at_the_wait_it_blocks(device_name, monkeypatch, tmp_path):
    """The mutant of the test above: its fence wait, behind the batch that waits for the dropped signal, ends
    the run at once with the blocked waits as findings (not after the runtime's 60 s wait limit); the device,
    given the signal back, drains at the close. The gate's hazards file says it was raised."""
    where = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
    chosen = Selection("semaphore", where, site=("drop_signal", "program:signal", "", ""))
    hazards = tmp_path / "hazards.jsonl"
    for name, value in environment(chosen, hazards=str(hazards)).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(HazardError) as raised, Runtime(check=False, name="signal", hooks=[live.mutator]) as rt:
        host_signal_program(rt)
    assert raised.value.submit == "main[2]"  # the fence wait, the signal at main[2] dropped
    assert {(f.kind, f.ops) for f in raised.value.findings} == {("wait_never_satisfied", ("main[0]",)),
                                                                ("deadlock", ("main[2]",))}
    assert rt.device is not None and rt.device.handle is None  # closed: the device drained
    assert read_hazards(str(hazards)) == [{"hazard": str(raised.value), "raised": True}]


def test_the_online_check_writes_hazards_to_the_file_named_and_goes_on(device_name, tmp_path, monkeypatch):
    """VKVERIFY_HAZARDS (set by the gate for each mutant's run): the online check writes each hazard it finds
    and lets the op run, so the program's own assertions decide; the stream records the op."""
    hazards = tmp_path / "hazards.jsonl"
    monkeypatch.setenv(live.HAZARDS, str(hazards))
    with Runtime(check=True, name="racy") as rt:
        rt.create_buffer("B", 256, "host_coherent")
        rt.command_buffer("cb").cmd_fill_buffer("B")
        rt.submit("q0", ["cb"])
        rt.host_read("B")  # no wait: each read races the fill
        rt.host_read("B")
        recorded = len(rt.stream().threads[0].ops)
    found = read_hazards(str(hazards))
    assert [(h["hazard"].split(":")[0], h["raised"]) for h in found] == [("main[1] at tests/test_gate.py", False),
                                                                          ("main[2] at tests/test_gate.py", False)]
    assert all("first: raw on B" in h["hazard"] for h in found) and recorded == 3


def test_two_shards_at_once_on_one_cache_lose_no_verdict(project, tmp_path):
    """Two CI jobs, each a shard, sharing one cache at the same time: every verdict of each is kept, so a
    rerun of each is served entirely from the cache (listing and verdicts), running nothing."""
    options = [("--target", "all", "-j", "1", "--format", "json", "--cache", str(tmp_path / "shared"), "--shard",
                f"{k}/2") for k in (1, 2)]
    first = [finished(gate) for gate in [start(project, *o) for o in options]]
    assert [done.returncode for done in first] == [0, 0], [done.stderr for done in first]
    counts = [len(json.loads(done.stdout)["mutants"]) for done in first]
    assert sum(counts) == len(SITES)
    for o, n in zip(options, counts):
        again = mutate(project, *o)
        assert again.returncode == 0 and "listing from the cache" in again.stderr, again.stderr
        assert json.loads(again.stdout)["stats"] == {"executed": 0, "cached": n}



# A pytest plugin (-p pids) logging each process's pytest start and each test run: which processes ran what.
PIDS = """
import os


def pytest_configure(config):
    log("start")


def pytest_runtest_setup(item):
    log("test")


def log(what):
    with open(os.environ["PIDS"], "a") as f:
        f.write(f"{what} {os.getpid()}\\n")
"""


def logged(path) -> dict[str, list[int]]:
    """The pids of each kind of line the pids plugin wrote, in order, once each."""
    found: dict[str, list[int]] = {}
    for what, pid in (line.split() for line in path.read_text().splitlines()):
        if int(pid) not in found.setdefault(what, []):
            found[what].append(int(pid))
    return found


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "fresh"])
def test_ctrl_c_stops_the_gate_kills_its_runs_and_writes_the_partial_report(project, tmp_path, fork):
    """SIGINT while a mutant runs: the gate kills that run (forked from the server, or a fresh process), the
    server, and starts no other; it exits 2 promptly, its JUnit and JSON reports written with the verdict it
    had, marked interrupted."""
    (project / "pids.py").write_text(PIDS)
    pids = tmp_path / "pids"
    command = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pids", "check_good.py")
    junit, report = tmp_path / "m.xml", tmp_path / "m.json"
    options = ("--no-cache", "-j", "1", "--junit", str(junit), "--json", str(report), *(() if fork else ("--no-fork",)))
    gate = start(project, *options, command=command, PIDS=str(pids))
    try:
        lines = []
        while not any(line.startswith("vkverify mutate: [1/9]") for line in lines):  # the first verdict
            lines.append(gate.stderr.readline())
            assert lines[-1], "".join(lines)
        while len(logged(pids)["test"]) < 3:  # the listing's run, the first mutant's, the second's
            time.sleep(0.05)
        gate.send_signal(signal.SIGINT)
        gate.wait(timeout=60)
    finally:
        gate.kill()
    assert gate.returncode == 2
    err = gate.stderr.read()
    assert "Traceback" not in err and err.splitlines()[-1] == \
        "vkverify mutate: interrupted by SIGINT after 1 of 9 mutants: the report is partial", err
    started = logged(pids)
    # Forked: pytest started twice (the listing run, the server), each mutant's run a child of the server.
    assert len(started["start"]) == (2 if fork else 3) and len(started["test"]) == 3, started
    assert not any(map(alive, started["start"] + started["test"]))
    judged = json.loads(report.read_text())
    assert judged["stopped"] == "interrupted by SIGINT after 1 of 9 mutants: the report is partial"
    assert [m["killed"] for m in judged["mutants"]].count(True) == 1 and len(judged["mutants"]) == 9
    root = ET.parse(junit).getroot()
    assert root.get("errors") == "1" and "interrupted by SIGINT" in root.find("testsuite/testcase/error").get("message")
    assert len(root.findall("testsuite/testcase/skipped")) == 8


def test_forked_runs_give_the_table_fresh_runs_give(project, tmp_path):
    """The weak test, the online check on: each mutant's run forked from one pytest process that collected once
    (started twice in all: the listing run and the server) gives the verdicts, kill details and reports of a
    fresh process per mutant (--no-fork: started once per run)."""
    (project / "pids.py").write_text(PIDS)
    command = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pids", "check_weak.py")
    reports = {}
    for fork in (True, False):
        pids, junit = tmp_path / f"pids-{fork}", tmp_path / f"m-{fork}.xml"
        done = mutate(project, "--target", "all", "-j", "2", "--no-cache", "--format", "json", "--junit", str(junit),
                      *(() if fork else ("--no-fork",)), command=command, PIDS=str(pids), VKVERIFY_CHECK="1")
        assert done.returncode == 0 and "fresh process" not in done.stderr, done.stdout + done.stderr
        assert len(logged(pids)["start"]) == (2 if fork else 10) and len(logged(pids)["test"]) == 10
        reports[fork] = json.loads(done.stdout), junit.read_text()
    (forked, forked_junit), (fresh, fresh_junit) = reports[True], reports[False]
    assert forked["mutants"] == fresh["mutants"] and forked["matrix"] == fresh["matrix"]
    assert forked_junit == fresh_junit
    assert all(m["killed_by"] == "online_check" and "online check: main[" in m["verdicts"]["command"]["detail"]
               for m in forked["mutants"]), forked["mutants"]


HANGS = """
import os
import subprocess
import time


def test_hangs():
    if os.environ.get("HANG"):
        sleeper = subprocess.Popen(["sleep", "600"])
        with open("pids", "w") as f:
            f.write(f"{os.getpid()} {sleeper.pid}")
        time.sleep(600)
"""


def test_a_forked_run_that_hangs_is_killed_at_its_timeout_and_the_server_goes_on(tmp_path, monkeypatch):
    """The child and what it started are killed (its process group); the server reaps it and forks the next."""
    (tmp_path / "test_hangs.py").write_text(HANGS)
    shutil.copy(DOWNSTREAM / "conftest.py", tmp_path)  # registers the plugin where no entry point does
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", python_path())
    server = Server([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_hangs.py"], Processes())
    try:
        server.warm([])
        assert server.run({}, 600).returncode == 0  # collected, warm
        with pytest.raises(subprocess.TimeoutExpired):
            server.run({"HANG": "1"}, 10)
        pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
        assert len(pids) == 2 and not any(map(alive, pids))
        done = server.run({}, 600)
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
    finally:
        server.close()
    assert not alive(server.process.pid)


def test_a_server_that_ends_leaves_each_run_to_a_fresh_process_said_once():
    """A command whose process never serves (here it exits at once): each run falls back to a fresh process."""
    said = []
    runs = Runs([sys.executable, "-c", "print('fresh'); raise SystemExit(3)"], Processes(), said.append)
    runs.serve([])
    try:
        done = [runs.run({}, 600) for _ in range(2)]
        assert [(d.returncode, d.stdout) for d in done] == [(3, "fresh\n")] * 2
    finally:
        runs.close()
    assert said == ["each mutant runs in a fresh process of the command: its serving process ended (exit 3)"]


def test_a_runtime_opened_outside_the_tests_makes_each_run_a_fresh_process(tmp_path):
    """Opened at collection (a module's import), it would be the server's, made before any mutant's variables."""
    path = tmp_path / "candidates.jsonl"
    lines = [{"tests": {"t.py::test": "t.py"}}, {"runtime": "rt", "where": "t.py::test"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert read_list(str(path)).forkable
    lines.append({"runtime": "module_rt", "where": "module_rt"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = read_list(str(path))
    assert not found.forkable and found.outside == ["module_rt"]
