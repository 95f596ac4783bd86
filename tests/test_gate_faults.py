"""The gate's failures (issue 30: points 1 to 4, 8 and 11; issue 28 point 4): each is exit 2 with
one line saying what, and the report files say it too; nothing hangs, nothing is lost. No Vulkan device is
needed: the commands here fail before any Runtime would open, or are given streams (the cmd reader).
tests/test_gate.py runs the gate on a downstream project: shards sharing a cache, Ctrl-C."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests._processes import alive, sleeper
from tests.conftest import ROOT, python_path
from vkverify.cli import main
from vkverify.mutations.gate import listing, read_list
from vkverify.mutations.processes import CLEAN_TIMEOUT_S
from vkverify.mutations.runner import Cache
from vkverify.model.files import append_line

STREAM = str(ROOT / "tests" / "corpus" / "13-barrier-chain.json")  # a few mutants, each killed by the checker
NO_SYNC = str(ROOT / "tests" / "corpus" / "01-copy-then-dispatch-no-barrier.json")  # nothing to mutate


def vkverify(*args: str, cwd: Path, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    """The command line, as a user runs it: a process of its own."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}
    return subprocess.run([sys.executable, "-m", "vkverify.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**clean, "PYTHONPATH": python_path(), **env}, timeout=timeout, check=False)




def junit_error(path: Path) -> str:
    """The message of the JUnit file's one error: why the gate stopped."""
    root = ET.parse(path).getroot()
    errors = root.findall("testsuite/testcase/error")
    assert root.get("errors") == "1" and len(errors) == 1, ET.tostring(root)
    return errors[0].get("message")


def test_a_hanging_unmutated_run_is_stopped_at_the_timeout(tmp_path):
    """Point 1: the clean run has a limit of its own (--timeout): a hang ends, exit 2, what it started killed."""
    pids = tmp_path / "pids"
    began = time.monotonic()
    done = vkverify("mutate", "--timeout", "3", "--junit", "m.xml", "--", *sleeper(pids), cwd=tmp_path)
    assert time.monotonic() - began < 120  # not the sleep's ten minutes
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [
        f"vkverify mutate: listing candidates (unmutated; --timeout 3 s): {' '.join(sleeper(pids))}",
        "vkverify mutate: the command did not finish unmutated within 3 s (--timeout): no mutant was run"]
    assert "within 3 s (--timeout)" in junit_error(tmp_path / "m.xml")
    recorded = [int(p) for p in pids.read_text().split()]
    assert len(recorded) == 2 and not any(map(alive, recorded))


def test_the_default_timeout_is_printed(tmp_path):
    done = vkverify("mutate", "--", "false", cwd=tmp_path)
    assert done.returncode == 2
    assert f"listing candidates (unmutated; --timeout {CLEAN_TIMEOUT_S:g} s): false" in done.stderr
    assert f"(default {CLEAN_TIMEOUT_S:g};" in " ".join(vkverify("mutate", "--help", cwd=tmp_path).stdout.split())


@pytest.mark.parametrize("value", ["nan", "-5", "200", "inf"])
def test_fail_under_is_a_percentage(capsys, value):
    """Point 2: `score < nan` is never true, so nan would pass any gate; -5 and 200 make no sense either."""
    with pytest.raises(SystemExit) as exited:
        main(["mutate", "--no-cache", "--fail-under", value, STREAM])
    assert exited.value.code == 2 and "argument --fail-under: " in capsys.readouterr().err


@pytest.mark.parametrize("table, key", [("[tool.vkverify]\nfail-under = nan", "tool.vkverify.fail-under"),
                                        ("[tool.vkverify.mutate]\nfail_under = -5", "tool.vkverify.mutate.fail_under"),
                                        ("[tool.vkverify.mutate]\nfail-under = 200.5",
                                         "tool.vkverify.mutate.fail-under")])
def test_fail_under_in_the_configuration_is_a_percentage(tmp_path, monkeypatch, capsys, table, key):
    (tmp_path / "pyproject.toml").write_text(table + "\n")
    monkeypatch.chdir(tmp_path)
    assert main(["mutate", "--no-cache", STREAM]) == 2
    err = capsys.readouterr().err
    assert f"pyproject.toml: {key}: must be a number from 0 to 100" in err, err


@pytest.mark.parametrize("value", ["0", "100", "99.5"])
def test_fail_under_takes_the_ends_of_the_range(capsys, value):
    assert main(["mutate", "--no-cache", "--fail-under", value, STREAM]) == 0


@pytest.mark.parametrize("mode", ["command", "streams"])
@pytest.mark.parametrize("what, why", [("missing", "No such file or directory"), ("folder", "a directory"),
                                       ("plain file", "Permission denied")])
def test_a_command_that_cannot_start_is_exit_2(tmp_path, mode, what, why):
    """Point 3: not a traceback and exit 1 (the code of a score below the threshold)."""
    (tmp_path / "plain").write_text("echo never\n")
    command = {"missing": "./no-such-command", "folder": str(tmp_path), "plain file": "./plain"}[what]
    done = vkverify("mutate", "--no-cache", *([STREAM] if mode == "streams" else []), "--", command, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == f"vkverify mutate: cannot run {command}: {why}"


def test_an_unmutated_failure_is_written_to_the_reports(tmp_path):
    """Point 4 (and issue 28's): exit 2 still writes the JUnit file, and the JSON one, with the reason."""
    done = vkverify("mutate", "--junit", "m.xml", "--json", "m.json", "--", "sh", "-c", "echo broken; exit 3",
                    cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "the command fails unmutated (exit 3):\n  broken" in done.stderr
    assert "fails unmutated (exit 3)" in junit_error(tmp_path / "m.xml")
    report = json.loads((tmp_path / "m.json").read_text())
    assert report["score"] is None and report["mutants"] == []
    assert report["stopped"].startswith("the command fails unmutated (exit 3)")


def test_report_files_are_checked_before_the_command_runs(tmp_path):
    """Point 4: a --junit or --json that cannot be written is exit 2 at once, not after every mutant has run."""
    (tmp_path / "taken").write_text("a file where a folder is named")
    ran = tmp_path / "ran"
    for option in ("--junit", "--json"):
        done = vkverify("mutate", option, "taken/m.out", "--", "touch", str(ran), cwd=tmp_path)
        assert done.returncode == 2 and done.stderr == f"{option}: 'taken' is not a folder\n", done.stderr
    assert not ran.exists()


def test_a_report_that_cannot_be_written_at_the_end_is_exit_2(tmp_path):
    """Point 4: the folder checked at the start is gone when the report is written (here the command removes
    it): one line naming the option and why, exit 2, not a traceback and exit 1."""
    (tmp_path / "out").mkdir()
    done = vkverify("mutate", "--no-cache", "-j", "1", "--junit", "out/m.xml", STREAM, "--", "rm", "-rf", "out",
                    cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == ["vkverify mutate: --junit out/m.xml: cannot write (No such file or directory)"]
    assert "score 100.0%" in done.stdout  # the verdicts are printed all the same


def test_no_mutant_in_the_streams_is_exit_2(capsys, tmp_path):
    """Point 8: as the help says, not "score 100.0% (0/0)" and exit 0."""
    junit = tmp_path / "m.xml"
    assert main(["mutate", "--no-cache", "--junit", str(junit), NO_SYNC]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "vkverify mutate: 0 mutants: nothing load-bearing for target all in the 1 stream(s): " \
                                "no synchronization whose removal the model sees as a new hazard\n"
    assert junit_error(junit).startswith("stopped, no verdict: 0 mutants: nothing load-bearing")


def candidate_line(k: int) -> dict:
    return {"k": k, "target": "raw", "operator": "drop_barrier", "op": f"cb{k}[1]", "where": "t.py::test",
            "source": f"engine.py:{30 + k}", "label": None, "description": "drop it"}


def test_a_torn_candidates_line_is_skipped_with_a_warning(tmp_path):
    """Point 11: lines as live.py writes them, one cut short (a process killed while writing) and one of
    another shape: the others are read, each bad one warned of."""
    path = tmp_path / "candidates.jsonl"
    for line in ({"runtime": "rt", "where": "t.py::test"}, candidate_line(0), candidate_line(1), {"imports": ["a.py"]}):
        append_line(path, json.dumps(line))
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:40]
    path.write_text("\n".join([*lines, '{"k": "0", "target": 1}', "[]"]) + "\n")
    warnings = []
    found = read_list(str(path), warnings.append)
    assert [c.k for c in found.candidates] == [1] and found.runtimes == 1 and found.imports == ["a.py"]
    assert found.skipped == 3 and warnings == [
        f"warning: line {n} of the candidates file is not a candidate (torn?): skipped" for n in (2, 5, 6)]


@pytest.mark.parametrize("entry", ['{"candidates": [1]}', "[1, 2", '{"candidates": [], "runtimes": "1"}', "\xff"])
def test_a_listing_in_the_cache_of_the_wrong_shape_is_listed_again(tmp_path, capsys, entry):
    """Point 11: the listing's cache entry broken: warned of, the command run again, the entry rewritten."""
    cache = Cache(tmp_path)
    found, cached = listing(["true"], cache, print)
    assert not cached and found.candidates == []
    entry_file = next(cache.path.glob("listing-*.json"))
    entry_file.write_bytes(entry.encode("latin-1"))
    capsys.readouterr()
    found, cached = listing(["true"], cache, print)
    err = capsys.readouterr().err
    assert not cached and f"warning: cache entry {entry_file} " in err and "Traceback" not in err
    assert listing(["true"], cache, print)[1]  # rewritten whole


def test_a_verdict_in_the_cache_of_the_wrong_shape_is_judged_again(tmp_path, capsys):
    """Point 11: a verdict entry broken (cut short, or another shape): warned of, its mutant judged again."""
    def run() -> dict:
        assert main(["mutate", "--format", "json", "-j", "1", "--cache", str(tmp_path), STREAM]) == 0
        return json.loads(capsys.readouterr().out)
    first = run()
    entries = sorted((tmp_path / "mutate").glob("*.json"))
    assert len(entries) == len(first["mutants"]) > 2
    entries[0].write_text('[true, "cut')
    entries[1].write_text('{"killed": true}')
    again = run()
    assert again["stats"] == {"executed": 2, "cached": len(first["mutants"]) - 2}
    assert again["mutants"] == first["mutants"]
    assert json.loads(entries[0].read_text())[0] is True  # rewritten


def test_a_verdict_cache_that_cannot_be_written_is_a_warning(tmp_path, capsys):
    """The verdicts are reported all the same; only the cache is lost."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "mutate").write_text("a file where the entries' folder is")
    assert main(["mutate", "-j", "1", "--cache", str(cache), STREAM]) == 0
    out, err = capsys.readouterr()
    assert "score 100.0%" in out and err == f"vkverify mutate: warning: cache {cache / 'mutate'} cannot be written " \
                                           "(File exists); not kept\n", err


def test_a_signal_while_the_command_starts_leaves_nothing_running(tmp_path, monkeypatch):
    """Point 1's Ctrl-C, at the worst moment: handled in the main thread just after the child started and
    before the gate tracked it. The run raises Interrupted and the child is killed, not left sleeping."""
    import signal

    from vkverify.mutations import processes

    started = []
    real = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        p = real(*args, **kwargs)
        started.append(p.pid)
        signal.raise_signal(signal.SIGINT)  # its handler runs here, before Popen's caller has p
        return p

    monkeypatch.setattr(processes.subprocess, "Popen", popen_then_signal)
    gate = processes.Processes()
    with pytest.raises(processes.Interrupted, match="interrupted by SIGINT"), gate.stopped_by_signals():
        gate.run(["sleep", "600"], {}, None)
    assert started and not alive(started[0])


def test_a_signal_while_a_command_fails_to_start_is_the_interrupt_and_is_not_kept(monkeypatch):
    """The same moment, but the command cannot start: the run says it was interrupted, and a later run in the
    same process (the gate's API called again) starts afresh rather than raise that old signal."""
    import signal

    from vkverify.mutations import processes

    def signal_then_fail(*args, **kwargs):
        signal.raise_signal(signal.SIGTERM)
        raise FileNotFoundError(2, "No such file or directory")

    gate = processes.Processes()
    with monkeypatch.context() as patch:
        patch.setattr(processes.subprocess, "Popen", signal_then_fail)
        with pytest.raises(processes.Interrupted, match="interrupted by SIGTERM"), gate.stopped_by_signals():
            gate.run(["no-such-command"], {}, None)
    assert processes.Processes().run(["true"], {}, None).returncode == 0
