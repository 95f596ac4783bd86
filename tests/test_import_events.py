"""Events through a capture (issue 25): streams using events, replayed on Lavapipe under the GFXReconstruct capture
layer, import with their sets, resets and waits in either form (vkCmdSetEvent / vkCmdWaitEvents, vkCmdSetEvent2 /
vkCmdWaitEvents2, vkCmdResetEvent2, host vkSetEvent / vkResetEvent), named by the debug names the runtime gives
the events; the imported stream has the original's findings (a hazard between a set and its wait among them) and
replays with its digests. The comparison is tests/test_import_roundtrip.py's."""

from __future__ import annotations


import pytest

from vkverify.model import ir

from .test_events_replay import BETWEEN, BOTH_FORMS, dependency_form
from .test_import_roundtrip import round_trips, whole_findings

runtime = pytest.importorskip("vkverify.runtime")

STREAMS = {"both-forms": BOTH_FORMS, "between-stage": BETWEEN, "between-dependency": dependency_form(BETWEEN)}


@pytest.fixture(scope="module")
def trips(tmp_path_factory, device_name):
    return round_trips(tmp_path_factory, STREAMS)


def _event_commands(stream: ir.Stream) -> list[tuple]:
    """(kind, the Vulkan call of its label, its event ids) of each event command."""
    return [(type(c).__name__, c.label.rpartition(": ")[2].partition(" #")[0], getattr(c, "events", (None,))
             if isinstance(c, ir.WaitEvents) else (c.event,))
            for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.EVENT_COMMANDS)]


@pytest.mark.parametrize("name", STREAMS)
def test_imported_events_have_the_original_findings(trips, name):
    original = whole_findings(trips, name)
    if name.startswith("between"):  # the copy between the set and the wait still races the fill after it
        assert original == {("war", "A", (0, 256), "cb0[2]", "cb0[4]")}
    else:
        assert original == set()


def test_each_form_imports_as_itself(trips):
    trip, _ = trips["both-forms"]
    assert [e.id for e in trip.imported.events] == ["E1", "E2", "H"]
    assert _event_commands(trip.imported) == [
        ("SetEvent", "vkCmdSetEvent", ("E1",)), ("WaitEvents", "vkCmdWaitEvents", ("E1",)),
        ("SetEvent", "vkCmdSetEvent2", ("E2",)), ("WaitEvents", "vkCmdWaitEvents2", ("E2", "H")),
        ("WaitEvents", "vkCmdWaitEvents", ("E1",)), ("ResetEvent", "vkCmdResetEvent2", ("E1",))]
    host = [op for t in trip.imported.threads for op in t.ops if isinstance(op, (ir.HostSetEvent, ir.HostResetEvent))]
    assert [(type(op).__name__, op.event) for op in host] == [("HostSetEvent", "H"), ("HostResetEvent", "H")]
    set2 = next(c for cb in trip.imported.command_buffers for c in cb.commands if isinstance(c, ir.SetEvent)
                and c.event == "E2")
    assert set2.dependency == next(c for cb in trip.original.command_buffers for c in cb.commands
                                   if isinstance(c, ir.SetEvent) and c.event == "E2").dependency


@pytest.mark.parametrize("name", STREAMS)
def test_imported_events_replay_with_the_original_digests(trips, name):
    trip, _ = trips[name]
    digests = runtime.replay(trip.imported).digests
    assert {b: digests.get(b) for b in trip.digests} == trip.digests
