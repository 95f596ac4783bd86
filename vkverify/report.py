"""Output formats for `vkverify check`: text for people and JSON here; SARIF 2.1.0 (sarif.py),
GitHub workflow annotations and JUnit XML (annotations.py).

Each formatter takes the per-file results and returns the whole output; the
CLI picks one from FORMATTERS.
"""

from __future__ import annotations

import orjson

from .annotations import format_github, format_junit
from .check.expect import Agreement
from .check.findings import KINDS, Finding, order_text
from .check.groups import Group
from .results import FileResult
from .sarif import format_sarif

__all__ = ["FORMATTERS", "FileResult", "format_json", "format_text"]


def _expect_json(a: Agreement) -> dict:
    return {"agrees": a.agrees,
            "missing": [{k: v for k, v in vars(e).items() if v is not None} for e in a.missing],
            "unexpected": [f.to_json() for f in a.unexpected]}


def _group_json(r: FileResult, g: Group) -> dict:
    """A group by what its findings share, with the fix of its first (docs/format.md, Groups)."""
    first = r.findings[g.first - 1]
    return {"id": g.id, "kind": first.kind, "buffer": first.buffer, "count": len(g.findings),
            "points": list(g.points), "findings": list(g.findings), "fix": first.fix}


def to_json_obj(r: FileResult) -> dict:
    if r.errors:
        return {"file": r.file, "ok": False, "errors": list(r.errors)}
    group_of = {number: g.id for g in r.groups for number in g.findings}
    out = {"file": r.file, "stream": r.stream, "ok": not r.findings,
           "findings": [{**f.to_json(), "group": group_of[number]} for number, f in enumerate(r.findings, 1)],
           "groups": [_group_json(r, g) for g in r.groups]}
    if r.agreement is not None:
        out["expect"] = _expect_json(r.agreement)
    if r.partial:
        out["partial"] = list(r.partial)
    if r.suppressed:
        out["suppressed"] = [{**f.to_json(), "reason": reason} for f, reason in r.suppressed]
    if r.warnings:
        out["warnings"] = list(r.warnings)
    return out


def format_json(results: list[FileResult], expand: bool = False) -> str:
    """One list, one object per file (docs/format.md, Findings), whatever the number of files; every finding
    with its group, so `expand` changes nothing here. Written by orjson: json's encoder took twice the check's
    time on a stream whose every access races (170k findings)."""
    return orjson.dumps([to_json_obj(r) for r in results], option=orjson.OPT_INDENT_2).decode()


def _op(ref: str | None, label: str | None, access: str | None, source: str | None = None) -> str:
    if ref is None:
        return "(nothing wrote these bytes)"
    return " ".join(x for x in (ref, f'"{label}"' if label else None, access, source and f"at {source}") if x)


def _headline(f: Finding) -> str:
    """`raw A [0, 4096)`: the kind, and the bytes where the finding has them."""
    return f"{f.kind} {f.buffer} [{f.range[0]}, {f.range[1]})" if f.range else f.kind


def _witness_lines(f: Finding) -> list[str]:
    """One line per step of the witness, the event beside its name in the stream's words."""
    if f.witness_same_as is not None:
        return [f"    witness: same as #{f.witness_same_as} (same buffer or timeline, same two agents)"]
    if f.witness_limit is not None:
        return [f"    witness: not computed (limit {f.witness_limit} per stream: --witnesses N)"]
    if f.witness is None:
        return []
    width = max(map(len, f.witness))
    return [f"    witness ({len(f.witness)} steps):"] + \
        [f"      {event:<{width}}  {step}" for event, step in zip(f.witness, f.witness_steps or f.witness)]


def _occurrence(number: int, f: Finding, r: FileResult) -> str:
    """`#7 cb20[0] "label" -> main[18] "label"`: one finding of a group, by its operations."""
    if f.ops is not None:
        return f"#{number} {', '.join(f.ops)}"
    return f"#{number} {_op(f.first, f.labels[0], None, r.source(f.first))} -> " \
        f"{_op(f.second, f.labels[1], None, r.source(f.second))}"


def _group_lines(r: FileResult, g: Group) -> list[str]:
    """A group of findings: what repeats (kind, buffer, the program points), its first and last occurrence and
    the fix, once."""
    first, last = r.findings[g.first - 1], r.findings[g.last - 1]
    what = " ".join(x for x in (first.kind, first.buffer, "(racing)" if first.racing else None) if x)
    return [f"  group {g.id}: {len(g.findings)} findings {what}: {KINDS[first.kind].title}",
            f"    where:  {' -> '.join(g.points)}",
            f"    first:  {_occurrence(g.first, first, r)}",
            f"    last:   {_occurrence(g.last, last, r)}"]


def _finding_lines(r: FileResult, number: int, f: Finding) -> list[str]:
    lines = [f"  #{number} {_headline(f)}{' (racing)' if f.racing else ''}: {f.message}"]
    if f.ops is None:
        lines.append(f"    first:  {_op(f.first, f.labels[0], f.first_access, r.source(f.first))}")
        lines.append(f"    second: {_op(f.second, f.labels[1], f.second_access, r.source(f.second))}")
    return lines


def _verdict(r: FileResult, expand: bool) -> str:
    if not r.findings:
        verdict = "no findings"
    else:
        verdict = f"{len(r.findings)} finding{'s' * (len(r.findings) > 1)}"
        if len(r.groups) < len(r.findings):
            verdict += f" in {len(r.groups)} group{'s' * (len(r.groups) > 1)}"
            verdict += "" if expand else " (--expand: every finding)"
    if r.suppressed:
        verdict += f", {len(r.suppressed)} suppressed"
    return verdict


# ANSI SGR codes of the text report's colours (--color): a finding's or group's first line, a file with no
# findings, a fix, what is suppressed or said in passing.
RED, GREEN, CYAN, DIM = "1;31", "32", "36", "2"


def format_text(results: list[FileResult], expand: bool = False, color: bool = False) -> str:
    """A line per file, then each group of findings (a finding alone as itself: its operations, fix, witness);
    `expand`: every finding; `color`: ANSI colours for a terminal."""
    def paint(text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color else text

    lines = []
    for r in results:
        if r.errors:  # already said on stderr
            continue
        verdict = _verdict(r, expand)
        lines.append(f"{r.file}: {r.stream or '(unnamed)'}: {paint(verdict, RED if r.findings else GREEN)}"
                     f"{' (partial verdict)' if r.partial else ''}")
        lines += [f"  {why}" for why in r.partial]
        lines += [f"  warning: {w}" for w in r.warnings]
        for f, reason in r.suppressed:
            lines.append(paint(f"  suppressed {_headline(f)}: {reason}", DIM))
        for number, f, g in r.reported(expand):
            first, *rest = _finding_lines(r, number, f) if g is None else _group_lines(r, g)
            lines += [paint(first, RED), *rest]
            lines.append(f"    {paint('fix:', CYAN)}    {f.fix}")
            if f.params is not None:
                lines.append(f"    params: {', '.join(f'{k}={v}' for k, v in f.params)} (smallest failing values)")
            if f.order is not None:
                lines.append(f"    order:  {order_text(f.order)} (the walk's own submission order does not give it)")
            lines += _witness_lines(f)
        a = r.agreement
        if a is not None:
            lines.append(f"  expect: {'agrees' if a.agrees else 'DISAGREES'}")
            for e in a.missing:
                lines.append(f"    missing: {e.kind} {e.buffer or ''} {e.first or ''} {e.second or ''}"
                             f"{' ops=' + ','.join(e.ops) if e.ops else ''}".rstrip())
            for f in a.unexpected:
                lines.append(f"    unexpected: {f.kind} {f.buffer or ''} {f.first or ''} {f.second or ''}"
                             f"{' ops=' + ','.join(f.ops) if f.ops else ''}".rstrip())
    return "\n".join(lines)


FORMATTERS = {"text": format_text, "json": format_json, "sarif": format_sarif, "github": format_github,
              "junit": format_junit}
