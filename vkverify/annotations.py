"""`vkverify check --format github` (workflow commands: one annotation per finding on the line of its
operation) and `--format junit` (one testsuite per file, one testcase per finding)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import partial

from .check.findings import KINDS, Finding
from .results import FileResult
from .sarif import locator, reported_at

__all__ = ["format_github", "format_junit"]


def _data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF escaped (GitHub Actions, workflow commands)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, file: str, text: str, region: dict | None = None, title: str | None = None) -> str:
    props = {"file": file}
    if region and "startLine" in region:
        props.update(line=region["startLine"], col=region["startColumn"], endLine=region["endLine"],
                     endColumn=region["endColumn"])
    if title:
        props["title"] = title
    return f"::{level} " + ",".join(f"{k}={_property(str(v))}" for k, v in props.items()) + f"::{_data(text)}"


def _where(f: Finding) -> str:
    return " ".join(x for x in (f.buffer, f"[{f.range[0]}, {f.range[1]})" if f.range else None,
                                f"{f.first or '-'} -> {f.second}" if f.second else ", ".join(f.ops or ())) if x)


def format_github(results: list[FileResult]) -> str:
    """`::error` per finding and per line of bad input, `::notice` per suppressed finding, `::warning` per warning."""
    lines = []
    for r in results:
        lines += [_command("error", r.file, e) for e in r.errors]
        lines += [_command("warning", r.file, w) for w in r.warnings]
        region = locator(r)
        for f in r.findings:
            title = f"{KINDS[f.kind].rule_id} {f.kind}: {_where(f)}"
            lines.append(_command("error", r.file, f"{f.message}. Fix: {f.fix}", region(reported_at(f)), title))
        for f, reason in r.suppressed:
            lines.append(_command("notice", r.file, f"suppressed: {reason}", region(reported_at(f)),
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


def format_junit(results: list[FileResult]) -> str:
    """A failing testcase per finding, a skipped one per suppressed finding, an erroring one per file that could
    not be loaded, a passing `no findings` for a clean file."""
    root = ET.Element("testsuites", name="vkverify check")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for r in results:
        suite = ET.SubElement(root, "testsuite", name=r.file)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        case = partial(_testcase, suite, counts, r.file)
        if r.errors:
            case("load", "error", "bad input", "\n".join(r.errors))
        for f in r.findings:
            case(f"{f.kind} {_where(f)}", "failure", f.message, f"fix: {f.fix}")
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
