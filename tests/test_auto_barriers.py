"""Runtime(barriers="auto") (runtime/auto_barriers.py): examples/engine's two-queue engine, with a staging
upload and 5 dispatches a frame, recorded without its pipeline barriers; the runtime places them."""

from __future__ import annotations

import base64
import hashlib
import sys
from dataclasses import replace

import numpy as np
import pytest

from vkverify.check import check
from vkverify.model import UsageError, ir
from vkverify.sim import reference

from .conftest import ROOT, python_path

sys.path.insert(0, str(ROOT / "examples" / "engine"))
from engine import Engine, expected

N = 1 << 12
FACTORS = (2.0, 0.5, 3.0)
PROGRAM = ("a", "b")  # the engine's command buffers: a<frame>, b<frame>


def run(barriers: str, monkeypatch) -> tuple[ir.Stream, list, dict[str, str]]:
    """The recorded stream, each frame's (Out, Sum), and the final digests of the engine's buffers."""
    from vkverify.runtime import Runtime

    monkeypatch.setenv("VKVERIFY_STAGED", "1")  # the upload goes through the staging ring
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(N, np.float32), rng.standard_normal(N, np.float32)
    with Runtime(("q0", "q1"), check=True, barriers=barriers) as rt:
        engine = Engine(rt, x, y)
        frames = [engine.frame(factor) for factor in FACTORS]
        rt.device_idle()
        digests = {b: hashlib.sha256(rt.read_back(b)).hexdigest() for b in ("S", "Out", "Sum")}
        stream = with_staged_bytes(rt.stream(), [x, y])
    for (out, total), factor in zip(frames, FACTORS):
        want_out, want_total = expected(x, y, factor)
        assert np.array_equal(out, want_out) and total == want_total, f"{barriers}: frame with factor {factor}"
    return stream, frames, digests


def with_staged_bytes(stream: ir.Stream, arrays: list[np.ndarray]) -> ir.Stream:
    """The uploader records its host writes without their bytes (an engine's uploads are gigabytes): the stream
    with the bytes it staged, each array in one piece, in order, for the simulator."""
    pieces = iter(arrays)

    def op(o: ir.HostOp) -> ir.HostOp:
        if isinstance(o, ir.HostAccess) and o.op == "host_write" and o.buffer == "upload.staging":
            return replace(o, data=ir.Data(base64=base64.b64encode(next(pieces).tobytes()).decode()))
        return o
    out = replace(stream, threads=tuple(replace(t, ops=tuple(map(op, t.ops))) for t in stream.threads))
    assert next(pieces, None) is None, "fewer staged writes than arrays"
    return out


def program_barriers(stream: ir.Stream) -> list[tuple[str, int]]:
    return [(cb.id, i) for cb in stream.command_buffers if cb.id.startswith(PROGRAM)
            for i, c in enumerate(cb.commands) if isinstance(c, ir.Barrier)]


def without(stream: ir.Stream, cb_id: str, index: int) -> ir.Stream:
    cbs = tuple(replace(cb, commands=cb.commands[:index] + cb.commands[index + 1:]) if cb.id == cb_id else cb
                for cb in stream.command_buffers)
    return replace(stream, command_buffers=cbs)


def test_the_engine_without_its_barriers_computes_what_numpy_does(device_name, monkeypatch):
    """Values right on the device and equal to the simulator's, the recorded stream clean (the online check ran
    at every submit too), every placed barrier load-bearing (dropping one gives a finding), and no more barriers
    than the engine places by hand, none wider than a full one."""
    stream, frames, digests = run("auto", monkeypatch)
    assert check(stream) == []
    assert digests == {b: reference(stream).digests[b] for b in digests}
    placed = program_barriers(stream)
    assert placed, "nothing placed: the engine's frames need barriers"
    for cb_id, index in placed:
        assert check(without(stream, cb_id, index)), f"{cb_id}[{index}] placed but not needed"
    hand_stream, hand_frames, hand_digests = run("manual", monkeypatch)
    assert len(placed) <= len(program_barriers(hand_stream))
    assert digests == hand_digests
    assert all(np.array_equal(a[0], b[0]) and a[1] == b[1] for a, b in zip(frames, hand_frames))


def test_the_host_read_after_the_fence_gets_its_barrier(device_name, monkeypatch):
    """What the host reads after the submit is not in the stream when the runtime places the barriers: a command
    buffer that writes host-visible memory ends with a barrier from those writes to the host."""
    stream, _, _ = run("auto", monkeypatch)
    for cb in stream.command_buffers:
        if cb.id.startswith("b"):
            last = cb.commands[-1]
            assert isinstance(last, ir.Barrier) and last.dst_stage == {"host"} and "host_read" in last.dst_access
            assert last.src_stage == {"compute_shader"} and last.src_access == {"shader_storage_write"}


def test_barriers_must_be_manual_or_auto(device_name):
    from vkverify.runtime import Runtime

    with pytest.raises(UsageError, match="barriers"):
        Runtime(barriers="some")


def test_the_gate_kills_every_mutant_of_a_placed_barrier(device_name, monkeypatch):
    """`VKVERIFY_BARRIERS=auto vkverify mutate --target raw -- pytest examples/engine`: each barrier the runtime
    placed (at three lines of the engine: a's, b's, b's to the host) is dropped, weakened and narrowed in turn,
    and every such mutant is killed."""
    from vkverify.mutations.gate import run_command

    monkeypatch.setenv("PYTHONPATH", python_path())
    monkeypatch.setenv("VKVERIFY_BARRIERS", "auto")
    engine = str(ROOT / "examples" / "engine")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "match", engine]
    outcomes, _, _ = run_command(argv, "raw", jobs=2, quiet=True)
    placed = [o for o in outcomes if "auto barrier" in o.mutant.description]
    assert len({o.mutant.source for o in placed}) == 3, sorted({o.mutant.source for o in placed})
    assert {o.mutant.operator for o in placed} >= {"drop_barrier", "weaken_barrier"}
    assert [o.mutant.id for o in placed if not o.killed] == []
