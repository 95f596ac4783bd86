"""A happens-before graph of one stream, built independently of the checker's vector clocks.

The checker answers "is this pair ordered?" with clocks; mutation testing needs "through which
synchronization operations?", which clocks forget. This model keeps the answer as paths: nodes
are the stream's synchronization operations (barrier entries, semaphore waits and signals, fence
and idle releases, submissions, host ops), and a pair of accesses is ordered when a path joins
them under the spec's scope rules (docs/format.md, rules 2-8):

- on a queue, a node that orders later work at some stages (a barrier's destination scope, a
  semaphore wait's stage mask, a submission's full scope) reaches a later node whose source
  scope meets those stages (rule 4's chain, rule 6's signal scope);
- a signal reaches the waits it satisfies, a fence or idle release the host wait that observes
  it, a host op every later op of its thread, a submit its batches.

Memory dependencies (RAW, WAW) need more than a path: the write must be made available and then
visible to the reader. That is a small token carried along the path (available, visible to the
host, invalidated, visible to the second access), updated by `barriers.apply_barrier` at each
barrier entry, so each node of the product graph is (operation, token).

The model consumes the checker's legal order (walk.Walk: host threads in program order, queues
drained after every host op) only to know which signal each wait observes and which accesses are
compared (the most recent write and the reads since, one per agent and stage, as syncval and the
checker do). Streams mutated are small, so every query is a plain graph search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import NamedTuple

import networkx as nx

from ..model import ir
from ..model.refs import format_ref, parse_ref
from .barriers import (EMPTY, EVENT_OPERATION, FULL, BarrierEntry, State, apply_barrier, barrier_steps, coverage,
                       in_transition_order, sees)
from ..model.accesses import command_accesses
from .agents import FENCE_SCOPE
from .events import EventStates, dependencies, event_entries, event_stage, operation_scope, through_event
from .readings import DEFAULT, Readings
from .rules import (atomic_pair, chains, host_write_needs_flush, in_release_access_scope, in_synchronization_scope,
                    makes_host_writes_available, marker_writes_ordered)
from .scopes import ALL_DEVICE, EARLIER_EVENT_OPERATIONS, second_execution_scope, signal_first_scope
from .walk import Consumer, Misuse, PendingBatch, Walk, several_orders

__all__ = ["SINK", "AccessNode", "Model", "Pair", "SyncNode", "conflicts", "signal_order"]

HOST_READ = ("host", "host_read")
# Either in a destination: the domain operation to the host.
HOST_ACCESS = frozenset({HOST_READ, ("host", "host_write")})


@dataclass(frozen=True)
class SyncNode:
    """A synchronization operation on a queue or a host thread.

    `ins`: the stages of earlier work on its queue it orders (a release's or barrier's first
    scope); `outs`: the stages of later work it orders (a wait's or barrier's second scope).
    `ops`: the stream operations a mutation would remove with it (empty: not mutable). `entry`, `written`: a
    barrier's (or an event's set or wait, check/events.py) entry, and its masks as written.
    """

    key: tuple
    kind: str  # bar | wait | sub | rel | host
    agent: str
    seq: int
    ins: frozenset[str] = frozenset()
    outs: frozenset[str] = frozenset()
    entry: BarrierEntry | None = None
    ops: tuple[str, ...] = ()
    op: ir.HostOp | None = None  # host nodes: the op
    written: ir.Barrier | ir.BufferBarrier | None = None  # bar nodes: the memory barrier as the stream writes it


@dataclass(eq=False)
class AccessNode:
    ref: str
    agent: str
    seq: int
    stage: str
    reads: tuple[str, ...]
    write: str | None
    buffer: str
    root: str
    lo: int  # root-memory coordinates
    hi: int
    uid: int
    host: bool
    memory: str
    atomic: bool = False
    marker: frozenset[str] | None = None  # a buffer marker write's named stages (rules.marker_writes_ordered)


@dataclass(eq=False)
class Pair:
    """Two conflicting accesses the checker compares: `kind` raw | war | waw | keepalive."""

    kind: str
    first: AccessNode
    second: AccessNode
    memory: bool  # needs a memory dependency, not only an execution dependency
    need: tuple[str, ...]  # accesses of `second` the write must be visible to (device second)
    segments: list[tuple[int, int]] = field(default_factory=list)
    # Per segment, the atomics recorded there before `second` that may hide `first` (Model._drop_hidden).
    hiders: dict[tuple[int, int], list[AccessNode]] = field(default_factory=dict)


class Token(NamedTuple):
    available: bool = False  # available to the device domain
    host_written: bool = False  # a host write available to the host domain only (coherent, or flushed)
    host_visible: bool = False  # visible to host/host_read
    invalidated: bool = False
    host_domain: bool = False  # available to the host domain (a destination with host_read or host_write)
    visible: bool = False  # visible to the pair's second access (set at the barrier that does it)


EXEC = Token()  # execution-only pairs carry one constant token
SINK = (("second access",), EXEC)  # the product node standing for the pair's second access


class Model(Consumer):
    """The stream's synchronization nodes, cross-agent edges, compared pairs and blocked waits."""

    def __init__(self, stream: ir.Stream, readings: Readings = DEFAULT,
                 order: ir.SubmissionOrder | None = None) -> None:
        """`order`: the submission order to run (walk.several_orders; None: the walk's own)."""
        self.stream = stream
        self.readings = readings
        self.order = order
        # The nodes before a barrier with host in its source stages through which it holds host ops (readings).
        self.host_barrier_reaches = ("wait", "sub") if readings.host_barrier_after_wait else ("sub",)
        self.index = stream.index
        self.nodes: dict[tuple, SyncNode] = {}
        self.on_agent: dict[str, list[SyncNode]] = {}
        self.cross: dict[tuple, list[tuple]] = {}
        self.pairs: dict[tuple, Pair] = {}
        self.accesses: dict[str, list[AccessNode]] = {}  # by reference: what `vkverify explain` pairs up
        # by reference, each set's and reset's event operation: (event, as the first of two, as the second)
        self.event_operations: dict[str, tuple[str, list[AccessNode], AccessNode]] = {}
        self.hazards: set[tuple] = set()
        self._seq: dict[str, int] = {}
        self._uid = 0
        self._cuts = _boundaries(stream)
        self._last_write: dict[tuple, AccessNode] = {}
        # The atomics since the last write, but those a later one of their agent and stage stands for (nothing
        # ordering between them: _alike), as Segment.add_atomic keeps them (_drop_hidden drops the hidden).
        self._atomics: dict[tuple, list] = {}
        self._ordering_at: dict[str, float] = {}  # agent -> the position of its last barrier or release
        self._reads: dict[tuple, dict[tuple, AccessNode]] = {}
        self._destroyed: dict[str, str] = {}
        self.events = EventStates()
        self._issuing = ""  # the host op of the access being compared: its submit, or itself
        self._uses: dict[str, dict] | None = {} if any(
            isinstance(op, ir.Destroy) for t in stream.threads for op in t.ops) else None
        # With several host threads whose submission orders are not each read (walk.several_orders), an idle wait
        # covers only the batches whose submit happens-before it (5.3.4; docs/format.md, Several host threads): per
        # queue, each batch's submit and the position its end takes.
        self._batch_ends: dict[str, list[tuple[str, int]]] | None = \
            {} if len(stream.threads) > 1 and not several_orders(stream) else None
        self._run()

    # ---- building ----------------------------------------------------------

    def _next(self, agent: str) -> int:
        self._seq[agent] = self._seq.get(agent, 0) + 1
        return self._seq[agent]

    def _add(self, key: tuple, kind: str, agent: str, seq: float | None = None, **kw) -> SyncNode:
        """A node at `seq` on its agent (default: after every node there so far)."""
        node = SyncNode(key, kind, agent, self._next(agent) if seq is None else seq, **kw)
        if kind == "rel":
            self._ordering_at[agent] = max(node.seq, self._ordering_at.get(agent, 0))
        self.nodes[key] = node
        self.on_agent.setdefault(agent, []).append(node)
        return node

    def _edge(self, a: tuple, b: tuple) -> None:
        self.cross.setdefault(a, []).append(b)

    def _run(self) -> None:
        walk = Walk(self.stream, self, order=self.order)
        walk.run()
        self.hazards.update(("blocked", ref) for ref in walk.blocked())
        self._drop_hidden()

    def _drop_hidden(self) -> None:
        """Leave out the segments of a pair where an atomic executes after its first access (7.1, execution
        dependencies) and either before its second (AccessState.hidden_by_atomics: an atomic hides what it came
        after, as the most recent write hides older ones) or, the first being an atomic too, at all (the later
        atomic stands for it, Segment.add_atomic). Decided once the graph is whole, after the walk."""
        memo: dict[tuple, bool] = {}  # resubmissions pair one write with many hiders, and one hider with many

        def executes_before(e: AccessNode, x: AccessNode, seg: tuple[int, int]) -> bool:
            key = (id(e), id(x), seg)  # not uids: the accesses of one command share theirs
            if key not in memo:
                memo[key] = SINK in self.graph(Pair("order", e, x, False, ()), seg)
            return memo[key]

        for key, pair in list(self.pairs.items()):
            pair.segments = [seg for seg in pair.segments if not any(
                executes_before(pair.first, h, seg) and (pair.first.atomic or executes_before(h, pair.second, seg))
                for h in pair.hiders.get(seg, ()))]
            if not pair.segments:
                del self.pairs[key]

    # ---- the walk's consumer: a release is the key of its node -----------------

    def misuse(self, m: Misuse) -> None:
        self.hazards.add((m.kind, *m.ops))

    def _host(self, thread: int, pc: int, op: ir.HostOp, ops: tuple[str, ...] | None = None) -> SyncNode:
        thread_id = self.stream.threads[thread].id
        ref = format_ref(thread_id, pc)
        return self._add(("host", ref), "host", thread_id, ops=(ref,) if ops is None else ops, op=op)

    def submit(self, thread: int, pc: int, op: ir.Submit) -> None:
        self._host(thread, pc, op, ops=())

    def batch(self, queue: str, p: PendingBatch, acquired: list) -> tuple[list, tuple | None]:
        submit, bi, batch = p.submit, p.index, p.batch
        self._edge(("host", submit), self._add(("sub", submit, bi), "sub", queue, outs=ALL_DEVICE).key)
        for wi, (w, source) in enumerate(zip(batch.waits, acquired)):
            node = self._add(("wait", submit, bi, wi), "wait", queue, outs=second_execution_scope(w.stage),
                             ops=(f"{submit}.batches[{bi}].wait[{wi}]",))
            if source is not None:
                self._edge(source, node.key)
        for cb in batch.command_buffers:
            for owner, i, cmd in self.index.commands_of(cb):
                ref, executed = format_ref(owner, i), self.index.command_ref(owner, i, submit)
                self._issuing = submit
                if not isinstance(cmd, ir.SYNC_COMMANDS):
                    self._command_accesses(queue, executed, command_accesses(cmd))
                    continue
                if isinstance(cmd, ir.Barrier):
                    steps = barrier_steps(cmd, self.index, self.index.queues[queue][1].family)
                else:
                    steps, unsatisfied = event_entries(self.events, queue, cmd, self.index)
                    if unsatisfied:
                        self.hazards.add(("wait_never_satisfied", executed))
                buffers = len(cmd.buffers) if isinstance(cmd, ir.Barrier) else 0
                self._barrier_nodes(queue, executed, [
                    ((ref, f"{ref}.buffers[{k}]") if buffers > 1 and k < buffers else (ref,), e, steps.written[k])
                    for k, e in enumerate(steps.entries)])
                if steps.transitions:  # barriers.layout_transitions: between the dependencies' two halves
                    self._command_accesses(queue, executed, steps.transitions)
                    self._barrier_nodes(queue, executed, [((ref,), e, ib) for e, ib in zip(steps.after,
                                                                                           steps.after_written)],
                                        len(steps.entries))
                if isinstance(cmd, (ir.SetEvent, ir.ResetEvent)):
                    self._event_operation(queue, executed, cmd, len(steps.entries))
        scope = self.readings.all_commands_includes_host
        releases = [self._add(("sig", submit, bi, si), "rel", queue, ins=signal_first_scope(sig.stage, scope),
                              ops=(f"{submit}.batches[{bi}].signal[{si}]",)).key
                    for si, sig in enumerate(batch.signals)]
        fence = self._add(("fence", submit), "rel", queue, ins=FENCE_SCOPE).key if p.fence is not None else None
        if self._batch_ends is not None:
            self._batch_ends.setdefault(queue, []).append((submit, self._seq.get(queue, 0)))
        return releases, fence

    def _barrier_nodes(self, queue: str, executed: str, entries: list[tuple], first: int = 0) -> None:
        """A barrier's entries (ops, entry, memory barrier as written) as `bar` nodes at one position: the entries of
        one barrier do not chain with each other."""
        if not entries:
            return
        seq = self._ordering_at[queue] = self._next(queue)
        for k, (ops, entry, written) in enumerate(entries, first):
            node = SyncNode(("bar", executed, k), "bar", queue, seq, entry.src_exec, entry.dst_exec, entry, ops,
                            written=written)
            self.nodes[node.key] = node
            self.on_agent.setdefault(queue, []).append(node)

    def _event_operation(self, queue: str, executed: str, cmd: ir.SetEvent | ir.ResetEvent, k: int) -> None:
        """A set's or reset's event operation (check/events.py), for `vkverify explain` of two of them: a `bar` node
        from its first synchronization scope (events.operation_scope) to a stage of its own, which nothing else
        names, then the operation: as a first operation, at the stages an earlier operation is held by
        (scopes.EARLIER_EVENT_OPERATIONS; a set's event stages, which its waits hold); as a second, at that stage.
        Neither is a memory access: they are paired with nothing."""
        stage = f"{EVENT_OPERATION} {executed}"
        entry = BarrierEntry("", None, 0, 0, operation_scope(cmd), frozenset(), frozenset(), frozenset({stage}),
                             frozenset())
        self._barrier_nodes(queue, executed, [((), entry, ir.Barrier(cmd.stage, frozenset(), frozenset(),
                                                                     frozenset()))], k)
        kind = "set_event" if isinstance(cmd, ir.SetEvent) else "reset_event"
        stages = [EARLIER_EVENT_OPERATIONS] + ([event_stage(cmd.event, s) for s in set(cmd.first_scopes)]
                                               if kind == "set_event" else [])
        self._operation(cmd.event, executed, queue, self._next(queue), kind, stages, stage, False)

    def _operation(self, event: str, ref: str, agent: str, seq: int, kind: str, stages: list[str], second: str,
                   host: bool) -> None:
        node = partial(AccessNode, ref, agent, seq, reads=(kind,), write=None, buffer=event, root="", lo=0, hi=1,
                       host=host, memory="")
        self.event_operations[ref] = (event, [node(stage=s, uid=self._new_uid()) for s in stages],
                                      node(stage=second, uid=self._new_uid()))

    def _command_accesses(self, queue: str, executed: str, accesses) -> None:
        """A command's accesses at one position: as the checker does, every one is paired before any is recorded."""
        seq, uid = self._next(queue), self._new_uid()
        nodes = [AccessNode(executed, queue, seq, stage, reads, write, buffer, *self._root(buffer, lo, hi), uid, False,
                            self._memory(buffer), atomic, marker)
                 for stage, reads, write, buffer, lo, hi, atomic, marker in accesses]
        for x in [x for x in nodes if self._compare(x)]:
            self._record(x)

    def host_wait(self, thread: int, pc: int, op: ir.HostOp, acquired: list) -> None:
        node = self._host(thread, pc, op)
        for source in acquired:
            if source is not None:
                self._edge(source, node.key)

    def wait_idle(self, thread: int, pc: int, op: ir.HostOp, queues: list[str]) -> None:
        node = self._host(thread, pc, op)
        for q in queues:
            key = ("idle", node.key[1], q)
            if self._batch_ends is None:
                self._edge(self._add(key, "rel", q, ins=FENCE_SCOPE, ops=node.ops).key, node.key)
                continue
            # The release stands right after the last batch whose submit happens-before the wait: later ones of
            # other threads (their submits unordered with it) stay outside its scope.
            end = next((at for submit, at in reversed(self._batch_ends.get(q, []))
                        if self._host_before(submit, node)), None)
            if end is not None:
                self._edge(self._add(key, "rel", q, end + 0.5, ins=FENCE_SCOPE, ops=node.ops).key, node.key)

    def _host_before(self, submit: str, node: SyncNode) -> bool:
        """Whether the host op `submit` happens-before the host node `node` (program order, or a path of
        synchronizations built so far: execution dependencies only)."""
        before = self.nodes[("host", submit)]
        if before.agent == node.agent:
            return before.seq < node.seq
        probe = partial(AccessNode, stage="host", reads=(), write=None, buffer="", root="", lo=0, hi=1, uid=-1,
                        host=True, memory="")
        pair = Pair("order", probe(submit, before.agent, before.seq - 0.5), probe(node.key[1], node.agent, node.seq),
                    False, ())
        return SINK in self.graph(pair, (0, 1))

    def signal_semaphore(self, thread: int, pc: int, op: ir.SignalSemaphore) -> tuple:
        return self._host(thread, pc, op).key

    def host_op(self, thread: int, pc: int, op: ir.HostOp) -> None:
        if isinstance(op, ir.HostAccess) and op.op in ("flush", "invalidate"):
            self._host(thread, pc, op)
            return
        if isinstance(op, (ir.HostSetEvent, ir.HostResetEvent)):
            self.events.host(op)
            thread_id = self.stream.threads[thread].id
            self._operation(op.event, format_ref(thread_id, pc), thread_id, self._next(thread_id),
                            "set_event" if isinstance(op, ir.HostSetEvent) else "reset_event", ["host"], "host", True)
            return
        thread_id = self.stream.threads[thread].id
        ref = format_ref(thread_id, pc)
        if isinstance(op, ir.Destroy):
            self._destroy(thread_id, ref, op)
            return
        write = op.op == "host_write"
        self._issuing = ref
        x = AccessNode(ref, thread_id, self._next(thread_id), "host", () if write else ("host_read",),
                   "host_write" if write else None, op.buffer,
                   *self._root(op.buffer, op.offset, op.offset + op.size), self._new_uid(), True,
                   self._memory(op.buffer))
        if self._compare(x):
            self._record(x)

    # ---- accesses and pairs --------------------------------------------------

    def _new_uid(self) -> int:
        self._uid += 1
        return self._uid

    def _root(self, buffer: str, lo: int, hi: int) -> tuple[str, int, int]:
        root, base = self.index.root(buffer)
        return root, base + lo, base + hi

    def _memory(self, buffer: str) -> str:
        return self.index.buffers[self.index.root(buffer)[0]].memory

    def segments(self, root: str, lo: int, hi: int) -> list[tuple[int, int]]:
        cuts = self._cuts[root]
        return [(a, b) for a, b in pairwise(cuts) if a >= lo and b <= hi]

    def _pair(self, kind: str, e: AccessNode, x: AccessNode, seg: tuple[int, int], memory: bool,
              need: tuple[str, ...] = (), hiders: list[AccessNode] | None = None) -> None:
        # One pair per (stage, access) of each side: a dispatch_indirect reads one buffer at two stages.
        pair = self.pairs.setdefault((kind, e.ref, x.ref, x.buffer, e.stage, x.stage, need),
                                     Pair(kind, e, x, memory, need))
        pair.segments.append(seg)
        if hiders:
            pair.hiders.setdefault(seg, []).extend(h for h in hiders if h is not e)

    def _compare(self, x: AccessNode) -> bool:
        """Pair x with the most recent write and, if it writes, the reads since (as the checker does); False
        when x comes after its buffer's destroy and so is not recorded."""
        self.accesses.setdefault(x.ref, []).append(x)
        destroyed = self._destroyed.get(x.buffer)
        if destroyed is not None:
            if _after(self._issuing, destroyed):
                self.hazards.add(("use_after_destroy", destroyed, x.ref))
                return False
            self.hazards.add(("use_after_destroy", x.ref, destroyed))  # submitted before, pending at it
        if not x.host and self._uses is not None:
            self._uses.setdefault(x.buffer, {})[(x.agent, x.stage)] = x
        for seg in self.segments(x.root, x.lo, x.hi):
            key = (x.root, seg)
            last = self._last_write.get(key)
            atomics = [a for a in self._atomics.get(key, ()) if a.uid != x.uid]
            for w in ([last] if last is not None else []) + atomics:
                if w.uid == x.uid or self.mutually_ordered(w, x):
                    continue
                for kind, memory, need in conflicts(w, x, self.readings):
                    if kind != "war":
                        self._pair(kind, w, x, seg, memory, need, atomics)
            if x.write:
                for r in self._reads.get(key, {}).values():
                    if r.uid != x.uid:
                        self._pair("war", r, x, seg, False, (), atomics)
        return True

    def _alike(self, e: AccessNode, x: AccessNode) -> bool:
        """AccessState.alike: e and the newest access x of one queue and stage, no barrier or release between."""
        return e.agent == x.agent and e.stage == x.stage and not e.host and self._ordering_at.get(e.agent, 0) < e.seq

    def mutually_ordered(self, e: AccessNode, x: AccessNode) -> bool:
        """Memory model "Data Race": atomics of one device do not race (rules.atomic_pair); nor do two layout
        transitions of one queue (rules.transitions_in_order), nor an earlier marker write e and a later one x its
        implicit dependency orders (rules.marker_writes_ordered)."""
        if in_transition_order(e, x) or \
                marker_writes_ordered(e.marker, x.marker, e.agent == x.agent and e.seq < x.seq):
            return True
        return e.atomic and x.atomic and atomic_pair(True, True, self.index.queues[e.agent][0] ==
                                                     self.index.queues[x.agent][0])

    def _record(self, x: AccessNode) -> None:
        for seg in self.segments(x.root, x.lo, x.hi):
            key = (x.root, seg)
            reads = self._reads.setdefault(key, {})
            if x.atomic:  # none replaces the write, the reads or an atomic it is not alike
                self._atomics[key] = [a for a in self._atomics.get(key, ()) if not self._alike(a, x)] + [x]
            elif x.write:
                self._last_write[key] = x
                reads.clear()
                self._atomics.pop(key, None)
            else:
                reads[(x.agent, x.stage)] = x

    def _destroy(self, thread: str, ref: str, op: ir.Destroy) -> None:
        """Spec 12.7: every pending device use of the buffer must complete before the destroy, also one a later
        access replaced as the most recent (the latest use per agent and stage stands for the earlier ones)."""
        buf = self.index.buffers[op.buffer]
        probe = AccessNode(ref, thread, self._next(thread), "host", (), None, op.buffer,
                       *self._root(op.buffer, 0, buf.size), self._new_uid(), True, self._memory(op.buffer))
        self.accesses.setdefault(ref, []).append(probe)
        for e in (self._uses or {}).get(op.buffer, {}).values():
            self._pair("keepalive", e, probe, (e.lo, e.hi), False)
        self._destroyed[op.buffer] = ref

    # ---- ordering --------------------------------------------------------------

    def graph(self, pair: Pair, seg: tuple[int, int]) -> nx.DiGraph:
        """The product graph of (operation, token) nodes reachable from the pair's first access;
        the pair is ordered on `seg` when it reaches SINK."""
        e = pair.first
        if not pair.memory:
            start = EXEC
        else:
            start = Token(host_written=e.host and e.memory != "host_cached")
        root = (("access", e.uid), start)
        g = nx.DiGraph(start=root)
        g.add_node(root)
        todo = [root]
        while todo:
            here = todo.pop()
            for nxt in self._successors(pair, seg, here):
                if nxt not in g:
                    g.add_node(nxt)
                    if nxt != SINK:
                        todo.append(nxt)
                g.add_edge(here, nxt)
        return g

    def _successors(self, pair: Pair, seg: tuple[int, int], here: tuple):
        key, tok = here
        e, x = pair.first, pair.second
        if key[0] == "access":
            agent, seq, node = e.agent, e.seq, None
        else:
            node = self.nodes[key]
            agent, seq = node.agent, node.seq
        later = [n for n in self.on_agent.get(agent, ()) if n.seq > seq]
        # Work later on the same agent: chains on a queue, program order on a host thread.
        for n in later:
            t = self._step(pair, seg, node, tok, n)
            if t is not None:
                yield n.key, t
        if node is not None:
            for target in self.cross.get(key, ()):
                yield target, self._enter(pair, seg, tok, self.nodes[target])
        if x.agent == agent and x.seq > seq and self._reaches(pair, node, tok):
            yield SINK

    def _step(self, pair: Pair, seg: tuple[int, int], node: SyncNode | None, tok: Token, n: SyncNode) -> Token | None:
        """The token on the same-agent edge node -> n (node None: the first access), None if no edge."""
        e = pair.first
        if n.kind == "host":
            return self._enter(pair, seg, tok, n) if e.host or node is not None else None
        if node is not None and node.kind == "host":
            return None  # a host op reaches a queue only through a submit or a signal (cross edges)
        if n.kind == "bar":
            if tok.host_written and node is not None and node.kind in self.host_barrier_reaches and \
                    (chains(node.outs, n.entry.src_exec) or node.outs >= n.entry.dst_exec) and \
                    makes_host_writes_available(n.entry.src_stages, n.entry.src_access) and \
                    coverage(n.entry, pair.first.root, *seg) == FULL:
                # A barrier with host/host_write in its first access scope: the domain operation from host to
                # device for host writes before an earlier wait or submission on its queue (docs/format.md). It
                # holds them without waiting for them (corpus 144): what it orders after them is what the wait
                # does, through it (a chain, 7.1) or because the wait's stages already hold its second scope.
                state = apply_barrier(EMPTY, (n.entry,), (FULL,), "host", "host_write")
            elif node is None:
                state = apply_barrier(EMPTY, (n.entry,), (self.coverage(n.entry, pair, seg),), e.stage, e.write)
            elif not chains(node.outs, n.entry.src_exec):
                return None  # rule 4: no chain (apply_barrier would keep the earlier chain unchanged)
            else:
                released = node.outs if tok.available else frozenset()
                # A wait's first access scope is asked of the write's own stage (events.through_event); any other
                # barrier reached by a chain holds the write in its first access scope only where it also holds it
                # directly (the path from the access itself).
                stage = e.stage if through_event(n.entry) else ""
                state = apply_barrier(State(node.outs, tok.available, frozenset(), released=released), (n.entry,),
                                      (self.coverage(n.entry, pair, seg),), stage, e.write)
            if not state.chain:
                return None
            if not pair.memory:
                return EXEC
            return Token(available=state.available, host_visible=tok.host_visible or HOST_READ in state.visible,
                         host_domain=tok.host_domain or bool(HOST_ACCESS & state.visible),
                         visible=all(sees(state, pair.second.stage, a, pair.second.buffer) for a in pair.need))
        if n.kind != "rel":
            return None  # waits and submissions are entered only by cross edges
        if node is None:
            ordered = in_synchronization_scope(e.stage, n.ins)
        else:
            # 7.1 chain: a host barrier counts only where it meets the release; 7.2 signal operation order.
            ordered = chains(node.outs, n.ins) or signal_order(node, n)
        if not ordered:
            return None
        if not pair.memory:
            return EXEC
        return tok._replace(available=tok.available or in_release_access_scope(e.agent == n.agent, e.stage, n.ins),
                            visible=False)

    def coverage(self, entry: BarrierEntry, pair: Pair, seg: tuple[int, int]) -> int:
        """How a barrier entry holds the segment of the pair's write: spec 7.7.2, a buffer memory barrier covers
        only "access to memory through the specified buffer range" (readings.buffer_barrier_covers_aliases)."""
        through = None if self.readings.buffer_barrier_covers_aliases else pair.first.buffer
        return coverage(entry, pair.first.root, *seg, through)

    def _enter(self, pair: Pair, seg: tuple[int, int], tok: Token, n: SyncNode) -> Token:
        """The token on entering n by a cross edge or program order: submissions, flush and invalidate act here."""
        if pair.memory and n.kind == "sub" and tok.host_written:
            return tok._replace(available=True)  # 7.9: vkQueueSubmit, a domain operation from host to device
        if not pair.memory or n.op is None or not isinstance(n.op, ir.HostAccess):
            return tok
        root, lo, hi = self._root(n.op.buffer, n.op.offset, n.op.offset + n.op.size)
        if root != pair.first.root or lo > seg[0] or hi < seg[1]:
            return tok
        if n.op.op == "flush" and pair.first.host and pair.first.agent == n.agent:
            return tok._replace(host_written=True)
        if n.op.op == "invalidate" and (tok.host_visible or tok.host_written and pair.second.host
                                        and n.agent == pair.second.agent):
            return tok._replace(invalidated=True)
        return tok

    def _reaches(self, pair: Pair, node: SyncNode | None, tok: Token) -> bool:
        """Whether the second access is ordered by the edge from node (None: the first access)."""
        x = pair.second
        if x.host:
            if node is not None and node.kind != "host":
                return False
            if not pair.memory:
                return True
            if pair.first.host:  # another thread's write to host_cached memory (rules.host_write_needs_flush)
                return tok.host_written and (x.write is not None or tok.invalidated)
            if x.write:  # memory model "Location-Ordered": a write needs only the domain operation
                return tok.host_domain
            return tok.host_visible and (x.memory != "host_cached" or tok.invalidated)
        if node is None or not in_synchronization_scope(x.stage, node.outs):
            return False
        if not pair.memory:
            return True
        return tok.visible if node.kind == "bar" else tok.available

    def ordered(self, pair: Pair) -> list[tuple[tuple[int, int], nx.DiGraph]]:
        """The product graph of every segment of the pair, each reaching SINK or not."""
        return [(seg, self.graph(pair, seg)) for seg in sorted(set(pair.segments))]

    def unordered_pairs(self) -> list[Pair]:
        return [p for p in self.pairs.values() if any(SINK not in g for _, g in self.ordered(p))]

    def all_hazards(self) -> set[tuple]:
        """Blocked waits and misuse, plus every compared pair left unordered, by reference."""
        kinds = {"keepalive": "use_after_destroy"}
        return self.hazards | {(kinds.get(p.kind, p.kind), p.first.ref, p.second.ref) for p in self.unordered_pairs()}


def signal_order(a: SyncNode, b: SyncNode) -> bool:
    """Spec 7.4.1 (note) and 7.3.1, "signal operation order": a semaphore signal's first synchronization scope
    holds the semaphore signals of earlier batches on its queue (not those of its own batch); a fence's (and
    an idle wait's) every earlier signal. A fence signal is in no later semaphore signal's scope."""
    if a.kind != "rel":
        return False
    if b.key[0] == "sig":
        return a.key[0] == "sig" and a.key[1:3] != b.key[1:3]
    return True


def _boundaries(stream: ir.Stream) -> dict[str, list[int]]:
    """Per root memory, every offset where an access, a barrier entry or a host op's range starts or
    ends: between two cuts, every coverage question has one answer."""
    index = stream.index
    cuts: dict[str, set[int]] = {}

    def add(buffer: str, lo: int, hi: int) -> None:
        root, base = index.root(buffer)
        cuts.setdefault(root, set()).update((base + lo, base + hi))

    for b in stream.memories:
        add(b.id, 0, b.size)
    for cb in stream.command_buffers:
        for cmd in cb.commands:
            if isinstance(cmd, ir.SYNC_COMMANDS):
                for bb in (bb for d in dependencies(cmd) for bb in d.buffers):
                    add(bb.buffer, bb.offset, bb.offset + bb.size)
                for ib in (ib for d in dependencies(cmd) for ib in d.images):
                    for lo, hi in ib.ranges:
                        add(ib.image, lo, hi)
            else:
                for _, _, _, buffer, lo, hi, *_ in command_accesses(cmd):
                    add(buffer, lo, hi)
    for t in stream.threads:
        for op in t.ops:
            if isinstance(op, ir.HostAccess):
                add(op.buffer, op.offset, op.offset + op.size)
    return {root: sorted(c) for root, c in cuts.items()}


def conflicts(e: AccessNode, x: AccessNode, readings: Readings) -> list[tuple[str, bool, tuple[str, ...]]]:
    """Spec 7.1 note: what e then x on common bytes need, as (kind, memory dependency needed, the accesses of
    x it must reach). A host access after a host write needs only order, but after another thread's write to
    non-coherent memory (rules.host_write_needs_flush); every other write a memory dependency (for a host
    second access, into the host domain)."""
    host = x.host and e.host
    memory = not host or host_write_needs_flush(e.agent == x.agent, e.memory, readings.host_threads_coherent)
    out = []
    if e.write and x.reads:
        out.append(("raw", memory, () if x.host else x.reads))
    if e.write and x.write:
        out.append(("waw", memory, () if x.host else (x.write,)))
    if e.reads and x.write:
        out.append(("war", False, ()))
    return out


def _after(issuing: str, destroy: str) -> bool:
    """Whether the host op `issuing` comes after `destroy` on the thread: a use of another thread is taken as
    after it (the checker's single schedule orders threads only through waits)."""
    a, b = parse_ref(issuing), parse_ref(destroy)
    return a is None or b is None or a.owner != b.owner or a.index > b.index
