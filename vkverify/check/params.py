"""Checking a `params` stream: every combination of values, smallest first (docs/format.md "params")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..model import ir
from .findings import Finding

__all__ = ["check_params", "instance"]


def check_params(stream: ir.Stream, check: Callable[[ir.Stream], list[Finding]]) -> list[Finding]:
    """No findings: the stream is race- and deadlock-free for every value in range (each combination is
    instantiated and checked, so ranges must be bounded). Otherwise the findings of the smallest
    combination that has any, each carrying those values."""
    for values, instance in stream.instances:
        findings = check(instance)
        if findings:
            return [replace(f, params=values) for f in findings]
    return []


def instance(stream: ir.Stream, values: tuple[tuple[str, int], ...] | None) -> ir.Stream:
    """The plain stream for `values` (the stream itself when it has no params or values is None)."""
    if not stream.params or values is None:
        return stream
    return dict(stream.instances)[values]
