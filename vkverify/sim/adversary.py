"""Adversarial perturbations, one per checker finding (each finding is a pair of accesses
the happens-before relation leaves unordered, so each perturbation is an allowed execution).

- raw: the reader sees the bytes as they were before the write (not yet available/visible,
  spec 7.1 "memory dependency").
- war: the write lands before the reader reads (no execution dependency orders them).
- waw: the two writes land in the opposite order.
- use_after_destroy: the destroyed buffer is poisoned (0xDEADBEEF) before its use runs.
- ownership_missing: the reading queue family sees undefined bytes (spec 7.7.4).
- uninitialized_read: device-local memory starts as garbage in every schedule (machine.py).
Each perturbation reports whether it actually changed bytes, so the report can say why a
finding's values coincide instead of claiming agreement.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

import numpy as np

from ..check import Finding
from ..model import ir
from .machine import Machine, Overlay, poison

__all__ = ["DATA_KINDS", "Hooks", "capture", "perturb"]

DATA_KINDS = ("raw", "war", "waw", "use_after_destroy", "ownership_missing", "uninitialized_read")

Hook = Callable[[Machine], None]


class Hooks:
    """What a run does around its steps, by step reference."""

    def __init__(self) -> None:
        self.before: dict[str, list[Hook]] = defaultdict(list)
        self.after: dict[str, list[Hook]] = defaultdict(list)
        self.overlays: dict[str, list[Overlay]] = defaultdict(list)


def _stage(access: str | None) -> str | None:
    """The stage of a finding's `first_access`/`second_access` ("draw_indirect/indirect_command_read"): the
    perturbation reaches that access alone, one pair per (stage, access) as the checker compares them."""
    return access.partition("/")[0] if access else None


def _span(m: Machine, f: Finding) -> tuple[str, int, int]:
    """The finding's bytes in its root memory."""
    lo, hi = f.range if f.range is not None else (0, m.index.buffers[f.buffer].size)
    return m.place(f.buffer, lo, hi)


def capture(hooks: Hooks, f: Finding, into: dict) -> None:
    """For a war finding: record the bytes its writer leaves (in the reference run)."""
    def keep(m: Machine) -> None:
        root, lo, hi = _span(m, f)
        into[f] = m.memory[root][lo:hi].copy()
    hooks.after[f.second].append(keep)


def perturb(hooks: Hooks, f: Finding, captured: Mapping[Finding, np.ndarray], ops: Mapping[str, object],
            rng: np.random.Generator, seen: Callable[[bool], None]) -> None:
    """Register the perturbation of finding `f` (of a kind in DATA_KINDS but uninitialized_read)."""
    if f.kind == "raw":
        _stale_read(hooks, f, seen)
    elif f.kind == "war":
        _early_write(hooks, f, captured[f], seen)
    elif f.kind == "waw":
        _swapped_writes(hooks, f, seen)
    elif f.kind == "use_after_destroy":
        use = f.second if isinstance(ops[f.first], ir.Destroy) else f.first

        def free(m: Machine) -> None:
            lo, hi = f.range if f.range is not None else (0, m.index.buffers[f.buffer].size)
            seen(poison(m, f.buffer, lo, hi))
        hooks.before[use].append(free)
    elif f.kind == "ownership_missing":
        garbage: dict[str, np.ndarray] = {}

        def undefined() -> np.ndarray:
            return garbage["bytes"]

        def draw(m: Machine) -> None:
            root, lo, hi = _span(m, f)
            garbage["bytes"] = rng.integers(0, 256, hi - lo, dtype=np.uint8)
            hooks.overlays[f.second].append(Overlay(root, lo, hi, undefined, seen, _stage(f.second_access)))
        hooks.before[f.second].append(draw)


def _stale_read(hooks: Hooks, f: Finding, seen: Callable[[bool], None]) -> None:
    """Spec 7.1: without a memory dependency the write need not be visible to the reader."""
    old: dict[str, np.ndarray] = {}

    def snapshot(m: Machine) -> None:
        root, lo, hi = _span(m, f)
        old["bytes"] = m.memory[root][lo:hi].copy()
        if root in m.undefined:
            # Bytes nothing wrote may hold anything; zeros, unlike garbage, also make an
            # indirect group count of 0, which a dispatch's results do depend on.
            old["bytes"][m.undefined[root][lo:hi]] = 0
        hooks.overlays[f.second].append(Overlay(root, lo, hi, lambda: old["bytes"], seen, _stage(f.second_access)))
    hooks.before[f.first].append(snapshot)


def _early_write(hooks: Hooks, f: Finding, written: np.ndarray, seen: Callable[[bool], None]) -> None:
    """Spec 7.1: without an execution dependency the write may complete before the read."""
    def arm(m: Machine) -> None:
        root, lo, hi = _span(m, f)
        hooks.overlays[f.first].append(Overlay(root, lo, hi, lambda: written, seen, _stage(f.first_access)))
    hooks.before[f.first].append(arm)


def _swapped_writes(hooks: Hooks, f: Finding, seen: Callable[[bool], None]) -> None:
    """Spec 7.1: two writes without a memory dependency may land in either order."""
    first: dict[str, np.ndarray] = {}

    def keep(m: Machine) -> None:
        root, lo, hi = _span(m, f)
        first["bytes"] = m.memory[root][lo:hi].copy()

    def land_last(m: Machine) -> None:
        root, lo, hi = _span(m, f)
        kept = first.pop("bytes")  # not held to the end of the run: a schedule may swap many large writes
        seen(not np.array_equal(m.memory[root][lo:hi], kept))
        m.memory[root][lo:hi] = kept
    hooks.after[f.first].append(keep)
    hooks.after[f.second].append(land_last)
