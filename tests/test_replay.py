"""A resubmitted command buffer's replay (vkverify/check/replay.py) finds what running every command finds.

The checker replays a command buffer's plan once an execution of it reported nothing; with `replay=False`
every execution runs every command. Both must give the same findings, in the same order, on streams that
resubmit their command buffers (tests/differential.py) and on the resubmitted decode shape of the benchmarks.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import given, settings

from vkverify.check.replay import ALWAYS, DOMINATED, NEVER, replay_plan
from vkverify.check.engine import Checker
from vkverify.check.schedule import Schedule
from vkverify.check.walk import shared_timelines
from vkverify.model import ir

from .differential import SETTINGS, resubmitting_streams, variant_disagreements

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from decode_stream import SHAPES, barriers_dropped, decode_stream

# As tests/test_reference.py: VKVERIFY_DIFFERENTIAL_EXAMPLES sets how many streams; half as many here.
EXAMPLES_RUN = int(os.environ.get("VKVERIFY_DIFFERENTIAL_EXAMPLES", "400")) // 2


def _both(stream: ir.Stream) -> tuple[Checker, list, list]:
    shared = shared_timelines(stream)
    replayed = Checker(stream)
    return replayed, Schedule(replayed, shared).run(), Schedule(Checker(stream, replay=False), shared).run()


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(resubmitting_streams())
def test_replay_finds_what_every_command_finds(doc):
    found = variant_disagreements(doc, replay=False)
    assert not found, found


def _repeats(plan: tuple) -> int:
    """How many findings an execution by `plan` repeats in place of comparisons."""
    return sum(len(repeated) for _, _, items, _ in plan for _, _, _, repeated, _ in items or ())


def test_decode_loop_replays_and_finds_its_hazard_at_every_submission():
    """The resubmitted decode shape replays its slots' plans (clean ones); with the last slot's barrier
    missing, each of that slot's submissions reports its own pair: the first runs every command, the second
    records what each access reports, the third replays a plan that repeats the pair."""
    clean, found, full = _both(decode_stream(2e4, **SHAPES["resubmitted"]))
    assert found == full == []
    assert all(plan for _, _, plan, *_ in clean.compiled.values()) and len(clean.compiled) == 4
    assert not any(_repeats(plan) for _, _, plan, *_ in clean.compiled.values())
    hazard, found, full = _both(decode_stream(2e4, hazard=True, **SHAPES["resubmitted"]))
    assert found == full
    # 10 tokens: the last is token 9, slot 1, which tokens 1, 5 and 9 submit; the others replay.
    assert {f.second.split("@")[1] for f in found} == {"main[5]", "main[18]", "main[32]"}
    assert {f.second.split("@")[0] for f in found} <= {f"slot1[{i}]" for i in range(1960, 1972)}
    assert [_repeats(plan) for _, _, plan, *_ in hazard.compiled.values()] == [0, len(found) // 3, 0, 0]


def test_every_barrier_dropped_replays_what_every_command_finds():
    """With every barrier dropped (issue 29's stream where every access races), each slot's plan repeats the
    hazards among its own accesses, and the findings are those of running every command, in order."""
    dropped, found, full = _both(barriers_dropped(decode_stream(2e4, **SHAPES["resubmitted"])))
    assert found == full and len(found) > 10_000
    assert all(_repeats(plan) for _, _, plan, *_ in dropped.compiled.values()) and len(dropped.compiled) == 4


def _plan(commands: list, placement_sizes: dict[str, int]) -> tuple:
    stream = ir.Stream("plan", (ir.Device("gpu0", (ir.Queue("q0"),)),),
                       tuple(ir.Buffer(b, n) for b, n in placement_sizes.items()),
                       command_buffers=(ir.CommandBuffer("cb", tuple(commands)),))
    checker = Checker(stream)
    return replay_plan([checker._step(c) for c in commands], checker.state.placement)


def test_plan_compares_what_meets_earlier_work_and_records_what_is_seen():
    rw = lambda buf, access: ir.Binding(buf, 0, 64, access)  # noqa: E731
    barrier = ir.Barrier(frozenset({"compute_shader"}), frozenset({"shader_storage_write"}),
                         frozenset({"compute_shader"}), frozenset({"shader_storage_read"}))
    commands = [ir.Dispatch("s", (rw("W", "read"), rw("A", "write"))),  # 0: both meet earlier work
                barrier,
                ir.Dispatch("s", (rw("W", "read"), rw("A", "read"))),  # 2: W dominated by 0, A internal
                ir.Dispatch("s", (rw("W", "read"), rw("B", "write")))]  # 3: W dominated, and the last read
    plan = {i: items for i, _, items, _ in _plan(commands, {"W": 64, "A": 64, "B": 64})}
    assert plan[1] is None
    assert [(mode, record) for _, mode, record, *_ in plan[0]] == [(ALWAYS, False), (ALWAYS, True)]
    assert [(mode, record) for _, mode, record, *_ in plan[2]] == [(DOMINATED, False), (NEVER, True)]
    assert [(mode, record) for _, mode, record, *_ in plan[3]] == [(DOMINATED, True), (ALWAYS, True)]
