"""The mutation report as text (the kill matrix), JSON, JUnit XML, GitHub annotations and SARIF."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..model.ci import annotation, artifact, document
from ..model.junit import JUnit
from .generate import TARGETS, Equivalent
from .kills import BEHAVIOURAL, KILLERS
from .load_bearing import Redundancy, pair_name
from .runner import Outcome, Stats

__all__ = ["COMMAND", "Report", "github", "junit", "redundancy_text", "sarif", "text", "to_json"]

COMMAND = "command"  # the one reader of a command's runtime mutants: its verdicts say what killed each


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
    require: str = "structural"  # the score --fail-under applies to (--require): or "behavioural"

    @property
    def judged(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.judged]

    @property
    def score(self) -> float:
        """The structural score: the share of judged mutants killed, by anything."""
        judged = self.judged
        return 100.0 * sum(o.killed for o in judged) / len(judged) if judged else 100.0

    @property
    def behavioural(self) -> float | None:
        """The share of judged mutants the command's own assertions killed (kills.py); None with streams,
        whose readers say nothing of the program's assertions."""
        if self.readers != [COMMAND]:
            return None
        judged = self.judged
        return 100.0 * sum(o.killed_by == BEHAVIOURAL for o in judged) / len(judged) if judged else 100.0

    @property
    def gated(self) -> float:
        """The score --fail-under applies to."""
        return self.behavioural if self.require == "behavioural" else self.score

    def caught(self, o: Outcome) -> bool:
        """Whether a judged mutant counts for the required score."""
        return o.killed_by == BEHAVIOURAL if self.require == "behavioural" else o.killed

    def killers(self) -> dict[str, int]:
        """How many judged mutants each of kills.KILLERS killed."""
        return {k: sum(o.killed_by == k for o in self.judged) for k in KILLERS}

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
    if r.why is not None:
        return f"{r.op}: {r.why}"
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
    if report.behavioural is not None:
        killers = report.killers()
        lines.append(f"structural {report.score:.1f}%, behavioural {report.behavioural:.1f}% "
                     f"({killers[BEHAVIOURAL]}/{len(judged)} killed by the command's own assertions); killed by: "
                     + ", ".join(f"{k} {n}" for k, n in killers.items())
                     + f"; --fail-under applies to {report.require}")
        kills = [o for o in judged if o.killed]
        if kills:
            lines.append("kills:")
            lines += [f"  {o.mutant.id}: {o.killed_by}: {o.verdicts[COMMAND].detail}" for o in kills]
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
        "scores": {"structural": None if report.stopped else report.score,
                   "behavioural": None if report.stopped else report.behavioural},
        "require": report.require,
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
                     "killed_by": o.killed_by,
                     "verdicts": {r: {"killed": v.killed, "detail": v.detail, "value_coinciding": v.coinciding,
                                      "killed_by": v.killed_by}
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
    mutant with the program's file and line where known; a mutant the required score does not count
    (a survivor; with --require behavioural, also one the command's own assertions did not kill) is a
    failure, a mutant not run is skipped, a killed one has the properties `killed_by` and `detail`.
    Each testsuite's properties hold the gate's scores. A gate that stopped with no verdict adds a
    testsuite `vkverify mutate` whose one testcase is an error saying why."""
    by_file: dict[str, list[Outcome]] = {}
    for o in report.outcomes:
        by_file.setdefault(o.mutant.file, []).append(o)
    doc = JUnit("vkverify mutate")
    if report.stopped is not None:
        doc.suite("vkverify mutate").case("vkverify mutate", "gate", "error", _stopped(report), report.stopped)
    scores = {"score.structural": report.score, "score.behavioural": report.behavioural, "require": report.require}
    for file, outcomes in by_file.items():
        suite = doc.suite(file, None if report.stopped is not None else {k: v for k, v in scores.items()
                                                                         if v is not None})
        for o in outcomes:
            details = _details(o)
            outcome, message = ("skipped", details) if not o.judged else \
                ("failure", _uncaught(report, o)) if not report.caught(o) else (None, "")
            suite.case(file, f"{o.mutant.operator}:{o.mutant.op}", outcome, message,
                       details if outcome == "failure" else "", o.mutant.source,
                       {"killed_by": o.killed_by, "detail": details} if o.killed else None)
    return doc.xml()


def _details(o: Outcome) -> str:
    return "; ".join(f"{r}: {v.detail}" for r, v in o.verdicts.items())


def _uncaught(report: Report, o: Outcome) -> str:
    """Why the gate counts a judged mutant against the score: it survived, or (--require behavioural) the
    command's own assertions did not kill it."""
    where = f" at {o.mutant.source}" if o.mutant.source else ""
    if not o.killed:
        return f"survived{where}: {o.mutant.description}"
    return f"not caught by the command's own assertions (killed by {o.killed_by}){where}: {o.mutant.description}"


def _site(o: Outcome) -> tuple[str, int | None]:
    """The mutated call site: the program's file and line where known, else the stream file (or test)."""
    path, _, line = (o.mutant.source or "").rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (o.mutant.file, None)


def _stopped(report: Report) -> str:
    return f"stopped, no verdict: {report.stopped}"


def _counted_against(report: Report) -> Iterator[tuple[Outcome, str, int | None, str]]:
    """Each mutant the gate counts against: it, its call site (file, line or None) and what to say of it."""
    for o in report.outcomes:
        if o.judged and not report.caught(o):
            yield o, *_site(o), f"{_uncaught(report, o)}. {_details(o)}"


def github(report: Report) -> str:
    """GitHub Actions annotations: `::error` per mutant the gate counts against, at its call site's line; one
    for a gate that stopped with no verdict."""
    lines = [annotation("error", "vkverify mutate", _stopped(report))] if report.stopped else []
    for o, path, line, message in _counted_against(report):
        region = {"startLine": line, "startColumn": 1, "endLine": line, "endColumn": 1} if line else None
        lines.append(annotation("error", path, message, region, f"{MUTANT_RULE['id']} {o.mutant.operator}"))
    return "\n".join(lines)


MUTANT_RULE = {"id": "VKM001", "name": "mutant_not_caught",
               "shortDescription": {"text": "a synchronization mutant the tests did not catch"},
               "fullDescription": {"text": "Dropping or weakening this synchronization (a barrier, a semaphore or "
                                           "fence wait, a keep-alive) left the tests green: they would not notice "
                                           "the bug on a device that races."},
               "helpUri": "docs/testing.md", "defaultConfiguration": {"level": "error"}}


def sarif(report: Report) -> str:
    """SARIF 2.1.0: a result per mutant the gate counts against, located at its call site."""
    results = [{"ruleId": MUTANT_RULE["id"], "ruleIndex": 0, "level": "error", "message": {"text": message},
                "locations": [{"physicalLocation": {"artifactLocation": artifact(path),
                                                    **({"region": {"startLine": line}} if line else {})}}]}
               for _, path, line, message in _counted_against(report)]
    stopped = [{"level": "error", "message": {"text": _stopped(report)}}] if report.stopped else []
    files = sorted({o.mutant.file for o in report.outcomes})
    return document([MUTANT_RULE], results, files, report.stopped is None, stopped)
