"""Small random streams and the comparison of the fast checker with the slow reference.

Shared by tests/test_reference.py (hypothesis, in the suite) and benchmarks/differential.py (long runs
with many more examples). A stream here has one host thread and 1-3 queues: barriers with random stage
and access masks over whole buffers or partial ranges, binary and timeline semaphores (a host-signalled
timeline among them, waited before its signal), fences and their resets, host writes and reads of
coherent and non-coherent memory with flushes and invalidates, an alias, idle waits and a destroy.
"""

from __future__ import annotations

from hypothesis import strategies as st

from vkverify.check import check
from vkverify.check.findings import ACCESS_KINDS
from vkverify.check.reference import Reference
from vkverify.model import from_dict

STAGES = ["none", "top_of_pipe", "draw_indirect", "compute_shader", "copy", "clear", "transfer", "host",
          "all_transfer", "all_commands", "bottom_of_pipe"]
ACCESSES = ["none", "indirect_command_read", "uniform_read", "shader_read", "shader_write", "shader_storage_read",
            "shader_storage_write", "transfer_read", "transfer_write", "host_read", "host_write", "memory_read",
            "memory_write"]
SEMAPHORE_STAGES = ["all_commands", "compute_shader", "copy", "transfer", "bottom_of_pipe", "top_of_pipe",
                    "draw_indirect"]
SHADERS = {"w": ["write"], "r": ["read"], "rw": ["read", "write"], "x": ["read_write"]}
SIZE = 64
HOST_VISIBLE = ("host_coherent", "host_cached")
# Findings about liveness: the reference reads only streams that complete.
NOT_COMPARED = ("deadlock", "wait_never_satisfied", "binary_semaphore_misuse", "timeline_not_increasing")


@st.composite
def _range(draw, size: int = SIZE) -> dict:
    if draw(st.booleans()):
        return {}
    lo = draw(st.integers(0, size // 16 - 1))
    hi = draw(st.integers(lo + 1, size // 16))
    return {"offset": lo * 16, "size": (hi - lo) * 16}


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
        return {"cmd": "fill", "dst": dst, **draw(_range(sizes[dst])), "value": 7}
    if kind == "copy":
        src, dst = draw(st.lists(st.sampled_from(buffers), min_size=2, max_size=2, unique=True))
        n = draw(st.integers(1, min(sizes[src], sizes[dst]) // 16)) * 16
        return {"cmd": "copy", "src": src, "dst": dst, "regions": [
            {"src_offset": draw(st.integers(0, (sizes[src] - n) // 16)) * 16,
             "dst_offset": draw(st.integers(0, (sizes[dst] - n) // 16)) * 16, "size": n}]}
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
                        "offset": draw(st.sampled_from([0, 32])), "size": 32})
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
        kind = draw(st.sampled_from(["submit"] * 4 + ["wait_fences", "reset_fences", "wait_semaphores",
                                                      "signal_semaphore", "host", "host", "idle", "destroy"]))
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
        elif kind == "wait_semaphores" and any(timeline.values()):
            t = draw(st.sampled_from([t for t, v in timeline.items() if v]))
            ops.append({"op": "wait_semaphores", "waits": [{"semaphore": f"T{t}",
                                                            "value": draw(st.integers(1, timeline[t]))}]})
        elif kind == "signal_semaphore":
            host_value += 1
            ops.append({"op": "signal_semaphore", "semaphore": "H", "value": host_value})
        elif kind == "host" and visible:
            what = draw(st.sampled_from(["host_write", "host_write", "host_read", "flush", "invalidate"]))
            ops.append({"op": what, "buffer": draw(st.sampled_from(visible)), **draw(_range(32))})
        elif kind == "idle":
            ops.append(draw(st.sampled_from([{"op": "queue_wait_idle", "queue": draw(st.sampled_from(queues))},
                                             {"op": "device_wait_idle"}])))
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


def completes(findings) -> bool:
    return not any(f.kind in NOT_COMPARED for f in findings)


def disagreements(doc: dict) -> list[str]:
    """How the fast checker's findings differ from the reference's verdict on the stream `doc`
    (empty: they agree). Racing pairs compare as unordered pairs: which side comes first, and so
    whether the pair is called raw or war, depends on the schedule."""
    stream = from_dict(doc)
    findings = check(stream)
    verdict = Reference(stream).verdict()
    out = []
    fast = {(f.kind, f.first, f.second) for f in findings if f.kind in ACCESS_KINDS}
    reference = {(h.kind, h.first, h.second) for h in verdict.hazards}
    loose = {frozenset((h.first, h.second)) for h in verdict.hazards}
    for kind, first, second in sorted(fast - reference):
        if frozenset((first, second)) not in loose:
            out.append(f"false positive: {kind} {first} -> {second} (the reference orders it)")
        elif not any(h.racing for h in verdict.hazards if {h.first, h.second} == {first, second}):
            out.append(f"wrong kind or order: {kind} {first} -> {second}")
    fast_roots = _hazard_memories(stream, {(f.buffer) for f in findings if f.kind in ACCESS_KINDS})
    reference_roots = _hazard_memories(stream, {h.buffer for h in verdict.hazards})
    for root in sorted(reference_roots - fast_roots):
        pairs = sorted(f"{h.kind} {h.first} -> {h.second} [{h.lo}, {h.hi})" for h in verdict.hazards
                       if stream.index.root(h.buffer)[0] == root)
        out.append(f"missed: no finding on memory {root!r}; the reference has {', '.join(pairs)}")
    uses = {(f.first, f.second) for f in findings if f.kind == "use_after_destroy"}
    for pair in sorted(uses - verdict.use_after_destroy):
        out.append(f"false use_after_destroy: {pair}")
    if verdict.use_after_destroy and not uses:
        out.append(f"missed use_after_destroy: {sorted(verdict.use_after_destroy)}")
    misuse = {f.ops[-1] for f in findings if f.kind == "fence_misuse"}
    if misuse != verdict.fence_misuse:
        out.append(f"fence_misuse at {sorted(misuse)}, the reference at {sorted(verdict.fence_misuse)}")
    return out


def _hazard_memories(stream, buffers) -> set[str]:
    return {stream.index.root(b)[0] for b in buffers if b is not None}
