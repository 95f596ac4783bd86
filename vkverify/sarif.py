"""`vkverify check --format sarif`: SARIF 2.1.0 for code-scanning UIs (and `vkverify optimize --format sarif`).

One rule per finding kind (check/findings.py: stable id, descriptions, docs/format.md anchor); one result
per group of findings (check/groups.py: a root cause repeated), its first finding's, located at the text of
its operation in the stream file (the call index for a capture);
suppressed findings carry their `ignore` reason; files that could not be loaded are the invocation's
error notifications, so a document is written whatever the input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .check.explain import op_at
from .check.findings import KINDS, Finding
from .model import ir
from .model.ci import artifact, document
from .model.positions import spans
from .model.refs import parse_ref, without_submit
from .check.groups import Group
from .results import CAPTURES, FileResult

__all__ = ["format_optimization", "format_sarif", "locator", "operations", "repeated", "reported_at"]

DOCS = "docs/format.md"  # each rule's helpUri is an anchor there: the heading of its kind


def _refs(f: Finding) -> list[str]:
    """The operations a finding names, the one it is reported at first: the second access (where the hazard
    is observed; the only one of an uninitialized read), else its ops."""
    return [x for x in (f.second, f.first) if x] + list(f.ops or ())


def reported_at(f: Finding) -> str | None:
    """The operation a finding is shown at."""
    refs = _refs(f)
    return refs[0] if refs else None


def _json_path(stream: ir.Stream, doc: dict, ref: str) -> tuple:
    """Where a reference's operation is written in the stream file; in a `params` template, the nearest
    enclosing value whose place does not depend on the parameters (loops move the items after them)."""
    parsed = parse_ref(without_submit(ref))
    if parsed is None:
        return ()
    if parsed.owner in stream.index.command_buffers:
        path = ("command_buffers", parsed.owner, parsed.index)
    else:
        path = ("threads", parsed.owner, parsed.index) if "threads" in doc else ("host", parsed.index)
    node, reached = doc, ()
    for key in path:
        if not _holds(node, key):
            break
        node, reached = node[key], reached + (key,)
    return reached


def _holds(node, key) -> bool:
    """Whether node[key] is written where the stream has it: a key of an object, or an item of a list with no
    `params` loop at or before it."""
    if isinstance(node, dict):
        return key in node
    return isinstance(node, list) and isinstance(key, int) and key < len(node) and not any(
        isinstance(x, dict) and "for" in x for x in node[:key + 1])


def locator(r: FileResult) -> Callable[[str | None], dict | None]:
    """ref -> the SARIF region of its operation in r.file, or None where it has none."""
    if r.loaded is None:
        return lambda ref: None
    stream = r.loaded
    if r.file.endswith(CAPTURES):
        from .importer import call_index

        def capture(ref: str | None) -> dict | None:
            if ref is None:
                return None
            index = call_index(getattr(op_at(stream, without_submit(ref)), "label", None))
            return None if index is None else {"properties": {"callIndex": index}}
        return capture
    try:
        text = Path(r.file).read_text()
        where, doc = spans(text), json.loads(text)
    except (OSError, ValueError):
        return lambda ref: None

    def region(ref: str | None) -> dict | None:
        if ref is None:
            return None
        (line, column), (end_line, end_column) = where[_json_path(stream, doc, ref)]
        return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}
    return region


def _stable(stream: ir.Stream | None, ref: str) -> str:
    """An operation's id where the stream gives it one (it survives edits around it), else its position."""
    command = without_submit(ref)
    ids = {} if stream is None else {pos: id_ for id_, pos in stream.index.ids.items()}
    return ids.get(command, command)


def operations(f: Finding) -> str:
    """`cb0[0] -> main[3]` (`-` for no first), or the ops a finding names."""
    return f"{f.first or '-'} -> {f.second}" if f.second else ", ".join(f.ops or ())


def repeated(r: FileResult, g: Group | None) -> str:
    """What a report of a group's first finding adds: how often the root cause repeats, and its last occurrence."""
    if g is None:
        return ""
    return (f" ({len(g.findings)} findings of this root cause, the first shown, the last #{g.last}: "
            f"{operations(r.findings[g.last - 1])})")


def _result(r: FileResult, f: Finding, region: Callable[[str], dict | None], rule_index: dict[str, int],
            reason: str | None, g: Group | None = None) -> dict:
    refs = _refs(f)
    regions = [region(ref) for ref in refs]

    def located(ref: str, where: dict | None) -> dict:
        return {"physicalLocation": {"artifactLocation": artifact(r.file), **({"region": where} if where else {})},
                "logicalLocations": [{"fullyQualifiedName": ref, "kind": "member"}]}

    out = {
        "ruleId": KINDS[f.kind].rule_id, "ruleIndex": rule_index[f.kind], "level": "error",
        "message": {"text": f"{f.message}{f.in_order()}. Fix: {f.fix}{repeated(r, g)}"},
        "locations": [located(refs[0], regions[0])] if refs else [
            {"physicalLocation": {"artifactLocation": artifact(r.file)}}],
        "partialFingerprints": {"vkverify/v2": "|".join(
            [f.kind, r.stream, f.buffer or ""] + [_stable(r.loaded, x) for x in sorted(refs)])},
        "properties": {"buffer": f.buffer, "range": list(f.range) if f.range else None, "racing": f.racing},
    }
    if len(refs) > 1:
        out["relatedLocations"] = [{"id": i, **located(ref, where), "message": {"text": ref}}
                                   for i, (ref, where) in enumerate(zip(refs[1:], regions[1:]), 1)]
    if g is not None:
        out["properties"].update(group=g.id, count=len(g.findings), findings=list(g.findings))
    if reason is not None:
        out["suppressions"] = [{"kind": "inSource", "justification": reason}]
    return out


def _notification(r: FileResult, text: str, level: str) -> dict:
    return {"level": level, "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": artifact(r.file)}}]}


def _rule(kind) -> dict:
    return {"id": kind.rule_id, "name": kind.kind, "shortDescription": {"text": kind.title},
            "fullDescription": {"text": kind.description},
            "help": {"text": kind.help, "markdown": f"{kind.help} See [{DOCS}]({DOCS}#{kind.kind})."},
            "helpUri": f"{DOCS}#{kind.kind}", "defaultConfiguration": {"level": "error"}}


def format_sarif(results: list[FileResult], expand: bool = False) -> str:
    """One run: rules for every kind, a result per group of findings (`expand`: per finding; suppressed ones
    marked), load errors and warnings as notifications."""
    kinds = list(KINDS.values())
    rule_index = {k.kind: i for i, k in enumerate(kinds)}
    sarif_results, notifications = [], []
    for r in results:
        region = locator(r)
        sarif_results += [_result(r, f, region, rule_index, None, g) for _, f, g in r.reported(expand)]
        sarif_results += [_result(r, f, region, rule_index, reason) for f, reason in r.suppressed]
        notifications += [_notification(r, line, "error") for line in r.errors]
        notifications += [_notification(r, f"{r.file}: {w}", "warning") for w in r.warnings]
    return document([_rule(k) for k in kinds], sarif_results, [r.file for r in results],
                    not any(r.errors for r in results), notifications)


# vkverify optimize's suggestions, as rules: (action, id, title, description).
OPTIMIZE_RULES = (
    ("remove", "VKV101", "a global barrier that orders no conflicting pair",
     ("Every conflicting pair this pipeline barrier orders is ordered without it (or it orders none): the stream "
     "without it gives the same findings, proved by checking.")),
    ("narrow", "VKV102", "a global barrier wider than the pairs it orders",
     ("This pipeline barrier's stages and accesses can be narrowed to those of the pairs it orders: the stream with "
     "the narrower masks gives the same findings, proved by checking.")),
    ("narrow_wait", "VKV103", "a semaphore wait stage mask wider than its batch's commands",
     ("This semaphore wait's stage mask can be narrowed to the stages of the commands of its batch: the stream with "
      "the narrower mask gives the same findings, proved by checking.")),
    ("remove_host_wait", "VKV104", "a fence or idle wait that orders nothing the stream needs",
     ("This host wait (vkWaitForFences, vkQueueWaitIdle or vkDeviceWaitIdle) orders nothing that comes after it: "
      "the stream without it gives the same findings, proved by checking.")),
)


def format_optimization(file: str, result) -> str:
    """`vkverify optimize --format sarif`: a result (level note) per barrier or wait to remove or narrow
    (check/optimize.py Optimization), located at the program's line that recorded it where the stream says, else
    at the operation in the stream file; its masks before and after (a host wait: its kind) in the properties."""
    stream = result.original
    region = locator(FileResult(file, stream.name, (), loaded=stream))
    rule_index = {action: i for i, (action, *_) in enumerate(OPTIMIZE_RULES)}
    rules = [{"id": rule_id, "name": f"optimize_{action}", "shortDescription": {"text": title},
              "fullDescription": {"text": description}, "helpUri": "docs/optimize.md",
              "defaultConfiguration": {"level": "note"}} for action, rule_id, title, description in OPTIMIZE_RULES]
    def note(action: str, ref: str, op: str, source: str | None, text: str, properties: dict) -> dict:
        """A result at the program's line where `source` names one (the stream's place of `op` beside it)."""
        in_stream = {"physicalLocation": {"artifactLocation": artifact(file),
                                          **({"region": where} if (where := region(op)) else {})},
                     "logicalLocations": [{"fullyQualifiedName": ref, "kind": "member"}]}
        path, _, line = (source or "").rpartition(":")
        location = {"physicalLocation": {"artifactLocation": artifact(path), "region": {"startLine": int(line)}}} \
            if path and line.isdigit() else in_stream
        return {"ruleId": OPTIMIZE_RULES[rule_index[action]][1], "ruleIndex": rule_index[action], "level": "note",
                "message": {"text": text}, "locations": [location],
                **({"relatedLocations": [{"id": 1, **in_stream, "message": {"text": ref}}]}
                   if location is not in_stream else {}),
                "partialFingerprints": {"vkverify/v2": f"{action}|{stream.name}|{_stable(stream, op)}|{ref}"},
                "properties": properties}
    results = [note(s.action, s.barrier, s.barrier, s.source, s.line() + (f": {s.why}" if s.action == "remove" else ""),
                    {k: v for k, v in s.to_json().items() if k in ("before", "after", "orders")})
               for s in result.suggestions if s.action in rule_index]
    results += [note("narrow_wait", w.wait, w.wait.split(".")[0], w.source, w.line(),
                     {k: v for k, v in w.to_json().items() if k in ("before", "after")}) for w in result.waits]
    results += [note("remove_host_wait", w.op, w.op, w.source, w.line(), {"kind": w.kind, "on": list(w.on)})
                for w in result.host_waits]
    return document(rules, results, [file], True)
