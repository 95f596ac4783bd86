"""The named readings of what the spec leaves open (check/readings.py, docs/format.md "Readings"): each switch
gives a different verdict on a small stream, the checker and the reference alike."""

from __future__ import annotations

import json

import pytest

from vkverify.check import check
from vkverify.check.readings import DEFAULT, Readings, parse_reading
from vkverify.check.reference import Reference
from vkverify.cli import main
from vkverify.model import from_dict

from .conftest import CORPUS


def _corpus(prefix: str) -> dict:
    return json.loads(next(p for p in CORPUS if p.name.startswith(prefix + "-")).read_text())


def _hazards(stream, readings: Readings) -> tuple[set, set]:
    """(the checker's, the reference's) access hazards as (kind, first, second)."""
    fast = {(f.kind, f.first, f.second) for f in check(stream, readings)}
    slow = {(h.kind, h.first, h.second) for h in Reference(stream, readings).verdict().hazards}
    return fast, slow


def all_commands_signal() -> dict:
    """Corpus 130: a host barrier, T signalled at all_commands, a host wait on T, a host read."""
    return _corpus("130")


def noncoherent_between_threads(invalidate: bool) -> dict:
    """Thread writer writes and flushes host_cached H, then signals T; thread reader waits T and reads H."""
    reader = [{"op": "wait_semaphores", "waits": [{"semaphore": "T", "value": 1}]},
              *([{"op": "invalidate", "buffer": "H"}] if invalidate else []),
              {"op": "host_read", "buffer": "H"}]
    return {"format": "vkverify-stream/1", "name": "threads",
            "buffers": [{"id": "H", "size": 64, "memory": "host_cached"}],
            "semaphores": [{"id": "T", "type": "timeline", "initial": 0}],
            "threads": {"writer": [{"op": "host_write", "buffer": "H"}, {"op": "flush", "buffer": "H"},
                                   {"op": "signal_semaphore", "semaphore": "T", "value": 1}],
                        "reader": reader}}


def test_defaults():
    """Strict but where the spec says otherwise (docs/format.md): an all_commands signal holds a host barrier."""
    assert DEFAULT == Readings(all_commands_includes_host=True, host_threads_coherent=False,
                               buffer_barrier_covers_aliases=False, host_barrier_after_wait=True)


RAW_TO_HOST = {("raw", "cb0[0]", "main[2]")}
RAW_FROM_HOST = {("raw", "main[1]", "cb0[1]")}


@pytest.mark.parametrize(("prefix", "switched", "default", "other"), [
    # A host barrier, T signalled at all_commands, a host wait on T, a host read.
    ("130", Readings(all_commands_includes_host=False), set(), RAW_TO_HOST),
    # T signalled at compute_shader orders the write, not the barrier, under either reading.
    ("129", Readings(all_commands_includes_host=False), RAW_TO_HOST, RAW_TO_HOST),
    # A host write after the submit, a host signal the batch waits on, a barrier host/host_write.
    ("157", Readings(host_barrier_after_wait=False), set(), RAW_FROM_HOST),
    # Without host_write in the source access mask the barrier makes nothing available either way.
    ("158", Readings(host_barrier_after_wait=False), RAW_FROM_HOST, RAW_FROM_HOST),
], ids=["all-commands-holds-host", "other-stages-never", "host-barrier-after-wait", "no-host-write-never"])
def test_a_reading_on_its_corpus_stream(prefix, switched, default, other):
    """The checker and the reference alike: the hazards under the default and under the other reading."""
    stream = from_dict(_corpus(prefix))
    assert _hazards(stream, DEFAULT) == (default, default)
    assert _hazards(stream, switched) == (other, other)


def test_noncoherent_memory_between_host_threads():
    stream = from_dict(noncoherent_between_threads(invalidate=False))
    raw = {("raw", "writer[0]", "reader[1]")}
    assert _hazards(stream, DEFAULT) == (raw, raw)
    assert _hazards(stream, Readings(host_threads_coherent=True)) == (set(), set())
    assert _hazards(from_dict(noncoherent_between_threads(invalidate=True)), DEFAULT) == (set(), set())


def test_noncoherent_write_after_another_threads_write_needs_its_flush():
    doc = noncoherent_between_threads(invalidate=False)
    doc["threads"]["writer"].pop(1)  # no flush
    doc["threads"]["reader"][-1] = {"op": "host_write", "buffer": "H"}
    stream = from_dict(doc)
    waw = {("waw", "writer[0]", "reader[1]")}
    assert _hazards(stream, DEFAULT) == (waw, waw)
    assert _hazards(stream, Readings(host_threads_coherent=True)) == (set(), set())


def barrier_on_one_buffer(written: str, barrier_on: str, read: str) -> dict:
    """A dispatch writes through `written`, a buffer barrier on `barrier_on` makes it visible to compute reads,
    a dispatch reads through `read`; A_lo aliases A's first half."""
    return {"format": "vkverify-stream/1", "name": "aliases",
            "buffers": [{"id": "A", "size": 256, "memory": "device_local"},
                        {"id": "A_lo", "alias_of": "A", "offset": 0, "size": 128}],
            "shaders": {"w": {"bindings": ["write"]}, "r": {"bindings": ["read"]}},
            "command_buffers": {"cb0": [
                {"cmd": "dispatch", "shader": "w", "bindings": [{"buffer": written, "offset": 0, "size": 128}]},
                {"cmd": "barrier", "src_stage": ["compute_shader"], "src_access": ["shader_storage_write"],
                 "dst_stage": ["compute_shader"], "dst_access": ["shader_storage_read"],
                 "buffers": [{"buffer": barrier_on, "offset": 0, "size": 128}]},
                {"cmd": "dispatch", "shader": "r", "bindings": [{"buffer": read, "offset": 0, "size": 128}]}]},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}}


@pytest.mark.parametrize("written, barrier_on, read", [("A", "A", "A_lo"), ("A_lo", "A_lo", "A"),
                                                       ("A", "A_lo", "A")])
def test_a_buffer_barrier_and_an_access_through_an_alias(written, barrier_on, read):
    stream = from_dict(barrier_on_one_buffer(written, barrier_on, read))
    raw = {("raw", "cb0[0]", "cb0[2]")}
    assert _hazards(stream, DEFAULT) == (raw, raw)
    assert _hazards(stream, Readings(buffer_barrier_covers_aliases=True)) == (set(), set())
    assert _hazards(from_dict(barrier_on_one_buffer(read, read, read)), DEFAULT) == (set(), set())


def test_cli_reading(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(all_commands_signal()))
    assert main(["check", str(path)]) == 0
    assert main(["check", "--reading", "all_commands_includes_host=false", str(path)]) == 1
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--reading", "all_commands=true", str(path)])
    assert exit_.value.code == 2
    assert "unknown reading 'all_commands'" in capsys.readouterr().err


def test_parse_reading():
    assert parse_reading(DEFAULT, "host_threads_coherent=yes") == Readings(host_threads_coherent=True)
    with pytest.raises(ValueError, match="true or false"):
        parse_reading(DEFAULT, "host_threads_coherent=maybe")
