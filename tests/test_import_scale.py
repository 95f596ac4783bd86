"""A semaphore-heavy run imported as it ran: the shape whose import grew with the square of the run (issue 24).

A stream of many rounds, each a submit that signals the next value of a timeline semaphore and a host wait
for it, on buffers bound in turn to one memory, is replayed under the capture layer; its import must give
every submit's signal and every host wait, with their values, in the order the program made them. The
benchmark (benchmarks/import.py) measures the same walk at 10^5 calls and more; this is its output.
"""

from __future__ import annotations

import base64
import math
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, python_path, require_gfxreconstruct
from vkverify.check import check
from vkverify.importer import CaptureError, capture_env, import_capture
from vkverify.importer.gfxr import CallThreads, CapturedBytes
from vkverify.importer.records import Call
from vkverify.importer.resources import Resources
from vkverify.importer.translate import Translator
from vkverify.model import ir
from vkverify.model.builder import Stream
from vkverify.model.dump import dumps

ROUNDS = 120
SLOTS = 3  # readback buffers the rounds take in turn


def rounds_stream(rounds: int) -> ir.Stream:
    """Round i: fill a device buffer, copy it into readback slot i % SLOTS, a barrier to the host, a submit
    signalling `t` = i + 1, a host wait for it, the host's read of the slot."""
    s = Stream("semaphore-rounds").create_semaphore("t", timeline=True).create_buffer("A", 256)
    for slot in range(SLOTS):
        s.create_buffer(f"R{slot}", 256, "host_coherent")
        s.allocate_command_buffer(f"cb{slot}").cmd_fill_buffer("A", value=slot + 1) \
            .cmd_pipeline_barrier2("transfer", "transfer_write", "transfer", "transfer_read") \
            .cmd_copy_buffer("A", f"R{slot}") \
            .cmd_pipeline_barrier2("transfer", "transfer_write", "host", "host_read")
    for i in range(rounds):
        slot = i % SLOTS
        s.queue_submit("q0", [f"cb{slot}"], signal=[{"semaphore": "t", "value": i + 1}])
        s.wait_semaphores({"t": i + 1})
        s.host_read(f"R{slot}")
    return s.build()


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    require_gfxreconstruct()
    pytest.importorskip("vkverify.runtime")
    tmp = tmp_path_factory.mktemp("scale")
    source, capture = tmp / "rounds.json", tmp / "rounds.gfxr"
    source.write_text(dumps(rounds_stream(ROUNDS)))
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "replay", str(source)],
                          env=capture_env(capture, os.environ), cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)
    if done.returncode != 0 or not capture.exists():
        pytest.skip(f"the replay did not run under the capture layer: {done.stderr.strip()[-300:]}")
    return capture


@pytest.fixture(scope="module")
def imported(captured):
    return import_capture(captured)


def test_every_round_signal_and_host_wait_with_its_value_in_order(imported):
    stream, summary = imported
    (timeline,) = [s.id for s in stream.semaphores if s.type == "timeline"]
    ops = [op for t in stream.threads for op in t.ops]
    signalled = [(i, sig.value) for i, op in enumerate(ops) if isinstance(op, ir.Submit)
                 for b in op.batches for sig in b.signals if sig.semaphore == timeline]
    waited = [(i, w.value) for i, op in enumerate(ops) if isinstance(op, ir.WaitSemaphores)
              for w in op.waits if w.semaphore == timeline]
    assert [v for _, v in signalled] == list(range(1, ROUNDS + 1))
    assert [v for _, v in waited] == list(range(1, ROUNDS + 1))
    # Each wait comes after the submit that signals its value and before the next one.
    for (submit, value), (wait, waited_value), after in zip(signalled, waited, signalled[1:] + [(len(ops), 0)]):
        assert submit < wait < after[0] and value == waited_value
    # Each submit runs the recording of its slot: the fill, the copy and the two barriers of that round.
    submitted = [op for op in ops if isinstance(op, ir.Submit) and any(
        sig.semaphore == timeline for b in op.batches for sig in b.signals)]
    recorded = {cb.id: cb for cb in stream.command_buffers}
    kinds = [[type(c).__name__ for cb in op.batches[0].command_buffers for c in recorded[cb].commands]
             for op in submitted]
    assert all(k.count("Fill") == 1 and k.count("Copy") == 1 for k in kinds), kinds[:3]
    assert summary.host_ops["submit"] >= ROUNDS and summary.host_ops["wait_semaphores"] >= ROUNDS


def test_the_imported_run_is_race_free_as_the_program_is(imported):
    stream, _ = imported
    assert check(rounds_stream(ROUNDS)) == []
    assert check(stream) == []


def test_a_host_wait_covers_the_submits_up_to_the_first_signal_of_its_value():
    """The readback walk on a run whose signals skip values: a wait for 3 is satisfied by the signal of 4
    (the first of 3 or more), which covers the submits up to it on its queue and none after; a wait for a
    value no submit signalled covers nothing. Each copy into a staging buffer gets its assumed read after
    the first wait that covers it, and only there."""
    from vkverify.importer.batches import ImportedBatch, ImportedSemaphoreOp
    from vkverify.importer.readback import ASSUMED, Placement, Readbacks, touch

    rounds = 6
    placements = {f"S{i}": Placement(memory=1, offset=64 * i, staging=True, mapped=True) for i in range(rounds)}
    command_buffers = {f"cb{i}": [touch({"cmd": "copy", "src": "D", "dst": f"S{i}", "label": f"copy {i}",
                                         "regions": [{"src_offset": 0, "dst_offset": 0, "size": 64}]})]
                       for i in range(rounds)}

    def submit(i: int) -> dict:
        return {"op": "submit", "queue": "q0", "label": f"submit {i}", "batches": (
            ImportedBatch((), (f"cb{i}",), (ImportedSemaphoreOp("t", ["all_commands"], 2 * (i + 1), True),)),)}

    def wait(value: int) -> dict:
        return {"op": "wait_semaphores", "waits": [{"semaphore": "t", "value": value}], "label": f"wait {value}"}

    ops = [submit(i) for i in range(rounds)] + [wait(3), wait(4), wait(13), wait(9), wait(12)]
    walked = Readbacks(placements, command_buffers, {"q0": "gpu0"}, set(), [], True).walk(
        [(index, 0, op) for index, op in enumerate(ops)])
    after: dict[str, list[str]] = {}
    for _, _, op in walked:
        if op["op"] == "wait_semaphores":
            last = after.setdefault(op["label"], [])
        elif op["label"].startswith(ASSUMED):
            last.append(op["buffer"])
    # Signals 2, 4, ..., 12: wait 3 -> the signal of 4 (submits 0, 1); 4 -> nothing new; 13 -> no signal;
    # 9 -> the signal of 10 (submits 2 to 4); 12 -> submit 5.
    assert after == {"wait 3": ["S0", "S1"], "wait 4": [], "wait 13": [], "wait 9": ["S2", "S3", "S4"],
                     "wait 12": ["S5"]}


def test_the_converter_is_bounded_in_its_own_cpu_time_not_in_the_walk_s(captured, tmp_path, monkeypatch):
    """The converter writes into a pipe the walk reads: it waits there as long as the walk takes, which a long
    run's walk may take past the converter's time limit; only its own CPU time counts. One that spins (a
    stand-in for a corrupted capture's runaway decode) is stopped at the limit, as a CaptureError."""
    from vkverify.importer import gfxr
    from vkverify.importer.records import read_lines

    monkeypatch.setattr(gfxr, "TOOL_SECONDS", 1)
    with gfxr.converting(captured, tmp_path) as lines:
        calls = read_lines(lines, str(captured))
        first = next(calls)
        time.sleep(2)  # past the limit in wall time, with the converter blocked on the pipe
        rest = sum(1 for _ in calls)
    assert first.name == "vkCreateInstance" and rest > ROUNDS * 2
    spinning = tmp_path / "bin" / "gfxrecon-convert"
    spinning.parent.mkdir()
    spinning.write_text("#!/bin/sh\nwhile :; do :; done\n")
    spinning.chmod(0o755)
    monkeypatch.setenv("PATH", f"{spinning.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(CaptureError, match=r"gfxrecon-convert ran past \d+ s of CPU"), \
            gfxr.converting(captured, tmp_path) as lines:
        list(lines)


def test_blocks_read_in_parts_by_a_process_of_their_own_are_those_read_at_once(captured, monkeypatch):
    """reading_blocks: another process reads the capture's blocks a part at a time while the walk takes in the
    parts up to each call; the walk gets what read_blocks reads at once, wherever the parts end (every 7 blocks
    here), and imports the same stream."""
    from vkverify.importer import gfxr, import_document
    from vkverify.model.dump import document_chunks

    whole = gfxr.read_blocks(captured)
    before = "".join(document_chunks(import_document(captured)[0]))
    monkeypatch.setattr(gfxr, "_PART_BLOCKS", 7)
    with gfxr.reading_blocks(captured) as parts:
        parts.load(100)
        assert parts.read_to == 105  # the parts up to block 100, not all of them
        parts.load(105)
        assert parts.read_to == 112  # block 105 itself is in the part after
        parts.load(math.inf)
    assert whole.fills and whole.threads.starts
    assert (parts.fills, parts.threads, parts.push_constants, parts.parameters, parts.truncated) == \
        (whole.fills, whole.threads, whole.push_constants, whole.parameters, whole.truncated)
    assert "".join(document_chunks(import_document(captured)[0])) == before


def test_the_summary_names_a_few_read_back_buffers_and_counts_the_rest():
    """A long run reads back hundreds of staging buffers: the summary's line names eight and counts the others."""
    from vkverify.importer.batches import ImportedBatch, ImportedSemaphoreOp
    from vkverify.importer.readback import Placement, Readbacks, touch
    from vkverify.importer.resources import Resources
    from vkverify.importer.translate import Translator

    buffers = [f"S{i:02}" for i in range(12)]
    placements = {b: Placement(memory=1, offset=64 * i, staging=True, mapped=True) for i, b in enumerate(buffers)}
    command_buffers = {"cb": [touch({"cmd": "copy", "src": "D", "dst": b, "label": f"copy {b}",
                                     "regions": [{"src_offset": 0, "dst_offset": 0, "size": 64}]}) for b in buffers]}
    ops = [{"op": "submit", "queue": "q0", "label": "submit", "batches": (
               ImportedBatch((), ("cb",), (ImportedSemaphoreOp("t", ["all_commands"], 1, True),)),)},
           {"op": "wait_semaphores", "waits": [{"semaphore": "t", "value": 1}], "label": "wait"}]
    walk = Readbacks(placements, command_buffers, {"q0": "gpu0"}, set(), [], True)
    walk.walk([(index, 0, op) for index, op in enumerate(ops)])
    translator = Translator(Resources(None), None, False, True)
    translator.note_reads(walk)
    (line,) = translator.summary.assumed
    assert line.startswith("12 host reads (S00, S01, S02, S03, S04, S05, S06, S07 and 4 more): "), line


def test_call_threads_are_runs_that_answer_each_block_index():
    threads = CallThreads()
    for index, thread in [(0, 7), (1, 7), (2, 9), (5, 9), (6, 7)]:  # blocks 3, 4: other meta-data, not added
        threads.add(index, thread)
    assert list(threads.starts) == [0, 2, 6]  # one run per change of thread, not an entry per call
    assert [threads.get(i) for i in range(8)] == [7, 7, 9, 9, 9, 9, 7, 7]
    assert CallThreads().get(3, 0) == 0


def test_a_freed_descriptor_set_is_forgotten_and_the_others_kept():
    """A long run allocates a set per dispatch: the import keeps only the live ones."""
    translator = Translator(Resources(None), None, False, True)
    layout = [("vkCreateDescriptorSetLayout", {"pSetLayout": 1, "pCreateInfo": {"pBindings": [
        {"binding": 0, "descriptorType": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER", "descriptorCount": 1}]}})]
    allocations = [("vkAllocateDescriptorSets", {"pAllocateInfo": {"descriptorPool": pool, "pSetLayouts": [1, 1]},
                                                 "pDescriptorSets": sets}) for pool, sets in ((10, [11, 12]),
                                                                                              (20, [21, 22]))]
    writes = [("vkUpdateDescriptorSets", {"pDescriptorCopies": None, "pDescriptorWrites": [
        {"dstSet": s, "dstBinding": 0, "dstArrayElement": 0, "descriptorType": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",
         "pBufferInfo": [{"buffer": 5, "offset": 0, "range": 64}]} for s in (11, 12, 21, 22)]})]
    frees = [("vkDestroyDescriptorPool", {"descriptorPool": 10}), ("vkFreeDescriptorSets", {"pDescriptorSets": [21]})]
    translator.run(Call(i, name, args, "VK_SUCCESS" if name.startswith("vkAllocate") else None)
                   for i, (name, args) in enumerate(layout + allocations + writes + frees))
    assert set(translator.res.sets) == set(translator.res.set_layout_of) == {22}
    assert translator.res.sets[22][0, 0].buffer == 5


def test_the_written_stream_reads_its_fill_bytes_from_the_capture(captured, tmp_path):
    """`vkverify import` keeps each fill record's bytes in the capture until it writes them (gfxr.CapturedBytes,
    as base64): the file it writes loads to the stream import_capture builds, bytes and all."""
    from vkverify.model import load

    out = tmp_path / "rounds.json"
    done = subprocess.run([sys.executable, "-m", "vkverify", "import", "-q", str(captured), "-o", str(out)],
                          env={**os.environ, "PYTHONPATH": python_path()}, cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    stream, _ = import_capture(captured)
    writes = [op for t in stream.threads for op in t.ops if isinstance(op, ir.HostAccess) and op.data is not None]
    assert writes and load(out) == stream
    part = CapturedBytes(captured, 16, 64).part(8, 5)
    assert str(part) == base64.b64encode(captured.read_bytes()[24:29]).decode() and part.read() == \
        captured.read_bytes()[24:29]


def test_commands_held_as_their_texts_are_written_and_decoded_as_the_dicts():
    """An import holds each command buffer's commands as their texts (model.dump.Encoded): the document is written
    byte for byte as with the dicts, and decodes to them, sealed or still open, extended by another's."""
    from vkverify.model.dump import Encoded, document_chunks

    first = [{"cmd": "fill", "dst": "B", "offset": 0, "size": 4, "value": 7, "label": "line\nbreak \u00e9"},
             {"cmd": "copy", "src": "A", "dst": "B", "regions": [{"src_offset": 0, "dst_offset": 0, "size": 4}]}]
    second = [{"cmd": "barrier", "src_stage": ["transfer"], "dst_stage": ["host"]}]
    sealed, open_, empty = Encoded(), Encoded(), Encoded()
    for command in first:
        sealed.append(command)
    sealed.seal()
    for command in second:
        open_.append(command)
    open_.extend(sealed)
    texts = {"a": sealed, "b": open_, "c": empty}
    dicts = {"a": first, "b": second + first, "c": []}
    assert [len(v) for v in texts.values()] == [2, 3, 0]
    assert {k: v.decoded() for k, v in texts.items()} == dicts
    assert "".join(document_chunks({"command_buffers": texts})) == "".join(document_chunks({"command_buffers": dicts}))
