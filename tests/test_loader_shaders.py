"""The stream loader checks dispatches of library shaders against their reflected SPIR-V."""

from __future__ import annotations

import json

import pytest

from vkverify.cli import main
from vkverify.model import InvalidStream, from_dict


def stream(shader: str, accesses: list[str | None]) -> dict:
    bindings = [{"buffer": f"B{i}", **({"access": a} if a else {})} for i, a in enumerate(accesses)]
    return {"format": "vkverify-stream/1", "name": "s",
            "buffers": [{"id": f"B{i}", "size": 256} for i in range(len(accesses))],
            "command_buffers": {"cb0": [{"cmd": "dispatch", "shader": shader, "bindings": bindings}]}}


def errors(doc: dict) -> list[str]:
    with pytest.raises(InvalidStream) as e:
        from_dict(doc, "s.json")
    return e.value.lines()


def test_library_shader_accesses_come_from_spirv():
    s = from_dict(stream("add", [None, None, None]))
    assert [b.access for b in s.command_buffers[0].commands[0].bindings] == ["read", "read", "write"]


def test_writable_binding_declared_read_only_is_an_input_error():
    (line,) = errors(stream("add", ["read", "read", "read"]))
    assert line.startswith("s.json: command_buffers.cb0[0].bindings[2].access: ")
    assert "'read'" in line and "'write'" in line


def test_binding_count_must_match_the_shader():
    (line,) = errors(stream("add", ["read", "read"]))
    assert line.startswith("s.json: command_buffers.cb0[0].shader: ") and "3 bindings" in line


def test_unknown_shader_is_an_input_error():
    (line,) = errors(stream("no_such_kernel", ["read"]))
    assert "command_buffers.cb0[0].shader" in line and "unknown shader" in line


@pytest.mark.parametrize("doc, path", [
    (stream("no_such_kernel", ["read"]), "command_buffers.cb0[0].shader"),
    (stream("add", ["read", "read"]), "command_buffers.cb0[0].shader"),
    (stream("add", ["read", "read", "read"]), "command_buffers.cb0[0].bindings[2].access"),
], ids=["unknown-shader", "binding-count", "writable-declared-read"])
def test_cli_exits_2_naming_the_path(tmp_path, capsys, doc, path):
    file = tmp_path / "s.json"
    file.write_text(json.dumps(doc))
    assert main(["check", str(file)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"{file}: {path}: ")
