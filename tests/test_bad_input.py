"""Bad input through the real CLI: exit code 2, one `FILE: JSON.path: message` line per error, no traceback.

docs/format.md: "Unknown ids, wrong types, negative sizes, ranges past a buffer's end and
unknown stage/access names are input errors: exit code 2, one line per error naming the JSON path".
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A valid stream touching every kind of id the tests below break.
BASE = {
    "format": "vkverify-stream/1",
    "name": "bad-input-base",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
    "buffers": [{"id": "A", "size": 4096}, {"id": "B", "size": 4096}],
    "semaphores": [{"id": "S", "type": "binary"}, {"id": "T", "type": "timeline", "initial": 0}],
    "fences": [{"id": "F", "signaled": False}],
    "shaders": {"k": {"bindings": ["read", "write"]}},
    "command_buffers": {"cb0": [
        {"cmd": "fill", "dst": "A", "offset": 0, "size": 4096},
        {"cmd": "copy", "src": "A", "dst": "B"},
        {"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"],
         "dst_stage": ["compute_shader"], "dst_access": ["shader_storage_read"]},
        {"cmd": "dispatch", "shader": "k",
         "bindings": [{"buffer": "B", "access": "read"}, {"buffer": "A", "access": "write"}]},
    ]},
    "threads": {"main": [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "signal": [{"semaphore": "S"}], "fence": "F"},
        {"op": "submit", "queue": "q0", "wait": [{"semaphore": "S"}], "signal": [{"semaphore": "T", "value": 1}]},
        {"op": "wait_fences", "fences": ["F"]},
    ]},
}


def run_cli(*files: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vkverify.cli", "check", *map(str, files)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)


def write(tmp_path: Path, doc, name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def assert_bad(result: subprocess.CompletedProcess, path: Path, n_lines: int | None = 1) -> list[str]:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr
    lines = result.stderr.splitlines()
    if n_lines is not None:
        assert len(lines) == n_lines, lines
    for line in lines:
        assert line.startswith(f"{path}: "), line
    return lines


def test_base_stream_is_valid(tmp_path):
    """The mutations below break a stream that is valid as written (exit 0 or 1, nothing on stderr)."""
    path = write(tmp_path, BASE)
    result = run_cli(path)
    assert result.returncode in (0, 1), result.stderr
    assert result.stderr == ""


def _set(doc: dict, path: tuple, value) -> None:
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DELETE = object()

# (test id, [(path in the document, new value)], expected JSON path in the message, words the message names)
SINGLE_ERRORS = [
    ("unknown-buffer-in-copy", [(("command_buffers", "cb0", 1, "src"), "Nope")],
     "command_buffers.cb0[1].src", ["Nope"]),
    ("unknown-buffer-in-fill", [(("command_buffers", "cb0", 0, "dst"), "Nope")],
     "command_buffers.cb0[0].dst", ["Nope"]),
    ("unknown-buffer-in-binding", [(("command_buffers", "cb0", 3, "bindings", 0, "buffer"), "Nope")],
     "command_buffers.cb0[3].bindings[0].buffer", ["Nope"]),
    ("unknown-queue-in-submit", [(("threads", "main", 1, "queue"), "q9")],
     "threads.main[1].queue", ["q9"]),
    ("unknown-command-buffer", [(("threads", "main", 0, "command_buffers"), ["cb9"])],
     "threads.main[0].command_buffers[0]", ["cb9"]),
    ("unknown-semaphore-in-wait", [(("threads", "main", 1, "wait", 0, "semaphore"), "S9")],
     "threads.main[1].wait[0].semaphore", ["S9"]),
    ("unknown-semaphore-in-signal", [(("threads", "main", 0, "signal", 0, "semaphore"), "S9")],
     "threads.main[0].signal[0].semaphore", ["S9"]),
    ("unknown-fence-in-wait-fences", [(("threads", "main", 2, "fences"), ["F9"])],
     "threads.main[2].fences[0]", ["F9"]),
    ("unknown-fence-in-submit", [(("threads", "main", 0, "fence"), "F9")],
     "threads.main[0].fence", ["F9"]),
    ("negative-size", [(("buffers", 0, "size"), -1)],
     "buffers[0].size", ["-1"]),
    ("wrong-type-size", [(("buffers", 0, "size"), "big")],
     "buffers[0].size", []),
    ("copy-region-past-end", [(("command_buffers", "cb0", 1, "regions"),
                               [{"src_offset": 4000, "dst_offset": 0, "size": 200}])],
     "command_buffers.cb0[1].regions[0]", ["4200", "4096"]),
    ("binding-past-end", [(("command_buffers", "cb0", 3, "bindings", 0, "offset"), 4000),
                          (("command_buffers", "cb0", 3, "bindings", 0, "size"), 200)],
     "command_buffers.cb0[3].bindings[0]", ["4200", "4096"]),
    ("fill-past-end", [(("command_buffers", "cb0", 0, "offset"), 4096),
                       (("command_buffers", "cb0", 0, "size"), 4)],
     "command_buffers.cb0[0]", ["4100"]),
    ("unknown-stage-name", [(("command_buffers", "cb0", 2, "src_stage"), ["compute_shaders"])],
     "command_buffers.cb0[2].src_stage[0]", ["compute_shaders"]),
    ("unknown-access-name", [(("command_buffers", "cb0", 2, "dst_access"), ["shader_storage_reed"])],
     "command_buffers.cb0[2].dst_access[0]", ["shader_storage_reed"]),
    ("unknown-vulkan-stage-name", [(("command_buffers", "cb0", 2, "dst_stage"), ["VK_PIPELINE_STAGE_2_RAYGEN_BIT"])],
     "command_buffers.cb0[2].dst_stage[0]", ["VK_PIPELINE_STAGE_2_RAYGEN_BIT"]),
    ("unknown-stage-in-semaphore-wait", [(("threads", "main", 1, "wait", 0, "stage"), ["shader"])],
     "threads.main[1].wait[0].stage[0]", ["shader"]),
    ("value-on-binary-semaphore", [(("threads", "main", 0, "signal", 0, "value"), 1)],
     "threads.main[0].signal[0].value", ["S"]),
    ("missing-value-on-timeline-semaphore", [(("threads", "main", 1, "signal", 0, "value"), _DELETE)],
     "threads.main[1].signal[0]", ["T"]),
]


@pytest.mark.parametrize("edits,json_path,words", [pytest.param(e, p, w, id=i) for i, e, p, w in SINGLE_ERRORS])
def test_single_error(tmp_path, edits, json_path, words):
    doc = copy.deepcopy(BASE)
    for where, value in edits:
        _set(doc, where, value)
    path = write(tmp_path, doc)
    (line,) = assert_bad(run_cli(path), path)
    assert line.startswith(f"{path}: {json_path}: "), line
    message = line[len(f"{path}: {json_path}: "):]
    assert message.strip()
    for word in words:
        assert word in message, line


def test_malformed_json(tmp_path):
    path = write(tmp_path, '{"format": "vkverify-stream/1", "name": ')
    (line,) = assert_bad(run_cli(path), path)
    assert "JSON" in line


def test_not_an_object(tmp_path):
    path = write(tmp_path, "[1, 2, 3]")
    assert_bad(run_cli(path), path)


def test_wrong_format_tag(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["format"] = "vkverify-stream/2"
    path = write(tmp_path, doc)
    (line,) = assert_bad(run_cli(path), path)
    assert line.startswith(f"{path}: format: "), line
    assert "vkverify-stream/2" in line


def test_host_list_paths_name_host(tmp_path):
    """With the top-level `host` shorthand, paths are `host[i]...`."""
    doc = copy.deepcopy(BASE)
    doc["host"] = doc.pop("threads")["main"]
    doc["host"][1]["queue"] = "q9"
    path = write(tmp_path, doc)
    (line,) = assert_bad(run_cli(path), path)
    assert line.startswith(f"{path}: host[1].queue: "), line


def test_several_errors_one_line_each(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["command_buffers"]["cb0"][1]["src"] = "Nope"
    doc["command_buffers"]["cb0"][2]["src_stage"] = ["bogus_stage"]
    doc["threads"]["main"][1]["queue"] = "q9"
    doc["threads"]["main"][2]["fences"] = ["F9"]
    path = write(tmp_path, doc)
    lines = assert_bad(run_cli(path), path, n_lines=4)
    paths = sorted(line[len(f"{path}: "):].split(": ")[0] for line in lines)
    assert paths == sorted(["command_buffers.cb0[1].src", "command_buffers.cb0[2].src_stage[0]",
                            "threads.main[1].queue", "threads.main[2].fences[0]"])


def test_several_schema_errors_one_line_each(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["buffers"][0]["size"] = -1
    doc["buffers"][1]["size"] = -7
    path = write(tmp_path, doc)
    lines = assert_bad(run_cli(path), path, n_lines=2)
    assert [line.split(": ")[1] for line in lines] == ["buffers[0].size", "buffers[1].size"]


def test_schema_and_reference_errors_both_reported(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["buffers"][0]["size"] = -1
    doc["threads"]["main"][1]["queue"] = "q9"
    path = write(tmp_path, doc)
    lines = assert_bad(run_cli(path), path, n_lines=None)
    assert any(": buffers[0].size: " in line for line in lines), lines
    assert any(": threads.main[1].queue: " in line for line in lines), lines


def test_missing_file(tmp_path):
    path = tmp_path / "does-not-exist.json"
    (_line,) = assert_bad(run_cli(path), path)


def test_bad_file_among_good_ones_still_exit_2(tmp_path):
    good = write(tmp_path, BASE, "good.json")
    doc = copy.deepcopy(BASE)
    doc["buffers"][1]["size"] = -1
    bad = write(tmp_path, doc, "bad.json")
    result = run_cli(good, bad)
    (_line,) = assert_bad(result, bad)
    assert str(good) in result.stdout  # the good file is still checked and reported


@pytest.mark.parametrize("edit", [
    pytest.param({"command_buffers": {"cb0": [{"cmd": "fill", "dst": "A", "offset": 0, "size": 0}]}}, id="fill"),
    pytest.param({"buffers": [{"id": "A", "size": 0}, {"id": "B", "size": 64}],
                  "command_buffers": {"cb0": [{"cmd": "copy", "src": "B", "dst": "A"}]}}, id="copy-into-empty"),
    pytest.param({"command_buffers": {"cb0": []},
                  "host": [{"op": "host_write", "buffer": "A", "offset": 0, "size": 0}]}, id="host-write"),
])
def test_zero_size_write_is_no_crash(tmp_path, edit):
    doc = {"format": "vkverify-stream/1", "name": "zero",
           "buffers": [{"id": "A", "size": 64, "memory": "host_coherent"}],
           "host": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}], **edit}
    path = write(tmp_path, doc)
    result = run_cli(path)
    assert "Traceback" not in result.stderr, result.stderr[-400:]
    assert result.returncode in (0, 1, 2)
    if result.returncode == 2:
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"{path}: ")


# ---- issue 17: each class of bad input that once ended in a traceback or a hang ----------------------

from tests._bad_inputs import run_main  # noqa: E402


def bad_lines(argv: list[str], file: Path | str) -> list[str]:
    """The stderr lines of `vkverify ARGV` run in-process: exit 2, no traceback, each `FILE: ...`."""
    outcome = run_main([str(a) for a in argv], timeout=60)
    assert outcome.error is None, outcome.error
    assert outcome.code == 2, (outcome.code, outcome.stdout[-300:], outcome.stderr[-300:])
    lines = outcome.stderr.splitlines()
    assert lines and all(line.startswith(f"{file}: ") for line in lines), lines
    (outcome.stdout + outcome.stderr).encode("utf-8")  # printable on a UTF-8 terminal
    return lines


def one_line(tmp_path: Path, data: str | bytes, verb: str = "check", *rest: str) -> str:
    path = tmp_path / "s.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    (line,) = bad_lines([verb, path, *rest], path)
    return line[len(f"{path}: "):]


def edited(*edits) -> str:
    doc = copy.deepcopy(BASE)
    for where, value in edits:
        _set(doc, where, value)
    return json.dumps(doc)


@pytest.mark.parametrize("verb", [["check"], ["explain", "cb0[0]", "cb0[1]"], ["graph"], ["simulate"], ["replay"]])
def test_not_utf8_on_every_verb(tmp_path, verb):
    data = json.dumps(BASE).encode()
    line = one_line(tmp_path, data[:40] + b"\xff\xfe" + data[40:], verb[0], *verb[1:])
    assert line.startswith("$: not UTF-8: byte 0xff at line 1 column 41"), line


def test_nesting_past_python_recursion_limit(tmp_path):
    line = one_line(tmp_path, '{"format": "vkverify-stream/1", "name": ' + "[" * 5000 + "]" * 5000 + "}")
    assert line.startswith("$: nested too deeply"), line


def test_nesting_json_reads_but_a_stream_never_has(tmp_path):
    line = one_line(tmp_path, edited((("command_buffers", "cb0", 0, "label"), json.loads("[" * 150 + "]" * 150))))
    assert "nested more than 100 levels deep" in line, line


def test_number_past_python_digit_limit(tmp_path):
    line = one_line(tmp_path, edited((("buffers", 0, "size"), 7)).replace('"size": 7', '"size": ' + "9" * 5000))
    assert line.startswith("$: invalid JSON: Exceeds the limit (4300 digits)"), line


@pytest.mark.parametrize("size, words", [(2 ** 64, "65 bits is past Vulkan's 64"),
                                         (4096.0, "4096.0 is not of type 'integer'"),
                                         (1e308, "is not of type 'integer'")])
def test_sizes_are_64_bit_integers(tmp_path, size, words):
    line = one_line(tmp_path, edited((("buffers", 0, "size"), size)))
    assert line.startswith("buffers[0].size: ") and words in line, line


@pytest.mark.parametrize("where", [("command_buffers", "cb0", 0, "offset"),
                                   ("threads", "main", 1, "signal", 0, "value")])
def test_integral_floats_anywhere_an_integer_goes(tmp_path, where):
    line = one_line(tmp_path, edited((where, 0.0 if "offset" in where else 1.0)))
    assert "is not of type 'integer'" in line, line


def test_nan_is_not_json(tmp_path):
    text = json.dumps({**BASE, "command_buffers": {"cb0": [{"cmd": "dispatch", "shader": "k", "push": [0.5],
                                                            "bindings": ["B", "A"]}]}})
    line = one_line(tmp_path, text.replace("0.5", "NaN"))
    assert line.startswith("$: invalid JSON: NaN is not a JSON number"), line


@pytest.mark.parametrize("where", [("buffers", 0, "id"), ("command_buffers", "cb0", 0, "label"), ("name",)])
def test_lone_surrogate(tmp_path, where):
    text = edited((where, "SURROGATE")).replace('"SURROGATE"', '"A\\ud800"')
    line = one_line(tmp_path, text)
    assert "lone surrogate" in line, line


@pytest.mark.parametrize("odd", ["A\x00", "A\tB", "A\nB", "\x1b[31mA", "A\x85"])
def test_control_characters_in_ids(tmp_path, odd):
    doc = json.loads(json.dumps(BASE).replace('"A"', json.dumps(odd)))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    lines = bad_lines(["check", path], path)
    assert any(line.startswith(f"{path}: buffers[0].id: ") and "control character" in line for line in lines), lines


@pytest.mark.parametrize("odd", ["A B", "\U0001F600", 'q"uote', "back\\slash", "x" * 16384, "cb 0.1", "\u202e"])
def test_odd_ids_every_consumer_quotes(tmp_path, odd):
    """Spaces, quotes, emoji and 16 KB: valid ids that check, explain, graph (valid DOT) and simulate take."""
    path, dot = tmp_path / "s.json", tmp_path / "g.dot"
    path.write_text(json.dumps(BASE).replace('"A"', json.dumps(odd)).replace('"cb0"', json.dumps(odd + "cb")))
    for argv in (["check", path], ["explain", path, f"{odd}cb[0]", f"{odd}cb[1]"],
                 ["simulate", path, "--schedules", "2"], ["graph", path, "-o", dot]):
        outcome = run_main([str(a) for a in argv], timeout=60)
        assert outcome.error is None and outcome.code in (0, 1), (argv[0], outcome.code, outcome.stderr[-300:])
    assert_valid_dot(dot)


def assert_valid_dot(path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed")
    done = subprocess.run(["dot", "-Tsvg", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_dot_labels_with_newlines_tabs_and_16_kb(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["command_buffers"]["cb0"][0]["label"] = "line\nbreak\ttab \"quoted\" back\\slash {braces} <html>"
    doc["command_buffers"]["cb0"][1]["label"] = "y" * 16384
    doc["threads"]["main"][0]["label"] = "\\" * 9000
    path, dot = write(tmp_path, doc), tmp_path / "g.dot"
    outcome = run_main(["graph", str(path), "-o", str(dot)])
    assert outcome.code == 0, outcome
    assert_valid_dot(dot)


@pytest.mark.parametrize("params, words", [
    (5, "params"),
    ({"n": {"min": "a", "max": 2}}, "params.n.min"),
    ({"n": {"min": 0, "max": 10 ** 9}}, "1000000001 combinations; at most 256"),
    ({"n": {"min": 0, "max": 99}, "m": {"min": 0, "max": 99}}, "10000 combinations"),
])
def test_params_blocks(tmp_path, params, words):
    line = one_line(tmp_path, json.dumps({**BASE, "params": params}))
    assert words in line, line


@pytest.mark.parametrize("edit, words", [
    ((("buffers", 0, "size"), "4096//(n-1)"), "division by zero"),
    ((("buffers", 0, "size"), "+".join(["1"] * 100)), "nests more than 32 operators"),
    ((("buffers", 0, "size"), "+".join(["1"] * 30000)), "does not parse"),  # past the parser's own stack
    ((("buffers", 0, "size"), "n" + "*99999999" * 30), "past Vulkan's 64"),
    ((("buffers", 0, "size"), "n\x00"), "control character"),
    ((("command_buffers", "cb0"), [{"for": "i in 1000000000", "do": [{"cmd": "fill", "dst": "A"}]}]),
     "make more than 10000 items"),
    ((("command_buffers", "cb0"), [{"for": "i in 1000, j in 1000", "do": [{"cmd": "fill", "dst": "A"}]}]),
     "make more than 10000 items"),
    ((("command_buffers", "cb0"), [{"for": 5, "do": [{"cmd": "fill", "dst": "A"}]}]), "a loop is"),
    ((("params",), {"n": {"min": 1, "max": 256}}), "make more than 10000 items"),  # 256 instances of n*n items
    ((("command_buffers", "cb0"), [{"for": "i in 2", "do": "fill"}]), "a loop is"),
])
def test_params_expressions_and_loops(tmp_path, edit, words):
    doc = json.loads(edited((("params",), {"n": {"min": 1, "max": 2}}), edit))
    doc["command_buffers"]["cb0"].append({"for": "i in n, j in n", "do": [{"cmd": "fill", "dst": "A"}]})
    line = one_line(tmp_path, json.dumps(doc))
    assert words in line, line


def test_command_buffer_twice_in_one_submit(tmp_path):
    line = one_line(tmp_path, edited((("threads", "main", 0, "command_buffers"), ["cb0", "cb0"])))
    assert line.startswith("threads.main[0].command_buffers[1]: command buffer 'cb0' is submitted twice"), line


def test_alias_cycle(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["buffers"] = [{"id": "A", "alias_of": "B", "size": 64}, {"id": "B", "alias_of": "A", "size": 64}]
    path = write(tmp_path, doc)
    lines = bad_lines(["check", path], path)
    assert any("aliases form a cycle" in line for line in lines), lines


def test_simulate_bounds_memory_before_allocating(tmp_path):
    line = one_line(tmp_path, edited((("buffers", 0, "size"), 2 ** 62), (("buffers", 1, "size"), 2 ** 62),
                                     (("command_buffers", "cb0", 0, "size"), 4096)), "simulate")
    assert line.startswith("buffers: ") and "1 GiB" in line, line


def test_negative_seed_is_a_usage_error(tmp_path):
    outcome = run_main(["simulate", str(write(tmp_path, BASE)), "--seed", "-1"])
    assert outcome.code == 2 and "--seed: must be at least 0, got -1" in outcome.stderr, outcome


# ---- output paths: checked before the work, written whole or not at all -----------------------------


@pytest.mark.parametrize("argv, option", [
    (["graph", "{stream}", "-o", "{tmp}/missing/g.dot"], "-o/--output"),
    (["graph", "{stream}", "-o", "{tmp}"], "-o/--output"),
    (["import", "{tmp}/none.jsonl", "-o", "{tmp}/missing/s.json"], "-o/--output"),
    (["mutate", "--junit", "{tmp}/missing/m.xml", "{stream}"], "--junit"),
    (["mutate", "--cache", "{stream}/cache", "{stream}"], "--cache"),
])
def test_output_paths_checked_first(tmp_path, argv, option):
    stream = write(tmp_path, BASE)
    outcome = run_main([a.format(stream=stream, tmp=tmp_path) for a in argv])
    assert outcome.error is None and outcome.code == 2, outcome
    (line,) = outcome.stderr.splitlines()
    assert line.startswith(f"{option}: "), line
    assert outcome.stdout == ""  # no work done


@pytest.mark.parametrize("argv", [["graph", "{bad}", "-o", "{out}"], ["import", "{tmp}/bad.jsonl", "-o", "{out}"]])
def test_failed_command_leaves_the_output_as_it_was(tmp_path, argv):
    bad = write(tmp_path, "{", "bad.json")
    (tmp_path / "bad.jsonl").write_text('{"header": {"json-version": "0.8.0"}}\n[1]\n')
    out = tmp_path / "out"
    out.write_text("before")
    outcome = run_main([a.format(bad=bad, tmp=tmp_path, out=out) for a in argv])
    assert outcome.code == 2 and outcome.error is None, outcome
    assert out.read_text() == "before"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["bad.json", "bad.jsonl", "out"])


def test_write_atomic_failure_keeps_the_old_file_and_no_temporary(tmp_path):
    from vkverify.model.files import write_atomic

    out = tmp_path / "out.dot"
    out.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(out, "new \ud800")  # fails while writing
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.dot"]
    write_atomic(out, "new")
    assert out.read_text() == "new" and oct(out.stat().st_mode & 0o777) != "0o600"


@pytest.mark.parametrize("where, odd, path", [
    ("cb0", "cb[1]", "command_buffers.cb[1]"), ("main", "t@1", "threads.t@1"),
    ("F", "F", None)])
def test_ids_that_spell_references(tmp_path, where, odd, path):
    doc = json.loads(json.dumps(BASE).replace(f'"{where}"', json.dumps(odd)))
    if path is None:  # an operation's id
        doc["command_buffers"]["cb0"][0]["id"], path = "fill@start", "command_buffers.cb0[0].id"
    line = one_line(tmp_path, json.dumps(doc))
    assert line.startswith(f"{path}: ") and "@" in line, line


# ---- captures: truncated, corrupted, converter lines of another shape -------------------------------


# A capture cut off inside a block past its device imports, partial (tests/test_import_partial.py).
@pytest.mark.parametrize("cut, words", [
    (lambda data: data[:10], "no GFXR file header"),
    (lambda data: data[:12] + (10 ** 6).to_bytes(4, "little") + data[16:40], "options are cut off"),
    (lambda data: data[:200], "no vkCreateDevice among its 0 calls (truncated: block 0 at byte"),
])
def test_truncated_gfxr(tmp_path, small_capture, cut, words):
    path = tmp_path / "cut.gfxr"
    path.write_bytes(cut(small_capture[0].read_bytes()))
    for verb in ("check", "import"):
        (line,) = bad_lines([verb, path], path)
        assert words in line, line


@pytest.mark.parametrize("seed", range(6))
def test_flipped_bytes_in_gfxr(tmp_path, small_capture, seed):
    """Corrupted blocks reach the GFXReconstruct tools (bounded in time and memory) and the translator."""
    import random

    rnd, data = random.Random(seed), bytearray(small_capture[0].read_bytes())
    for _ in range(1 + seed):
        data[rnd.randrange(16, len(data))] ^= 1 << rnd.randrange(8)
    path = tmp_path / "flipped.gfxr"
    path.write_bytes(bytes(data))
    outcome = run_main(["check", str(path)], timeout=300)
    assert outcome.error is None and outcome.code in (0, 1, 2), outcome
    if outcome.code == 2:
        assert outcome.stderr.startswith(f"{path}: ") and len(outcome.stderr.splitlines()) == 1, outcome.stderr


def _edit_call(lines: list[str], name: str, change) -> list[str]:
    out = list(lines)
    for i, line in enumerate(out):
        if f'"name":"{name}"' in line:
            record = json.loads(line)
            change(record["vkFunc"])
            out[i] = json.dumps(record)
            return out
    raise AssertionError(f"no {name} in the capture")


@pytest.mark.parametrize("edit, words", [
    (lambda lines: lines[:5] + ["[1, 2]"] + lines[5:], "line 6: a list, not a JSON object"),
    (lambda lines: lines[:5] + ['{"index": 3, "vkFunc": {"args": {}}}'] + lines[5:], "line 6: a call without"),
    (lambda lines: lines[:5] + ['{"index": "3", "vkFunc": {"name": "vkCmdDispatch"}}'] + lines[5:], "a call without"),
    (lambda lines: lines[:5] + ["{" * 5000] + lines[5:], "line 6: invalid JSON"),
    # A size of another type is kept, and read by a later call on that buffer.
    (lambda lines: _edit_call(lines, "vkCreateBuffer", lambda f: f["args"]["pCreateInfo"].update(size="big")),
     "arguments this importer cannot read"),
    (lambda lines: _edit_call(lines, "vkCreateBuffer", lambda f: f["args"].pop("pCreateInfo")),
     "vkCreateBuffer: arguments this importer cannot read"),
    (lambda lines: _edit_call(lines, "vkCmdDispatch", lambda f: f.update(args=[])), "a call without"),
    (lambda lines: _edit_call(lines, "vkMapMemory", lambda f: f["args"].update(memory=987654)),
     "vkMapMemory: arguments this importer cannot read"),
    (lambda lines: lines[:1] + [line.replace('"json-version"', '"v"') for line in lines[1:2]], None),
])
def test_converter_lines_of_another_shape(tmp_path, small_capture, edit, words):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(edit(small_capture[1])) + "\n")
    for verb in ("check", "import"):
        outcome = run_main([verb, str(path)])
        assert outcome.error is None and outcome.code in (0, 1, 2), outcome
        if words is not None:
            assert outcome.code == 2 and words in outcome.stderr, outcome.stderr


def test_a_call_named_like_a_translator_method_is_not_called(tmp_path, small_capture):
    lines = small_capture[1]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines[:5] + ['{"index": 4, "vkFunc": {"name": "document", "args": {}}}'] + lines[5:]))
    outcome = run_main(["check", str(path)])
    assert outcome.error is None and outcome.code in (0, 1), outcome


def test_jsonl_not_utf8(tmp_path, small_capture):
    path = tmp_path / "c.jsonl"
    path.write_bytes("\n".join(small_capture[1]).encode()[:900] + b"\xff\n")
    (line,) = bad_lines(["import", path], path)
    assert "not UTF-8 (byte 0xff)" in line, line


def test_gfxrecon_tools_bounded_in_time_and_memory(tmp_path, monkeypatch):
    from vkverify.importer import gfxr
    from vkverify.model import CaptureError

    path = tmp_path / "c.gfxr"
    path.write_bytes(b"GFXR" + bytes(12))
    monkeypatch.setattr(gfxr, "TOOL_SECONDS", 1)
    with pytest.raises(CaptureError, match="sleep ran past 1 s"):
        gfxr._run(["sleep", "30"], path)
    with pytest.raises(CaptureError, match="failed"):  # 5 GiB past the 4 GiB of address space
        gfxr._run([sys.executable, "-c", "bytearray(5 << 30)"], path)
