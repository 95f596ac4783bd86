"""Specialization by spirv-opt: the constants a pipeline sets decide which buffers its code touches."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

from vkverify.shaders import SpirvError, reflect
from vkverify.shaders.reflect import spec_constant_types
from vkverify.shaders.specialize import specialize

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
    tmp = tmp_path_factory.mktemp("spec")
    (tmp / "k.comp").write_text(SOURCE)
    subprocess.run(["glslangValidator", "-V", "-o", str(tmp / "k.spv"), str(tmp / "k.comp")],
                   check=True, capture_output=True)
    return (tmp / "k.spv").read_bytes()


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
