"""`vkverify explain`: the chain that orders two operations, or the scope that is missing."""

from __future__ import annotations

import pytest

from vkverify.check import check
from vkverify.check.explain import ExplainError, explain, format_text
from vkverify.cli import main
from vkverify.model import from_dict, load

from .conftest import CORPUS, ROOT


def corpus(prefix: str) -> str:
    return str(next(p for p in CORPUS if p.name.startswith(prefix + "-")))


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(["explain", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_barrier_orders_copy_then_dispatch(capsys):
    code, out, _ = run(capsys, corpus("02"), "cb0[0]", "cb0[2]")
    assert code == 0
    assert "ordered" in out.splitlines()[0] and "NOT" not in out
    assert 'barrier cb0[1] "copy -> compute"' in out
    assert "src_stage copy, src_access transfer_write; dst_stage compute_shader, dst_access shader_storage_read" in out
    assert "first scope: copy is in src_stage" in out and "second scope: compute_shader is in dst_stage" in out
    assert "made available" in out and "visible to compute_shader/shader_storage_read" in out


@pytest.mark.parametrize("prefix, unordered", [("131", "draw_indirect/indirect_command_read"),
                                                ("132", "compute_shader/shader_storage_read")])
def test_indirect_and_binding_reads_are_explained_apart(prefix, unordered):
    """A dispatch_indirect reading P as arguments and as a binding: one pair per (stage, access), each with its
    own answer (corpus 131-133)."""
    ex = explain(load(corpus(prefix)), "cb0[0]", "cb0[2]")
    assert {(p.second, p.ordered) for p in ex.pairs} == {
        ("draw_indirect/indirect_command_read", unordered.startswith("compute")),
        ("compute_shader/shader_storage_read", unordered.startswith("draw"))}


def test_no_barrier(capsys):
    code, out, _ = run(capsys, corpus("01"), "cb0[0]", "cb0[1]")
    assert code == 1
    assert "no barrier between cb0[0] and cb0[1] on q0" in out


def test_barrier_with_wrong_source_stage(capsys):
    code, out, _ = run(capsys, corpus("03"), "cb0[0]", "cb0[2]")
    assert code == 1
    assert "the barrier cb0[1] has src_stage copy, the write cb0[0] is at compute_shader" in out


def test_semaphore_wait_stage_misses_the_consumer(capsys):
    code, out, _ = run(capsys, corpus("45"), "cb0[0]", "cb1[0]")
    assert code == 1
    assert "the wait on S by main[1] on q1 has stage copy, the read cb1[0] is at compute_shader" in out


@pytest.mark.parametrize("prefix, semaphore", [("43", "S"), ("44", "T value 1")])
def test_semaphore_pair_across_queues(capsys, prefix, semaphore):
    code, out, _ = run(capsys, corpus(prefix), "cb0[0]", "cb1[0]")
    assert code == 0
    assert f"1. signal of {semaphore} by main[0] on q0" in out
    assert f"2. wait on {semaphore} by main[1] on q1: paired with the signal of {semaphore}" in out
    assert "second scope: compute_shader is in its stage mask compute_shader" in out


def test_two_queues_without_semaphore(capsys):
    code, out, _ = run(capsys, corpus("42"), "cb0[0]", "cb1[0]")
    assert code == 1
    assert "no semaphore signal on q0 after cb0[0]" in out


def test_host_wait_orders_the_staging_reuse(capsys):
    code, out, _ = run(capsys, corpus("19"), "cb0[0]", "main[3]")
    assert code == 0
    assert "war Staging [0, 4096)" in out
    assert "fence F signalled by main[1] on q0" in out and "host wait_fences F main[2]: the host waits for it" in out


def test_fence_waited_too_late(capsys):
    code, out, _ = run(capsys, corpus("20"), "cb0[0]", "main[2]")
    assert code == 1
    assert "only after main[2]" in out


def test_host_read_without_host_barrier(capsys):
    code, out, _ = run(capsys, corpus("23"), "cb0[0]", "main[2]")
    assert code == 1
    assert "no domain operation to the host: the host waits (host wait_fences F main[1]) but no barrier with " \
        "dst_stage host and dst_access host_read after cb0[0]" in out


def test_buffer_barrier_over_half_the_read(capsys):
    code, out, _ = run(capsys, corpus("09"), "cb0[0]", "cb0[2]")
    assert code == 1
    assert "[0, 2048): compute_shader/shader_storage_write -> compute_shader/shader_storage_read: ordered" in out
    assert "covers B [0, 2048) only, not bytes [2048, 4096)" in out


def test_broken_chain_names_both_barriers(capsys):
    code, out, _ = run(capsys, corpus("14"), "cb0[0]", "cb0[3]")
    assert code == 1
    assert "the barrier cb0[1] has dst_stage copy, the read cb0[3] is at compute_shader" in out
    assert "the barrier cb0[2] has src_stage clear, the write cb0[0] is at compute_shader" in out


def test_chain_of_two_barriers(capsys):
    code, out, _ = run(capsys, corpus("13"), "cb0[0]", "cb0[3]")
    assert code == 0
    assert "1. barrier cb0[1]" in out and "2. barrier cb0[2]" in out and "chains after barrier cb0[1]" in out


def test_references_by_id_and_submission():
    stream = load(corpus("02"))
    assert explain(stream, "cb0[0]", "cb0[2]@main[1]").ordered
    with pytest.raises(ExplainError, match="does not submit"):
        explain(stream, "cb0[0]", "cb0[2]@main[0]")


@pytest.mark.parametrize("ref, message", [("cb9[0]", "cb9[0]: unknown reference"),
                                          ("cb0[7]", "cb0[7]: unknown reference"),
                                          ("nonsense", "nonsense: unknown reference"),
                                          ("cb0[1]", "cb0[1]: accesses no memory")])
def test_bad_references_exit_2_with_one_line(capsys, ref, message):
    code, out, err = run(capsys, corpus("02"), "cb0[0]", ref)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_no_common_bytes_is_nothing_to_order(capsys):
    code, out, _ = run(capsys, corpus("11"), "cb0[0]", "cb0[1]")
    assert code == 0
    assert "no conflicting accesses" in out


@pytest.mark.parametrize("path", CORPUS + sorted((ROOT / "examples").glob("*.json")), ids=lambda p: p.name)
def test_agrees_with_the_checker_on_every_finding(path):
    """Every raw/war/waw the checker reports is a pair explain says is not ordered."""
    stream = load(path)
    for f in check(stream):
        if f.kind in ("raw", "war", "waw") and f.first and f.second and not f.params:
            assert not explain(stream, f.first, f.second).ordered, f


def test_a_semaphore_signal_does_not_flush_a_host_write(capsys):
    code, out, _ = run(capsys, corpus("134"), "main[0]", "cb1[0]")
    assert code == 1
    assert "A is host_cached: no flush of the bytes main[0] wrote" in out


@pytest.mark.parametrize("prefix, first, second, why", [
    ("08", "cb0[0]", "cb0[2]",
     "the barrier cb0[1] chains with cb0[0] but its src_access none lacks shader_storage_write"),
    ("113", "cb0[0]", "cb0[3]", ("the barrier cb0[2] makes the write visible to compute_shader/shader_storage_read "
                                 "but does not chain after the barrier cb0[1], which made it available: cb0[1]'s "
                                 "dst_stage compute_shader misses its src_stage copy")),
    ("136", "cb0[0]", "cb1[0]", ("the barrier cb0[1] chains with cb0[0] but its src_access none lacks transfer_write",
                                 ("the signal of S by main[0] on q0 has stage draw_indirect, which excludes clear: "
                                  "cb0[0] reaches it only through a chain whose first barrier made nothing "
                                  "available"))),
    ("105", "cb0[0]", "main[2]", ("no domain operation to the host: the host waits (host wait_fences F main[1]) but "
                                  "no barrier with dst_stage host and dst_access host_read or host_write after "
                                  "cb0[0]")),
    ("134", "main[0]", "cb1[0]",
     "A is host_cached: no flush of the bytes main[0] wrote before submission main[2] on q1"),
    ("140", "cb0[0]", "cb0[2]", ("the buffer barrier cb0[1] is on Al: it covers only access through Al, not "
                                 "cb0[0]'s through A")),
])
def test_why_not_names_the_missing_link(capsys, prefix, first, second, why):
    """Ordered by execution alone: the reason is where the write is not made available or visible, by the
    rules the verdict applies, and only that."""
    whys = (why,) if isinstance(why, str) else why
    code, out, _ = run(capsys, corpus(prefix), first, second)
    reasons = [line.split("why not: ", 1)[1] for line in out.splitlines() if "why not: " in line]
    assert code == 1 and len(reasons) == len(whys) and all(map(str.startswith, reasons, whys)), out


@pytest.mark.parametrize("flush, invalidate, why", [
    (False, False, "no flush by up of the bytes up[0] wrote"), (True, False, "no invalidate of the bytes by use"),
    (True, True, None)])
def test_another_threads_write_to_host_cached_memory_needs_flush_and_invalidate(flush, invalidate, why):
    """rules.host_write_needs_flush (reading host_threads_coherent, default off): explain agrees with the checker
    on a host write of one thread and a host read of another ordered by a host semaphore signal, and says which
    of the two it lacks; under the reading, the signal alone orders them."""
    from dataclasses import replace

    from vkverify.check.readings import DEFAULT
    from vkverify.model import from_dict

    up = [{"op": "host_write", "buffer": "B", "size": 12}, *([{"op": "flush", "buffer": "B"}] * flush),
          {"op": "signal_semaphore", "semaphore": "T", "value": 1}]
    use = [{"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 1}]},
           *([{"op": "invalidate", "buffer": "B"}] * invalidate), {"op": "host_read", "buffer": "B", "size": 4}]
    stream = from_dict({"format": "vkverify-stream/1", "name": "threads", "devices": [{"id": "gpu0"}],
                        "buffers": [{"id": "B", "size": 64, "memory": "host_cached"}],
                        "semaphores": [{"id": "T", "type": "timeline"}], "threads": {"up": up, "use": use}})
    read = f"use[{len(use) - 1}]"
    (pair,) = explain(stream, "up[0]", read).pairs
    assert [(f.kind, f.first, f.second) for f in check(stream)] == ([] if why is None else [("raw", "up[0]", read)])
    assert bool(pair.chains) == (why is None) and (why is None or why in pair.reasons[0]), pair
    assert check(stream, replace(DEFAULT, host_threads_coherent=True)) == []


@pytest.mark.parametrize("prefix, pair, fixed_pair", [("200", ("cb1[1]", "cb0[0]"), ("cb0[0]", "cb1[1]")),
                                                     ("202", ("up[0]", "cb1[0]"), ("up[0]", "cb1[0]"))])
def test_a_pair_unordered_in_another_submission_order_is_explained_there(prefix, pair, fixed_pair):
    """Two threads submit to one queue: the pair the walk's submission order orders (or runs the other way round)
    is explained in the other, which it names (docs/format.md, "Several host threads"); in the fixed twin the
    submits come in one order, which orders it."""
    ex = explain(load(corpus(prefix)), *pair)
    assert not ex.ordered
    assert all(p.order.startswith("q0: use[0], ") for p in ex.pairs if not p.ordered)
    assert "\n    in the submission order q0: use[0], " in format_text(ex, load(corpus(prefix)))
    fixed = explain(load(corpus(str(int(prefix) + 1))), *fixed_pair)
    assert fixed.ordered and not any(p.order for p in fixed.pairs)


@pytest.mark.parametrize("prefix, ordered", [("232", False), ("233", True)])
def test_two_operations_on_one_event(capsys, prefix, ordered):
    """A set, its wait and a reset (corpus 232-233): the wait orders the set's event operation before its second
    scope, which the reset's stage mask meets (233) or not (232), as the checker's event_race says."""
    code, out, _ = run(capsys, corpus(prefix), "cb0[1]", "cb0[4]")
    assert code == (0 if ordered else 1)
    assert "event E: event_operation/set_event -> event_operation/reset_event" in out
    assert ("it holds cb0[1]'s event operation (a wait for its set, 7.5)" in out) == ordered
    assert ("no execution dependency orders cb0[1]'s set_event before cb0[4]'s reset_event" in out) == (not ordered)
    assert bool(check(load(corpus(prefix)))) == (not ordered)


def test_an_operation_on_another_event_is_refused():
    stream = from_dict({"format": "vkverify-stream/1", "events": [{"id": "E"}, {"id": "F"}],
                        "command_buffers": {"cb0": [{"cmd": "set_event", "event": "E", "stage": ["copy"]},
                                                    {"cmd": "reset_event", "event": "F", "stage": ["copy"]}]},
                        "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}})
    with pytest.raises(ExplainError, match="name two operations on one event"):
        explain(stream, "cb0[0]", "cb0[1]")
