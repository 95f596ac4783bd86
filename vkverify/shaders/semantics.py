"""What each library kernel computes, in numpy, bit for bit.

Every function in `SEMANTICS` has the signature

    semantics(buffers, push, groups) -> {binding: new contents}

- `buffers[b]`: the current contents of binding `b` (set 0), any contiguous
  array whose byte length is a multiple of 4; it is read as the kernel's
  element type (uint32, or float32 for add, axpy and scale) and never modified.
- `push`: the push-constant values, one per push field in declaration order
  (the stream format's `push` list; see each .comp file for its block).
- `groups`: the dispatch's group count [x, y, z]. Every kernel loops over a
  flattened grid with a stride, so any non-zero count gives the same result;
  a zero count runs nothing.

The result maps every binding the kernel may write to its full new contents,
in the kernel's element type. Element counts in `push` must not exceed the
buffers (the device would access out of bounds; numpy clips).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["SEMANTICS", "Semantics", "atomic_addends", "checksum", "generic", "generic_name", "mix"]

Semantics = Callable[[Sequence[np.ndarray], Sequence[float], Sequence[int]], dict[int, np.ndarray]]
SEMANTICS: dict[str, Semantics] = {}

_MASK = 0xFFFFFFFF
_CHECKSUM_SEED = 0x811C9DC5
_REF_FACTOR = 0x9E3779B1
_CHECKSUM_FACTOR = 0x85EBCA77


def _kernel(name: str, writes: Sequence[int], dtype: type = np.uint32) -> Callable:
    """Register `body(views, push)`, which updates the written views in place."""
    def register(body: Callable[[list[np.ndarray], Sequence[float]], None]) -> Semantics:
        @functools.wraps(body)
        def run(buffers: Sequence[np.ndarray], push: Sequence[float],
                groups: Sequence[int]) -> dict[int, np.ndarray]:
            views = [np.ascontiguousarray(b).view(dtype).copy() for b in buffers]
            if math.prod(groups):
                body(views, push)
            return {b: views[b] for b in writes}
        SEMANTICS[name] = run
        return run
    return register


@_kernel("fill", writes=[0])
def fill(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, value = int(push[0]), int(push[1])
    b[0][:n] = value & _MASK


@_kernel("copy", writes=[1])
def copy(b: list[np.ndarray], push: Sequence[float]) -> None:
    n = int(push[0])
    b[1][:n] = b[0][:n]


@_kernel("add", writes=[2], dtype=np.float32)
def add(b: list[np.ndarray], push: Sequence[float]) -> None:
    n = int(push[0])
    b[2][:n] = b[0][:n] + b[1][:n]


@_kernel("axpy", writes=[1], dtype=np.float32)
def axpy(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, alpha = int(push[0]), np.float32(push[1])
    # Two float32 roundings, as the kernel's `precise` demands (no fma).
    b[1][:n] = alpha * b[0][:n] + b[1][:n]


@_kernel("scale", writes=[0], dtype=np.float32)
def scale(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, factor = int(push[0]), np.float32(push[1])
    b[0][:n] *= factor


@_kernel("reduce_sum", writes=[1])
def reduce_sum(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, out = int(push[0]), int(push[1])
    b[1][out] = (int(b[1][out]) + int(b[0][:n].sum(dtype=np.uint64))) & _MASK


@_kernel("matvec", writes=[2])
def matvec(b: list[np.ndarray], push: Sequence[float]) -> None:
    rows, cols = int(push[0]), int(push[1])
    m = b[0][:rows * cols].reshape(rows, cols).astype(np.uint64)
    # uint64 products and sums wrap modulo 2^64, which keeps them exact modulo 2^32.
    b[2][:rows] = (m @ b[1][:cols].astype(np.uint64)).astype(np.uint32)


@_kernel("slow_writer", writes=[0])
def slow_writer(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, iterations, value = int(push[0]), int(push[1]), int(push[2])
    x = (np.arange(n, dtype=np.uint32) + np.uint32(value & _MASK)).astype(np.uint32)
    for _ in range(iterations):
        x = x * np.uint32(1664525) + np.uint32(1013904223)
    b[0][:n] = x


@_kernel("reverse_reader", writes=[1])
def reverse_reader(b: list[np.ndarray], push: Sequence[float]) -> None:
    n = int(push[0])
    b[1][:n] = b[0][:n][::-1]


@_kernel("histogram", writes=[1])
def histogram(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, nbins = int(push[0]), int(push[1])
    b[1][:nbins] += np.bincount(b[0][:n] % nbins, minlength=nbins).astype(np.uint32)


@_kernel("gather", writes=[2])
def gather(b: list[np.ndarray], push: Sequence[float]) -> None:
    n, src_n = int(push[0]), int(push[1])
    idx = b[1][:n]
    inside = idx < src_n
    b[2][:n] = np.where(inside, b[0][np.where(inside, idx, 0)], 0)


def _fmix32(h: np.ndarray) -> np.ndarray:
    """murmur3's 32-bit finalizer on uint32 arrays (which wrap silently)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def checksum(reads: Sequence[np.ndarray]) -> int:
    """The generic kernels' checksum: 0x811C9DC5, then h = fmix32(h ^ w) for
    every u32 word w of every read binding, bindings in order."""
    h = _CHECKSUM_SEED
    # A sequential chain: Python ints are several times faster than numpy scalars here.
    for words in reads:
        for w in np.ascontiguousarray(words).view(np.uint32).tolist():
            h ^= w
            h ^= h >> 16
            h = (h * 0x85EBCA6B) & _MASK
            h ^= h >> 13
            h = (h * 0xC2B2AE35) & _MASK
            h ^= h >> 16
    return h


def mix(i: np.ndarray, ref: int, check: int) -> np.ndarray:
    """The generic kernels' output word for element indices `i` (uint32):
    fmix32(i ^ (ref * 0x9E3779B1) ^ (check * 0x85EBCA77)), modulo 2^32."""
    key = ((ref * _REF_FACTOR) ^ (check * _CHECKSUM_FACTOR)) & _MASK
    # At least 1-d: numpy warns on overflow in scalar arithmetic, not in arrays.
    i = np.asarray(i, dtype=np.uint32)
    return _fmix32(np.atleast_1d(i) ^ np.uint32(key)).reshape(i.shape)


def generic(reads: Sequence[np.ndarray], write_counts: Sequence[int], ref: int) -> list[np.ndarray]:
    """The abstract-shader contract (docs/format.md): written binding k
    receives mix(i, ref, checksum(reads)) at every u32 index
    i < write_counts[k]. Every read word reaches every output word: fmix32
    and the odd factors are bijections, so changing any one read word
    changes the checksum and with it every output."""
    check = checksum(reads)
    return [mix(np.arange(count, dtype=np.uint32), ref & _MASK, check) for count in write_counts]


def atomic_addends(count: int, ref: int) -> np.ndarray:
    """The abstract-shader contract for an atomic binding (docs/format.md): atomicAdd of mix(i, ref, 0) at every
    u32 index i < count, wrapping. It depends on the dispatch alone, so atomics that meet in any order leave the
    same sum: a race between them changes nothing, as the memory model has it."""
    return mix(np.arange(count, dtype=np.uint32), ref & _MASK, 0)


@_kernel("atomic_add", writes=[0])
def atomic_add(b: list[np.ndarray], push: Sequence[float]) -> None:
    """The kernel that replays an abstract shader's atomic binding: push = [ref, count]."""
    ref, n = int(push[0]), int(push[1])
    b[0][:n] += atomic_addends(n, ref)


def generic_name(n_read: int, n_write: int) -> str:
    if not (0 <= n_read <= 4 and 1 <= n_write <= 4):
        raise ValueError(f"generic kernels take 0..4 read and 1..4 written bindings, "
                         f"not {n_read} and {n_write}")
    return f"generic_r{n_read}_w{n_write}"


def _register_generic(n_read: int, n_write: int) -> None:
    """generic_rR_wW: bindings 0..R-1 read, R..R+W-1 written; push =
    [ref, words of binding 0, ..., words of binding R+W-1]."""
    writes = range(n_read, n_read + n_write)

    @_kernel(generic_name(n_read, n_write), writes=writes)
    def body(b: list[np.ndarray], push: Sequence[float]) -> None:
        ref, counts = int(push[0]), [int(c) for c in push[1:1 + n_read + n_write]]
        reads = [b[k][:counts[k]] for k in range(n_read)]
        for k, out in zip(writes, generic(reads, [counts[k] for k in writes], ref)):
            b[k][:len(out)] = out


for _r in range(5):
    for _w in range(1, 5):
        _register_generic(_r, _w)
