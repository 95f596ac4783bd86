"""The binary .gfxr file: what gfxrecon-convert's JSON lines leave out, and the tools.

The converter omits the capture's memory-fill records (the bytes the program
wrote through mapped pointers) and the thread of each call; both are in the
block headers, which are never compressed (only payloads are). Layout from
GFXReconstruct's `format/format.h`: a file header (fourcc "GFXR", version,
option count, options), then blocks of `{u64 size, u32 type}` + payload.
Function-call payloads start `{u32 api_call_id, u64 thread_id}`; meta-data
payloads start `{u32 meta_data_id}`, and a fill-memory command continues
`{u64 thread_id, u64 memory_id, u64 offset, u64 size}` then the bytes. The
converter numbers blocks from 0 in file order, so a block's ordinal is the
`index` of its JSON line.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import CaptureError

_COMPRESSED = 0x80000000
_META_DATA_BLOCK = 3
_FUNCTION_CALL_BLOCK = 4
_FILL_MEMORY = 2  # MetaDataType::kFillMemoryCommand (low 16 bits of the meta-data id)


@dataclass(frozen=True)
class FillMemory:
    """A host write the capture layer recorded: `size` bytes at `offset` of the mapped range of `memory`."""

    index: int
    thread: int
    memory: int
    offset: int
    size: int


@dataclass(frozen=True)
class Blocks:
    fills: tuple[FillMemory, ...]
    threads: dict[int, int]  # call index -> capture thread id


def read_blocks(path: Path) -> Blocks:
    data = path.read_bytes()
    if len(data) < 16 or data[:4] != b"GFXR":
        raise CaptureError(str(path), "not a GFXReconstruct capture (no GFXR file header)")
    (options,) = struct.unpack_from("<I", data, 12)
    pos, index = 16 + 8 * options, 0
    fills, threads = [], {}
    while pos < len(data):
        if pos + 12 > len(data):
            raise CaptureError(str(path), f"truncated: a block header at byte {pos} is cut off")
        size, kind = struct.unpack_from("<QI", data, pos)
        end = pos + 12 + size
        if end > len(data):
            raise CaptureError(str(path), f"truncated: block {index} at byte {pos} needs {size} bytes, "
                                          f"{len(data) - pos - 12} remain")
        kind &= ~_COMPRESSED
        if kind == _FUNCTION_CALL_BLOCK and size >= 12:
            threads[index] = struct.unpack_from("<Q", data, pos + 16)[0]
        elif kind == _META_DATA_BLOCK and size >= 36 and struct.unpack_from("<I", data, pos + 12)[0] & 0xFFFF == _FILL_MEMORY:
            thread, memory, offset, length = struct.unpack_from("<QQQQ", data, pos + 16)
            fills.append(FillMemory(index, thread, memory, offset, length))
        pos, index = end, index + 1
    return Blocks(tuple(fills), threads)


def _tool(name: str, path: Path) -> str:
    found = shutil.which(name)
    if found is None:
        raise CaptureError(str(path), f"{name} not found (install GFXReconstruct: apt-get install gfxreconstruct)")
    return found


def convert(path: Path, workdir: Path) -> tuple[Path, Path]:
    """Run gfxrecon-convert and gfxrecon-extract: (the JSON lines file, the directory of `sh<handle>` SPIR-V)."""
    jsonl, shaders = workdir / "capture.jsonl", workdir / "shaders"
    shaders.mkdir()
    for argv in ([_tool("gfxrecon-convert", path), "--output", str(jsonl), str(path)],
                 [_tool("gfxrecon-extract", path), "--dir", str(shaders), str(path)]):
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            raise CaptureError(str(path), f"{Path(argv[0]).name} failed ({done.returncode}): {last}")
    return jsonl, shaders
