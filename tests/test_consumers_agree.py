"""`explain` and the mutation analysis against the slow reference and the fast checker (issue 14).

Every consumer of happens-before must give the same answer on every pair: tests/differential.py
(`consumer_disagreements`) states what each must agree on. A disagreement is a bug in one of them:
decide which from the spec text, fix it and keep the stream in tests/corpus.
VKVERIFY_CONSUMER_EXAMPLES sets how many streams are drawn.
"""

from __future__ import annotations

import os

from hypothesis import given, settings

from vkverify.check import check
from vkverify.check.explain import explain
from vkverify.check.hb import Model
from vkverify.model import from_dict

from .differential import (SETTINGS, assert_agree, consumer_disagreements, event_streams, explain_disagreements,
                           image_feature_streams, image_streams, marker_streams, pattern_streams, resubmitting_streams,
                           shared_timeline_streams, streams, syncval_image_streams, thread_streams)
from .test_semaphores import timeline_streams

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_CONSUMER_EXAMPLES", "1000"))


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams())
def test_explain_and_mutations_agree_with_the_reference_and_the_checker(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(pattern_streams())
def test_explain_and_mutations_agree_on_the_patterns_of_issue_25(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(timeline_streams())
def test_explain_agrees_with_the_checker_on_several_host_threads(doc):
    """Streams of two host threads signalling shared timelines (the reference reads one thread only): explain's
    verdict on every pair the checker compares is the checker's."""
    assert_agree(doc, explain_disagreements)


@settings(max_examples=EXAMPLES_RUN // 16, **SETTINGS)
@given(resubmitting_streams())
def test_explain_and_mutations_agree_on_resubmitted_command_buffers(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN // 16, **SETTINGS)
@given(event_streams())
def test_explain_and_mutations_agree_on_events(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN // 8, **SETTINGS)
@given(marker_streams())
def test_explain_and_mutations_agree_on_buffer_markers_and_query_results(doc):
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN // 8, **SETTINGS)
@given(image_streams() | image_feature_streams())
def test_explain_and_mutations_agree_on_images(doc):
    """Image commands and barriers (layout transitions), blits, sampled bindings, compressed, multi-planar and 3D
    images (benchmarks/differential.py --mode consumers --images, --image-features run many more)."""
    assert_agree(doc, consumer_disagreements)


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(thread_streams())
def test_explain_agrees_with_the_checker_on_a_producer_and_a_consumer_thread(doc):
    """Two host threads, host waits and counter reads among them: explain's verdict on every pair the checker
    compares is the checker's (benchmarks/differential.py --mode explain --threads runs many more)."""
    assert_agree(doc, explain_disagreements)


# Drawn by thread_streams (benchmarks/differential.py --mode explain --threads --examples 3000, seed 0: 1 of 2644)
# and cut down: thread up submits cb0 (reads B0) to q0; thread use submits to q0 cb1 (a barrier from all_commands to
# host), cb2 (a barrier from host to copy; the two chain through host), cb3 (a copy writes B0). Submitted after cb1,
# cb0 is in no barrier's first scope: the checker reports the WAR of that submission order (docs/format.md, "Several
# host threads"). In the walk's order, up first, the chain orders it, and cb0's write of B1 races cb3's read there:
# explain took one order for the two operations, the walk's, as the first that leaves a pair of theirs unordered.
SHARED_QUEUE_CHAIN = {
    "format": "vkverify-stream/1", "name": "two-threads-one-queue-chain-through-host",
    "buffers": [{"id": "B0", "size": 64}, {"id": "B1", "size": 64}],
    "shaders": {"rw": {"bindings": ["read", "write"]}},
    "command_buffers": {
        "cb0": [{"cmd": "dispatch", "shader": "rw", "bindings": [{"buffer": "B0"}, {"buffer": "B1"}]}],
        "cb1": [{"cmd": "barrier", "src_stage": ["all_commands"], "src_access": [], "dst_stage": ["host"],
                 "dst_access": []}],
        "cb2": [{"cmd": "barrier", "src_stage": ["host"], "src_access": [], "dst_stage": ["copy"], "dst_access": []}],
        "cb3": [{"cmd": "copy", "src": "B1", "dst": "B0"}]},
    "threads": {"up": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}],
                "use": [{"op": "submit", "queue": "q0", "command_buffers": [cb]} for cb in ("cb1", "cb2", "cb3")]}}


def test_explain_reads_every_submission_order_of_threads_sharing_a_queue():
    """Each pair of the two operations is explained in the submission order of the checker's finding on it
    (Finding.order): the RAW on B1 in the walk's, the WAR on B0 in the one with cb0 after cb1, which it names."""
    stream = from_dict(SHARED_QUEUE_CHAIN)
    war = next(f for f in check(stream) if (f.kind, f.first, f.second) == ("war", "cb0[0]", "cb3[0]"))
    assert war.order == {"q0": (("use", 0), ("up", 0), ("use", 1), ("use", 2))}
    assert {(p.kind, p.buffer, p.ordered, p.order) for p in explain(stream, "cb0[0]", "cb3[0]").pairs} == {
        ("raw", "B1", False, None), ("war", "B0", False, "q0: use[0], up[0], use[1], use[2]")}
    assert not explain_disagreements(SHARED_QUEUE_CHAIN)


@settings(max_examples=EXAMPLES_RUN // 8, **SETTINGS)
@given(shared_timeline_streams())
def test_explain_agrees_with_the_checker_on_timelines_several_threads_signal(doc):
    """Two or three host threads signalling the same timelines in turn and sharing queues: explain's verdict on every
    pair the checker compares is the checker's (benchmarks/differential.py --mode explain --shared-timelines)."""
    assert_agree(doc, explain_disagreements)


# Drawn by shared_timeline_streams (benchmarks/differential.py --mode explain --shared-timelines --examples 1000,
# seed 7: 3 of 1000) and cut down: thread a submits to q0 a fill of B that waits for T = 1, then to q1 another fill
# of B; thread b submits to q1 a batch that signals T = 1. In the walk's order (a first) the second fill is ahead of
# the signal on q1, whose first scope holds it, so the wait orders the two fills; where b submits first they race,
# and the checker reports that order's WAW (Finding.order): no report of the walk's pair, which explain orders.
SIGNAL_BEHIND_ANOTHER_THREADS_SUBMIT = {
    "format": "vkverify-stream/1", "name": "signal-behind-another-threads-submit",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0"}, {"id": "q1"}]}],
    "buffers": [{"id": "B", "size": 64}, {"id": "C", "size": 64}], "semaphores": [{"id": "T", "type": "timeline"}],
    "command_buffers": {"wait_then_fill": [{"cmd": "fill", "dst": "B", "value": 1}],
                        "fill": [{"cmd": "fill", "dst": "B", "value": 2}],
                        "signal": [{"cmd": "fill", "dst": "C", "value": 3}]},
    "threads": {"a": [{"op": "submit", "queue": "q0", "command_buffers": ["wait_then_fill"],
                       "wait": [{"semaphore": "T", "value": 1, "stage": ["all_commands"]}]},
                      {"op": "submit", "queue": "q1", "command_buffers": ["fill"]}],
                "b": [{"op": "submit", "queue": "q1", "command_buffers": ["signal"],
                       "signal": [{"semaphore": "T", "value": 1, "stage": ["all_commands"]}]}]}}


def test_a_pair_another_submission_order_races_is_no_report_of_the_pair_the_walk_s_order_orders():
    stream = from_dict(SIGNAL_BEHIND_ANOTHER_THREADS_SUBMIT)
    (waw,) = check(stream)
    assert (waw.kind, waw.first, waw.second, waw.racing) == ("waw", "wait_then_fill[0]", "fill[0]", True)
    assert waw.order == {"q0": (("a", 0),), "q1": (("b", 0), ("a", 1))}
    assert explain(stream, "fill[0]", "wait_then_fill[0]").ordered  # in the walk's order, through T
    assert not explain(stream, "wait_then_fill[0]", "fill[0]").ordered  # in the finding's
    assert not explain_disagreements(SIGNAL_BEHIND_ANOTHER_THREADS_SUBMIT)


@settings(max_examples=EXAMPLES_RUN // 8, **SETTINGS)
@given(syncval_image_streams())
def test_explain_and_mutations_agree_on_the_syncval_port_s_image_features(doc):
    assert_agree(doc, consumer_disagreements)


# cb0 writes B0's bytes [1, 29) through an alias; cb1, submitted three times after it on q1, adds to B0's bytes
# [7, 64) with atomics, then a barrier from every stage (bottom_of_pipe) to compute_shader (logically after
# draw_indirect) with no write in its source access scope: an execution dependency only.
ATOMIC_HIDES = {
    "format": "vkverify-stream/1", "name": "atomic-hides",
    "devices": [{"id": "gpu0", "queues": [{"id": "q1", "family": 0}]}],
    "buffers": [{"id": "B0", "size": 64, "memory": "host_coherent"},
                {"id": "Al", "alias_of": "B0", "offset": 1, "size": 32}],
    "shaders": {"x": {"bindings": ["read_write"]}, "a": {"bindings": ["atomic"]}},
    "command_buffers": {
        "cb0": [{"cmd": "dispatch", "shader": "x", "bindings": [{"buffer": "Al", "offset": 0, "size": 28}]}],
        "cb1": [{"cmd": "dispatch", "shader": "a", "bindings": [{"buffer": "B0", "offset": 7, "size": 57}]},
                {"cmd": "barrier", "src_stage": ["transfer", "bottom_of_pipe"], "src_access": ["shader_storage_read"],
                 "dst_stage": ["bottom_of_pipe", "draw_indirect"], "dst_access": []}]},
    "threads": {"main": [{"op": "submit", "queue": "q1", "command_buffers": [cb]}
                         for cb in ("cb0", "cb1", "cb1", "cb1")]},
}


def test_an_atomic_hides_what_it_came_after_in_the_happens_before_model():
    """Rule 10 (docs/format.md): cb0's write reaches the first two submissions' atomics unseen (raw), but the
    second atomic executes after it and before the third, so it hides the write from the third, as the checker
    and the reference read it. hb.Model (explain, mutation analysis) compared the third with the write too."""
    stream = from_dict(ATOMIC_HIDES)
    assert [(f.kind, f.first, f.second) for f in check(stream)] == [
        ("raw", "cb0[0]", "cb1[0]@main[1]"), ("raw", "cb0[0]", "cb1[0]@main[2]")]
    assert {(p.first.ref, p.second.ref) for p in Model(stream).pairs.values() if p.kind == "raw"} == {
        ("cb0[0]", "cb1[0]@main[1]"), ("cb0[0]", "cb1[0]@main[2]")}
    assert consumer_disagreements(ATOMIC_HIDES) == []


# Thread up writes B0 on the host (host_cached, no flush), then submits two atomics on its bytes [0, 1): cb0,
# which signals T, and cb1; thread use waits for T and reads the byte.
ATOMIC_STANDS_FOR_THE_WRITE = {
    "format": "vkverify-stream/1", "name": "atomic-stands-for-the-write",
    "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}]}],
    "buffers": [{"id": "B0", "size": 64, "memory": "host_cached"}],
    "semaphores": [{"id": "T", "type": "timeline"}], "fences": [{"id": "F0", "signaled": False}],
    "shaders": {"a": {"bindings": ["atomic"]}},
    "command_buffers": {cb: [{"cmd": "dispatch", "shader": "a", "bindings": [{"buffer": "B0", "offset": 0, "size": 1}]}]
                        for cb in ("cb0", "cb1")},
    "threads": {
        "up": [{"op": "host_write", "buffer": "B0"},
               {"op": "submit", "queue": "q0", "command_buffers": ["cb0"],
                "signal": [{"semaphore": "T", "value": 1, "stage": ["all_commands"]}]},
               {"op": "submit", "queue": "q0", "command_buffers": ["cb1"], "fence": "F0"}],
        "use": [{"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 1}]},
                {"op": "host_read", "buffer": "B0", "offset": 0, "size": 1}]},
}


def test_a_later_atomic_does_not_stand_for_an_earlier_one_it_is_not_ordered_after():
    """cb0's atomic executes after the host write and before use's read (T), so it hides the write from the read;
    cb1's, on the same queue and stage, is ordered after neither: T's signal lies between them, so cb1's does not
    stand for cb0's (AccessState.alike, hb.Model._alike). Keeping one atomic per agent and stage, cb1's, both the
    checker and hb.Model compared the read with the host write."""
    stream = from_dict(ATOMIC_STANDS_FOR_THE_WRITE)
    assert [(f.kind, f.first, f.second) for f in check(stream) if f.second == "use[1]"] == [
        ("raw", "cb0[0]", "use[1]"), ("raw", "cb1[0]", "use[1]")]
    assert {p.first.ref for p in Model(stream).pairs.values() if p.second.ref == "use[1]"} == {"cb0[0]", "cb1[0]"}
    assert explain_disagreements(ATOMIC_STANDS_FOR_THE_WRITE) == []
