"""The importer's shader and descriptor paths on small captures made here: reflection by use of undecorated
GLSL, each pipeline's specialization constants, descriptor update templates, push descriptors, and the
dispatches an import cannot resolve."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from .conftest import compile_glsl
from .test_import import _jsonl, capture

from vkverify.check import check
from vkverify.cli import main
from vkverify.importer import import_capture

pytestmark = pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="glslangValidator not installed")

# No readonly/writeonly: which buffer is read is up to the code and MODE, a specialization constant.
SHADER = """#version 450
layout(local_size_x = 4) in;
layout(constant_id = 0) const uint MODE = 0;
layout(set = 0, binding = 0) buffer A { uint a[]; };
layout(set = 0, binding = 1) buffer B { uint b[]; };
layout(set = 0, binding = 2) buffer C { uint c[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (MODE == 1u) c[i] = a[i]; else c[i] = b[i];
}
"""
# One dispatch per descriptor path, MODE alternating; each run makes its buffers A, B, C in that order.
RUNS = [("set", 1), ("template", 0), ("push", 1), ("push_template", 0), ("dynamic", 0)]
PROGRAM = """
import numpy as np
from pathlib import Path
from tests._lavapipe import ComputeDevice
d = ComputeDevice(push_descriptors=True)
spirv = Path({spirv!r}).read_bytes()
for path, mode in {runs!r}:
    out = d.run(spirv, [np.arange(4, dtype=np.uint32), np.arange(4, dtype=np.uint32) + 10, np.zeros(4, np.uint32)],
                b"", (1, 1, 1), {{0: mode}}, path)
    assert list(out[2]) == list(out[1 - mode]), (path, mode, out)
d.close()
"""


@pytest.fixture(scope="module")
def paths_capture(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paths")
    return capture(PROGRAM.format(spirv=str(compile_glsl(SHADER, tmp)), runs=RUNS), tmp / "paths.gfxr")


def _dispatches(stream):
    return [c for cb in stream.command_buffers for c in cb.commands if c.label.startswith("vkCmdDispatch")]


def test_every_descriptor_path_and_specialization_resolves(paths_capture):
    stream, summary = import_capture(paths_capture)
    assert not summary.partial and not summary.warnings, summary.lines()
    dispatches = _dispatches(stream)
    assert len(dispatches) == len(RUNS)
    buffers = [b.id for b in stream.buffers]
    for k, ((path, mode), dispatch) in enumerate(zip(RUNS, dispatches)):
        a, b, c = buffers[3 * k:3 * k + 3]
        # MODE=1 reads A only, MODE=0 B only: the branch the constant disables reads nothing.
        assert [(x.buffer, x.access) for x in dispatch.bindings] == [(a if mode else b, "read"), (c, "write")], path
    # The dynamic path's data sits one offset alignment into each buffer: the dynamic offset moves the binding there.
    sizes = {b.id: b.size for b in stream.buffers}
    assert {(x.offset, x.size) for x in dispatches[-1].bindings} == {(sizes[buffers[-1]] - 16, 16)} != {(0, 16)}
    assert check(stream) == []


def test_json_lines_without_the_binary_parts_say_what_they_lack(paths_capture, tmp_path):
    jsonl, shaders = tmp_path / "paths.jsonl", tmp_path / "shaders"
    shaders.mkdir()
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(paths_capture)], check=True, capture_output=True)
    subprocess.run(["gfxrecon-extract", "--dir", str(shaders), str(paths_capture)], check=True, capture_output=True)
    stream, summary = import_capture(jsonl, shaders)
    # The specialization data and the template data live only in the .gfxr's blocks.
    assert any("specialization constants are not in the capture" in w for w in summary.warnings)
    assert any("vkUpdateDescriptorSetWithTemplate" in w for w in summary.warnings)
    assert any("vkCmdPushDescriptorSetWithTemplateKHR" in w for w in summary.warnings)
    unused = "where no descriptor of a bound buffer is: that access is left out"
    assert summary.partial and summary.unresolved == {
        f"shader module {m} uses set 0, binding {b}, {unused}": 1 for m in _modules(stream, (1, 3)) for b in (0, 1, 2)}
    assert sum(line.startswith("unresolved: ") for line in summary.lines()) == 6
    set_path, template, push, push_template, _ = _dispatches(stream)
    # Without its constants' values, every branch counts: A and B are both read.
    for dispatch in (set_path, push):
        assert [x.access for x in dispatch.bindings] == ["read", "read", "write"]
    assert template.bindings == push_template.bindings == ()


def test_check_says_its_verdict_on_unresolved_dispatches_is_partial(paths_capture, tmp_path, capsys):
    jsonl = tmp_path / "paths.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(paths_capture)], check=True, capture_output=True)
    main(["check", "--format", "json", str(paths_capture), str(jsonl)])
    complete, partial = json.loads(capsys.readouterr().out)
    assert "partial" not in complete
    # No SPIR-V and no template data: the sets the templates wrote are unknown at the two template dispatches.
    assert len(partial["partial"]) == 2 and all(
        line.startswith("unresolved: 1 dispatch: shader module ") and "descriptor update template" in line
        for line in partial["partial"])
    main(["check", str(jsonl)])
    text = capsys.readouterr().out.splitlines()
    assert text[0].endswith("(partial verdict)") and text[1:3] == ["  " + line for line in partial["partial"]]


def _modules(stream, runs):
    """The shader module handle of each of `runs` (indices into RUNS), from the abstract shaders' names."""
    return [int(_dispatches(stream)[k].shader.removeprefix("sh").split("_")[0]) for k in runs]


def test_a_dispatch_without_a_pipeline_is_unresolved(tmp_path):
    calls = [("vkCreateDevice", {"physicalDevice": 1, "pDevice": 2}),
             ("vkBeginCommandBuffer", {"commandBuffer": 5}),
             ("vkCmdDispatch", {"commandBuffer": 5, "groupCountX": 1, "groupCountY": 1, "groupCountZ": 1})]
    stream, summary = import_capture(_jsonl(tmp_path / "nopipe.jsonl", calls))
    assert _dispatches(stream) == []
    assert summary.partial and summary.unresolved == {"no compute pipeline is bound": 1}
