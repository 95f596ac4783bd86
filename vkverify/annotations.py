"""`vkverify check --format github` (workflow commands: one annotation per group of findings, on the line of
its first finding's operation) and `--format junit` (one testsuite per file, one testcase per group)."""

from __future__ import annotations

from functools import partial

from .check.findings import KINDS, Finding
from .check.groups import Group
from .model.junit import JUnit
from .results import FileResult
from .model.ci import annotation
from .sarif import locator, operations, repeated, reported_at

__all__ = ["format_github", "format_junit"]


def _where(f: Finding, g: Group | None = None) -> str:
    """The finding's bytes and operations; for a group's first finding, how many findings it stands for."""
    return " ".join(x for x in (f.buffer, f"[{f.range[0]}, {f.range[1]})" if f.range else None,
                                operations(f), g and f"({len(g.findings)}x)") if x)


def format_github(results: list[FileResult], expand: bool = False) -> str:
    """`::error` per group of findings (`expand`: per finding) and per line of bad input, `::notice` per
    suppressed finding, `::warning` per warning."""
    lines = []
    for r in results:
        lines += [annotation("error", r.file, e) for e in r.errors]
        lines += [annotation("warning", r.file, w) for w in r.warnings]
        region = locator(r)
        for _, f, g in r.reported(expand):
            title = f"{KINDS[f.kind].rule_id} {f.kind}: {_where(f, g)}"
            lines.append(annotation("error", r.file, f"{f.message}{f.in_order()}. Fix: {f.fix}{repeated(r, g)}",
                                  region(reported_at(f)), title))
        for f, reason in r.suppressed:
            lines.append(annotation("notice", r.file, f"suppressed: {reason}", region(reported_at(f)),
                                  f"{KINDS[f.kind].rule_id} {f.kind}: {_where(f)}"))
    return "\n".join(lines)


def format_junit(results: list[FileResult], expand: bool = False) -> str:
    """A failing testcase per group of findings (`expand`: per finding), a skipped one per suppressed finding,
    an erroring one per file that could not be loaded, a passing `no findings` for a clean file."""
    doc = JUnit("vkverify check")
    for r in results:
        case = partial(doc.suite(r.file).case, r.file)
        if r.errors:
            case("load", "error", "bad input", "\n".join(r.errors))
        for _, f, g in r.reported(expand):
            # Named by its first finding alone: a test's name outlives a change in how often the loop ran.
            case(f"{f.kind} {_where(f)}", "failure", f.message + f.in_order() + repeated(r, g), f"fix: {f.fix}")
        for f, reason in r.suppressed:
            case(f"{f.kind} {_where(f)}", "skipped", f"suppressed: {reason}")
        if not r.errors and not r.findings and not r.suppressed:
            case("no findings")
    return doc.xml()
