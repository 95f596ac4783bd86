"""Secondary command buffers through a capture (issue 25): streams whose primaries execute secondaries, replayed on
Lavapipe under the GFXReconstruct capture layer, import with each secondary a command buffer of its own and each
vkCmdExecuteCommands an execute_commands naming them (importer/commands.py); the imported stream has the original's
findings (hazards between a secondary and its primary among them) and replays with its digests. The comparison is
tests/test_import_roundtrip.py's."""

from __future__ import annotations


import pytest

from vkverify.model import ir

from .test_import_roundtrip import round_trips, whole_findings
from .test_secondaries_replay import CLEAN, RACE

runtime = pytest.importorskip("vkverify.runtime")

STREAMS = {"clean": CLEAN, "race": RACE}


@pytest.fixture(scope="module")
def trips(tmp_path_factory, device_name):
    return round_trips(tmp_path_factory, STREAMS)


@pytest.mark.parametrize("name", STREAMS)
def test_imported_secondaries_have_the_original_findings(trips, name):
    original = whole_findings(trips, name)
    if name == "race":
        assert {(kind, first, second) for kind, _, _, first, second in original} == {
            ("raw", "cb0[0]", "s0[0]"), ("raw", "s1[0]", "cb0[2]"), ("waw", "cb0[0]", "cb0[2]"),
            ("war", "s0[0]", "cb0[2]")}
    else:
        assert original == set()


@pytest.mark.parametrize("name", STREAMS)
def test_each_vkcmdexecutecommands_imports_as_an_execute_commands(trips, name):
    """Execute_commands running as many secondaries as the original's do, each secondary's commands those of one
    original secondary (the reference each label's region gives)."""
    trip, _ = trips[name]
    imported = trip.imported.index
    executes = [(cb.id, c) for cb in trip.imported.command_buffers for c in cb.commands
                if isinstance(c, ir.ExecuteCommands)]
    runs = sum(len(trip.original.index.executed(cb)) - 1 for _, b in ir.batches(trip.original)
               for cb in b.command_buffers)
    assert sum(len(c.command_buffers) for _, c in executes) == runs
    for _, c in executes:
        for s in c.command_buffers:
            regions = {x.label.rpartition(": ")[0].partition("@")[0].partition("[")[0]
                       for x in imported.command_buffers[s].commands}
            assert len(regions) == 1 and regions <= set(trip.original.index.command_buffers)


@pytest.mark.parametrize("name", STREAMS)
def test_imported_secondaries_replay_with_the_original_digests(trips, name):
    trip, _ = trips[name]
    assert runtime.replay(trip.imported).digests == trip.digests
