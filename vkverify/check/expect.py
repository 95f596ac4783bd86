"""Compare findings with a stream's `expect` block (docs/format.md, "expect")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from dataclasses import dataclass

from ..model import ir
from ..model.loader import resolve_ref
from ..model.refs import split_submit, without_submit
from .findings import Finding
from .params import instance

__all__ = ["Agreement", "Suppression", "compare", "suppress"]


@dataclass(frozen=True)
class Agreement:
    missing: tuple[ir.ExpectedFinding, ...]  # expected, not reported
    unexpected: tuple[Finding, ...]  # reported, not expected

    @property
    def agrees(self) -> bool:
        return not self.missing and not self.unexpected


def _same_ref(expected: str | None, reported: str | None, stream: ir.Stream) -> bool:
    if expected is None or reported is None:
        return expected is reported
    resolved = resolve_ref(stream, expected)
    if resolved is None:
        return False
    # A reference without `@` matches any submission of that command.
    return resolved == reported if split_submit(resolved)[1] else resolved == without_submit(reported)


def matches(e: ir.ExpectedFinding, f: Finding, stream: ir.Stream) -> bool:
    if e.kind != f.kind or (e.buffer is not None and e.buffer != f.buffer):
        return False
    if e.params is not None and e.params != f.params:
        return False
    if e.range is not None and e.range != f.range:
        return False
    if e.ops is not None:
        return f.ops is not None and {resolve_ref(stream, r) for r in e.ops} == set(f.ops)
    if f.ops is not None:
        return e.first is None and e.second is None
    return _same_ref(e.first, f.first, stream) and _same_ref(e.second, f.second, stream)


def compare(stream: ir.Stream, findings: list[Finding]) -> Agreement:
    expected = stream.expect or ()
    # A params stream's findings are about one instance: resolve references there.
    stream = instance(stream, findings[0].params if findings else None)
    return Agreement(
        missing=tuple(e for e in expected if not any(matches(e, f, stream) for f in findings)),
        unexpected=tuple(f for f in findings if not any(matches(e, f, stream) for e in expected)))


@dataclass(frozen=True)
class Suppression:
    """Findings split by the stream's `ignore` entries (docs/format.md, ignore)."""

    kept: Sequence[Finding]
    suppressed: tuple[tuple[Finding, str], ...]  # (finding, the reason its ignore entry gives)
    unused: tuple[int, ...]  # indices of the ignore entries that matched no finding

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(f"ignore[{i}]: matches no finding" for i in self.unused)


def suppress(stream: ir.Stream, findings: Sequence[Finding]) -> Suppression:
    """A finding an `ignore` entry matches (the way an `expect` entry does), or that a `# vkverify: ignore[kind]`
    comment on the program line recording one of its operations accepts, is suppressed, not reported."""
    # A params stream's findings are about one instance: its own `ignore`, references resolved there.
    at = instance(stream, findings[0].params if findings else None)
    if not at.ignore and not _recorded(at):  # every finding kept, as it is: the checker's are worded only when read
        return Suppression(findings, (), ())
    kept, suppressed, used = [], [], set()
    lines: dict[str, list[str]] = {}  # read once per check: the program may change between two
    for f in findings:
        hit = next((i for i, ig in enumerate(at.ignore) if matches(ig.finding, f, at)), None)
        comment = commented_ignore(at, f, lines) if hit is None else None
        if hit is not None:
            suppressed.append((f, at.ignore[hit].reason))
            used.add(hit)
        elif comment is not None:
            suppressed.append((f, comment))
        else:
            kept.append(f)
    return Suppression(tuple(kept), tuple(suppressed), tuple(i for i in range(len(at.ignore)) if i not in used))


def _recorded(stream: ir.Stream) -> bool:
    """Whether any operation carries the program line that recorded it (where a comment may accept a finding)."""
    return any(op.source for t in stream.threads for op in t.ops) or \
        any(c.source for cb in stream.command_buffers for c in cb.commands)


IGNORE_COMMENT = re.compile(r"#\s*vkverify:\s*ignore(?:\[([\w\s,]*)\])?")


def commented_ignore(stream: ir.Stream, f: Finding, lines: dict[str, list[str]]) -> str | None:
    """Where the program line that recorded one of `f`'s operations (its `source`, docs/format.md) carries a
    `# vkverify: ignore[kind, ...]` comment naming f's kind (or `# vkverify: ignore`, any kind), the reason
    suppress() reports: the comment and its place; else None (also where the file cannot be read here).
    `lines`: the files read so far, by path."""
    for ref in (f.first, f.second, *(f.ops or ())):
        where = stream.index.source(ref) if ref else None
        path, _, number = (where or "").rpartition(":")
        if not number.isdigit():
            continue
        if path not in lines:
            try:
                lines[path] = Path(path).read_text(errors="replace").splitlines()
            except OSError:
                lines[path] = []
        text = lines[path][int(number) - 1] if 0 < int(number) <= len(lines[path]) else ""
        found = IGNORE_COMMENT.search(text)
        if found and (found[1] is None or f.kind in {k.strip() for k in found[1].split(",")}):
            return f"{found[0]} at {where}"
    return None
