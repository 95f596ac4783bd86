"""Small random streams and the comparison of the fast checker with the slow reference.

Shared by tests/test_reference.py (hypothesis, in the suite) and benchmarks/differential.py (long runs
with many more examples). A stream of `streams()` has one host thread and 1-3 queues: dispatches (atomic
bindings and bindings not accessed among them), barriers with random stage and access masks over whole buffers or
byte-precise partial ranges, binary and timeline semaphores (a host-signalled timeline among them, waited before its
signal), host waits and counter reads of timelines, fences and their resets, host writes and reads of coherent and
non-coherent memory with flushes and invalidates, an alias, idle waits and a destroy.
"""

from __future__ import annotations

import json
from dataclasses import replace
from random import Random

from hypothesis import HealthCheck, assume
from hypothesis import strategies as st

from vkverify.check import check
from vkverify.check.explain import explain
from vkverify.check.findings import ACCESS_KINDS
from vkverify.check.readings import DEFAULT, Readings
from vkverify.check.reference import OutsideReference, Reference, joined, references
from vkverify.check.barriers import LAYOUT_TRANSITION, stage_text
from vkverify.check.engine import Checker
from vkverify.check.schedule import Schedule
from vkverify.check.walk import shared_timelines, signals
from vkverify.model import from_dict, ir
from vkverify.model.images import COMPRESSED, FORMATS, PLANES, aspect_names, block_extent
from vkverify.model.refs import format_ref, parse_ref, split_ref
from vkverify.mutations import analyze
from vkverify.mutations import operators as o
from vkverify.mutations.load_bearing import pair_name

STAGES = ["none", "top_of_pipe", "draw_indirect", "compute_shader", "copy", "clear", "transfer", "host",
          "all_transfer", "all_commands", "bottom_of_pipe"]
ACCESSES = ["none", "indirect_command_read", "uniform_read", "shader_read", "shader_write", "shader_storage_read",
            "shader_storage_write", "transfer_read", "transfer_write", "host_read", "host_write", "memory_read",
            "memory_write"]
SEMAPHORE_STAGES = ["all_commands", "compute_shader", "copy", "transfer", "bottom_of_pipe", "top_of_pipe",
                    "draw_indirect"]
# "n" and "wn": a binding bound and not accessed (access none: a shader that only queries it, corpus 208).
SHADERS = {"w": ["write"], "r": ["read"], "rw": ["read", "write"], "x": ["read_write"], "a": ["atomic"],
           "ar": ["atomic", "read"], "n": ["none"], "wn": ["write", "none"]}
SIZE = 64
HOST_VISIBLE = ("host_coherent", "host_cached")
# Hypothesis settings of every differential test: reproducible draws; slow streams and assumed-away ones are fine.
SETTINGS = {"deadline": None, "derandomize": True,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much]}
# Findings about liveness: the reference reads only streams that complete.
NOT_COMPARED = ("deadlock", "wait_never_satisfied", "binary_semaphore_misuse", "timeline_not_increasing")


@st.composite
def _byte(draw, lo: int, hi: int) -> int:
    """A byte offset in [lo, hi]: often at an edge a one-byte bug would move (16-byte boundaries and one byte
    either side, so ranges end one byte short of another or meet it), else any byte."""
    edges = [x + d for x in range(0, hi + 1, 16) for d in (-1, 0, 1) if lo <= x + d <= hi]
    return draw(st.sampled_from(edges) if edges and draw(st.booleans()) else st.integers(lo, hi))


@st.composite
def _range(draw, size: int = SIZE, align: int = 1) -> dict:
    """The whole buffer, or byte-precise [offset, offset + size) (`align`: both multiples of it, as
    vkCmdFillBuffer asks of 4)."""
    if draw(st.booleans()):
        return {}
    lo = draw(_byte(0, size - align)) // align * align
    hi = max(draw(_byte(lo + align, size)) // align * align, lo + align)
    return {"offset": lo, "size": hi - lo}


@st.composite
def _masks(draw, names: list[str], most: int = 2) -> list[str]:
    return draw(st.lists(st.sampled_from(names), max_size=most, unique=True))


@st.composite
def _command(draw, sizes: dict[str, int]) -> dict:
    buffers = sorted(sizes)
    kind = draw(st.sampled_from(["fill", "copy", "dispatch", "dispatch", "indirect", "barrier", "barrier",
                                 "barrier"]))
    if kind == "fill":
        dst = draw(st.sampled_from(buffers))
        return {"cmd": "fill", "dst": dst, **draw(_range(sizes[dst], 4)), "value": 7}
    if kind == "copy":
        src, dst = draw(st.lists(st.sampled_from(buffers), min_size=2, max_size=2, unique=True))
        n = draw(_byte(1, min(sizes[src], sizes[dst])))
        return {"cmd": "copy", "src": src, "dst": dst, "regions": [
            {"src_offset": draw(_byte(0, sizes[src] - n)), "dst_offset": draw(_byte(0, sizes[dst] - n)), "size": n}]}
    if kind in ("dispatch", "indirect"):
        shader = draw(st.sampled_from(sorted(SHADERS)))
        bound = draw(st.lists(st.sampled_from(buffers), min_size=len(SHADERS[shader]),
                              max_size=len(SHADERS[shader]), unique=True))
        cmd = {"cmd": "dispatch", "shader": shader, "bindings": [{"buffer": b, **draw(_range(sizes[b]))}
                                                                    for b in bound]}
        if kind == "indirect":
            cmd.update(cmd="dispatch_indirect", indirect={"buffer": draw(st.sampled_from(buffers)),
                                                          "offset": 16})
        return cmd
    barrier = {"cmd": "barrier", "src_stage": draw(_masks(STAGES)), "src_access": draw(_masks(ACCESSES, 3)),
               "dst_stage": draw(_masks(STAGES)), "dst_access": draw(_masks(ACCESSES, 3))}
    if draw(st.integers(0, 2)) == 0:
        barrier["buffers"] = [{"buffer": b, **draw(_range(sizes[b]))}
                              for b in draw(st.lists(st.sampled_from(buffers), min_size=1, max_size=2, unique=True))]
    return barrier


@st.composite
def streams(draw) -> dict:
    """A one-thread stream as a JSON document (vkverify-stream/1)."""
    n_queues = draw(st.integers(1, 3))
    queues = [f"q{i}" for i in range(n_queues)]
    memories = [draw(st.sampled_from(["device_local", "host_coherent", "host_cached"])) for _ in range(2)]
    buffers = [{"id": f"B{i}", "size": SIZE, "memory": m} for i, m in enumerate(memories)]
    if draw(st.booleans()):
        buffers.append({"id": "Al", "alias_of": draw(st.sampled_from(["B0", "B1"])),
                        "offset": draw(st.sampled_from([0, 1, 31, 32])), "size": 32})
    ids = [b["id"] for b in buffers]
    sizes = {b["id"]: b["size"] for b in buffers}
    visible = [b["id"] for b in buffers if b.get("memory") in HOST_VISIBLE or
               b.get("alias_of") and memories[int(b["alias_of"][1])] in HOST_VISIBLE]
    semaphores = [{"id": f"T{q}", "type": "timeline"} for q in queues] + [{"id": "H", "type": "timeline"}]
    fences = [{"id": f"F{i}", "signaled": draw(st.booleans())} for i in range(2)]
    command_buffers: dict[str, list] = {}
    ops: list[dict] = []
    timeline = {q: 0 for q in queues}
    host_value, host_waited = 0, 0  # H: signalled by the host, waited by queues
    binary: list[str] = []
    submitted: list[str] = []
    destroyed = False
    for _ in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["submit"] * 4 + ["wait_fences", "reset_fences", "wait_semaphores", "counter",
                                                      "counter", "signal_semaphore", "host", "host", "idle",
                                                      "destroy"]))
        if kind == "submit":
            q = draw(st.sampled_from(queues))
            cb = f"cb{len(command_buffers)}"
            command_buffers[cb] = draw(st.lists(_command(sizes), min_size=1, max_size=4))
            op: dict = {"op": "submit", "queue": q, "command_buffers": [cb]}
            waits, signals = [], []
            stage = st.sampled_from(SEMAPHORE_STAGES)
            signalled = [t for t, v in timeline.items() if v and t != q]
            if signalled and draw(st.booleans()):
                t = draw(st.sampled_from(signalled))
                waits.append({"semaphore": f"T{t}", "value": draw(st.integers(1, timeline[t])), "stage": [draw(stage)]})
            if binary and draw(st.booleans()):
                waits.append({"semaphore": binary.pop(0), "stage": [draw(stage)]})
            if draw(st.integers(0, 3)) == 0:
                host_waited = max(host_waited, host_value + 1)
                waits.append({"semaphore": "H", "value": host_value + 1, "stage": [draw(stage)]})
            choice = draw(st.sampled_from(["none", "timeline", "binary", "both"]))
            if choice in ("timeline", "both"):
                timeline[q] += 1
                signals.append({"semaphore": f"T{q}", "value": timeline[q], "stage": [draw(stage)]})
            if choice in ("binary", "both"):
                name = f"S{len(ops)}"
                semaphores.append({"id": name, "type": "binary"})
                binary.append(name)
                signals.append({"semaphore": name, "stage": [draw(stage)]})
            if waits:
                op["wait"] = waits
            if signals:
                op["signal"] = signals
            if draw(st.booleans()):
                op["fence"] = draw(st.sampled_from(["F0", "F1"]))
                submitted.append(op["fence"])
            ops.append(op)
        elif kind == "wait_fences" and submitted:
            ops.append({"op": "wait_fences", "fences": [draw(st.sampled_from(submitted))]})
        elif kind == "reset_fences":
            ops.append({"op": "reset_fences", "fences": [draw(st.sampled_from(["F0", "F1"]))]})
        elif kind in ("wait_semaphores", "counter") and any(timeline.values()):
            t = draw(st.sampled_from([t for t, v in timeline.items() if v]))
            ops.append(_host_wait(kind, f"T{t}", draw(st.integers(1, timeline[t]))))
        elif kind == "signal_semaphore":
            host_value += 1
            ops.append({"op": "signal_semaphore", "semaphore": "H", "value": host_value})
        elif kind == "host" and visible:
            what = draw(st.sampled_from(["host_write", "host_write", "host_read", "flush", "invalidate"]))
            ops.append({"op": what, "buffer": draw(st.sampled_from(visible)), **draw(_range(32))})
        elif kind == "idle":
            ops.append(_idle_wait(draw, queues))
        elif kind == "destroy" and not destroyed:
            destroyed = True
            ops.append({"op": "destroy", "buffer": draw(st.sampled_from(ids))})
    if host_waited > host_value:
        ops.append({"op": "signal_semaphore", "semaphore": "H", "value": host_waited})
    return {"format": "vkverify-stream/1", "name": "differential",
            "devices": [{"id": "gpu0", "queues": [{"id": q, "family": 0} for q in queues]}],
            "buffers": buffers, "semaphores": semaphores, "fences": fences,
            "shaders": {k: {"bindings": v} for k, v in SHADERS.items()},
            "command_buffers": command_buffers, "threads": {"main": ops}}


def _host_wait(kind: str, semaphore: str, value: int) -> dict:
    """A host wait for `value` of a timeline: vkWaitSemaphores, or ("counter") a vkGetSemaphoreCounterValue that
    read it, as a polling program's last read does (docs/format.md: a wait that returned at once)."""
    if kind == "counter":
        return {"op": "get_semaphore_counter_value", "semaphore": semaphore, "value": value}
    return {"op": "wait_semaphores", "waits": [{"semaphore": semaphore, "value": value}]}


@st.composite
def resubmitting_streams(draw) -> dict:
    """A stream of `streams()` whose command buffers are each also submitted again, plainly (no semaphores, no
    fence), to a drawn queue at drawn later points, and without its destroy (with one the checker never replays
    a command buffer: Checker.run_command_buffer)."""
    doc = draw(streams())
    queues = [q["id"] for q in doc["devices"][0]["queues"]]
    ops = [op for op in doc["threads"]["main"] if op["op"] != "destroy"]
    for op in [op for op in ops if op["op"] == "submit"]:
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(next(i for i, o in enumerate(ops) if o is op) + 1, len(ops)))
            ops.insert(at, {"op": "submit", "queue": draw(st.sampled_from(queues)),
                            "command_buffers": op["command_buffers"]})
    return {**doc, "threads": {"main": ops}}


@st.composite
def batched_streams(draw) -> dict:
    """A stream of `streams()` in which adjacent submits to one queue are one submit: of two batches
    (spec 7.2: submission order runs through them), or of one batch with both command buffers, both batches'
    waits and signals (where the second waits for nothing the first signals)."""
    doc = draw(streams())
    ops: list[dict] = []
    for op in doc["threads"]["main"]:
        last = ops[-1] if ops else None
        if op["op"] != "submit" or not last or last["op"] != "submit" or last["queue"] != op["queue"] \
                or "fence" in last:
            ops.append(op)
            continue
        first = last.get("batches") or [{k: last[k] for k in ("wait", "command_buffers", "signal") if k in last}]
        second = {k: op[k] for k in ("wait", "command_buffers", "signal") if k in op}
        signalled = {x["semaphore"] for x in first[-1].get("signal", [])}
        if not signalled & {w["semaphore"] for w in second.get("wait", [])} and draw(st.booleans()):
            merged = {k: first[-1].get(k, []) + second.get(k, []) for k in ("wait", "command_buffers", "signal")}
            batches = first[:-1] + [{k: v for k, v in merged.items() if v}]
        else:
            batches = first + [second]
        ops[-1] = {"op": "submit", "queue": op["queue"], "batches": batches,
                   **({"fence": op["fence"]} if "fence" in op else {})}
    return {**doc, "threads": {"main": ops}}


def _idle_wait(draw, queues: list[str]) -> dict:
    """vkQueueWaitIdle of one of `queues`, or vkDeviceWaitIdle (a plain function of the caller's `draw`: the drawn
    streams stay those of the expression it replaced)."""
    return draw(st.sampled_from([{"op": "queue_wait_idle", "queue": draw(st.sampled_from(queues))},
                                 {"op": "device_wait_idle"}]))


@st.composite
def _host_access(draw, visible: list[str], kinds: list[str]) -> dict:
    return {"op": draw(st.sampled_from(kinds)), "buffer": draw(st.sampled_from(visible)), **draw(_range(32))}


# The barrier a readback ends with (docs/format.md rule 7): device writes made visible to host reads.
TO_HOST = {"cmd": "barrier", "src_stage": ["all_commands"], "src_access": ["memory_write"], "dst_stage": ["host"],
           "dst_access": ["host_read"]}


@st.composite
def _thread_submit(draw, doc: dict, queue: str, waits: dict[str, int], signal: str | None,
                   values: dict[str, int]) -> dict:
    """A submit of 1-3 commands (now and then a readback's barrier to the host after them) to `queue`, the
    thread's own (now and then another), perhaps waiting on the device for one of `waits` (semaphore -> the highest
    value signalled) and signalling `signal` one higher."""
    sizes = {b["id"]: b["size"] for b in doc["buffers"]}
    cb = f"cb{len(doc['command_buffers'])}"
    doc["command_buffers"][cb] = draw(st.lists(_command(sizes), min_size=1, max_size=3)) + \
        [TO_HOST] * (draw(st.integers(0, 2)) == 0)
    queues = [q["id"] for q in doc["devices"][0]["queues"]]
    stage = st.sampled_from(["all_commands"] * len(SEMAPHORE_STAGES) + SEMAPHORE_STAGES)
    op: dict = {"op": "submit", "queue": queue if draw(st.integers(0, 4)) else draw(st.sampled_from(queues)),
                "command_buffers": [cb]}
    ready = sorted(k for k, v in waits.items() if v)
    if ready and draw(st.booleans()):
        sem = draw(st.sampled_from(ready))
        op["wait"] = [{"semaphore": sem, "value": draw(st.sampled_from([waits[sem]]) | st.integers(1, waits[sem])),
                       "stage": [draw(stage)]}]
    if signal is not None and draw(st.integers(0, 2)):
        values[signal] += 1
        op["signal"] = [{"semaphore": signal, "value": values[signal], "stage": [draw(stage)]}]
    return op


@st.composite
def thread_streams(draw) -> dict:
    """A stream of two host threads in the patterns users write. A producer `up` uploads (host writes and
    flushes, a submit of copies, fills or dispatches on its queue) and signals timeline T, by its submits or by
    vkSignalSemaphore, perhaps with fence F0 on one submit; a consumer `use` waits for it (a host wait on T or a
    counter read of T, a queue wait on T, F0 waited, an idle wait), or forgets to, then reads (host reads and
    invalidates, submits) and signals U on the device or H from the host; then the producer may wait for U or H (on
    the host, a counter read too, or the device), or not, and write again. Each thread has its own queue, or the two
    share q0; byte-precise ranges and memories as in `streams()`; a fence F1 and a destroy of the consumer's own."""
    shared = draw(st.booleans())
    queues = ["q0", "q1", "q2"]
    memories = [draw(st.sampled_from(["device_local", "host_coherent", "host_cached"])) for _ in range(2)]
    buffers = [{"id": f"B{i}", "size": SIZE, "memory": m} for i, m in enumerate(memories)]
    if draw(st.booleans()):
        buffers.append({"id": "Al", "alias_of": draw(st.sampled_from(["B0", "B1"])),
                        "offset": draw(st.sampled_from([0, 1, 31, 32])), "size": 32})
    visible = [b["id"] for b in buffers if b.get("memory") in HOST_VISIBLE or
               b.get("alias_of") and memories[int(b["alias_of"][1])] in HOST_VISIBLE]
    doc = {"format": "vkverify-stream/1", "name": "threads",
           "devices": [{"id": "gpu0", "queues": [{"id": q, "family": 0} for q in queues]}],
           "buffers": buffers, "semaphores": [{"id": s, "type": "timeline"} for s in ("T", "U", "H")],
           "fences": [{"id": "F0", "signaled": False}, {"id": "F1", "signaled": draw(st.booleans())}],
           "shaders": {k: {"bindings": v} for k, v in SHADERS.items()}, "command_buffers": {}}
    up, use = [], []  # the two threads' ops; up's queue is q0, use's q1 or q0
    own = "q0" if shared else "q1"
    values = {"T": 0, "U": 0, "H": 0}
    host = ["host_write", "host_write", "flush"] if visible else []
    for _ in range(draw(st.integers(1, 4))):  # the producer
        kind = draw(st.sampled_from(["submit", "submit", "signal", "idle"] + ["host"] * (len(host) > 0) * 2))
        if kind == "submit":
            op = draw(_thread_submit(doc, "q0", {}, "T", values))
            if not any(o.get("fence") for o in up) and draw(st.integers(0, 3)) == 0:
                op["fence"] = "F0"
            up.append(op)
        elif kind == "signal":
            values["T"] += 1
            up.append({"op": "signal_semaphore", "semaphore": "T", "value": values["T"]})
        elif kind == "idle":
            up.append({"op": "queue_wait_idle", "queue": "q0"})
        else:
            up.append(draw(_host_access(visible, host)))
    fenced = any(o.get("fence") == "F0" for o in up)
    destroyed = False
    for _ in range(draw(st.integers(1, 4))):  # the consumer
        kind = draw(st.sampled_from(["wait", "wait", "counter", "submit", "submit", "host", "host", "signal", "idle",
                                     "fence", "destroy"]))
        if kind == "counter" and values["T"]:  # a polling consumer's last read of T
            use.append(_host_wait(kind, "T", draw(st.sampled_from([values["T"]]) | st.integers(1, values["T"]))))
        elif kind == "wait" and (values["T"] or fenced):
            if fenced and (not values["T"] or draw(st.booleans())):
                use.append({"op": "wait_fences", "fences": ["F0"]})
            else:
                use.append(_host_wait("wait_semaphores", "T",
                                      draw(st.sampled_from([values["T"]]) | st.integers(1, values["T"]))))
        elif kind == "submit":
            op = draw(_thread_submit(doc, own, {"T": values["T"]}, "U", values))
            if draw(st.integers(0, 3)) == 0:
                op["fence"] = "F1"
            use.append(op)
        elif kind == "host" and visible:
            use.append(draw(_host_access(visible, ["host_read", "host_read", "invalidate", "host_write"])))
        elif kind == "signal":
            values["H"] += 1
            use.append({"op": "signal_semaphore", "semaphore": "H", "value": values["H"]})
        elif kind == "idle":
            use.append(_idle_wait(draw, queues))
        elif kind == "fence" and any(o.get("fence") == "F1" for o in use):
            use.append({"op": draw(st.sampled_from(["wait_fences", "reset_fences"])), "fences": ["F1"]})
        elif kind == "destroy" and not destroyed:
            destroyed = True
            use.append({"op": "destroy", "buffer": draw(st.sampled_from([b["id"] for b in buffers]))})
    for _ in range(draw(st.integers(0, 2))):  # the producer again, after the consumer or not
        kind = draw(st.sampled_from(["wait", "submit", "host"]))
        ready = sorted(k for k in ("U", "H") if values[k])
        if kind == "wait" and ready:
            sem = draw(st.sampled_from(ready))
            up.append(_host_wait(draw(st.sampled_from(["wait_semaphores", "counter"])), sem,
                                 draw(st.integers(1, values[sem]))))
        elif kind == "submit":
            up.append(draw(_thread_submit(doc, "q0", {"U": values["U"], "H": values["H"]}, "T", values)))
        elif kind == "host" and visible:
            up.append(draw(_host_access(visible, ["host_write", "host_read", "flush"])))
    return {**doc, "threads": {name: ops for name, ops in (("up", up), ("use", use)) if ops}}


@st.composite
def shared_timeline_streams(draw) -> dict:
    """A stream of two or three host threads that signal the same timelines, as engines hand one frame timeline
    between a recording, an upload and a compute thread. Each signal of T or U, by a thread's submit or by
    vkSignalSemaphore, is one higher than the last and waits first for the last one where nothing else orders the
    two (another thread's, or another queue's, or a submit's before a host signal): on the host (vkWaitSemaphores or
    a counter read that saw it) or in the submit's own device wait, at a drawn stage. Queue q<i> belongs to thread
    i: its submits wait and signal; another thread's submits to it do neither, so that the threads' calls block in
    no interleaving (docs/format.md, "Several host threads": a queue's submission order is any interleaving of
    them) but through an idle wait (about 3 streams in 100, a deadlock of some interleaving: a queue idle waited
    for with a batch on it that waits for a signal the waiting thread makes later). Host waits and counter reads of
    any value signalled so far, idle waits, host accesses, byte-precise ranges and memories as in `streams()`."""
    names = ["a", "b", "c"][:draw(st.integers(2, 3))]
    queues = [f"q{i}" for i in range(len(names))]
    memories = [draw(st.sampled_from(["device_local", "host_coherent", "host_cached"])) for _ in range(2)]
    buffers = [{"id": f"B{i}", "size": SIZE, "memory": m} for i, m in enumerate(memories)]
    visible = [b["id"] for b in buffers if b["memory"] in HOST_VISIBLE]
    sizes = {b["id"]: b["size"] for b in buffers}
    command_buffers: dict[str, list] = {}
    threads: dict[str, list] = {name: [] for name in names}
    values = {"T": 0, "U": 0}
    last: dict[str, tuple[str, str | None]] = {}  # timeline -> the thread and queue (None: the host) of its last signal
    stage = st.sampled_from(["all_commands"] * 3 + SEMAPHORE_STAGES)
    for _ in range(draw(st.integers(3, 10))):
        i = draw(st.integers(0, len(names) - 1))
        thread, ops = names[i], threads[names[i]]
        kind = draw(st.sampled_from(["submit", "submit", "submit", "signal", "wait", "counter", "idle"]
                                    + ["host"] * bool(visible)))
        signalled = sorted(t for t, v in values.items() if v)
        if kind == "submit":
            queue = queues[i] if draw(st.integers(0, 3)) else draw(st.sampled_from(queues))
            owned = queue == queues[i]
            cb = f"cb{len(command_buffers)}"
            command_buffers[cb] = draw(st.lists(_command(sizes), min_size=1, max_size=3))
            op: dict = {"op": "submit", "queue": queue, "command_buffers": [cb]}
            waits, signals = [], []
            if owned and signalled and draw(st.booleans()):
                t = draw(st.sampled_from(signalled))
                waits.append({"semaphore": t, "value": draw(st.integers(1, values[t])), "stage": [draw(stage)]})
            if owned and draw(st.booleans()):
                t = draw(st.sampled_from(sorted(values)))
                if t in last and last[t] != (thread, queue) and last[t] != (thread, None):
                    waits.append({"semaphore": t, "value": values[t], "stage": [draw(stage)]})
                values[t] += draw(st.integers(1, 2))
                last[t] = (thread, queue)
                signals.append({"semaphore": t, "value": values[t], "stage": [draw(stage)]})
            if waits:
                op["wait"] = waits
            if signals:
                op["signal"] = signals
            ops.append(op)
        elif kind == "signal":
            t = draw(st.sampled_from(sorted(values)))
            if t in last and last[t] != (thread, None):
                ops.append(_host_wait(draw(st.sampled_from(["wait_semaphores", "counter"])), t, values[t]))
            values[t] += draw(st.integers(1, 2))
            last[t] = (thread, None)
            ops.append({"op": "signal_semaphore", "semaphore": t, "value": values[t]})
        elif kind in ("wait", "counter") and signalled:
            t = draw(st.sampled_from(signalled))
            ops.append(_host_wait("wait_semaphores" if kind == "wait" else kind, t, draw(st.integers(1, values[t]))))
        elif kind == "host":
            ops.append(draw(_host_access(visible, ["host_write", "host_read", "flush", "invalidate"])))
        elif kind == "idle":
            ops.append(_idle_wait(draw, queues))
    return {"format": "vkverify-stream/1", "name": "shared-timelines",
            "devices": [{"id": "gpu0", "queues": [{"id": q, "family": 0} for q in queues]}],
            "buffers": buffers, "semaphores": [{"id": t, "type": "timeline"} for t in sorted(values)],
            "shaders": {k: {"bindings": v} for k, v in SHADERS.items()}, "command_buffers": command_buffers,
            "threads": {name: ops for name, ops in threads.items() if ops}}


@st.composite
def imported_semaphore_streams(draw) -> dict:
    """thread_streams() where a drawn part of the waits and signals of a timeline name a second semaphore that
    imports its payload (docs/format.md, "semaphores": `payload_of`): two handles of one payload, so the stream means
    what thread_streams() drew (imported_semaphore_disagreements)."""
    doc = draw(thread_streams())
    semaphore = draw(st.sampled_from([s["id"] for s in doc["semaphores"]]))
    imported = f"{semaphore}_imported"

    def rename(x):
        if isinstance(x, list):
            return [rename(y) for y in x]
        if not isinstance(x, dict):
            return x
        out = {k: rename(v) for k, v in x.items()}
        if out.get("semaphore") == semaphore and draw(st.booleans()):
            out["semaphore"] = imported
        return out
    return {**doc, "semaphores": [*doc["semaphores"], {"id": imported, "type": "timeline", "payload_of": semaphore}],
            "threads": rename(doc["threads"])}


def imported_semaphore_disagreements(doc: dict) -> list[str]:
    """How the checker's findings on `doc` (imported_semaphore_streams) differ from its findings on the stream with
    every imported handle named by its payload's semaphore, then how they differ from the reference's."""
    payloads = {s["id"]: s["payload_of"] for s in doc["semaphores"] if "payload_of" in s}
    plain = json.loads(json.dumps(doc), object_hook=lambda x: {**x, "semaphore": payloads.get(x["semaphore"],
                                                                                           x["semaphore"])}
                       if isinstance(x.get("semaphore"), str) else x)
    plain["semaphores"] = [s for s in plain["semaphores"] if "payload_of" not in s]
    named = {(f.kind, f.first, f.second, f.ops) for f in check(from_dict(doc))}
    unnamed = {(f.kind, f.first, f.second, f.ops) for f in check(from_dict(plain))}
    return [f"with the imported handle only: {f}" for f in sorted(named - unnamed, key=str)] + \
        [f"without it only: {f}" for f in sorted(unnamed - named, key=str)] + disagreements(doc)


def variant_disagreements(doc: dict, **variant) -> list[str]:
    """How the checker's findings with `variant` (Checker's keywords: replay=False, quick=False) differ from its
    own (empty: the same, in order)."""
    stream = from_dict(doc)
    shared = shared_timelines(stream)
    own, other = Schedule(Checker(stream), shared).run(), Schedule(Checker(stream, **variant), shared).run()
    return [] if own == other else [(f"own {[(f.kind, f.first, f.second) for f in own]}, {variant} "
                                     f"{[(f.kind, f.first, f.second) for f in other]}")]


# The patterns issue 25 found the checker wrong on, which `streams()` rarely or never draws.
PATTERNS = ("uniform", "chain", "signal_order", "host_barrier", "invalidate", "ownership", "host_after_submit")
DEVICE_WRITES = {"dispatch": {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": "B"}]},
                 # C bound beside B and not accessed: a write of B only (corpus 208)
                 "dispatch_bound": {"cmd": "dispatch", "shader": "wn", "bindings": [{"buffer": "B"}, {"buffer": "C"}]},
                 "fill": {"cmd": "fill", "dst": "B", "value": 7},
                 "copy": {"cmd": "copy", "src": "S", "dst": "B"}}
WRITE_STAGE = {"dispatch": "compute_shader", "fill": "clear", "copy": "copy"}


# Masks that chain and make writes available and visible often: the chain pattern needs three in a row.
CHAIN_STAGES = ["copy", "clear", "compute_shader", "transfer", "all_commands"]
CHAIN_ACCESSES = ["memory_write", "memory_read", "shader_write", "transfer_write", "shader_read", "uniform_read"]


def _barrier(draw, src_stage: list[str] | None = None, dst_stage: list[str] | None = None, narrow: bool = False,
             **fields) -> dict:
    """A barrier with drawn masks where not given (`narrow`: of CHAIN_STAGES and CHAIN_ACCESSES); `fields`: its
    buffers and the like."""
    stages, accesses = (CHAIN_STAGES, CHAIN_ACCESSES) if narrow else (STAGES, ACCESSES)
    return {"cmd": "barrier", "src_stage": src_stage if src_stage is not None else draw(_masks(stages)),
            "src_access": draw(_masks(accesses, 3)), "dst_stage": dst_stage if dst_stage is not None else
            draw(_masks(stages)), "dst_access": draw(_masks(accesses, 3)), **fields}


def _access(draw, buffer: str = "B", uniform: bool = True) -> dict:
    """A device access to `buffer`: a read (as a uniform buffer too), a write, a fill or a copy from it; or a dispatch
    that binds it and does not access it (access none)."""
    kind = draw(st.sampled_from(["read", "write", "fill", "copy", "none"] + ["uniform"] * uniform))
    if kind in ("read", "write", "uniform", "none"):
        return {"cmd": "dispatch", "shader": {"write": "w", "none": "n"}.get(kind, "r"),
                "bindings": [{"buffer": buffer, **({"access": kind} if kind in ("uniform", "none") else {})}]}
    return {"cmd": "fill", "dst": buffer, "value": 1} if kind == "fill" else \
        {"cmd": "copy", "src": buffer, "dst": "C"}


@st.composite
def pattern_streams(draw) -> dict:
    """A stream of one of PATTERNS with drawn stages and access masks (each a corpus pair 145-158 in general form):
    a write then a uniform read across a barrier (uniform); a global barrier, a buffer barrier on another buffer
    or part of B, a global barrier (chain); a read signalled on q0, a wait of drawn stage on q1 whose batch
    signals, a later batch's signal, a wait on it before an overwrite (signal_order); a write signalled, waited on
    another queue, a barrier to the host there, an idle wait or fence, a host read (host_barrier); a write of
    host_cached memory, invalidates before and after a later submit's host barrier, a host read (invalidate); an
    exclusive buffer released on family 1 and acquired on family 0 with drawn stages (ownership); a host write
    after the submit, a host signal, a barrier with host in its source (host_after_submit)."""
    pattern = draw(st.sampled_from(PATTERNS))
    stage = st.sampled_from(SEMAPHORE_STAGES)
    memory = "host_cached" if pattern == "invalidate" else "host_coherent" if pattern in (
        "host_barrier", "host_after_submit") else draw(st.sampled_from(["device_local", "host_coherent"]))
    sharing = {"sharing": "exclusive"} if pattern == "ownership" else {}
    buffers = [{"id": "B", "size": SIZE, "memory": memory, **sharing},
               {"id": "C", "size": SIZE, "memory": "device_local"},
               {"id": "S", "size": SIZE, "memory": "host_coherent"}]
    families, cbs = [0, 0], {}
    write = DEVICE_WRITES[draw(st.sampled_from(sorted(DEVICE_WRITES)))]
    if pattern == "uniform":
        cbs["cb0"] = [write, _barrier(draw), _access(draw)]
        ops = [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}, {"op": "device_wait_idle"}]
    elif pattern == "chain":
        middle = {"buffer": draw(st.sampled_from(["C", "B"])), **draw(_range())}
        if draw(st.booleans()):  # availability, a middle barrier of drawn stages, visibility: chained or not
            one = st.sampled_from(CHAIN_STAGES)
            barriers = [{"cmd": "barrier", "src_stage": [WRITE_STAGE[write["cmd"]]], "src_access": ["memory_write"],
                         "dst_stage": [draw(one)], "dst_access": []},
                        {"cmd": "barrier", "src_stage": [draw(one)], "src_access": [], "dst_stage": [draw(one)],
                         "dst_access": [], "buffers": [middle]},
                        {"cmd": "barrier", "src_stage": [draw(one)], "src_access": [], "dst_stage": ["all_commands"],
                         "dst_access": ["memory_read", "memory_write"]}]
        else:
            barriers = [_barrier(draw, narrow=True), _barrier(draw, narrow=True, buffers=[middle]),
                        _barrier(draw, narrow=True)]
        cbs["cb0"] = [write, *barriers, _access(draw)]
        ops = [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}, {"op": "device_wait_idle"}]
    elif pattern == "signal_order":
        cbs.update(init=[write], r=[_access(draw, uniform=False)], w=[_access(draw, uniform=False)])
        later = {"signal": [{"semaphore": "U", "value": 2, "stage": [draw(stage)]}]}
        first = {"wait": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}],
                 "signal": [{"semaphore": "U", "value": 1, "stage": [draw(stage)]}]}
        if draw(st.booleans()):
            first["command_buffers"] = ["init"]
        q1 = [{"op": "submit", "queue": "q1", "batches": [first, later]}] if draw(st.booleans()) else \
            [{"op": "submit", "queue": "q1", **first}, {"op": "submit", "queue": "q1", **later}]
        ops = [{"op": "submit", "queue": "q0", "command_buffers": ["init"]}, {"op": "queue_wait_idle", "queue": "q0"},
               {"op": "submit", "queue": "q0", "command_buffers": ["r"],
                "signal": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}]}, *q1,
               {"op": "submit", "queue": draw(st.sampled_from(["q0", "q1"])), "command_buffers": ["w"],
                "wait": [{"semaphore": "U", "value": draw(st.integers(1, 2)), "stage": [draw(stage)]}]},
               {"op": "device_wait_idle"}]
    elif pattern == "host_barrier":
        to_host = _barrier(draw, dst_stage=draw(st.sampled_from([["host"], ["host", "compute_shader"]])))
        cbs.update(w=[write], h=[to_host] + [_access(draw)] * draw(st.booleans()))
        ops = [{"op": "submit", "queue": "q0", "command_buffers": ["w"],
                "signal": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}]},
               {"op": "submit", "queue": "q1", "command_buffers": ["h"],
                "wait": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}]},
               draw(st.sampled_from([{"op": "queue_wait_idle", "queue": "q1"}, {"op": "device_wait_idle"}])),
               {"op": "host_read", "buffer": "B", **draw(_range(32))}]
    elif pattern == "invalidate":
        invalidate = {"op": "invalidate", "buffer": "B", **draw(_range())}
        cbs.update(w=[write], h=[_barrier(draw, dst_stage=["host"])])
        steps = [{"op": "submit", "queue": "q0", "command_buffers": ["w"]}, {"op": "queue_wait_idle", "queue": "q0"},
                 {"op": "submit", "queue": draw(st.sampled_from(["q0", "q1"])), "command_buffers": ["h"]},
                 {"op": "device_wait_idle"}]
        at = sorted(draw(st.lists(st.integers(1, len(steps)), min_size=1, max_size=2)), reverse=True)
        ops = steps
        for i in at:
            ops = ops[:i] + [invalidate] + ops[i:]
        ops.append({"op": "host_read", "buffer": "B", **draw(_range(32))})
    elif pattern == "ownership":
        families = [0, 1]
        transfer = {"buffer": "B", "src_family": 1, "dst_family": 0, **draw(_range())}
        cbs.update(w=[write, _barrier(draw, buffers=[transfer])],
                   a=[_barrier(draw, buffers=[transfer])] + [_barrier(draw)] * draw(st.booleans()) + [_access(draw)])
        ops = [{"op": "submit", "queue": "q1", "command_buffers": ["w"],
                "signal": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}]},
               {"op": "submit", "queue": "q0", "command_buffers": ["a"],
                "wait": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}]}, {"op": "device_wait_idle"}]
    else:  # host_after_submit
        cbs["cb0"] = [_barrier(draw, src_stage=draw(st.sampled_from([["host"], ["host", "copy"], ["compute_shader"]]))),
                      _access(draw)]
        ops = [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"],
                "wait": [{"semaphore": "T", "value": 1, "stage": [draw(stage)]}]},
               {"op": "host_write", "buffer": "B", **draw(_range(32))},
               {"op": "signal_semaphore", "semaphore": "T", "value": 1}, {"op": "device_wait_idle"}]
    return {"format": "vkverify-stream/1", "name": pattern,
            "devices": [{"id": "gpu0", "queues": [{"id": f"q{i}", "family": f} for i, f in enumerate(families)]}],
            "buffers": buffers, "semaphores": [{"id": x, "type": "timeline"} for x in ("T", "U")],
            "shaders": {k: {"bindings": v} for k, v in SHADERS.items()},
            "command_buffers": cbs, "threads": {"main": ops}}


IMAGE_EXTENT = (8, 4)  # texels; 4 bytes each, two levels, two layers: 2 * (128 + 32) bytes an image
LAYOUTS = ["undefined", "general", "transfer_dst_optimal", "shader_read_only_optimal"]


@st.composite
def _subresources(draw, single_level: bool = False) -> dict:
    """A subresource range of an IMAGE_EXTENT image of two levels and two layers (omitted fields: the rest)."""
    level = draw(st.integers(0, 1))
    layer = draw(st.integers(0, 1))
    out = {"base_mip_level": level, "base_array_layer": layer}
    if single_level or draw(st.booleans()):
        out["level_count"] = 1
    if draw(st.booleans()):
        out["layer_count"] = 1
    return out


@st.composite
def _box(draw) -> dict:
    """A box of texels of one level of one or two layers, often a whole level, else any part of it."""
    level = draw(st.integers(0, 1))
    w, h = (max(1, d >> level) for d in IMAGE_EXTENT)
    layer = draw(st.integers(0, 1))
    out = {"mip_level": level, "base_array_layer": layer, "layer_count": draw(st.integers(1, 2 - layer))}
    if draw(st.booleans()):
        return {**out, "image_extent": [w, h]}
    x, y = draw(st.integers(0, w - 1)), draw(st.integers(0, h - 1))
    return {**out, "image_offset": [x, y], "image_extent": [draw(st.integers(1, w - x)), draw(st.integers(1, h - y))]}


@st.composite
def _image_command(draw) -> dict:
    """A command on images I and J as engines record them: uploads and readbacks of boxes, copies between the images,
    clears, dispatches binding a storage image (or binding it and not accessing it), and barriers (global, buffer,
    image: with drawn masks, subresource ranges and layouts, a transition or not)."""
    kind = draw(st.sampled_from(["upload", "readback", "copy_image", "clear", "dispatch", "image_barrier",
                                 "image_barrier", "barrier"]))
    image = draw(st.sampled_from(["I", "J"]))
    if kind == "upload":
        return {"cmd": "copy_buffer_to_image", "src": "S", "dst": image, "regions": [draw(_box())]}
    if kind == "readback":
        return {"cmd": "copy_image_to_buffer", "src": image, "dst": "B", "regions": [draw(_box())]}
    if kind == "copy_image":
        src, dst = draw(_box()), draw(_box())
        extent = [min(a, b) for a, b in zip(src["image_extent"], dst["image_extent"])]
        layers = min(src["layer_count"], dst["layer_count"])
        return {"cmd": "copy_image", "src": "I", "dst": draw(st.sampled_from(["I", "J"])), "regions": [{
            "src_mip_level": src["mip_level"], "src_base_array_layer": src["base_array_layer"],
            "dst_mip_level": dst["mip_level"], "dst_base_array_layer": dst["base_array_layer"], "layer_count": layers,
            "src_offset": src.get("image_offset", [0, 0]), "dst_offset": dst.get("image_offset", [0, 0]),
            "extent": extent}]}
    if kind == "clear":
        return {"cmd": "clear_color_image", "image": image, "ranges": [draw(_subresources())]}
    if kind == "dispatch":
        return {"cmd": "dispatch", "shader": draw(st.sampled_from(["r", "w", "x", "n"])),
                "bindings": [{"image": image, **draw(_subresources(single_level=True))}]}
    if kind == "barrier":
        return _barrier(draw, narrow=True, **({"buffers": [{"buffer": "B", **draw(_range())}]}
                                              if draw(st.booleans()) else {}))
    return _image_barrier(draw, image)


# Image barriers' stages: those that chain (CHAIN_STAGES), and those that hold every layout transition in one scope
# and nothing in the other (7.6.1), so that which scopes hold a transition decides the verdict.
IMAGE_BARRIER_STAGES = CHAIN_STAGES + ["bottom_of_pipe", "top_of_pipe"]


def _image_barrier(draw, image: str, src_stage: list[str] | None = None, subresources: dict | None = None) -> dict:
    """A barrier with one image barrier over a drawn subresource range of `image` (`subresources` where given), a
    layout transition or not."""
    def stages() -> list[str]:  # often none: then only a scope that holds every transition orders it
        return [] if draw(st.integers(0, 2)) == 0 else draw(_masks(IMAGE_BARRIER_STAGES))

    old, new = draw(st.sampled_from(LAYOUTS)), draw(st.sampled_from(LAYOUTS[1:]))
    subresources = draw(_subresources()) if subresources is None else subresources
    return _barrier(draw, src_stage if src_stage is not None else stages(), stages(), narrow=True,
                    images=[{"image": image, **subresources, "old_layout": old,
                             "new_layout": draw(st.sampled_from([old, new])) if old != "undefined" else new}])


@st.composite
def image_streams(draw) -> dict:
    """Images I and J (IMAGE_EXTENT, two levels, two layers) and buffers: one or two command buffers of image
    commands (_image_command), often with an event whose wait has an image barrier (7.7.4 in a wait's dependency);
    two are submitted on one queue or two, now and then joined by a semaphore of drawn stage, often all_commands
    (which holds every layout transition, 7.6)."""
    cbs = {f"cb{i}": draw(st.lists(_image_command(), min_size=2, max_size=6)) for i in range(draw(st.integers(1, 2)))}
    if draw(st.booleans()):  # vkCmdSetEvent, then vkCmdWaitEvents of the same stage mask with an image barrier
        cb = cbs[draw(st.sampled_from(sorted(cbs)))]
        at = draw(st.integers(0, len(cb)))
        stage = draw(st.lists(st.sampled_from(IMAGE_BARRIER_STAGES), min_size=1, max_size=2, unique=True))
        cb.insert(at, {"cmd": "set_event", "event": "E", "stage": stage})
        wait = _image_barrier(draw, draw(st.sampled_from(["I", "J"])), src_stage=stage)
        cb.insert(draw(st.integers(at + 1, len(cb))), {**wait, "cmd": "wait_events", "events": ["E"]})
    joined = len(cbs) == 2 and draw(st.booleans())
    queue = "q1" if joined and draw(st.booleans()) else "q0"
    stages = st.sampled_from(["all_commands"] * 3 + SEMAPHORE_STAGES)
    ops = [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"],
            **({"signal": [{"semaphore": "T", "value": 1, "stage": [draw(stages)]}]} if joined else {})}]
    if len(cbs) == 2:
        ops.append({"op": "submit", "queue": queue, "command_buffers": ["cb1"],
                    **({"wait": [{"semaphore": "T", "value": 1, "stage": [draw(stages)]}]} if joined else {})})
    ops.append({"op": "device_wait_idle"})
    image = {"extent": list(IMAGE_EXTENT), "format": "r8g8b8a8_unorm", "mip_levels": 2, "array_layers": 2}
    return {"format": "vkverify-stream/1", "name": "images",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 0}]}],
            "buffers": [{"id": "B", "size": SIZE * 4, "memory": "device_local"},
                        {"id": "S", "size": SIZE * 4, "memory": "host_coherent"}],
            "images": [{"id": i, **image, "memory": draw(st.sampled_from(["device_local", "host_coherent"]))}
                       for i in ("I", "J")],
            "semaphores": [{"id": "T", "type": "timeline"}], "events": [{"id": "E"}],
            "shaders": {k: {"bindings": v} for k, v in SHADERS.items()},
            "command_buffers": cbs, "threads": {"main": ops}}


# ---- image features: blits, sampled bindings, compressed, multi-planar and 2D-array-compatible 3D images ---------

# The image P a stream of image_feature_streams centres on, by kind: its formats, extent, levels and layers. A
# compressed P is a texture (12x8: partial blocks at its levels' edges for the wider ASTC blocks and at level 1); a
# multi-planar P one video frame (one level, one layer: spec 34.1.1's usual limits); a 3D P a volume, mostly created
# 2d_array_compatible (its image barriers' layers are depth slices, 7.7.3).
FEATURE_IMAGES = {
    "compressed": (["bc1_rgba_unorm_block", "bc4_snorm_block", "bc7_srgb_block", "astc_4x4_unorm_block",
                    "astc_6x5_srgb_block", "astc_8x8_unorm_block"], (12, 8, 1), 2, 2),
    "planar": (sorted(PLANES), (8, 4, 1), 1, 1),
    "volume": (["r8g8b8a8_unorm"], (4, 4, 4), 2, 1),
}
# The uncompressed format of each texel block (or plane texel) size that copy_image pairs P with (spec 20.3:
# size-compatible formats; one texel of it is one block of a compressed format): partner image K<size>.
PARTNER_FORMATS = {1: "r8_unorm", 2: "r8g8_unorm", 4: "r8g8b8a8_unorm", 8: "r32g32_uint", 16: "r32g32b32a32_uint"}
FEATURE_SHADERS = {"sw": ["sampled", "write"]}  # a combined image sampler read, an output buffer written


def _planes(image: dict) -> list[tuple[tuple[int, int, int], int]]:
    """Each plane's (extent, texel block bytes) of a generated image document (one but in a multi-planar format)."""
    w, h, d = image["extent"]
    return [((-(-w // dx), -(-h // dy), d), texel) for texel, (dx, dy) in
            PLANES.get(image["format"], ((FORMATS[image["format"]], (1, 1)),))]


def _level_blocks(image: dict, level: int, plane: int = 0) -> tuple[list[int], list[int]]:
    """A level of a plane of a generated image: its extent in texels, and in texel blocks."""
    bw, bh = block_extent(image["format"])
    size = [max(1, x >> level) for x in _planes(image)[plane][0]]
    return size, [-(-size[0] // bw), -(-size[1] // bh), size[2]]


@st.composite
def _texel_box(draw, image: dict, level: int, plane: int = 0) -> tuple[list[int], list[int]]:
    """(offset, extent) of a box of texels in `level` of `image`'s `plane`: whole or drawn, on its texel blocks' grid
    and ending on one or at the level's edge (spec 20.3's rules for a compressed image's boxes)."""
    bw, bh = block_extent(image["format"])
    size, blocks = _level_blocks(image, level, plane)
    if draw(st.booleans()):
        return [0, 0, 0], size
    lo = [draw(st.integers(0, n - 1)) for n in blocks]
    hi = [draw(st.integers(a + 1, n)) for a, n in zip(lo, blocks)]
    offset = [lo[0] * bw, lo[1] * bh, lo[2]]
    return offset, [min(hi[0] * bw, size[0]) - offset[0], min(hi[1] * bh, size[1]) - offset[1], hi[2] - lo[2]]


def _corners(offset: list[int], extent: list[int], mirror: tuple[bool, bool]) -> list[list[int]]:
    """A blit side's two corners of a box (VkImageBlit's offsets), in x and y swapped where `mirror` says."""
    low, high = list(offset), [o + e for o, e in zip(offset, extent)]
    for axis in (0, 1):
        if mirror[axis]:
            low[axis], high[axis] = high[axis], low[axis]
    return [low, high]


@st.composite
def _blit(draw, images: dict[str, dict]) -> dict:
    """vkCmdBlitImage as users record it: a mip chain's next level from the one before (level 0 to 1, whole, scaled
    down), or a drawn box of one image to a drawn box of another, scaled and mirrored or not; nearest mostly, linear
    now and then. Sources: I, J, a compressed or 3D P and K4; destinations never compressed (BLIT_DST), and a 3D
    image's regions one layer (VUID-vkCmdBlitImage-srcImage-00240)."""
    volume = images["P"]["extent"][2] > 1
    sources = ["I", "J"] + (["P"] if images["P"]["format"] in COMPRESSED or volume else []) + \
        (["K4"] if volume else [])
    src = draw(st.sampled_from(sources))
    three_d = images[src]["extent"][2] > 1
    filter_ = {"filter": draw(st.sampled_from(["nearest", "nearest", "nearest", "linear"]))}
    layers = images[src].get("array_layers", 1)
    layer = draw(st.integers(0, layers - 1))
    count = draw(st.integers(1, layers - layer))
    if images[src]["format"] not in COMPRESSED and draw(st.booleans()):  # the next mip level of the same image
        whole = [list(images[src]["extent"]), [max(1, x >> 1) for x in images[src]["extent"]]]
        return {"cmd": "blit_image", "src": src, "dst": src, **filter_, "regions": [{
            "src_mip_level": 0, "dst_mip_level": 1, "src_base_array_layer": layer, "dst_base_array_layer": layer,
            "layer_count": count, "src_offsets": [[0, 0, 0], whole[0]], "dst_offsets": [[0, 0, 0], whole[1]]}]}
    dst = draw(st.sampled_from([i for i in (["P", "K4"] if three_d else ["I", "J"]) if i != src]))
    src_level, dst_level = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    mirror = (draw(st.booleans()), draw(st.booleans()))
    dst_layer = draw(st.integers(0, images[dst].get("array_layers", 1) - count))
    return {"cmd": "blit_image", "src": src, "dst": dst, **filter_, "regions": [{
        "src_mip_level": src_level, "dst_mip_level": dst_level, "src_base_array_layer": layer,
        "dst_base_array_layer": dst_layer, "layer_count": count,
        "src_offsets": _corners(*draw(_texel_box(images[src], src_level)), (False, False)),
        "dst_offsets": _corners(*draw(_texel_box(images[dst], dst_level)), mirror)}]}


def _view(draw, image: dict) -> dict:
    """A storage or sampled image view's subresources: one level, drawn layers (a 3D image's one layer)."""
    if image["extent"][2] > 1:
        return {"base_mip_level": draw(st.integers(0, image["mip_levels"] - 1)), "level_count": 1}
    return draw(_subresources(single_level=True))


def _barrier_range(draw, image: dict) -> dict:
    """An image barrier's subresources of a generated image: depth slices of a 2d_array_compatible one (past a level's
    depth none, 7.7.3), a level of a 3D one, a drawn range of one of two levels and two layers, else the whole."""
    if image.get("create_flags"):  # valid usage: the base level's slices, a subset of one level (maintenance9)
        level = draw(st.integers(0, image["mip_levels"] - 1))
        depth = max(1, image["extent"][2] >> level)
        first = draw(st.integers(0, depth - 1))
        out = {"base_mip_level": level, "base_array_layer": first}
        if draw(st.booleans()):
            out["layer_count"] = draw(st.integers(1, depth - first))
        if first or "layer_count" in out or draw(st.booleans()):
            out["level_count"] = 1
        return out
    if image["mip_levels"] == 2 and image.get("array_layers", 1) == 2:
        return draw(_subresources())
    if image["mip_levels"] == 2 and draw(st.booleans()):
        return {"base_mip_level": draw(st.integers(0, 1)), "level_count": 1}
    return {}


@st.composite
def _p_command(draw, images: dict[str, dict], kind: str | None = None) -> dict:
    """A command on P or its partners K<size> (of `kind` where given: then a barrier's is P's): a copy_image between
    P (a plane of it) and the partner of its block's or plane's size, either way (or between two planes of one size),
    an upload to or readback of P (not multi-planar) or a partner, a clear or a storage image dispatch of a 3D P, or
    an image barrier over P's subresources (a 3D 2d_array_compatible P's depth slices)."""
    p = images["P"]
    planar, volume = p["format"] in PLANES, p["extent"][2] > 1
    given = kind is not None
    kind = kind or draw(st.sampled_from(["copy_image", "copy_image", "upload", "readback", "barrier", "barrier"] +
                                        ["clear", "dispatch"] * volume))
    if kind == "barrier":
        image = "P" if given else draw(st.sampled_from(["P", "P", "P"] + sorted(set(images) - {"I", "J", "P"})))
        return _image_barrier(draw, image, subresources=_barrier_range(draw, images[image]))
    if kind == "clear":
        return {"cmd": "clear_color_image", "image": "P", "ranges": [
            {"base_mip_level": draw(st.integers(0, 1)), **({"level_count": 1} if draw(st.booleans()) else {})}]}
    if kind == "dispatch":
        return {"cmd": "dispatch", "shader": draw(st.sampled_from(["r", "w", "x"])),
                "bindings": [{"image": "P", **_view(draw, p)}]}
    if kind in ("upload", "readback"):
        image = draw(st.sampled_from([i for i in sorted(images) if i not in ("I", "J") and (i != "P" or not planar)]))
        level = draw(st.integers(0, images[image]["mip_levels"] - 1))
        offset, extent = draw(_texel_box(images[image], level))
        layers = images[image].get("array_layers", 1)
        layer = draw(st.integers(0, layers - 1))
        region = {"mip_level": level, "base_array_layer": layer, "layer_count": draw(st.integers(1, layers - layer)),
                  "image_offset": offset, "image_extent": extent}
        return {"cmd": "copy_buffer_to_image", "src": "S", "dst": image, "regions": [region]} if kind == "upload" \
            else {"cmd": "copy_image_to_buffer", "src": image, "dst": "B", "regions": [region]}
    plane = draw(st.integers(0, len(_planes(p)) - 1))
    texel = _planes(p)[plane][1]
    twins = [k for k, (_, t) in enumerate(_planes(p)) if t == texel and k != plane]
    other, other_plane = ("P", draw(st.sampled_from(twins))) if twins and draw(st.integers(0, 2)) == 0 else \
        (f"K{texel}", 0)
    level = draw(st.integers(0, p["mip_levels"] - 1))
    sides = [("P", plane, level), (other, other_plane, level)]
    if draw(st.booleans()):
        sides.reverse()
    (src, src_plane, src_level), (dst, dst_plane, dst_level) = sides
    (src_size, src_blocks), (_, dst_blocks) = (_level_blocks(images[i], level, plane) for i, plane, level in (
        (src, src_plane, src_level), (dst, dst_plane, dst_level)))
    count = [draw(st.integers(1, min(a, b))) for a, b in zip(src_blocks, dst_blocks)]  # blocks (or texels) copied
    at, to = ([draw(st.integers(0, n - k)) for n, k in zip(blocks, count)] for blocks in (src_blocks, dst_blocks))
    (bw, bh), (dw, dh) = block_extent(images[src]["format"]), block_extent(images[dst]["format"])
    offset = [at[0] * bw, at[1] * bh, at[2]]
    # The extent is the source's texels, ending at its level's edge where the last block is partial (spec 20.3).
    extent = [min((at[0] + count[0]) * bw, src_size[0]) - offset[0],
              min((at[1] + count[1]) * bh, src_size[1]) - offset[1], count[2]]
    layers = min(images[src].get("array_layers", 1), images[dst].get("array_layers", 1))
    return {"cmd": "copy_image", "src": src, "dst": dst, "regions": [{
        "src_mip_level": src_level, "dst_mip_level": dst_level, "src_base_array_layer": 0, "dst_base_array_layer": 0,
        "layer_count": draw(st.integers(1, layers)), "src_offset": offset,
        "dst_offset": [to[0] * dw, to[1] * dh, to[2]], "extent": extent,
        **({"src_plane": src_plane} if src_plane else {}), **({"dst_plane": dst_plane} if dst_plane else {})}]}


@st.composite
def _feature_command(draw, images: dict[str, dict]) -> dict:
    """A blit (_blit), a dispatch that samples an image (of I, J, a compressed or 3D P) and writes B, or binds one and
    does not access it, or a command on P (_p_command)."""
    kind = draw(st.sampled_from(["blit", "blit", "sampled", "sampled", "p", "p", "p"]))
    if kind == "blit":
        return draw(_blit(images))
    if kind == "p":
        return draw(_p_command(images))
    image = draw(st.sampled_from(["I", "J"] + ["P"] * (images["P"]["format"] not in PLANES)))
    view = {"image": image, **_view(draw, images[image])}
    if draw(st.integers(0, 3)) == 0:
        return {"cmd": "dispatch", "shader": "n", "bindings": [view]}
    return {"cmd": "dispatch", "shader": "sw", "bindings": [view, {"buffer": "B", **draw(_range(SIZE * 4))}]}


@st.composite
def image_feature_streams(draw) -> dict:
    """A stream of `image_streams()` with an image P of one kind of FEATURE_IMAGES (block-compressed, multi-planar,
    3D), the partner images K<size> copy_image pairs it with, and at drawn places of each command buffer a command
    on P (_p_command) and 1-3 more (_feature_command): blits, sampled and unaccessed image bindings, copies of blocks
    and planes, uploads and readbacks, clears, storage dispatches and image barriers of P (of depth slices where P
    is 2d_array_compatible)."""
    doc = draw(image_streams())
    # Hypothesis leans to the first choice: these weights give each kind about a third of the streams.
    kind = draw(st.sampled_from(["planar", "volume", "compressed", "compressed"]))
    formats, extent, levels, layers = FEATURE_IMAGES[kind]
    memory = {"memory": draw(st.sampled_from(["device_local", "host_coherent"]))}
    p = {"id": "P", "extent": list(extent), "format": draw(st.sampled_from(formats)), "mip_levels": levels,
         "array_layers": layers, **memory}
    if kind == "volume" and draw(st.integers(0, 4)):
        p["create_flags"] = ["2d_array_compatible"]
    images = {i["id"]: {**i, "extent": (i["extent"] + [1, 1])[:3]} for i in doc["images"]}  # width, height, depth
    images["P"] = p
    bw, bh = block_extent(p["format"])
    for size in sorted({texel for _, texel in _planes(p)}):
        images[f"K{size}"] = {"id": f"K{size}", "extent": [-(-extent[0] // bw), -(-extent[1] // bh), extent[2]],
                              "format": PARTNER_FORMATS[size], "mip_levels": levels, "array_layers": layers, **memory}
    # Each command buffer has a command of what P's kind is for (a plane's copy, a barrier of slices, a copy of
    # blocks or an upload), and 1-3 more.
    signature = {"planar": st.just("copy_image"), "volume": st.just("barrier"),
                 "compressed": st.sampled_from(["copy_image", "upload"])}[kind]
    cbs = {}
    for name, cb in doc["command_buffers"].items():
        cb = list(cb)
        cb.insert(draw(st.integers(0, len(cb))), draw(_p_command(images, draw(signature))))
        for _ in range(draw(st.integers(1, 3))):
            cb.insert(draw(st.integers(0, len(cb))), draw(_feature_command(images)))
        cbs[name] = cb
    return {**doc, "name": "image-features", "images": list(images.values()), "command_buffers": cbs,
            "shaders": {**doc["shaders"], **{k: {"bindings": v} for k, v in FEATURE_SHADERS.items()}}}


def features(stream: ir.Stream) -> set[str]:
    """The features of issue 25's second round that `stream` uses (FEATURES), so that a run can count the streams
    that include each and a test can see that the generators still draw it."""
    commands = [c for cb in stream.command_buffers for c in cb.commands]
    bindings = [b.access for c in commands if isinstance(c, ir.Dispatch) for b in c.bindings]
    sliced = {i.id for i in stream.images if i.slices_are_layers}
    planar = {i.id for i in stream.images if i.format in PLANES}
    found = {
        "counter_read": any(isinstance(op, ir.GetSemaphoreCounterValue) for t in stream.threads for op in t.ops),
        "none_binding": "none" in bindings, "sampled_binding": "sampled" in bindings,
        "blit": any(isinstance(c, ir.BlitImage) for c in commands),
        "compressed": any(i.format in COMPRESSED for i in stream.images),
        "plane_copy": any(isinstance(c, ir.CopyImage) and {c.src, c.dst} & planar for c in commands),
        "slice_barrier": any(isinstance(c, ir.Barrier) and any(ib.image in sliced for ib in c.images)
                             for c in commands)}
    return {name for name, present in found.items() if present}


FEATURES = ("counter_read", "none_binding", "sampled_binding", "blit", "compressed", "plane_copy", "slice_barrier")


# ---- image features of the syncval port (imgport): ownership transfers, depth/stencil, aliases, resolves ------


@st.composite
def _image_ownership_transfer(draw) -> tuple[dict, list]:
    """Image commands on q1 (family 1), then a release of a drawn subresource range of exclusive I to family 0,
    transitioning it or not, with drawn stages and masks; on q0 the matching acquire (same range and layouts, 7.7.4),
    then image commands. q0 waits for q1's signal at a drawn stage (often all_commands, the stage that holds the
    release and acquire) or not at all. Command buffers and host ops."""
    layouts = draw(st.sampled_from([("transfer_dst_optimal", "shader_read_only_optimal"), ("general", "general"),
                                    ("undefined", "general")]))
    transfer = {"image": "I", **draw(_subresources()), "old_layout": layouts[0], "new_layout": layouts[1],
                "src_family": 1, "dst_family": 0}
    release = _barrier(draw, dst_stage=draw(st.sampled_from([["none"], ["compute_shader"]])), narrow=True,
                       images=[transfer])
    acquire = _barrier(draw, src_stage=draw(st.sampled_from([["none"], ["copy"]])), narrow=True,
                       images=[transfer])
    cbs = {"cb0": draw(st.lists(_image_command(), max_size=3)) + [release],
           "cb1": [acquire] + draw(st.lists(_image_command(), min_size=1, max_size=3))}
    return cbs, draw(_two_submits(joined=draw(st.integers(0, 3)) > 0))


@st.composite
def _two_submits(draw, joined: bool) -> list:
    """cb0 on q1 (family 1), then cb1 on q0 (family 0), which waits for cb0's signal at a drawn stage (often
    all_commands, which holds every layout transition and ownership transfer) where `joined`."""
    stages = st.sampled_from(["all_commands"] * 3 + SEMAPHORE_STAGES)
    return [{"op": "submit", "queue": "q1", "command_buffers": ["cb0"],
             "signal": [{"semaphore": "T", "value": 1, "stage": [draw(stages)]}]},
            {"op": "submit", "queue": "q0", "command_buffers": ["cb1"],
             **({"wait": [{"semaphore": "T", "value": 1, "stage": [draw(stages)]}]} if joined else {})},
            {"op": "device_wait_idle"}]


DEPTH_STENCIL_FORMATS = ["d24_unorm_s8_uint", "d32_sfloat_s8_uint", "d16_unorm_s8_uint", "d32_sfloat", "s8_uint"]


def _aspects(draw, fmt: str) -> list[str]:
    """A drawn aspect mask of a depth/stencil format: one of its aspects, or both."""
    names = list(aspect_names(fmt))
    return draw(st.sampled_from([names] + [[a] for a in names] * (len(names) > 1)))


@st.composite
def _depth_stencil_command(draw, fmt: str) -> dict:
    """A command on depth/stencil images D and E (of format `fmt`, IMAGE_EXTENT, two levels and layers) as the
    syncval tests record them: clears of drawn ranges and aspects, copies of aspects between them, and barriers
    (global, or an image barrier of drawn aspects, a transition or not)."""
    kind = draw(st.sampled_from(["clear", "clear", "copy", "copy", "image_barrier", "barrier"]))
    image = draw(st.sampled_from(["D", "E"]))
    if kind == "clear":
        return {"cmd": "clear_depth_stencil_image", "image": image,
                "ranges": [{**draw(_subresources()), **({"aspects": _aspects(draw, fmt)} if draw(st.booleans())
                                                       else {})}], "depth": 0.5, "stencil": draw(st.integers(0, 255))}
    if kind == "copy":
        level, layer = draw(st.integers(0, 1)), draw(st.integers(0, 1))
        w, h = (max(1, d >> level) for d in IMAGE_EXTENT)
        x, y = draw(st.integers(0, w - 1)), draw(st.integers(0, h - 1))
        return {"cmd": "copy_image", "src": image, "dst": draw(st.sampled_from(["D", "E"])), "regions": [{
            "src_mip_level": level, "dst_mip_level": level, "src_base_array_layer": layer,
            "dst_base_array_layer": draw(st.integers(0, 1)), "layer_count": 1, "src_offset": [x, y],
            "dst_offset": [x, y], "extent": [draw(st.integers(1, w - x)), draw(st.integers(1, h - y)), 1],
            "aspects": _aspects(draw, fmt)}]}
    if kind == "barrier":
        return _barrier(draw, narrow=True)
    barrier = _image_barrier(draw, image)
    # One aspect: valid with separateDepthStencilLayouts (VUID-VkImageMemoryBarrier-image-03320).
    if draw(st.booleans()):
        barrier["images"][0]["aspects"] = _aspects(draw, fmt)
    return barrier


@st.composite
def _depth_stencil(draw) -> tuple[dict, list]:
    """Two command buffers of depth/stencil commands (_depth_stencil_command) on two queues, joined or not."""
    fmt = draw(st.sampled_from(DEPTH_STENCIL_FORMATS))
    cbs = {cb: draw(st.lists(_depth_stencil_command(fmt), min_size=1, max_size=5)) for cb in ("cb0", "cb1")}
    return cbs, draw(_two_submits(joined=draw(st.booleans()))), fmt


RESOLVE_STAGES = ["copy", "resolve", "transfer", "all_commands", "blit"]


@st.composite
def _alias_resolve_command(draw) -> dict:
    """A command on C, its alias C2 (alias_of: one memory, one layout) and R, and multisampled M, as the syncval test
    records them: copies of boxes between C, C2 and R, resolves of M's boxes into them, and barriers (global, or an
    image barrier of one of them) of drawn stages among copy and resolve."""
    kind = draw(st.sampled_from(["copy", "copy", "resolve", "resolve", "image_barrier", "barrier"]))
    images = st.sampled_from(["C", "C2", "R"])
    if kind == "barrier":
        return _barrier(draw, draw(_masks(RESOLVE_STAGES)), draw(_masks(RESOLVE_STAGES)), narrow=True)
    if kind == "image_barrier":
        return _barrier(draw, draw(_masks(RESOLVE_STAGES)), draw(_masks(RESOLVE_STAGES)), narrow=True,
                        images=[{"image": draw(images), **draw(_subresources())}])
    level, layer = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    w, h = (max(1, d >> level) for d in IMAGE_EXTENT)
    x, y = draw(st.integers(0, w - 1)), draw(st.integers(0, h - 1))
    return {"cmd": "copy_image" if kind == "copy" else "resolve_image",
            "src": draw(images) if kind == "copy" else "M", "dst": draw(images), "regions": [{
                "src_mip_level": level, "dst_mip_level": level, "src_base_array_layer": layer,
                "dst_base_array_layer": draw(st.integers(0, 1)), "layer_count": 1, "src_offset": [x, y],
                "dst_offset": [x, y], "extent": [draw(st.integers(1, w - x)), draw(st.integers(1, h - y)), 1]}]}


@st.composite
def _alias_resolve(draw) -> tuple[dict, list]:
    """Two command buffers of _alias_resolve_command on two queues, joined or not."""
    cbs = {cb: draw(st.lists(_alias_resolve_command(), min_size=1, max_size=5)) for cb in ("cb0", "cb1")}
    return cbs, draw(_two_submits(joined=draw(st.booleans())))


@st.composite
def syncval_image_streams(draw) -> dict:
    """Streams of the image features the syncval port added (docs/syncval.md): queue family ownership transfers of
    images (_image_ownership_transfer), depth/stencil images (_depth_stencil), images aliasing one memory and
    resolves of multisampled ones (_alias_resolve). Images I (exclusive) and J as image_streams', depth/stencil images
    D and E, C and its alias C2, R and multisampled M; queues q0 (family 0) and q1 (family 1)."""
    image = {"extent": list(IMAGE_EXTENT), "format": "r8g8b8a8_unorm", "mip_levels": 2, "array_layers": 2}
    images = [{"id": "I", **image, "memory": "device_local", "sharing": "exclusive"},
              {"id": "J", **image, "memory": draw(st.sampled_from(["device_local", "host_coherent"]))}]
    feature = draw(st.sampled_from(["ownership", "depth_stencil", "alias_resolve"]))
    if feature == "ownership":
        cbs, ops = draw(_image_ownership_transfer())
    elif feature == "depth_stencil":
        cbs, ops, fmt = draw(_depth_stencil())
        images += [{"id": i, **image, "format": fmt, "memory": draw(st.sampled_from(["device_local", "host_coherent"]))}
                   for i in ("D", "E")]
    else:
        cbs, ops = draw(_alias_resolve())
        memory = draw(st.sampled_from(["device_local", "host_coherent"]))
        images += [{"id": "C", **image, "memory": memory, "create_flags": ["alias"]},
                   {"id": "C2", **image, "memory": memory, "create_flags": ["alias"], "alias_of": "C"},
                   {"id": "R", **image, "memory": draw(st.sampled_from(["device_local", "host_coherent"]))},
                   {"id": "M", **image, "samples": draw(st.sampled_from([2, 4])), "memory": "host_coherent"}]
    return {"format": "vkverify-stream/1", "name": "syncval-images",
            "devices": [{"id": "gpu0", "queues": [{"id": "q0", "family": 0}, {"id": "q1", "family": 1}]}],
            "buffers": [{"id": "B", "size": SIZE * 4, "memory": "device_local"},
                        {"id": "S", "size": SIZE * 4, "memory": "host_coherent"}],
            "images": images, "semaphores": [{"id": "T", "type": "timeline"}],
            "shaders": {k: {"bindings": v} for k, v in SHADERS.items()},
            "command_buffers": cbs, "threads": {"main": ops}}


# ---- events (spec 7.5) ---------------------------------------------------------------------------------

EVENT_BUFFERS = {"B": SIZE, "C": SIZE, "S": SIZE}
HOST_DEPENDENCY = {"src_stage": ["host"], "src_access": ["host_write"]}
# A dependency that orders every command and makes every write available and visible: drawn often, so that what a
# set and its wait order, and what they do not, decides the verdict.
FULL = {"src_stage": ["all_commands"], "src_access": ["memory_write"], "dst_stage": ["all_commands"],
        "dst_access": ["memory_read", "memory_write"]}


@st.composite
def _event_command(draw) -> dict:
    """A command before, between or after a set and its wait: an access to B (often), a write of B, or any command
    of `streams()` over B, C and S (a barrier among them)."""
    kind = draw(st.sampled_from(["access", "access", "write", "any"]))
    if kind == "access":
        return _access(draw)
    return DEVICE_WRITES[draw(st.sampled_from(sorted(DEVICE_WRITES)))] if kind == "write" else \
        draw(_command(EVENT_BUFFERS))


def _dependency(draw, sync2: bool, **given) -> dict:
    """A dependency's fields: FULL, or drawn masks, mostly of CHAIN_STAGES and CHAIN_ACCESSES (`given` where given);
    one global barrier or 1-2 buffer barriers of B and C over drawn ranges; under sync2 a buffer barrier may have
    masks of its own (vkCmdSetEvent2's k-th memory barrier is the first half of the wait's k-th)."""
    def masks() -> dict:
        kind = draw(st.integers(0, 3))
        fields = {**(FULL if kind == 0 else _barrier(draw, narrow=kind > 1)), **given}
        return {k: v for k, v in fields.items() if k != "cmd"}

    dependency = masks()
    if draw(st.booleans()):
        dependency["buffers"] = [{"buffer": b, **draw(_range()), **(masks() if sync2 and draw(st.booleans()) else {})}
                                 for b in draw(st.lists(st.sampled_from(["B", "C"]), min_size=1, max_size=2,
                                                        unique=True))]
    return dependency


def _set_event(draw, event: str, sync2: bool) -> dict:
    """vkCmdSetEvent of a drawn stage mask, or vkCmdSetEvent2 of a drawn dependency."""
    if sync2:
        return {"cmd": "set_event", "event": event, **_dependency(draw, True)}
    stages = st.sampled_from(["all_commands"] * 4 + CHAIN_STAGES * 3 + STAGES)
    return {"cmd": "set_event", "event": event, "stage": draw(st.lists(stages, min_size=1, max_size=2, unique=True))}


def _wait_events(draw, sets: dict[str, dict | None], sync2: bool) -> dict:
    """The wait for the events of `sets` (event -> its last set; None: the host's) as valid usage asks: vkCmdWaitEvents2
    with each set's own dependency (VUID-vkCmdWaitEvents2-pEvents-10788), a host set's only host in its source
    (-03839); vkCmdWaitEvents with the union of the sets' stage masks, host for the host's (-srcStageMask-01158)."""
    events = sorted(sets)
    if sync2:
        return {"cmd": "wait_events", "events": events, "dependencies": [
            _dependency(draw, True, **HOST_DEPENDENCY) if sets[e] is None else
            {k: v for k, v in sets[e].items() if k not in ("cmd", "event")} for e in events]}
    stages = sorted(set().union(*(["host"] if sets[e] is None else sets[e]["stage"] for e in events)))
    return {"cmd": "wait_events", "events": events, **_dependency(draw, False, src_stage=stages)}


@st.composite
def event_streams(draw) -> dict:
    """A stream of events as users write them, per queue (one or two, each with events of its own, q1 racing q0):
    commands, a set (vkCmdSetEvent or vkCmdSetEvent2, masks drawn), commands touching the same bytes or a barrier,
    the wait (the same sync version), commands; now and then a second event in the wait, a reset and a set again
    before it, the command buffer split between set and wait into two submitted in order, the command buffer
    submitted again (the pair runs twice), and an event the host sets before the submit (after a host write)."""
    queues = ["q0", "q1"][:draw(st.integers(1, 2))]
    host = draw(st.integers(0, 2)) == 0
    memory = "host_coherent" if host else draw(st.sampled_from(["device_local", "host_coherent"]))
    cbs: dict[str, list] = {}
    ops: list[dict] = []
    events: list[str] = []
    for q in queues:
        sync2 = draw(st.booleans())
        names = [f"E{q}", f"F{q}"][:draw(st.integers(1, 2))]
        events += names
        sets: dict[str, dict | None] = {e: _set_event(draw, e, sync2) for e in names}
        cb = draw(st.lists(_event_command(), min_size=1, max_size=2))
        for e in names:
            cb += [sets[e]] + draw(st.lists(_event_command(), max_size=1))
        if draw(st.integers(0, 2)) == 0:  # a reset, then a set again
            e = draw(st.sampled_from(names))
            sets[e] = _set_event(draw, e, sync2)
            cb += [{"cmd": "reset_event", "event": e, "stage": draw(_masks(CHAIN_STAGES))}] + \
                draw(st.lists(_event_command(), max_size=1)) + [sets[e]]
        split = len(cb)  # where the command buffer may end, and another begin
        cb += draw(st.lists(_event_command(), max_size=2))
        if draw(st.integers(0, 2)) == 0:
            cb.append(_barrier(draw, narrow=True))
        if host and q == "q0":
            sets["H"] = None
            events.append("H")
            ops += [{"op": "host_write", "buffer": "B", **draw(_range(32))}] * draw(st.booleans()) + \
                [{"op": "set_event", "event": "H"}]
        cb += [_wait_events(draw, sets, sync2)] + draw(st.lists(_event_command(), min_size=1, max_size=2))
        parts = [cb[:split], cb[split:]] if draw(st.integers(0, 2)) == 0 else [cb]
        names = [f"cb{q}{i}" for i in range(len(parts))]
        cbs.update(zip(names, parts))
        submits = [{"op": "submit", "queue": q, "command_buffers": [n]} for n in names]
        if len(parts) > 1 and draw(st.booleans()):  # one submit of two batches
            submits = [{"op": "submit", "queue": q, "batches": [{"command_buffers": [n]} for n in names]}]
        ops += submits * draw(st.integers(1, 2))
    if draw(st.integers(0, 1)):
        more_cbs, more_ops = draw(_event_state_operations(queues))
        cbs.update(more_cbs)
        ops += more_ops
        events.append("R")
    ops.append({"op": "device_wait_idle"})
    return {"format": "vkverify-stream/1", "name": "events",
            "devices": [{"id": "gpu0", "queues": [{"id": q, "family": 0} for q in queues]}],
            "buffers": [{"id": "B", "size": SIZE, "memory": memory},
                        {"id": "C", "size": SIZE, "memory": "device_local"},
                        {"id": "S", "size": SIZE, "memory": "host_coherent"}],
            "events": [{"id": e} for e in events], "shaders": {k: {"bindings": v} for k, v in SHADERS.items()},
            "command_buffers": cbs, "threads": {"main": ops}}


# The stage masks of a set or reset of R: all_commands often (its first scope holds every earlier operation).
OPERATION_STAGES = ["all_commands"] * 3 + ["top_of_pipe", "bottom_of_pipe"] + CHAIN_STAGES


@st.composite
def _event_state_operations(draw, queues: list[str]) -> tuple[dict, list[dict]]:
    """Sets and resets of an event R that no wait waits for (so the reference reads them on several queues and the
    host), after the stream's submits: each a command buffer of its own on a drawn queue (after a barrier from
    all_commands, bottom_of_pipe or a narrow stage, or none), its stage mask drawn, or the host's vkSetEvent or
    vkResetEvent, now and then after an idle wait. They race (event_race) unless an all_commands scope, an idle
    wait or program order orders them (7.5's note to vkCmdWaitEvents2)."""
    cbs: dict[str, list] = {}
    ops: list[dict] = []
    for i in range(draw(st.integers(2, 4))):
        kind = draw(st.sampled_from(["set_event", "reset_event"]))
        where = draw(st.sampled_from([*queues, "host"]))
        if draw(st.integers(0, 2)) == 0:
            ops.append({"op": "device_wait_idle"} if where == "host" else {"op": "queue_wait_idle", "queue": where})
        if where == "host":
            ops.append({"op": kind, "event": "R"})
            continue
        source = draw(st.sampled_from([None, ["all_commands"], ["bottom_of_pipe"], ["compute_shader"]]))
        cbs[f"R{i}"] = [_barrier(draw, src_stage=source, narrow=True)] * (source is not None) + \
            [{"cmd": kind, "event": "R", "stage": draw(st.lists(st.sampled_from(OPERATION_STAGES), min_size=1,
                                                                  max_size=2, unique=True))}]
        ops.append({"op": "submit", "queue": where, "command_buffers": [f"R{i}"]})
    return cbs, ops


# ---- buffer markers and query result copies (copies.adoc "Buffer Markers", queries.adoc) -----------------------

# The stages a marker is written after (vkCmdWriteBufferMarkerAMD's pipelineStage: one stage).
MARKER_STAGES = ["top_of_pipe", "compute_shader", "copy", "clear", "transfer", "all_commands", "bottom_of_pipe"]
RESULT_SIZES = [4, 8, 12, 16]  # a 32- or 64-bit result, with its availability word or not


@st.composite
def _marker_command(draw) -> dict:
    """A command among buffer markers and query result copies, on the words of B and C: a marker write
    (vkCmdWriteBufferMarker(2)AMD) of a drawn stage and word, a copy of 1-3 query results of a drawn size, stride
    and place (vkCmdCopyQueryPoolResults), a device access to B (a read, as a uniform buffer too, a write, an atomic
    add, a fill, a copy to C), or a barrier (FULL, or narrow masks: copy, transfer and transfer_write among them,
    which cover marker writes), global or over a drawn range of B or C."""
    kind = draw(st.sampled_from(["marker", "marker", "query", "access", "access", "barrier", "barrier"]))
    buffer = draw(st.sampled_from(["B", "C"]))
    if kind == "marker":
        return {"cmd": "write_buffer_marker", "dst": buffer, "offset": 4 * draw(st.integers(0, SIZE // 4 - 1)),
                "stage": [draw(st.sampled_from(MARKER_STAGES))], "marker": draw(st.integers(0, 0xFFFFFFFF))}
    if kind == "query":
        size, count = draw(st.sampled_from(RESULT_SIZES)), draw(st.integers(1, 3))
        stride = draw(st.sampled_from([size, 16, 24])) if count > 1 else size  # past its result: 8-byte aligned
        stride = max(stride, -(-size // 8) * 8) if count > 1 else stride
        span = stride * (count - 1) + size
        offset = 8 * draw(st.integers(0, (SIZE - span) // 8))
        return {"cmd": "copy_query_pool_results", "dst": buffer, "offset": offset, "stride": stride,
                "query_count": count, "result_size": size}
    if kind == "access":
        if draw(st.integers(0, 4)) == 0:
            return {"cmd": "dispatch", "shader": "a", "bindings": [{"buffer": "B", **draw(_range(SIZE, 4))}]}
        return _access(draw, "B")
    fields = {"buffers": [{"buffer": buffer, **draw(_range(SIZE, 4))}]} if draw(st.booleans()) else {}
    return {"cmd": "barrier", **FULL, **fields} if draw(st.integers(0, 2)) == 0 else \
        _barrier(draw, narrow=True, **fields)


@st.composite
def _marker_neighbours(draw) -> list[dict]:
    """What a buffer marker write's own ordering decides (copies.adoc "Buffer Markers"), on one drawn word of B:
    a marker write and a shader's atomics over that word, either first (no atomic operation, the marker races
    them), or two marker writes of drawn stages (ordered only where the earlier names the later's stage or a
    logically earlier one)."""
    word = draw(st.integers(0, SIZE // 4 - 1))

    def marker() -> dict:
        return {"cmd": "write_buffer_marker", "dst": "B", "offset": 4 * word,
                "stage": [draw(st.sampled_from(MARKER_STAGES))], "marker": draw(st.integers(0, 0xFFFFFFFF))}
    if draw(st.booleans()):
        lo, hi = draw(st.integers(0, word)), draw(st.integers(word + 1, SIZE // 4))
        other = {"cmd": "dispatch", "shader": "a",
                 "bindings": [{"buffer": "B", "offset": 4 * lo, "size": 4 * (hi - lo)}]}
    else:
        other = marker()
    return draw(st.permutations([marker(), other]))


@st.composite
def marker_streams(draw) -> dict:
    """Buffer markers and query result copies among accesses to the same words and barriers (_marker_command), often
    with a marker write next to a shader's atomics or another marker on one word (_marker_neighbours): one to three
    command buffers on one queue or two, the second queue's submits waiting for the first's timeline
    signal at a drawn stage or not at all, a command buffer now and then submitted again, and a host read of B
    after a fence or an idle wait, or before either."""
    queues = ["q0", "q1"][:draw(st.integers(1, 2))]
    cbs = {f"cb{i}": draw(st.lists(_marker_command(), min_size=2, max_size=5))
           for i in range(draw(st.integers(1, 3)))}
    if draw(st.booleans()):  # two of _marker_neighbours in one command buffer, drawn commands between or none
        commands = cbs[draw(st.sampled_from(sorted(cbs)))]
        first, second = draw(_marker_neighbours())
        at = draw(st.integers(0, len(commands)))
        commands.insert(draw(st.integers(at, len(commands))), second)
        commands.insert(at, first)
    ops: list[dict] = []
    value = 0
    for cb in list(cbs) + [draw(st.sampled_from(sorted(cbs)))] * draw(st.booleans()):
        q = draw(st.sampled_from(queues))
        op: dict = {"op": "submit", "queue": q, "command_buffers": [cb]}
        if q == "q0" and len(queues) > 1 and draw(st.booleans()):
            value += 1
            op["signal"] = [{"semaphore": "T", "value": value, "stage": [draw(st.sampled_from(SEMAPHORE_STAGES))]}]
        elif q == "q1" and value and draw(st.booleans()):
            op["wait"] = [{"semaphore": "T", "value": value, "stage": [draw(st.sampled_from(SEMAPHORE_STAGES))]}]
        ops.append(op)
    end = draw(st.sampled_from(["fence", "idle", "racing"]))
    if end == "fence":
        ops[-1]["fence"] = "F"
        ops.append({"op": "wait_fences", "fences": ["F"]})
    elif end == "idle":
        ops.append({"op": "device_wait_idle"})
    ops.append({"op": "host_read", "buffer": "B", **draw(_range(SIZE))})
    ops.append({"op": "device_wait_idle"})
    return {"format": "vkverify-stream/1", "name": "markers",
            "devices": [{"id": "gpu0", "queues": [{"id": q, "family": 0} for q in queues]}],
            "buffers": [{"id": "B", "size": SIZE, "memory": "host_coherent"},
                        {"id": "C", "size": SIZE, "memory": "device_local"}],
            "semaphores": [{"id": "T", "type": "timeline"}], "fences": [{"id": "F"}],
            "shaders": {k: {"bindings": v} for k, v in SHADERS.items()},
            "command_buffers": cbs, "threads": {"main": ops}}


def completes(findings) -> bool:
    return not any(f.kind in NOT_COMPARED for f in findings)


def assert_agree(doc: dict, compare) -> None:
    """Assert `compare(doc)` (a list of disagreements) is empty; a stream that does not complete, or that the
    reference cannot read, is assumed away (hypothesis draws another)."""
    assume(completes(check(from_dict(doc))))
    try:
        found = compare(doc)
    except OutsideReference:
        assume(False)
    assert not found, "\n".join(found) + "\n" + json.dumps(doc)


def disagreements(doc: dict, readings: Readings = DEFAULT) -> list[str]:
    """How the fast checker's findings differ from the reference's verdict on the stream `doc`, both under
    `readings` (empty: they agree); the reference's verdict is a hazard of any submission order the threads
    allow. Racing pairs compare as unordered pairs: which side comes first, and so whether the pair is called
    raw or war, depends on the schedule; so do pairs racing in some submission order, and pairs on a queue that
    several threads feed that come in either order in two submission orders (`unordered`). Whether a pair is
    racing (no execution dependency either way, which decides its witness) is compared too."""
    stream = from_dict(doc)
    findings = check(stream, readings)
    oracles = references(stream, readings)
    oracle, verdict = oracles[0], joined(oracles)
    out = []
    fast = {(f.kind, f.first, f.second) for f in findings if f.kind in ACCESS_KINDS}
    reference = {(h.kind, h.first, h.second) for h in verdict.hazards}
    loose = {frozenset((h.first, h.second)) for h in verdict.hazards}
    directions = {(h.first, h.second) for h in verdict.hazards}
    unordered = {frozenset(pair) for pair in directions if pair[::-1] in directions} | \
        {frozenset((h.first, h.second)) for h in verdict.hazards if h.racing}
    for kind, first, second in sorted(fast - reference):
        if frozenset((first, second)) not in loose:
            out.append(f"false positive: {kind} {first} -> {second} (the reference orders it)")
        elif frozenset((first, second)) not in unordered:
            out.append(f"wrong kind or order: {kind} {first} -> {second}")
    racing = {}  # the reference's racing verdicts per unordered pair
    for h in verdict.hazards:
        racing.setdefault(frozenset((h.first, h.second)), set()).add(h.racing)
    for f in findings:
        said = racing.get(frozenset((f.first, f.second)), set())
        if f.kind in ACCESS_KINDS and said and f.racing not in said:
            out.append(f"{f.kind} {f.first} -> {f.second} {'' if f.racing else 'not '}racing, the reference "
                       f"{'' if True in said else 'not '}racing (an execution dependency either way)")
    # Every pair the reference has and the checker lacks, not only memories without any finding. The checker
    # compares an access with the most recent write and the reads since it (docs/format.md, Findings): a pair
    # joined by a path of reported pairs through writes between them is the checker's findings along that path.
    reported = {frozenset((first, second)) for _, first, second in fast}
    for kind, first, second, racing, buffer in sorted({(h.kind, h.first, h.second, h.racing, h.buffer)
                                                       for h in verdict.hazards}):
        if frozenset((first, second)) not in reported:
            # A racing pair ran in the checker's schedule one way round, interleaved with the other accesses of
            # both queues: a racing finding on the memory naming either side stands for it. An ordered pair can
            # hide behind another queue's write that the schedule ran between them: a racing finding naming its
            # second side.
            root = stream.index.root(buffer)[0]
            sides = {first, second} if racing else {second}
            # A read or write of `second` the checker reports against another write: that write was its most
            # recent one, which stands for the older writes (the reference also pairs those when the write
            # between is not ordered before `second`).
            newer = kind != "war" and any(f.kind != "war" and f.second == second and f.first != first
                                          and stream.index.root(f.buffer)[0] == root
                                          for f in findings if f.kind in ACCESS_KINDS)
            # A read a write was ordered after: the checker keeps only the reads since the latest write
            # (docs/format.md, Checker conventions), so it compares `second` with that write, which stands for it.
            # A layout transition a later one of its queue superseded (they run in submission order, 7.7.4): the
            # checker compares what comes after with that one, which orders `second` here; and a write a transition
            # came after, which a later transition of its queue meets only as that transition's successor.
            newer = newer or any(oracle.transition_order(a, w) and oracle.hb(w.node, b.node)
                                 or oracle.hb(a.node, w.node) and oracle.transition_order(w, b)
                                 for a in oracle.accesses if a.ref == first and a.root == root
                                 for b in oracle.accesses if b.ref == second and b.root == root
                                 for w in oracle.accesses if w.root == root and w.write)
            newer = newer or kind == "war" and any(
                f.second == second and f.first != first and stream.index.root(f.buffer)[0] == root
                and _happens_before(oracle, first, f.first, root) for f in findings if f.kind in ACCESS_KINDS)
            # Neither side of an unordered pair comes first: the reference names it in whichever order it met it.
            sides_first = ((first, second), (second, first))[:1 + (frozenset((first, second)) in unordered)]
            shadowed = any(_shadowed(stream, findings, oracle, a, b, root) for a, b in sides_first)
            if not newer and not shadowed and not any(
                    f.racing and {f.first, f.second} & sides and stream.index.root(f.buffer)[0] == root
                    for f in findings if f.kind in ACCESS_KINDS):
                out.append(f"missed: {kind} {first} -> {second} on {buffer!r}")
        elif frozenset((first, second)) not in unordered and not any((k, first, second) in fast for k in ACCESS_KINDS):
            out.append(f"reported in the other order: {kind} {first} -> {second}")
    uses = {(f.first, f.second) for f in findings if f.kind == "use_after_destroy"}
    for pair in sorted(uses - verdict.use_after_destroy):
        out.append(f"false use_after_destroy: {pair}")
    if verdict.use_after_destroy and not uses:
        out.append(f"missed use_after_destroy: {sorted(verdict.use_after_destroy)}")
    misuse = {f.ops[-1] for f in findings if f.kind == "fence_misuse"}
    if misuse != verdict.fence_misuse:
        out.append(f"fence_misuse at {sorted(misuse)}, the reference at {sorted(verdict.fence_misuse)}")
    return out + event_race_disagreements(findings, oracles, verdict)


def event_race_disagreements(findings, oracles: list[Reference], verdict) -> list[str]:
    """How the checker's event_race findings differ from the reference's (Verdict.event_races), as unordered pairs
    (which of two racing operations the schedule ran first is its choice). The checker compares a set or reset with
    the operations no later one stands for (engine.Checker.event_operation): a pair it leaves out is reported as
    the pair of a later operation the first happens-before and the same second (or the other way round)."""
    fast = {(f.buffer, frozenset((f.first, f.second))) for f in findings if f.kind == "event_race"}
    reference = {(event, frozenset((a, b))) for event, a, b in verdict.event_races}
    out = [f"false event_race: {event} {' / '.join(sorted(pair))} (the reference orders it)"
           for event, pair in sorted(fast - reference, key=str)]
    for event, pair in sorted(reference - fast, key=str):
        a, b = sorted(pair)
        stands = any(e == event and side in other and any(
            o.event_hb(kept, c) for o in oracles for c in other - {side})
            for e, other in fast for kept, side in ((a, b), (b, a)))
        if not stands:
            out.append(f"missed: event_race {event} {a} / {b}")
    return out


def _happens_before(oracle: Reference, first: str, second: str, root: str) -> bool:
    """Whether an access of `first` to memory `root` happens-before one of `second` by the reference, or comes
    before it as layout transitions of one queue do (Reference.transition_order)."""
    return any(oracle.hb(a.node, b.node) or oracle.transition_order(a, b)
               for a in oracle.accesses if a.ref == first and a.root == root
               for b in oracle.accesses if b.ref == second and b.root == root)


def _shadowed(stream: ir.Stream, findings, oracle: Reference, first: str, second: str, root: str) -> bool:
    """Whether the checker's access findings on memory `root` stand for the pair (first, second) it does not
    report: it compares an access with the most recent write and the latest read per stage since it
    (syncval's; an execution dependency that orders the latest read orders the earlier ones at its stage),
    so a path of reported pairs from `first`, from a later read at a stage `first` reads at, or from a write ordered
    after `first`, through operations that write there, reaches `second`, or reaches a write that may have
    superseded `first` (which write is the most recent when `second` runs depends on the schedule)."""
    edges: dict[str, set[str]] = {}
    writers = set()
    on_root = [f for f in findings if f.kind in ACCESS_KINDS and stream.index.root(f.buffer)[0] == root]
    for f in on_root:
        edges.setdefault(f.first, set()).add(f.second)
        edges.setdefault(f.second, set()).add(f.first)
        writers.add(f.first if f.kind == "raw" else f.second)
        if f.kind == "waw" or f.kind == "raw" and "write" in f.second_access.partition("/")[2]:
            writers.add(f.first if f.kind == "waw" else f.second)  # a read_write second writes there too
    stages = {a.stage for a in oracle.accesses if a.ref == first and a.root == root}
    # From `first`, from a later read at a stage it reads at, and from a write the reference orders after it (which
    # superseded it as the most recent write: the checker compares later accesses with that one).
    # A finding names one access of its command (the first found): a later command reading at several stages (an
    # indirect dispatch's draw_indirect and compute_shader reads) is such a read at each of them.
    later = {f.first for f in on_root if f.first_access.split("/")[0] in stages} | \
        {a.ref for a in oracle.accesses if a.root == root and a.stage in stages and not a.write and a.ref in edges}
    todo = [first] + sorted(later - {first}) + \
        [w for w in writers if w != first and _happens_before(oracle, first, w, root)]
    seen = set(todo)
    while todo:
        for other in edges.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                if other in writers:
                    todo.append(other)
    return second in seen or bool(seen & writers - {first})


def _names(value) -> list[str]:
    """A stage or access mask as the format writes it (a name, a list, or absent: none) as a list."""
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def fix_disagreements(doc: dict) -> list[str]:
    """Each access finding between two commands of one command buffer gives a barrier between them as its fix
    (fixes.py); recorded right before the second command, it must order the pair by the reference (spec 7.1:
    a memory dependency from the first's write to the second's accesses, an execution dependency for a WAR).
    Empty: every such fix does."""
    stream = from_dict(doc)
    out = []
    for f in check(stream):
        if f.kind not in ACCESS_KINDS or "@" in f.first + f.second:  # a resubmitted command: its submit too
            continue
        first, second = parse_ref(f.first), parse_ref(f.second)
        if first.owner != second.owner or first.owner not in doc["command_buffers"] or first.index >= second.index:
            continue
        (src_stage, src), (dst_stage, dst) = (a.split("/") for a in (f.first_access, f.second_access))
        memory = f.kind != "war"
        writes = [a for a in src.split("+") if "write" in a] if memory else []
        commands = doc["command_buffers"][first.owner]
        if src_stage == dst_stage == LAYOUT_TRANSITION:
            continue  # two transitions: the fix names a stage in two barriers (fixes._transitions), not one edit
        # A wait's transition after the first: its fix is a barrier before the wait to all_commands (fixes._before_wait)
        wait = dst_stage == LAYOUT_TRANSITION and commands[second.index]["cmd"] == "wait_events"
        if LAYOUT_TRANSITION in (src_stage, dst_stage) and not wait:  # the fix widens the transition's barrier
            at = second.index if dst_stage == LAYOUT_TRANSITION else first.index
            side, stage, access = ("src", src_stage, writes) if dst_stage == LAYOUT_TRANSITION else \
                ("dst", dst_stage, dst.split("+") if memory else [])
            transition = dict(commands[at])
            transition["images"] = [{**ib, f"{side}_stage": _names(ib.get(f"{side}_stage", transition.get(
                f"{side}_stage", "all_commands"))) + [stage], f"{side}_access": _names(ib.get(
                    f"{side}_access", transition.get(f"{side}_access"))) + access} for ib in transition["images"]]
            fixed = {**doc, "command_buffers": {**doc["command_buffers"], first.owner: (
                commands[:at] + [transition] + commands[at + 1:])}}
            moved = f.second
        else:
            barrier = {"cmd": "barrier", "src_stage": [src_stage], "dst_stage": ["all_commands" if wait else dst_stage],
                       "src_access": writes, "dst_access": dst.split("+") if memory and not wait else []}
            fixed = {**doc, "command_buffers": {**doc["command_buffers"], first.owner: (
                commands[:second.index] + [barrier] + commands[second.index:])}}
            moved = format_ref(second.owner, second.index + 1)
        root = stream.index.root(f.buffer)[0]
        left = [c for c in Reference(from_dict(fixed)).conflicts() if not c.ordered and c.first.root == root
                and (c.first.ref, c.second.ref) == (f.first, moved)
                and (_access_text(c.first), _access_text(c.second)) == (f.first_access, f.second_access)]
        if left:
            out.append(f"{f.kind} {f.first} -> {f.second}: its fix ({f.fix}) leaves the pair unordered")
    return out



# ---- the consumers of happens-before: explain and the mutation analysis ----------------------------


def consumer_disagreements(doc: dict, mutants: int = 3) -> list[str]:
    """How `explain` and the mutation analysis differ from the reference and the fast checker on `doc`
    (empty: they agree).

    - explain = reference: for every conflicting pair of accesses (reference.Conflict), explain's verdict on
      their common bytes is the reference's (happens-before, and a memory dependency where the first writes);
    - explain = checker: of the pairs the checker compares (the most recent write and the reads since it, as
      hb.Model replays them), it reports exactly those explain does not order; explain orders none it reports;
    - mutation analysis = checker: dropping an operation `analyze` calls load-bearing for a pair makes the
      checker report that pair (or the mutant no longer completes); dropping one that is not load-bearing for
      an ordered pair leaves it unreported. `mutants`: how many (operation, pair) of each kind are tried.
    """
    stream = from_dict(doc)
    analysis = analyze(stream)
    explained = _Explained(stream)
    out = []
    for c in Reference(stream).conflicts():
        said = explained.ordered(c.first, c.second, None, [(c.first.lo, c.first.hi)])
        what = f"{c.first.ref} {_access_text(c.first)} -> {c.second.ref} {_access_text(c.second)} " \
               f"[{c.first.lo}, {c.first.hi})"
        if said is None:
            out.append(f"explain pairs no such accesses: {what}")
        elif said != c.ordered:
            out.append(f"explain says {_ordered_text(said)}, the reference {_ordered_text(c.ordered)}: {what}")
    return out + _explain_checker_disagreements(stream, analysis, explained) + \
        _mutation_disagreements(stream, analysis, mutants) + event_explain_disagreements(stream)


def event_explain_disagreements(stream: ir.Stream, most: int = 6) -> list[str]:
    """How `explain` of two sets or resets of one event differs from the reference's ordering of their event
    operations (Reference.event_hb), for the first `most` pairs (each, in stream order, not two resets)."""
    oracle = Reference(stream)
    pairs = [(a[0].ref, b[0].ref) for ops in oracle.event_operations.values() for i, a in enumerate(ops)
             for b in ops[i + 1:] if a[1] or b[1]]
    out = []
    for a, b in pairs[:most]:
        said, truth = explain(stream, a, b).ordered, oracle.event_hb(a, b)
        if said != truth:
            out.append(f"explain says {_ordered_text(said)}, the reference {_ordered_text(truth)}: event operations "
                       f"{a} -> {b}")
    return out


def explain_disagreements(doc: dict) -> list[str]:
    """How `explain` differs from the fast checker on `doc`, of any number of host threads (empty: they agree):
    consumer_disagreements' second and third points."""
    stream = from_dict(doc)
    return _explain_checker_disagreements(stream, analyze(stream), _Explained(stream))


def _explain_checker_disagreements(stream: ir.Stream, analysis, explained: _Explained) -> list[str]:
    """Of the pairs the checker compares (hb.Model's), it reports exactly those explain does not order; explain
    orders none it reports."""
    findings = check(stream)
    # hb.Model's pairs are the walk's submission order's. A pair explain orders there may race in another order the
    # threads allow (a submit of one thread ahead of another thread's signal on a shared queue): a finding only that
    # order gives (Finding.order) is explain's to read in its own order (below), not a report of the pair here. A
    # pair explain leaves unordered, the checker may report from another order: where threads share a queue,
    # explain orders another thread's submits only as the host orders them (docs/format.md, "Several host
    # threads"), while the checker's run of the walk's order reads that order as a schedule of its own.
    in_walk = _checker_names(stream, [f for f in findings if f.order is None])
    in_any = _checker_names(stream, findings)
    out = []
    said: dict[tuple, list[bool | None]] = {}
    pairs: dict[tuple, list] = {}
    for p in analysis.model.pairs.values():
        if p.kind in ACCESS_KINDS:
            said.setdefault(_named(p), []).append(explained.ordered(p.first, p.second, p.kind, p.segments))
            pairs.setdefault(_named(p), []).append(p)
    # An access with a RAW (against any write it meets: the latest, or an atomic since) is not also a WAW
    # (docs/format.md, checker conventions): its raw rows stand for it.
    with_raw = {(second, root) for (kind, _, second, root), verdicts in said.items()
                if kind == "raw" and not all(verdicts)}
    for named, verdicts in said.items():
        kind, first, second, root = named
        if kind == "waw" and (second, root) in with_raw:
            continue
        what = f"{kind} {first} -> {second}"
        if None in verdicts:
            out.append(f"explain pairs no such accesses: {what}")
        elif all(verdicts) == _reported(in_walk if all(verdicts) else in_any, named, _accesses(*pairs[named]),
                                        any(p.second.reads for p in pairs[named])):
            out.append(f"explain says {_ordered_text(all(verdicts))}, the checker "
                       f"{'reports' if all(verdicts) else 'does not report'} {what}")
    for f in findings:
        if f.kind in ACCESS_KINDS and explain(stream, f.first, f.second).ordered:
            out.append(f"explain says ordered: {f.kind} {f.first} -> {f.second}, which the checker reports")
    return out


class _Explained:
    """explain's verdicts on pairs of accesses, explain run once per pair of operations."""

    def __init__(self, stream: ir.Stream) -> None:
        self.stream = stream
        self.runs: dict[tuple[str, str], list] = {}

    def ordered(self, first, second, kind: str | None, segments: list[tuple[int, int]]) -> bool | None:
        """Whether explain orders `second` after `first` on the root-memory byte `segments` (`kind`: only
        its pairs of that kind); None where it pairs no such accesses."""
        key = (first.ref, second.ref)
        if key not in self.runs:
            self.runs[key] = explain(self.stream, *key).pairs
        base = self.stream.index.root(second.buffer)[1]
        on = [p for p in self.runs[key] if p.kind != "keepalive" and kind in (None, p.kind)
              and p.buffer == second.buffer and p.first == _access_text(first) and p.second == _access_text(second)
              and any(p.range[0] < hi - base and lo - base < p.range[1] for lo, hi in segments)]
        return all(p.ordered for p in on) if on else None


def _named(pair) -> tuple[str, str, str, str]:
    """A pair as the checker names it: one finding for the accesses of two operations to one memory (a
    dispatch_indirect reads one buffer at two stages): (kind, first, second, root memory)."""
    return pair.kind, pair.first.ref, pair.second.ref, pair.first.root


def _checker_names(stream: ir.Stream, findings) -> set[tuple]:
    """The pairs the checker's findings name, as _named does; a racing pair (named in one canonical order,
    whichever side the schedule ran first) also as ("racing", {(first, its access), (second, its access)},
    root): racing is a property of the two accesses, not of their commands."""
    out = set()
    for f in findings:
        if f.kind in ACCESS_KINDS:
            root = stream.index.root(f.buffer)[0]
            out.add((f.kind, f.first, f.second, root))
            if f.racing:
                out.add(("racing", frozenset(((f.first, f.first_access), (f.second, f.second_access))), root))
    return out


def _reported(names: set[tuple], named: tuple[str, str, str, str], accesses: set[tuple[str, str]],
              reads: bool = False) -> bool:
    """Whether the checker's `names` (_checker_names) report the pair `named` (_named) of the (first, second)
    `accesses`; `reads`: the second access reads too, so that the WAW of its write is reported as the RAW of its
    read where that misses a memory dependency as well (one finding per access, the first part a dependency
    misses: AccessState.detect; hb.conflicts makes such a pair both)."""
    kind, first, second, root = named
    return named in names or kind == "waw" and reads and ("raw", first, second, root) in names or \
        any(("racing", frozenset(((first, a), (second, b))), root) in names for a, b in accesses)


def _pair_reported(names: set[tuple], pair) -> bool:
    """Whether the checker's `names` report hb.Model's `pair`."""
    return _reported(names, _named(pair), _accesses(pair), bool(pair.second.reads))


def _accesses(*pairs) -> set[tuple[str, str]]:
    return {(_access_text(p.first), _access_text(p.second)) for p in pairs}


def _access_text(x) -> str:
    """An access as explain and the checker describe it: `stage/reads+write`."""
    return f"{stage_text(x.stage)}/{'+'.join(x.reads + ((x.write,) if x.write else ()))}"


def _ordered_text(ordered: bool) -> str:
    return "ordered" if ordered else "NOT ordered"


def _mutation_disagreements(stream: ir.Stream, analysis, mutants: int) -> list[str]:
    """Dropping a load-bearing operation unorders its pair (by the reference on the mutant) and the checker
    finds a new hazard on the pair's memory (the checker's schedule of the mutant may differ, so which pair
    it names may too); dropping another operation leaves the pair ordered and unreported. Only pairs the
    checker does not already report are tried, and no signal whose waits another signal of its semaphore
    can satisfy instead: the mutant re-pairs them (generate.py's model check calls such mutants equivalent)."""
    before = _checker_names(stream, check(stream))
    bearing = [(op, pair) for op, pairs in sorted(analysis.load_bearing.items()) for pair in pairs
               if pair.kind in ACCESS_KINDS and not _pair_reported(before, pair)
               and not _resignalled(stream, op)]
    ordered = [p for p in analysis.model.pairs.values()
               if p.kind in ACCESS_KINDS and not _pair_reported(before, p)
               and p not in analysis.unordered]
    ops = sorted({op for n in analysis.model.nodes.values() for op in n.ops})
    named = {(op, _named(p)) for op, pairs in analysis.load_bearing.items() for p in pairs}
    spare = [(op, p) for p in ordered for op in ops if (op, _named(p)) not in named]
    pick = Random(" ".join(op + pair_name(p) for op, p in bearing + spare))
    out = []
    for load_bearing, samples in ((True, bearing), (False, spare)):
        for op, pair in pick.sample(samples, min(mutants, len(samples))):
            mutant, refmap = o.drop(stream, op)
            findings = [_translated(f, refmap) for f in check(mutant)]
            if not completes(findings):
                continue
            try:
                ordered = _ordered_in(Reference(mutant), refmap, pair)
            except OutsideReference:
                continue
            new = [f for f in findings if f.kind in ACCESS_KINDS and stream.index.root(f.buffer)[0] ==
                   pair.first.root and not _reported(before, (f.kind, f.first, f.second, pair.first.root),
                                                     {(f.first_access, f.second_access)})]
            what = f"dropping {op}, {'' if load_bearing else 'not '}load-bearing for {pair_name(pair)},"
            if ordered == load_bearing:
                out.append(f"{what} leaves it {_ordered_text(ordered)} by the reference")
            # A racing pair the checker's schedule ran interleaved with the other queue's accesses can hide behind
            # a more recent write (docs/format.md, Findings): a racing finding naming either side stands for it.
            hidden = any(f.racing and {f.first, f.second} & {pair.first.ref, pair.second.ref} for f in findings
                         if f.kind in ACCESS_KINDS and stream.index.root(f.buffer)[0] == pair.first.root)
            if load_bearing and not new and not hidden:
                out.append(f"{what} makes the checker find no new hazard on its memory")
            if not load_bearing and _pair_reported(_checker_names(mutant, findings), pair):
                out.append(f"{what} makes the checker report it")
    return out


def _resignalled(stream: ir.Stream, op: str) -> bool:
    """Whether `op` is a semaphore signal (of a submit or the host) and another signal of its semaphore could
    satisfy its waits once it is dropped (any other signal of a binary semaphore, one at least as high of a
    timeline)."""
    head, rest = split_ref(op)
    host_op = stream.index.threads[head.owner].ops[head.index] if head.owner in stream.index.threads else None
    if ".signal[" in rest:
        bi, _, k = o.batch_ref(rest)
        dropped = host_op.batches[bi].signals[k]
    elif not rest and isinstance(host_op, ir.SignalSemaphore):
        dropped = host_op
    else:
        return False
    others = [x for t in stream.threads for h in t.ops for x in signals(h)
              if x is not dropped and x.semaphore == dropped.semaphore]
    return any(dropped.value is None or x.value >= dropped.value for x in others)


def _ordered_in(reference: Reference, refmap, pair) -> bool:
    """Whether the reference on a mutant orders the pair's accesses on all of its bytes, as the pair's kind
    asks (a read_write access is a RAW pair and a WAW pair: spec 7.1 note)."""
    def same(x, y) -> bool:
        return (o.translate(x.ref, refmap), stage_text(x.stage), x.reads, x.write) == \
            (y.ref, stage_text(y.stage), y.reads, y.write)

    def ordered(a, b) -> bool:
        if not reference.hb(a.node, b.node):
            return False
        needs = {"raw": b.reads, "waw": (b.write,), "war": ()}[pair.kind]
        return not needs or reference.memory_dependency(a, b, needs)
    return all(ordered(c.first, c.second) for c in reference.conflicts()
               if c.first.root == pair.first.root and any(c.first.lo < hi and lo < c.first.hi
                                                          for lo, hi in pair.segments)
               and (same(c.first, pair.first) and same(c.second, pair.second)
                    or same(c.first, pair.second) and same(c.second, pair.first)))


def _translated(finding, refmap):
    """A mutant's access finding by the original stream's references (any other as it is)."""
    if finding.kind not in ACCESS_KINDS:
        return finding
    return replace(finding, first=o.translate(finding.first, refmap), second=o.translate(finding.second, refmap))
