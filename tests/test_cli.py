"""The command line's conventions, as users of ruff and mypy expect them: --version, directories, options in
any order, -q, --format github and junit, [tool.vkverify] defaults, `ignore` in a stream, simulate's summary
and the graph's legend."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vkverify import __version__
from vkverify.cli import main

from .conftest import ROOT

CORPUS_DIR = ROOT / "tests" / "corpus"
RAW = CORPUS_DIR / "01-copy-then-dispatch-no-barrier.json"  # one raw: cb0[0] -> cb0[1]
CLEAN = CORPUS_DIR / "02-copy-then-dispatch-barrier.json"
IGNORE_RAW = {"kind": "raw", "first": "cb0[0]", "second": "cb0[1]", "reason": "A is rewritten before use"}


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def stream_with(tmp_path: Path, name: str = "s.json", source: Path = RAW, **top) -> Path:
    doc = json.loads(source.read_text())
    doc.update(top)
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == f"vkverify {__version__}\n"


def test_python_dash_m_is_the_command():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "vkverify", "check", str(RAW)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 1 and "raw A" in done.stdout, done.stdout + done.stderr


# ---- arguments -----------------------------------------------------------------


def test_a_directory_is_every_stream_below_it_sorted(tmp_path, capsys):
    (tmp_path / "b").mkdir()
    shutil.copy(RAW, tmp_path / "b" / "2.json")
    shutil.copy(CLEAN, tmp_path / "1.json")
    (tmp_path / "notes.txt").write_text("not a stream")
    code, out, _ = run(capsys, "check", "--format", "json", tmp_path)
    assert code == 1
    assert [d["file"] for d in json.loads(out)] == [str(tmp_path / "1.json"), str(tmp_path / "b" / "2.json")]


def test_a_directory_without_streams_is_a_usage_error(tmp_path, capsys):
    code, out, err = run(capsys, "check", tmp_path)
    assert code == 2 and out == "" and str(tmp_path) in err and err.count("\n") == 1


def test_options_in_any_order(capsys):
    first = run(capsys, "check", "--format", "json", RAW, CLEAN)
    assert run(capsys, "check", RAW, "--format", "json", CLEAN) == first
    assert run(capsys, "check", RAW, CLEAN, "--format", "json") == first
    assert first[0] == 1 and len(json.loads(first[1])) == 2


def test_quiet_prints_only_files_that_say_something(capsys):
    code, out, _ = run(capsys, "check", "-q", CLEAN, RAW)
    assert code == 1 and str(CLEAN) not in out and out.startswith(f"{RAW}:")
    assert run(capsys, "check", CLEAN, "--quiet") == (0, "", "")
    assert run(capsys, "-q", "check", CLEAN) == (0, "", "")  # a flag before the command is the command's


def test_json_of_bad_input_is_still_one_list(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    code, out, err = run(capsys, "check", "--format", "json", bad, CLEAN)
    assert code == 2 and str(bad) in err
    broken, clean = json.loads(out)
    assert broken["file"] == str(bad) and broken["ok"] is False and "invalid JSON" in broken["errors"][0]
    assert clean["ok"] is True
    code, out, _ = run(capsys, "check", "--format", "github", bad)
    assert code == 2 and out.startswith(f"::error file={bad}::") and "invalid JSON" in out


# ---- github and junit ------------------------------------------------------------


ANNOTATION = re.compile(r"^::(error|warning|notice) ((?:\w+=[^,:]*,?)+)::(.*)$")


def test_github_annotations_point_at_the_operation(capsys):
    code, out, _ = run(capsys, "check", "--format", "github", RAW, CLEAN)
    assert code == 1
    (line,) = out.splitlines()  # the clean file says nothing
    level, props, message = ANNOTATION.match(line).groups()
    props = dict(p.split("=", 1) for p in props.split(","))
    assert level == "error" and props["file"] == str(RAW)
    assert '"label": "consume A"' in RAW.read_text().splitlines()[int(props["line"]) - 1]  # cb0[1], the read
    assert "Fix: vkCmdPipelineBarrier2" in message and props["title"].startswith("VKV001 raw")


def test_github_escapes_what_would_end_a_property(tmp_path, capsys):
    path = stream_with(tmp_path, "a,b:c.json")
    _, out, _ = run(capsys, "check", "--format", "github", path)
    assert "file=" + str(path).replace(",", "%2C").replace(":", "%3A") + "," in out


def test_junit_a_testcase_per_finding(tmp_path, capsys):
    suppressed = stream_with(tmp_path, ignore=[IGNORE_RAW])
    code, out, _ = run(capsys, "check", "--format", "junit", RAW, CLEAN, suppressed)
    assert code == 1
    root = ET.fromstring(out)
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")
    raw, clean, ignored = root.findall("testsuite")
    assert raw.get("name") == str(RAW) and raw.find("testcase/failure") is not None
    assert clean.find("testcase").get("name") == "no findings" and len(clean.find("testcase")) == 0
    assert "A is rewritten before use" in ignored.find("testcase/skipped").get("message")


def test_junit_holds_a_file_name_xml_cannot(tmp_path, capsys):
    """check's JUnit goes through the writer mutate's does (model/junit.py): a control character in a file's
    name becomes U+FFFD, and the document still parses."""
    path = stream_with(tmp_path, "raw\x1b[0m.json")
    code, out, _ = run(capsys, "check", "--format", "junit", path)
    suite = ET.fromstring(out).find("testsuite")
    assert code == 1 and suite.get("name") == str(tmp_path / "raw\ufffd[0m.json") and suite.get("failures") == "1"


def test_simulate_schedules_past_the_bound_is_exit_2(capsys):
    """Issue 30 point 10: --schedules 10**20 ran (practically) forever."""
    code, out, err = run(capsys, "simulate", RAW, "--schedules", 10 ** 20)
    assert (code, out) == (2, "") and err == ("vkverify simulate: --schedules: expected an integer in [1, 100000], "
                                              f"got {10 ** 20}\n")


@pytest.mark.parametrize("fmt", ["text", "sarif", "json"])
def test_check_output_file_holds_what_stdout_would(tmp_path, capsys, fmt):
    """Issue 30 point 4: `check` had no -o (exit 2, unrecognized argument)."""
    code, out, _ = run(capsys, "check", RAW, CLEAN, "--format", fmt)
    target = tmp_path / "report"
    assert run(capsys, "check", RAW, CLEAN, "--format", fmt, "-o", target) == (code, "", "")
    assert target.read_text() == out and [p.name for p in tmp_path.iterdir()] == ["report"]


# ---- [tool.vkverify] -----------------------------------------------------------


def in_project(tmp_path: Path, monkeypatch, toml: str) -> Path:
    """A project with `toml` as its pyproject.toml, the working directory one folder below it."""
    (tmp_path / "pyproject.toml").write_text(toml)
    below = tmp_path / "src"
    below.mkdir(exist_ok=True)
    monkeypatch.chdir(below)
    return below


def test_pyproject_gives_defaults_and_flags_override(tmp_path, monkeypatch, capsys):
    in_project(tmp_path, monkeypatch, '[tool.vkverify]\nquiet = true\n[tool.vkverify.check]\nformat = "json"\n')
    code, out, _ = run(capsys, "check", RAW)
    assert code == 1 and json.loads(out)[0]["file"] == str(RAW)
    code, out, _ = run(capsys, "check", RAW, CLEAN, "--format", "text")
    assert out.startswith(f"{RAW}:") and str(CLEAN) not in out  # text from the flag, quiet from the table


def test_pyproject_unknown_key_names_it(tmp_path, monkeypatch, capsys):
    in_project(tmp_path, monkeypatch, "[tool.vkverify.check]\nformt = \"json\"\n")
    code, out, err = run(capsys, "check", RAW)
    assert code == 2 and out == "" and "tool.vkverify.check.formt: unknown key" in err
    in_project(tmp_path, monkeypatch, "[tool.vkverify]\nshedules = 3\n")
    assert run(capsys, "check", RAW)[2].count("tool.vkverify.shedules: unknown key") == 1


def test_pyproject_bad_value_names_the_key(tmp_path, monkeypatch, capsys):
    in_project(tmp_path, monkeypatch, '[tool.vkverify.check]\nformat = "xml"\n')
    code, _, err = run(capsys, "check", RAW)
    assert code == 2 and "tool.vkverify.check.format: 'xml' is not one of" in err
    in_project(tmp_path, monkeypatch, '[tool.vkverify.check]\nreading = ["nope=true"]\n')
    code, _, err = run(capsys, "check", RAW)
    assert code == 2 and "tool.vkverify.check.reading: unknown reading 'nope'" in err


@pytest.mark.parametrize("toml, says", [
    (b"tool = 3\n", "pyproject.toml: tool: must be a table, got an integer"),
    (b"[tool]\nvkverify = [1]\n", "pyproject.toml: tool.vkverify: must be a table, got an array"),
    (b"[tool.vkverify]\ncheck = true\n", "pyproject.toml: tool.vkverify.check: must be a table, got a boolean"),
    (b'[tool.vkverify]\nformat = ["json", "text"]\n',
     "pyproject.toml: tool.vkverify.format: takes one value, got an array of 2"),
    (b"[tool.vkverify]\nquiet = true\nname = \"\xff\"\n", "pyproject.toml: line 3: not UTF-8 text (byte 0xff)"),
    (b"[tool.vkverify\n", "pyproject.toml: not TOML: "),
])
def test_a_broken_pyproject_is_exit_2_naming_the_file_and_the_key(tmp_path, monkeypatch, capsys, toml, says):
    """Issue 30 point 6: a traceback (tool = 3, non-UTF-8 bytes) or the last value of a list winning, before."""
    in_project(tmp_path, monkeypatch, "")
    (tmp_path / "pyproject.toml").write_bytes(toml)
    for verb in (["check", RAW], ["graph", RAW], ["simulate", RAW]):
        code, out, err = run(capsys, *verb)
        assert (code, out) == (2, "") and err.count("\n") == 1, err
        assert err.startswith(f"vkverify: {tmp_path / 'pyproject.toml'}: ") and says in err, err


def test_pyproject_repeatable_option_and_flags(tmp_path, monkeypatch, capsys):
    """reading = [...] as --reading given twice; expect and quiet as flags: RAW's finding is expected, so -q
    with --expect has nothing to say."""
    in_project(tmp_path, monkeypatch, '[tool.vkverify]\nquiet = true\n[tool.vkverify.check]\nexpect = true\n'
                                      'reading = ["all_commands_includes_host=false", "host_threads_coherent=true"]\n')
    assert run(capsys, "check", RAW) == (0, "", "")
    from vkverify.cli import parse

    args = parse(["check", RAW.name, "--reading", "host_threads_coherent=false"])
    assert args.readings.all_commands_includes_host is False and args.readings.host_threads_coherent is False
    assert args.quiet and args.expect


def test_a_pyproject_without_the_table_changes_nothing(tmp_path, monkeypatch, capsys):
    in_project(tmp_path, monkeypatch, "[tool.other]\nx = 1\n")
    assert run(capsys, "check", RAW)[0] == 1


# ---- ignore --------------------------------------------------------------------


def test_an_ignored_finding_is_suppressed_not_counted(tmp_path, capsys):
    path = stream_with(tmp_path, ignore=[IGNORE_RAW])
    code, out, _ = run(capsys, "check", path)
    assert code == 0
    assert "no findings, 1 suppressed" in out and "suppressed raw A [0, 4096): A is rewritten before use" in out
    (doc,) = json.loads(run(capsys, "check", "--format", "json", path)[1])
    assert doc["ok"] is True and doc["findings"] == []
    (s,) = doc["suppressed"]
    assert (s["kind"], s["first"], s["second"], s["reason"]) == ("raw", "cb0[0]", "cb0[1]", IGNORE_RAW["reason"])


@pytest.mark.parametrize("comment, suppressed", [("# vkverify: ignore[raw]", True), ("#vkverify:ignore", True),
                                                  ("# vkverify: ignore[war, waw]", False), ("# ignore[raw]", False)])
def test_a_comment_on_the_recording_line_accepts_the_finding(tmp_path, monkeypatch, capsys, comment, suppressed):
    """A program's `# vkverify: ignore[kind]` on the line that recorded either operation (the `source` the
    runtime writes), read where the stream is checked."""
    monkeypatch.chdir(tmp_path)
    Path("engine.py").write_text(f"upload(a)\ndispatch(a)  {comment}\n")
    doc = json.loads(RAW.read_text())
    first, second = doc["command_buffers"]["cb0"][:2]
    first["source"], second["source"] = "engine.py:1", "engine.py:2"
    Path("s.json").write_text(json.dumps(doc))
    code, out, _ = run(capsys, "check", "s.json")
    if suppressed:
        assert code == 0 and f"suppressed raw A [0, 4096): {comment} at engine.py:2" in out, out
    else:
        assert code == 1 and "suppressed" not in out, out


def test_an_ignore_entry_that_matches_nothing_is_a_warning(tmp_path, capsys):
    path = stream_with(tmp_path, source=CLEAN, ignore=[IGNORE_RAW])
    code, out, _ = run(capsys, "check", path)
    assert code == 0 and "warning: ignore[0]: matches no finding" in out
    assert json.loads(run(capsys, "check", "--format", "json", path)[1])[0]["warnings"] == [
        "ignore[0]: matches no finding"]
    assert run(capsys, "check", "--format", "github", path)[1].startswith("::warning file=")


def test_an_ignore_entry_must_name_real_operations_and_a_reason(tmp_path, capsys):
    path = stream_with(tmp_path, ignore=[{**IGNORE_RAW, "second": "cb0[9]"}, {"kind": "raw"}])
    code, _, err = run(capsys, "check", path)
    assert code == 2
    assert "ignore[0].second: no operation 'cb0[9]'" in err and "ignore[1]" in err and "reason" in err


def test_ignore_survives_the_dumper(tmp_path):
    from vkverify.model import dumps, load, loads

    stream = load(stream_with(tmp_path, ignore=[IGNORE_RAW]))
    assert stream.ignore and loads(dumps(stream)) == stream
    assert json.loads(dumps(stream))["ignore"] == [IGNORE_RAW]


def test_ignore_by_id(tmp_path, capsys):
    doc = json.loads(RAW.read_text())
    doc["command_buffers"]["cb0"][0]["id"] = "upload"
    path = stream_with(tmp_path, command_buffers=doc["command_buffers"], ignore=[{**IGNORE_RAW, "first": "upload"}])
    assert run(capsys, "check", path)[0] == 0


# ---- simulate and graph ----------------------------------------------------------


def test_simulate_one_line_per_stream_and_verbose(capsys):
    code, out, _ = run(capsys, "simulate", RAW, "--schedules", "10", CLEAN)
    assert code == 1
    raw, clean = out.splitlines()
    assert raw.startswith(f"{RAW}: copy-then-dispatch-no-barrier: ") and "1 confirmed" in raw
    assert clean == f"{CLEAN}: copy-then-dispatch-barrier: 0 of 10 schedules changed a digest"
    code, out, _ = run(capsys, "simulate", "-v", RAW, "--schedules", "10")
    assert "  buffer Out  " in out and "confirmed: schedule" in out
    assert run(capsys, "simulate", "-q", CLEAN, "--schedules", "3") == (0, "", "")


def test_simulate_json_names_each_file(capsys):
    _code, out, _ = run(capsys, "simulate", "--format", "json", "--schedules", "3", CLEAN, RAW)
    assert [d["file"] for d in json.loads(out)] == [str(CLEAN), str(RAW)]


def test_graph_legend_fixes_and_parameters(capsys):
    code, out, _ = run(capsys, "graph", CORPUS_DIR / "81-ring-allreduce-no-cross-round-wait.json")
    assert code == 0
    legend = out[out.index("subgraph cluster_legend"):]
    assert '[label="missing"]' in legend and '[label="semaphore"]' in legend
    fixes = re.findall(r"fix (\d+): ", legend)
    assert fixes and fixes == [str(k) for k in range(1, len(fixes) + 1)]
    edge_fixes = set(re.findall(r'label="\w+ \(fix (\d+)\)"', out))
    assert edge_fixes <= set(fixes) and edge_fixes
    assert "partial of device 0" in out and "partial of device 1" in out and "{d}" not in out


# ---- docs/format.md --------------------------------------------------------------


def test_docs_format_is_the_whole_format():
    """Every field of the schema's top level, every command and host op, every finding kind is in it."""
    from vkverify.check.findings import KINDS
    from vkverify.model.loader import schema

    text = (ROOT / "docs" / "format.md").read_text()
    names = set(schema()["properties"]) | {d.split("_", 1)[1] for d in schema()["$defs"]
                                           if d.startswith(("cmd_", "op_"))}
    missing = sorted(n for n in names if f"`{n}`" not in text and f'"{n}"' not in text)
    assert not missing, missing
    assert all(f"\n#### {kind}\n" in text for kind in KINDS)


def test_help_and_readme_cite_files_the_repository_has(capsys):
    readme = (ROOT / "README.md").read_text()
    assert "docs/format.md" in readme and ".venv/bin/" in readme and "activate" in readme
    for argv in (["--help"], ["check", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "docs/format.md" in capsys.readouterr().out
    cited = set(re.findall(r"\b[\w/]+\.md\b", readme))
    assert cited and all((ROOT / p).exists() for p in cited), cited


# ---- the conventions of ruff, mypy and pytest (issue 28) --------------------------------------------------


def test_select_and_ignore_leave_kinds_out_of_the_report_and_the_exit_code(capsys):
    code, out, _ = run(capsys, "check", "--ignore", "raw", RAW)
    assert code == 0 and "no findings" in out
    code, out, _ = run(capsys, "check", "--select", "war,waw", RAW)
    assert code == 0 and "no findings" in out
    code, out, _ = run(capsys, "check", "--select", "raw", "--ignore", "war", RAW)
    assert code == 1 and "#1 raw A" in out
    with pytest.raises(SystemExit) as e:
        main(["check", "--select", "rw", str(RAW)])
    assert e.value.code == 2 and "rw: expected finding kinds, comma-separated, of raw, war" in capsys.readouterr().err


def test_exit_zero_reports_findings_and_exits_0(tmp_path, capsys):
    code, out, _ = run(capsys, "check", "--exit-zero", RAW)
    assert code == 0 and "#1 raw A" in out
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert run(capsys, "check", "--exit-zero", broken)[0] == 2


def test_statistics_count_each_kind_over_every_file(capsys):
    files = sorted(CORPUS_DIR.glob("0*.json"))
    code, out, _ = run(capsys, "check", "--statistics", *files)
    counts = {line.split()[2]: int(line.split()[0]) for line in out.splitlines()}
    (doc,) = [json.loads(run(capsys, "check", "--format", "json", *files)[1])]
    expected: dict[str, int] = {}
    for result in doc:
        for f in result["findings"]:
            expected[f["kind"]] = expected.get(f["kind"], 0) + 1
    assert code == 1 and counts == expected and counts, out
    assert run(capsys, "check", "--statistics", "--format", "json", RAW)[0] == 2


def test_a_dash_reads_the_stream_from_stdin(monkeypatch, capsys):
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(RAW.read_bytes())))
    code, out, _ = run(capsys, "check", "-")
    assert code == 1 and out.startswith("-: copy-then-dispatch-no-barrier: 1 finding")


@pytest.mark.parametrize("color, no_color, painted", [("always", "", True), ("never", "", False),
                                                      ("auto", "", False), ("auto", "1", False)])
def test_color_on_request_or_on_a_terminal_unless_no_color(monkeypatch, capsys, color, no_color, painted):
    monkeypatch.setenv("NO_COLOR", no_color)
    code, out, _ = run(capsys, "check", "--color", color, RAW)  # auto: capsys is no terminal
    assert code == 1 and ("\x1b[1;31m  #1 raw A" in out) == painted and ("\x1b[" in out) == painted


def test_a_verdict_on_more_submission_orders_than_check_reads_is_partial(tmp_path, capsys):
    """Two threads each submitting four times to one queue and waiting for it idle, nothing ordering them: C(10, 5)
    = 252 interleavings of their calls, more than walk.ORDERS, so only the walk's own is read and the verdict says
    so; with two submits each (C(6, 3) = 20), every one is read and the verdict is whole."""
    def stream(submits: int) -> dict:
        doc = json.loads((ROOT / "tests/corpus/200-two-threads-one-queue-barrier-covers-one-order.json").read_text())
        doc.pop("expect", None)
        doc["threads"] = {t: [{"op": "submit", "queue": "q0", "command_buffers": [cb]}] * submits
                          + [{"op": "queue_wait_idle", "queue": "q0"}] for t, cb in (("up", "cb0"), ("use", "cb1"))}
        return doc
    verdicts = {}
    for submits in (2, 4):
        path = tmp_path / f"{submits}.json"
        path.write_text(json.dumps(stream(submits)))
        main(["check", "--format", "json", "--exit-zero", str(path)])
        (verdicts[submits],) = json.loads(capsys.readouterr().out)
    assert "partial" not in verdicts[2]
    (why,) = verdicts[4]["partial"]
    assert "more than 64 orders" in why and "Several host threads" in why
