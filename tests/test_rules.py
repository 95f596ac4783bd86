"""The spec's synchronization rules, one stream each at the edge a one-line bug in the rule code would move:
the checker, the slow reference and explain must each give the spec's answer."""

from __future__ import annotations

import ast
import re
from itertools import combinations
from pathlib import Path

import pytest

from vkverify.check import check, reference, scopes
from vkverify.check.explain import explain
from vkverify.check.reference import verdict
from vkverify.model import from_dict
from vkverify.model.images import LAYOUT_TRANSITION
from vkverify.model.names import ACCESS_SETS, STAGE_SETS

from .conftest import ROOT


def stream(commands: list[dict], size: int = 256) -> dict:
    """One command buffer on one queue over buffer B (device-local, written first by a fill)."""
    return {"format": "vkverify-stream/1", "name": "rule",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
            "buffers": [{"id": "B", "size": size}, {"id": "C", "size": size}],
            "shaders": {"r": {"bindings": ["read"]}, "w": {"bindings": ["write"]}},
            "command_buffers": {"cb0": commands},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}}


def barrier(src_stage, src_access, dst_stage, dst_access, **buffer) -> dict:
    out = {"cmd": "barrier", "src_stage": src_stage, "src_access": src_access, "dst_stage": dst_stage,
           "dst_access": dst_access}
    return {**out, "buffers": [{"buffer": "B", **buffer}]} if buffer else out


def read(buffer: str = "B") -> dict:
    return {"cmd": "dispatch", "shader": "r", "bindings": [{"buffer": buffer}]}


def write(buffer: str = "B") -> dict:
    return {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": buffer}]}


FILL = {"cmd": "fill", "dst": "B", "value": 1}


def findings_of(doc: dict) -> set[tuple]:
    """(kind, first, second, range) of the checker's access findings; the reference and explain must agree."""
    s = from_dict(doc)
    found = {(f.kind, f.first, f.second, f.range) for f in check(s) if f.first is not None}
    by_reference = {(h.kind, h.first, h.second) for h in verdict(s).hazards}
    assert {x[:3] for x in found} == by_reference
    for kind, first, second, _ in found:
        assert not explain(s, first, second).ordered
    return found


def test_an_access_scope_takes_in_no_logically_later_stage():
    """7.1.2: a destination of top_of_pipe executes before every stage, but its access scope holds only the
    stages named: top_of_pipe with shader_storage_read makes the fill visible to no shader."""
    doc = stream([FILL, barrier(["clear"], ["transfer_write"], ["top_of_pipe"], ["shader_storage_read"]), read()])
    assert findings_of(doc) == {("raw", "cb0[0]", "cb0[2]", (0, 256))}
    named = stream([FILL, barrier(["clear"], ["transfer_write"], ["compute_shader"], ["shader_storage_read"]),
                    read()])
    assert findings_of(named) == set()


def test_an_access_scope_takes_in_no_logically_earlier_stage():
    """7.1.2: a source of bottom_of_pipe with transfer_write makes nothing available."""
    doc = stream([FILL, barrier(["bottom_of_pipe"], ["transfer_write"], ["compute_shader"], ["shader_read"]), read()])
    assert findings_of(doc) == {("raw", "cb0[0]", "cb0[2]", (0, 256))}


def test_a_later_barrier_chains_only_through_a_shared_stage():
    """7.1 execution dependency chain: compute->copy then clear->compute shares no stage (copy and clear are
    not ordered with each other, 7.6.1), so the read is not ordered before the write: a WAR."""
    doc = stream([read(), barrier(["compute_shader"], [], ["copy"], []), barrier(["clear"], [], ["compute_shader"], []),
                  write()])
    assert findings_of(doc) == {("war", "cb0[0]", "cb0[3]", (0, 256))}
    shared = stream([read(), barrier(["compute_shader"], [], ["copy"], []),
                     barrier(["copy"], [], ["compute_shader"], []), write()])
    assert findings_of(shared) == set()


@pytest.mark.parametrize(("offset", "size", "merged"), [(0, 255, (255, 256)), (1, 255, (0, 1)), (3, 250, (0, 256))])
def test_a_buffer_barrier_one_byte_short_leaves_that_byte_unordered(offset, size, merged):
    """7.7.2: a buffer memory barrier's access scopes hold only its range: the bytes it misses keep the RAW
    (one finding, its ranges merged: [0, 3) and [253, 256) span [0, 256))."""
    doc = stream([FILL, barrier(["clear"], ["transfer_write"], ["compute_shader"], ["shader_read"],
                                offset=offset, size=size), read()])
    assert findings_of(doc) == {("raw", "cb0[0]", "cb0[2]", merged)}


def test_adjacent_buffer_barriers_cover_the_access_together():
    """7.7.2: two buffer barriers of one command, [0, 129) and [129, 256), cover every byte of the read."""
    doc = stream([FILL, {**barrier(["clear"], ["transfer_write"], ["compute_shader"], ["shader_read"]),
                         "buffers": [{"buffer": "B", "offset": 0, "size": 129},
                                     {"buffer": "B", "offset": 129, "size": 127}]}, read()])
    assert findings_of(doc) == set()


STAGE_NAMES = sorted(STAGE_SETS)
MASKS = [frozenset(m) for n in range(3) for m in combinations(STAGE_NAMES, n)]


@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "+".join(sorted(m)) or "empty")
def test_the_reference_reads_the_scopes_as_the_checker_does(mask):
    """The reference's own reading of 7.6.1 and 7.1.2 from the stage table and the checker's scopes.py agree
    on every mask of up to two names: a bug in either shows here, not hidden by one shared function. The checker
    names every layout transition of a first scope, and of a second, by a name of its own (scopes.py); the
    reference by LAYOUT_TRANSITION on both sides. Event operations have a name per side in both."""
    names = {scopes.EARLIER_TRANSITIONS: LAYOUT_TRANSITION, scopes.LATER_TRANSITIONS: LAYOUT_TRANSITION,
             scopes.EARLIER_EVENT_OPERATIONS: reference.OPERATION_DONE,
             scopes.LATER_EVENT_OPERATIONS: reference.OPERATION_AWAITED}

    def first(scope: frozenset[str]) -> frozenset[str]:
        return frozenset(names.get(s, s) for s in scope)

    assert reference.first_scope(mask) == first(scopes.first_execution_scope(mask))
    assert reference.second_scope(mask) == first(scopes.second_execution_scope(mask))
    for on in (False, True):
        assert reference.signal_scope(mask, on) == first(scopes.signal_first_scope(mask, on))
    for access in ACCESS_SETS:
        assert reference.access_pairs(mask, frozenset({access})) == scopes.access_scope(mask, frozenset({access}))


def test_the_reference_shares_no_rule_code_with_the_checker():
    """The oracle imports from the checker only the readings (check/readings.py), never a scope or a barrier;
    from the package only the model and the error base."""
    tree = ast.parse(Path(reference.__file__).read_text())
    imported = {"." * node.level + (node.module or "") for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in imported if not m.startswith("..model")} == {
        "__future__", "dataclasses", "graphlib", "itertools", ".readings",
        "..errors"}, imported


# A rule's body restated (as it was before check/rules.py), and the pattern that finds such a restatement: nowhere
# in the checker, hb.Model, explain or the mutation analysis may one be written out again.
RULE_BODIES = {
    "chains": (r"(\.outs|\.chain|\.released)\s*&\s*[\w.]*\.(src_exec|ins)\b",
               "elif not node.outs & n.entry.src_exec:"),
    "in_first_access_scope": (r"\bin [\w.]*\.src_access\b", "stage in e.src_stages and write in e.src_access"),
    "makes_host_writes_available": (r"\"host\" in [\w.]*\.src_stages",
                                    'return "host" in entry.src_stages and "host_write" in entry.src_access'),
    "in_release_access_scope": (r"not \w+\.host and \w+\.agent == \w+\.agent",
                                "return not e.host and e.agent == n.agent and e.stage in n.ins"),
    "transfers_ownership": (r"src_family is not None and", "return bb.src_family is not None and bb.src_family != x"),
    "in_synchronization_scope": (r"\.stage (not )?in [\w.]*\.(outs|ins|src_exec|dst_exec)\b",
                                 "if node is None or x.stage not in node.outs:"),
    "second_access_scope_gap": (r"\(\w+\.stage, \w+\) (not )?in [\w.]*dst_scope",
                                "all((x.stage, a) in n.entry.dst_scope for a in pair.need)"),
}
CHECK = ROOT / "vkverify" / "check"
RULE_CALLERS = [p for p in sorted(CHECK.glob("*.py")) if p.name not in ("rules.py", "reference.py")] + \
    sorted((ROOT / "vkverify" / "mutations").glob("*.py"))


@pytest.mark.parametrize("rule", sorted(RULE_BODIES))
def test_each_rule_body_lives_in_rules_alone(rule):
    pattern, restated = RULE_BODIES[rule]
    body = re.compile(pattern)
    assert body.search(restated), "the pattern finds a restatement"
    assert [p.name for p in RULE_CALLERS if body.search(p.read_text())] == []


# The walk's rule of when a timeline wait is satisfied (spec 7.4.2: a signal of at least its value), restated as it
# was in runtime/create.py: the runtime asks the walk (check/walk.py) instead.
WALK_BODY = r"\.value\s*>=?\s*\w+\.value\b|\.value\s*>\s*reached\b"


def test_the_runtime_asks_the_walk_when_a_wait_is_satisfied():
    body = re.compile(WALK_BODY)
    assert body.search("op.value >= w.value") and body.search("w.value > reached[w.semaphore]")
    assert [p.name for p in sorted((ROOT / "vkverify" / "runtime").rglob("*.py")) if body.search(p.read_text())] == []


@pytest.mark.parametrize("caller", ["barriers.py", "engine.py", "hb.py", "explain.py"])
def test_the_deciders_call_the_rules(caller):
    """The fast checker (barriers, engine), hb.Model and explain import their predicates from check/rules.py."""
    assert re.search(r"^from \.rules import ", (CHECK / caller).read_text(), re.MULTILINE)


def two_queues(cb0: list[dict], cb1: list[dict], signal_stage: str, **buffer) -> dict:
    """cb0 on q0 signals S at `signal_stage`; cb1 on q1 waits for it at compute_shader."""
    doc = stream(cb0)
    doc["devices"][0]["queues"].append({"id": "q1", "family": 0})
    doc["buffers"][0].update(buffer)
    doc["semaphores"] = [{"id": "S", "type": "binary"}]
    doc["command_buffers"]["cb1"] = cb1
    doc["threads"]["main"] = [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "signal": [{"semaphore": "S",
                                                                                "stage": [signal_stage]}]},
        {"op": "submit", "queue": "q1", "command_buffers": ["cb1"], "wait": [{"semaphore": "S",
                                                                              "stage": ["compute_shader"]}]}]
    return doc


def test_a_signal_makes_available_only_the_accesses_of_its_own_stages():
    """7.4.1: a signal's first access scope is the device accesses in its first synchronization scope; a fill
    at clear that reaches a compute_shader signal only through an execution barrier (no access) is not made
    available by it (7.1: a chain's first access scope is its first dependency's)."""
    chained = two_queues([FILL, barrier(["clear"], [], ["compute_shader"], [])], [read()], "compute_shader")
    assert findings_of(chained) == {("raw", "cb0[0]", "cb1[0]", (0, 256))}
    assert findings_of(two_queues([FILL], [read()], "all_commands")) == set()


@pytest.mark.parametrize(("src_stage", "src_access", "found"), [
    (["host"], ["host_write"], set()),
    (["host"], [], {("raw", "main[1]", "cb0[1]", (0, 256))}),
    (["compute_shader"], ["host_write"], {("raw", "main[1]", "cb0[1]", (0, 256))})])
def test_a_host_write_after_the_submit_needs_host_and_host_write_in_the_first_access_scope(src_stage, src_access,
                                                                                          found):
    """7.1.3: a host write released by a host signal after the submit is made available to the device by a
    barrier with host in src_stage and host_write in src_access (a domain operation from the host), not by
    either alone."""
    doc = stream([barrier(src_stage, src_access, ["compute_shader"], ["shader_read"]), read()])
    doc["buffers"][0]["memory"] = "host_coherent"
    doc["semaphores"] = [{"id": "H", "type": "timeline"}]
    doc["threads"]["main"] = [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "wait": [{"semaphore": "H", "value": 1,
                                                                              "stage": ["all_commands"]}]},
        {"op": "host_write", "buffer": "B"}, {"op": "signal_semaphore", "semaphore": "H", "value": 1}]
    assert findings_of(doc) == found


def test_a_barrier_within_one_queue_family_transfers_no_ownership():
    """7.7.4: a buffer barrier whose src_family equals its dst_family is an ordinary buffer barrier."""
    doc = stream([write(), {**barrier(["compute_shader"], ["shader_storage_write"], ["compute_shader"],
                                      ["shader_storage_read"]),
                            "buffers": [{"buffer": "B", "src_family": 0, "dst_family": 0}]}, read()])
    doc["buffers"][0]["sharing"] = "exclusive"
    assert findings_of(doc) == set()


def test_a_buffer_barrier_covers_only_its_own_memory():
    """7.7.2: a buffer barrier on C orders nothing of B's bytes, though the ranges are the same numbers."""
    doc = stream([FILL, {**barrier(["clear"], ["transfer_write"], ["compute_shader"], ["shader_read"]),
                         "buffers": [{"buffer": "C"}]}, read()])
    assert findings_of(doc) == {("raw", "cb0[0]", "cb0[2]", (0, 256))}


def test_a_buffer_barrier_through_an_alias_covers_no_access_through_the_aliased_buffer():
    """7.7.2 "access to memory through the specified buffer range" (reading buffer_barrier_covers_aliases off):
    a barrier on Al (B's bytes) does not make the fill of B available, even to a read through Al."""
    doc = stream([FILL, {**barrier(["clear"], ["transfer_write"], ["compute_shader"], ["shader_read"]),
                         "buffers": [{"buffer": "Al"}]}, read("Al")])
    doc["buffers"].append({"id": "Al", "alias_of": "B", "offset": 0, "size": 256})
    assert findings_of(doc) == {("raw", "cb0[0]", "cb0[2]", (0, 256))}


def test_draw_indirect_is_logically_earlier_than_compute_shader():
    """7.6.1 pipeline stage order for compute: draw_indirect, then compute_shader. A barrier from compute_shader
    holds the indirect read in its first scope (a logically earlier stage) and orders it before the second fill:
    no WAR (the WAW of the two fills is another matter: nothing made the first visible to clear)."""
    indirect = {"cmd": "dispatch_indirect", "shader": "r", "bindings": [{"buffer": "C"}],
                "indirect": {"buffer": "B", "offset": 16}}
    doc = stream([FILL, barrier(["clear"], ["transfer_write"], ["draw_indirect"], ["indirect_command_read"]),
                  indirect, barrier(["compute_shader"], [], ["clear"], []), FILL])
    doc["buffers"][1]["memory"] = "host_coherent"  # C: initialized
    assert findings_of(doc) == {("waw", "cb0[0]", "cb0[4]", (0, 256))}


def test_one_command_is_no_hazard_to_itself():
    """7.1: a hazard is between two commands; a dispatch writing B through two bindings (B and its alias) is
    neither a WAW nor a WAR with itself."""
    doc = stream([{"cmd": "dispatch", "shader": "ww", "bindings": [{"buffer": "B"}, {"buffer": "Al"}]}])
    doc["shaders"]["ww"] = {"bindings": ["write", "write"]}
    doc["buffers"].append({"id": "Al", "alias_of": "B", "offset": 0, "size": 256})
    assert findings_of(doc) == set()


def test_a_wait_is_satisfied_by_a_signal_of_its_value_after_a_decreasing_signal():
    """7.4.2: a timeline wait for v is satisfied by a signal of a value >= v, v itself included, also once a
    signal that did not increase the value (timeline_not_increasing) has unsorted the timeline's history."""
    doc = stream([FILL])
    doc["devices"][0]["queues"].append({"id": "q1", "family": 0})
    doc["semaphores"] = [{"id": "T", "type": "timeline"}]
    doc["command_buffers"]["cb1"] = [read("C")]
    doc["buffers"][1]["memory"] = "host_coherent"
    doc["threads"]["main"] = [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "signal": [{"semaphore": "T", "value": 2}]},
        {"op": "submit", "queue": "q0", "signal": [{"semaphore": "T", "value": 1}]},
        {"op": "submit", "queue": "q1", "command_buffers": ["cb1"], "wait": [{"semaphore": "T", "value": 2}]}]
    assert [f.kind for f in check(from_dict(doc))] == ["timeline_not_increasing"]


def test_a_same_family_barrier_releases_nothing_another_family_could_be_thought_to_acquire():
    """7.7.4: B written by family 1 needs a release on family 1 before family 0 acquires it; a buffer barrier of
    family 0 to itself first releases nothing, so the acquire still misses family 1's release."""
    doc = stream([write()])
    doc["devices"][0]["queues"] = [{"id": "q0", "family": 1}, {"id": "q1", "family": 0}]
    doc["buffers"][0]["sharing"] = "exclusive"
    doc["semaphores"] = [{"id": "S", "type": "binary"}]

    def family(src: int, dst: int) -> dict:
        return {**barrier(["compute_shader"], [], ["compute_shader"], ["shader_storage_read"]),
                "buffers": [{"buffer": "B", "src_family": src, "dst_family": dst}]}
    doc["command_buffers"]["cb1"] = [family(0, 0), family(1, 0), read()]
    doc["threads"]["main"] = [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "signal": [{"semaphore": "S"}]},
        {"op": "submit", "queue": "q1", "command_buffers": ["cb1"], "wait": [{"semaphore": "S",
                                                                              "stage": ["compute_shader"]}]}]
    assert [(f.kind, f.first, f.second) for f in check(from_dict(doc))] == [("ownership_missing", "cb0[0]",
                                                                             "cb1[2]")]


@pytest.mark.parametrize(("invalidate_at", "found"), [(1, {("raw", "cb0[0]", "main[3]")}), (2, set())])
def test_a_host_read_of_cached_memory_needs_an_invalidate_after_the_wait(invalidate_at, found):
    """11.2.2 vkInvalidateMappedMemoryRanges: a device write made available to the host reaches a host read of
    host_cached memory only through an invalidate after the host waited for it, not one just before."""
    doc = stream([FILL, barrier(["clear"], ["transfer_write"], ["host"], ["host_read"])])
    doc["buffers"][0]["memory"] = "host_cached"
    doc["fences"] = [{"id": "F", "signaled": False}]
    ops = [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
           {"op": "wait_fences", "fences": ["F"]}, {"op": "host_read", "buffer": "B"}]
    ops.insert(invalidate_at, {"op": "invalidate", "buffer": "B"})
    doc["threads"]["main"] = ops
    assert {(k, a, b) for k, a, b, _ in findings_of(doc)} == found


COPY_READ = {"cmd": "copy", "src": "B", "dst": "C", "regions": [{"src_offset": 0, "dst_offset": 0, "size": 256}]}


def test_a_later_read_at_another_stage_keeps_the_earlier_read():
    """The access state keeps the latest read per stage (syncval's): a compute read after a copy read of B
    leaves the copy read, which the barrier from compute_shader alone does not order before the fill (copy is
    not logically earlier than compute_shader, 7.6.1): a WAR."""
    doc = stream([FILL, barrier(["clear"], ["transfer_write"], ["copy", "compute_shader"],
                                ["transfer_read", "shader_read"]),
                  COPY_READ, read(), barrier(["compute_shader"], [], ["clear"], []), FILL])
    assert findings_of(doc) == {("war", "cb0[2]", "cb0[5]", (0, 256)), ("waw", "cb0[0]", "cb0[5]", (0, 256))}


def test_a_write_ends_the_reads_before_it():
    """docs/format.md, Findings: an access is compared with the most recent write and the reads since it. A read
    on q1 racing two fills on q0 is one WAR, with the first fill: the second, ordered after the first, is
    compared with that fill alone."""
    doc = stream([FILL, barrier(["clear"], ["transfer_write"], ["clear"], ["transfer_write"]), FILL])
    doc["devices"][0]["queues"].append({"id": "q1", "family": 0})
    doc["command_buffers"]["cb1"] = [read()]
    doc["threads"]["main"] = [{"op": "submit", "queue": "q1", "command_buffers": ["cb1"]},
                              {"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]
    assert [(f.kind, f.first, f.second) for f in check(from_dict(doc))] == [
        ("uninitialized_read", None, "cb1[0]"), ("war", "cb1[0]", "cb0[0]")]


def test_a_concurrent_buffer_needs_no_ownership_transfer():
    """7.7.4: ownership matters only for VK_SHARING_MODE_EXCLUSIVE; bytes of a concurrent buffer that a
    (needless) release and acquire handed to family 0 are still read by family 1 without one."""
    doc = stream([write(), {**barrier(["compute_shader"], ["shader_storage_write"], ["none"], []),
                            "buffers": [{"buffer": "B", "src_family": 1, "dst_family": 0}]}])
    doc["devices"][0]["queues"] = [{"id": "q0", "family": 1}, {"id": "q1", "family": 0}]
    doc["buffers"][0]["sharing"] = "concurrent"
    doc["semaphores"] = [{"id": "S", "type": "binary"}, {"id": "S2", "type": "binary"}]
    doc["command_buffers"]["cb1"] = [{**barrier(["compute_shader"], [], ["compute_shader"], ["shader_storage_read"]),
                                      "buffers": [{"buffer": "B", "src_family": 1, "dst_family": 0}]}, read()]
    doc["command_buffers"]["cb2"] = [read()]
    wait = {"stage": ["compute_shader"]}
    doc["threads"]["main"] = [
        {"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "signal": [{"semaphore": "S"}]},
        {"op": "submit", "queue": "q1", "command_buffers": ["cb1"], "wait": [{"semaphore": "S", **wait}],
         "signal": [{"semaphore": "S2"}]},
        {"op": "submit", "queue": "q0", "command_buffers": ["cb2"], "wait": [{"semaphore": "S2", **wait}]}]
    assert findings_of(doc) == set() and check(from_dict(doc)) == []


@pytest.mark.parametrize("threads, found", [
    ({"main": ["host_write", "host_read"]}, set()),
    ({"writer": ["host_write"], "reader": ["host_read"]}, {("raw", "writer[0]", "reader[1]", (0, 64))}),
])
def test_a_host_thread_sees_its_own_write_to_host_cached_memory_without_a_flush(threads, found):
    """Memory model "Location-Ordered": one agent sees its own write; another host thread needs the writer's flush
    (rules.host_write_needs_flush; here the reader waits on the writer's signal, so only the flush is missing)."""
    ops = {name: [{"op": op, "buffer": "H"} for op in kinds] for name, kinds in threads.items()}
    if "writer" in ops:
        ops["writer"].append({"op": "signal_semaphore", "semaphore": "T", "value": 1})
        ops["reader"].insert(0, {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 1}]})
    doc = {"format": "vkverify-stream/1", "name": "host", "buffers": [{"id": "H", "size": 64, "memory": "host_cached"}],
           "semaphores": [{"id": "T", "type": "timeline"}], "threads": ops}
    assert findings_of(doc) == found
