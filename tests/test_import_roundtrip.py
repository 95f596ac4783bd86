"""Round trip (issue 9's acceptance): every corpus stream the runtime can replay on Lavapipe is replayed
under the GFXReconstruct capture layer (one subprocess each); the imported capture, checked, gives the
original's findings, and replayed, the original's digests.

Names are mapped through what the runtime tells the layer: every buffer has its stream id as its debug
name, which the import takes as the buffer's id, and every stream command is recorded inside a debug
label region named by its reference (`cb0[2]`, `cb0[2]@main[5]`), which the import keeps in the labels
of the commands recorded for it (a read_write binding's scratch copy and its kernel both). A finding is
compared as (kind, buffer, range, first, second), each side mapped: a command to that stream reference,
a host operation to its kind (`host_write`, `submit`, ...), since the capture numbers host operations
its own way (one thread, the runtime's own calls among them). Where the copy and the kernel of one
read_write binding are both found against one other command, they are one finding, as the checker makes
them for one access that reads and writes: a RAW, not also a WAW. Two racing accesses (no order between
them in any schedule) are compared as a pair: which one the checker meets first, and so RAW or WAR, is its
schedule's choice, and the capture's interleaving of host threads can make it choose the other.

The capture runs with assisted memory tracking: the runtime flushes every host write, so the layer
records exactly the bytes written, when written (page guarding would record whole dirty pages at the
next submit). A capture records no reads: the runtime invalidates every range it reads just before,
and the import takes each invalidate as a read of its range. The replay's end (its vkDeviceWaitIdle,
the read-back of every buffer, then every buffer destroyed) is cut from the imported stream before it
is checked and replayed: the replay digests only buffers that are alive at its end.

What Lavapipe merges, the runtime states in debug metadata the import reads (importer/__init__.py):
the stream queue and family of each submit and idle wait (its one VkQueue serves them all), the
stream families of each ownership transfer, each memory block's stream kind (its one memory type is
coherent), which flushes and invalidates are the capture's, not the stream's, and which exclusive
VkBuffers are concurrent stream buffers. What a capture still cannot hold makes findings go missing,
never appear: several host threads (imported as one thread, in capture order, but for those that
signal semaphores from the host). A stream with those may lose findings: the test checks that the
import invents none, and skips naming the reason where some are lost.

Several devices replay as one VkDevice each: a buffer they share is one host allocation that each
imports (VK_EXT_external_memory_host), which the import makes one buffer of those devices again; a
timeline one device signals and another waits for is bridged by a proxy thread, kept as its own
thread by the import since it signals from the host. A queue's wait for such a signal is submitted before
the proxy signals, in the import as in the replay: the VkQueue that stream queues share waits without
blocking that host signal.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT, image_binding_accesses, require_gfxreconstruct
from vkverify.check import Finding, check
from vkverify.importer import call_index, capture_env, import_capture
from vkverify.model import ir, load
from vkverify.model.dump import host_op_to_dict
from vkverify.model.refs import parse_ref, without_submit

runtime = pytest.importorskip("vkverify.runtime")
from vkverify.runtime.record import scratch_orders  # noqa: E402


@dataclasses.dataclass(frozen=True)
class RoundTrip:
    original: ir.Stream
    digests: dict[str, str]  # of the captured replay
    imported: ir.Stream  # the runtime's teardown cut off


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory, device_name):
    """path -> RoundTrip, one capture per corpus stream however many tests ask for it."""
    require_gfxreconstruct()
    made: dict[Path, RoundTrip | str] = {}

    def get(path: Path) -> RoundTrip:
        if path not in made:
            made[path] = _round_trip(path, tmp_path_factory.mktemp(path.stem[:2]) / "replay.gfxr")
        if isinstance(made[path], str):
            pytest.skip(made[path])
        return made[path]
    return get


def round_trips(tmp_path_factory, streams: dict[str, dict]) -> dict[str, tuple]:
    """name -> (its round trip, the import's summary) of each stream document (the feature tests' fixture)."""
    require_gfxreconstruct()
    out = {}
    for name, doc in streams.items():
        path = tmp_path_factory.mktemp(name) / f"{name}.json"
        path.write_text(json.dumps(doc))
        trip = _round_trip(path, path.with_suffix(".gfxr"))
        assert not isinstance(trip, str), trip
        out[name] = trip, import_capture(path.with_suffix(".gfxr"))[1]
    return out


def _round_trip(path: Path, capture: Path) -> RoundTrip | str:
    """The round trip of one stream, or why it cannot be made."""
    original = load(path)
    reason = runtime.replayable(original)
    if reason is not None:
        return f"not replayable: {reason}"
    env = dict(capture_env(capture, os.environ), GFXRECON_MEMORY_TRACKING_MODE="assisted")
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "replay", "--format", "json", str(path)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode == 2:  # the runtime's own refusal (e.g. a timeline wait that would block a shared VkQueue)
        return f"not runnable on Lavapipe: {done.stderr.strip().splitlines()[-1]}"
    # Exit 1: digests differ from the simulator's, as a racing stream's may; the device's are the original's.
    assert done.returncode in (0, 1), done.stderr
    imported, _ = import_capture(capture)
    return RoundTrip(original, json.loads(done.stdout)["digests"], _without_teardown(original, imported))


def _without_teardown(original: ir.Stream, stream: ir.Stream) -> ir.Stream:
    """The imported stream before the replay's own vkDeviceWaitIdle (the first past the original's), where
    its read-back (invalidates, taken as host reads) and teardown begin."""
    def index(op: ir.HostOp) -> int:  # in the capture: labels name the call "#<call index>"
        return call_index(op.label)
    own = sum(isinstance(op, ir.DeviceWaitIdle) for t in original.threads for op in t.ops)
    end = sorted(index(op) for t in stream.threads for op in t.ops if isinstance(op, ir.DeviceWaitIdle))[own]
    return dataclasses.replace(stream, threads=tuple(
        dataclasses.replace(t, ops=tuple(op for op in t.ops if index(op) < end)) for t in stream.threads))


def _device(stream: ir.Stream, ref: str) -> frozenset[str]:
    """The devices whose queues run the command `ref` names (none for a host op)."""
    owner = parse_ref(without_submit(ref)).owner
    return frozenset(stream.index.queues[op.queue][0] for op, b in ir.batches(stream) if owner in b.command_buffers)


def _host_op(stream: ir.Stream, ref: str | None) -> str | None:
    """The kind of host operation `ref` names (`main[2]` -> "host_write"); None for a command."""
    if ref is None:
        return None
    named = parse_ref(without_submit(ref))
    thread = stream.index.threads.get(named.owner)
    return None if thread is None else host_op_to_dict(thread.ops[named.index])["op"]


def _compared(f: Finding, first: str | None, second: str | None) -> tuple:
    """(kind, buffer, range, first, second), two racing accesses as a pair (see above): a read/write race as
    the RAW with the write first, a write/write race with its sides sorted."""
    if f.racing and f.kind == "war":
        return "raw", f.buffer, f.range, second, first
    if f.racing and f.kind == "waw":
        first, second = sorted((first, second))
    return f.kind, f.buffer, f.range, first, second


def whole_findings(trips: dict[str, tuple], name: str) -> set[tuple]:
    """The findings of the round trip `name` (round_trips), after asserting that its import is whole and has the
    original's findings (the feature tests' first check)."""
    trip, summary = trips[name]
    assert not summary.partial, summary.partial_lines()
    original = _original_findings(trip.original)
    assert _imported_findings(trip.imported) == original
    return original


def _original_findings(stream: ir.Stream) -> set[tuple]:
    def side(ref: str | None):
        return _host_op(stream, ref) or ref
    return {_compared(f, side(f.first), side(f.second)) for f in check(stream)}


def _imported_findings(stream: ir.Stream) -> set[tuple]:
    def side(ref: str | None, label: str | None):
        # A command's label is "<region>: <vkCall> #<index>", its region the stream command's reference.
        return _host_op(stream, ref) or (label and label.rpartition(": ")[0])
    found = {_compared(f, side(f.first, f.labels[0]), side(f.second, f.labels[1])) for f in check(stream)}
    # As pairs: a racing WAW's sides are sorted, not in its RAW's order.
    raw = {(f[1], frozenset(f[3:])) for f in found if f[0] == "raw"}
    return {f for f in found if not (f[0] == "waw" and (f[1], frozenset(f[3:])) in raw)}


def _lossy(original: ir.Stream, imported: ir.Stream) -> str | None:
    """What the capture cannot hold of `original`, so that its findings may be missing from `imported`."""
    if len(original.threads) > len(imported.threads):
        return f"{len(original.threads)} threads are imported as {len(imported.threads)}, in capture order"
    if any(scratch_orders(original, f.kind, f.buffer, f.second) for f in check(original)):
        return "a read_write binding is replayed after a scratch copy and a compute barrier, which orders earlier reads"
    if any(isinstance(op, ir.GetSemaphoreCounterValue) for t in original.threads for op in t.ops):
        return "a counter read is replayed until it reaches its value: it may read a later one, which orders more"
    return None


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem[:2])
def test_imported_capture_has_the_original_findings(path, round_trip):
    trip = round_trip(path)
    original, imported = _original_findings(trip.original), _imported_findings(trip.imported)
    lossy = _lossy(trip.original, trip.imported)
    if lossy is None:
        assert imported == original
        return
    assert imported <= original  # the import invents nothing
    if imported != original:
        pytest.skip(f"lost {sorted(original - imported)}: {lossy}")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem[:2])
def test_imported_capture_replays_with_the_original_digests(path, round_trip):
    trip = round_trip(path)
    # A racing pair whose two sides run concurrently has no one digest: a host write beside the device, or
    # two devices (corpus 85's did run in either order, under load). Lavapipe runs one device's queues in turn.
    racing = [f"{f.kind} {f.buffer} {f.first} {f.second}" for f in check(trip.original) if f.racing and (
        "host_write" in (_host_op(trip.original, f.first), _host_op(trip.original, f.second))
        or _device(trip.original, f.first) != _device(trip.original, f.second))]
    if racing:
        pytest.skip(f"no digests to compare: racing accesses run concurrently, in either order ({racing})")
    if image_binding_accesses(trip.original):
        pytest.skip("no digests to compare: a storage or sampled image binding replays through the runtime's image "
                    "kernels (image_load, image_store, sampled_load: docs/runtime.md), which import as abstract "
                    "shaders that write values of their own, not the image's texels")
    digests = runtime.replay(trip.imported).digests
    assert {b: digests.get(b) for b in trip.digests} == trip.digests
