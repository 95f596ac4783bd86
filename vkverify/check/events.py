"""Events (spec 7.5): a split barrier, stated as two barrier entries the queue's barrier log already understands.

vkCmdWaitEvents(2) applies each memory dependency's first scopes "to operations that occurred earlier in
submission order than the last event signal operation" of its event, and its second scopes to operations after
the wait: commands between the set and the wait are in neither. So the set is an execution-only entry from its
first synchronization scope to a stage of its own (`event_stage`: one per event and first scope), which nothing
but a wait names, and the wait is the dependency's entries with that stage for their first synchronization
scope; their access scopes are the dependency's own. An access before the set reaches the event's stage, by its
own stage or a chain, and through it the wait; an access after the set never does, nor does a barrier between
the two reach the wait. A later set of the same event with the same stages reaches every access an earlier one
did (they are earlier than it too, and chains only grow), so sets share their stage.

The checker (engine.py) and the happens-before graph (hb.py) both run events so; the slow reference
(reference.py) reads 7.5 on its own.

An event's state is changed by its sets and resets (device and host), and the spec leaves their order to the
application: "There is no direct ordering guarantee between vkCmdSetEvent2 and vkCmdResetEvent2, vkCmdResetEvent,
or vkCmdSetEvent. Another execution dependency (e.g. a pipeline barrier or semaphore with
VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT) is needed to prevent such a race condition" (7.5, note to vkCmdWaitEvents2).
Each set or reset is an event (un)signal operation, "the second synchronization scope" of its command, at no
pipeline stage: the walk keeps it as an Access at the stage only a first scope of every operation holds
(scopes.EARLIER_EVENT_OPERATIONS; for a device set, also one at each of its event stages, which the waits that wait
for a set of its stages hold: "Event signal operations performed by vkCmdSetEvent that occur earlier in submission
order are included in the first synchronization scope"), and a later operation is ordered after it when that
Access is ordered before the later operation's own first synchronization scope (`operation_scope`: its stage mask,
and what a second scope of every operation holds). Operations order no access: they are in no barrier's entries.
Two operations ordered neither way are an `event_race`, but two resets (both leave the event unsignaled). A set's
signal operation is in its own dependency's second scope (whose first is the union of its memory dependencies) and
each wait's first: an operation ordered before a set is ordered before what the set's Accesses are (7.1 chains
them). The set stands for its own event's; another event's operation holds the set's Accesses too
(EventStates.through and signals, engine.Checker._held).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..model import ir
from .barriers import BarrierEntry, Steps, compile_barrier, layout_transitions, memory_barriers
from .scopes import LATER_EVENT_OPERATIONS, explicit_stages, first_execution_scope

__all__ = ["HOST", "EventStates", "dependencies", "event_entries", "event_stage", "operation_memory",
           "operation_scope", "races", "set_entries", "signal_beyond_entries", "through_event", "wait_entries"]

HOST = "host"  # the event's state after vkSetEvent
_PREFIX = "event "
_MEMORY = "event state "  # what an operation's Access names in place of a buffer (no buffer's placement)


def operation_memory(event: str) -> str:
    """What an Access of an operation on `event` names as its buffer: no memory, so no buffer barrier holds it."""
    return f"{_MEMORY}{event}"


def operation_scope(cmd: ir.SetEvent | ir.ResetEvent) -> frozenset[str]:
    """7.5 vkCmdSetEvent(2), vkCmdResetEvent(2): the first synchronization scope of its operation, "all commands
    that occur earlier in submission order", limited to its stage mask (vkCmdSetEvent2's: "the union of all the
    memory dependencies"), and what a second scope of every later operation (all_commands) holds."""
    return first_execution_scope(cmd.stage) | {LATER_EVENT_OPERATIONS}


def races(first: str, second: str) -> bool:
    """Whether two operations on one event ("set_event", "reset_event") ordered neither way race: any pair but
    two resets (7.5's note names a set with a reset or another set)."""
    return "set_event" in (first, second)


def event_stage(event: str, stages: frozenset[str]) -> str:
    """The stage a set of `event` with first synchronization scope `stages` orders its scope before: no pipeline
    stage, so that no command, barrier or semaphore names it."""
    return f"{_PREFIX}{event}: {'|'.join(sorted(stages))}"


def signal_beyond_entries(cmd: ir.SetEvent) -> bool:
    """Whether an operation in the set's first synchronization scope (operation_scope, the union of its memory
    dependencies') may miss its entries (set_entries), which hold its signal operation for its waits: its memory
    dependencies have several first scopes, or one of no stage (operation_scope holds what a second scope of
    every operation does)."""
    scopes = set(cmd.first_scopes)
    return len(scopes) > 1 or not first_execution_scope(next(iter(scopes)))


def through_event(entry: BarrierEntry) -> bool:
    """Whether the entry is a wait's: its first synchronization scope is only what a set ordered before its event,
    so whether a write is in its first access scope is asked of the write's own stage, not of the set's."""
    return any(s.startswith(_PREFIX) for s in entry.src_exec)


def set_entries(cmd: ir.SetEvent) -> tuple[BarrierEntry, ...]:
    """7.5 vkCmdSetEvent(2): its first synchronization scopes, each ordered before its own event stage; no access
    scope (the wait's dependency holds it: vkCmdWaitEvents2 requires the same dependency as the set's)."""
    return tuple(BarrierEntry("", None, 0, 0, first_execution_scope(stages), explicit_stages(stages), frozenset(),
                              frozenset({event_stage(cmd.event, stages)}), frozenset())
                 for stages in cmd.first_scopes)


def wait_entries(dependency: ir.Barrier, event: str, first_scopes: tuple[frozenset[str], ...] | None,
                 index: ir.StreamIndex) -> tuple[BarrierEntry, ...]:
    """7.5 vkCmdWaitEvents(2): the dependency's entries, whose first synchronization scope is what the last set
    (its `first_scopes`) ordered before the event; None: the host set it, before the submission, whose own
    ordering (7.9) already holds every host operation before it, so the entries order nothing. vkCmdSetEvent2's
    k-th memory dependency pairs with the wait's k-th; vkCmdSetEvent's one scope with each of the wait's."""
    entries = compile_barrier(dependency, index)
    if first_scopes is None:
        return tuple(replace(e, src_exec=frozenset()) for e in entries)
    paired = first_scopes if len(first_scopes) == len(entries) else (frozenset().union(*first_scopes),) * len(entries)
    return tuple(replace(e, src_exec=frozenset({event_stage(event, stages)})) for e, stages in zip(entries, paired))


def dependencies(cmd: ir.Barrier | ir.SetEvent | ir.ResetEvent | ir.WaitEvents) -> tuple[ir.Barrier, ...]:
    """The dependencies a synchronization command holds: a barrier itself, a wait's, a vkCmdSetEvent2's."""
    if isinstance(cmd, ir.WaitEvents):
        return cmd.dependencies
    if isinstance(cmd, ir.SetEvent):
        return () if cmd.dependency is None else (cmd.dependency,)
    return (cmd,) if isinstance(cmd, ir.Barrier) else ()


def event_entries(states: EventStates, queue: str, cmd: ir.SetEvent | ir.ResetEvent | ir.WaitEvents,
                  index: ir.StreamIndex) -> tuple[Steps, list[tuple[str, str]]]:
    """Run an event command on `queue`: what it adds to the queue's barrier log (barriers.Steps: none for a reset;
    a set's masks as written are a dependency, or one of its buffer barriers; vkCmdSetEvent's a barrier of its
    stage mask alone; a wait's dependencies with their image layout transitions, 7.7.4), and per event a wait finds
    unsatisfied, (event, why): the queue would wait for ever, and the wait orders nothing."""
    if isinstance(cmd, ir.ResetEvent):
        states.run(queue, cmd)
        return Steps((), ()), []
    if isinstance(cmd, ir.SetEvent):
        states.run(queue, cmd)
        written = memory_barriers(cmd.dependency) if cmd.dependency is not None else \
            (ir.Barrier(cmd.stage, frozenset(), frozenset(), frozenset()),)
        return Steps(set_entries(cmd), written), []
    steps = Steps((), ())
    unsatisfied = []
    for event, dependency in zip(cmd.events, cmd.dependencies):
        scopes = states.waited(queue, event)
        if isinstance(scopes, str):
            unsatisfied.append((event, scopes))
        else:
            steps += layout_transitions(dependency, wait_entries(dependency, event, scopes, index), wait=True)
    return steps, unsatisfied


@dataclass
class EventStates:
    """Each event's state as the walk runs its sets and resets: unsignaled (absent), HOST, or the queue and first
    scopes of its last set; and per event its operations no later one is ordered after (each an Access of the
    walk), which a new one is compared with (a set or reset ordered after them all stands for them, as the most
    recent write does for older ones)."""

    state: dict[str, object] = field(default_factory=dict)
    operations: dict[str, tuple] = field(default_factory=dict)
    # per operation (its uid) the Accesses of the sets of other events it is ordered before, one per agent and stage;
    # per queue (agent) the sets whose first scope holds every operation before them on it, in queue order
    through: dict[int, dict] = field(default_factory=dict)
    signals: dict[int, list] = field(default_factory=dict)

    def fork(self) -> EventStates:
        return EventStates(dict(self.state), dict(self.operations), {k: dict(v) for k, v in self.through.items()},
                           {k: list(v) for k, v in self.signals.items()})

    def run(self, queue: str, cmd: ir.SetEvent | ir.ResetEvent) -> None:
        if isinstance(cmd, ir.SetEvent):
            self.state[cmd.event] = (queue, cmd.first_scopes)
        else:
            self.state.pop(cmd.event, None)

    def host(self, op: ir.HostSetEvent | ir.HostResetEvent) -> None:
        if isinstance(op, ir.HostSetEvent):
            self.state[op.event] = HOST
        else:
            self.state.pop(op.event, None)

    def waited(self, queue: str, event: str) -> tuple[frozenset[str], ...] | None | str:
        """The first scopes of the set a wait on `queue` waits for; None where the wait completes but orders
        nothing the submission does not (a host set; a set on another queue, which 7.5 forbids: "vkCmdWaitEvents2
        must not be used to wait on event signal operations occurring on other queues", and whose commands are
        in no submission order with the wait's); or why nothing satisfies it."""
        found = self.state.get(event)
        if found is None:
            return f"{event!r} is not set when the wait runs: no set_event before it on its queue, nor by the host"
        if found == HOST or found[0] != queue:
            return None
        return found[1]
