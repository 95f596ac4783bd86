"""SPIR-V reflection: the library's shaders and hand-made modules."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vkverify.shaders import (
    SEMANTICS,
    DescriptorType,
    PushField,
    SpirvError,
    interface,
    library,
    load_spirv,
    pack_push,
    reflect,
)

R, W, RW, A = "read", "write", "read_write", "atomic"
ROOT = Path(__file__).resolve().parent.parent

# (accesses by binding, push-constant bytes) of the named kernels.
EXPECTED = {
    "fill": ([W], 8),
    "copy": ([R, W], 4),
    "add": ([R, R, W], 4),
    "axpy": ([R, RW], 8),
    "scale": ([RW], 8),
    "reduce_sum": ([R, A], 8),
    "matvec": ([R, R, W], 8),
    "slow_writer": ([W], 12),
    "reverse_reader": ([R, W], 4),
    "histogram": ([R, A], 8),
    "gather": ([R, R, W], 8),
    "atomic_add": ([A], 8),
}
EXPECTED |= {f"generic_r{r}_w{w}": ([R] * r + [W] * w, 4 * (1 + r + w))
             for r in range(5) for w in range(1, 5)}


def test_library_is_exactly_the_expected_shaders():
    assert set(library()) == set(EXPECTED) == set(SEMANTICS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_library_interface(name):
    accesses, push_size = EXPECTED[name]
    info = interface(name)
    assert [b.access for b in info.bindings] == accesses
    assert [(b.set, b.binding, b.count) for b in info.bindings] == [(0, k, 1) for k in range(len(accesses))]
    assert {b.descriptor_type for b in info.bindings} == {DescriptorType.STORAGE_BUFFER}
    assert info.push_constant_size == push_size
    assert info.local_size == (64, 1, 1)
    assert info.entry_point == "main"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_semantics_write_exactly_the_writable_bindings(name):
    info = interface(name)
    # Zero groups run nothing, so the push values are not needed.
    result = SEMANTICS[name]([np.zeros(4, np.uint32)] * len(info.bindings), [], (0, 1, 1))
    assert sorted(result) == [b.binding for b in info.bindings if b.writable]


def test_load_spirv_unknown_name():
    with pytest.raises(KeyError, match="no shader 'nope'"):
        load_spirv("nope")


glslang = pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="glslangValidator not installed")


def _compile(tmp_path, body: str, target: str = "vulkan1.1") -> bytes:
    source = tmp_path / "k.comp"
    source.write_text("#version 450\n" + body)
    out = tmp_path / "k.spv"
    subprocess.run(["glslangValidator", "-V", "--target-env", target, "-o", str(out), str(source)],
                   check=True, capture_output=True)
    return out.read_bytes()


BUFFERS = """
layout(local_size_x = 8, local_size_y = 4) in;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) buffer B { uint b[]; };
layout(set = 0, binding = 2) writeonly buffer C { uint c[]; };
layout(set = 1, binding = 5) uniform U { uint u; };
layout(set = 2, binding = 0) buffer D { uint d[]; } ds[3];
void main() { c[0] = a[0] + b[0] + u + ds[2].d[0]; b[1] = 0u; }
"""


@glslang
@pytest.mark.parametrize("target", ["vulkan1.0", "vulkan1.1", "vulkan1.2"])
def test_buffer_qualifiers(tmp_path, target):
    # vulkan1.0 declares storage buffers as Uniform + BufferBlock, and
    # vulkan1.2 (SPIR-V 1.5) lists them in the entry point's interface.
    info = reflect(_compile(tmp_path, BUFFERS, target))
    got = [(b.set, b.binding, b.descriptor_type, b.count, b.access) for b in info.bindings]
    assert got == [
        (0, 0, DescriptorType.STORAGE_BUFFER, 1, R),
        (0, 1, DescriptorType.STORAGE_BUFFER, 1, RW),
        (0, 2, DescriptorType.STORAGE_BUFFER, 1, W),
        (1, 5, DescriptorType.UNIFORM_BUFFER, 1, R),
        (2, 0, DescriptorType.STORAGE_BUFFER, 3, R),  # undecorated, only read
    ]
    assert info.local_size == (8, 4, 1)
    assert info.push_constant_size == 0


@glslang
def test_a_binding_only_atomics_touch_is_atomic(tmp_path):
    """A binding read and written by OpAtomic* alone is `atomic` (two such dispatches do not race); one that
    atomics and plain loads or stores both touch is read_write (its plain accesses race others' atomics); an
    atomic load alone is a read."""
    info = reflect(_compile(tmp_path, """
layout(local_size_x = 1) in;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 1) buffer B { uint b[]; };
layout(binding = 2) buffer C { uint c[]; };
void main() { atomicAdd(a[0], 1u); atomicMax(b[0], 2u); b[1] = 3u; c[0] = atomicOr(a[1], 0u) + atomicAdd(c[1], 0u); }
"""))
    assert [b.access for b in info.bindings] == [A, RW, RW]
    loads = reflect(_compile(tmp_path, """
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
layout(local_size_x = 1) in;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 1) writeonly buffer B { uint b[]; };
void main() { b[0] = atomicLoad(a[0], gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed); }
""", "vulkan1.2"))
    assert [b.access for b in loads.bindings] == [R, W]


@glslang
def test_readonly_writeonly_is_no_access(tmp_path):
    info = reflect(_compile(tmp_path, """
layout(local_size_x = 1) in;
layout(binding = 0) readonly writeonly buffer A { uint a[]; };
void main() {}
"""))
    assert info.binding(0).access == "none"


@glslang
def test_undecorated_buffers_by_use(tmp_path):
    # No readonly/writeonly, as naga, Taichi and much hand-written GLSL emit: the code decides.
    info = reflect(_compile(tmp_path, """
layout(local_size_x = 1) in;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 1) buffer B { uint b[]; };
layout(binding = 2) buffer C { uint c[]; };
layout(binding = 3) buffer D { uint d[]; };
layout(binding = 4) uniform U { uint u; };
layout(binding = 5) buffer E { uint e[]; } es[2];
layout(binding = 6) uniform V { uint v; };
void put(uint i, uint x) { b[i] = x; }
void main() { put(uint(d.length()), a[0] + v); atomicAdd(c[0], 1u); es[1].e[0] += 1u; }
"""))
    # d only has its length taken; u is declared and never used; c only atomics touch.
    assert [b.access for b in info.bindings] == [R, W, A, "none", "none", RW, R]


def _assemble(tmp_path, text: str) -> bytes:
    source, out = tmp_path / "k.spvasm", tmp_path / "k.spv"
    source.write_text(text)
    subprocess.run(["spirv-as", "--target-env", "vulkan1.1", "-o", str(out), str(source)],
                   check=True, capture_output=True)
    subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(out)], check=True, capture_output=True)
    return out.read_bytes()


spirv_as = pytest.mark.skipif(shutil.which("spirv-as") is None, reason="spirv-as (spirv-tools) not installed")
POINTERS = (ROOT / "tests" / "spirv" / "pointers.spvasm").read_text()


@spirv_as
def test_uses_through_pointers_functions_and_atomics(tmp_path):
    spirv = _assemble(tmp_path, POINTERS)
    # loaded: read by a callee through its parameter; stored: written by a callee through OpPtrAccessChain;
    # copied_to/copied_from: OpCopyMemory; atomic: OpAtomicIAdd; selected: OpSelect, OpPhi, then a store
    # through a function's returned pointer; other_only: written by the other entry point; unused; escaped: a
    # pointer into it is stored in a variable, from which any code could load it.
    assert [b.access for b in reflect(spirv, "main").bindings] == [R, W, W, R, A, W, "none", "none", RW]
    assert [b.access for b in reflect(spirv, "other").bindings] == ["none"] * 6 + [W, "none", "none"]


@spirv_as
@pytest.mark.parametrize("decoration, access", [("NonWritable", R), ("NonReadable", W)])
def test_decorations_bound_what_the_code_does(tmp_path, decoration, access):
    # The atomic binding is read and written by its uses; a decoration is the program's guarantee.
    last = "OpDecorate %unused Binding 7"
    text = POINTERS.replace(last, f"{last}\nOpDecorate %atomic {decoration}")
    assert reflect(_assemble(tmp_path, text), "main").binding(4).access == access


@glslang
def test_push_constant_block(tmp_path):
    info = reflect(_compile(tmp_path, """
layout(local_size_x = 1) in;
layout(push_constant) uniform P { vec3 v; float f; uint a[2]; int s; } p;
layout(binding = 0) writeonly buffer O { float o[]; };
void main() { o[0] = p.v.x + p.f + float(p.a[1]) + float(p.s); }
"""))
    assert info.push_constant_size == 28
    assert info.push_fields == tuple(PushField(o, s) for o, s in [
        (0, "f32"), (4, "f32"), (8, "f32"), (12, "f32"), (16, "u32"), (20, "u32"), (24, "i32")])
    packed = pack_push(info, [1.0, 2.0, 3.0, 0.5, 7, -1, -2])
    assert packed == struct.pack("<4f2Ii", 1.0, 2.0, 3.0, 0.5, 7, 0xFFFFFFFF, -2)
    assert pack_push(info, [1.0]) == struct.pack("<f", 1.0) + bytes(24)
    with pytest.raises(ValueError):
        pack_push(info, [0] * 8)


@glslang
def test_local_size_from_specialization_constant(tmp_path):
    info = reflect(_compile(tmp_path, """
layout(local_size_x_id = 0, local_size_y = 2) in;
layout(binding = 0) writeonly buffer O { uint o[]; };
void main() { o[0] = gl_WorkGroupSize.x; }
"""))
    assert info.local_size == (1, 2, 1)


@glslang
def test_big_endian_module(tmp_path):
    spirv = _compile(tmp_path, BUFFERS)
    swapped = np.frombuffer(spirv, dtype="<u4").astype(">u4").tobytes()
    assert reflect(swapped) == reflect(spirv)


@pytest.mark.parametrize("data, message", [
    (b"", "too short"),
    (b"not spirv at all....", "bad SPIR-V magic"),
    (b"\x03\x02\x23\x07" + bytes(15), "multiple of 4"),
    (b"\x03\x02\x23\x07" + bytes(16), "entry points"),
])
def test_malformed(data, message):
    with pytest.raises(SpirvError, match=message):
        reflect(data)


def test_truncated_instruction():
    # Word 10 is inside OpExtInstImport "GLSL.std.450" (words 7..12).
    with pytest.raises(SpirvError, match="truncated"):
        reflect(load_spirv("copy")[:40])


def test_unknown_entry_point():
    with pytest.raises(SpirvError, match="no entry point 'other'"):
        reflect(load_spirv("copy"), "other")


def test_spirv_error_is_value_error():
    assert issubclass(SpirvError, ValueError)
