"""Timeline semaphores across queues and threads: witnesses, deadlock names, params.

`replay` is an independent plain-Python reading of the schedule rules (no z3):
every full witness the checker returns (`witness="full"`) must be a legal
complete schedule of its stream and show the second access before the first
completes. The default slices are tested in test_witness.py.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vkverify.check import check
from vkverify.cli import main
from vkverify.model import InvalidStream, from_dict, ir

from .conftest import CORPUS


def replay(stream: ir.Stream, witness: list[str], first: str, second: str) -> None:
    """Assert that `witness` obeys the schedule rules and has `second` before `first`."""
    batches = {}  # key -> (submit ref, thread, pc, queue, batch, fence)
    for t in stream.threads:
        for pc, op in enumerate(t.ops):
            if isinstance(op, ir.Submit):
                parts = op.batches or (ir.Batch(),)
                for k, b in enumerate(parts):
                    key = f"{t.id}[{pc}]" if len(parts) == 1 else f"{t.id}[{pc}].batches[{k}]"
                    batches[key] = (f"{t.id}[{pc}]", op.queue, b, op.fence if k == len(parts) - 1 else None)
    host = {f"{t.id}[{pc}]": (t.id, pc, op) for t in stream.threads for pc, op in enumerate(t.ops)}
    value = {s.id: s.initial for s in stream.semaphores}
    binary = defaultdict(int)
    done_host, begun, ended = set(), [], set()
    next_pc = defaultdict(int)
    queue_order = defaultdict(list)  # queue -> batch keys in submission order
    fences = {}
    for event in witness:
        name, _, what = event.partition(" ")
        if name in host and not what:
            thread, pc, op = host[name]
            assert next_pc[thread] == pc, f"{name} out of program order"
            next_pc[thread] += 1
            done_host.add(name)
            if isinstance(op, ir.Submit):
                for key, (submit, queue, _, fence) in batches.items():
                    if submit == name:
                        queue_order[queue].append(key)
                        if fence:
                            fences[fence] = key
            elif isinstance(op, ir.SignalSemaphore):
                assert op.value > value[op.semaphore], f"{name} does not increase {op.semaphore}"
                value[op.semaphore] = op.value
            elif isinstance(op, ir.WaitSemaphores):
                assert all(value[w.semaphore] >= w.value for w in op.waits), f"{name} waits unsatisfied"
            elif isinstance(op, ir.WaitFences):
                assert all(f not in fences or fences[f] in ended for f in op.fences), f"{name} before its fence"
            elif isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
                queues = {op.queue} if isinstance(op, ir.QueueWaitIdle) else \
                    {q.id for d in stream.devices if d.id == op.device for q in d.queues}
                assert all(k in ended for q in queues for k in queue_order[q]), f"{name} before idle"
        elif what == "begin":
            submit, queue, batch, _ = batches[name]
            assert submit in done_host, f"{name} begins before its submit"
            assert queue_order[queue][len([k for k in begun if batches[k][1] == queue])] == name, \
                f"{name} begins out of submission order"
            for w in batch.waits:
                if w.value is None:
                    assert binary[w.semaphore] > 0, f"{name} waits an unsignalled binary semaphore"
                    binary[w.semaphore] -= 1
                else:
                    assert value[w.semaphore] >= w.value, f"{name} begins before {w.semaphore} >= {w.value}"
            begun.append(name)
        elif what == "end":
            submit, queue, batch, _ = batches[name]
            assert name in begun, f"{name} ends before it begins"
            earlier = queue_order[queue][:queue_order[queue].index(name)]
            if batch.signals:
                assert all(k in ended for k in earlier), f"{name} signals before earlier batches complete"
            for s in batch.signals:
                if s.value is None:
                    binary[s.semaphore] += 1
                else:
                    assert s.value > value[s.semaphore], f"{name} does not increase {s.semaphore}"
                    value[s.semaphore] = s.value
            ended.add(name)
    assert done_host == set(host) and ended == set(batches), "the schedule is not complete"
    for ref, claim in ((first, "first"), (second, "second")):
        assert ref in witness, f"the {claim} access {ref} is not in the witness"
    assert witness.index(second) < witness.index(first), "the second access is not before the first"


# ---- random multi-queue streams with timeline semaphores -----------------------------------------


@st.composite
def timeline_streams(draw) -> dict:
    queues = ["q0", "q1", "q2"][:draw(st.integers(2, 3))]
    sems = ["T", "U"][:draw(st.integers(1, 2))]
    bufs = ["A", "B"]
    cbs, ops, last = {}, {"main": [], "h": []}, defaultdict(int)
    for i in range(draw(st.integers(2, 6))):
        cb = f"cb{i}"
        buf = draw(st.sampled_from(bufs))
        cbs[cb] = [{"cmd": "dispatch", "shader": draw(st.sampled_from(["w", "r"])),
                    "bindings": [{"buffer": buf}]}]
        op = {"op": "submit", "queue": draw(st.sampled_from(queues)), "command_buffers": [cb]}
        if draw(st.booleans()):
            sem = draw(st.sampled_from(sems))
            op["wait"] = [{"semaphore": sem, "value": draw(st.integers(0, 3)),
                           "stage": draw(st.sampled_from(["all_commands", "compute_shader", "copy"]))}]
        if draw(st.booleans()):
            sem = draw(st.sampled_from(sems))
            last[sem] += draw(st.integers(1, 2))
            op["signal"] = [{"semaphore": sem, "value": last[sem]}]
        ops["main"].append(op)
        if draw(st.integers(0, 3)) == 0:
            sem = draw(st.sampled_from(sems))
            ops["h"].append({"op": "signal_semaphore", "semaphore": sem, "value": draw(st.integers(1, 4))})
    ops = {k: v for k, v in ops.items() if v}
    return {"format": "vkverify-stream/1", "name": "random",
            "devices": [{"id": "gpu0", "queues": [{"id": q} for q in queues]}],
            "buffers": [{"id": b, "size": 256, "memory": "host_coherent"} for b in bufs],
            "semaphores": [{"id": s, "type": "timeline"} for s in sems],
            "shaders": {"w": {"bindings": ["write"]}, "r": {"bindings": ["read"]}},
            "command_buffers": cbs, "threads": ops}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timeline_streams())
def test_every_witness_replays(doc):
    stream = from_dict(doc)
    for f in check(stream, witness="full"):
        if f.witness is not None:
            if f.first is not None:
                replay(stream, list(f.witness), f.first, f.second)
            else:  # timeline_not_increasing: the two signals in the witness's order
                events = list(f.witness)
                assert events.index(_event(f.ops[0], events)) < events.index(_event(f.ops[1], events))


def _event(ref: str, events: list[str]) -> str:
    """Where a signal happens: the end of the submit's batch (the last, if several), else the host op."""
    ends = [e for e in events if e.startswith((f"{ref} ", f"{ref}."))]
    return max((e for e in ends if e.endswith(" end")), key=events.index, default=ref)


def test_witnesses_of_the_corpus_replay():
    seen = 0
    for path in CORPUS:
        stream = from_dict(json.loads(path.read_text()))
        for f in check(stream, witness="full"):
            if f.witness is not None and f.first is not None:
                replay(stream.instances[0][1] if stream.params else stream, list(f.witness), f.first, f.second)
                seen += 1
    assert seen >= 8


# ---- deadlocks name the blocking operations ----------------------------------------------------


@pytest.mark.parametrize("name, ops", [
    ("53-timeline-wait-before-signal-same-queue.json", ["main[0]", "main[1]"]),
    ("78-timeline-wait-before-signal-same-queue-two-queues.json", ["main[1]", "main[2]", "main[3]"]),
    ("90-deadlock-cycle-across-queues.json", ["main[0]", "main[1]"]),
    ("91-deadlock-host-threads-shared-timeline.json", ["a[0]", "a[1]", "b[0]", "b[1]"]),
])
def test_deadlock_names_the_blocking_ops(root, name, ops):
    findings = [f for f in check(from_dict(json.loads((root / "tests" / "corpus" / name).read_text())))
                if f.kind == "deadlock"]
    assert len(findings) == 1 and list(findings[0].ops) == ops
    assert all(op in findings[0].message for op in ops)


# ---- params ---------------------------------------------------------------------------------------


def test_ring_allreduce_proven_for_n_2_to_8_in_one_call(root, capsys):
    path = root / "tests" / "corpus" / "80-ring-allreduce-params.json"
    stream = from_dict(json.loads(path.read_text()))
    assert [dict(v)["n"] for v, _ in stream.instances] == list(range(2, 9))
    assert main(["check", str(path)]) == 0


def test_ring_mutant_names_n_2_and_its_witness(root, capsys):
    path = root / "tests" / "corpus" / "81-ring-allreduce-no-cross-round-wait.json"
    assert main(["check", "--format", "json", str(path)]) == 1
    (result,) = json.loads(capsys.readouterr().out)
    findings = result["findings"]
    wars = [f for f in findings if f["kind"] == "war"]
    assert wars and all(f["params"] == {"n": 2} and f["witness"] for f in wars)
    assert all(f["witness"].index(f["second"]) < f["witness"].index(f["first"]) for f in wars)


def _template(**changes) -> dict:
    doc = {"format": "vkverify-stream/1", "params": {"n": {"min": 1, "max": 3}},
           "buffers": [{"for": "i in n", "do": [{"id": "B{i}", "size": "n*256", "memory": "host_coherent"}]}],
           "threads": {"main": [{"for": "i in n", "do": [{"op": "host_write", "buffer": "B{i}", "offset": "i*4"}]}]}}
    doc.update(changes)
    return doc


def test_params_template_expands():
    stream = from_dict(_template())
    last = stream.instances[-1][1]
    assert [b.id for b in last.buffers] == ["B0", "B1", "B2"] and last.buffers[0].size == 768
    assert [op.offset for op in last.threads[0].ops] == [0, 4, 8]
    assert check(stream) == []


@pytest.mark.parametrize("changes, path, words", [
    ({"params": {"n": {"min": 1}}}, "params.n", "max"),
    ({"params": {"n": {"min": 4, "max": 3}}}, "params.n", "greater"),
    ({"buffers": [{"id": "B", "size": "n*"}]}, "buffers[0].size", "does not parse"),
    ({"buffers": [{"id": "B", "size": "m*4"}]}, "buffers[0].size", "unknown name 'm'"),
    ({"buffers": [{"id": "B{j}", "size": 4}]}, "buffers[0].id", "unknown name 'j'"),
    ({"buffers": [{"id": "B", "size": "n**2"}]}, "buffers[0].size", "only integers"),
    ({"buffers": [{"for": "i of n", "do": []}]}, "buffers[0].for", "VAR in COUNT"),
    ({"buffers": [{"id": "B", "size": "n-2"}]}, "buffers[0].size", "with n=1"),
])
def test_bad_params_exit_2_with_the_json_path(tmp_path, capsys, changes, path, words):
    bad = tmp_path / "s.json"
    bad.write_text(json.dumps(_template(**changes)))
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f": {path}: " in err and words in err, err
    with pytest.raises(InvalidStream):
        from_dict(_template(**changes))
