"""Memory as numpy bytes, one array per root buffer (aliases share it, StreamIndex.root) and one per image,
the bytes of its linear layout (model/images.py), which image commands read and write.

Two adversarial traits can be switched on (the simulator's purpose: a hazard
becomes a wrong number):
- `garbage`: memory that starts undefined (device_local, device_host_visible: the
  checker's rule 9) starts as seeded random bytes; bytes nothing wrote digest as
  zeros at the end, since they hold no result.
- `cached`: host_cached memory gets a host copy that only `invalidate` refreshes
  and only `flush` writes back (spec 11.2.2 "Host Access to Device Memory Objects").
Reads go through `overlays` keyed by the reading step's reference: the stale or
early bytes an adversarial schedule makes a reader see.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..model import ir
from ..model.errors import InputError, StreamError
from ..model.refs import format_ref

__all__ = ["Machine", "Overlay", "digest", "poison"]

MAX_MEMORY = 2 ** 30  # bytes of the root buffers one simulated execution holds
DEFINED_AT_START = ("host_coherent", "host_cached")  # as the checker's RangeMap(initialized=...)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Overlay:
    """Bytes [lo, hi) of `root` that the step reads from `source()` instead of memory;
    `seen(changed)` learns whether they differed from what memory held."""

    root: str
    lo: int
    hi: int
    source: Callable[[], np.ndarray]
    seen: Callable[[bool], None]
    stage: str | None = None  # only the step's reads at this stage (a dispatch_indirect reads at two)


def blit_refusal(stream: ir.Stream) -> str | None:
    """Why the simulator cannot run a blit of `stream`, or None: it blits with the nearest filter between images of
    one format, texel to texel (a linear filter's weights and a format conversion's rounding are the device's)."""
    for cb in stream.command_buffers:
        for i, c in enumerate(cb.commands):
            if not isinstance(c, ir.BlitImage):
                continue
            src, dst = stream.index.images[c.src], stream.index.images[c.dst]
            if c.filter != "nearest":
                return f"{format_ref(cb.id, i)}: the simulator blits with the nearest filter, not {c.filter!r}"
            if src.format != dst.format or src.block != (1, 1):
                return (f"{format_ref(cb.id, i)}: the simulator blits between images of one uncompressed format, not "
                        f"{src.format} to {dst.format}")
    return None


class Machine:
    def __init__(self, stream: ir.Stream, garbage: np.random.Generator | None = None, cached: bool = False) -> None:
        self.index = stream.index
        roots = [b for b in stream.memories if b.alias_of is None]
        total = sum(b.size for b in roots)
        if total > MAX_MEMORY:  # told before numpy tries to allocate it
            raise StreamError(f"<stream {stream.name!r}>", [InputError("buffers", (
                f"{total} bytes of memory; the simulator holds at most {MAX_MEMORY} (1 GiB) at a time"))])
        unsimulated = blit_refusal(stream)
        if unsimulated is not None:
            raise StreamError(f"<stream {stream.name!r}>", [InputError("command_buffers", unsimulated)])
        self.memory = {b.id: np.zeros(b.size, np.uint8) for b in roots}
        # Per root with undefined start: which bytes nothing has written yet (only tracked with garbage).
        self.undefined: dict[str, np.ndarray] = {}
        if garbage is not None:
            for b in roots:
                if b.memory not in DEFINED_AT_START:
                    self.memory[b.id] = garbage.integers(0, 256, b.size, dtype=np.uint8)
                    self.undefined[b.id] = np.ones(b.size, bool)
        # host_cached roots: (host copy, dirty bytes not yet flushed).
        self.cache = {b.id: (self.memory[b.id].copy(), np.zeros(b.size, bool))
                      for b in roots if cached and b.memory == "host_cached"}
        self.overlays: dict[str, list[Overlay]] = {}
        self.destroyed: set[str] = set()
        self.reads: dict[str, str] = {}

    def place(self, buffer: str, lo: int, hi: int) -> tuple[str, int, int]:
        root, base = self.index.root(buffer)
        return root, base + lo, base + hi

    def load(self, ref: str, buffer: str, lo: int, hi: int, host: bool = False,
             stage: str | None = None) -> np.ndarray:
        """A copy of buffer bytes [lo, hi) as step `ref` reads them at `stage` (host: through the host's cache)."""
        root, rlo, rhi = self.place(buffer, lo, hi)
        source = self.cache[root][0] if host and root in self.cache else self.memory[root]
        data = source[rlo:rhi].copy()
        for o in self.overlays.get(ref, ()):
            a, b = max(o.lo, rlo), min(o.hi, rhi)
            if o.root == root and a < b and (o.stage is None or stage is None or o.stage == stage):
                new = o.source()[a - o.lo:b - o.lo]
                o.seen(not np.array_equal(new, data[a - rlo:b - rlo]))
                data[a - rlo:b - rlo] = new
        return data

    def peek(self, buffer: str, lo: int, hi: int) -> np.ndarray:
        """A copy of the device's view of buffer bytes [lo, hi), without any overlay."""
        root, rlo, rhi = self.place(buffer, lo, hi)
        return self.memory[root][rlo:rhi].copy()

    def store(self, buffer: str, lo: int, data: np.ndarray, host: bool = False) -> None:
        root, rlo, rhi = self.place(buffer, lo, lo + len(data))
        if host and root in self.cache:
            view, dirty = self.cache[root]
            view[rlo:rhi] = data
            dirty[rlo:rhi] = True
            return
        self.memory[root][rlo:rhi] = data
        if root in self.cache:  # the device's write wins over stale dirty host bytes
            self.cache[root][1][rlo:rhi] = False
        if root in self.undefined:
            self.undefined[root][rlo:rhi] = False

    def flush(self, buffer: str, lo: int, hi: int) -> None:
        """vkFlushMappedMemoryRanges: dirty host bytes in the range reach memory."""
        root, rlo, rhi = self.place(buffer, lo, hi)
        if root in self.cache:
            view, dirty = self.cache[root]
            d = dirty[rlo:rhi]
            self.memory[root][rlo:rhi][d] = view[rlo:rhi][d]
            d[:] = False

    def invalidate(self, buffer: str, lo: int, hi: int) -> None:
        """vkInvalidateMappedMemoryRanges: the host copy of clean bytes is refreshed from memory."""
        root, rlo, rhi = self.place(buffer, lo, hi)
        if root in self.cache:
            view, dirty = self.cache[root]
            clean = ~dirty[rlo:rhi]
            view[rlo:rhi][clean] = self.memory[root][rlo:rhi][clean]

    def final(self) -> dict[str, bytes]:
        """Every live root's bytes: dirty host bytes written back, bytes nothing wrote as zeros."""
        out = {}
        for root, mem in self.memory.items():
            if root in self.destroyed:
                continue
            mem = mem.copy()
            if root in self.cache:
                view, dirty = self.cache[root]
                mem[dirty] = view[dirty]
            if root in self.undefined:
                mem[self.undefined[root]] = 0
            out[root] = mem.tobytes()
        return out


POISON = np.full(1, 0xDEADBEEF, np.uint32).view(np.uint8)


def poison(m: Machine, buffer: str, lo: int, hi: int) -> bool:
    """Freed memory reused by someone else: 0xDEADBEEF words over [lo, hi), in memory and in any
    host copy (spec 12.7: a destroyed buffer's memory may be reused). True if any byte changed."""
    root, rlo, rhi = m.place(buffer, lo, hi)
    words = np.resize(POISON, rhi - rlo)
    changed = not np.array_equal(m.memory[root][rlo:rhi], words)
    m.memory[root][rlo:rhi] = words
    if root in m.cache:
        m.cache[root][0][rlo:rhi] = words
    return changed
