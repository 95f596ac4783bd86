"""Output formats for `vkverify check`: text for people and JSON here; SARIF 2.1.0 (sarif.py),
GitHub workflow annotations and JUnit XML (annotations.py).

Each formatter takes the per-file results and returns the whole output; the
CLI picks one from FORMATTERS.
"""

from __future__ import annotations

import json
from .annotations import format_github, format_junit
from .check.expect import Agreement
from .check.findings import Finding
from .results import FileResult
from .sarif import format_sarif

__all__ = ["FORMATTERS", "FileResult", "format_json", "format_text"]


def _expect_json(a: Agreement) -> dict:
    return {"agrees": a.agrees,
            "missing": [{k: v for k, v in vars(e).items() if v is not None} for e in a.missing],
            "unexpected": [f.to_json() for f in a.unexpected]}


def to_json_obj(r: FileResult) -> dict:
    if r.errors:
        return {"file": r.file, "ok": False, "errors": list(r.errors)}
    out = {"file": r.file, "stream": r.stream, "ok": not r.findings,
           "findings": [f.to_json() for f in r.findings]}
    if r.agreement is not None:
        out["expect"] = _expect_json(r.agreement)
    if r.partial:
        out["partial"] = list(r.partial)
    if r.suppressed:
        out["suppressed"] = [{**f.to_json(), "reason": reason} for f, reason in r.suppressed]
    if r.warnings:
        out["warnings"] = list(r.warnings)
    return out


def format_json(results: list[FileResult]) -> str:
    """One list, one object per file (docs/format.md, Findings), whatever the number of files."""
    return json.dumps([to_json_obj(r) for r in results], indent=2)


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


def format_text(results: list[FileResult]) -> str:
    lines = []
    for r in results:
        if r.errors:  # already said on stderr
            continue
        verdict = "no findings" if not r.findings else f"{len(r.findings)} finding{'s' * (len(r.findings) > 1)}"
        if r.suppressed:
            verdict += f", {len(r.suppressed)} suppressed"
        lines.append(f"{r.file}: {r.stream or '(unnamed)'}: {verdict}{' (partial verdict)' if r.partial else ''}")
        lines += [f"  {why}" for why in r.partial]
        lines += [f"  warning: {w}" for w in r.warnings]
        for f, reason in r.suppressed:
            lines.append(f"  suppressed {_headline(f)}: {reason}")
        for number, f in enumerate(r.findings, 1):
            lines.append(f"  #{number} {_headline(f)}{' (racing)' if f.racing else ''}: {f.message}")
            if f.ops is None:
                lines.append(f"    first:  {_op(f.first, f.labels[0], f.first_access, r.source(f.first))}")
                lines.append(f"    second: {_op(f.second, f.labels[1], f.second_access, r.source(f.second))}")
            lines.append(f"    fix:    {f.fix}")
            if f.params is not None:
                lines.append(f"    params: {', '.join(f'{k}={v}' for k, v in f.params)} (smallest failing values)")
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
