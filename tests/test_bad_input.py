"""Bad input through the real CLI: exit code 2, one `FILE: JSON.path: message` line per error, no traceback.

STREAM_FORMAT.md: "Unknown ids, wrong types, negative sizes, ranges past a buffer's end and
unknown stage/access names are input errors: exit code 2, one line per error naming the JSON path".
"""

from __future__ import annotations

import copy
import json
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
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


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
    assert [l.split(": ")[1] for l in lines] == ["buffers[0].size", "buffers[1].size"]


def test_schema_and_reference_errors_both_reported(tmp_path):
    doc = copy.deepcopy(BASE)
    doc["buffers"][0]["size"] = -1
    doc["threads"]["main"][1]["queue"] = "q9"
    path = write(tmp_path, doc)
    lines = assert_bad(run_cli(path), path, n_lines=None)
    assert any(": buffers[0].size: " in l for l in lines), lines
    assert any(": threads.main[1].queue: " in l for l in lines), lines


def test_missing_file(tmp_path):
    path = tmp_path / "does-not-exist.json"
    (line,) = assert_bad(run_cli(path), path)


def test_bad_file_among_good_ones_still_exit_2(tmp_path):
    good = write(tmp_path, BASE, "good.json")
    doc = copy.deepcopy(BASE)
    doc["buffers"][1]["size"] = -1
    bad = write(tmp_path, doc, "bad.json")
    result = run_cli(good, bad)
    (line,) = assert_bad(result, bad)
    assert str(good) in result.stdout  # the good file is still checked and reported


@pytest.mark.parametrize("edit", [
    pytest.param({"command_buffers": {"cb0": [{"cmd": "fill", "dst": "A", "offset": 0, "size": 0}]}}, id="fill"),
    pytest.param({"buffers": [{"id": "A", "size": 0}, {"id": "B", "size": 64}],
                  "command_buffers": {"cb0": [{"cmd": "copy", "src": "B", "dst": "A"}]}}, id="copy-into-empty"),
    pytest.param({"command_buffers": {"cb0": []},
                  "host": [{"op": "host_write", "buffer": "A", "offset": 0, "size": 0}]}, id="host-write"),
])
def test_zero_size_write_is_no_crash(tmp_path, edit):
    doc = {"format": "vkverify-stream/1", "name": "zero", "buffers": [{"id": "A", "size": 64, "memory": "host_coherent"}],
           "host": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}], **edit}
    path = write(tmp_path, doc)
    result = run_cli(path)
    assert "Traceback" not in result.stderr, result.stderr[-400:]
    assert result.returncode in (0, 1, 2)
    if result.returncode == 2:
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"{path}: ")
