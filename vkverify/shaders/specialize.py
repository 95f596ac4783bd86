"""A module as one pipeline runs it: its specialization constants set, frozen and folded.

spirv-opt (spirv-tools) does the work, so that a branch the constants
disable, and the buffer accesses only it makes, are gone before reflection:
a pipeline's VkSpecializationInfo becomes the constants' default values
(--set-spec-const-default-value), which are then frozen into plain
constants, and the dead branches and code removed. A dispatch's push
constants go the same way: each load of the push-constant block whose
value is known becomes that constant (`freeze_push`) before the passes run.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .reflect import MAGIC, PushLoad, SpirvError, push_loads, spec_constant_types

__all__ = ["freeze_push", "specialize"]

# Inlining and --ssa-rewrite first: unoptimized GLSL keeps values in function variables and passes them through
# calls, which folding does not look through.
PASSES = ("--inline-entry-points-exhaustive", "--ssa-rewrite", "--freeze-spec-const", "--fold-spec-const-op-composite",
          "--ccp", "--eliminate-dead-branches", "--eliminate-dead-code-aggressive", "--eliminate-dead-functions")
_OP_FUNCTION, _OP_CONSTANT, _OP_CONSTANT_COMPOSITE, _OP_LOAD, _OP_COPY_OBJECT = 54, 43, 44, 61, 83
_CODES = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
          "f16": "e", "f32": "f", "f64": "d"}


def _literal(scalar: str, data: bytes) -> str:
    """The value of a constant of type `scalar` whose bytes are `data` (a VkSpecializationInfo's),
    as spirv-opt's --set-spec-const-default-value reads it."""
    if scalar == "bool":
        return "true" if any(data) else "false"
    code = _CODES[scalar]
    (value,) = struct.unpack_from("<" + code, data.ljust(struct.calcsize(code), b"\0"))
    return repr(value)


def _words(scalar: str, data: bytes) -> list[int]:
    """The literal words of an OpConstant of type `scalar` whose bytes are `data` (spec 2.2.1: narrower
    than 32 bits, a signed integer is sign-extended, any other type zero-extended)."""
    code = _CODES[scalar]
    if len(data) == 8:
        return list(struct.unpack("<II", data))
    (value,) = struct.unpack("<" + code, data)
    if scalar.startswith("f"):
        return list(struct.unpack("<I", struct.pack("<" + code, value).ljust(4, b"\0")))
    return [value & 0xFFFFFFFF]


def freeze_push(spirv: bytes, push: Mapping[int, bytes]) -> bytes:
    """`spirv` with each load of the push-constant block whose first byte offset `push` maps to the bytes it
    reads (a scalar's or a vector's) replaced by that constant: an OpCopyObject of an OpConstant (or
    OpConstantComposite) declared before the first function."""
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if words[0] != MAGIC:
        raise SpirvError("push constants are frozen in little-endian SPIR-V only")
    bound = words[3]
    loads: dict[int, PushLoad] = {}
    for load in push_loads(spirv):
        if len(push.get(load.offset, b"")) == load.size:
            loads[load.result] = load
    declared: list[int] = []
    constant: dict[int, int] = {}  # load result -> the constant that replaces it
    for result, load in loads.items():
        parts = []
        for f in load.fields:
            at = f.offset - load.offset
            value = _words(f.scalar, push[load.offset][at:at + struct.calcsize(_CODES[f.scalar])])
            declared += [(3 + len(value)) << 16 | _OP_CONSTANT, load.scalar_type, bound, *value]
            parts.append(bound)
            bound += 1
        if len(parts) > 1:
            declared += [(3 + len(parts)) << 16 | _OP_CONSTANT_COMPOSITE, load.type_id, bound, *parts]
            bound += 1
        constant[result] = bound - 1
    out, at, first_function = words[:5], 5, True
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        if count == 0:
            raise SpirvError(f"malformed instruction at word {at}")
        if opcode == _OP_FUNCTION and first_function:
            out += declared
            first_function = False
        if opcode == _OP_LOAD and words[at + 2] in constant:
            out += [4 << 16 | _OP_COPY_OBJECT, words[at + 1], words[at + 2], constant[words[at + 2]]]
        else:
            out += words[at:at + count]
        at += count
    out[3] = bound
    return struct.pack(f"<{len(out)}I", *out)


def specialize(spirv: bytes, values: Mapping[int, bytes], push: Mapping[int, bytes] | None = None) -> bytes:
    """`spirv` with the specialization constants whose SpecId `values` maps to their bytes set to
    those values, every specialization constant frozen, the push-constant loads `push` gives frozen
    (`freeze_push`), and the code they disable removed. Raises SpirvError where spirv-opt is missing or
    refuses the module."""
    tool = shutil.which("spirv-opt")
    if tool is None:
        raise SpirvError("spirv-opt not found (install spirv-tools)")
    if push:
        spirv = freeze_push(spirv, push)
    types = spec_constant_types(spirv)
    pairs = [f"{spec_id}:{_literal(types[spec_id], data)}" for spec_id, data in sorted(values.items())
             if spec_id in types]
    setting = ["--set-spec-const-default-value", " ".join(pairs)] if pairs else []  # spirv-opt refuses ""
    with tempfile.TemporaryDirectory(prefix="vkverify-spec-") as tmp:
        source, out = Path(tmp) / "in.spv", Path(tmp) / "out.spv"
        source.write_bytes(spirv)
        done = subprocess.run([tool, "--target-env=vulkan1.3", *setting, *PASSES,
                               "-o", str(out), str(source)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise SpirvError(f"spirv-opt could not specialize it ({done.returncode}): {last}")
        return out.read_bytes()
