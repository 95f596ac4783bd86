"""Push constants evaluated like specialization constants: a binding loaded only under a branch on a push
constant is no access of a dispatch whose captured vkCmdPushConstants value makes that branch dead. On a small
program run under the capture layer (tests/_lavapipe.py's `dispatch`)."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from .conftest import compile_glsl
from .test_import import capture

from vkverify.check import check
from vkverify.importer import import_capture
from vkverify.importer.resources import PUSH_EVALUATIONS, Resources
from vkverify.model import ir

pytestmark = pytest.mark.skipif(shutil.which("glslangValidator") is None or shutil.which("spirv-opt") is None,
                                reason="glslangValidator or spirv-opt not installed")

# The pattern; no readonly/writeonly, so reflection goes by what the code does.
SHADER = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Acc { uint acc[]; };
layout(set = 0, binding = 1) buffer Out { uint outv[]; };
layout(push_constant) uniform P { uint n; uint flags; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if ((pc.flags & 4u) != 0u) acc[i] += outv[i];
  acc[i] += pc.n;
}
"""
# Each dispatch binds an accumulator the host wrote and an `out` buffer nothing ever writes (device-local,
# host-visible memory on Lavapipe: its contents are undefined); flags 0 first, then 4.
PROGRAM = """
import struct
import numpy as np
from pathlib import Path
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
spirv = Path({spirv!r}).read_bytes()
for flags in (0, 4):
    acc, out = d._buffer(np.arange(4, dtype=np.uint32).tobytes()), d._buffer(b"")
    d.dispatch(spirv, [(acc[0], 16), (out[0], 4)], struct.pack("<II", 3, flags), (1, 1, 1))
    for buffer, memory in (acc, out):
        d.vk.vkDestroyBuffer(d.device, buffer, None)
        d.vk.vkFreeMemory(d.device, memory, None)
d.close()
"""


@pytest.fixture(scope="module")
def push_capture(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("push")
    return capture(PROGRAM.format(spirv=str(compile_glsl(SHADER, tmp))), tmp / "push.gfxr")


def _dispatches(stream: ir.Stream) -> list[ir.Dispatch]:
    return [c for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.Dispatch)]


def test_a_load_under_a_branch_dead_for_the_pushed_value_is_no_access(push_capture):
    """With flags 0 the load of `outv` never runs (GLSL: `&` and `!=` on the pushed value), so the first
    dispatch reads no undefined bytes; with flags 4 it does: the second dispatch's uninitialized_read is true
    (spec, "Memory Allocation": the contents of newly allocated memory are undefined), and the one finding."""
    stream, summary = import_capture(push_capture)
    first, second = _dispatches(stream)
    # The one device read of mapped bytes no write reached is the second dispatch's.
    (warning,) = summary.warnings
    assert not summary.unresolved and f"no captured write reached (first: {second.label} reads" in warning
    assert [b.access for b in first.bindings] == ["read_write"]  # `out` is no binding of it
    assert [b.access for b in second.bindings] == ["read_write", "read"]
    (finding,) = check(stream)
    assert (finding.kind, finding.buffer, finding.second) == ("uninitialized_read", second.bindings[1].buffer,
                                                              f"{stream.command_buffers[1].id}[0]")
    assert finding.labels[1] == second.label


def test_without_the_pushed_values_every_branch_counts(push_capture, tmp_path):
    """JSON lines print pValues as an address: the values are unknown, both dispatches may read `out` (whose
    mapping JSON lines take as a host write: no uninitialized read there)."""
    jsonl = tmp_path / "push.jsonl"
    subprocess.run(["gfxrecon-convert", "--output", str(jsonl), str(push_capture)], check=True, capture_output=True)
    subprocess.run(["gfxrecon-extract", "--dir", str(tmp_path), str(push_capture)], check=True, capture_output=True)
    stream, _ = import_capture(jsonl, shader_dir=tmp_path)
    assert [[b.access for b in d.bindings] for d in _dispatches(stream)] == [["read_write", "read"]] * 2


def test_a_module_is_evaluated_with_a_bounded_number_of_pushed_values(tmp_path):
    """Each distinct value is a spirv-opt run: past PUSH_EVALUATIONS of them, a module's dispatches count every
    branch (a superset of the accesses: never a hazard missed), and the import says so."""
    compile_glsl(SHADER, tmp_path).rename(tmp_path / "sh1")
    res = Resources(tmp_path)

    def accesses(n: int, flags: int) -> list[str]:
        return [b.access for b in res.interface(1, "main", (), struct.pack("<II", n, flags)).bindings]

    assert accesses(0, 0) == ["read_write"] and accesses(0, 4) == ["read_write", "read"]
    assert accesses(7, 0) == ["read_write"]  # `n` decides no branch: the same evaluation
    for flags in range(8, 8 * (PUSH_EVALUATIONS - 1), 8):  # bit 4 clear: the branch is dead
        assert accesses(0, flags) == ["read_write"] and not res.push_capped
    assert accesses(0, 1) == ["read_write", "read"] and res.push_capped == {1}
    assert accesses(0, 0) == ["read_write"]  # one evaluated before: still the same
