"""The slow reference: happens-before enumerated operation by operation, straight from the spec text.

Where the checker (engine.py, schedule.py) keeps vector clocks and a range map so that each access
costs a handful of comparisons, this module builds every synchronization operation of a small stream
as a node, every edge the spec defines between two of them, and decides each conflicting pair of
accesses from the definitions of "Execution and Memory Dependencies" (spec 7.1) read literally:

- execution: a happens-before b when a path of direct edges joins them (7.1 "execution dependency
  chain": each edge is one synchronization scope meeting the next);
- memory: a write W is visible to an access X when some availability operation for W (a barrier or a
  signal with W in its first access scope) happens-before, or is, a visibility operation for X (a
  barrier, a semaphore wait or a submission with X in its second access scope) (7.1 "memory
  dependency": "the availability operation happens-before the visibility operation").

Nothing here is fast: it is the rule the fast checker is tested against (tests/test_reference.py), on
streams of a few dozen operations.

Several host threads: each thread's ops are in program order; threads are ordered only through Vulkan
objects (a semaphore signal before the waits it satisfies, a fence signal before vkWaitForFences returns,
the queue's completion before an idle wait returns). What the spec leaves to the schedule is read so:
- submission order (7.2: "the order in which vkQueueSubmit commands are executed on the host, for a single
  queue") of a queue fed by several threads is any interleaving of theirs (the queue is externally
  synchronized, in an order the stream does not record, by means that order nothing else); an idle wait is a
  fence submitted in that order (5.3.4). Each order no schedule runs (its calls and waits form a cycle, under
  the z3 model's batches beginning and ending in submission order) is left out, and the verdict is what any
  other order gives: `references` reads every one, `Reference` one;
- a timeline wait for v synchronizes with the signal of the smallest value >= v, whoever makes it (signals
  strictly increase in time: docs/format.md, "Schedules");
- a host thread sees another's write to host_cached memory only through the writer's flush and, for a read,
  its own invalidate after acquiring that flush (the reading `host_threads_coherent` off).
`OutsideReference` says when a stream is outside what the reference reads: params; a deadlock (no order
completes, or a wait no signal satisfies); a binary semaphore or a fence whose pairing depends on how
threads interleave (a binary semaphore used by several threads; a fence several threads use that is not
submitted exactly once, unsignaled, and never reset); more than MAX_ORDERS submission orders.

Readings of what the spec leaves open, applied here and in the checker alike (docs/format.md,
"Readings"):
- a barrier's second execution scope meets a later barrier's first scope when the two stage sets
  intersect, also with no command between them (syncval's reading of 7.1's chain definition);
- a fence signal has a barrier whose destination is the host stage in its first scope, a semaphore signal
  only at all_commands or bottom_of_pipe, and only under the reading `all_commands_includes_host` (the default);
- `host` in a barrier's source stage mask puts in its first scope the host operations that happen
  before a semaphore wait or submission earlier on its queue (it holds their writes; an access still
  needs the write to happen-before it, corpus 144); only before a submission under the reading
  `host_barrier_after_wait` off;
- a buffer memory barrier covers only accesses through its own buffer (or, under the reading
  `buffer_barrier_covers_aliases`, any access to its bytes).

Events (7.5) are read from vkCmdSetEvent(2) and vkCmdWaitEvents(2) alone: a set is a node whose first scope is its
stage mask over earlier operations on its queue and whose second scope holds only its event signal operation; a
wait's memory dependencies are barrier nodes that nothing chains into, joined by an edge from the last set of their
event on their queue, their first access scopes limited to operations before that set (`Reference._pair_events`).
A wait on an event the host set before its submission is joined to that host op. Outside what the reference reads:
a wait no set satisfies, an event set or reset on several queues, and a host set or reset the wait's submission
is not ordered with. Each set and reset also has a node of its event operation, at no stage: its first scope its
stage mask (and what a second scope of every operation holds), its second scope only what a first scope of every
operation holds (all_commands, bottom_of_pipe; 7.6); the last set's joins the wait's nodes. The order of
operations is closed through each (`Reference._operation_order`). Two operations on one event, not two resets,
neither happening-before the other, race (7.5's note; `Verdict.event_races`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from graphlib import CycleError, TopologicalSorter
from itertools import count, pairwise, product

from ..errors import VkverifyError
from ..model import ir
from ..model.accesses import command_accesses
from ..model.images import LAYOUT_TRANSITION, LAYOUT_WRITE
from ..model.refs import format_ref
from ..model.stages import ACCESS, COMMAND_STAGES, EXECUTING_STAGES, STAGE, same_or_logically_earlier
from .readings import DEFAULT, Readings

__all__ = ["OPERATION_AWAITED", "OPERATION_DONE", "OutsideReference", "Reference", "access_pairs", "first_scope",
           "joined", "references", "second_scope",
           "signal_scope", "submission_orders", "verdict"]

_COHERENT = ("host_coherent", "device_host_visible")
MAX_ORDERS = 64  # the submission orders one stream is read in, at most


class OutsideReference(VkverifyError):
    """The stream is outside what the reference reads (a deadlock, params, an interleaving of threads it does
    not enumerate: the module's docstring). Seen by the tests that compare the checker with the reference, which
    skip that stream."""


@dataclass(eq=False)
class Operation:
    """One operation on a queue or a host thread (`pos`: its position on the queue, or in the thread's program).
    `first`/`second`: the stages of its first and second synchronization scopes on its own queue (7.1.2); an
    access node has its own stage in both. `until`: a vkCmdWaitEvents memory dependency's first scopes hold only
    operations before this position, its event's last set (7.5); None for every other node (its own position)."""

    kind: str  # access | barrier | wait | submission | signal | fence | host | set | operation (an event's)
    agent: str
    pos: int
    first: frozenset[str] = frozenset()
    second: frozenset[str] = frozenset()
    batch: int = -1  # queue-wide batch number (signal operation order, 7.2)
    ref: str = ""
    barrier: ir.Barrier | ir.BufferBarrier | ir.ImageBarrier | None = None
    root: str | None = None  # a buffer or image barrier's memory and range, in root coordinates
    lo: int = 0
    hi: int = 0
    op: ir.HostOp | None = None
    after: list = field(default_factory=list)  # direct happens-before successors
    until: int | None = None

    @property
    def before(self) -> int:
        """Its first scopes hold the operations of its queue before this position."""
        return self.pos if self.until is None else self.until


@dataclass(eq=False)
class OperationAccess:
    node: Operation
    uid: int  # the command execution or host op
    ref: str
    stage: str
    reads: tuple[str, ...]
    write: str | None
    buffer: str
    root: str
    lo: int
    hi: int
    memory: str
    submit: Operation  # the host op that submitted it (a host access: its own op)
    atomic: bool = False  # a shader's atomic operations
    marker: frozenset[str] | None = None  # a buffer marker write's: the stages it names

    @property
    def host(self) -> bool:
        return self.stage == "host"


@dataclass(frozen=True)
class Hazard:
    """An unordered pair the spec calls a hazard: `racing` when neither happens-before the other."""

    kind: str
    buffer: str
    first: str
    second: str
    racing: bool
    lo: int
    hi: int


@dataclass(frozen=True)
class Conflict:
    """Two accesses to one byte segment, at least one a write (`first` happens-before `second`, or neither
    does). `ordered`: happens-before, with a memory dependency where `first` writes; `hidden`: a write of the
    segment is ordered between them, so only the pairs with it are compared; `kind`: the hazard it is unordered."""

    first: OperationAccess
    second: OperationAccess
    ordered: bool
    hidden: bool
    kind: str


@dataclass(frozen=True)
class Verdict:
    hazards: frozenset[Hazard]
    use_after_destroy: frozenset[tuple[str, str]]  # (use, destroy) or (destroy, later use)
    fence_misuse: frozenset[str]  # the resets and submits of a fence in a state Vulkan forbids
    event_races: frozenset[tuple[str, str, str]] = frozenset()  # (event, first, second): neither happens-before


# ---- scopes, read from the spec's stage and access tables (model/stages.py), apart from the checker's ------

_HOST_STAGE = frozenset({"host"})


def _named(mask: frozenset[str], table: dict) -> frozenset[str]:
    """7.6, 7.7: the bits a mask names, meta bits (transfer, all_commands, shader_read) by those they cover."""
    return frozenset(x for name in mask for x in table[name].covers)


# 7.6: ALL_COMMANDS "specifies all operations performed by all commands supported on the queue it is used with"; a
# layout transition is one (7.7.4: it is "specified in a memory dependency", the operation of that command). 7.6.1:
# BOTTOM_OF_PIPE in a first scope and TOP_OF_PIPE in a second are "equivalent to ALL_COMMANDS" there. A transition
# node has LAYOUT_TRANSITION for its scopes, so those scopes meet it; no other stage's scope does.
_ALL_OPERATIONS = frozenset({LAYOUT_TRANSITION})
# 7.5: vkCmdSetEvent(2) and vkCmdResetEvent(2) define an event signal or unsignal operation, "the second
# synchronization scope" of the command, at no stage: an operation of all commands too. Its node's second scope is
# OPERATION_DONE, which only a first scope of every operation holds; its first scope holds OPERATION_AWAITED, which
# only a second scope of every operation holds (two names, so that two event operations do not chain directly).
OPERATION_DONE, OPERATION_AWAITED = "an event operation", "a later event operation"


def first_scope(src_stage: frozenset[str]) -> frozenset[str]:
    """7.6.1: a source mask's execution scope, the stages named and those logically earlier, of those
    commands execute at (top_of_pipe alone: none); with bottom_of_pipe (all_commands) every operation."""
    named = _named(src_stage, STAGE)
    return frozenset(s for s in EXECUTING_STAGES if any(s == t or s in STAGE[t].earlier for t in named)) | \
        (_ALL_OPERATIONS | {OPERATION_DONE} if "bottom_of_pipe" in named else frozenset())


def second_scope(dst_stage: frozenset[str]) -> frozenset[str]:
    """7.6.1: a destination mask's execution scope, the stages named and those logically later
    (bottom_of_pipe alone: none); with top_of_pipe (all_commands) every operation."""
    named = _named(dst_stage, STAGE)
    return frozenset(s for s in EXECUTING_STAGES if any(s == t or t in STAGE[s].earlier for t in named)) | \
        (_ALL_OPERATIONS | {OPERATION_AWAITED} if "top_of_pipe" in named else frozenset())


def access_pairs(stage: frozenset[str], access: frozenset[str]) -> frozenset[tuple[str, str]]:
    """7.1.2: an access scope holds only the stages its mask names, never earlier or later ones."""
    return frozenset((s, a) for s in _named(stage, STAGE) for a in _named(access, ACCESS))


def signal_scope(stage: frozenset[str], all_commands_includes_host: bool) -> frozenset[str]:
    """7.4.1: a semaphore signal's first scope by its stage mask; with every command stage, the host stage too
    under the reading all_commands_includes_host (check/readings.py)."""
    scope = first_scope(stage)
    return scope | _HOST_STAGE if all_commands_includes_host and scope >= COMMAND_STAGES else scope


# ---- the rules, one function each ------------------------------------------------------------------

def _chains(a: Operation, b: Operation) -> bool:
    """Spec 7.1 "execution dependency chain": a's second scope meets b's first scope (a before b on one
    queue); 7.2 "signal operation order": a semaphore signal's first scope holds the semaphore signals
    of earlier batches, a fence's every earlier signal, never those of its own batch."""
    if a.kind == b.kind == "access":
        return False  # 7.2: submission order alone orders nothing
    if a.kind == "signal" and b.kind in ("signal", "fence"):
        return b.kind == "fence" or a.batch < b.batch
    if a.kind == "fence":
        return b.kind == "fence"
    return bool(a.second & b.first)


def _in_first_access_pairs(n: Operation, w: OperationAccess, by_buffer: bool) -> bool:
    """Spec 7.1.2 access scopes: does n make w available (w earlier than n on n's queue)?"""
    if n.kind == "barrier":
        b = n.barrier
        return (w.stage, w.write) in access_pairs(b.src_stage, b.src_access) and _covers(n, w, by_buffer)
    # 7.4.1 / 7.3.1: a semaphore or fence signal's first access scope is all device access.
    return n.kind in ("signal", "fence") and w.stage in n.first


def _in_second_access_pairs(n: Operation, x: OperationAccess, needs: tuple[str, ...], by_buffer: bool) -> bool:
    """Spec 7.1.2: does n make available writes visible to x's accesses `needs`? For a host write, the memory
    model asks only a domain operation to the host (appendix "Location-Ordered"), which a destination
    with host_read or host_write performs (its "Availability, Visibility, and Domain Operations")."""
    if n.kind == "barrier":
        b = n.barrier
        scope = access_pairs(b.dst_stage, b.dst_access)
        if x.host and x.write:
            return bool({("host", "host_read"), ("host", "host_write")} & scope) and _covers(n, x, by_buffer)
        return all((x.stage, a) in scope for a in needs) and _covers(n, x, by_buffer)
    # 7.4.2 semaphore wait, 7.9 host write ordering: all device access in the second scope.
    return n.kind in ("wait", "submission") and x.stage in n.second


def _covers(n: Operation, x: OperationAccess, by_buffer: bool) -> bool:
    """Spec 7.7.2: a buffer memory barrier's access scopes hold only its range, and with `by_buffer` (the
    reading buffer_barrier_covers_aliases off) only "access to memory through the specified buffer range"."""
    if n.root is None:
        return True
    through = n.barrier.image if isinstance(n.barrier, ir.ImageBarrier) else n.barrier.buffer
    return n.root == x.root and n.lo <= x.lo and x.hi <= n.hi and (not by_buffer or through == x.buffer)


# ---- submission orders -------------------------------------------------------------------------------

def submission_orders(stream: ir.Stream) -> list[ir.SubmissionOrder]:
    """Every submission order of the stream's queues (ir.submission_orders): one per interleaving of the calls of
    several threads to one queue, each queue's independently."""
    if stream.params:
        raise OutsideReference("the reference reads streams without params")
    orders = ir.submission_orders(stream, MAX_ORDERS)
    if orders is None:
        raise OutsideReference(f"more than {MAX_ORDERS} submission orders of queues fed by several threads")
    return orders


# ---- building the operations ------------------------------------------------------------------------

class Reference:
    """The operations of a stream and their happens-before in one submission order (submission_orders; None:
    the stream's only one, OutsideReference where its threads leave one open)."""

    def __init__(self, stream: ir.Stream, readings: Readings = DEFAULT,
                 order: dict[str, tuple[tuple[str, int], ...]] | None = None) -> None:
        if order is None:
            orders = submission_orders(stream)
            if len(orders) > 1:
                raise OutsideReference("threads submit to one queue in an order the stream leaves open: "
                                       "references() reads each")
            order = orders[0]
        self.stream = stream
        self.readings = readings
        self.order = order
        self.by_buffer = not readings.buffer_barrier_covers_aliases
        # 7.6: the host ops a barrier with host in its source stages holds, through these earlier nodes (readings)
        self.host_barrier_reaches = ("wait", "submission") if readings.host_barrier_after_wait else ("submission",)
        self.index = stream.index
        self.nodes: list[Operation] = []
        self.queue_nodes: dict[str, list[Operation]] = {q: [] for q in self.index.queues}
        self.accesses: list[OperationAccess] = []
        # copies.adoc "Buffer Markers": (earlier, later) marker write nodes the later one's implicit dependency
        # orders, the earlier write visible to the later (_marker_write): no conflict, as two atomics are none.
        self.marker_dependencies: set[tuple[Operation, Operation]] = set()
        self.uids = count()
        self.batches = count()
        self.fence_misuse: set[str] = set()
        self.destroys: list[tuple[Operation, ir.Destroy]] = []
        self.resets: list[tuple[Operation, Operation]] = []  # (reset, the fence signal it may not precede)
        # What happens before what in time, coarser than happens-before: host ops and batch begins and ends
        # (("begin" | "end", batch number)), each with the events that come before it (docs/format.md, "Schedules").
        self.time: dict[object, set] = {}
        self.fence_of: dict[Operation, Operation] = {}  # a submit with a fence -> its fence signal
        self.timeline_signals: dict[str, list[tuple[int, Operation]]] = {
            s.id: [] for s in stream.semaphores if s.type == "timeline"}
        self.timeline_waits: list[tuple[Operation, str, int]] = []
        # binary semaphore -> [(thread, program key, wait or signal node)]
        self.binary: dict[str, list[tuple[str, tuple, Operation]]] = {
            s.id: [] for s in stream.semaphores if s.type == "binary"}
        # Events (7.5): per (queue, event) its last set's nodes (None: a reset), the submission that made it and a set's
        # first scopes' stages (ir.SetEvent.first_scopes); the
        # queues that set or reset each event; the host's sets and resets; each wait's (memory dependency nodes,
        # event, last set or reset on its queue then, submission, ref).
        self.event_state: dict[tuple[str, str], tuple] = {}
        self.event_queues: dict[str, set[str]] = {}
        self.host_events: dict[str, list[Operation]] = {}
        self.event_waits: list[tuple[list[Operation], str, tuple | None, Operation, str]] = []
        # per event, every set and reset (its operation's node, and a set's signal node: None for a reset; the host's
        # its own node both), in stream order; per (queue, event) each set's signal node and its first scopes' stages
        self.event_operations: dict[str, list[tuple[Operation, Operation | None]]] = {}
        self.event_signals: dict[tuple[str, str], list[tuple[Operation, set]]] = {}
        self._build()
        self._chain()
        self.reach = self._closure()
        if self.event_waits:  # which set a wait waits for is read by happens-before without the events' edges
            self._pair_events()
            self.reach = self._closure()
        self.operations_after = self._operation_order()

    def _node(self, kind: str, agent: str, **kw) -> Operation:
        n = Operation(kind, agent, len(self.queue_nodes[agent]), **kw)
        self.nodes.append(n)
        self.queue_nodes[agent].append(n)
        return n

    def _access(self, node: Operation, submit: Operation, uid: int, ref: str, stage: str, reads, write, buffer: str,
                lo: int, hi: int, atomic: bool = False, marker: frozenset[str] | None = None) -> None:
        root, base = self.index.root(buffer)
        memory = self.index.buffers[root].memory
        a = OperationAccess(node, uid, ref, stage, tuple(reads), write, buffer, root, base + lo, base + hi, memory,
                            submit, atomic, marker)
        self.accesses.append(a)
        if marker is not None:
            self._marker_write(a)

    def _marker_write(self, m: OperationAccess) -> None:
        """copies.adoc "Buffer Markers", vkCmdWriteBufferMarker2AMD "defines an execution dependency between prior
        operations and writing the marker value, as well as a memory dependency from earlier buffer marker write
        commands": its first synchronization scope "additionally includes other buffer marker write commands that
        occur earlier in submission order that specified either the same pipelineStage or a stage that is logically
        earlier" (7.6.1), its first access scope "only accesses performed by other buffer marker write commands",
        its second scopes "only the buffer marker write". So an edge from each such earlier marker write of the
        queue to m; the pair, its write visible to m's, is no conflict (`conflicts`). The dependency on the prior
        operations at pipelineStage is not read (docs/format.md, "Buffer markers")."""
        for e in self.accesses:
            if e is not m and e.marker is not None and e.node.agent == m.node.agent \
                    and same_or_logically_earlier(e.marker, m.marker):
                e.node.after.append(m.node)
                self.marker_dependencies.add((e.node, m.node))

    @staticmethod
    def _when(n: Operation) -> object:
        """The time event at which n happens: a host op itself, a wait at its batch's begin, a signal at its end."""
        return n if n.kind == "host" else ("begin" if n.kind == "wait" else "end", n.batch)

    def _after(self, event: object, *before: object) -> None:
        self.time.setdefault(event, set()).update(b for b in before if b is not None)

    def _synchronizes(self, signal: Operation, wait: Operation) -> None:
        """Spec 7.4.2, 7.3: a signal happens-before the wait it satisfies (and comes before it in time)."""
        signal.after.append(wait)
        self._after(self._when(wait), self._when(signal))

    def _build(self) -> None:
        host: dict[tuple[str, int], Operation] = {}
        for t in self.stream.threads:
            last = None
            for pc, op in enumerate(t.ops):
                h = host[t.id, pc] = Operation("host", t.id, pc, ref=format_ref(t.id, pc), op=op)
                self.nodes.append(h)
                if last is not None:
                    last.after.append(h)  # host program order
                    self._after(h, last)
                last = h
        for q, calls in self.order.items():
            call, batch = None, None
            for key in calls:
                h = host[key]
                self._after(h, call)  # the calls run in this order
                call = h
                if isinstance(h.op, ir.Submit):
                    batch = self._submit(h, h.op, batch)
                else:
                    # Spec 5.3.4 vkQueueWaitIdle: a fence submitted after every earlier submission, waited.
                    self._synchronizes(self._fence_node(q, f"{h.ref}:idle {q}", batch), h)
        shared = self._shared_fences()
        for t in self.stream.threads:
            self._host_ops([host[t.id, pc] for pc in range(len(t.ops))], shared)
        self._pair_binary()
        for node, semaphore, value in self.timeline_waits:
            source = self._timeline_source(semaphore, value)
            if source is not None:
                self._synchronizes(source, node)

    def _host_ops(self, ops: list[Operation], shared: dict[str, tuple[str, Operation]]) -> None:
        """What each host op of one thread waits for, signals and accesses, in program order (`shared`: the
        fences several threads use)."""
        fences = {f.id: ("signaled" if f.signaled else "unsignaled", None) for f in self.stream.fences} | shared
        for h in ops:
            op = h.op
            if isinstance(op, ir.Submit) and op.fence is not None and op.fence not in shared:
                if fences[op.fence][0] != "unsignaled":
                    self.fence_misuse.add(h.ref)  # VUID-vkQueueSubmit2-fence-04894: unsignaled, not pending
                fences[op.fence] = ("pending", self.fence_of[h])
            elif isinstance(op, ir.WaitFences):
                for f in op.fences:
                    state, signal = fences[f]
                    if state == "unsignaled":
                        raise OutsideReference(f"{h.ref} waits for a fence nothing signals")
                    if signal is not None:
                        self._synchronizes(signal, h)
            elif isinstance(op, ir.ResetFences):
                for f in op.fences:
                    if fences[f][0] == "pending":
                        self.resets.append((h, fences[f][1]))
                    fences[f] = ("unsignaled", None)
            elif isinstance(op, ir.WaitSemaphores):  # a counter read of V too: it observed V's signal (docs/format.md)
                self.timeline_waits += [(h, w.semaphore, w.value) for w in op.waits]
            elif isinstance(op, ir.SignalSemaphore):
                self.timeline_signals[op.semaphore].append((op.value, h))
            elif isinstance(op, ir.HostAccess):
                if op.op in ("host_write", "host_read"):
                    write = op.op == "host_write"
                    self._access(h, h, next(self.uids), h.ref, "host", () if write else ("host_read",),
                                 "host_write" if write else None, op.buffer, op.offset, op.offset + op.size)
            elif isinstance(op, ir.Destroy):
                self.destroys.append((h, op))
            elif isinstance(op, (ir.HostSetEvent, ir.HostResetEvent)):
                self.host_events.setdefault(op.event, []).append(h)
                self.event_operations.setdefault(op.event, []).append(
                    (h, h if isinstance(op, ir.HostSetEvent) else None))

    def _shared_fences(self) -> dict[str, tuple[str, Operation]]:
        """Fences several threads use: which signal a wait observes is fixed only for one submitted once,
        unsignaled, and never reset; every wait then observes that submit's (spec 7.3)."""
        users: dict[str, set[str]] = {}
        submits: dict[str, list[Operation]] = {}
        reset = set()
        for h in (n for n in self.nodes if n.kind == "host"):
            op = h.op
            if isinstance(op, ir.Submit) and op.fence is not None:
                submits.setdefault(op.fence, []).append(h)
            for f in [op.fence] if isinstance(op, ir.Submit) and op.fence else \
                    op.fences if isinstance(op, (ir.WaitFences, ir.ResetFences)) else ():
                users.setdefault(f, set()).add(h.agent)
                if isinstance(op, ir.ResetFences):
                    reset.add(f)
        out = {}
        for f, threads in users.items():
            if len(threads) > 1:
                if self.index.fences[f].signaled or f in reset or len(submits.get(f, ())) != 1:
                    raise OutsideReference(f"fence {f!r} is used by several threads and not submitted exactly once, "
                                           f"unsignaled and never reset: which signal a wait observes depends on "
                                           f"the schedule")
                out[f] = ("pending", self.fence_of[submits[f][0]])
        return out

    def _fence_node(self, queue: str, ref: str, batch: int | None) -> Operation:
        """A fence signal after the batch number `batch` (None: the queue's first) ends."""
        n = self._node("fence", queue, first=COMMAND_STAGES | _HOST_STAGE | _ALL_OPERATIONS | {OPERATION_DONE},
                       batch=next(self.batches),
                       ref=ref)
        self._after(self._when(n), None if batch is None else ("end", batch))
        return n

    def _pair_binary(self) -> None:
        """Spec 7.4.2: a binary semaphore wait consumes the oldest signal pending when it is submitted; in
        several threads' submits that order is the schedule's."""
        for semaphore, uses in self.binary.items():
            if len({thread for thread, _, _ in uses}) > 1:
                raise OutsideReference(f"binary semaphore {semaphore!r} is used by several threads: which signal "
                                       f"a wait consumes depends on the order of their submits")
            pending: list[Operation] = []
            for _, _, node in sorted(uses, key=lambda use: use[1]):
                if node.kind == "signal":
                    pending.append(node)
                elif not pending:
                    raise OutsideReference(f"{node.ref} waits on binary {semaphore!r} with no pending signal")
                else:
                    self._synchronizes(pending.pop(0), node)

    def _timeline_source(self, semaphore: str, value: int) -> Operation | None:
        """Spec 7.4.2: a wait for `value` is satisfied by a signal >= value; signals strictly increase in time,
        so the first is the one of the smallest such value, whoever makes it (docs/format.md, "Schedules")."""
        if value <= self.index.semaphores[semaphore].initial:
            return None
        found = [(v, n) for v, n in self.timeline_signals[semaphore] if v >= value]
        if not found:
            raise OutsideReference(f"a wait for {semaphore!r} >= {value} that no signal satisfies")
        least = min(v for v, _ in found)
        first = [n for v, n in found if v == least]
        if len(first) > 1:
            raise OutsideReference(f"{semaphore!r} is signalled to {least} twice")
        return first[0]

    def _submit(self, h: Operation, op: ir.Submit, last: int | None) -> int:
        """The submission, batches and fence of submit h on its queue, after the batch number `last` (None: the
        queue's first); the number of its last batch."""
        q = op.queue
        thread = h.agent
        # 7.9 host write ordering: the submission orders earlier host operations before its commands.
        sub = self._node("submission", q, second=COMMAND_STAGES | _ALL_OPERATIONS | {OPERATION_AWAITED}, ref=h.ref)
        h.after.append(sub)
        for bi, batch in enumerate(op.batches or (ir.Batch(),)):
            number = next(self.batches)
            # docs/format.md "Schedules": a batch begins after its submit and the queue's earlier batches begin,
            # and ends after it begins and they end.
            self._after(("begin", number), h, None if last is None else ("begin", last))
            self._after(("end", number), ("begin", number), None if last is None else ("end", last))
            last = number
            for k, w in enumerate(batch.waits):
                node = self._node("wait", q, second=second_scope(w.stage), ref=h.ref, batch=number)
                if w.semaphore in self.binary:
                    self.binary[w.semaphore].append((thread, (h.pos, bi, 0, k), node))
                else:
                    self.timeline_waits.append((node, w.semaphore, w.value))
            for cb in batch.command_buffers:
                for owner, i, cmd in self.index.commands_of(cb):  # 6.7: a secondary's commands where it runs
                    cref = self.index.command_ref(owner, i, h.ref)
                    if isinstance(cmd, ir.Barrier):
                        self._barrier(q, cmd, cref, h)
                        continue
                    if isinstance(cmd, ir.EVENT_COMMANDS):
                        self._event(q, cmd, cref, h, sub)
                        continue
                    uid = next(self.uids)
                    for stage, reads, write, buffer, lo, hi, atomic, marker in command_accesses(cmd):
                        n = self._node("access", q, first=frozenset({stage}), second=frozenset({stage}), ref=cref)
                        self._access(n, h, uid, cref, stage, reads, write, buffer, lo, hi, atomic, marker)
            for k, s in enumerate(batch.signals):
                n = self._node("signal", q, first=signal_scope(s.stage, self.readings.all_commands_includes_host),
                               batch=number, ref=h.ref)
                if s.semaphore in self.binary:
                    self.binary[s.semaphore].append((thread, (h.pos, bi, 1, k), n))
                else:
                    self.timeline_signals[s.semaphore].append((s.value, n))
        if op.fence is not None:
            self.fence_of[h] = self._fence_node(q, h.ref, last)
        return last

    def _barrier(self, q: str, cmd: ir.Barrier, ref: str, submit: Operation,
                 through_event: bool = False) -> list[Operation]:
        """Spec 7.6 vkCmdPipelineBarrier2: one node per memory barrier; they share a position, so the
        barriers of one command do not chain with each other. 7.7.3: an image memory barrier holds the bytes of
        its subresource range. 7.7.4: a layout transition "happens-after the availability operations" of its
        barrier and "happens-before the visibility operations"; "available memory is automatically made visible
        to a layout transition, and writes performed by a layout transition are automatically made available":
        its image barrier is then two nodes, the first half (first scopes, availability) and the second (second
        scopes, visibility), with the transition, a write, between them. `through_event`: a wait's dependency
        (7.5), whose first scopes go through its event's set (_pair_events), so nothing chains into its nodes: their
        first synchronization scopes are empty. The nodes of its memory barriers' first halves, in order."""
        pos = len(self.queue_nodes[q])
        halves, out = [], []
        for b, root, lo, hi in self._memory_barriers(cmd):
            first = frozenset() if through_event else first_scope(b.src_stage)
            if "host" in _named(b.src_stage, STAGE) and not through_event:
                first = first | _HOST_STAGE
            transition = isinstance(b, ir.ImageBarrier) and b.old_layout != b.new_layout and (
                through_event or not self._acquires(q, b))
            n = Operation("barrier", q, pos, first, frozenset() if transition else second_scope(b.dst_stage), ref=ref,
                          barrier=b, root=root, lo=lo, hi=hi)
            self.nodes.append(n)
            self.queue_nodes[q].append(n)
            out.append(n)
            if transition:
                halves.append(n)
        uid = next(self.uids)  # the barrier's transitions are one command's accesses
        for n in halves:
            b = n.barrier
            t = self._node("access", q, first=_ALL_OPERATIONS, second=_ALL_OPERATIONS, ref=ref)
            self._access(t, submit, uid, ref, LAYOUT_TRANSITION, (), LAYOUT_WRITE, b.image, n.lo, n.hi)
            v = self._node("barrier", q, second=second_scope(b.dst_stage), ref=ref, barrier=b, root=n.root, lo=n.lo,
                           hi=n.hi)
            n.after.append(t)
            t.after.append(v)
        return out

    def _acquires(self, q: str, b: ir.ImageBarrier) -> bool:
        """7.7.4: an image barrier naming two queue families is, on a queue of its destination family, the acquire,
        and "although the image layout transition is submitted twice, it will only be executed once": by the release,
        where it "happens-after the release operation and happens-before the acquire operation"."""
        return b.src_family != b.dst_family and self.index.queues[q][1].family != b.src_family

    def _memory_barriers(self, cmd: ir.Barrier) -> list[tuple]:
        """Its memory barriers, each with its memory and range in root coordinates (None: all memory): itself where
        it has no other, its buffer barriers, then each subresource range of its image barriers (7.7.3)."""
        entries = [(b, None, 0, 0) for b in (cmd,) if not cmd.buffers and not cmd.images]
        for b in cmd.buffers:
            root, base = self.index.root(b.buffer)
            entries.append((b, root, base + b.offset, base + b.offset + b.size))
        return entries + [(b, b.image, lo, hi) for b in cmd.images for lo, hi in b.ranges]

    def _event(self, q: str, cmd: ir.SetEvent | ir.ResetEvent | ir.WaitEvents, ref: str, submit: Operation,
               submission: Operation) -> None:
        """Spec 7.5, an event command on q in submission order (submitted by host op `submit`, its submission node
        `submission`)."""
        if isinstance(cmd, ir.WaitEvents):
            # vkCmdWaitEvents2: "it inserts memory dependencies according to the elements of pDependencyInfos and
            # each corresponding element of pEvents"; their first scopes go through the event's set (_pair_events),
            # so nothing chains into them here (_barrier's through_event).
            for event, dependency in zip(cmd.events, cmd.dependencies):
                nodes = self._barrier(q, dependency, ref, submit, through_event=True)
                self.event_waits.append((nodes, event, self.event_state.get((q, event)), submission, ref))
            return
        self.event_queues.setdefault(cmd.event, set()).add(q)
        # The event signal or unsignal operation itself: "The first synchronization scope includes all commands that
        # occur earlier in submission order ... limited to operations on the pipeline stages determined by" the
        # stage mask (vkCmdSetEvent2's: "the union of all the memory dependencies"), the operation "the second".
        operation = self._node("operation", q, first=first_scope(cmd.stage) | {OPERATION_AWAITED},
                               second=frozenset({OPERATION_DONE}), ref=ref)
        if isinstance(cmd, ir.ResetEvent):
            # vkCmdResetEvent: "an event unsignal operation which resets the event to the unsignaled state".
            self.event_operations.setdefault(cmd.event, []).append((operation, None))
            self.event_state[q, cmd.event] = (None, submission)
            return
        # vkCmdWaitEvents: "Event signal operations performed by vkCmdSetEvent that occur earlier in submission order
        # are included in the first synchronization scope": a node of the signal operation, in no scope, joined to
        # the waits for a set of the same stages (_pair_events), so that it orders no access, only later operations.
        signal = self._node("operation", q, ref=ref)
        self.event_operations.setdefault(cmd.event, []).append((operation, signal))
        self.event_signals.setdefault((q, cmd.event), []).append((signal, set(cmd.first_scopes)))
        # vkCmdSetEvent: "The first synchronization scope includes all commands that occur earlier in submission
        # order ... limited to ... stageMask. The second synchronization scope includes only the event signal
        # operation." vkCmdSetEvent2: "the first half of memory dependencies defined by pDependencyInfo": a node
        # per memory barrier (sharing a position), the k-th the first half of the wait's k-th.
        d = cmd.dependency
        pos = len(self.queue_nodes[q])
        nodes = []
        for stages in [cmd.stage] if d is None else [b.src_stage for b, *_ in self._memory_barriers(d)]:
            n = Operation("set", q, pos, first_scope(stages), ref=ref)
            self.nodes.append(n)
            self.queue_nodes[q].append(n)
            nodes.append(n)
        self.event_state[q, cmd.event] = (nodes, submission, cmd.first_scopes)

    def _pair_events(self) -> None:
        """Spec 7.5 vkCmdWaitEvents2: "The first synchronization scope and access scope of each memory dependency
        defined by any element i of pDependencyInfos are applied to operations that occurred earlier in submission
        order than the last event signal operation on element i of pEvents": an edge from that set (its k-th node
        to the k-th memory barrier; each of them where their numbers differ: the set's first scope is "the union of
        all the memory dependencies") and `until` its position. A set by the host (vkSetEvent) before the submission
        is joined to the wait; it orders nothing the submission does not (7.9), and the first access scopes hold no
        operation of the queue ("earlier in submission order" than a host op: none). Called with happens-before
        without these edges, which decides which set is the last."""
        for nodes, event, last, submission, ref in self.event_waits:
            if len(self.event_queues.get(event, ())) > 1:
                raise OutsideReference(f"event {event!r} is set or reset on several queues: which is the last when "
                                       f"{ref} waits depends on the schedule")
            host = []  # the host's sets and resets of the event before the submission
            for h in self.host_events.get(event, ()):
                if self.hb(h, submission):
                    host.append(h)
                elif not all(self.hb(n, h) for n in nodes):
                    raise OutsideReference(f"{h.ref} sets or resets {event!r} unordered with the wait {ref}: "
                                           f"the reference reads host sets before the submission")
            if last is not None:
                if not all(self.hb(h, last[1]) for h in host):
                    raise OutsideReference(f"{event!r} is set or reset by the host and on its queue in an order the "
                                           f"reference does not read")
                signal = last[0]
            else:
                latest = [h for h in host if all(g is h or self.hb(g, h) for g in host)]
                signal = latest if len(latest) == 1 and isinstance(latest[0].op, ir.HostSetEvent) else None
            if signal is None:
                raise OutsideReference(f"{ref} waits for {event!r}, which is not set before it on its queue nor by "
                                       f"the host: the wait is never satisfied")
            pairs = zip(signal, nodes) if len(signal) == len(nodes) else product(signal, nodes)
            for s, n in pairs:
                s.after.append(n)
                n.until = s.pos if s.kind == "set" else -1
            if last is None or last[0] is None:
                continue
            # The signal operations in the first synchronization scopes: the sets of the queue before the wait with
            # the stages of the memory dependency's set (as _pair_events pairs them).
            scopes = last[2]
            paired = scopes if len(scopes) == len(nodes) else (frozenset().union(*scopes),) * len(nodes)
            for n, stages in zip(nodes, paired):
                for v, first_scopes in self.event_signals.get((n.agent, event), ()):
                    if v.pos < n.pos and stages in first_scopes:
                        v.after.append(n)

    # ---- happens-before ---------------------------------------------------------------------------

    def _chain(self) -> None:
        """The edges between the nodes of one queue (_chains)."""
        for nodes in self.queue_nodes.values():
            for i, a in enumerate(nodes):
                for b in nodes[i + 1:]:
                    if b.pos > a.pos and _chains(a, b):
                        a.after.append(b)

    def _closure(self) -> dict[int, int]:
        """Every node's strict happens-before successors, as a bit set (transitive closure of the edges)."""
        self._ids = {id(n): i for i, n in enumerate(self.nodes)}
        graph = {i: {self._ids[id(b)] for b in n.after} for i, n in enumerate(self.nodes)}
        try:
            TopologicalSorter(self.time).prepare()
            order = list(TopologicalSorter(graph).static_order())  # successors first
        except CycleError as e:
            raise OutsideReference("no schedule completes in this submission order: its calls and waits form a "
                                   "cycle") from e
        reach: dict[int, int] = {}
        for i in order:
            bits = 0
            for j in graph[i]:
                bits |= (1 << j) | reach[j]
            reach[i] = bits
        return reach

    def hb(self, a: Operation, b: Operation) -> bool:
        """Spec 7.1: a happens-before b."""
        return bool(self.reach[self._ids[id(a)]] >> self._ids[id(b)] & 1)

    def event_hb(self, first: str, second: str) -> bool:
        """Whether the event operation (set or reset, device or host) named `first` happens-before the one named
        `second`."""
        named = {op[0].ref: op for ops in self.event_operations.values() for op in ops}
        return first in named and second in named and self._operation_hb(named[first], named[second])

    def hb_or_same(self, a: Operation, b: Operation) -> bool:
        return a is b or self.hb(a, b)

    # ---- memory dependencies ----------------------------------------------------------------------

    def availability(self, w: OperationAccess) -> list[Operation]:
        """The operations that make write w available to the device domain (7.1, 7.9): w happens-before each
        (memory model, "Availability and Visibility"), which a barrier's or a signal's access scope implies and a
        wait's does not: its first synchronization scope is "the operations that happened-before the event signal
        operations" (vkCmdWaitEvents), its access scope any access earlier than the set at its stages. A layout
        transition's write is available as it is made (7.7.4)."""
        if w.stage == LAYOUT_TRANSITION:
            return [w.node]
        if w.host:
            return self._host_availability(w)
        return [n for n in self.queue_nodes[w.node.agent]
                if w.node.pos < n.before and _in_first_access_pairs(n, w, self.by_buffer) and self.hb(w.node, n)]

    def _host_availability(self, w: OperationAccess) -> list[Operation]:
        """Spec 7.9 host write ordering: a submission after the write reached the host domain (at once for
        coherent memory, at a flush of its bytes otherwise, 11.2.2); or a barrier with host/host_write in its
        first access scope that the write happens-before through an earlier wait or submission."""
        reached = self._host_domain_point(w)
        if reached is None:
            return []
        out = []
        for nodes in self.queue_nodes.values():
            for n in nodes:
                submitted = n.kind == "submission" and self.hb(reached, n)
                if submitted or n.kind == "barrier" and ("host", "host_write") in access_pairs(
                        n.barrier.src_stage, n.barrier.src_access) and _covers(n, w, self.by_buffer) and any(
                        m.kind in self.host_barrier_reaches and m.pos < n.before and self.hb(reached, m)
                        for m in nodes):
                    out.append(n)
        return out

    def _host_domain_point(self, w: OperationAccess) -> Operation | None:
        """The host op at which host write w is available to the host domain: the writer's own flush (7.1.3)."""
        if w.memory in _COHERENT:
            return w.node
        for n in self.nodes:
            op = n.op
            if n.agent == w.node.agent and n.kind == "host" and n.pos > w.node.pos and isinstance(op, ir.HostAccess) \
                    and op.op == "flush":
                root, base = self.index.root(op.buffer)
                if root == w.root and base + op.offset <= w.lo and w.hi <= base + op.offset + op.size:
                    return n
        return None

    def visibility(self, x: OperationAccess, needs: tuple[str, ...]) -> list[Operation]:
        """The operations that make available writes visible to x's accesses `needs` (7.1); to a layout
        transition, available memory is visible (7.7.4)."""
        if x.stage == LAYOUT_TRANSITION:
            return [x.node]
        if x.host:
            # 7.9 host access: a barrier whose second access scope holds host/host_read (or host_write).
            return [n for nodes in self.queue_nodes.values() for n in nodes
                    if n.kind == "barrier" and _in_second_access_pairs(n, x, needs, self.by_buffer)
                    and self.hb(n, x.node)]
        return [n for n in self.queue_nodes[x.node.agent]
                if n.pos < x.node.pos and _in_second_access_pairs(n, x, needs, self.by_buffer) and x.stage in n.second]

    def memory_dependency(self, w: OperationAccess, x: OperationAccess, needs: tuple[str, ...]) -> bool:
        """Spec 7.1: an availability operation for w happens-before (or is) a visibility operation for x's
        accesses `needs`; a host read of host_cached memory also needs an invalidate of its bytes after that
        (11.2.2)."""
        if w.host and x.host:
            return self.hb(w.node, x.node) and self._host_threads_share(w, x)
        visible = [m for m in self.visibility(x, needs)
                   if any(self.hb_or_same(n, m) for n in self.availability(w))]
        if not (x.host and x.reads and x.memory == "host_cached"):
            return bool(visible)
        return any(self._invalidated_between(m, x) for m in visible)

    def _host_threads_share(self, w: OperationAccess, x: OperationAccess) -> bool:
        """Memory model "Location-Ordered": another host thread is another agent; under the reading
        host_threads_coherent off, its write to host_cached memory reaches x only through the writer's flush,
        which happens-before x, and for a read x's thread's invalidate after that flush (7.1.3)."""
        if w.node.agent == x.node.agent or self.readings.host_threads_coherent or w.memory != "host_cached":
            return True
        flush = self._host_domain_point(w)
        return flush is not None and self.hb(flush, x.node) and (not x.reads or self._invalidated_between(flush, x))

    def _invalidated_between(self, m: Operation, x: OperationAccess) -> bool:
        """Spec 7.1.3: an invalidate of x's bytes by x's thread, after m and before x."""
        for n in self.nodes:
            op = n.op
            if n.agent == x.node.agent and n.kind == "host" and n.pos < x.node.pos and \
                    isinstance(op, ir.HostAccess) and op.op == "invalidate" and self.hb(m, n):
                root, base = self.index.root(op.buffer)
                if root == x.root and base + op.offset <= x.lo and x.hi <= base + op.offset + op.size:
                    return True
        return False

    # ---- the verdict ------------------------------------------------------------------------------

    def verdict(self) -> Verdict:
        return Verdict(frozenset(self._hazards()), frozenset(self._use_after_destroy()),
                       frozenset(self.fence_misuse) | {r.ref for r, signal in self.resets if not self.hb(signal, r)},
                       frozenset(self._event_races()))

    def _segments(self) -> dict[str, list[int]]:
        cuts: dict[str, set[int]] = {}
        for a in self.accesses:
            cuts.setdefault(a.root, set()).update((a.lo, a.hi))
        for n in self.nodes:
            if n.root is not None:
                cuts.setdefault(n.root, set()).update((n.lo, n.hi))
            if isinstance(n.op, ir.HostAccess):
                root, base = self.index.root(n.op.buffer)
                cuts.setdefault(root, set()).update((base + n.op.offset, base + n.op.offset + n.op.size))
        return {r: sorted(c) for r, c in cuts.items()}

    def conflicts(self):
        """Spec 7.1 note: every pair of accesses to common bytes, at least one a write, per byte segment; the
        first is the one that happens-before the other (either, when neither does)."""
        # A use after its buffer's destroy is use_after_destroy alone: its bytes are no longer the buffer's.
        live = [a for a in self.accesses
                if not any(op.buffer == a.buffer and self.hb(d, a.submit) for d, op in self.destroys)]
        for root, cuts in self._segments().items():
            for lo, hi in pairwise(cuts):
                on = [replace(a, lo=lo, hi=hi) for a in live if a.root == root and a.lo <= lo and hi <= a.hi]
                writes = [a for a in on if a.write]
                for i, one in enumerate(on):
                    for other in on[i + 1:]:
                        if one.uid == other.uid or not (one.write or other.write) or self._atomics(one, other) \
                                or self.transition_order(one, other) or self.transition_order(other, one) \
                                or {(one.node, other.node), (other.node, one.node)} & self.marker_dependencies:
                            continue
                        a, b = (other, one) if self.hb(other.node, one.node) else (one, other)
                        if self.hb(a.node, b.node):
                            kind = self.missing_memory_dependency(a, b) if a.write else None
                            hidden = any((self.hb(a.node, w.node) or self.transition_order(a, w))
                                         and self.hb(w.node, b.node) for w in writes)
                            yield Conflict(a, b, kind is None, hidden, kind or "war")
                        else:
                            yield Conflict(a, b, False, False, "war" if not a.write else "raw" if b.reads else "waw")

    def _atomics(self, a: OperationAccess, b: OperationAccess) -> bool:
        """Memory model "Data Race": mutually-ordered atomic operations (device operations of one another's
        memory scope instance: Device scope, for a shader's atomics) do not race."""
        return a.atomic and b.atomic and self.index.queues[a.node.agent][0] == self.index.queues[b.node.agent][0]

    def transition_order(self, a: OperationAccess, b: OperationAccess) -> bool:
        """7.7.4: a and b are layout transitions of one queue, a's first: they "execute in their entirety in
        submission order, relative to other image layout transitions submitted to the same queue" (and order
        nothing else)."""
        return a.stage == b.stage == LAYOUT_TRANSITION and a.node.agent == b.node.agent and a.uid != b.uid \
            and a.node.pos < b.node.pos

    def missing_memory_dependency(self, a: OperationAccess, b: OperationAccess) -> str | None:
        """Spec 7.1 note: the hazard b's access is to a write a it happens after (None: a memory dependency
        makes a visible). A read_write access is a read and a write (syncval's two usages): each must see a."""
        if b.reads and not self.memory_dependency(a, b, b.reads):
            return "raw"
        if b.write and not self.memory_dependency(a, b, (b.write,)):
            return "waw"
        return None

    def _hazards(self):
        """A conflicting pair is a hazard unless ordered, or a write of its whole segment is ordered between."""
        for c in self.conflicts():
            a, b = c.first, c.second
            if not (c.ordered or c.hidden):
                racing = a.node.agent != b.node.agent and not self.hb(a.node, b.node)
                yield Hazard(c.kind, a.buffer, a.ref, b.ref, racing, a.lo, a.hi)

    def _event_races(self):
        """7.5, note to vkCmdWaitEvents2: "There is no direct ordering guarantee between vkCmdSetEvent2 and
        vkCmdResetEvent2, vkCmdResetEvent, or vkCmdSetEvent. Another execution dependency ... is needed to prevent
        such a race condition": two operations on one event's state (device or host), not both unsignals (a reset
        leaves the same state whichever comes last), neither happening-before the other."""
        for event, ops in self.event_operations.items():
            for i, a in enumerate(ops):
                for b in ops[i + 1:]:
                    if (a[1] or b[1]) and not self._operation_hb(a, b) and not self._operation_hb(b, a):
                        yield event, a[0].ref, b[0].ref

    def _operation_hb(self, a: tuple, b: tuple) -> bool:
        """Event operation a (its operation's node and signal's: Reference.event_operations) happens-before b's."""
        return id(b[0]) in self.operations_after[id(a[0])]

    def _operation_order(self) -> dict[int, set[int]]:
        """Per event operation (its operation node's id), the operations it happens-before. A set's operation node
        and its signal node are one event signal operation, in the second scope of the set's own dependency (7.5
        vkCmdSetEvent2: first scope "the union of all the memory dependencies") and in the first of each wait for
        it: 7.1 chains them ("an execution dependency chain exists if the intersection of ScopedOps2 in ExeDep A
        and ScopedOps1 in ExeDep B is not an empty set"), so the order of operations is closed through each.
        Accesses are read per memory dependency (docs/format.md, Events): no edge joins the two nodes."""
        ops = [op for ops in self.event_operations.values() for op in ops]
        direct = {id(a[0]): [id(b[0]) for b in ops if self.hb(a[0], b[0]) or
                             a[1] is not None and a[1] is not a[0] and self.hb(a[1], b[0])] for a in ops}
        after: dict[int, set[int]] = {}
        for a, successors in direct.items():
            seen, todo = set(), list(successors)
            while todo:
                b = todo.pop()
                if b not in seen:
                    seen.add(b)
                    todo += direct[b]
            after[a] = seen
        return after

    def _use_after_destroy(self):
        """Spec 12.7 vkDestroyBuffer: every submitted use must have completed; no use after it (its submit, or
        host access, happens after the destroy)."""
        for d, op in self.destroys:
            for a in self.accesses:
                if a.buffer != op.buffer:
                    continue
                if self.hb(d, a.submit):
                    yield d.ref, a.ref
                elif not a.host and not self.hb(a.node, d):
                    yield a.ref, d.ref


def references(stream: ir.Stream, readings: Readings = DEFAULT) -> list[Reference]:
    """The stream in each submission order its threads allow (submission_orders), but those no schedule runs."""
    out, outside = [], []
    for order in submission_orders(stream):
        try:
            out.append(Reference(stream, readings, order))
        except OutsideReference as e:
            outside.append(e)
    if not out:
        raise outside[0]
    return out


def joined(refs: list[Reference]) -> Verdict:
    """What the program may do: each hazard, use after destroy and fence misuse of some submission order."""
    verdicts = [r.verdict() for r in refs]
    return Verdict(*(frozenset().union(*(getattr(v, name) for v in verdicts))
                     for name in ("hazards", "use_after_destroy", "fence_misuse", "event_races")))


def verdict(stream: ir.Stream, readings: Readings = DEFAULT) -> Verdict:
    """The reference verdict of a stream (raises OutsideReference for one outside what it reads)."""
    return joined(references(stream, readings))
