"""Output formats for `vkverify check`: text for people, JSON, SARIF 2.1.0.

Each formatter takes the per-file results and returns the whole output; the
CLI picks one from FORMATTERS.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from . import __version__
from .check.expect import Agreement
from .check.findings import KINDS, Finding
from .model.refs import without_submit


@dataclass(frozen=True)
class FileResult:
    file: str
    stream: str
    findings: list[Finding]
    agreement: Agreement | None = None  # with --expect
    partial: tuple[str, ...] = ()  # why the verdict covers only part of the program: an import's unresolved dispatches
    sources: Mapping[str, str] = field(default_factory=dict)  # a finding's op -> the program's file:line (sources())


def sources(stream, findings: list[Finding]) -> dict[str, str]:
    """The file:line the stream records for each operation the findings name."""
    refs = {r for f in findings for r in (f.first, f.second) if r}
    return {r: line for r in refs if (line := stream.index.source(r))}


def _expect_json(a: Agreement) -> dict:
    return {"agrees": a.agrees,
            "missing": [{k: v for k, v in vars(e).items() if v is not None} for e in a.missing],
            "unexpected": [f.to_json() for f in a.unexpected]}


def to_json_obj(r: FileResult) -> dict:
    out = {"file": r.file, "stream": r.stream, "ok": not r.findings,
           "findings": [f.to_json() for f in r.findings]}
    if r.agreement is not None:
        out["expect"] = _expect_json(r.agreement)
    if r.partial:
        out["partial"] = list(r.partial)
    return out


def format_json(results: list[FileResult]) -> str:
    """One object per file as STREAM_FORMAT.md shows; several files give a list of them."""
    objs = [to_json_obj(r) for r in results]
    return json.dumps(objs[0] if len(objs) == 1 else objs, indent=2)


def _op(ref: str | None, label: str | None, access: str | None, source: str | None = None) -> str:
    if ref is None:
        return "(nothing wrote these bytes)"
    return " ".join(x for x in (ref, f'"{label}"' if label else None, access, source and f"at {source}") if x)


def format_text(results: list[FileResult]) -> str:
    lines = []
    for r in results:
        verdict = "no findings" if not r.findings else f"{len(r.findings)} finding{'s' * (len(r.findings) > 1)}"
        lines.append(f"{r.file}: {r.stream or '(unnamed)'}: {verdict}{' (partial verdict)' if r.partial else ''}")
        lines += [f"  {why}" for why in r.partial]
        for f in r.findings:
            where = f" {f.buffer} [{f.range[0]}, {f.range[1]})" if f.range else ""
            lines.append(f"  {f.kind}{where}{' (racing)' if f.racing else ''}: {f.message}")
            if f.ops is None:
                lines.append(f"    first:  {_op(f.first, f.labels[0], f.first_access, r.sources.get(f.first))}")
                lines.append(f"    second: {_op(f.second, f.labels[1], f.second_access, r.sources.get(f.second))}")
            lines.append(f"    fix:    {f.fix}")
            if f.params is not None:
                lines.append(f"    params: {', '.join(f'{k}={v}' for k, v in f.params)} (smallest failing values)")
            if f.witness is not None:
                lines.append(f"    witness: {' -> '.join(f.witness)}")
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


def format_sarif(results: list[FileResult]) -> str:
    """SARIF 2.1.0, one rule per finding kind with a stable id."""
    kinds = list(KINDS.values())
    rule_index = {k.kind: i for i, k in enumerate(kinds)}
    sarif_results = []
    for r in results:
        for f in r.findings:
            refs = [x for x in (f.first, f.second) if x] + list(f.ops or ())
            sarif_results.append({
                "ruleId": KINDS[f.kind].rule_id, "ruleIndex": rule_index[f.kind], "level": "error",
                "message": {"text": f"{f.message}. Fix: {f.fix}"},
                "locations": [{
                    "physicalLocation": {"artifactLocation": {"uri": r.file}, "region": {"startLine": 1}},
                    "logicalLocations": [{"fullyQualifiedName": ref, "kind": "member"} for ref in refs]}],
                "partialFingerprints": {"vkverify/v1": "|".join(
                    [f.kind, r.stream, f.buffer or ""] + [without_submit(x) for x in refs])},
                "properties": {"buffer": f.buffer, "range": list(f.range) if f.range else None,
                               "racing": f.racing},
            })
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "vkverify", "version": __version__, "rules": [
            {"id": k.rule_id, "name": k.kind, "shortDescription": {"text": k.title},
             "defaultConfiguration": {"level": "error"}} for k in kinds]}},
        "artifacts": [{"location": {"uri": r.file}} for r in results],
        "results": sarif_results}]}
    return json.dumps(doc, indent=2)


FORMATTERS = {"text": format_text, "json": format_json, "sarif": format_sarif}
