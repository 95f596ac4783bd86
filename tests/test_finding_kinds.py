"""Every finding kind of docs/format.md, from a small builder stream, and its fixed twin without it."""

from __future__ import annotations

from vkverify.check import KINDS, check
from vkverify.model import from_dict
from vkverify.model.builder import Stream

TWO_QUEUES = [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 1}]}]


def of_kind(stream, kind):
    return [f for f in check(stream) if f.kind == kind]


def only(stream, kind):
    """The findings of `kind`, asserting there is no finding of another kind."""
    findings = check(stream)
    assert {f.kind for f in findings} <= {kind}, findings
    return [f for f in findings if f.kind == kind]


def base(name, devices=None) -> Stream:
    s = Stream(name, devices=devices)
    s.declare_shader("produce", ["write"])
    s.declare_shader("transform", ["read", "write"])
    s.create_fence("F")
    return s


def test_every_kind_is_covered():
    covered = {name[len("test_"):].split("_twin")[0] for name in globals() if name.startswith("test_")}
    assert set(KINDS) <= covered, set(KINDS) - covered


# ---- raw ---------------------------------------------------------------------


def raw_stream(fixed: bool):
    s = base("raw")
    s.create_buffer("A", 4096).create_buffer("Out", 4096)
    cb = s.allocate_command_buffer("cb0").cmd_fill_buffer("A", label="init A")
    if fixed:
        cb.cmd_pipeline_barrier2("clear", "transfer_write", "compute_shader", "shader_storage_read")
    cb.cmd_dispatch("transform", [{"buffer": "A", "access": "read"}, {"buffer": "Out", "access": "write"}],
                    label="read A")
    s.queue_submit("q0", ["cb0"], fence="F").wait_for_fences(["F"])
    return s.build()


def test_raw():
    (f,) = only(raw_stream(False), "raw")
    assert (f.buffer, f.first, f.second, f.range) == ("A", "cb0[0]", "cb0[1]", (0, 4096))
    assert f.first_access == "clear/transfer_write"
    assert f.second_access == "compute_shader/shader_storage_read"
    assert f.racing is False
    assert f.labels == ("init A", "read A")


def test_raw_twin():
    assert check(raw_stream(True)) == []


def test_raw_twin_needs_the_right_access_mask():
    """The same barrier with a dst access that does not cover the read is not a fix."""
    s = base("raw-wrong-dst")
    s.create_buffer("A", 4096).create_buffer("Out", 4096)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A").cmd_pipeline_barrier2(
        "clear", "transfer_write", "compute_shader", "shader_storage_write").cmd_dispatch(
        "transform", [{"buffer": "A", "access": "read"}, {"buffer": "Out", "access": "write"}])
    s.queue_submit("q0", ["cb0"], fence="F").wait_for_fences(["F"])
    assert [(f.kind, f.first, f.second) for f in check(s.build())] == [("raw", "cb0[0]", "cb0[2]")]


# ---- war ---------------------------------------------------------------------


def war_stream(fixed: bool):
    s = base("war")
    s.create_buffer("In", 4096, memory="host_coherent").create_buffer("Out", 4096)
    s.host_write("In")
    cb = s.allocate_command_buffer("cb0").cmd_dispatch(
        "transform", [{"buffer": "In", "access": "read"}, {"buffer": "Out", "access": "write"}])
    if fixed:
        cb.cmd_pipeline_barrier2(src_stage="compute_shader", dst_stage="clear")  # execution only
    cb.cmd_fill_buffer("In", 0, 1024)
    s.queue_submit("q0", ["cb0"], fence="F").wait_for_fences(["F"])
    return s.build()


def test_war():
    (f,) = only(war_stream(False), "war")
    assert (f.buffer, f.first, f.second, f.range) == ("In", "cb0[0]", "cb0[1]", (0, 1024))
    assert f.first_access == "compute_shader/shader_storage_read"
    assert f.second_access == "clear/transfer_write"


def test_war_twin():
    assert check(war_stream(True)) == []


# ---- waw ---------------------------------------------------------------------


def waw_stream(fixed: bool):
    s = base("waw")
    s.create_buffer("B", 4096)
    cb = s.allocate_command_buffer("cb0").cmd_dispatch("produce", [{"buffer": "B", "access": "write"}])
    if fixed:
        cb.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "copy", "transfer_write")
    cb.cmd_update_buffer("B", 2048, 64)
    s.queue_submit("q0", ["cb0"], fence="F").wait_for_fences(["F"])
    return s.build()


def test_waw():
    (f,) = only(waw_stream(False), "waw")
    # copy/transfer_write does not cover update's stage (clear): the fix must name clear
    assert (f.buffer, f.first, f.second, f.range) == ("B", "cb0[0]", "cb0[1]", (2048, 2112))


def test_waw_twin():
    s = base("waw-fixed")
    s.create_buffer("B", 4096)
    s.allocate_command_buffer("cb0").cmd_dispatch("produce", [{"buffer": "B", "access": "write"}]) \
        .cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "clear", "transfer_write") \
        .cmd_update_buffer("B", 2048, 64)
    s.queue_submit("q0", ["cb0"], fence="F").wait_for_fences(["F"])
    assert check(s.build()) == []
    # and a barrier at the wrong dst stage (copy, not clear) fixes nothing
    assert [f.kind for f in check(waw_stream(True))] == ["waw"]


# ---- use_after_destroy -------------------------------------------------------


def use_after_destroy_stream(fixed: bool):
    s = base("use-after-destroy")
    s.create_buffer("Src", 4096, memory="host_coherent").create_buffer("Dst", 4096)
    s.host_write("Src")
    s.allocate_command_buffer("cb0").cmd_copy_buffer("Src", "Dst")
    s.queue_submit("q0", ["cb0"], fence="F")
    if fixed:
        s.wait_for_fences(["F"])
        s.destroy_buffer("Src")
    else:
        s.destroy_buffer("Src")
        s.wait_for_fences(["F"])
    return s.build()


def test_use_after_destroy():
    (f,) = only(use_after_destroy_stream(False), "use_after_destroy")
    assert (f.buffer, f.first, f.second) == ("Src", "cb0[0]", "main[2]")


def test_use_after_destroy_twin():
    assert check(use_after_destroy_stream(True)) == []


def test_use_after_destroy_host_access():
    s = base("host-after-destroy")
    s.create_buffer("H", 256, memory="host_coherent")
    s.host_write("H").destroy_buffer("H").host_read("H")
    (f,) = only(s.build(), "use_after_destroy")
    assert (f.buffer, f.first, f.second) == ("H", "main[1]", "main[2]")


# ---- uninitialized_read ------------------------------------------------------


def uninitialized_stream(fixed: bool):
    s = base("uninitialized")
    s.create_buffer("A", 4096).create_buffer("Out", 4096)
    cb = s.allocate_command_buffer("cb0")
    if fixed:
        cb.cmd_fill_buffer("A").cmd_pipeline_barrier2("clear", "transfer_write", "copy", "transfer_read")
    else:
        cb.cmd_fill_buffer("A", 0, 1024)  # only the first KiB
    cb.cmd_copy_buffer("A", "Out")
    s.queue_submit("q0", ["cb0"], fence="F").wait_for_fences(["F"])
    return s.build()


def test_uninitialized_read():
    fs = of_kind(uninitialized_stream(False), "uninitialized_read")
    assert [(f.buffer, f.first, f.second, f.range) for f in fs] == [("A", None, "cb0[1]", (1024, 4096))]


def test_uninitialized_read_twin():
    assert check(uninitialized_stream(True)) == []


# ---- deadlock ----------------------------------------------------------------


def deadlock_stream(fixed: bool):
    s = base("deadlock")
    s.create_buffer("A", 4096)
    s.create_semaphore("T", timeline=True)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A")
    s.allocate_command_buffer("cb1").cmd_fill_buffer("A", 0, 16)
    wait = {"queue": "q0", "command_buffers": ["cb1"], "wait": [{"semaphore": "T", "value": 1}], "fence": "F"}
    signal = {"queue": "q0", "command_buffers": ["cb0"], "signal": [{"semaphore": "T", "value": 1}]}
    if fixed:
        s.queue_submit(**signal).queue_submit(**wait)
    else:
        s.queue_submit(**wait).queue_submit(**signal)
    s.wait_for_fences(["F"])
    return s.build()


def test_deadlock():
    fs = of_kind(deadlock_stream(False), "deadlock")
    assert len(fs) == 1
    # the blocked wait (main[0]) and the submit holding the signal it needs (main[1])
    assert {"main[0]", "main[1]"} <= set(fs[0].ops)
    assert fs[0].first is None and fs[0].second is None


def test_deadlock_twin():
    assert check(deadlock_stream(True)) == []


# ---- wait_never_satisfied ----------------------------------------------------


def never_stream(fixed: bool):
    s = base("never")
    s.create_buffer("A", 4096)
    s.create_semaphore("T", timeline=True)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A")
    s.queue_submit("q0", ["cb0"], signal=[{"semaphore": "T", "value": 1}])
    s.wait_semaphores({"T": 1 if fixed else 5})
    return s.build()


def test_wait_never_satisfied():
    fs = of_kind(never_stream(False), "wait_never_satisfied")
    assert [f.ops for f in fs] == [("main[1]",)]


def test_wait_never_satisfied_twin():
    assert check(never_stream(True)) == []


# ---- timeline_not_increasing -------------------------------------------------


def timeline_stream(fixed: bool):
    s = base("timeline")
    s.create_buffer("A", 4096)
    s.create_semaphore("T", timeline=True)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A")
    s.allocate_command_buffer("cb1").cmd_pipeline_barrier2("clear", "transfer_write", "clear", "transfer_write") \
        .cmd_fill_buffer("A", 0, 64)
    first, second = (1, 2) if fixed else (2, 1)
    s.queue_submit("q0", ["cb0"], signal=[{"semaphore": "T", "value": first}])
    s.queue_submit("q0", ["cb1"], signal=[{"semaphore": "T", "value": second}])
    s.wait_semaphores({"T": 2})
    return s.build()


def test_timeline_not_increasing():
    fs = of_kind(timeline_stream(False), "timeline_not_increasing")
    assert len(fs) == 1
    assert fs[0].ops == ("main[0]", "main[1]")  # the earlier, higher signal and the offending one


def test_timeline_not_increasing_twin():
    assert check(timeline_stream(True)) == []


def test_timeline_not_increasing_host_signal():
    s = base("timeline-host")
    s.create_semaphore("T", timeline=True, initial=3)
    s.signal_semaphore("T", 3)
    fs = of_kind(s.build(), "timeline_not_increasing")
    assert [f.ops[-1] for f in fs] == ["main[0]"]


# ---- binary_semaphore_misuse -------------------------------------------------


def binary_stream(fixed: bool):
    s = base("binary")
    for b in ("A", "B", "C"):
        s.create_buffer(b, 4096)
        s.allocate_command_buffer(f"cb{b}").cmd_fill_buffer(b)
    s.create_semaphore("S")
    s.queue_submit("q0", ["cbA"], signal=[{"semaphore": "S"}])
    s.queue_submit("q0", ["cbB"], wait=[{"semaphore": "S"}], signal=[{"semaphore": "S"}] if fixed else None)
    s.queue_submit("q0", ["cbC"], wait=[{"semaphore": "S"}], fence="F")
    s.wait_for_fences(["F"])
    return s.build()


def test_binary_semaphore_misuse():
    fs = of_kind(binary_stream(False), "binary_semaphore_misuse")
    assert [f.ops for f in fs] == [("main[2]",)]


def test_binary_semaphore_misuse_twin():
    assert check(binary_stream(True)) == []


def test_binary_semaphore_misuse_signal_twice():
    s = base("binary-signal-twice")
    s.create_buffer("A", 4096)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A")
    s.create_semaphore("S")
    s.queue_submit("q0", ["cb0"], signal=[{"semaphore": "S"}])
    s.queue_submit("q0", [], signal=[{"semaphore": "S"}])
    fs = of_kind(s.build(), "binary_semaphore_misuse")
    assert [f.ops for f in fs] == [("main[0]", "main[1]")]


# ---- fence_misuse ------------------------------------------------------------


def fence_stream(fixed: bool):
    s = base("fence")
    s.create_buffer("A", 4096)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A")
    s.queue_submit("q0", ["cb0"], fence="F")
    s.wait_for_fences(["F"])
    if fixed:
        s.reset_fences(["F"])
    s.queue_submit("q0", ["cb0"], fence="F")
    s.wait_for_fences(["F"])
    return s.build()


def test_fence_misuse():
    fs = of_kind(fence_stream(False), "fence_misuse")
    assert len(fs) == 1
    assert fs[0].ops == ("main[0]", "main[2]")  # the submit holding F and the resubmit
    # the resubmitted command buffer's second fill is ordered after the first by the fence wait
    assert {f.kind for f in check(fence_stream(False))} == {"fence_misuse"}


def test_fence_misuse_twin():
    assert check(fence_stream(True)) == []


def test_fence_misuse_wait_never_submitted():
    s = base("fence-never-submitted")
    s.create_fence("G")
    s.create_buffer("A", 4096)
    s.allocate_command_buffer("cb0").cmd_fill_buffer("A")
    s.queue_submit("q0", ["cb0"], fence="F")
    s.wait_for_fences(["G"])
    assert [(f.kind, f.ops) for f in check(s.build())] == [("fence_misuse", ("main[1]",))]


# ---- ownership_missing -------------------------------------------------------


def ownership_stream(fixed: bool):
    s = base("ownership", devices=TWO_QUEUES)
    s.create_buffer("B", 4096, sharing="exclusive").create_buffer("Out", 4096)
    s.create_semaphore("S")
    transfer = [{"buffer": "B", "src_family": 1, "dst_family": 0}]
    cb0 = s.allocate_command_buffer("cb0").cmd_dispatch("produce", [{"buffer": "B", "access": "write"}],
                                                        label="write B")
    cb1 = s.allocate_command_buffer("cb1")
    if fixed:
        cb0.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "none", "none", buffers=transfer)
        cb1.cmd_pipeline_barrier2("none", "none", "compute_shader", "shader_storage_read", buffers=transfer)
    cb1.cmd_dispatch("transform", [{"buffer": "B", "access": "read"}, {"buffer": "Out", "access": "write"}],
                     label="read B")
    s.queue_submit("q1", ["cb0"], signal=[{"semaphore": "S"}])
    s.queue_submit("q0", ["cb1"], wait=[{"semaphore": "S", "stage": "compute_shader"}])
    s.device_wait_idle()
    return s.build()


def test_ownership_missing():
    (f,) = only(ownership_stream(False), "ownership_missing")
    assert (f.buffer, f.first, f.second) == ("B", "cb0[0]", "cb1[0]")


def test_ownership_missing_twin():
    assert of_kind(ownership_stream(True), "ownership_missing") == []


def host_write_across_owners_stream(reader: str):
    """Bytes [0, 64) of exclusive B written on family 0, [64, 128) on family 1, both made available to the
    host; a host write of all of B, then `reader` copies [64, 128) out."""
    s = base("host-write-across-owners", devices=TWO_QUEUES)
    s.create_buffer("B", 128, memory="host_coherent", sharing="exclusive").create_buffer("Out", 64)
    s.create_fence("G")
    for cb, queue, fence, offset in (("low", "q0", "F", 0), ("high", "q1", "G", 64)):
        s.allocate_command_buffer(cb).cmd_fill_buffer("B", offset, 64).cmd_pipeline_barrier2(
            "clear", "transfer_write", "host", "host_write")
        s.queue_submit(queue, [cb], fence=fence).wait_for_fences([fence])
        s.reset_fences([fence])
    s.host_write("B")
    s.allocate_command_buffer("rd").cmd_copy_buffer("B", "Out", [(64, 0, 64)])
    s.queue_submit(reader, ["rd"], fence="F").wait_for_fences(["F"])
    return s.build()


def test_ownership_missing_after_a_host_write_names_each_byte_s_owner():
    """A host write transfers no ownership: bytes [64, 128) stay family 1's, also where the write covers
    family 0's bytes too (the range map merged them under family 0's)."""
    assert of_kind(host_write_across_owners_stream("q1"), "ownership_missing") == []
    (f,) = of_kind(host_write_across_owners_stream("q0"), "ownership_missing")
    assert (f.first, f.second, f.range) == ("main[6]", "rd[0]", (64, 128))
    assert "owned by family 1" in f.message


# ---- event_race -------------------------------------------------------------


def event_race_stream(fixed: bool):
    """A command buffer sets E at compute_shader; the host resets E (vkResetEvent) after its fence wait, or, unfixed,
    before it: the reset races the device's set (7.5's note)."""
    host = [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"], "fence": "F"},
            {"op": "reset_event", "event": "E"}, {"op": "wait_fences", "fences": ["F"]}]
    return from_dict({"format": "vkverify-stream/1", "name": "event-race", "events": [{"id": "E"}],
                      "fences": [{"id": "F"}],
                      "command_buffers": {"cb0": [{"cmd": "set_event", "event": "E", "stage": ["compute_shader"]}]},
                      "threads": {"main": [host[0], *(host[:0:-1] if fixed else host[1:])]}})


def test_event_race():
    (f,) = only(event_race_stream(False), "event_race")
    assert (f.buffer, f.first, f.second, f.racing) == ("E", "cb0[0]", "main[1]", True)
    assert (f.first_access, f.second_access) == ("event_operation/set_event", "host/reset_event")


def test_event_race_twin():
    assert of_kind(event_race_stream(True), "event_race") == []


# ---- naming -------------------------------------------------------------------


def racing_pair_stream(writer_first: bool):
    """A write on q0 and a read on q1 of one buffer, unordered; the q0 batch waits for a host signal made after
    both submits, so the checker's schedule runs q1's read first."""
    s = base("racing", devices=TWO_QUEUES)
    s.create_buffer("X", 4096, memory="host_coherent").create_buffer("Out", 4096).create_semaphore("H", timeline=True)
    s.allocate_command_buffer("w").cmd_dispatch("produce", ["X"])
    s.allocate_command_buffer("r").cmd_dispatch("transform", ["X", "Out"])
    submits = [lambda: s.queue_submit("q0", ["w"], wait=[{"semaphore": "H", "value": 1}]),
               lambda: s.queue_submit("q1", ["r"])]
    for submit in submits if writer_first else submits[::-1]:
        submit()
    s.signal_semaphore("H", 1)
    return s.build()


def test_racing_pair_is_named_in_stream_order_not_schedule_order():
    """Issue 14: the q1 read runs first in the schedule either way; the finding follows submission order."""
    [writer_first] = [(f.kind, f.first, f.second) for f in of_kind(racing_pair_stream(True), "raw")]
    assert writer_first == ("raw", "w[0]", "r[0]")
    [reader_first] = [(f.kind, f.first, f.second) for f in check(racing_pair_stream(False)) if f.buffer == "X"]
    assert reader_first == ("war", "r[0]", "w[0]")
