"""Mutation operators, the load-bearing analysis and the equivalence filter (vkverify.mutations)."""

from __future__ import annotations

import pytest

from vkverify.check import check
from vkverify.model import from_dict, ir, load
from vkverify.mutations import analyze, mutants
from vkverify.mutations import operators as o

from .conftest import ROOT

CORPUS = ROOT / "tests" / "corpus"


def corpus(name: str) -> ir.Stream:
    return load(next(CORPUS.glob(f"{name}-*.json")))


def two_barriers(*barriers: dict) -> ir.Stream:
    """write B (compute), the given barriers, read B (compute)."""
    return from_dict({
        "format": "vkverify-stream/1", "name": "barriers",
        "buffers": [{"id": "B", "size": 256}, {"id": "O", "size": 256}],
        "shaders": {"w": {"bindings": ["write"]}, "rw": {"bindings": ["read", "write"]}},
        "command_buffers": {"cb0": [
            {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": "B", "access": "write"}]},
            *barriers,
            {"cmd": "dispatch", "shader": "rw", "bindings": [{"buffer": "B", "access": "read"},
                                                             {"buffer": "O", "access": "write"}]}]},
        "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
                             {"op": "device_wait_idle"}]}})


MEMORY_BARRIER = {"cmd": "barrier", "src_stage": ["compute_shader"], "src_access": ["shader_storage_write"],
                  "dst_stage": ["compute_shader"], "dst_access": ["shader_storage_read"]}


# ---- load-bearing vs redundant ------------------------------------------------------


def test_one_barrier_alone_is_load_bearing():
    a = analyze(two_barriers(MEMORY_BARRIER))
    assert [p.kind for p in a.load_bearing["cb0[1]"]] == ["raw"]
    assert not [r for r in a.redundant if r.op == "cb0[1]"]


def test_two_barriers_either_of_which_orders_the_pair_are_both_redundant():
    a = analyze(two_barriers(MEMORY_BARRIER, MEMORY_BARRIER))
    assert "cb0[1]" not in a.load_bearing and "cb0[2]" not in a.load_bearing
    other = {r.op: r.other_path for r in a.redundant}
    assert other["cb0[1]"] == ("cb0[2]",) and other["cb0[2]"] == ("cb0[1]",)
    found, _ = mutants(two_barriers(MEMORY_BARRIER, MEMORY_BARRIER), "s.json")
    assert not [m for m in found if "barrier" in m.operator]


def test_a_chain_makes_both_halves_load_bearing():
    a = analyze(corpus("13"))  # B1 availability, B2 visibility
    assert {"cb0[1]", "cb0[2]"} <= a.load_bearing.keys()


def test_indirect_and_binding_reads_of_one_buffer_are_two_pairs():
    """Corpus 131-133: a dispatch_indirect reads P at draw_indirect and at compute_shader; each (stage, access) is
    its own pair, so a barrier that makes the write visible to one of them leaves the other unordered."""
    assert analyze(corpus("131")).unordered[0].second.stage == "draw_indirect"
    assert analyze(corpus("132")).unordered[0].second.stage == "compute_shader"
    both = analyze(corpus("133"))
    assert not both.unordered
    assert sorted(p.second.stage for p in both.load_bearing["cb0[1]"]) == ["compute_shader", "draw_indirect"]


def test_the_fence_wait_before_a_destroy_is_load_bearing_for_keepalive():
    a = analyze(corpus("30"))
    assert [p.kind for p in a.load_bearing["main[2]"]] == ["keepalive"]


def test_landing_barrier_made_redundant_by_the_fence_wait_before_the_next_submit():
    a = analyze(load(ROOT / "examples" / "staged-upload.json"))
    assert {"up1[1]", "up2[1]", "main[4]"} <= a.load_bearing.keys()
    [r] = [r for r in a.redundant if r.op == "up0[1]"]
    assert r.pair is not None


# ---- operators ----------------------------------------------------------------------


@pytest.mark.parametrize("name, operator, op", [
    ("13", "drop_barrier", "cb0[1]"),
    ("13", "weaken_barrier", "cb0[2]"),
    ("13", "narrow_barrier_src_stage", "cb0[1]"),
    ("13", "narrow_barrier_dst_stage", "cb0[2]"),
    ("16", "drop_barrier", "cb0[1]"),
    ("41", "drop_barrier", "cb0[1]"),  # WAR: an execution barrier
    ("39", "weaken_barrier", "cb0[1]"),  # WAW
    ("44", "drop_wait", "main[1].batches[0].wait[0]"),
    ("44", "lower_wait_value", "main[1].batches[0].wait[0]"),
    ("44", "narrow_wait_stage", "main[1].batches[0].wait[0]"),
    ("44", "drop_signal", "main[0].batches[0].signal[0]"),
    ("43", "drop_signal", "main[0].batches[0].signal[0]"),
    ("117", "drop_signal", "main[2]"),  # a host signal_semaphore
    ("19", "drop_host_wait", "main[2]"),
    ("19", "reset_fence_before_wait", "main[2]"),
    ("19", "move_before_wait", "main[3]"),  # a host write that reuses the staging buffer
    ("30", "move_before_wait", "main[3]"),  # a destroy
    ("22", "drop_host_wait", "main[2]"),  # wait_semaphores
    ("26", "drop_flush", "main[1]"),
    ("28", "drop_invalidate", "main[2]"),
    ("24", "drop_barrier", "cb0[1]"),  # the host barrier before a host read
])
def test_operator_yields_a_mutant_the_checker_kills(name, operator, op):
    stream = corpus(name)
    found, _ = mutants(stream, name)
    [m] = [m for m in found if m.operator == operator and m.op == op]
    assert m.predicted and m.description
    assert not check(stream) and check(m.stream), m.id


def test_targets_follow_the_pair_class():
    by_op = {(m.operator, m.op): m.targets for m in mutants(corpus("41"), "41")[0]}
    assert by_op[("drop_barrier", "cb0[1]")] == ("war",)
    assert "host" in {t for m in mutants(corpus("24"), "24")[0] for t in m.targets}


def test_drop_entry_of_a_barrier_with_several():
    stream = two_barriers({"cmd": "barrier", "src_stage": ["compute_shader"], "src_access": ["shader_storage_write"],
                           "dst_stage": ["compute_shader"], "dst_access": ["shader_storage_read"],
                           "buffers": [{"buffer": "B"}, {"buffer": "O"}]})
    found, _ = mutants(stream, "s")
    [m] = [m for m in found if m.operator == "drop_barrier_entry"]
    assert m.op == "cb0[1].buffers[0]"
    assert [bb.buffer for bb in m.stream.command_buffers[0].commands[1].buffers] == ["O"]


def test_equivalent_candidates_are_not_mutants():
    # An execution-only barrier that orders a WAR: removing its (absent) masks is no mutant.
    found, _ = mutants(corpus("07"), "07")
    assert not [m for m in found if m.operator == "weaken_barrier"]


def test_edits_are_pure_and_map_references_back():
    s = corpus("19")
    dropped, refmap = o.drop_host_op(s, "main", 2)
    assert len(s.threads[0].ops) == 7 and len(dropped.threads[0].ops) == 6
    assert o.translate("main[2]", refmap) == "main[3]" and o.translate("cb0[0]@main[4]", refmap) == "cb0[0]@main[5]"
    moved, refmap = o.move_host_op(s, "main", 3, 2)
    assert moved.threads[0].ops[2] == s.threads[0].ops[3] and o.translate("main[2]", refmap) == "main[3]"
    _inserted, refmap = o.insert_host_op(s, "main", 2, ir.ResetFences(("F",)))
    assert o.translate("main[2]", refmap) == "main[new]" and o.translate("main[3]", refmap) == "main[2]"
    assert dropped.expect is None


def test_params_stream_is_mutated_at_its_smallest_instance():
    found, _ = mutants(corpus("80"), "80")
    assert found and all(not m.stream.params for m in found)
    assert all(check(m.stream) for m in found)


def test_each_stage_of_a_command_is_its_own_pair():
    """Corpus 137: the dispatch_indirect reads A at draw_indirect and at compute_shader; the barrier orders only
    the first, so the analysis has the second as unordered, and the barrier load-bearing for the first alone."""
    a = analyze(corpus("137"))
    assert [(p.kind, p.first.stage) for p in a.unordered] == [("war", "compute_shader")]
    assert [(p.kind, p.first.stage) for p in a.load_bearing["cb0[1]"]] == [("war", "draw_indirect")]
