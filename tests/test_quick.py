"""The checker's quick lane (Checker._run_quick) finds what the general comparison finds.

The lane answers a command's clean accesses of one queue from BarrierLog.orders_alone's memo without the
general comparison; with `quick=False` every access takes the general one. Both must give the same findings, in
the same order, on the differential tests' streams (tests/differential.py), which reach the lane (checked
below), and on the decode shape of the benchmarks with and without its missing barrier.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import find, given, settings

from vkverify.check.access import Access
from vkverify.check.engine import Checker
from vkverify.check.schedule import Schedule
from vkverify.check.walk import shared_timelines
from vkverify.model import from_dict, ir

from .differential import (SETTINGS, batched_streams, resubmitting_streams, streams, thread_streams,
                           variant_disagreements)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from decode_stream import decode_stream

# As tests/test_reference.py: VKVERIFY_DIFFERENTIAL_EXAMPLES sets how many streams; half as many here.
EXAMPLES_RUN = int(os.environ.get("VKVERIFY_DIFFERENTIAL_EXAMPLES", "400")) // 2


class _Counted(Checker):
    """The checker, counting the accesses that took the general comparison (`access` with its compare)."""

    general = 0

    def access(self, x: Access, lo: int, hi: int, compare: bool = True, record: bool = True) -> bool:
        self.general += compare
        return super().access(x, lo, hi, compare, record)


def _both(stream: ir.Stream) -> tuple[_Counted, list, list]:
    shared = shared_timelines(stream)
    quick = _Counted(stream)
    return quick, Schedule(quick, shared).run(), Schedule(Checker(stream, quick=False), shared).run()


def _whole(doc: dict) -> dict:
    """`doc` with every range whole (a copy's where both buffers have one size) and each command buffer's commands
    twice: the lane's case, the second time with the barriers' answers known, which the drawn masks make
    ordering some pairs and not others."""
    sizes = {b["id"]: b["size"] for b in doc["buffers"]}
    ranges = ("offset", "size")

    def whole(cmd: dict) -> dict:
        cmd = {k: v for k, v in cmd.items() if k not in ranges}
        if "bindings" in cmd:
            cmd["bindings"] = [{k: v for k, v in b.items() if k not in ranges} for b in cmd["bindings"]]
        if "buffers" in cmd:
            cmd["buffers"] = [{k: v for k, v in b.items() if k not in ranges} for b in cmd["buffers"]]
        if cmd["cmd"] == "copy" and sizes[cmd["src"]] == sizes[cmd["dst"]]:
            cmd["regions"] = [{"src_offset": 0, "dst_offset": 0, "size": sizes[cmd["src"]]}]
        return cmd

    ops = [{k: v for k, v in op.items() if k not in ranges} for op in doc["threads"]["main"]]
    return {**doc, "command_buffers": {cb: [whole(c) for c in cmds] * 2 for cb, cmds in doc["command_buffers"].items()},
            "threads": {"main": ops}}


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams() | batched_streams() | resubmitting_streams())
def test_quick_lane_finds_what_the_general_comparison_finds(doc):
    found = variant_disagreements(doc, quick=False)
    assert not found, found


@settings(max_examples=EXAMPLES_RUN, **SETTINGS)
@given(streams().map(_whole))
def test_quick_lane_finds_what_the_general_comparison_finds_over_whole_buffers(doc):
    found = variant_disagreements(doc, quick=False)
    assert not found, found


@settings(max_examples=EXAMPLES_RUN // 4, **SETTINGS)
@given(thread_streams())
def test_quick_lane_finds_what_the_general_comparison_finds_on_several_threads(doc):
    found = variant_disagreements(doc, quick=False)
    assert not found, found


def _device_accesses(stream: ir.Stream) -> int:
    """Accesses of the commands the stream submits (command_accesses: one per binding, region or fill)."""
    from vkverify.model.accesses import command_accesses
    sizes = {cb.id: sum(len(command_accesses(c)) for c in cb.commands) for cb in stream.command_buffers}
    return sum(sizes[cb] for _, op in ir.submits(stream) for cb in ir.submitted(op))


def _lane_answers_with_findings(doc: dict) -> bool:
    """Whether, on a stream with findings, the lane answered some accesses and both ways found the same."""
    stream = from_dict(doc)
    quick, found, general = _both(stream)
    host = sum(isinstance(op, ir.HostAccess) for t in stream.threads for op in t.ops)
    return bool(found) and found == general and quick.general < _device_accesses(stream) + host


def test_the_differential_streams_reach_the_quick_lane():
    """The generators draw streams where the lane answers some accesses and the general comparison finds hazards
    in others: the comparison above tests the lane, not only its fallback."""
    find(streams(), _lane_answers_with_findings, settings=settings(max_examples=EXAMPLES_RUN, **SETTINGS))


def test_decode_stream_takes_the_quick_lane_and_finds_its_missing_barrier():
    """The decode shape: all but about one access in a hundred answered by the lane (those that meet a barrier
    kind's first answer, and the first token's), the KV cache's slices too; with the last token's barrier missing,
    the hazards it leaves are found as the general comparison finds them."""
    stream = decode_stream(2e4)
    quick, found, general = _both(stream)
    assert found == general == []
    assert quick.general < _device_accesses(stream) // 50
    quick, found, general = _both(decode_stream(2e4, hazard=True))
    assert found == general
    assert found and {f.kind for f in found} <= {"raw", "waw", "war"}
