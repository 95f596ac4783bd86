"""`vkverify check --format github` (workflow commands: one annotation per group of findings, on the line of
its first finding's operation) and `--format junit` (one testsuite per file, one testcase per group)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import partial

from .check.findings import KINDS, Finding
from .check.groups import Group
from .results import FileResult
from .sarif import locator, operations, repeated, reported_at

__all__ = ["annotation", "format_github", "format_junit"]


def _data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub Actions, workflow commands)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, file: str, text: str, region: dict | None = None, title: str | None = None) -> str:
    """One workflow command: `::level file=...,line=...,title=...::text`, escaped as GitHub Actions reads it."""
    props = {"file": file}
    if region and "startLine" in region:
        props.update(line=region["startLine"], col=region["startColumn"], endLine=region["endLine"],
                     endColumn=region["endColumn"])
    if title:
        props["title"] = title
    return f"::{level} " + ",".join(f"{k}={_property(str(v))}" for k, v in props.items()) + f"::{_data(text)}"


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
            lines.append(annotation("error", r.file, f"{f.message}. Fix: {f.fix}{repeated(r, g)}",
                                  region(reported_at(f)), title))
        for f, reason in r.suppressed:
            lines.append(annotation("notice", r.file, f"suppressed: {reason}", region(reported_at(f)),
                                  f"{KINDS[f.kind].rule_id} {f.kind}: {_where(f)}"))
    return "\n".join(lines)


def _testcase(suite: ET.Element, counts: dict[str, int], classname: str, name: str, outcome: str | None = None,
              message: str = "", text: str = "") -> None:
    """A <testcase> of `suite`, counted in `counts`; `outcome` failure, error or skipped (None: passed)."""
    counts["tests"] += 1
    c = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if outcome is not None:
        counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[outcome]] += 1
        ET.SubElement(c, outcome, message=message).text = text or None


def format_junit(results: list[FileResult], expand: bool = False) -> str:
    """A failing testcase per group of findings (`expand`: per finding), a skipped one per suppressed finding,
    an erroring one per file that could not be loaded, a passing `no findings` for a clean file."""
    root = ET.Element("testsuites", name="vkverify check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in results:
        suite = ET.SubElement(root, "testsuite", name=r.file)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        case = partial(_testcase, suite, counts, r.file)
        if r.errors:
            case("load", "error", "bad input", "\n".join(r.errors))
        for _, f, g in r.reported(expand):
            # Named by its first finding alone: a test's name outlives a change in how often the loop ran.
            case(f"{f.kind} {_where(f)}", "failure", f.message + repeated(r, g), f"fix: {f.fix}")
        for f, reason in r.suppressed:
            case(f"{f.kind} {_where(f)}", "skipped", f"suppressed: {reason}")
        if not r.errors and not r.findings and not r.suppressed:
            case("no findings")
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
