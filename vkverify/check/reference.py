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
streams of a few dozen operations. It reads streams whose order is fixed by one host thread (every
queue is fed by that thread, so submission order and semaphore pairing are known without a schedule)
and that complete (no deadlock); `OutsideReference` says when a stream is outside that.

Readings of what the spec leaves open, applied here and in the checker alike (docs/format.md,
"Readings"):
- a barrier's second execution scope meets a later barrier's first scope when the two stage sets
  intersect, also with no command between them (syncval's reading of 7.1's chain definition);
- a fence signal has a barrier whose destination is the host stage in its first scope, a semaphore signal
  only at all_commands or bottom_of_pipe, and only under the reading `all_commands_includes_host` (the default);
- `host` in a barrier's source stage mask puts in its first scope the host operations that happen
  before a semaphore wait or submission earlier on its queue (it holds their writes; an access still
  needs the write to happen-before it, corpus 144);
- a buffer memory barrier covers only accesses through its own buffer (or, under the reading
  `buffer_barrier_covers_aliases`, any access to its bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from graphlib import CycleError, TopologicalSorter
from itertools import count, pairwise

from ..errors import VkverifyError
from ..model import ir
from ..model.accesses import command_accesses
from ..model.stages import ACCESS, COMMAND_STAGES, EXECUTING_STAGES, STAGE
from .readings import DEFAULT, Readings

COHERENT = ("host_coherent", "device_host_visible")


class OutsideReference(VkverifyError):
    """The stream is outside what the reference reads (several threads, a deadlock, params). Seen by
    the tests that compare the checker with the reference, which skip that stream."""


@dataclass(eq=False)
class Operation:
    """One operation on a queue or the host thread. `first`/`second`: the stages of its first and second
    synchronization scopes on its own queue (7.1.2); an access node has its own stage in both."""

    kind: str  # access | barrier | wait | submission | signal | fence | host
    agent: str
    pos: int
    first: frozenset[str] = frozenset()
    second: frozenset[str] = frozenset()
    batch: int = -1  # queue-wide batch number (signal operation order, 7.2)
    ref: str = ""
    barrier: ir.Barrier | ir.BufferBarrier | None = None
    root: str | None = None  # a buffer barrier's memory and range, in root coordinates
    lo: int = 0
    hi: int = 0
    op: ir.HostOp | None = None
    after: list = field(default_factory=list)  # direct happens-before successors


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


# ---- scopes, read from the spec's stage and access tables (model/stages.py), apart from the checker's ------

HOST_STAGE = frozenset({"host"})


def _named(mask: frozenset[str], table: dict) -> frozenset[str]:
    """7.6, 7.7: the bits a mask names, meta bits (transfer, all_commands, shader_read) by those they cover."""
    return frozenset(x for name in mask for x in table[name].covers)


def first_scope(src_stage: frozenset[str]) -> frozenset[str]:
    """7.6.1: a source mask's execution scope, the stages named and those logically earlier, of those
    commands execute at (top_of_pipe alone: none)."""
    named = _named(src_stage, STAGE)
    return frozenset(s for s in EXECUTING_STAGES if any(s == t or s in STAGE[t].earlier for t in named))


def second_scope(dst_stage: frozenset[str]) -> frozenset[str]:
    """7.6.1: a destination mask's execution scope, the stages named and those logically later
    (bottom_of_pipe alone: none)."""
    named = _named(dst_stage, STAGE)
    return frozenset(s for s in EXECUTING_STAGES if any(s == t or t in STAGE[s].earlier for t in named))


def access_pairs(stage: frozenset[str], access: frozenset[str]) -> frozenset[tuple[str, str]]:
    """7.1.2: an access scope holds only the stages its mask names, never earlier or later ones."""
    return frozenset((s, a) for s in _named(stage, STAGE) for a in _named(access, ACCESS))


def signal_scope(stage: frozenset[str], all_commands_includes_host: bool) -> frozenset[str]:
    """7.4.1: a semaphore signal's first scope by its stage mask; with every command stage, the host stage too
    under the reading all_commands_includes_host (check/readings.py)."""
    scope = first_scope(stage)
    return scope | HOST_STAGE if all_commands_includes_host and scope >= COMMAND_STAGES else scope


# ---- the rules, one function each ------------------------------------------------------------------

def chains(a: Operation, b: Operation) -> bool:
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


def in_first_access_pairs(n: Operation, w: OperationAccess, by_buffer: bool) -> bool:
    """Spec 7.1.2 access scopes: does n make w available (w earlier than n on n's queue)?"""
    if n.kind == "barrier":
        b = n.barrier
        return (w.stage, w.write) in access_pairs(b.src_stage, b.src_access) and _covers(n, w, by_buffer)
    # 7.4.1 / 7.3.1: a semaphore or fence signal's first access scope is all device access.
    return n.kind in ("signal", "fence") and w.stage in n.first


def in_second_access_pairs(n: Operation, x: OperationAccess, needs: tuple[str, ...], by_buffer: bool) -> bool:
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
    return n.root is None or (n.root == x.root and n.lo <= x.lo and x.hi <= n.hi
                              and (not by_buffer or n.barrier.buffer == x.buffer))


# ---- building the operations ------------------------------------------------------------------------

class Reference:
    def __init__(self, stream: ir.Stream, readings: Readings = DEFAULT) -> None:
        if stream.params or len(stream.threads) != 1:
            raise OutsideReference("the reference reads streams of one host thread without params")
        self.stream = stream
        self.readings = readings
        self.by_buffer = not readings.buffer_barrier_covers_aliases
        self.index = stream.index
        self.thread = stream.threads[0]
        self.nodes: list[Operation] = []
        self.queue_nodes: dict[str, list[Operation]] = {q: [] for q in self.index.queues}
        self.accesses: list[OperationAccess] = []
        self.uids = count()
        self.batches = count()
        self.fence_misuse: set[str] = set()
        self.destroys: list[tuple[Operation, ir.Destroy]] = []
        self.resets: list[tuple[Operation, Operation]] = []  # (reset, the fence signal it may not precede)
        self._build()
        self.reach = self._closure()

    def _node(self, kind: str, agent: str, **kw) -> Operation:
        pos = len(self.queue_nodes[agent]) if agent in self.queue_nodes else len(self.nodes)
        n = Operation(kind, agent, pos, **kw)
        self.nodes.append(n)
        if agent in self.queue_nodes:
            self.queue_nodes[agent].append(n)
        return n

    def _access(self, node: Operation, submit: Operation, uid: int, ref: str, stage: str, reads, write, buffer: str,
                lo: int, hi: int) -> None:
        root, base = self.index.root(buffer)
        memory = self.index.buffers[root].memory
        self.accesses.append(OperationAccess(node, uid, ref, stage, tuple(reads), write, buffer, root, base + lo,
                                    base + hi, memory, submit))

    def _build(self) -> None:
        t = self.thread
        fences = {f.id: ("signaled" if f.signaled else "unsignaled", None) for f in self.stream.fences}
        binary: dict[str, list[Operation]] = {s.id: [] for s in self.stream.semaphores if s.type == "binary"}
        timeline: dict[str, list[tuple[int, Operation]]] = {s.id: [] for s in self.stream.semaphores
                                                       if s.type == "timeline"}
        pending_waits: list[tuple[Operation, str, int]] = []  # queue waits for host signals not yet made
        last_host: Operation | None = None
        for pc, op in enumerate(t.ops):
            ref = f"{t.id}[{pc}]"
            h = self._node("host", t.id, ref=ref, op=op)
            if last_host is not None:
                last_host.after.append(h)  # host program order
            last_host = h
            if isinstance(op, ir.Submit):
                self._submit(h, op, ref, fences, binary, timeline, pending_waits)
            elif isinstance(op, ir.WaitFences):
                for f in op.fences:
                    state, signal = fences[f]
                    if state == "unsignaled":
                        raise OutsideReference(f"{ref} waits for a fence nothing signals")
                    if signal is not None:
                        signal.after.append(h)
            elif isinstance(op, ir.ResetFences):
                for f in op.fences:
                    if fences[f][0] == "pending":
                        self.resets.append((h, fences[f][1]))
                    fences[f] = ("unsignaled", None)
            elif isinstance(op, ir.WaitSemaphores):
                for w in op.waits:
                    source = self._timeline_source(timeline, w.semaphore, w.value)
                    if source is not None:
                        source.after.append(h)
                    elif w.value > self.index.semaphores[w.semaphore].initial:
                        raise OutsideReference(f"{ref} waits for a value nothing signalled yet")
            elif isinstance(op, ir.SignalSemaphore):
                self._signal_timeline(timeline, pending_waits, op.semaphore, op.value, h)
            elif isinstance(op, ir.HostAccess):
                if op.op in ("host_write", "host_read"):
                    write = op.op == "host_write"
                    self._access(h, h, next(self.uids), ref, "host", () if write else ("host_read",),
                                 "host_write" if write else None, op.buffer, op.offset, op.offset + op.size)
            elif isinstance(op, (ir.QueueWaitIdle, ir.DeviceWaitIdle)):
                queues = [op.queue] if isinstance(op, ir.QueueWaitIdle) else \
                    [q for q, (d, _) in self.index.queues.items() if d == op.device]
                for q in queues:
                    # Spec 5.3.4 vkQueueWaitIdle: a fence submitted after every earlier submission, waited.
                    self._fence_node(q, f"{ref}:idle {q}").after.append(h)
            elif isinstance(op, ir.Destroy):
                self.destroys.append((h, op))
        if pending_waits:
            raise OutsideReference("a queue waits for a host signal that never comes")

    def _fence_node(self, queue: str, ref: str) -> Operation:
        return self._node("fence", queue, first=COMMAND_STAGES | HOST_STAGE, batch=next(self.batches), ref=ref)

    @staticmethod
    def _signal_timeline(timeline, pending_waits, semaphore: str, value: int, node: Operation) -> None:
        """Spec 7.4.2: a queue wait submitted before its signal is satisfied by the first signal >= its value."""
        timeline[semaphore].append((value, node))
        for wait in [p for p in pending_waits if p[1] == semaphore and p[2] <= value]:
            node.after.append(wait[0])
            pending_waits.remove(wait)

    def _timeline_source(self, timeline, semaphore: str, value: int) -> Operation | None:
        """Spec 7.4.2: a wait for `value` is satisfied by a signal >= value; with one signalling agent the
        first such signal happens-before every other, so ordering after it is what every choice gives."""
        if value <= self.index.semaphores[semaphore].initial:
            return None
        for v, node in timeline[semaphore]:
            if v >= value:
                return node
        return None

    def _submit(self, h: Operation, op: ir.Submit, ref: str, fences, binary, timeline, pending_waits) -> None:
        q = op.queue
        if op.fence is not None and fences[op.fence][0] != "unsignaled":
            self.fence_misuse.add(ref)  # VUID-vkQueueSubmit2-fence-04894: unsignaled, not pending
        # 7.9 host write ordering: the submission orders earlier host operations before its commands.
        sub = self._node("submission", q, second=COMMAND_STAGES, ref=ref)
        h.after.append(sub)
        batches = op.batches or (ir.Batch(),)
        for bi, batch in enumerate(batches):
            number = next(self.batches)
            for w in batch.waits:
                node = self._node("wait", q, second=second_scope(w.stage), ref=ref, batch=number)
                if w.semaphore in binary:
                    if not binary[w.semaphore]:
                        raise OutsideReference(f"{ref} waits on binary {w.semaphore!r} with no pending signal")
                    binary[w.semaphore].pop(0).after.append(node)
                else:
                    source = self._timeline_source(timeline, w.semaphore, w.value)
                    if source is not None:
                        source.after.append(node)
                    elif w.value > self.index.semaphores[w.semaphore].initial:
                        pending_waits.append((node, w.semaphore, w.value))
            for cb in batch.command_buffers:
                for i, cmd in enumerate(self.index.command_buffers[cb].commands):
                    cref = self.index.command_ref(cb, i, ref)
                    if isinstance(cmd, ir.Barrier):
                        self._barrier(q, cmd, cref)
                        continue
                    uid = next(self.uids)
                    for stage, reads, write, buffer, lo, hi in command_accesses(cmd):
                        n = self._node("access", q, first=frozenset({stage}), second=frozenset({stage}), ref=cref)
                        self._access(n, h, uid, cref, stage, reads, write, buffer, lo, hi)
            for s in batch.signals:
                n = self._node("signal", q, first=signal_scope(s.stage, self.readings.all_commands_includes_host),
                               batch=number, ref=ref)
                if s.semaphore in binary:
                    binary[s.semaphore].append(n)
                else:
                    self._signal_timeline(timeline, pending_waits, s.semaphore, s.value, n)
        if op.fence is not None:
            fences[op.fence] = ("pending", self._fence_node(q, ref))

    def _barrier(self, q: str, cmd: ir.Barrier, ref: str) -> None:
        """Spec 7.6 vkCmdPipelineBarrier2: one node per memory barrier; they share a position, so the
        barriers of one command do not chain with each other."""
        entries = cmd.buffers or (cmd,)
        pos = len(self.queue_nodes[q])
        for b in entries:
            root, lo, hi = None, 0, 0
            if isinstance(b, ir.BufferBarrier):
                root, base = self.index.root(b.buffer)
                lo, hi = base + b.offset, base + b.offset + b.size
            first = first_scope(b.src_stage)
            if "host" in _named(b.src_stage, STAGE):
                first = first | HOST_STAGE
            n = Operation("barrier", q, pos, first, second_scope(b.dst_stage), ref=ref, barrier=b,
                     root=root, lo=lo, hi=hi)
            self.nodes.append(n)
            self.queue_nodes[q].append(n)

    # ---- happens-before ---------------------------------------------------------------------------

    def _closure(self) -> dict[int, int]:
        """Every node's strict happens-before successors, as a bit set (transitive closure of the edges)."""
        for nodes in self.queue_nodes.values():
            for i, a in enumerate(nodes):
                for b in nodes[i + 1:]:
                    if b.pos > a.pos and chains(a, b):
                        a.after.append(b)
        self._ids = {id(n): i for i, n in enumerate(self.nodes)}
        graph = {i: {self._ids[id(b)] for b in n.after} for i, n in enumerate(self.nodes)}
        try:
            order = list(TopologicalSorter(graph).static_order())  # successors first
        except CycleError as e:
            raise OutsideReference("the stream's waits form a cycle") from e
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

    def hb_or_same(self, a: Operation, b: Operation) -> bool:
        return a is b or self.hb(a, b)

    # ---- memory dependencies ----------------------------------------------------------------------

    def availability(self, w: OperationAccess) -> list[Operation]:
        """The operations that make write w available to the device domain (7.1, 7.9)."""
        if w.host:
            return self._host_availability(w)
        return [n for n in self.queue_nodes[w.node.agent]
                if n.pos > w.node.pos and in_first_access_pairs(n, w, self.by_buffer)]

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
                        m.kind in ("wait", "submission") and m.pos < n.pos and self.hb(reached, m) for m in nodes):
                    out.append(n)
        return out

    def _host_domain_point(self, w: OperationAccess) -> Operation | None:
        """The host op at which host write w is available to the host domain."""
        if w.memory in COHERENT:
            return w.node
        for n in self.nodes:
            op = n.op
            if n.kind == "host" and n.pos > w.node.pos and isinstance(op, ir.HostAccess) and op.op == "flush":
                root, base = self.index.root(op.buffer)
                if root == w.root and base + op.offset <= w.lo and w.hi <= base + op.offset + op.size:
                    return n
        return None

    def visibility(self, x: OperationAccess, needs: tuple[str, ...]) -> list[Operation]:
        """The operations that make available writes visible to x's accesses `needs` (7.1)."""
        if x.host:
            # 7.9 host access: a barrier whose second access scope holds host/host_read (or host_write).
            return [n for nodes in self.queue_nodes.values() for n in nodes
                    if n.kind == "barrier" and in_second_access_pairs(n, x, needs, self.by_buffer)
                    and self.hb(n, x.node)]
        return [n for n in self.queue_nodes[x.node.agent]
                if n.pos < x.node.pos and in_second_access_pairs(n, x, needs, self.by_buffer) and x.stage in n.second]

    def memory_dependency(self, w: OperationAccess, x: OperationAccess, needs: tuple[str, ...]) -> bool:
        """Spec 7.1: an availability operation for w happens-before (or is) a visibility operation for x's
        accesses `needs`; a host read of host_cached memory also needs an invalidate of its bytes after that
        (11.2.2)."""
        if w.host and x.host:
            return self.hb(w.node, x.node)
        visible = [m for m in self.visibility(x, needs)
                   if any(self.hb_or_same(n, m) for n in self.availability(w))]
        if not (x.host and x.reads and x.memory == "host_cached"):
            return bool(visible)
        return any(self._invalidated_between(m, x) for m in visible)

    def _invalidated_between(self, m: Operation, x: OperationAccess) -> bool:
        for n in self.nodes:
            op = n.op
            if n.kind == "host" and n.pos < x.node.pos and isinstance(op, ir.HostAccess) and \
                    op.op == "invalidate" and self.hb(m, n):
                root, base = self.index.root(op.buffer)
                if root == x.root and base + op.offset <= x.lo and x.hi <= base + op.offset + op.size:
                    return True
        return False

    # ---- the verdict ------------------------------------------------------------------------------

    def verdict(self) -> Verdict:
        return Verdict(frozenset(self._hazards()), frozenset(self._use_after_destroy()),
                       frozenset(self.fence_misuse) | {r.ref for r, signal in self.resets if not self.hb(signal, r)})

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
                if not any(op.buffer == a.buffer and a.submit.pos > d.pos for d, op in self.destroys)]
        for root, cuts in self._segments().items():
            for lo, hi in pairwise(cuts):
                on = [replace(a, lo=lo, hi=hi) for a in live if a.root == root and a.lo <= lo and hi <= a.hi]
                writes = [a for a in on if a.write]
                for i, one in enumerate(on):
                    for other in on[i + 1:]:
                        if one.uid == other.uid or not (one.write or other.write):
                            continue
                        a, b = (other, one) if self.hb(other.node, one.node) else (one, other)
                        if self.hb(a.node, b.node):
                            kind = self.missing_memory_dependency(a, b) if a.write else None
                            hidden = any(self.hb(a.node, w.node) and self.hb(w.node, b.node) for w in writes)
                            yield Conflict(a, b, kind is None, hidden, kind or "war")
                        else:
                            yield Conflict(a, b, False, False, "war" if not a.write else "raw" if b.reads else "waw")

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

    def _use_after_destroy(self):
        """Spec 12.7 vkDestroyBuffer: every submitted use must have completed; no use after it."""
        for d, op in self.destroys:
            for a in self.accesses:
                if a.buffer != op.buffer:
                    continue
                if a.submit.pos > d.pos:
                    yield d.ref, a.ref
                elif not a.host and not self.hb(a.node, d):
                    yield a.ref, d.ref


def verdict(stream: ir.Stream, readings: Readings = DEFAULT) -> Verdict:
    """The reference verdict of a one-thread stream (raises OutsideReference otherwise)."""
    return Reference(stream, readings).verdict()
