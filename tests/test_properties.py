"""Properties of the checker over random streams built with the builder (hypothesis).

1. A fully synchronized version of any stream (a full memory barrier between every two adjacent
   commands, every submit with its own fence that the host waits right after the submit, so every
   cross-queue submit follows the previous submit's fence wait) has no raw/war/waw finding between two
   device commands.
2. Removing any one barrier never removes a finding.
3. The verdict survives the JSON round trip loads(dumps(s)).
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vkverify.check import check
from vkverify.model import dumps, loads
from vkverify.model.builder import Stream

STAGES = ["none", "top_of_pipe", "draw_indirect", "compute_shader", "copy", "clear", "transfer", "host",
          "all_transfer", "all_commands", "bottom_of_pipe"]
ACCESSES = ["none", "indirect_command_read", "uniform_read", "shader_read", "shader_write", "shader_storage_read",
            "shader_storage_write", "transfer_read", "transfer_write", "host_read", "host_write", "memory_read",
            "memory_write"]
SHADERS = {"w": ["write"], "rw": ["read", "write"], "x": ["read_write"], "rrw": ["read", "read", "write"],
           "rx": ["read", "read_write"], "r": ["read"]}
FULL_BARRIER = {"src_stage": ["all_commands"], "src_access": ["memory_write"],
                "dst_stage": ["all_commands"], "dst_access": ["memory_read", "memory_write"]}
ACCESS_KINDS = {"raw", "war", "waw"}
HOST_REF = re.compile(r"^main\[\d+\]$")

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- the strategy: a plan (plain data) that `build` turns into a stream --------------------------


def _masks(draw) -> list[str]:
    return draw(st.lists(st.sampled_from(STAGES), max_size=3, unique=True))


@st.composite
def ranges(draw, size: int) -> tuple[int, int] | None:
    """(offset, size), 4-byte aligned, within a buffer of `size`; None: the whole buffer."""
    if draw(st.booleans()):
        return None
    words = size // 4
    lo = draw(st.integers(0, words - 1))
    hi = draw(st.integers(lo + 1, words))
    return lo * 4, (hi - lo) * 4


@st.composite
def commands(draw, buffers: list[tuple[str, int, str]]):
    ids = [b[0] for b in buffers]
    sizes = {b[0]: b[1] for b in buffers}
    kind = draw(st.sampled_from(["fill", "copy", "dispatch", "dispatch", "indirect", "barrier", "barrier"]))
    if kind == "fill":
        dst = draw(st.sampled_from(ids))
        return ("fill", dst, draw(ranges(sizes[dst])))
    if kind == "copy":
        src, dst = draw(st.lists(st.sampled_from(ids), min_size=2, max_size=2, unique=True))
        smaller = min(sizes[src], sizes[dst])
        regions = None
        if draw(st.booleans()):
            n = draw(st.integers(1, smaller // 4))
            regions = [(draw(st.integers(0, (sizes[src] // 4) - n)) * 4,
                        draw(st.integers(0, (sizes[dst] // 4) - n)) * 4, n * 4)]
        return ("copy", src, dst, regions)
    if kind in ("dispatch", "indirect"):
        shader = draw(st.sampled_from(sorted(k for k, v in SHADERS.items() if len(v) <= len(ids))))
        bound = draw(st.lists(st.sampled_from(ids), min_size=len(SHADERS[shader]),
                              max_size=len(SHADERS[shader]), unique=True))
        binds = [(b, draw(ranges(sizes[b]))) for b in bound]
        indirect = None
        if kind == "indirect":
            buf = draw(st.sampled_from(ids))
            indirect = (buf, draw(st.integers(0, (sizes[buf] - 12) // 4)) * 4)
        return ("dispatch", shader, binds, indirect)
    entries = None
    if draw(st.booleans()):
        entries = []
        for b in draw(st.lists(st.sampled_from(ids), min_size=1, max_size=2, unique=True)):
            r = draw(ranges(sizes[b]))
            entry = {"buffer": b} if r is None else {"buffer": b, "offset": r[0], "size": r[1]}
            if draw(st.booleans()):
                entry["src_access"] = draw(st.lists(st.sampled_from(ACCESSES), max_size=2, unique=True))
                entry["dst_access"] = draw(st.lists(st.sampled_from(ACCESSES), max_size=2, unique=True))
            entries.append(entry)
    return ("barrier", _masks(draw), draw(st.lists(st.sampled_from(ACCESSES), max_size=3, unique=True)),
            _masks(draw), draw(st.lists(st.sampled_from(ACCESSES), max_size=3, unique=True)), entries)


@st.composite
def plans(draw):
    n_queues = draw(st.integers(1, 2))
    n_buffers = draw(st.integers(2, 5))
    buffers = [(f"B{i}", draw(st.sampled_from([256, 512, 1024])),
                draw(st.sampled_from(["device_local", "device_local", "host_coherent"]))) for i in range(n_buffers)]
    cbs = [draw(st.lists(commands(buffers), min_size=1, max_size=5)) for _ in range(draw(st.integers(1, 4)))]
    # each command buffer is submitted once, in order, one or two per submit
    submits, i = [], 0
    timeline_values: list[tuple[str, int]] = []
    binary_pending: list[str] = []
    while i < len(cbs):
        n = draw(st.integers(1, min(2, len(cbs) - i)))
        k = len(submits)
        queue = f"q{draw(st.integers(0, n_queues - 1))}"
        wait, signal = [], []
        if n_queues == 2:
            if timeline_values and draw(st.booleans()):
                semaphore, value = draw(st.sampled_from(timeline_values))
                wait.append({"semaphore": semaphore, "value": value, "stage": draw(st.sampled_from(STAGES))})
            if binary_pending and draw(st.booleans()):
                wait.append({"semaphore": binary_pending.pop(0), "stage": draw(st.sampled_from(STAGES))})
            choice = draw(st.sampled_from(["none", "timeline", "binary"]))
            stage = draw(st.sampled_from(["all_commands", "compute_shader", "copy", "bottom_of_pipe"]))
            if choice == "timeline":
                # One timeline per queue: two queues signalling one timeline unordered is itself a
                # timeline_not_increasing (some schedule runs the larger value first).
                timeline_values.append((f"T{queue}", k + 1))
                signal.append({"semaphore": f"T{queue}", "value": k + 1, "stage": stage})
            elif choice == "binary":
                binary_pending.append(f"S{k}")
                signal.append({"semaphore": f"S{k}", "stage": stage})
        submits.append({"queue": queue, "cbs": [f"cb{j}" for j in range(i, i + n)], "wait": wait,
                        "signal": signal, "fence": draw(st.booleans()), "host_wait": draw(st.booleans())})
        i += n
    return {"n_queues": n_queues, "buffers": buffers, "cbs": cbs, "submits": submits}


def _range_fields(r) -> dict:
    return {} if r is None else {"offset": r[0], "size": r[1]}


def build(plan: dict, synchronized: bool = False, drop: tuple[int, int] | None = None):
    """The stream of `plan`; `synchronized`: the property-1 version; `drop`: (cb, command) to leave out."""
    queues = [{"id": f"q{i}", "family": 0} for i in range(plan["n_queues"])]
    s = Stream("random", devices=[{"id": "gpu0", "queues": queues}])
    for shader, bindings in SHADERS.items():
        s.declare_shader(shader, bindings)
    for b, size, memory in plan["buffers"]:
        s.create_buffer(b, size, memory=memory)
    for q in range(plan["n_queues"]):
        s.create_semaphore(f"Tq{q}", timeline=True)
    for k, sub in enumerate(plan["submits"]):
        s.create_semaphore(f"S{k}")
        s.create_fence(f"F{k}")
    s.create_fence("Finit")
    # initialization: the host writes the host-visible buffers, a fill writes the device-local ones
    init = s.allocate_command_buffer("init")
    for b, size, memory in plan["buffers"]:
        if memory == "device_local":
            init.cmd_fill_buffer(b, 0, size, value=1)
        else:
            s.host_write(b, 0, size)
    s.queue_submit("q0", ["init"], fence="Finit")
    s.wait_for_fences(["Finit"])
    for c, cmds in enumerate(plan["cbs"]):
        cb = s.allocate_command_buffer(f"cb{c}")
        for i, cmd in enumerate(cmds):
            if synchronized:
                cb.cmd_pipeline_barrier2(**FULL_BARRIER)
            if (c, i) == drop:
                continue
            if cmd[0] == "fill":
                cb._add("fill", dst=cmd[1], value=7, **_range_fields(cmd[2]))
            elif cmd[0] == "copy":
                cb.cmd_copy_buffer(cmd[1], cmd[2], regions=cmd[3])
            elif cmd[0] == "dispatch":
                binds = [{"buffer": b, **_range_fields(r)} for b, r in cmd[2]]
                indirect = None if cmd[3] is None else {"buffer": cmd[3][0], "offset": cmd[3][1]}
                cb.cmd_dispatch(cmd[1], binds, indirect=indirect)
            else:
                cb.cmd_pipeline_barrier2(cmd[1], cmd[2], cmd[3], cmd[4], buffers=cmd[5])
    for k, sub in enumerate(plan["submits"]):
        fence = f"F{k}" if synchronized or sub["fence"] else None
        s.queue_submit(sub["queue"], sub["cbs"], wait=sub["wait"] or None, signal=sub["signal"] or None,
                       fence=fence)
        if fence is not None and (synchronized or sub["host_wait"]):
            s.wait_for_fences([fence])
    return s.build()


def barriers(plan: dict) -> list[tuple[int, int]]:
    return [(c, i) for c, cmds in enumerate(plan["cbs"]) for i, cmd in enumerate(cmds) if cmd[0] == "barrier"]


def key(f) -> tuple:
    return (f.kind, f.buffer, f.first, f.second, f.ops)


def shift(ref: str | None, drop: tuple[int, int]) -> str | None:
    """The reference `ref` has once command `drop` is removed."""
    if ref is None:
        return None
    m = re.fullmatch(r"cb(\d+)\[(\d+)\](@.*)?", ref)
    if m is None or int(m.group(1)) != drop[0] or int(m.group(2)) < drop[1]:
        return ref
    assert int(m.group(2)) != drop[1], f"a barrier ({ref}) is named in a finding"
    return f"cb{m.group(1)}[{int(m.group(2)) - 1}]{m.group(3) or ''}"


# ---- the properties -------------------------------------------------------------------------------


@SETTINGS
@given(plans())
def test_generated_streams_are_valid_and_well_formed(plan):
    """The generator produces loadable streams without deadlocks or semaphore/fence misuse."""
    findings = check(build(plan))
    assert not {f.kind for f in findings} & {"deadlock", "wait_never_satisfied", "timeline_not_increasing",
                                             "binary_semaphore_misuse", "fence_misuse", "uninitialized_read",
                                             "use_after_destroy", "ownership_missing"}, findings


@SETTINGS
@given(plans())
def test_fully_synchronized_stream_has_no_device_hazards(plan):
    stream = build(plan, synchronized=True)
    bad = [f for f in check(stream) if f.kind in ACCESS_KINDS
           and not HOST_REF.match(f.first or "main[0]") and not HOST_REF.match(f.second or "main[0]")]
    assert bad == [], bad


def missing_after(before: set, after: set) -> set:
    """The findings of `before` that `after` lacks. A read_write access is one finding per pair of
    operations: RAW when its read is not ordered, else WAW (docs/format.md; corpus 60 "RAW only"),
    so a WAW whose pair becomes a RAW once a barrier is gone is still reported, as that RAW."""
    return {k for k in before - after
            if not (k[0] == "waw" and ("raw",) + k[1:] in after)}


@SETTINGS
@given(plans())
def test_removing_a_barrier_never_removes_a_finding(plan):
    before = check(build(plan))
    for drop in barriers(plan):
        expected = {(k, b, shift(f, drop), shift(s, drop), o) for k, b, f, s, o in map(key, before)}
        after = {key(f) for f in check(build(plan, drop=drop))}
        assert not missing_after(expected, after), (drop, missing_after(expected, after))


def test_removing_a_barrier_can_turn_waw_into_raw():
    """The case behind `missing_after`: the barrier makes cb0[0]'s write visible to the read of the
    read_write binding only, so cb0[2] is a WAW; without the barrier it is a RAW (and, one finding per
    pair, no WAW)."""
    plan = {"n_queues": 1, "buffers": [("B0", 256, "device_local"), ("B1", 256, "device_local")],
            "cbs": [[("dispatch", "rw", [("B0", None), ("B1", None)], None),
                     ("barrier", ["compute_shader"], ["shader_write"], ["compute_shader"], ["shader_read"], None),
                     ("dispatch", "x", [("B1", None)], None)]],
            "submits": [{"queue": "q0", "cbs": ["cb0"], "wait": [], "signal": [], "fence": False,
                         "host_wait": False}]}
    assert {key(f) for f in check(build(plan))} == {("waw", "B1", "cb0[0]", "cb0[2]", None)}
    assert {key(f) for f in check(build(plan, drop=(0, 1)))} == {("raw", "B1", "cb0[0]", "cb0[1]", None)}


@SETTINGS
@given(plans(), st.booleans())
def test_verdict_survives_json_round_trip(plan, synchronized):
    stream = build(plan, synchronized=synchronized)
    back = loads(dumps(stream))
    assert back == stream
    assert check(back) == check(stream)


def test_properties_are_not_vacuous():
    """The unsynchronized version of a simple plan has device hazards, the synchronized one none."""
    plan = {"n_queues": 2, "buffers": [("B0", 256, "device_local"), ("B1", 256, "device_local")],
            "cbs": [[("fill", "B0", None), ("copy", "B0", "B1", None)], [("dispatch", "rw", [("B1", None),
                                                                                           ("B0", None)], None)]],
            "submits": [{"queue": "q0", "cbs": ["cb0"], "wait": [], "signal": [], "fence": False,
                         "host_wait": False},
                        {"queue": "q1", "cbs": ["cb1"], "wait": [], "signal": [], "fence": False,
                         "host_wait": False}]}
    kinds = {(f.kind, f.first, f.second) for f in check(build(plan))}
    assert ("raw", "cb0[0]", "cb0[1]") in kinds
    assert ("raw", "cb0[1]", "cb1[0]") in kinds
    assert ("war", "cb0[1]", "cb1[0]") in kinds
    assert check(build(plan, synchronized=True)) == []
