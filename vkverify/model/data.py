"""The bytes a stream's host writes and updates put in memory (docs/format.md, `data`).

The simulator and the replay both call these, so a stream's reference results
and its device results start from the same bytes.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

from . import ir

__all__ = ["data_bytes", "ref_hash"]


def ref_hash(ref: str) -> int:
    """A u32 naming an operation reference (`cb0[2]@main[5]`): a dispatch's `ref` push constant."""
    return zlib.crc32(ref.encode())


def data_bytes(data: ir.Data | None, size: int, buffer: str, ref: str) -> bytes:
    """`size` bytes for a host_write/update; without `data`, a pattern seeded by the buffer id and the op."""
    if data is None:
        data = ir.Data(pattern="random", seed=zlib.crc32(f"{buffer}/{ref}".encode()))
    if data.base64 is not None:
        raw = base64.b64decode(data.base64)
        if len(raw) != size:
            raise ValueError(f"base64 data has {len(raw)} bytes, the range has {size}")
        return raw
    words = (size + 3) // 4
    if data.pattern == "iota_u32":
        arr = np.arange(words, dtype=np.uint32)
    elif data.pattern == "iota_f32":
        arr = np.arange(words, dtype=np.float32)
    elif data.pattern == "const":
        value = data.value or 0
        arr = np.full(words, value, dtype=np.float32 if isinstance(value, float) else np.uint32)
    else:  # random
        arr = np.random.default_rng(data.seed or 0).integers(0, 2**32, words, dtype=np.uint32)
    return arr.tobytes()[:size]
