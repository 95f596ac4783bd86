"""vkverify optimize (check/optimize.py): fewer and narrower barriers, each result checked against the fast checker
by the optimizer itself and here against the slow reference, which shares no rule code with it."""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings

from vkverify.check import check
from vkverify.model.errors import UsageError
from vkverify.check.optimize import optimize
from vkverify.check.reference import OutsideReference, verdict
from vkverify.check.scopes import access_scope, first_execution_scope, second_execution_scope
from vkverify.cli import main
from vkverify.model import from_dict, ir, load
from vkverify.model.refs import format_ref, map_positions

from .conftest import CORPUS, EXAMPLES, ROOT
from .differential import SETTINGS, batched_streams, resubmitting_streams, streams, thread_streams

sys.path.insert(0, str(ROOT / "benchmarks"))
from decode_stream import decode_stream, full_barriers

# As tests/test_reference.py: VKVERIFY_DIFFERENTIAL_EXAMPLES sets how many generated streams (a campaign: thousands).
EXAMPLES_RUN = int(os.environ.get("VKVERIFY_DIFFERENTIAL_EXAMPLES", "400"))
def barriers(stream: ir.Stream) -> list[tuple[str, int, ir.Barrier]]:
    return [(cb.id, i, c) for cb in stream.command_buffers for i, c in enumerate(cb.commands)
            if isinstance(c, ir.Barrier) and not c.buffers]


def findings(stream: ir.Stream, back=lambda text: text) -> set[tuple]:
    return {(f.kind, f.buffer, f.first and back(f.first), f.second and back(f.second), f.range) for f in check(stream)}


def reference_hazards(stream: ir.Stream, back=lambda text: text) -> set[tuple] | None:
    try:
        return {(h.kind, h.buffer, back(h.first), back(h.second), h.lo, h.hi) for h in verdict(stream).hazards}
    except OutsideReference:
        return None


def assert_no_wider(result) -> None:
    """Every kept barrier's scopes lie within the original's (spec 7.1.2: the expanded scopes)."""
    for s in result.suggestions:
        if s.after is None:
            continue
        before, after = ({k: frozenset(v) for k, v in masks.items()} for masks in (s.before, s.after))
        assert first_execution_scope(after["src_stage"]) <= first_execution_scope(before["src_stage"]), s
        assert second_execution_scope(after["dst_stage"]) <= second_execution_scope(before["dst_stage"]), s
        assert access_scope(after["src_stage"], after["src_access"]) <= \
            access_scope(before["src_stage"], before["src_access"]), s
        assert access_scope(after["dst_stage"], after["dst_access"]) <= \
            access_scope(before["dst_stage"], before["dst_access"]), s


def test_a_full_barrier_before_every_dispatch_comes_down_to_the_hazards():
    """A decode loop with a full barrier before each of its dispatches keeps no more than the hand-placed stream
    (barriers only on proven hazards) optimized does, which keeps fewer than it has (a barrier before a group is
    chosen where the hand placed one per hazard), each narrowed."""
    placed = decode_stream(1200, layers=2)
    hand = optimize(placed)
    full = full_barriers(placed)
    result = optimize(full)
    assert len(barriers(full)) > 2 * len(barriers(placed))
    kept = len(barriers(result.stream))
    assert kept <= len(barriers(hand.stream)) < len(barriers(placed)), (kept, len(barriers(placed)))
    assert result.counts["remove"] == len(barriers(full)) - kept
    assert findings(result.stream, result.original_ref) == findings(full)
    assert_no_wider(result)
    narrowed = [s for s in result.suggestions if s.action == "narrow"]
    assert narrowed and all("host" not in s.after["dst_stage"] or s.example.second_stage == "host" for s in narrowed)


def test_the_example_keeps_two_barriers_the_slow_reference_needs():
    """examples/decode-full-barriers.json: six full barriers, two kept; by the slow reference (no rule code shared
    with the checker) the optimized step has no hazard and each kept barrier is load-bearing."""
    stream = load(ROOT / "examples" / "decode-full-barriers.json")
    result = optimize(stream)
    assert result.counts == {"remove": 4, "narrow": 2, "keep": 0} and result.method.startswith("z3")
    assert reference_hazards(result.stream) == set()
    [cb] = result.stream.command_buffers
    for k in [i for i, c in enumerate(cb.commands) if isinstance(c, ir.Barrier)]:
        fewer = replace(result.stream, command_buffers=(replace(cb, commands=cb.commands[:k] + cb.commands[k + 1:]),))
        assert reference_hazards(fewer), f"the barrier at {k} is not needed"


def test_what_a_barrier_orders_is_named():
    """The corpus's three-slot staging ring: no later command reads what the landing barriers make visible, so
    each is removable, and says so; a barrier that orders a RAW keeps it, naming the pair."""
    ring = load(next(p for p in CORPUS if p.name.startswith("93-")))
    result = optimize(ring)
    assert result.counts == {"remove": 7, "narrow": 0, "keep": 0}
    assert all(s.orders == 0 and "orders none" in s.why for s in result.suggestions)
    raw = load(next(p for p in CORPUS if p.name.startswith("04-")))
    [kept] = optimize(raw).suggestions
    assert kept.action in ("keep", "narrow") and kept.orders >= 1 and kept.example.kind == "raw"


def test_a_barrier_to_the_host_in_a_later_submit_orders_the_read_after_its_wait():
    """vkdispatch's shape: a dispatch's submit has no barrier; the next submit on the queue holds compute ->
    transfer and transfer -> host (a chain), and the host reads after waiting for it. The chain is kept, the
    full barrier that orders nothing goes, proved in one round (with the pair's barriers sought only in the
    write's own submit, nothing ordered it alone, the proof failed and every barrier was kept)."""
    stream = from_dict({
        "format": "vkverify-stream/1", "name": "host-after-a-later-submit",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
        "buffers": [{"id": "B", "size": 256, "memory": "host_coherent"}, {"id": "C", "size": 256}],
        "semaphores": [{"id": "T", "type": "timeline", "initial": 0}],
        "shaders": {"produce": {"bindings": ["write"]}},
        "command_buffers": {
            "work": [{"cmd": "barrier", "src_stage": ["all_commands"], "src_access": ["memory_write"],
                      "dst_stage": ["all_commands"], "dst_access": ["memory_read", "memory_write"], "label": "full"},
                     {"cmd": "dispatch", "shader": "produce", "groups": [1, 1, 1],
                      "bindings": [{"buffer": "B", "access": "write"}]}],
            "down": [{"cmd": "barrier", "src_stage": ["compute_shader"], "src_access": ["shader_storage_write"],
                      "dst_stage": ["copy"], "dst_access": ["transfer_read"], "label": "compute -> copy"},
                     {"cmd": "copy", "src": "B", "dst": "C"},
                     {"cmd": "barrier", "src_stage": ["copy"], "src_access": ["transfer_write"],
                      "dst_stage": ["host"], "dst_access": ["host_read"], "label": "copy -> host"}]},
        "threads": {"main": [
            {"op": "submit", "queue": "q0", "command_buffers": ["work"], "signal": [{"semaphore": "T", "value": 1}]},
            {"op": "submit", "queue": "q0", "command_buffers": ["down"],
             "wait": [{"semaphore": "T", "value": 1, "stage": ["copy"]}], "signal": [{"semaphore": "T", "value": 2}]},
            {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 2}]},
            {"op": "host_read", "buffer": "B"}]}})
    assert findings(stream) == set()
    result = optimize(stream)
    assert result.rounds == 1 and findings(result.stream, result.original_ref) == set()
    assert {s.barrier: s.action for s in result.suggestions} == {"work[0]": "remove", "down[0]": "keep",
                                                                 "down[2]": "keep"}


@pytest.mark.parametrize("path", [p for p in [*CORPUS, *EXAMPLES] if '"params"' not in p.read_text()
                                  and '"execute_commands"' not in p.read_text()], ids=lambda p: p.name)
def test_the_corpus_keeps_its_findings(path):
    stream = load(path)
    result = optimize(stream)
    assert findings(result.stream, result.original_ref) == findings(stream)
    assert len(barriers(result.stream)) <= len(barriers(stream))
    assert_no_wider(result)


def test_a_stream_with_secondary_command_buffers_is_refused_with_the_reason():
    [path] = [p for p in CORPUS if p.name.startswith("181-")]
    with pytest.raises(UsageError, match="secondary command buffers"):
        optimize(load(path))


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams() | resubmitting_streams() | batched_streams() | thread_streams())
def test_generated_streams_keep_every_hazard_and_every_ordering(doc):
    """The optimized stream: no more barriers, no wider masks, the same findings by the fast checker, and by the slow
    reference the same hazards where the original has none (every conflicting pair ordered stays ordered), and no
    new pair of racing operations where it has some. (Where the original has hazards, the reference may name more
    of them after: it compares two writes with a write between them only where that write is not ordered between
    them, which an execution-only barrier can do; and an operation already racing on a buffer may lose an ordering
    with an earlier access the checker no longer compares it with: docs/optimize.md, Limits.) So a new pair is
    allowed only where one of its operations already races on that buffer, either access of a hazard (a narrowed
    semaphore wait can let an already-racing read run before a host write it followed, the pair then named the
    other way round; or break a chain through another queue that ordered an already-racing write after an earlier
    one)."""
    stream = from_dict(doc)
    result = optimize(stream, budget_s=2)
    assert len(barriers(result.stream)) <= len(barriers(stream))
    assert_no_wider(result)
    assert findings(result.stream, result.original_ref) == findings(stream)
    before = reference_hazards(stream)
    if before is not None:
        after = reference_hazards(result.stream, result.original_ref)
        racing = {(h[1], op) for h in before for op in h[2:4]}
        known = {g[2:4] for g in before} | _chained(before)
        new = {h for h in after if h[2:4] not in known}
        assert after == before if not before else all({(h[1], h[2]), (h[1], h[3])} & racing for h in new), new


def _chained(hazards: set[tuple]) -> set[tuple]:
    """The pairs (first, third) of racing writes first -> second -> third on one buffer: the reference compares them
    only where the middle write is not ordered between them."""
    starting: dict[tuple, set] = {}
    for _, buffer, first, second, *_ in hazards:
        starting.setdefault((buffer, first), set()).add(second)
    return {(a, d) for _, buffer, a, b, *_ in hazards for d in starting.get((buffer, b), ())}


def _one_queue(doc: dict) -> bool:
    return len(doc["devices"][0]["queues"]) == 1 and not any(
        op["op"] in ("host_read", "host_write", "signal_semaphore") for op in doc["threads"]["main"])


@settings(max_examples=EXAMPLES_RUN // 8, **SETTINGS)
@given(streams())
def test_on_small_streams_the_choice_is_minimal(doc):
    """One queue, no host access, up to 6 barriers: z3's count equals the brute-force minimum (the fewest barriers,
    as written, that leave the findings as they were), and removing any barrier it kept adds a finding."""
    assume(_one_queue(doc))
    stream = from_dict(doc)
    every = barriers(stream)
    assume(1 <= len(every) <= 6)
    result = optimize(stream)
    assert result.method.startswith("z3")
    kept = {(cb, i) for cb, i, _ in every} - {_parse(s.barrier) for s in result.suggestions if s.action == "remove"}
    original = findings(stream)

    def without(drop) -> ir.Stream:
        cbs = [replace(cb, commands=tuple(c for i, c in enumerate(cb.commands) if (cb.id, i) not in drop))
               for cb in stream.command_buffers]
        return replace(stream, command_buffers=tuple(cbs))

    def same(drop) -> bool:
        positions = {cb.id: [i for i in range(len(cb.commands)) if (cb.id, i) not in drop]
                     for cb in stream.command_buffers}
        return findings(without(drop), lambda t: map_positions(
            t, lambda owner, i: format_ref(owner, positions[owner][i]) if owner in positions else None)) == original

    sites = [(cb, i) for cb, i, _ in every]
    least = next(k for k in range(len(sites) + 1)
                 if any(same(set(sites) - set(keep)) for keep in itertools.combinations(sites, k)))
    assert len(kept) == least, (kept, least)
    for b in kept:
        assert not same((set(sites) - kept) | {b}), f"{b} kept but not needed"


def _parse(ref: str) -> tuple[str, int]:
    owner, index = ref.rstrip("]").split("[")
    return owner, int(index)


def test_cli_writes_the_optimized_stream_and_json(tmp_path, capsys):
    full = full_barriers(decode_stream(1500, layers=2))
    from vkverify.model.dump import dumps
    src = tmp_path / "full.json"
    src.write_text(dumps(full))
    out = tmp_path / "fewer.json"
    assert main(["optimize", str(src), "-o", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert ": remove" in text and ": narrow: " in text and "proved:" in text
    optimized = load(out)
    assert len(barriers(optimized)) < len(barriers(full))
    assert sorted((f.kind, f.buffer) for f in check(optimized)) == sorted((f.kind, f.buffer) for f in check(full))
    assert main(["optimize", str(src), "--format", "json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["remove"] == len(barriers(full)) - len(barriers(optimized))
    assert {s["action"] for s in doc["suggestions"]} >= {"remove", "narrow"}
    assert main(["optimize", str(tmp_path / "missing.json")]) == 2


def test_the_guides_transcript_is_what_optimize_prints(capsys, monkeypatch):
    """docs/optimize.md shows the example's output: it is the output (but the time it took)."""
    monkeypatch.chdir(ROOT)
    from .test_docs import blocks
    [shown] = [body for language, _, body in blocks((ROOT / "docs" / "optimize.md").read_text()) if language == "text"]
    assert main(["optimize", "examples/decode-full-barriers.json", "-q"]) == 0
    printed = capsys.readouterr().out

    def untimed(text: str) -> str:
        return re.sub(r", [0-9.]+ s\)", ")", text).strip()
    assert untimed(printed) == untimed(shown)


def _waiting_stream(later_copy: bool) -> ir.Stream:
    """q1 copies into B and signals S; q0 waits S at all_commands before a dispatch reading B, and (`later_copy`)
    then submits, with no wait of its own, a copy reading B: ordered only by the first submit's wait (7.4.2: its
    second synchronization scope takes in later batches' commands at its stages)."""
    ops = [{"op": "host_write", "buffer": "A"},
           {"op": "submit", "queue": "q1", "command_buffers": ["up"], "signal": [{"semaphore": "S", "value": 1}]},
           {"op": "submit", "queue": "q0", "command_buffers": ["use"],
            "wait": [{"semaphore": "S", "value": 1, "stage": ["all_commands"]}]}]
    if later_copy:
        ops.append({"op": "submit", "queue": "q0", "command_buffers": ["again"]})
    return from_dict({
        "format": "vkverify-stream/1", "name": "wait-stage",
        "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 0}]}],
        "buffers": [{"id": "A", "size": 256, "memory": "host_coherent"}, {"id": "B", "size": 256},
                    {"id": "C", "size": 256}, {"id": "D", "size": 256}],
        "semaphores": [{"id": "S", "type": "timeline", "initial": 0}],
        "shaders": {"consume": {"bindings": ["read", "write"]}},
        "command_buffers": {
            "up": [{"cmd": "copy", "src": "A", "dst": "B"}],
            "use": [{"cmd": "dispatch", "shader": "consume", "groups": [1, 1, 1],
                     "bindings": [{"buffer": "B", "access": "read"}, {"buffer": "C", "access": "write"}]}],
            "again": [{"cmd": "copy", "src": "B", "dst": "D"}]},
        "threads": {"main": ops}})


def test_a_semaphore_wait_is_narrowed_to_its_batch_s_stages_where_nothing_later_needs_more():
    stream = _waiting_stream(later_copy=False)
    assert findings(stream) == set()
    result = optimize(stream)
    [narrowed] = result.waits
    assert (narrowed.wait, narrowed.before, narrowed.after) == ("main[2].batches[0].wait[0]", ("all_commands",),
                                                                ("compute_shader",))
    [wait] = result.stream.index.threads["main"].ops[2].batches[0].waits
    assert wait.stage == {"compute_shader"} and findings(result.stream) == set()
    assert "wait stage of S all_commands -> compute_shader" in result.text("s.json")
    assert result.to_json()["waits"] == [narrowed.to_json()]
    # The reference (no rule code shared) agrees: nothing races in the narrowed stream.
    assert reference_hazards(result.stream) == set()


def test_a_wait_a_later_batch_relies_on_keeps_its_stages():
    stream = _waiting_stream(later_copy=True)
    assert findings(stream) == set()
    ops = list(stream.index.threads["main"].ops)
    ops[2] = replace(ops[2], batches=(replace(ops[2].batches[0], waits=(
        replace(ops[2].batches[0].waits[0], stage=frozenset({"compute_shader"})),)),))
    narrower = replace(stream, threads=(replace(stream.threads[0], ops=tuple(ops)),))  # by hand: the copy races
    assert ("raw", "B", "up[0]", "again[0]", (0, 256)) in findings(narrower)
    result = optimize(stream)
    assert result.waits == () and findings(result.stream) == set()


def _waiting_host(ops: list[dict]) -> ir.Stream:
    """A fill of host-visible memory with its barrier to the host, submitted with fence F, then the host's `ops`."""
    return from_dict({
        "format": "vkverify-stream/1", "name": "host-waits",
        "buffers": [{"id": "Out", "size": 4096, "memory": "host_coherent"}], "fences": [{"id": "F"}],
        "command_buffers": {"cb0": [
            {"cmd": "fill", "dst": "Out", "offset": 0, "size": 4096, "value": 7},
            {"cmd": "barrier", "src_stage": ["clear"], "src_access": ["transfer_write"], "dst_stage": ["host"],
             "dst_access": ["host_read"]}]},
        "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"}, *ops]}})


def test_a_double_wait_and_a_trailing_idle_wait_go_the_wait_the_read_needs_stays():
    stream = _waiting_host([{"op": "wait_fences", "fences": ["F"]}, {"op": "queue_wait_idle", "queue": "q0"},
                            {"op": "host_read", "buffer": "Out", "offset": 0, "size": 4096},
                            {"op": "device_wait_idle", "device": "gpu0"}])
    assert findings(stream) == set()
    result = optimize(stream)
    # Either the fence wait or the idle wait orders the read: the idle wait, the broader, goes.
    assert [(w.op, w.kind, w.on) for w in result.host_waits] == [("main[2]", "queue_wait_idle", ("q0",)),
                                                                 ("main[4]", "device_wait_idle", ("gpu0",))]
    assert [type(op).__name__ for op in result.stream.threads[0].ops] == ["Submit", "WaitFences", "HostAccess"]
    assert findings(result.stream) == set() and reference_hazards(result.stream) == set()
    assert result.to_json()["host_waits"][0] == {"op": "main[2]", "kind": "queue_wait_idle", "on": ["q0"],
                                                 "label": None, "source": None}
    assert "main[4]: remove: device_wait_idle gpu0 orders nothing the stream needs" in result.text("s.json")


def test_a_wait_the_read_needs_stays_though_it_follows_another_wait():
    """A host wait for T covers the first submit only; the fence wait after it, with no submit between (a candidate),
    is what orders the read of the second submit's fill: the proof keeps it (removed by hand, the read races, for
    the slow reference too)."""
    doc = {"format": "vkverify-stream/1", "name": "two-waits",
           "buffers": [{"id": "Out", "size": 4096, "memory": "host_coherent"},
                       {"id": "Other", "size": 16, "memory": "device_local"}],
           "fences": [{"id": "F"}], "semaphores": [{"id": "T", "type": "timeline"}],
           "command_buffers": {"first": [{"cmd": "fill", "dst": "Other", "offset": 0, "size": 16, "value": 1}],
                               "cb0": [{"cmd": "fill", "dst": "Out", "offset": 0, "size": 4096, "value": 7},
                                       {"cmd": "barrier", "src_stage": ["clear"], "src_access": ["transfer_write"],
                                        "dst_stage": ["host"], "dst_access": ["host_read"]}]},
           "threads": {"main": [
               {"op": "submit", "queue": "q0", "command_buffers": ["first"],
                "signal": [{"semaphore": "T", "value": 1}]},
               {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
               {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 1}]},
               {"op": "wait_fences", "fences": ["F"]},
               {"op": "host_read", "buffer": "Out", "offset": 0, "size": 4096}]}}
    stream = from_dict(doc)
    assert findings(stream) == set()
    del doc["threads"]["main"][3]
    assert reference_hazards(from_dict(doc)), "the fence wait orders the read"
    said: list[str] = []
    assert optimize(stream, progress=said.append).host_waits == ()
    assert "fence and idle waits: 0 of 1 removed (1 check)" in said, "tried, and kept by the proof"


def _ranged_stream() -> dict:
    """A copy into X bytes [256, 768) read by a dispatch, ordered by a full barrier; Y only written."""
    return {"format": "vkverify-stream/1", "name": "ranged",
            "buffers": [{"id": "S", "size": 1024, "memory": "host_coherent"}, {"id": "X", "size": 4096},
                        {"id": "Y", "size": 4096}],
            "shaders": {"k": {"bindings": ["read", "write"]}},
            "command_buffers": {"cb0": [
                {"cmd": "copy", "src": "S", "dst": "X", "regions": [{"src_offset": 0, "dst_offset": 256, "size": 512}]},
                {"cmd": "barrier", "src_stage": ["copy", "compute_shader"], "src_access": ["memory_write"],
                 "dst_stage": ["compute_shader", "copy"], "dst_access": ["memory_read", "memory_write"]},
                {"cmd": "dispatch", "shader": "k", "groups": [1, 1, 1],
                 "bindings": [{"buffer": "X", "offset": 256, "size": 512, "access": "read"},
                              {"buffer": "Y", "access": "write"}]}]},
            "threads": {"main": [{"op": "host_write", "buffer": "S"},
                                 {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}}


def test_with_buffer_barriers_a_kept_barrier_covers_the_bytes_of_its_pairs_exactly():
    stream = from_dict(_ranged_stream())
    assert optimize(stream).suggestions[0].ranges == (), "global barriers stay global unless asked"
    result = optimize(stream, buffer_barriers=True)
    [s] = result.suggestions
    assert (s.action, s.ranges) == ("narrow", (("X", 256, 512),))
    [bb] = result.stream.command_buffers[0].commands[1].buffers
    assert (bb.buffer, bb.offset, bb.size, bb.src_stage, bb.dst_access) == \
        ("X", 256, 512, {"copy"}, {"shader_storage_read"})
    assert findings(result.stream) == set() and reference_hazards(result.stream) == set()
    assert result.to_json()["suggestions"][0]["buffers"] == [{"buffer": "X", "offset": 256, "size": 512}]
    assert "as buffer barriers on X [256, 768)" in result.text("s.json")
    # One byte short, the slow reference (no rule code shared) reports the read of the last byte: the range is exact.
    doc = _ranged_stream()
    doc["command_buffers"]["cb0"][1]["buffers"] = [{"buffer": "X", "offset": 256, "size": 511}]
    assert {h[0] for h in reference_hazards(from_dict(doc))} == {"raw"}


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(streams() | batched_streams() | thread_streams())
def test_generated_streams_with_buffer_barriers_keep_every_hazard_and_every_ordering(doc):
    """As the test above, each global barrier first widened to a full one (as an engine that cannot prove a hazard
    absent records), with kept barriers made buffer barriers where the optimizer's check proves it: the same
    findings, and where the original has no hazard, none for the slow reference either after."""
    for commands in doc["command_buffers"].values():
        for c in commands:
            if c["cmd"] == "barrier" and not c.get("buffers"):
                c.update(src_stage=["all_commands"], src_access=["memory_write"], dst_stage=["all_commands"],
                         dst_access=["memory_read", "memory_write"])
    stream = from_dict(doc)
    result = optimize(stream, budget_s=2, buffer_barriers=True)
    assert findings(result.stream, result.original_ref) == findings(stream)
    before = reference_hazards(stream)
    if before == set():
        assert reference_hazards(result.stream, result.original_ref) == set()
