"""The fast checker against the slow reference (vkverify/check/reference.py), the spec read literally.

A disagreement is a bug in one of them: find which from the spec text, fix it, and keep the stream in
tests/corpus (both sides of the rule). The differential run draws its streams from tests/differential.py;
VKVERIFY_DIFFERENTIAL_EXAMPLES sets how many (benchmarks/differential.py runs many more).
"""

from __future__ import annotations

import json
import os
from functools import partial

import pytest
from hypothesis import given, settings

from vkverify.check import check
from vkverify.check.explain import explain
from vkverify.check.readings import Readings
from vkverify.check.reference import OutsideReference, Reference, references, submission_orders, verdict
from vkverify.model import from_dict, load

from .conftest import CORPUS, EXAMPLES
from .differential import (SETTINGS, assert_agree, batched_streams, completes, disagreements, event_streams,
                           fix_disagreements, image_feature_streams, image_streams, imported_semaphore_disagreements,
                           imported_semaphore_streams, marker_streams, pattern_streams, shared_timeline_streams,
                           streams, syncval_image_streams, thread_streams)

EXAMPLES_RUN = int(os.environ.get("VKVERIFY_DIFFERENTIAL_EXAMPLES", "400"))


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams())
def test_fast_checker_agrees_with_the_reference(doc):
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(batched_streams())
def test_fast_checker_agrees_with_the_reference_on_submits_of_several_batches(doc):
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(pattern_streams())
def test_fast_checker_agrees_with_the_reference_on_the_patterns_of_issue_25(doc):
    """Uniform reads after shader_read barriers, buffer barriers on other buffers inside chains, stage-limited
    waits before later batches' signals, host barriers after waits, invalidates before host barriers, narrow
    acquires, host writes after the submit (benchmarks/differential.py --patterns runs many more)."""
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(event_streams())
def test_fast_checker_agrees_with_the_reference_on_events(doc):
    """Sets, commands and waits as users write them (sync1 and sync2, global and buffer dependencies, two events in
    one wait, a reset and a set again, split and resubmitted command buffers, a barrier between set and wait, events
    on two queues, a host set before the submit; benchmarks/differential.py --events runs many more)."""
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(marker_streams())
def test_fast_checker_agrees_with_the_reference_on_buffer_markers_and_query_results(doc):
    """Marker writes of drawn stages and query result copies of drawn sizes and strides among reads, writes, atomics,
    fills and copies of the same words, barriers, two queues joined by a timeline or not, a resubmit, a host read
    (benchmarks/differential.py --markers runs many more)."""
    assert_agree(doc, disagreements)
    assert_agree(doc, fix_disagreements)


@pytest.mark.parametrize("readings", [Readings(all_commands_includes_host=False),
                                      Readings(buffer_barrier_covers_aliases=True),
                                      Readings(host_barrier_after_wait=False)],
                         ids=["no-host-in-all", "aliases", "no-host-after-wait"])
@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(doc=streams() | batched_streams() | pattern_streams() | event_streams())
def test_fast_checker_agrees_with_the_reference_under_other_readings(readings, doc):
    assert_agree(doc, partial(disagreements, readings=readings))


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(streams() | batched_streams())
def test_the_barrier_a_finding_gives_as_its_fix_orders_its_pair(doc):
    assert_agree(doc, fix_disagreements)


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(thread_streams())
def test_fast_checker_agrees_with_the_reference_in_every_submission_order_on_several_threads(doc):
    """Two host threads, on their own queues or sharing one: the checker against the reference over every
    submission order the threads allow (docs/format.md, "Several host threads"); longer runs:
    `benchmarks/differential.py --threads`."""
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(shared_timeline_streams())
def test_fast_checker_agrees_with_the_reference_on_timelines_several_threads_signal(doc):
    """Two or three host threads that signal the same timelines in turn, from the host and from their submits, and
    share queues: the checker against the reference over every submission order the threads allow (longer runs:
    `benchmarks/differential.py --shared-timelines`)."""
    assert_agree(doc, disagreements)


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(imported_semaphore_streams())
def test_a_handle_importing_a_payload_is_that_payload_s_semaphore(doc):
    """Waits and signals through a semaphore that imports a timeline's payload (payload_of) are that timeline's: the
    checker's findings are those of the stream naming the timeline, and agree with the reference's
    (`benchmarks/differential.py --imported` runs many more)."""
    assert_agree(doc, imported_semaphore_disagreements)


def _readable(path):
    stream = load(path)
    try:
        references(stream)
    except OutsideReference:
        return False
    return completes(check(stream))


@pytest.mark.parametrize("path", [p for p in CORPUS + EXAMPLES if _readable(p)], ids=lambda p: p.name)
def test_corpus_agrees_with_the_reference(path):
    doc = json.loads(path.read_text())
    assert not disagreements(doc)
    assert not fix_disagreements(doc)


def test_reference_follows_the_spec_on_a_chain_through_top_of_pipe():
    """A source stage top_of_pipe is NONE (spec 7.6.1): the reference itself reports the RAW of corpus 101 and
    none in its twin 102, so the differential test compares against the spec's answer, not the checker's."""
    [broken] = [p for p in CORPUS if p.name.startswith("101-")]
    [fixed] = [p for p in CORPUS if p.name.startswith("102-")]
    assert {(h.kind, h.first, h.second) for h in Reference(load(broken)).verdict().hazards} == \
        {("raw", "cb0[0]", "cb0[3]")}
    assert not Reference(load(fixed)).verdict().hazards


# ---- several host threads (docs/format.md, "Several host threads") --------------------------------------------

def _threads(up: list, use: list, memory: str = "host_coherent") -> dict:
    """Threads up and use over host-visible B and queues q0, q1; a dispatch writes B (w), reads it (r), or writes it
    and makes the write visible to the host (readback)."""
    write = {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": "B"}]}
    return {"format": "vkverify-stream/1", "name": "threads",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0"}, {"id": "q1"}]}],
            "buffers": [{"id": "B", "size": 64, "memory": memory}],
            "semaphores": [{"id": "T", "type": "timeline"}], "fences": [{"id": "F", "signaled": False}],
            "shaders": {"r": {"bindings": ["read"]}, "w": {"bindings": ["write"]}},
            "command_buffers": {"w": [write], "r": [{"cmd": "dispatch", "shader": "r", "bindings": [{"buffer": "B"}]}],
                                "readback": [write, {"cmd": "barrier", "src_stage": ["compute_shader"],
                                                     "src_access": ["shader_write"], "dst_stage": ["host"],
                                                     "dst_access": ["host_read"]}]},
            "threads": {"up": up, "use": use}}


def _submit(cb: str | None, queue: str = "q0", **kw) -> dict:
    """A submit of command buffer `cb` (None: none) to `queue`."""
    return {"op": "submit", "queue": queue, "command_buffers": [cb] if cb else [], **kw}


SIGNAL = {"op": "signal_semaphore", "semaphore": "T", "value": 1}
WAIT = {"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 1}]}
READ = {"op": "host_read", "buffer": "B"}


def _hazards(doc: dict) -> set:
    return {(h.kind, h.first, h.second) for h in verdict(from_dict(doc)).hazards}


THREAD_CASES = [
    # 7.9: a host write that happens-before a submit (through a host signal and wait) is visible to its commands...
    ([{"op": "host_write", "buffer": "B"}, SIGNAL], [WAIT, _submit("r", "q1")], set()),
    # ... not through a queue wait alone: a host signal makes nothing available (Checker conventions).
    ([{"op": "host_write", "buffer": "B"}, SIGNAL], [_submit("r", "q1", wait=[{"semaphore": "T", "value": 1}])],
     {("raw", "up[0]", "r[0]")}),
    # 7.3: a fence another thread waits for orders the readback before its host read; nothing orders it without.
    ([_submit("readback", fence="F")], [{"op": "wait_fences", "fences": ["F"]}, READ], set()),
    ([_submit("readback")], [READ], {("raw", "readback[0]", "use[0]")}),
    # A wait on the host that comes before its signal in the stream, in another thread.
    ([WAIT, READ], [_submit("readback", signal=[{"semaphore": "T", "value": 1}])], set()),
    # 5.3.4: an idle wait covers the submits of another thread only where they happen-before it.
    ([_submit("readback"), SIGNAL], [WAIT, {"op": "queue_wait_idle", "queue": "q0"}, READ], set()),
    ([_submit("readback")], [{"op": "queue_wait_idle", "queue": "q0"}, READ], {("raw", "readback[0]", "use[1]")}),
]


@pytest.mark.parametrize("up, use, hazards", THREAD_CASES)
def test_the_reference_orders_threads_only_through_vulkan_objects(up, use, hazards):
    assert _hazards(_threads(up, use)) == hazards


@pytest.mark.parametrize("up, use, hazards", THREAD_CASES)
def test_the_checker_orders_threads_only_through_vulkan_objects(up, use, hazards):
    """The same cases, the fast checker: an idle wait of one thread does not cover another thread's submit that
    nothing orders before it on the host (it covered every batch the walk had run: a RAW missed)."""
    found = check(from_dict(_threads(up, use)))
    assert {(f.kind, f.first, f.second) for f in found if f.kind in ("raw", "war", "waw")} == hazards


def test_the_reference_reads_every_submission_order_of_a_queue_two_threads_feed():
    """Spec 7.2: the order of two threads' submits to q0 is the order their calls run in, which nothing here fixes:
    a read that a barrier orders after the other thread's write where that write is submitted first races it,
    as a WAR, where the read is submitted first."""
    doc = _threads([_submit("w")], [_submit("br")])
    doc["command_buffers"]["br"] = [{"cmd": "barrier", "src_stage": ["compute_shader"], "src_access": ["shader_write"],
                                     "dst_stage": ["compute_shader"], "dst_access": ["shader_read"]},
                                    *doc["command_buffers"]["r"]]
    stream = from_dict(doc)
    assert submission_orders(stream) == [{"q0": (("up", 0), ("use", 0)), "q1": ()},
                                         {"q0": (("use", 0), ("up", 0)), "q1": ()}]
    first, second = references(stream)
    assert not first.verdict().hazards
    war = {("war", "br[1]", "w[0]")}
    assert {(h.kind, h.first, h.second) for h in second.verdict().hazards} == _hazards(doc) == war
    with pytest.raises(OutsideReference, match="references"):
        Reference(stream)


def test_an_order_no_schedule_runs_is_left_out():
    """use submits to q0 only after waiting for what up signals after its own submit to q0: up's submit comes first."""
    doc = _threads([_submit("w"), SIGNAL], [WAIT, _submit("r")])
    assert len(submission_orders(from_dict(doc))) == 2 and len(references(from_dict(doc))) == 1
    assert _hazards(doc) == {("raw", "w[0]", "r[0]")}


@pytest.mark.parametrize("change, reason", [
    (lambda d: d["semaphores"].append({"id": "S", "type": "binary"}) or d["threads"]["up"][0].update(
        signal=[{"semaphore": "S"}]) or d["threads"]["use"][0].update(wait=[{"semaphore": "S"}]), "binary"),
    (lambda d: d["fences"][0].update(signaled=True), "fence"),
])
def test_what_the_interleaving_decides_beyond_submission_order_is_outside(change, reason):
    doc = _threads([_submit("w", fence="F")], [_submit("r", "q1"), {"op": "wait_fences", "fences": ["F"]}])
    change(doc)
    with pytest.raises(OutsideReference, match=reason):
        references(from_dict(doc))


def signal_after_signal() -> dict:
    """q0 reads B and signals T; q1 waits T and signals U = 1, then, in a batch of its own, U = 2 at top_of_pipe
    (a stage mask that holds no command); q0 waits U >= 2 and writes B."""
    cb = {k: [{"cmd": "dispatch", "shader": k, "bindings": [{"buffer": "B"}]}] for k in ("r", "w")}
    return {"format": "vkverify-stream/1", "name": "signal-after-signal",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0"}, {"id": "q1"}]}],
            "buffers": [{"id": "B", "size": 64, "memory": "device_local"}],
            "semaphores": [{"id": "T", "type": "timeline"}, {"id": "U", "type": "timeline"}],
            "shaders": {"r": {"bindings": ["read"]}, "w": {"bindings": ["write"]}}, "command_buffers": cb,
            "threads": {"main": [
                _submit("r", signal=[{"semaphore": "T", "value": 1}]),
                _submit(None, "q1", wait=[{"semaphore": "T", "value": 1}], signal=[{"semaphore": "U", "value": 1}]),
                _submit(None, "q1", signal=[{"semaphore": "U", "value": 2, "stage": ["top_of_pipe"]}]),
                _submit("w", wait=[{"semaphore": "U", "value": 2}])]}}


def test_a_semaphore_signal_happens_after_the_signals_of_earlier_batches_and_what_they_follow():
    """Spec 7.4.1 note: "all semaphore signal operations contained in any given batch are guaranteed to happen-after
    all semaphore signal operations contained in any previous batches", whatever its stage mask; happens-before is
    transitive (7.1), so the write is ordered after the read."""
    assert not verdict(from_dict(signal_after_signal())).hazards


def test_the_checker_agrees_on_a_signal_after_signal():
    """The checker carried only the earlier signal's release number into the later signal's clock: a false war."""
    assert not disagreements(signal_after_signal())


@pytest.mark.parametrize("up, use, read", [(THREAD_CASES[-2][0], THREAD_CASES[-2][1], "use[2]"),
                                           (THREAD_CASES[-1][0], THREAD_CASES[-1][1], "use[1]")])
def test_explain_reads_an_idle_wait_of_another_thread_as_the_checker_does(up, use, read):
    """hb.Model (explain): the idle wait's release stands after the last batch whose submit happens-before it, so a
    submit of another thread that nothing orders before the wait is outside it (it stood after every batch)."""
    from vkverify.check.explain import explain

    stream = from_dict(_threads(up, use))
    (pair,) = [p for p in explain(stream, "readback[0]", read).pairs if p.kind == "raw"]
    ordered = not any(f.kind == "raw" and f.second == read for f in check(stream))
    assert bool(pair.chains) == ordered and ordered == (read == "use[2]")


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(image_streams())
def test_fast_checker_agrees_with_the_reference_on_images(doc):
    """Uploads, readbacks, copies between images, clears, storage image dispatches and image barriers with
    subresource ranges and layout transitions (benchmarks/differential.py --images runs many more)."""
    assert_agree(doc, disagreements)
    assert_agree(doc, fix_disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(image_feature_streams())
def test_fast_checker_agrees_with_the_reference_on_blits_sampled_bindings_and_compressed_planar_and_3d_images(doc):
    """image_streams with blits, sampled and unaccessed image bindings, and a block-compressed, multi-planar or 3D
    (2d_array_compatible: barriers of depth slices) image's copies, uploads, clears and barriers
    (benchmarks/differential.py --image-features runs many more)."""
    assert_agree(doc, disagreements)
    assert_agree(doc, fix_disagreements)


@settings(max_examples=EXAMPLES_RUN // 2, **SETTINGS)
@given(syncval_image_streams())
def test_fast_checker_agrees_with_the_reference_on_the_image_features_of_the_syncval_port(doc):
    """Queue family ownership transfers of images (benchmarks/differential.py --syncval-images runs many more)."""
    assert_agree(doc, disagreements)
    assert_agree(doc, fix_disagreements)


# Drawn by image_feature_streams (benchmarks/differential.py --image-features --examples 5000, seed 0: 3 of 5000) and
# cut down: a read of J; a barrier from all_commands to clear with a transition of J (T1); a barrier from none with
# another transition of J (T2, undefined -> general) to all_commands; an upload to J. T1 happens after the read; T2
# only after T1, by 7.7.4's order of transitions, of which "an application must not rely on ordering of image layout
# transitions to influence ordering of other commands": the read and T2, and the read and the upload, are WARs (the
# reference). The checker recorded T1 as J's latest write, dropping the read, and compared T2 and the upload with T1
# only, reporting neither; a transition now leaves the reads before it in place (engine.Checker.access, corpus 238).
TWO_TRANSITIONS = {
    "format": "vkverify-stream/1", "name": "read-then-two-transitions-then-write",
    "buffers": [{"id": "S", "size": 256, "memory": "host_coherent"}],
    "images": [{"id": "J", "extent": [8, 4], "format": "r8g8b8a8_unorm"}],
    "shaders": {"r": {"bindings": ["read"]}},
    "command_buffers": {"cb0": [
        {"cmd": "dispatch", "shader": "r", "bindings": [{"image": "J"}]},
        {"cmd": "barrier", "src_stage": ["all_commands"], "src_access": [], "dst_stage": ["clear"], "dst_access": [],
         "images": [{"image": "J", "old_layout": "general", "new_layout": "transfer_dst_optimal"}]},
        {"cmd": "barrier", "src_stage": [], "src_access": [], "dst_stage": ["all_commands"],
         "dst_access": ["transfer_write"],
         "images": [{"image": "J", "old_layout": "undefined", "new_layout": "general"}]},
        {"cmd": "copy_buffer_to_image", "src": "S", "dst": "J", "regions": [{"image_extent": [8, 4]}]}]},
    "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}, {"op": "device_wait_idle"}]}}


def test_a_transition_ordered_only_after_another_transition_is_not_ordered_after_the_reads_before_it():
    wars = {("war", "cb0[0]", "cb0[2]"), ("war", "cb0[0]", "cb0[3]")}
    assert {(h.kind, h.first, h.second) for h in Reference(from_dict(TWO_TRANSITIONS)).verdict().hazards} >= wars
    assert {(f.kind, f.first, f.second) for f in check(from_dict(TWO_TRANSITIONS))} >= wars
    assert not disagreements(TWO_TRANSITIONS)


# TWO_TRANSITIONS with an upload of J (made available to T1) in place of the read: T1 replaced it as J's latest write
# (the checker keeps one), so the second upload, ordered after T2 only, was compared with T2 alone. The reference has
# the WAW of the two uploads (and of the first upload and T2, of T1 and the second upload, which the harness takes as
# the checker's convention). A segment now keeps the write before a queue's run of transitions once one followed
# another (Segment.carried), and the second upload meets it (corpus 240).
WRITE_THEN_TWO_TRANSITIONS = {**TWO_TRANSITIONS, "command_buffers": {"cb0": [
    TWO_TRANSITIONS["command_buffers"]["cb0"][3],
    {**TWO_TRANSITIONS["command_buffers"]["cb0"][1], "src_access": ["transfer_write"]},
    *TWO_TRANSITIONS["command_buffers"]["cb0"][2:]]}}


def test_a_write_ordered_only_after_a_transition_after_another_is_not_ordered_after_the_write_before_that():
    stream = from_dict(WRITE_THEN_TWO_TRANSITIONS)
    assert ("waw", "cb0[0]", "cb0[3]") in {(h.kind, h.first, h.second) for h in Reference(stream).verdict().hazards}
    assert ("waw", "cb0[0]", "cb0[3]") in {(f.kind, f.first, f.second) for f in check(stream)}
    assert not disagreements(WRITE_THEN_TWO_TRANSITIONS)


def test_a_read_ordered_only_after_a_transition_after_another_is_not_ordered_after_the_write_before_that():
    doc = {**WRITE_THEN_TWO_TRANSITIONS, "command_buffers": {"cb0": [
        *WRITE_THEN_TWO_TRANSITIONS["command_buffers"]["cb0"][:3], TWO_TRANSITIONS["command_buffers"]["cb0"][0]]}}
    stream = from_dict(doc)
    assert ("raw", "cb0[0]", "cb0[3]") in {(h.kind, h.first, h.second) for h in Reference(stream).verdict().hazards}
    assert ("raw", "cb0[0]", "cb0[3]") in {(f.kind, f.first, f.second) for f in check(stream)}
    assert not disagreements(doc)


# ---- events (spec 7.5) ----------------------------------------------------------------------------------------

def _events(commands: list, ops: list | None = None) -> dict:
    """One command buffer `cb` on q0 over B (host_coherent) and C, events E, F and H, submitted after `ops`."""
    return {"format": "vkverify-stream/1", "name": "events", "devices": [{"id": "gpu0", "queues": [{"id": "q0"}]}],
            "buffers": [{"id": "B", "size": 64, "memory": "host_coherent"}, {"id": "C", "size": 64}],
            "events": [{"id": e} for e in "EFH"],
            "shaders": {"r": {"bindings": ["read"]}, "w": {"bindings": ["write"]}},
            "command_buffers": {"cb": commands},
            "threads": {"main": [*(ops or []), {"op": "submit", "queue": "q0", "command_buffers": ["cb"]},
                                 {"op": "device_wait_idle"}]}}


FILL_B, FILL_C = {"cmd": "fill", "dst": "B", "value": 1}, {"cmd": "fill", "dst": "C", "value": 1}
READ_B, READ_C = ({"cmd": "dispatch", "shader": "r", "bindings": [{"buffer": b}]} for b in "BC")
ALL = {"src_stage": ["all_commands"], "src_access": ["memory_write"], "dst_stage": ["all_commands"],
       "dst_access": ["memory_read"]}
WAIT_E = {"cmd": "wait_events", "events": ["E"], **ALL}
SET_E = {"cmd": "set_event", "event": "E", "stage": ["all_commands"]}


def _set2(first: str, second: str) -> dict:
    """vkCmdSetEvent2 of E: buffer barriers of B, then C, from the stages `first` and `second` to compute_shader."""
    return {"cmd": "set_event", "event": "E", "buffers": [
        {"buffer": b, "src_stage": [s], "src_access": ["memory_write"], "dst_stage": ["compute_shader"],
         "dst_access": ["shader_read"]} for b, s in (("B", first), ("C", second))]}


def _wait2(set2: dict) -> dict:
    return {"cmd": "wait_events", "events": ["E"], "dependencies": [{"buffers": set2["buffers"]}]}


EVENT_CASES = {
    # "applied to operations that occurred earlier in submission order than the last event signal operation": a
    # write before the set is ordered before a read after the wait; one between them is in neither scope.
    "before the set": ([FILL_B, SET_E, WAIT_E, READ_B], None, set()),
    "between set and wait": ([SET_E, FILL_B, WAIT_E, READ_B], None, {("raw", "cb[1]", "cb[3]")}),
    # A barrier between the set and the wait does not chain into the wait: the fill (clear) is outside the set's
    # first scope (compute_shader and earlier), and the barrier's second scope (compute_shader) misses the copy.
    "barrier between": ([FILL_B, {"cmd": "set_event", "event": "E", "stage": ["compute_shader"]},
                         {"cmd": "barrier", "src_stage": ["clear"], "src_access": ["memory_write"],
                          "dst_stage": ["compute_shader"], "dst_access": ["memory_read"]},
                         {"cmd": "wait_events", "events": ["E"], **ALL, "src_stage": ["compute_shader"]},
                         {"cmd": "copy", "src": "B", "dst": "C"}], None, {("raw", "cb[0]", "cb[4]")}),
    # vkCmdWaitEvents: "the operations that happened-before the event signal operations"; a write earlier than F's
    # set, at a stage of the wait's source mask (the union of E's and F's) but not of F's set, after E's set, is
    # made available by neither dependency: the barrier between set and wait orders its execution alone.
    "not before the set": ([SET_E, {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": "B"}]},
                            {"cmd": "set_event", "event": "F", "stage": ["clear"]},
                            {"cmd": "barrier", "src_stage": ["all_commands"], "dst_stage": ["all_commands"]},
                            {"cmd": "wait_events", "events": ["E", "F"], **ALL,
                             "src_stage": ["all_commands", "clear"]}, {"cmd": "copy", "src": "B", "dst": "C"}],
                           None, {("raw", "cb[1]", "cb[5]")}),
    # vkCmdSetEvent2's k-th memory barrier is the first half of the wait's k-th: each buffer's own source stage.
    "k-th with k-th": ([FILL_B, {"cmd": "copy", "src": "B", "dst": "C"}, _set2("clear", "copy"),
                        _wait2(_set2("clear", "copy")), READ_B, READ_C], None, {("raw", "cb[0]", "cb[1]")}),
    "k-th crossed": ([FILL_B, {"cmd": "copy", "src": "B", "dst": "C"}, _set2("copy", "clear"),
                      _wait2(_set2("copy", "clear")), READ_B, READ_C], None,
                     {("raw", "cb[0]", "cb[1]"), ("raw", "cb[0]", "cb[4]"), ("raw", "cb[1]", "cb[5]")}),
    # A reset, then a set again: the wait's first scopes end at the later set.
    "set again": ([SET_E, FILL_B, {"cmd": "reset_event", "event": "E"}, SET_E, WAIT_E, READ_B], None, set()),
    # vkSetEvent before the submit: the wait orders nothing the submission does not (7.9) and completes.
    "host set": ([{"cmd": "wait_events", "events": ["H"], "src_stage": ["host"], "src_access": ["host_write"],
                   "dst_stage": ["compute_shader"], "dst_access": ["shader_read"]}, READ_B],
                 [{"op": "host_write", "buffer": "B"}, {"op": "set_event", "event": "H"}], set()),
}


@pytest.mark.parametrize("commands, ops, hazards", EVENT_CASES.values(), ids=EVENT_CASES.keys())
def test_the_reference_reads_events_from_the_spec(commands, ops, hazards):
    doc = _events(commands, ops)
    assert {(h.kind, h.first, h.second) for h in verdict(from_dict(doc)).hazards} == hazards
    assert not disagreements(doc)


def _set_through(second_event: str, b_source: str) -> dict:
    """Corpus 242/243 (E set, reset, set again, waited, reset) with the second set and its wait on `second_event`,
    the second set's buffer barrier of B from `b_source`."""
    [path] = [p for p in CORPUS if p.name.startswith("243-")]
    doc = json.loads(path.read_text())
    del doc["expect"]
    doc["events"] = [{"id": e} for e in sorted({"E", second_event})]
    second, wait = doc["command_buffers"]["cb0"][2:4]
    second["event"], wait["events"] = second_event, [second_event]
    for barrier in (second["buffers"][1], wait["dependencies"][0]["buffers"][1]):
        barrier["src_stage"] = [b_source]
    return doc


@pytest.mark.parametrize("second_event", ["E", "F"])
@pytest.mark.parametrize("b_source, ordered", [("all_commands", True), ("compute_shader", False)])
def test_operations_chain_through_a_set_s_signal_operation(second_event, b_source, ordered):
    """7.5 vkCmdSetEvent2: a set's first synchronization scope is the union of its memory dependencies', its second
    its signal operation, which a wait for it holds in each memory dependency's first scope: 7.1 chains the two
    through it. The first set of E is in the second set's union (B's all_commands) and the last reset in the wait's
    C dependency's second scope: ordered, though neither memory dependency holds both; and so when the second set
    and its wait are of another event F. The reference, the checker and explain each say so."""
    doc = _set_through(second_event, b_source)
    stream = from_dict(doc)
    assert Reference(stream).event_hb("cb0[0]", "cb0[4]") is ordered
    races = {(f.first, f.second) for f in check(stream) if f.kind == "event_race"}
    assert (("cb0[0]", "cb0[4]") in races) is not ordered
    assert explain(stream, "cb0[0]", "cb0[4]").ordered is ordered
    assert not disagreements(doc)


@pytest.mark.parametrize("wait_stage, ordered", [("compute_shader", True), ("none", False)])
def test_an_operation_of_another_queue_chains_through_a_set_s_signal_operation(wait_stage, ordered):
    """E set on q0, a semaphore q1 waits for at `wait_stage`, then on q1 F's set (C: all_transfer -> all_commands,
    B: compute_shader -> none), its wait and E's reset at copy: at compute_shader the semaphore orders the set of E
    before F's set (its union) but not before F's C dependency, whose wait holds the reset; the chain goes through
    F's signal operation (7.1). At none nothing orders the set of E before F's."""
    doc = _set_through("F", "compute_shader")
    first, _, second, wait, reset = doc["command_buffers"].pop("cb0")
    doc["devices"][0]["queues"].append({"id": "q1", "family": 0})
    doc["semaphores"] = [{"id": "S"}]
    doc["command_buffers"].update({"a": [first], "b": [second, wait, reset]})
    doc["threads"]["main"] = [
        {"op": "submit", "queue": "q0", "command_buffers": ["a"], "signal": [{"semaphore": "S"}]},
        {"op": "submit", "queue": "q1", "wait": [{"semaphore": "S", "stage": wait_stage}], "command_buffers": ["b"]},
        {"op": "device_wait_idle"}]
    stream = from_dict(doc)
    assert Reference(stream).event_hb("a[0]", "b[2]") is ordered
    assert (("a[0]", "b[2]") in {(f.first, f.second) for f in check(stream) if f.kind == "event_race"}) is not ordered
    assert not disagreements(doc)


@pytest.mark.parametrize("commands, ops", [
    ([WAIT_E, READ_B], None),  # never set
    ([SET_E, {"cmd": "reset_event", "event": "E"}, WAIT_E], None),  # reset last
    ([WAIT_E], [{"op": "set_event", "event": "E"}, {"op": "reset_event", "event": "E"}]),
], ids=["never set", "reset", "host reset"])
def test_a_wait_no_set_satisfies_is_outside_the_reference_and_reported(commands, ops):
    doc = _events(commands, ops)
    with pytest.raises(OutsideReference, match="never satisfied"):
        verdict(from_dict(doc))
    assert "wait_never_satisfied" in {f.kind for f in check(from_dict(doc))}


def test_a_wait_into_the_host_stage_gives_its_queue_no_host_clock():
    """The checker gave q0 a clock for the host stage, named by the wait's second scope; the barrier command both
    command buffers share (one object), its scopes compiled on q0, then asked q1 for that clock (KeyError)."""
    to_host = {"cmd": "barrier", "src_stage": ["all_commands"], "src_access": ["memory_write"], "dst_stage": ["host"],
               "dst_access": ["host_read"]}
    doc = _events([FILL_B, SET_E, {**WAIT_E, "dst_stage": ["host"], "dst_access": ["host_read"]}, to_host])
    doc["devices"][0]["queues"].append({"id": "q1"})
    doc["command_buffers"]["other"] = [to_host]
    doc["threads"]["main"][1:1] = [{"op": "submit", "queue": "q1", "command_buffers": ["other"]}]
    doc["threads"]["main"].append({"op": "host_read", "buffer": "B"})
    assert not disagreements(doc)


def _barriers(commands: dict[str, list]) -> dict:
    """Command buffers on q0, q1 (in key order), over B and C; fills, copies and a dispatch writing B."""
    doc = _events([])
    doc["devices"][0]["queues"].append({"id": "q1"})
    doc["command_buffers"] = commands
    doc["threads"]["main"] = [{"op": "submit", "queue": q, "command_buffers": [cb]}
                              for q, cb in zip(("q0", "q1"), commands)] + [{"op": "device_wait_idle"}]
    return doc


ORDER_ALL = {"cmd": "barrier", **ALL, "dst_access": ["memory_read", "memory_write"]}
WRITE_B = {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": "B"}]}


@pytest.mark.parametrize("doc, reported", [
    # A copy reads B; a fill ordered after it; a dispatch writes B unordered with both: the checker keeps the reads
    # since the most recent write, so reports the WAW fill -> dispatch, which stands for the copy's WAR.
    (_barriers({"a": [{"cmd": "copy", "src": "B", "dst": "C"}, {"cmd": "barrier", "src_stage": ["copy"],
                                                                   "dst_stage": ["transfer"]}, FILL_B, WRITE_B]}),
     {("waw", "a[2]", "a[3]")}),
    # q0 writes B twice in order, q1 writes B and reads it in order: the checker's schedule runs q0 then q1 and
    # reports the writes meeting, racing, which stands for q0's first write racing q1's read.
    (_barriers({"a": [FILL_B, ORDER_ALL, {"cmd": "copy", "src": "C", "dst": "B"}], "b": [FILL_B, ORDER_ALL, READ_B]}),
     {("waw", "a[2]", "b[0]")}),
], ids=["read replaced by an ordered write", "race between two ordered pairs"])
def test_a_finding_stands_for_the_pairs_the_checker_does_not_compare(doc, reported):
    """disagreements(): pairs the reference has and the checker's convention (the most recent write and the reads
    since it, docs/format.md Findings) does not name are accounted for by the finding that stands for them."""
    assert {(f.kind, f.first, f.second) for f in check(from_dict(doc)) if f.kind in ("raw", "war", "waw")} == reported
    assert len({(h.kind, h.first, h.second) for h in verdict(from_dict(doc)).hazards}) > len(reported)
    assert not disagreements(doc)
