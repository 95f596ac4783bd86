"""Specialization by spirv-opt: the constants a pipeline sets decide which buffers its code touches."""

from __future__ import annotations

import shutil
import struct

import pytest

from vkverify.shaders import SpirvError, reflect
from vkverify.shaders.reflect import push_loads, spec_constant_types
from vkverify.shaders.specialize import specialize

from .conftest import compile_glsl

pytestmark = pytest.mark.skipif(shutil.which("glslangValidator") is None or shutil.which("spirv-opt") is None,
                                reason="glslangValidator or spirv-opt not installed")

# Each buffer is touched under one constant's branch only; none is decorated readonly or writeonly.
SOURCE = """#version 450
layout(local_size_x_id = 4) in;
layout(constant_id = 0) const bool USE_A = false;
layout(constant_id = 1) const int SHIFT = 0;
layout(constant_id = 2) const float SCALE = 1.0;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 1) buffer B { uint b[]; };
layout(binding = 2) buffer C { uint c[]; };
layout(binding = 3) buffer O { uint o[]; };
void main() {
  uint x = 0u;
  if (USE_A) x += a[0];
  if (SHIFT < 0) b[0] = 1u;
  if (SCALE > 2.5) x += c[0];
  o[0] = x;
}
"""


@pytest.fixture(scope="module")
def spirv(tmp_path_factory) -> bytes:
    return compile_glsl(SOURCE, tmp_path_factory.mktemp("spec")).read_bytes()


def test_spec_constant_types(spirv):
    assert spec_constant_types(spirv) == {0: "bool", 1: "i32", 2: "f32", 4: "u32"}


def _accesses(spirv: bytes) -> dict[int, str]:
    return {b.binding: b.access for b in reflect(spirv).bindings if b.access != "none"}


@pytest.mark.parametrize("values, expected", [
    ({}, {3: "write"}),  # the defaults disable every branch
    ({0: struct.pack("<I", 1)}, {0: "read", 3: "write"}),  # VkBool32 true
    ({1: struct.pack("<i", -3)}, {1: "write", 3: "write"}),  # a negative int
    ({1: struct.pack("<i", 3), 2: struct.pack("<f", 2.75)}, {2: "read", 3: "write"}),
    ({2: struct.pack("<f", 2.5)}, {3: "write"}),  # the comparison is strict
])
def test_constants_disable_branches(spirv, values, expected):
    # Unspecialized, every branch may run.
    assert _accesses(spirv) == {0: "read", 1: "write", 2: "read", 3: "write"}
    assert _accesses(specialize(spirv, values)) == expected


def test_local_size_from_the_pipeline(spirv):
    assert reflect(specialize(spirv, {4: struct.pack("<I", 32)})).local_size == (32, 1, 1)


def test_spirv_opt_refusal_is_a_spirv_error(spirv):
    with pytest.raises(SpirvError, match="spirv-opt"):
        specialize(spirv[:-8], {0: struct.pack("<I", 1)})


# Push constants: each buffer is touched under a branch on one push constant, read through a helper function,
# a local variable, a vector member and a switch; `n` decides no branch.
PUSH_SOURCE = """#version 450
layout(local_size_x = 1) in;
layout(binding = 0) buffer Acc { uint acc[]; };
layout(binding = 1) buffer Out { uint o[]; };
layout(binding = 2) buffer Oth { uint oth[]; };
layout(binding = 3) buffer Half { uint h[]; };
layout(push_constant) uniform P { uint n; uvec2 flags; int mode; float scale; } pc;
uint bit() { return pc.flags.y; }
void main() {
  uint f = bit();
  if ((f & 4u) != 0u) acc[0] += o[0];
  switch (pc.mode) { case -1: acc[0] += oth[0]; break; default: acc[0] += pc.n; }
  if (pc.scale > 0.5) h[0] = 1u;
}
"""


@pytest.fixture(scope="module")
def push_spirv(tmp_path_factory) -> bytes:
    return compile_glsl(PUSH_SOURCE, tmp_path_factory.mktemp("push")).read_bytes()


def test_the_push_loads_that_decide_branches(push_spirv):
    """pc.n is loaded too, but no branch depends on it: only the three others decide what is accessed."""
    everything = {(load.offset, load.size) for load in push_loads(push_spirv)}
    deciding = {(load.offset, load.size) for load in push_loads(push_spirv, branching=True)}
    assert everything == {(0, 4), (12, 4), (16, 4), (20, 4)} and deciding == {(12, 4), (16, 4), (20, 4)}


@pytest.mark.parametrize("flags, mode, scale, expected", [
    (0, 0, 0.0, {0: "read_write"}),  # every branch dead
    (4, 0, 0.0, {0: "read_write", 1: "read"}),
    (5, -1, 0.0, {0: "read_write", 1: "read", 2: "read"}),  # a negative int selects its case
    (0, 1, 0.75, {0: "read_write", 3: "write"}),
    (0, 1, 0.5, {0: "read_write"}),  # the comparison is strict
])
def test_push_constants_disable_branches(push_spirv, flags, mode, scale, expected):
    assert _accesses(push_spirv) == {0: "read_write", 1: "read", 2: "read", 3: "write"}  # unknown: every branch
    push = {12: struct.pack("<I", flags), 16: struct.pack("<i", mode), 20: struct.pack("<f", scale)}
    assert _accesses(specialize(push_spirv, {}, push)) == expected


def test_a_push_constant_without_its_bytes_stays_unknown(push_spirv):
    """Only the loads whose bytes are all given are frozen: the others' branches still count."""
    assert _accesses(specialize(push_spirv, {}, {12: struct.pack("<I", 0), 16: b"\0\0"})) == {
        0: "read_write", 2: "read", 3: "write"}
