"""`vkverify graph`: the happens-before graph of submissions and synchronizations."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from vkverify.check import check
from vkverify.check import graph as graph_module
from vkverify.check.graph import build, to_dot
from vkverify.cli import main
from vkverify.model import from_dict, load

from .conftest import CORPUS, EXAMPLES, ROOT

EXAMPLE = ROOT / "examples" / "transfer-queue-upload-no-semaphore.json"
NODE = re.compile(r'^    "([^"]+)" \[label=.*\];$', re.MULTILINE)
EDGE = re.compile(r'^  "([^"]+)" -> "([^"]+)" \[(.*)\];$', re.MULTILINE)


def dot_text(capsys, path) -> str:
    assert main(["graph", str(path)]) == 0
    return capsys.readouterr().out


def test_one_node_per_submission_and_sync_op(capsys):
    text = dot_text(capsys, EXAMPLE)
    assert text.startswith("digraph happens_before {") and text.rstrip().endswith("}")
    nodes = NODE.findall(text)
    assert len(nodes) == len(set(nodes))
    stream = load(EXAMPLE)
    host_ops = {f"{t.id}[{i}]" for t in stream.threads for i in range(len(t.ops))}
    batches = {"sub main[1] 0", "sub main[2] 0"}
    syncs = {"sig main[1] 0 0", "fence main[2]"}
    finding_ops = {"upload[0]", "run[0]"}  # the example's two commands, both named by its finding
    assert set(nodes) == host_ops | batches | syncs | finding_ops
    edges = {(a, b): attrs for a, b, attrs in EDGE.findall(text)}
    assert {a for e in edges for a in e} <= set(nodes)
    assert 'label="submit"' in edges[("main[1]", "sub main[1] 0")]
    assert 'label="T"' in edges[("sig main[1] 0 0", "main[4]")]
    assert 'label="fence F"' in edges[("fence main[2]", "main[3]")]
    assert ("main[0]", "main[1]") in edges and ("upload[0]", "sig main[1] 0 0") in edges  # program order


def test_a_queue_and_a_thread_of_one_id_draw_each_node_once(tmp_path, capsys):
    """Ids are unique within their kind: queue `main` and thread `main` share one cluster, each node drawn once (the
    bad-input campaign found Graphviz crashing on a node drawn in two clusters)."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"format": "vkverify-stream/1", "name": "H",
                                "devices": [{"id": "gpu0", "queues": [{"id": "main"}]}],
                                "buffers": [{"id": "H", "size": 256, "memory": "host_coherent"}],
                                "threads": {"main": [{"op": "host_read", "buffer": "H"}]}}))
    nodes = NODE.findall(dot_text(capsys, path))
    assert nodes == ["main[0]"]


def test_every_command_is_drawn_with_its_recording_line(tmp_path, capsys):
    """A dispatch that no finding names is drawn too, unhighlighted; a label carries the program's file:line."""
    doc = json.loads((CORPUS[1]).read_text())
    assert check(from_dict(doc)) == [], CORPUS[1].name
    for i, command in enumerate(doc["command_buffers"]["cb0"]):
        command["source"] = f"engine.py:{10 + i}"
    path = tmp_path / "clean.json"
    path.write_text(json.dumps(doc))
    text = dot_text(capsys, path)
    commands = [f"cb0[{i}]" for i, c in enumerate(doc["command_buffers"]["cb0"]) if c["cmd"] != "barrier"]
    assert commands and set(commands) <= set(NODE.findall(text))
    for ref in commands:
        line = next(x for x in text.splitlines() if x.startswith(f'    "{ref}" [label='))
        assert f"at engine.py:{10 + int(ref[4:-1])}" in line and "#d62728" not in line, line


def test_the_finding_is_highlighted_with_a_dashed_red_edge(capsys):
    text = dot_text(capsys, EXAMPLE)
    edges = {(a, b): attrs for a, b, attrs in EDGE.findall(text)}
    missing = edges[("upload[0]", "run[0]")]
    assert 'style="dashed"' in missing and 'color="#d62728"' in missing and 'label="raw (fix 1)"' in missing
    for ref in ("upload[0]", "run[0]"):
        assert re.search(rf'"{re.escape(ref)}" \[label=.*color="#d62728"', text)
    assert not re.search(r'"main\[0\]" \[label=.*color="#d62728"', text)


def test_a_finding_of_another_submission_order_names_it(capsys):
    """Corpus 200: two threads submit to q0; the WAW is in the order with use's submit first, not the walk's drawn
    (up's first), so the legend names that order beside the finding (Finding.order); 201 has one order."""
    text = dot_text(capsys, next(p for p in CORPUS if p.name.startswith("200-")))
    assert "waw D: cb1[1] -> cb0[0] (in the submission order q0: use[0], up[0])" in text
    assert "in the submission order" not in dot_text(capsys, next(p for p in CORPUS if p.name.startswith("201-")))


def test_barriers_are_one_node_each(capsys):
    text = dot_text(capsys, next(p for p in CORPUS if p.name.startswith("16-")))
    stream = load(next(p for p in CORPUS if p.name.startswith("16-")))
    barriers = {f"barrier {cb.id}[{i}]" for cb in stream.command_buffers for i, c in enumerate(cb.commands)
                if type(c).__name__ == "Barrier"}
    assert barriers and barriers <= set(NODE.findall(text))


def test_clean_stream_has_no_dashed_edge(capsys):
    assert "dashed" not in dot_text(capsys, next(p for p in CORPUS if p.name.startswith("44-")))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
@pytest.mark.parametrize("path", CORPUS + EXAMPLES, ids=lambda p: p.name)
def test_dot_accepts_every_graph(path):
    stream = load(path)
    text = to_dot(build(stream, check(stream)))
    assert subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, check=False).returncode == 0


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_svg_is_valid_xml(tmp_path, capsys):
    out = tmp_path / "g.svg"
    assert main(["graph", str(EXAMPLE), "--format", "svg", "-o", str(out)]) == 0
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    assert "run[0]" in out.read_text()


def test_svg_without_dot_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setattr(graph_module.shutil, "which", lambda _: None)
    assert main(["graph", str(EXAMPLE), "--format", "svg"]) == 2
    err = capsys.readouterr().err
    assert "Graphviz `dot` is not on PATH" in err and err.count("\n") == 1


def test_params_stream_draws_the_failing_instance(capsys):
    text = dot_text(capsys, next(p for p in CORPUS if p.name.startswith("81-")))
    assert re.search(r'label="[^"]*\(n=2\)"', text) and "dashed" in text


def test_readme_picture_is_current():
    """docs/graph-example.svg is this example's graph (regenerate: vkverify graph ... --format svg -o ...)."""
    svg = (ROOT / "docs" / "graph-example.svg").read_text()
    assert "graph-example.svg" in (ROOT / "README.md").read_text()
    assert "transfer&#45;queue&#45;upload&#45;no&#45;semaphore" in svg or "transfer-queue-upload-no-semaphore" in svg


def bounds_shape(name: str, *args) -> dict:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bounds

    return getattr(bounds, name)(*args)


def test_svg_past_max_nodes_is_refused_at_once(tmp_path):
    """Issue 30 point 9: `graph --format svg` of 2,000 submits ran Graphviz for over 10 minutes."""
    path = tmp_path / "submits.json"
    path.write_text(json.dumps(bounds_shape("submits", 2000)))
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "graph", "--format", "svg", str(path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (2, "") and done.stderr == (
        f"{path}: 8000 nodes, past --max-nodes 1000 for an SVG (dot would take minutes to hours): use --format dot, "
        "or a larger --max-nodes\n")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot not installed")
def test_dot_runs_under_a_time_limit():
    """400 submits take dot about a minute: stopped after half a second."""
    stream = from_dict(bounds_shape("submits", 400))
    text = to_dot(build(stream, check(stream)))
    with pytest.raises(graph_module.GraphvizError, match=r"dot -Tsvg ran past its time limit \(0.5 s\) and was "
                                                         r"stopped: use --format dot"):
        graph_module.to_svg(text, timeout=0.5)


def test_timeout_stops_any_command_with_exit_2(tmp_path, capsys):
    """--timeout: a budget for every command but mutate (whose --timeout limits the command it tests)."""
    path = tmp_path / "submits.json"
    path.write_text(json.dumps(bounds_shape("submits", 400)))
    # In a process of its own, as a user runs it: the budget is a SIGALRM, whose delivery to the main thread a
    # test run's other threads must not decide (the suite once saw the graph finish past its budget).
    for verb in (["graph", "--format", "svg", "--max-nodes", "10000"], ["simulate", "--schedules", "100000"]):
        done = subprocess.run([sys.executable, "-m", "vkverify.cli", *verb, str(path), "--timeout", "1"],
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stdout == "" and done.stderr == f"vkverify {verb[0]}: --timeout 1 s reached: stopped before it " \
                                                   "finished\n"
    for bad in ("0", "nan", "1e300"):
        with pytest.raises(SystemExit) as usage:
            main(["check", str(path), "--timeout", bad])
        assert usage.value.code == 2 and (f"--timeout: must be a number of seconds above 0 and at most 10000000, "
                                          f"got {bad}") in capsys.readouterr().err
