"""The mutation report as text (the kill matrix), JSON and JUnit XML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from .generate import TARGETS, Equivalent
from .load_bearing import Redundancy, pair_name
from .runner import Outcome, Stats

__all__ = ["Report", "junit", "redundancy_text", "text", "to_json"]


@dataclass
class Report:
    outcomes: list[Outcome]
    readers: list[str]  # asked for, in order: one matrix column each
    skipped: dict[str, str]  # reader -> why it did not run
    stats: Stats
    streams: list[dict]  # {"file", "clean", "mutants"}
    equivalent: list[Equivalent] = field(default_factory=list)
    redundant: dict[str, list[Redundancy]] = field(default_factory=dict)  # file -> ops; with --report-redundant
    stopped: str | None = None  # why the gate gave no verdict (exit 2): the outcomes, if any, are partial

    @property
    def judged(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.judged]

    @property
    def score(self) -> float:
        judged = self.judged
        return 100.0 * sum(o.killed for o in judged) / len(judged) if judged else 100.0

    def matrix(self) -> dict[str, dict[str, int | None]]:
        """Per target (and `all`): mutants, and per reader how many it killed (`<reader>`) and judged
        (`<reader>/judged`: it cannot judge a mutant it cannot run, or one whose values coincide);
        None: the reader was skipped."""
        rows = {}
        for target in (*TARGETS, "all"):
            chosen = [o for o in self.outcomes if target == "all" or target in o.mutant.targets]
            if not chosen and target != "all":
                continue
            row: dict[str, int | None] = {"mutants": len(chosen)}
            for r in self.readers:
                skipped = r in self.skipped
                row[r] = None if skipped else sum(bool(o.verdicts[r].killed) for o in chosen)
                row[f"{r}/judged"] = None if skipped else sum(o.verdicts[r].killed is not None for o in chosen)
            rows[target] = row
        return rows

    def unjudged(self, reader: str) -> list[Outcome]:
        return [o for o in self.outcomes if reader in o.verdicts and o.verdicts[reader].killed is None]


def redundancy_text(r: Redundancy) -> str:
    if r.pair is None:
        return f"{r.op}: orders no conflicting pair"
    path = " -> ".join(r.other_path) if r.other_path else "host program order"
    return f"{r.op}: {pair_name(r.pair)} is also ordered without it, by {path}"


def text(report: Report) -> str:
    matrix = report.matrix()
    cols = ["mutants", *report.readers]
    width = max(10, *(len(c) + 2 for c in cols))

    def cell(row: dict, c: str) -> str:
        if row[c] is None:
            return "skipped"
        return str(row[c]) if c == "mutants" else f"{row[c]}/{row[c + '/judged']}"
    lines = [f"{'target':<10}" + "".join(f"{c:>{width}}" for c in cols)]
    lines += [f"{target:<10}" + "".join(f"{cell(row, c):>{width}}" for c in cols) for target, row in matrix.items()]
    judged = report.judged
    lines.append("reader cells: killed/judged")
    lines.append(f"score {report.score:.1f}% ({sum(o.killed for o in judged)}/{len(judged)} mutants killed by a reader)"
                 f"; {report.stats.executed} reader runs, {report.stats.cached} from the cache")
    for name, why in report.skipped.items():
        lines.append(f"reader {name} skipped: {why}")
    for name in report.readers:
        unjudged = report.unjudged(name)
        coinciding = [o for o in unjudged if o.verdicts[name].coinciding]
        if len(unjudged) > len(coinciding):
            example = next(o for o in unjudged if not o.verdicts[name].coinciding)
            lines.append(f"{name} could not judge {len(unjudged) - len(coinciding)} mutants, e.g. {example.mutant.id}: "
                         f"{example.verdicts[name].detail}")
        if coinciding:
            lines.append(f"{name} names {len(coinciding)} mutants value-coinciding:")
            lines += [f"  {o.mutant.id}: {o.verdicts[name].detail.removeprefix('value-coinciding: ')}"
                      for o in coinciding]
    survivors = [o for o in judged if not o.killed]
    if survivors:
        lines.append("survivors:")
        lines += [f"  {o.mutant.id}: {o.mutant.description}" for o in survivors]
    if report.equivalent:
        lines.append(f"{len(report.equivalent)} equivalent candidates not run (the model finds no new hazard)")
    for file, ops in report.redundant.items():
        lines.append(f"redundant in {file}:")
        lines += [f"  {redundancy_text(r)}" for r in ops]
    if report.stopped:
        lines.append(f"stopped, no verdict: {report.stopped}")
    return "\n".join(lines)


def to_json(report: Report) -> dict:
    out = {
        "score": None if report.stopped else report.score,
        "stopped": report.stopped,
        "readers": report.readers,
        "skipped": report.skipped,
        "matrix": report.matrix(),
        "stats": {"executed": report.stats.executed, "cached": report.stats.cached},
        "streams": report.streams,
        "mutants": [{"id": o.mutant.id, "file": o.mutant.file, "source": o.mutant.source,
                     "targets": list(o.mutant.targets),
                     "operator": o.mutant.operator, "op": o.mutant.op, "description": o.mutant.description,
                     "predicted": [list(h) for h in o.mutant.predicted], "killed": o.killed,
                     "verdicts": {r: {"killed": v.killed, "detail": v.detail, "value_coinciding": v.coinciding}
                                  for r, v in o.verdicts.items()}}
                    for o in report.outcomes],
        "equivalent": [{"file": e.file, "operator": e.operator, "op": e.op, "description": e.description}
                       for e in report.equivalent],
    }
    if report.redundant:
        out["redundant"] = {file: [{"op": r.op, "pair": pair_name(r.pair) if r.pair else None,
                                    "other_path": list(r.other_path), "text": redundancy_text(r)} for r in ops]
                            for file, ops in report.redundant.items()}
    return out


def junit(report: Report) -> str:
    """One testsuite per stream file (or test, for a command's runtime mutants), one testcase per
    mutant with the program's file and line where known; a survivor is a failure, a mutant not run is
    skipped. A gate that stopped with no verdict adds a testsuite `vkverify mutate` whose one testcase
    is an error saying why."""
    by_file: dict[str, list[Outcome]] = {}
    for o in report.outcomes:
        by_file.setdefault(o.mutant.file, []).append(o)
    failures = sum(o.judged and not o.killed for o in report.outcomes)
    stopped = report.stopped is not None
    root = ET.Element("testsuites", name="vkverify mutate", tests=str(len(report.outcomes) + stopped),
                      failures=str(failures), errors=str(int(stopped)))
    if stopped:
        suite = ET.SubElement(root, "testsuite", name="vkverify mutate", tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", classname="vkverify mutate", name="gate")
        ET.SubElement(case, "error", message=_xml(f"stopped, no verdict: {report.stopped}")).text = _xml(report.stopped)
    for file, outcomes in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=file, tests=str(len(outcomes)),
                              failures=str(sum(o.judged and not o.killed for o in outcomes)),
                              skipped=str(sum(not o.judged for o in outcomes)))
        for o in outcomes:
            case = ET.SubElement(suite, "testcase", classname=file, name=f"{o.mutant.operator}:{o.mutant.op}")
            if o.mutant.source:
                path, _, line = o.mutant.source.rpartition(":")
                case.set("file", path)
                case.set("line", line)
            details = _xml("; ".join(f"{r}: {v.detail}" for r, v in o.verdicts.items()))
            if not o.judged:
                ET.SubElement(case, "skipped", message=details)
            elif not o.killed:
                where = f" at {o.mutant.source}" if o.mutant.source else ""
                ET.SubElement(case, "failure", message=f"survived{where}: {o.mutant.description}").text = details
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _xml(text: str) -> str:
    """`text` with what XML 1.0 cannot hold (a command's terminal escapes, NULs) replaced by U+FFFD."""
    return re.sub("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]", "\ufffd", text)
