"""Hypothesis campaign (issue 17): structure-aware mutations of the corpus and of a small capture,
through check, explain, graph, simulate and import. Every outcome is exit 0, 1 or 2; no traceback,
no hang past the per-call timeout, output printable as UTF-8, no partial `-o` file, and a DOT file
that Graphviz reads. tests/_bad_inputs.py breaks the inputs; test_bad_input.py pins each class
of cause this campaign found. Issue 30 adds three surfaces: output faults (stdout on /dev/full, a disk that
fills under RLIMIT_FSIZE, -o naming a folder: exit 2, one line, the old file kept), any pyproject.toml, and
any value of the Python API's arguments.

The gate (issue 30): --fail-under values on the command line and in [tool.vkverify]; whatever a
cache entry or the candidates file holds; real signals to a running gate, and report files and a
cache on a file system that is full or behind a file named as a folder (test_gate_faults.py pins
each point).

Bounded to about two minutes on two cores: the examples run in-process (vkverify.cli.main) with an
alarm per call; a handful run as real subprocesses.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._bad_inputs import Outcome, broken, mutate, run_main
from tests._processes import alive, sleeper
from tests.conftest import python_path
from vkverify.mutations.gate import Candidate, _cached_listing, chosen, read_list
from vkverify.mutations.kills import KILLERS
from vkverify.mutations.runner import Cache

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.json"))
DOCS = [json.loads(p.read_text()) for p in CORPUS]
VERBS = ["check", "explain", "graph", "simulate"]
TIMEOUT = 30  # seconds per call: the slowest corpus stream simulates in a few


def campaign(examples: int) -> settings:
    """Seeded (the same inputs each run), no example database, no deadline: each call has its own timeout."""
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True, print_blob=True,
                    suppress_health_check=list(HealthCheck))
EXAMPLES = {"streams": 700, "converter lines": 400, "gfxr": 25, "fail-under": 60, "cache entries": 300,
            "candidates files": 200, "pyproject": 200, "api": 150}
RAN: dict[str, int] = {}


def refs(doc) -> list[str]:
    """References the explain verb is given: positions in the stream's first command buffer and thread."""
    if not isinstance(doc, dict):
        return ["cb0[0]", "main[0]"]
    owners = [k for key in ("command_buffers", "threads") if isinstance(doc.get(key), dict) for k in doc[key]]
    return [f"{o}[{i}]" for o in owners[:3] for i in range(3)] or ["cb0[0]"]


def assert_clean(outcome: Outcome, file: Path, output: Path | None = None) -> None:
    assert outcome.error is None, outcome.error
    assert outcome.code in (0, 1, 2), outcome.code
    (outcome.stdout + outcome.stderr).encode("utf-8")  # printable on a UTF-8 terminal
    if outcome.code == 2:
        lines = outcome.stderr.splitlines()
        assert lines and all(line.startswith(f"{file}: ") for line in lines), outcome.stderr[-500:]
    if output is not None:
        if outcome.code == 2:
            assert not output.exists(), "a failed command left its -o file"
        assert [p.name for p in output.parent.iterdir() if p.name.endswith(".tmp")] == []


def valid_dot(path: Path) -> None:
    if shutil.which("dot") is not None:
        done = subprocess.run(["dot", "-Tsvg", str(path)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-300:]


@campaign(EXAMPLES["streams"])
@given(rnd=st.randoms(use_true_random=False), which=st.integers(0, len(DOCS) - 1), verb=st.sampled_from(VERBS))
def test_broken_streams(rnd: random.Random, which: int, verb: str):
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp:
        path, out = Path(tmp) / "s.json", Path(tmp) / "out" / "g.dot"
        out.parent.mkdir()
        path.write_bytes(broken(DOCS[which], rnd))
        args = {"check": [], "simulate": ["--schedules", "4"], "graph": ["-o", str(out)],
                "explain": [rnd.choice(refs(DOCS[which])), rnd.choice(refs(DOCS[which]))]}[verb]
        outcome = run_main([verb, str(path), *args], TIMEOUT)
        RAN["streams"] = RAN.get("streams", 0) + 1
        assert_clean(outcome, path, out if verb == "graph" else None)
        if verb == "graph" and outcome.code == 0:
            valid_dot(out)


LINE_SHAPES = ["[1]", "3", "null", '"s"', "{}", '{"vkFunc": 1}', '{"vkFunc": {"args": {}}}',
               '{"index": "x", "vkFunc": {"name": "vkCmdDispatch"}}', "{" * 3000, '{"index": 1, "v": NaN}']


def broken_lines(lines: list[str], rnd: random.Random) -> str:
    """Converter lines with calls' records broken as streams are, lines of other shapes, lines cut or repeated."""
    new = list(lines)
    for _ in range(rnd.choice([1, 1, 2, 4])):
        k, roll = rnd.randrange(1, len(new)) if rnd.random() < 0.95 else 0, rnd.random()
        if roll < 0.08:
            new[k] = rnd.choice(LINE_SHAPES)
        elif roll < 0.12:
            del new[k]
        elif roll < 0.15:
            new.insert(k, new[rnd.randrange(1, len(new))])
        elif roll < 0.17:
            new[k] = new[k][:rnd.randrange(len(new[k]) + 1)]
        else:
            try:
                record = json.loads(new[k])
            except ValueError:
                continue
            new[k] = json.dumps(mutate(record, rnd))
    return "\n".join(new) + "\n"


@campaign(EXAMPLES["converter lines"])
@given(rnd=st.randoms(use_true_random=False), verb=st.sampled_from(["import", "check"]))
def test_broken_converter_lines(small_capture, rnd: random.Random, verb: str):
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp:
        path, out = Path(tmp) / "c.jsonl", Path(tmp) / "out" / "s.json"
        out.parent.mkdir()
        path.write_text(broken_lines(small_capture[1], rnd), encoding="utf-8", errors="surrogatepass")
        outcome = run_main([verb, str(path), *(["-o", str(out)] if verb == "import" else [])], TIMEOUT)
        RAN["converter lines"] = RAN.get("converter lines", 0) + 1
        assert_clean(outcome, path, out if verb == "import" else None)
        if verb == "import" and outcome.code == 0:
            json.loads(out.read_text())  # the stream written whole


@campaign(EXAMPLES["gfxr"])
@given(rnd=st.randoms(use_true_random=False))
def test_corrupted_gfxr(small_capture, rnd: random.Random):
    """Cut or flipped bytes of the binary capture: through gfxrecon-convert and -extract (bounded)."""
    data = bytearray(small_capture[0].read_bytes())
    if rnd.random() < 0.3:
        data = data[:rnd.randrange(len(data))]
    else:
        for _ in range(rnd.choice([1, 2, 8])):
            data[rnd.randrange(len(data))] = rnd.randrange(256)
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp:
        path = Path(tmp) / "c.gfxr"
        path.write_bytes(bytes(data))
        outcome = run_main(["check", str(path)], 300)
        RAN["gfxr"] = RAN.get("gfxr", 0) + 1
        assert_clean(outcome, path)


@pytest.mark.parametrize("seed", range(4))
def test_broken_streams_through_a_real_process(tmp_path, seed):
    """The same inputs as a user runs them: a subprocess, its real stdout and stderr encodings."""
    rnd = random.Random(seed)
    path = tmp_path / "s.json"
    path.write_bytes(broken(DOCS[rnd.randrange(len(DOCS))], rnd))
    for verb in (["check"], ["simulate", "--schedules", "3"], ["graph"], ["explain", "cb0[0]", "main[0]"]):
        done = subprocess.run([sys.executable, "-m", "vkverify.cli", verb[0], str(path), *verb[1:]],
                              capture_output=True, cwd=ROOT, timeout=120, check=False)
        stderr = done.stderr.decode("utf-8")
        assert "Traceback" not in stderr and done.returncode in (0, 1, 2), stderr[-500:]
        done.stdout.decode("utf-8")


# ---- the gate -------------------------------------------------------------------

GATE_STREAM = str(ROOT / "tests" / "corpus" / "13-barrier-chain.json")  # every mutant killed: score 100


def _percent(text: str) -> bool:
    try:
        return 0 <= float(text) <= 100
    except ValueError:
        return False


def _toml(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("infinity", "inf")  # TOML's nan, inf, -inf
    return json.dumps(value) if isinstance(value, str) else repr(value)


@campaign(EXAMPLES["fail-under"])
@given(value=st.one_of(st.floats(), st.integers(-1000, 1000), st.text(max_size=6),
                       st.sampled_from(["nan", "-nan", "inf", "1e2", "100.0001", "-0", "0x10", "1_0", " 5 "])),
       where=st.sampled_from(["option", "config"]))
def test_fail_under_values(value, where):
    """Exit 2 with one line naming --fail-under (the key, in the configuration) unless the value is a number
    from 0 to 100; else the gate runs, and this stream's score of 100 passes it."""
    table = f"[tool.vkverify.mutate]\nfail-under = {_toml(value)}\n"
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp, contextlib.chdir(tmp):
        argv = ["mutate", "--no-cache", "-j", "1", GATE_STREAM]
        if where == "option":
            argv += [f"--fail-under={value}"]
        else:
            Path("pyproject.toml").write_text(table, encoding="utf-8", errors="surrogatepass")
        outcome = run_main(argv, TIMEOUT)
    RAN["fail-under"] = RAN.get("fail-under", 0) + 1
    assert outcome.error is None, outcome.error
    last = outcome.stderr.splitlines()[-1] if outcome.stderr else ""
    if where == "config" and not _toml_reads(table):  # text TOML cannot hold: the file is refused, named
        assert outcome.code == 2 and "pyproject.toml: " in last, outcome.stderr
    elif _percent(str(value)):
        assert outcome.code == 0 and "score 100.0%" in outcome.stdout, outcome.stderr
    else:
        assert outcome.code == 2 and ("argument --fail-under: " in last if where == "option" else
                                      "pyproject.toml: tool.vkverify.mutate.fail-under: " in last), outcome.stderr


def _toml_reads(text: str) -> bool:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return True


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                 max_size=4), max_leaves=10)
CANDIDATE = st.fixed_dictionaries({
    "k": st.integers(0, 9), "target": st.sampled_from(["raw", "war", "fence"]),
    "operator": st.sampled_from(["drop_barrier", "drop_host_wait"]), "op": st.sampled_from(["cb0[1]", "main[2]"]),
    "where": st.sampled_from(["t.py::a", "t.py::b"]), "source": st.none() | st.sampled_from(["e.py:3", "e.py:4"]),
    "label": st.none() | st.text(max_size=5), "description": st.text(max_size=12)})
# What a cache entry may hold: anything, or a verdict or a listing with a part of the wrong shape.
ENTRIES = st.one_of(st.binary(max_size=40), JSON.map(json.dumps), st.tuples(st.none() | st.booleans(), JSON, JSON,
                                                                      JSON | st.sampled_from(KILLERS))
                    .map(lambda v: json.dumps(list(v))),
                    st.fixed_dictionaries({"candidates": st.lists(CANDIDATE | JSON, max_size=3),
                                           "runtimes": st.integers() | JSON, "imports": st.lists(st.text()) | JSON,
                                           "hash": st.text() | JSON, "seconds": st.floats() | JSON}).map(json.dumps))


@campaign(EXAMPLES["cache entries"])
@given(entry=ENTRIES, cut=st.booleans())
def test_cache_entries(entry, cut):
    """A verdict is read back only where the entry is one; a listing only with every part of its shape, and
    then the gate's next steps take it; anything else is warned of (never a traceback), so the gate reruns."""
    data = entry if isinstance(entry, bytes) else entry.encode("utf-8", "surrogatepass")
    data = data[:len(data) // 2] if cut else data
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp:
        cache = Cache(tmp)
        cache.path.mkdir()
        cache.file("k").write_bytes(data)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            verdict = cache.get("k")
            found = cache.read("k")
    RAN["cache entries"] = RAN.get("cache entries", 0) + 1
    if verdict is None:
        assert err.getvalue().startswith(f"vkverify mutate: warning: cache entry {cache.file('k')} "), data
    else:
        assert isinstance(verdict.detail, str) and verdict.killed in (True, False, None) and err.getvalue() == ""
    try:
        listed, _ = _cached_listing(found)
    except ValueError:
        return
    assert all(isinstance(c, Candidate) for c in listed.candidates)
    chosen(listed.candidates, "all")
    chosen(listed.candidates, "raw", per_iteration=True)


LINE_OF = {"candidate": CANDIDATE, "runtime": st.fixed_dictionaries({"runtime": st.text(max_size=5),
                                                                      "where": st.text(max_size=5)}),
           "imports": st.fixed_dictionaries({"imports": st.lists(st.text(max_size=8), max_size=3)})}
GOOD_LINE = st.sampled_from(sorted(LINE_OF)).flatmap(lambda kind: st.tuples(st.just(kind), LINE_OF[kind]))
# Never a line: a torn one (a proper prefix of a good one), a JSON value that is no object, text that is no JSON.
BAD_LINE = st.one_of(st.tuples(GOOD_LINE, st.floats(0, 0.99)).map(lambda t: json.dumps(t[0][1])[
    :int(len(json.dumps(t[0][1])) * t[1])]), JSON.filter(lambda v: not isinstance(v, dict)).map(json.dumps),
    st.text(alphabet=st.characters(blacklist_characters="\n\r{"), max_size=30)).filter(str.strip)


@campaign(EXAMPLES["candidates files"])
@given(lines=st.lists(st.one_of(GOOD_LINE, BAD_LINE), max_size=12))
def test_candidates_files(lines):
    """Every good line is read, every bad one skipped with a warning naming its line, never a traceback."""
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp:
        path = Path(tmp) / "candidates.jsonl"
        path.write_text("".join((json.dumps(line[1]) if isinstance(line, tuple) else line) + "\n" for line in lines),
                        encoding="utf-8", errors="surrogatepass")
        warnings = []
        found = read_list(str(path), warnings.append)
    RAN["candidates files"] = RAN.get("candidates files", 0) + 1
    assert [Candidate(**line[1]) for line in lines if isinstance(line, tuple) and line[0] == "candidate"] == \
        found.candidates
    assert found.runtimes == sum(isinstance(line, tuple) and line[0] == "runtime" for line in lines)
    bad = [n for n, line in enumerate(lines, 1) if isinstance(line, str)]
    assert found.skipped == len(bad) and [w.split()[2] for w in warnings] == [str(n) for n in bad]
    chosen(found.candidates, "all")


def _gate(*args: str, cwd: Path, prefix: tuple[str, ...] = ()) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}
    return subprocess.Popen([*prefix, sys.executable, "-m", "vkverify.cli", "mutate", *args], cwd=cwd,
                            env={**env, "PYTHONPATH": python_path()}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGTERM], [signal.SIGINT, signal.SIGINT]])
@pytest.mark.parametrize("mode", ["command", "streams"])
def test_signals_to_a_running_gate(tmp_path, signals, mode):
    """A real signal (Ctrl-C, a CI job's SIGTERM; a second Ctrl-C while it stops) to a gate whose command runs
    unmutated (alone, or the cmd reader of a stream): exit 2 at once, nothing the command started left, the
    JUnit file written saying so."""
    pids = tmp_path / "pids"
    gate = _gate("--junit", "m.xml", *([GATE_STREAM] if mode == "streams" else []), "--", *sleeper(pids), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        for s in signals:
            gate.send_signal(s)
        err = gate.communicate(timeout=60)[1]
    finally:
        gate.kill()
    why = f"interrupted by {signal.Signals(signals[0]).name}" + (
        " during the unmutated run: no mutant was run" if mode == "command" else ": no verdict kept")
    assert gate.returncode == 2 and err.splitlines()[-1] == f"vkverify mutate: {why}", err
    assert not any(alive(int(p)) for p in pids.read_text().split())
    assert ET.parse(tmp_path / "m.xml").getroot().find("testsuite/testcase/error").text == why


@pytest.mark.parametrize("option", ["--junit", "--json", "--cache"])
def test_a_file_where_an_output_folder_is_named(tmp_path, option):
    (tmp_path / "taken").write_text("")
    done = _gate(option, "taken/out", GATE_STREAM, cwd=tmp_path)
    out, err = done.communicate(timeout=120)
    assert done.returncode == 2 and out == "" and err.splitlines()[0].startswith(f"{option}: "), err
    assert "Traceback" not in err and os.listdir(tmp_path) == ["taken"]


def _on_a_small_tmpfs(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs what follows with a 64 KiB tmpfs on `folder`, in a mount namespace of its
    own (no privilege needed where user namespaces are allowed); skip where they are not."""
    prefix = ("unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0" && exec "$@"', str(folder))
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True,
                                                         check=False).returncode != 0:
        pytest.skip("no mount namespace here for a small tmpfs")
    return prefix


FILL = "dd if=/dev/zero of={0}/fill bs=1k count=1000 2>/dev/null"  # fails once the file system is full


def test_report_files_on_a_full_file_system(tmp_path):
    """Full before the gate starts: exit 2 at once, the command never run. Filled while it runs (by the
    command): the report is printed, exit 2 with one line naming the file."""
    full = tmp_path / "full"
    full.mkdir()
    prefix = _on_a_small_tmpfs(full)
    ran = tmp_path / "ran"
    for option in ("--junit", "--json"):
        gate = _gate(option, f"{full}/m.out", GATE_STREAM, cwd=tmp_path, prefix=(
            *prefix, "sh", "-c", FILL.format(full) + '; exec "$@"', "sh"))
        out, err = gate.communicate(timeout=120)
        assert gate.returncode == 2 and out == "" and \
            err == f"{option}: {full}/m.out cannot be written: No space left on device\n", err
    gate = _gate("--no-cache", "-j", "1", "--junit", f"{full}/m.out", GATE_STREAM, "--", "sh", "-c",
                 f"touch {ran}; {FILL.format(full)}; true", cwd=tmp_path, prefix=prefix)
    out, err = gate.communicate(timeout=300)
    assert ran.exists() and "score 100.0%" in out
    assert gate.returncode == 2 and err == f"vkverify mutate: --junit {full}/m.out: cannot write (No space left on " \
                                           "device)\n", err


def test_a_cache_on_a_full_file_system_loses_only_the_cache(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    gate = _gate("-j", "1", "--cache", str(full), GATE_STREAM, cwd=tmp_path, prefix=(
        *_on_a_small_tmpfs(full), "sh", "-c", FILL.format(full) + '; exec "$@"', "sh"))
    out, err = gate.communicate(timeout=120)
    assert gate.returncode == 0 and "score 100.0%" in out, err
    assert "Traceback" not in err and "cannot be written (No space left on device); not kept" in err


# ---- output faults (issue 30 point 4): a write that fails is exit 2 with one line, never a traceback, never
# exit 1 (findings), never part of a file ----

RAW_STREAM = ROOT / "tests" / "corpus" / "01-copy-then-dispatch-no-barrier.json"  # one finding: exit 1 when written
WRITERS = [["check", RAW_STREAM], ["check", RAW_STREAM, "--format", "sarif"],
           ["simulate", RAW_STREAM, "--schedules", "2"], ["graph", RAW_STREAM],
           ["explain", RAW_STREAM, "cb0[0]", "cb0[1]"]]


def vkverify(*argv, limit_file_size: int | None = None, **kwargs) -> subprocess.CompletedProcess:
    """A real process; `limit_file_size`: RLIMIT_FSIZE in bytes, a disk that fills after that many."""
    import resource

    def limit():
        if limit_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))
    return subprocess.run([sys.executable, "-m", "vkverify.cli", *map(str, argv)], cwd=ROOT, timeout=120,
                          check=False, preexec_fn=limit, **kwargs)


@pytest.mark.parametrize("argv", WRITERS, ids=lambda a: " ".join(map(str, a[:1] + a[2:])))
def test_stdout_full_is_exit_2_with_one_line(argv):
    with open("/dev/full", "w") as full:
        done = vkverify(*argv, stdout=full, stderr=subprocess.PIPE, text=True)
    assert (done.returncode, done.stderr) == (2, "stdout: cannot write (No space left on device)\n")


@pytest.mark.parametrize("argv", [["check", RAW_STREAM, "--format", "sarif", "-o"], ["graph", RAW_STREAM, "-o"],
                                  ["import", None, "-o"]], ids=lambda a: a[0])
def test_output_file_on_a_full_disk_keeps_the_old_file(tmp_path, small_capture, argv):
    """The disk fills while the file is written: exit 2 naming it, its old content in place, no temporary left."""
    lines, target = tmp_path / "c.jsonl", tmp_path / "o" / "out"  # converter lines: no GFXReconstruct tool writes
    lines.write_text("\n".join(small_capture[1]) + "\n")
    target.parent.mkdir()
    target.write_text("old\n")
    argv = [lines if a is None else a for a in argv]
    done = vkverify(*argv, target, limit_file_size=64, capture_output=True, text=True)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (2, [f"{target}: cannot write (File too large)"])
    assert "Traceback" not in done.stderr
    assert target.read_text() == "old\n" and [p.name for p in target.parent.iterdir()] == ["out"]


@pytest.mark.parametrize("verb", [["check", RAW_STREAM], ["graph", RAW_STREAM]], ids=lambda a: a[0])
def test_output_named_as_a_directory_or_in_a_missing_folder(tmp_path, verb):
    for target, says in ((tmp_path, "is a directory, not a file"), (tmp_path / "no" / "f", "does not exist")):
        done = vkverify(*verb, "-o", target, capture_output=True, text=True)
        assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("-o/--output: ") \
            and says in done.stderr and done.stderr.count("\n") == 1, done.stderr


# ---- configuration (issue 30 point 6): whatever pyproject.toml holds, a command runs or says which file and key ----

OPTION_KEYS = ["format", "quiet", "expect", "reading", "witness", "witnesses", "schedules", "seed", "timeout", "output",
               "max-nodes", "max_nodes", "fail-under", "verbose", "check", "simulate", "graph", "nope"]
TOML_VALUES = st.recursive(
    st.one_of(st.booleans(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.floats(), st.text(max_size=12),
              st.sampled_from(["json", "sarif", "text", "slice", "all_commands_includes_host=false", "2", "0"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(OPTION_KEYS), inner, max_size=3)), max_leaves=6)


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(value), repr(value))
    if isinstance(value, (int, str)):
        return json.dumps(value)  # JSON's string escapes are TOML's basic string's
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


@campaign(EXAMPLES["pyproject"])
@given(tables=st.dictionaries(st.sampled_from(["tool.vkverify", "tool.vkverify.check", "tool.vkverify.graph",
                                               "tool", "other"]),
                              st.dictionaries(st.sampled_from(OPTION_KEYS), TOML_VALUES, max_size=4), max_size=3),
       cut=st.one_of(st.none(), st.integers(0, 200)), noise=st.binary(max_size=4))
def test_any_pyproject(tables, cut, noise):
    """A pyproject.toml of option-shaped keys and any TOML values, perhaps cut and with bytes appended: check and
    graph run (0, 1) or exit 2 naming the file, one line, no traceback."""
    text = "".join(f"[{name}]\n" + "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in table.items())
                   for name, table in tables.items()).encode()
    data = (text if cut is None else text[:cut]) + noise
    with tempfile.TemporaryDirectory(prefix="vkverify-campaign-") as tmp:
        (Path(tmp) / "pyproject.toml").write_bytes(data)
        here = os.getcwd()
        os.chdir(tmp)
        try:
            for verb in (["check", str(RAW_STREAM)], ["graph", str(RAW_STREAM)]):
                outcome = run_main(verb, TIMEOUT)
                assert outcome.error is None, (data, outcome.error)
                assert outcome.code in (0, 1, 2), (data, outcome.code)
                if outcome.code == 2:  # the file's error, or a timeout = ... it gave that was reached
                    assert outcome.stderr.startswith((f"vkverify: {Path(tmp) / 'pyproject.toml'}: ",
                                                      f"vkverify {verb[0]}: --timeout ")) \
                        and outcome.stderr.count("\n") == 1, (data, outcome.stderr)
        finally:
            os.chdir(here)
        RAN["pyproject"] = RAN.get("pyproject", 0) + 1


# ---- the Python API (issue 30 point 10): any argument value is accepted or a UsageError naming it ----

ANY_VALUE = st.one_of(st.none(), st.booleans(), st.floats(), st.text(max_size=8), st.binary(max_size=4),
                      st.lists(st.integers(), max_size=2), st.integers(-3, 3), st.integers(10 ** 5 + 1, 10 ** 30))


@campaign(EXAMPLES["api"])
@given(argument=st.sampled_from(["readings", "witness", "witnesses", "schedules", "seed", "findings"]),
       value=st.one_of(ANY_VALUE, st.sampled_from(["slice", "full", "all"])))
def test_api_arguments(argument, value):
    from vkverify.check import check
    from vkverify.model import UsageError, load
    from vkverify.sim import simulate

    stream = load(RAW_STREAM)
    verb = check if argument in ("readings", "witness", "witnesses") else \
        lambda s, **kw: simulate(s, **{"schedules": 2, **kw})
    try:
        verb(stream, **{argument: value})
    except UsageError as e:
        assert e.argument == argument and e.message.startswith("expected ")
    RAN["api"] = RAN.get("api", 0) + 1


def test_campaign_size(capsys):
    """How many generated inputs ran (printed); every campaign ran (this file's earlier tests) and met its
    count."""
    with capsys.disabled():
        print(f"\nbad-input campaign: {RAN}")
    assert set(RAN) == set(EXAMPLES) and all(RAN[k] >= n for k, n in EXAMPLES.items()), RAN
