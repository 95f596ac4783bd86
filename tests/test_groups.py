"""Findings grouped by root cause (docs/format.md, Groups): one missing dependency repeated over submits and
frames is one group in the text, SARIF, GitHub and JUnit outputs; JSON keeps every finding with its group;
`--expand` and `--expect` still see every finding. On streams, then on a capture of a program of ours."""

from __future__ import annotations

import inspect
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vkverify.check import check
from vkverify.check.groups import group
from vkverify.cli import main
from vkverify.model import load
from vkverify.model.loader import from_dict

from ._thirdparty import missing_host_barrier
from .conftest import ROOT
from .test_sarif import assert_valid
from .test_witness import RING_DROPPED

FRAMES = 4


def frames(n: int, read_sources: tuple[str, ...] = ()) -> dict:
    """n frames of one program: write In, submit cb0 (copy In -> Dev, a barrier, dispatch k: Dev -> Out, resubmitted
    every frame) and rec{f} (fill Stage, recorded anew each frame), wait for the fence, read Out and Stage.
    Nothing makes the device's writes available to the host: in each frame a raw on Out and one on Stage, the
    same two missing barriers. Frame 0 also rewrites In before its wait: one war, not repeated. `read_sources`:
    the program line each frame's read of Out is recorded at, in turn."""
    ops = []
    for f in range(n):
        ops += [{"op": "host_write", "buffer": "In"},
                {"op": "submit", "queue": "q0", "command_buffers": ["cb0", f"rec{f}"], "fence": "F"}]
        if f == 0:
            ops.append({"op": "host_write", "buffer": "In", "label": "early rewrite"})
        read_out = {"op": "host_read", "buffer": "Out"}
        if read_sources:
            read_out["source"] = read_sources[f % len(read_sources)]
        ops += [{"op": "wait_fences", "fences": ["F"]}, {"op": "reset_fences", "fences": ["F"]}, read_out,
                {"op": "host_read", "buffer": "Stage"}]
    barrier = {"cmd": "barrier", "src_stage": "copy", "src_access": "transfer_write",
               "dst_stage": "compute_shader", "dst_access": "shader_storage_read"}
    dispatch = {"cmd": "dispatch", "shader": "k", "bindings": [{"buffer": "Dev"}, {"buffer": "Out"}]}
    return {"format": "vkverify-stream/1", "name": "frames",
            "buffers": [{"id": b, "size": 4096, "memory": "device_local" if b == "Dev" else "host_coherent"}
                        for b in ("In", "Dev", "Out", "Stage")],
            "fences": [{"id": "F"}], "shaders": {"k": {"bindings": ["read", "write"]}},
            "command_buffers": {"cb0": [{"cmd": "copy", "src": "In", "dst": "Dev"}, barrier, dispatch],
                                **{f"rec{f}": [{"cmd": "fill", "dst": "Stage", "value": f}] for f in range(n)}},
            "threads": {"main": ops}}


@pytest.fixture
def path(tmp_path) -> Path:
    out = tmp_path / "frames.json"
    out.write_text(json.dumps(frames(FRAMES)))
    return out


def run(capsys, *args) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def test_the_same_missing_barrier_over_frames_is_one_group():
    stream = from_dict(frames(FRAMES))
    findings = check(stream)
    assert len(findings) == 2 * FRAMES + 1
    once, out, stage = group(stream, findings)
    assert (findings[once.first - 1].kind, findings[once.first - 1].buffer, once.findings) == ("war", "In", (1,))
    for g, buffer in ((out, "Out"), (stage, "Stage")):
        members = [findings[k - 1] for k in g.findings]
        assert len(members) == FRAMES and {(f.kind, f.buffer) for f in members} == {("raw", buffer)}
        assert len({f.second for f in members}) == FRAMES  # a host read of each frame
    # Each frame's writer has its own reference (cb0[2]@main[k] resubmitted, rec{f}[0] recorded anew), and the
    # same program point.
    assert {findings[k - 1].first.partition("@")[0] for k in out.findings} == {"cb0[2]"}
    assert len({findings[k - 1].first for k in out.findings}) == len({findings[k - 1].first for k in stage.findings}) \
        == FRAMES
    assert out.points == ("dispatch k compute_shader/shader_storage_write", "main: host_read host/host_read")
    assert stage.points == ("fill clear/transfer_write", "main: host_read host/host_read")


def test_a_recorded_source_line_is_part_of_the_program_point():
    """The same read of Out recorded at two lines of the program: two places to fix, two groups."""
    stream = from_dict(frames(FRAMES, read_sources=("app.py:10", "app.py:20")))
    groups = group(stream, check(stream))
    sourced = [g for g in groups if "at app.py" in g.points[1]]
    assert [g.points[1] for g in sourced] == ["main: host_read host/host_read at app.py:10",
                                              "main: host_read host/host_read at app.py:20"]
    assert [len(g.findings) for g in sourced] == [FRAMES // 2] * 2 and len(groups) == 4


def test_pairs_of_submits_on_other_queues_are_other_groups():
    """Corpus 141: three neighbouring pairs of one timeline's signals out of order, each pair on other queues or
    threads: three places to add a wait, three groups (by the operations' kinds alone, two)."""
    stream = load(ROOT / "tests" / "corpus" / "141-shared-timeline-witness-without-a-second-late-signal.json")
    findings = check(stream)
    assert [f.kind for f in findings] == ["timeline_not_increasing"] * 3
    assert [g.points for g in group(stream, findings)] == [("main: submit to q0", "h: signal_semaphore"),
                                                           ("main: submit to q2", "main: submit to q0"),
                                                           ("main: submit to q1", "main: submit to q2")]


def test_a_recorded_programs_loop_is_one_group_at_its_lines(vk_runtime):
    """A program run on the device (the runtime records each operation's line): three frames of a dispatch
    into host memory, a fence wait and a host read without a barrier to the host. One group, whose program
    points are the dispatch's and the read's lines in this file."""
    rt = vk_runtime
    rt.check = False  # the online check would raise at the first frame
    rt.create_buffer("Out", 256, "host_coherent")
    rt.create_fence("F")
    rt.command_buffer("cb0").cmd_dispatch("fill", ["Out"], (1, 1, 1), push=[64, 7])
    dispatch_line = inspect.currentframe().f_lineno - 1
    for _ in range(3):
        rt.submit("q0", ["cb0"], fence="F")
        rt.wait_fences(["F"])
        rt.reset_fences(["F"])
        rt.host_read("Out")
    read_line = inspect.currentframe().f_lineno - 1
    stream = rt.stream()
    findings = check(stream)
    assert [(f.kind, f.buffer) for f in findings] == [("raw", "Out")] * 3
    (g,) = group(stream, findings)
    here = Path(__file__).name
    assert g.findings == (1, 2, 3)
    assert g.points[0].startswith("dispatch fill compute_shader/") and g.points[0].endswith(f"{here}:{dispatch_line}")
    assert g.points[1].startswith("main: host_read host/host_read at ") and g.points[1].endswith(f"{here}:{read_line}")


def test_text_leads_with_the_groups_and_expand_lists_every_finding(capsys, path):
    code, text = run(capsys, "check", path)
    assert code == 1
    assert text.splitlines()[0].endswith(f"frames: {2 * FRAMES + 1} findings in 3 groups (--expand: every finding)")
    assert re.findall(r"^  (#\d+|group \d+)", text, re.MULTILINE) == ["#1", "group 2", "group 3"]  # #1: alone
    assert f"  group 2: {FRAMES} findings raw Out: read after write without a memory dependency\n" in text
    block = text.split("  group 2:")[1].split("  group 3:")[0]
    assert re.search(r"first:  #2 cb0\[2\]@main\[1\] -> main\[5\]\n", block)
    assert re.search(rf"last:   #{2 * FRAMES} cb0\[2\]@main\[\d+\] -> main\[\d+\]\n", block)
    assert block.count("fix:") == 1 and "dst host/host_read" in block
    code, expanded = run(capsys, "check", "--expand", path)
    assert code == 1 and "group " not in expanded
    numbers = re.findall(r"^  #(\d+) ", expanded, re.MULTILINE)
    assert numbers == [str(k) for k in range(1, 2 * FRAMES + 2)]  # every finding, with its own fix
    assert expanded.count("    fix:    ") == 2 * FRAMES + 1


def test_json_keeps_every_finding_with_its_group(capsys, path):
    code, out = run(capsys, "check", "--format", "json", path)
    (doc,) = json.loads(out)
    assert code == 1 and len(doc["findings"]) == 2 * FRAMES + 1
    groups = {g["id"]: g for g in doc["groups"]}
    assert sorted(groups) == [1, 2, 3] and [g["count"] for g in doc["groups"]] == [1, FRAMES, FRAMES]
    for number, f in enumerate(doc["findings"], 1):
        g = groups[f["group"]]
        assert number in g["findings"] and (f["kind"], f["buffer"]) == (g["kind"], g["buffer"])
    assert sorted(k for g in doc["groups"] for k in g["findings"]) == list(range(1, 2 * FRAMES + 2))
    assert groups[2]["fix"] == doc["findings"][groups[2]["findings"][0] - 1]["fix"]
    assert run(capsys, "check", "--format", "json", "--expand", path)[1] == out  # JSON has both either way


def test_docs_format_shows_the_groups_json_as_written(capsys, path):
    """docs/format.md, Groups: its example of the `groups` list has the keys the output has."""
    text = (ROOT / "docs" / "format.md").read_text()
    example = re.search(r'```json\n"groups": (\[.*?\])\n```', text, re.DOTALL).group(1)
    (doc,) = json.loads(run(capsys, "check", "--format", "json", path)[1])
    assert all(set(g) == set(json.loads(example)[0]) for g in doc["groups"])


def test_sarif_github_and_junit_report_one_result_per_group(capsys, path):
    _, out = run(capsys, "check", "--format", "sarif", path)
    doc = json.loads(out)
    assert_valid(doc)
    results = doc["runs"][0]["results"]
    assert [r["properties"].get("count", 1) for r in results] == [1, FRAMES, FRAMES]
    assert results[1]["properties"]["findings"] == list(range(2, 2 * FRAMES + 1, 2))
    assert f"({FRAMES} findings of this root cause" in results[1]["message"]["text"]
    assert len(json.loads(run(capsys, "check", "--format", "sarif", "--expand", path)[1])["runs"][0]["results"]) \
        == 2 * FRAMES + 1
    _, out = run(capsys, "check", "--format", "github", path)
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 3 and sum(f"({FRAMES}x)::" in line for line in errors) == 2
    _, out = run(capsys, "check", "--format", "junit", path)
    suite = ET.fromstring(out).find("testsuite")
    assert suite.get("failures") == "3" and len(suite.findall("testcase/failure")) == 3
    _, out = run(capsys, "check", "--format", "junit", "--expand", path)
    assert ET.fromstring(out).find("testsuite").get("failures") == str(2 * FRAMES + 1)


def test_expect_compares_findings_not_groups(capsys, tmp_path):
    doc = frames(FRAMES)
    stream = from_dict(doc)
    findings = check(stream)
    doc["expect"] = {"findings": [{"kind": f.kind, "buffer": f.buffer, "first": f.first, "second": f.second}
                                  for f in findings]}
    path = tmp_path / "expected.json"
    path.write_text(json.dumps(doc))
    code, out = run(capsys, "check", "--expect", path)
    assert code == 0 and "expect: agrees" in out
    dropped = findings[-1]  # the last of a group: the group is still reported, the finding unexpected
    doc["expect"]["findings"].pop()
    path.write_text(json.dumps(doc))
    code, out = run(capsys, "check", "--expect", path)
    assert code == 1 and "expect: DISAGREES" in out
    assert f"    unexpected: raw {dropped.buffer} {dropped.first} {dropped.second}" in out.splitlines()


def test_a_group_shows_the_witness_of_its_first_finding(capsys, tmp_path):
    """The ring with every cross-round wait dropped (n = 3): a racing war on each device's receive slot in every
    round, 3 groups of 3. A group's witness is its first finding's; the others of the group point to it, and a
    limit on witnesses counts the groups that get one."""
    from vkverify.model.dump import to_dict

    stream = RING_DROPPED[1]
    findings = check(stream)
    racing = [g for g in group(stream, findings) if findings[g.first - 1].racing]
    assert [len(g.findings) for g in racing] == [3, 3, 3]
    for g in racing:
        assert findings[g.first - 1].witness is not None
        assert [findings[k - 1].witness_same_as for k in g.findings[1:]] == [g.first] * 2
    path = tmp_path / "ring.json"
    path.write_text(json.dumps(to_dict(stream)))
    _, text = run(capsys, "check", path)
    assert text.count("    witness (") == 3 and "witness: same as" not in text
    _, text = run(capsys, "check", "--expand", path)
    assert text.count("    witness (") == 3 and text.count("witness: same as") == 6
    _, text = run(capsys, "check", "--witnesses", "1", path)
    assert text.count("    witness (") == 1 and text.count("witness: not computed (limit 1") == 2


# ---- a capture ------------------------------------------------------------------------------------------------

SUBMITS = 5

TWO_READBACKS = f"""
import numpy as np
from tests._lavapipe import ComputeDevice
d = ComputeDevice()
vk = d.vk
a, b = np.arange(256, dtype=np.uint32), np.arange(64, dtype=np.uint32) * 3
src_a, _ = d._buffer(a.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
src_b, _ = d._buffer(b.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
out_a, mem_a = d._buffer(bytes(a.nbytes), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
out_b, mem_b = d._buffer(bytes(b.nbytes), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)

def record(cb):  # two copies into readback buffers, and no barrier to the host's reads
    regions_a = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=a.nbytes)]
    vk.vkCmdCopyBuffer(cb, src_a, out_a, 1, regions_a)
    regions_b = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=b.nbytes)]
    vk.vkCmdCopyBuffer(cb, src_b, out_b, 1, regions_b)

for _ in range({SUBMITS}):
    d._execute(record)  # submit with a fence, wait for it
    assert (d.read(mem_a, a.nbytes, a.dtype) == a).all()
    assert (d.read(mem_b, b.nbytes, b.dtype) == b).all()
d.close()
"""


@pytest.fixture(scope="module")
def readbacks(tmp_path_factory) -> Path:
    from .test_import import capture
    return capture(TWO_READBACKS, tmp_path_factory.mktemp("groups") / "readbacks.gfxr")


def test_a_capture_repeating_a_missing_host_barrier_gives_a_group_per_readback_buffer(readbacks, capsys):
    """Each submit: two copies into staging buffers, a fence wait, the host reads both through their mappings,
    with no barrier to host / host_read: a raw per buffer per submit (adjudicated by missing_host_barrier,
    from the spec's text), two root causes."""
    code, out = run(capsys, "check", "--format", "json", readbacks)
    (doc,) = json.loads(out)
    findings = doc["findings"]
    assert code == 1 and len(findings) == 2 * SUBMITS
    assert all(missing_host_barrier(f) for f in check_capture(readbacks))
    assert [(g["kind"], g["count"]) for g in doc["groups"]] == [("raw", SUBMITS)] * 2
    assert len({g["buffer"] for g in doc["groups"]}) == 2
    for g in doc["groups"]:
        assert {findings[k - 1]["buffer"] for k in g["findings"]} == {g["buffer"]}
        assert all(findings[k - 1]["group"] == g["id"] for k in g["findings"])
    code, text = run(capsys, "check", readbacks)
    assert text.splitlines()[0].endswith(f"{2 * SUBMITS} findings in 2 groups (--expand: every finding)")
    assert len(re.findall(r"^  group \d+: ", text, re.MULTILINE)) == 2 and text.count("fix:") == 2
    _, expanded = run(capsys, "check", "--expand", readbacks)
    assert len(re.findall(r"^  #\d+ raw ", expanded, re.MULTILINE)) == 2 * SUBMITS


def check_capture(path: Path):
    from vkverify.importer import import_capture
    return check(import_capture(path)[0])


def test_a_capture_gives_one_sarif_result_github_annotation_and_junit_failure_per_group(readbacks, capsys):
    _, out = run(capsys, "check", "--format", "sarif", readbacks)
    doc = json.loads(out)
    assert_valid(doc)
    results = doc["runs"][0]["results"]
    assert [r["properties"]["count"] for r in results] == [SUBMITS, SUBMITS]
    assert all("callIndex" in r["locations"][0]["physicalLocation"]["region"]["properties"] for r in results)
    _, out = run(capsys, "check", "--format", "github", readbacks)
    errors = out.splitlines()
    assert len(errors) == 2 and all(line.startswith("::error ") and f"({SUBMITS}x)::" in line for line in errors)
    _, out = run(capsys, "check", "--format", "junit", readbacks)
    suite = ET.fromstring(out).find("testsuite")
    assert suite.get("failures") == "2" and suite.get("tests") == "2"
    failures = suite.findall("testcase/failure")
    assert all(f"({SUBMITS} findings of this root cause" in f.get("message") for f in failures)
    assert not any(f"{SUBMITS}x" in case.get("name") for case in suite.findall("testcase"))  # names outlive counts
