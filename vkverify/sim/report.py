"""What `simulate` returns, and its text and JSON forms."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ..check import Finding

__all__ = ["FORMATS", "FindingVerdict", "ScheduleResult", "SimReport", "SimResult"]


@dataclass(frozen=True)
class SimResult:
    """One execution's results: final bytes of every live non-alias buffer, their sha256,
    and the sha256 of the bytes each host_read read (by its reference)."""

    buffers: Mapping[str, bytes]
    digests: Mapping[str, str]
    reads: Mapping[str, str]


@dataclass(frozen=True)
class ScheduleResult:
    index: int
    perturbed: tuple[Finding, ...]
    changed_buffers: tuple[str, ...]
    changed_reads: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.changed_buffers or self.changed_reads)


@dataclass(frozen=True)
class FindingVerdict:
    """Per finding: `confirmed` (schedule `schedule` changed `digests`, which the finding's operations
    produce or read, directly or downstream: the first 8, the reason saying "and more" where there are more)
    or `value_coinciding` (with the `reason`)."""

    finding: Finding
    verdict: str
    reason: str
    schedule: int | None = None
    digests: tuple[str, ...] = ()


@dataclass(frozen=True)
class SimReport:
    stream: str
    reference: SimResult
    schedules: tuple[ScheduleResult, ...]
    verdicts: tuple[FindingVerdict, ...]
    file: str | None = None  # where the stream was read from, for the CLI's output

    @property
    def changed(self) -> bool:
        return any(s.changed for s in self.schedules)


def _name(f: Finding) -> str:
    if f.ops is not None:
        return f"{f.kind} ({', '.join(f.ops)})"
    return f"{f.kind} on {f.buffer}: {f.first or '-'} -> {f.second}"


def to_json(report: SimReport) -> dict:
    return {
        **({"file": report.file} if report.file is not None else {}),
        "stream": report.stream,
        "changed": report.changed,
        "reference": {"buffers": dict(report.reference.digests), "reads": dict(report.reference.reads)},
        "schedules": [{"index": s.index, "perturbed": [_name(f) for f in s.perturbed],
                       "changed_buffers": list(s.changed_buffers), "changed_reads": list(s.changed_reads)}
                      for s in report.schedules if s.changed],
        "unchanged_schedules": sum(not s.changed for s in report.schedules),
        "findings": [{**{k: v for k, v in v.finding.to_json().items() if k not in ("message", "fix")},
                      "verdict": v.verdict, "reason": v.reason, "schedule": v.schedule, "digests": list(v.digests)}
                     for v in report.verdicts],
    }


def format_json(reports: list[SimReport], verbose: bool = False) -> str:
    """Everything, a list of one object per stream (`verbose` changes nothing: JSON is whole)."""
    return json.dumps([to_json(r) for r in reports], indent=2)


def summary(r: SimReport) -> str:
    """One line: how many schedules changed a digest, and the findings' verdicts by kind of verdict."""
    changed = sum(s.changed for s in r.schedules)
    verdicts = Counter(v.verdict.replace("_", "-") for v in r.verdicts)
    said = f"; findings: {', '.join(f'{n} {v}' for v, n in sorted(verdicts.items()))}" if verdicts else ""
    head = f"{r.file}: {r.stream}" if r.file is not None else r.stream
    return f"{head}: {changed} of {len(r.schedules)} schedules changed a digest{said}"


def format_text(reports: list[SimReport], verbose: bool = False) -> str:
    """A line per stream; `verbose`: its reference digests, every schedule that changed one, every verdict."""
    if not verbose:
        return "\n".join(summary(r) for r in reports)
    lines = []
    for r in reports:
        lines.append(f"{r.file + ': ' if r.file is not None else ''}{r.stream}: reference")
        lines += [f"  buffer {b}  {d}" for b, d in sorted(r.reference.digests.items())]
        lines += [f"  read {ref}  {d}" for ref, d in r.reference.reads.items()]
        for s in r.schedules:
            if s.changed:
                what = [f"buffer {b}" for b in s.changed_buffers] + [f"read {x}" for x in s.changed_reads]
                perturbs = "; ".join(_name(f) for f in s.perturbed) or "nothing"
                lines.append(f"  schedule {s.index} (perturbs {perturbs}): changed {', '.join(what)}")
        lines.append(f"  {sum(not s.changed for s in r.schedules)} of {len(r.schedules)} schedules changed nothing")
        for v in r.verdicts:
            lines.append(f"  {_name(v.finding)}: {v.verdict.replace('_', '-')}: {v.reason}")
    return "\n".join(lines)


FORMATS = {"text": format_text, "json": format_json}
