"""Hypothesis campaign (issue 17): structure-aware mutations of the corpus and of a small capture,
through check, explain, graph, simulate and import. Every outcome is exit 0, 1 or 2; no traceback,
no hang past the per-call timeout, output printable as UTF-8, no partial `-o` file, and a DOT file
that Graphviz reads. tests/_bad_inputs.py breaks the inputs; test_bad_input.py pins each class
of cause this campaign found. Issue 30 adds three surfaces: output faults (stdout on /dev/full, a disk that
fills under RLIMIT_FSIZE, -o naming a folder: exit 2, one line, the old file kept), any pyproject.toml, and
any value of the Python API's arguments.

Bounded to about two minutes on two cores: the examples run in-process (vkverify.cli.main) with an
alarm per call; a handful run as real subprocesses.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._bad_inputs import Outcome, broken, mutate, run_main

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.json"))
DOCS = [json.loads(p.read_text()) for p in CORPUS]
VERBS = ["check", "explain", "graph", "simulate"]
TIMEOUT = 30  # seconds per call: the slowest corpus stream simulates in a few


def campaign(examples: int) -> settings:
    """Seeded (the same inputs each run), no example database, no deadline: each call has its own timeout."""
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True, print_blob=True,
                    suppress_health_check=list(HealthCheck))
EXAMPLES = {"streams": 700, "converter lines": 400, "gfxr": 25, "pyproject": 200, "api": 150}
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
        path.write_text(broken_lines(small_capture[1], rnd), errors="surrogateescape")
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
    """How many generated inputs ran (printed); each campaign that ran met its count."""
    with capsys.disabled():
        print(f"\nbad-input campaign: {RAN}")
    assert all(RAN.get(k, n) >= n for k, n in EXAMPLES.items()), RAN
