"""A module as one pipeline runs it: its specialization constants set, frozen and folded.

spirv-opt (spirv-tools) does the work, so that a branch the constants
disable, and the buffer accesses only it makes, are gone before reflection:
a pipeline's VkSpecializationInfo becomes the constants' default values
(--set-spec-const-default-value), which are then frozen into plain
constants, and the dead branches and code removed.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .reflect import SpirvError, spec_constant_types

__all__ = ["specialize"]

PASSES = ("--freeze-spec-const", "--fold-spec-const-op-composite", "--ccp", "--eliminate-dead-branches",
          "--eliminate-dead-code-aggressive", "--eliminate-dead-functions")
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


def specialize(spirv: bytes, values: Mapping[int, bytes]) -> bytes:
    """`spirv` with the specialization constants whose SpecId `values` maps to their bytes set to
    those values, every specialization constant frozen, and the code they disable removed. Raises
    SpirvError where spirv-opt is missing or refuses the module."""
    tool = shutil.which("spirv-opt")
    if tool is None:
        raise SpirvError("spirv-opt not found (install spirv-tools)")
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
