"""`vkverify check` output formats (text, json, sarif) and exit codes, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from vkverify.check import check
from vkverify.check.groups import group
from vkverify.model import load

from .conftest import CORPUS, ROOT

RAW = ROOT / "tests" / "corpus" / "01-copy-then-dispatch-no-barrier.json"  # one raw finding
CLEAN = ROOT / "tests" / "corpus" / "02-copy-then-dispatch-barrier.json"  # no finding
WAW_RANGE = ROOT / "tests" / "corpus" / "12-copies-overlapping-regions.json"  # waw on part of a buffer
# Two threads submit to q0: a waw that only one of the two submission orders they allow runs into.
ONE_ORDER = ROOT / "tests" / "corpus" / "200-two-threads-one-queue-barrier-covers-one-order.json"

# docs/format.md, "Findings"
FILE_KEYS = {"file", "stream", "ok", "findings"}
FINDING_KEYS = {"kind", "buffer", "range", "first", "second", "first_access", "second_access", "racing",
                "message", "fix"}
EXTENSION_KEYS = {"labels", "group", "order"}  # docs/format.md, "Extensions", "Groups" and "Findings"
FILE_EXTENSION_KEYS = {"groups"}
SPEC_KINDS = {"raw", "war", "waw", "use_after_destroy", "uninitialized_read", "deadlock", "wait_never_satisfied",
              "timeline_not_increasing", "binary_semaphore_misuse", "fence_misuse", "ownership_missing", "event_race"}


def cli(*args) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "vkverify.cli", "check", *map(str, args)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert "Traceback" not in result.stderr, result.stderr
    return result


@pytest.fixture(scope="module")
def sarif_corpus():
    """SARIF over the whole corpus: findings of every kind."""
    result = cli("--format", "sarif", *CORPUS)
    assert result.returncode == 1
    return json.loads(result.stdout)


def test_corpus_files_used_here_are_what_they_claim():
    """One raw finding, none, a waw on part of a buffer: what the tests below read from each file."""
    assert RAW in CORPUS and CLEAN in CORPUS and WAW_RANGE in CORPUS
    found = {path: check(load(path)) for path in (RAW, CLEAN, WAW_RANGE)}
    assert [f.kind for f in found[RAW]] == ["raw"] and found[CLEAN] == []
    (waw,) = found[WAW_RANGE]
    assert waw.kind == "waw" and waw.range != (0, load(WAW_RANGE).index.buffers[waw.buffer].size)


# ---- json ----------------------------------------------------------------------


def test_json_one_file_keys():
    """One file is a list of one object, as several files are a list (docs/format.md, Findings)."""
    result = cli("--format", "json", RAW)
    assert result.returncode == 1
    (doc,) = json.loads(result.stdout)
    assert set(doc) == FILE_KEYS | FILE_EXTENSION_KEYS
    assert doc["file"] == str(RAW)
    assert doc["stream"] == "copy-then-dispatch-no-barrier"
    assert doc["ok"] is False
    (f,) = doc["findings"]
    assert FINDING_KEYS <= set(f) <= FINDING_KEYS | EXTENSION_KEYS
    labels = [c.get("label") for c in json.loads(RAW.read_text())["command_buffers"]["cb0"][:2]]
    assert f.get("labels", [None, None]) == labels
    assert f["kind"] == "raw" and f["buffer"] == "A"
    assert f["range"] == [0, 4096]
    assert (f["first"], f["second"]) == ("cb0[0]", "cb0[1]")
    assert f["first_access"] == "copy/transfer_write"
    assert f["second_access"] == "compute_shader/shader_storage_read"
    assert f["racing"] is False
    assert isinstance(f["message"], str) and f["message"]
    assert isinstance(f["fix"], str) and f["fix"]


def test_json_clean_file():
    result = cli("--format", "json", CLEAN)
    assert result.returncode == 0
    (doc,) = json.loads(result.stdout)
    assert set(doc) == FILE_KEYS | FILE_EXTENSION_KEYS
    assert doc["ok"] is True and doc["findings"] == []


def test_json_several_files_is_a_list():
    result = cli("--format", "json", RAW, CLEAN, WAW_RANGE)
    assert result.returncode == 1
    docs = json.loads(result.stdout)
    assert isinstance(docs, list)
    assert [d["file"] for d in docs] == [str(RAW), str(CLEAN), str(WAW_RANGE)]
    assert [d["ok"] for d in docs] == [False, True, False]
    for d in docs:
        assert set(d) == FILE_KEYS | FILE_EXTENSION_KEYS
        for f in d["findings"]:
            assert FINDING_KEYS <= set(f) <= FINDING_KEYS | EXTENSION_KEYS
    (waw,) = docs[2]["findings"]
    assert waw["kind"] == "waw" and waw["range"] == [1024, 2048]


def test_json_several_clean_files_exit_0():
    clean = [p for p in CORPUS if json.loads(p.read_text())["expect"]["findings"] == []][:3]
    result = cli("--format", "json", *clean)
    assert result.returncode == 0
    assert [d["ok"] for d in json.loads(result.stdout)] == [True] * len(clean)


def test_json_ops_findings_name_their_ops():
    path = ROOT / "tests" / "corpus" / "50-binary-semaphore-waited-twice.json"
    (doc,) = json.loads(cli("--format", "json", path).stdout)
    (f,) = doc["findings"]
    assert f["kind"] == "binary_semaphore_misuse" and f["ops"] == ["main[2]"]
    assert f["message"] and f["fix"]


def test_a_finding_of_another_submission_order_names_that_order_in_every_format():
    """A finding the walk's own submission order does not give names the order whose run gives it, so that a
    reader can tell why the calls as the stream lists them do not show it (docs/format.md, Findings)."""
    (doc,) = json.loads(cli("--format", "json", ONE_ORDER).stdout)
    (f,) = doc["findings"]
    assert f["kind"] == "waw" and f["order"] == {"q0": ["use[0]", "up[0]"]}
    assert "    order:  q0: use[0], up[0] (the walk's own submission order does not give it)" in \
        cli(ONE_ORDER).stdout.splitlines()
    for fmt in ("sarif", "github", "junit"):
        assert "without a memory dependency (in the submission order q0: use[0], up[0])" in \
            cli("--format", fmt, ONE_ORDER).stdout, fmt
    (doc,) = json.loads(cli("--format", "json", RAW).stdout)  # one thread: the walk's is the only order
    assert "order" not in doc["findings"][0] and "order:" not in cli(RAW).stdout


# ---- sarif ---------------------------------------------------------------------


def test_sarif_rules(sarif_corpus):
    assert sarif_corpus["version"] == "2.1.0"
    run = sarif_corpus["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "vkverify"
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids)), ids
    assert {r["name"] for r in rules} == SPEC_KINDS
    assert len(rules) == len(SPEC_KINDS)
    for r in rules:
        assert r["shortDescription"]["text"]


def test_sarif_rule_ids_are_stable():
    """The ids do not depend on the input (CI systems key suppressions on them)."""
    def rule_ids(*files):
        doc = json.loads(cli("--format", "sarif", *files).stdout)
        return {r["name"]: r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    clean, raw = rule_ids(CLEAN), rule_ids(RAW)
    assert clean == raw
    assert clean == {"raw": "VKV001", "war": "VKV002", "waw": "VKV003", "use_after_destroy": "VKV004",
                     "uninitialized_read": "VKV005", "deadlock": "VKV006", "wait_never_satisfied": "VKV007",
                     "timeline_not_increasing": "VKV008", "binary_semaphore_misuse": "VKV009",
                     "fence_misuse": "VKV010", "ownership_missing": "VKV011", "event_race": "VKV012"}


def test_sarif_results(sarif_corpus):
    run = sarif_corpus["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = {r["id"] for r in rules}
    results = run["results"]
    # One result per group of findings (docs/format.md, Output formats): a root cause repeated is one.
    expected_count = sum(len(group(stream, check(stream))) for stream in map(load, CORPUS))
    assert len(results) == expected_count
    assert expected_count < sum(len(json.loads(p.read_text())["expect"]["findings"]) for p in CORPUS)
    seen_rules = set()
    for res in results:
        assert res["ruleId"] in ids
        if "ruleIndex" in res:
            assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"]
        artifact = res["locations"][0]["physicalLocation"]["artifactLocation"]
        assert artifact["uriBaseId"] == "SRCROOT"
        assert artifact["uri"] in {p.relative_to(ROOT).as_posix() for p in CORPUS}
        seen_rules.add(res["ruleId"])
    assert seen_rules == ids  # the corpus has findings of every kind


def test_sarif_clean_file_has_no_results():
    result = cli("--format", "sarif", CLEAN)
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["version"] == "2.1.0" and doc["runs"][0]["results"] == []


# ---- text ----------------------------------------------------------------------


def test_text_names_ops_labels_range_and_fix():
    result = cli(RAW)
    assert result.returncode == 1
    out = result.stdout
    assert str(RAW) in out
    assert "raw" in out
    assert "cb0[0]" in out and "cb0[1]" in out
    assert '"upload A"' in out and '"consume A"' in out  # the labels of the two commands
    assert "[0, 4096)" in out
    fix_lines = [line for line in out.splitlines() if "fix" in line]
    assert fix_lines and "vkCmdPipelineBarrier2" in fix_lines[0]
    # the fix names the two operations it orders and the stages involved
    assert "cb0[0]" in fix_lines[0] and "cb0[1]" in fix_lines[0] and "compute_shader" in fix_lines[0]


def test_text_partial_range():
    out = cli(WAW_RANGE).stdout
    assert "waw" in out and "[1024, 2048)" in out


def test_text_clean():
    result = cli(CLEAN)
    assert result.returncode == 0
    assert "no findings" in result.stdout
    assert result.stderr == ""


# ---- exit codes ----------------------------------------------------------------


def test_exit_codes():
    assert cli(CLEAN).returncode == 0
    assert cli(RAW).returncode == 1
    assert cli(CLEAN, RAW).returncode == 1
    assert cli("--format", "sarif", RAW).returncode == 1


def test_exit_code_expect():
    assert cli("--expect", RAW, CLEAN).returncode == 0  # findings, but as expected


def test_usage_error_exit_2():
    result = subprocess.run([sys.executable, "-m", "vkverify.cli", "check", "--format", "xml", str(RAW)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
