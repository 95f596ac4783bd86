"""What `vkverify check` found in each file, as every output format (report.py) reads it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from .check.expect import Agreement
from .check.findings import Finding
from .check.groups import Group, group
from .model import ir

__all__ = ["CAPTURES", "FileResult", "bad_input", "says_something"]

CAPTURES = (".gfxr", ".jsonl")  # files read through the importer, not as streams

@dataclass(frozen=True)
class FileResult:
    file: str
    stream: str
    findings: Sequence[Finding]  # check/findings.py Findings: each worded as a format reads it
    agreement: Agreement | None = None  # with --expect
    partial: tuple[str, ...] = ()  # why the verdict covers only part of the program (ImportSummary.partial_lines)
    suppressed: tuple[tuple[Finding, str], ...] = ()  # (finding, reason) the stream's `ignore` accepts
    warnings: tuple[str, ...] = ()  # `JSON.path: what`, e.g. an ignore entry that matches nothing
    errors: tuple[str, ...] = ()  # bad input: `FILE: JSON.path: what is wrong` lines; nothing was checked
    loaded: ir.Stream | None = field(default=None, compare=False, repr=False)  # ids and positions for SARIF

    @cached_property
    def groups(self) -> tuple[Group, ...]:
        """The findings grouped by root cause (check/groups.py)."""
        return group(self.loaded, self.findings)

    def reported(self, expand: bool) -> list[tuple[int, Finding, Group | None]]:
        """What the formats report one by one, as (number from 1, finding, group): each group's first finding,
        with the group it stands for where that has several; with `expand` every finding, alone."""
        if expand:
            return [(number, f, None) for number, f in enumerate(self.findings, 1)]
        return [(g.first, self.findings[g.first - 1], g if len(g.findings) > 1 else None) for g in self.groups]

    @property
    def failed(self) -> bool:
        return bool(self.findings or self.errors)

    def source(self, ref: str | None) -> str | None:
        """The program's file:line the stream records for the operation `ref` names, if any."""
        return self.loaded.index.source(ref) if ref and self.loaded is not None else None


def bad_input(file: str, lines: list[str]) -> FileResult:
    """The result of a file that could not be loaded: what is wrong with it, for the formats that carry it."""
    return FileResult(file, "", [], errors=tuple(lines))


def says_something(r: FileResult) -> bool:
    """What `-q` keeps of the text: files with errors or warnings, with findings, or with `--expect` a
    difference from their `expect` block."""
    if r.errors or r.warnings:
        return True
    return not r.agreement.agrees if r.agreement is not None else bool(r.findings)
