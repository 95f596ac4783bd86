"""Why two operations are ordered, or why not (`vkverify explain`).

The checker's vector clocks say whether a pair is ordered but forget through what. The
happens-before model (check/hb.py, shared with the mutation tester) keeps the answer as paths in a
product graph of synchronization operations and memory tokens, under the same scope rules
(docs/format.md, rules 2-8). This module pairs up every access of the two operations to common
bytes, reads the shortest paths of each pair's graph as chains of barriers, semaphore
signal/wait pairs and host waits, and, where no path reaches the second access, names the scope
that is missing at the synchronization closest to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import islice

import networkx as nx

from ..model import ir
from ..model.errors import UsageError
from ..model.loader import validate
from ..model.refs import owner_of, parse_ref, split_submit, without_submit
from . import schedule
from .barriers import ALIAS, EVENT_OPERATION, FULL, NONE, OWN, coverage, is_transition, stage_text
from .hb import SINK, AccessNode, Model, SyncNode, Pair, conflicts
from .events import dependencies, through_event
from .findings import order_text
from .scopes import EARLIER_EVENT_OPERATIONS, EARLIER_TRANSITIONS
from .walk import several_orders
from .rules import (chains as stages_chain, first_access_scope_gap, in_first_access_scope, in_synchronization_scope,
                    second_access_scope_gap)

__all__ = ["ExplainError", "Explanation", "PairExplanation", "command_text", "explain", "format_text", "host_op_text",
           "name", "names", "op_at", "resolve"]

MAX_CHAINS = 3  # alternative chains printed per pair, shortest first
EVENT_OPERATIONS = (ir.SetEvent, ir.ResetEvent, ir.HostSetEvent, ir.HostResetEvent)
MAX_PATHS = 200  # simple paths examined to find them: the product graph may hold many equivalent ones


class ExplainError(UsageError, ValueError):
    """A reference (FIRST or SECOND) that names no operation of the stream, or one that accesses no
    memory; `argument` is the reference as given. Seen by the user of `vkverify explain`."""


@dataclass
class PairExplanation:
    """One pair of conflicting accesses of the two operations over common bytes."""

    kind: str  # raw | war | waw | keepalive
    buffer: str
    range: tuple[int, int]  # buffer-relative bytes this explanation holds for
    first: str  # stage/access of the first operation's access
    second: str
    chains: list[list[str]] = field(default_factory=list)  # ordered: steps of each chain, shortest first
    reasons: list[str] = field(default_factory=list)  # not ordered: the missing scopes
    order: str | None = None  # the submission order it is read in (order_text), where not the walk's own

    @property
    def ordered(self) -> bool:
        return not self.reasons


@dataclass
class Explanation:
    first: str
    second: str
    pairs: list[PairExplanation]
    notes: list[str] = field(default_factory=list)

    @property
    def ordered(self) -> bool:
        return all(p.ordered for p in self.pairs)


def resolve(stream: ir.Stream, ref: str) -> str:
    """The canonical reference (`cb0[2]`, `main[4]`, `cb0[2]@main[5]`) for a reference or an id."""
    index = stream.index
    if ref in index.ids:
        return index.ids[ref]
    parsed = parse_ref(ref)
    if parsed is None:
        raise ExplainError(ref, "unknown reference: it names no operation of the stream")
    owner, pos, at = parsed.owner, parsed.index, parsed.submit
    ops = index.command_buffers[owner].commands if owner in index.command_buffers else \
        index.threads[owner].ops if owner in index.threads else None
    if ops is None or pos >= len(ops):
        raise ExplainError(ref, "unknown reference: it names no operation of the stream")
    if at is not None:
        submits = [op for op in index.threads[at.owner].ops] if at.owner in index.threads else []
        submit = submits[at.index] if at.index < len(submits) else None
        if owner not in index.command_buffers or not isinstance(submit, ir.Submit) or \
                not any(owner in index.executed(cb) for b in submit.batches for cb in b.command_buffers):
            raise ExplainError(ref, f"unknown reference: {at} does not submit {owner}")
    return ref


def _matches(canonical: str, ref: str) -> bool:
    """A reference without `@` names every submission of its command (as in `expect`)."""
    base, at = split_submit(canonical)
    ref_base, ref_at = split_submit(ref)
    return base == ref_base and (not at or not ref_at or at == ref_at)


def explain(stream: ir.Stream, first: str, second: str) -> Explanation:
    """Every pair of accesses `first` then `second` make to common bytes, and what orders each; a stream
    the loader did not make is validated first (InvalidStream)."""
    stream = validate(stream)
    for argument, ref in (("first", first), ("second", second)):
        if not isinstance(ref, str):
            raise UsageError(argument, f"expected a reference (a str such as 'cb0[2]'), got {type(ref).__name__}")
    notes = []
    if stream.params:
        values, stream = stream.instances[0]
        notes.append("parameters " + ", ".join(f"{k}={v}" for k, v in values) + " (the smallest instance)")
    a_ref, b_ref = resolve(stream, first), resolve(stream, second)
    # Threads calling one queue: check reads every submission order they allow (docs/format.md, "Several host
    # threads") and marks a finding the walk's own order does not give with the order that does (Finding.order). A
    # pair the checker reports is explained in the order of its finding, every other in the walk's.
    origins = _origins(stream, a_ref, b_ref) if several_orders(stream) else {}
    orders = [None]
    for order in origins.values():
        if order not in orders:
            orders.append(order)
    out = None
    for order in orders:
        ex = _explained(stream, Model(stream, order=order), a_ref, b_ref, notes,
                        lambda key, order=order: origins.get(key) == order)
        if out is None:
            out = ex
            continue
        text = order_text(order)
        out.pairs += [replace(p, order=text) for p in ex.pairs]
    return out


def _origins(stream: ir.Stream, a_ref: str, b_ref: str) -> dict[tuple, ir.SubmissionOrder]:
    """The submission order of each finding on a_ref then b_ref that the walk's own order does not give, by the key
    explain names its pairs by: (kind, first, second, root memory or event)."""
    out = {}
    for f in schedule.check(stream, witnesses=0):
        if f.order is not None and f.first and f.second and _matches(a_ref, f.first) and _matches(b_ref, f.second):
            kind = "keepalive" if f.kind == "use_after_destroy" else f.kind
            root = f.buffer if f.kind == "event_race" else stream.index.root(f.buffer)[0]
            out[(kind, f.first, f.second, root)] = f.order
    return out


def _explained(stream: ir.Stream, model: Model, a_ref: str, b_ref: str, notes: list[str],
               keep: Callable[[tuple], bool]) -> Explanation:
    """explain's answer in `model`'s submission order, after `notes`, on the pairs whose key (_origins) `keep`
    keeps."""
    if all(isinstance(op_at(stream, without_submit(r)), EVENT_OPERATIONS) for r in (a_ref, b_ref)):
        return _event_operations(stream, model, a_ref, b_ref, notes, keep)
    notes = list(notes)
    found = []
    for ref in (a_ref, b_ref):
        op = op_at(stream, without_submit(ref))
        if not (isinstance(op, (ir.Copy, ir.Fill, ir.Update, ir.Dispatch, ir.Destroy, ir.CopyBufferToImage,
                                ir.CopyImageToBuffer, ir.CopyImage, ir.BlitImage, ir.ResolveImage, ir.ClearColorImage,
                                ir.ClearDepthStencilImage, ir.WriteBufferMarker, ir.CopyQueryPoolResults))
                or isinstance(op, ir.HostAccess) and op.op in ("host_write", "host_read")
                or isinstance(op, (ir.Barrier, ir.WaitEvents)) and any(ib.transition for d in dependencies(op)
                                                                       for ib in d.images)):
            raise ExplainError(ref, "accesses no memory: name a copy, fill, update, dispatch, an image command, a "
                                    "barrier or wait_events with an image layout transition, host_write, host_read "
                                    "or destroy (or two sets or resets of one event)")
        accesses = [x for r, xs in model.accesses.items() if _matches(ref, r) for x in xs]
        if not accesses:
            notes.append(f"{ref} never runs: the stream blocks before it (see `vkverify check`)")
        found.append(accesses)
    pairs = _pairs(model, *found)
    ordered = [(e, x) for e in found[0] for x in found[1] if model.mutually_ordered(e, x) or
               model.mutually_ordered(x, e)]
    if any(e.marker is not None for e, _ in ordered):
        notes.append(f"{a_ref} and {b_ref} are buffer marker writes of one queue, the earlier naming the later's stage "
                     "or a logically earlier one: the later's implicit dependency orders the earlier before it, with "
                     "a memory dependency (copies.adoc, \"Buffer Markers\")")
    elif ordered:
        notes.append(f"{a_ref} and {b_ref} are atomic operations of one device: mutually-ordered atomics do not race "
                     "(memory model, \"Data Race\"), whatever orders them")
    elif not pairs and all(found):
        notes.append(f"{a_ref} and {b_ref} make no conflicting accesses to common bytes "
                     "(no write, or no shared bytes): Vulkan requires no ordering")
    out = []
    for pair, segs in pairs:
        if not keep((pair.kind, pair.first.ref, pair.second.ref, pair.first.root)):
            continue
        base = stream.index.root(pair.second.buffer)[1]
        for (lo, hi), (chains, reasons) in _merge([(seg, _explain_segment(model, pair, seg)) for seg in segs]):
            out.append(PairExplanation(pair.kind, pair.second.buffer, (lo - base, hi - base),
                                       _describe(pair.first), _describe(pair.second), chains, reasons))
    return Explanation(a_ref, b_ref, out, notes)


def _event_operations(stream: ir.Stream, model: Model, a_ref: str, b_ref: str, notes: list[str],
                      keep: Callable[[tuple], bool]) -> Explanation:
    """Two sets or resets of one event (docs/format.md, "Events"): per execution of the two whose key `keep` keeps,
    whether an execution dependency orders the first's event operation before the second's
    (hb.Model._event_operation), its chains, or what is missing (7.5's note to vkCmdWaitEvents2: else they race,
    unless both reset)."""
    a_op, b_op = (op_at(stream, without_submit(r)) for r in (a_ref, b_ref))
    if a_op.event != b_op.event:
        raise ExplainError(b_ref, f"sets or resets event {b_op.event!r}, not {a_op.event!r}: name two operations on "
                                  "one event")
    notes = list(notes)
    if not any(isinstance(op, (ir.SetEvent, ir.HostSetEvent)) for op in (a_op, b_op)):
        notes.append(f"{a_ref} and {b_ref} both reset {a_op.event!r}: whichever comes last leaves it unsignaled, so "
                     "they need no ordering")
    out, ran = [], False
    for ref, (event, firsts, _) in model.event_operations.items():
        for other, (_, _, x) in model.event_operations.items():
            if not (_matches(a_ref, ref) and _matches(b_ref, other)) or other == ref:
                continue
            ran = True
            if not keep(("event_race", ref, other, event)):
                continue
            found = [_explain_segment(model, Pair("order", e, x, False, ()), (0, 1)) for e in firsts]
            chains = next((c for c, reasons in found if not reasons), None)
            if chains is None:
                through = _through_operations(model, ref, other)
                chains = None if through is None else [through]
            where = "the host" if x.host else f"{x.ref}'s stage mask {names(b_op.stage)}"
            why = (f"no execution dependency orders {ref}'s {firsts[0].reads[0]} before {x.ref}'s {x.reads[0]}: an "
                   f"event operation is in a first synchronization scope only of all_commands (or bottom_of_pipe, "
                   f"7.6), or of a wait for the set (7.5), and no such scope chains into {where} (or a scope of "
                   f"every later operation, all_commands)")
            out.append(PairExplanation("event", event, (0, 0), _operation_text(firsts[0]), _operation_text(x),
                                       chains or [], [] if chains is not None else [why]))
    if not ran:
        notes.append(f"{a_ref} and {b_ref} do not both run: the stream blocks before one (see `vkverify check`)")
    return Explanation(a_ref, b_ref, out, notes)


def _through_operations(model: Model, first: str, last: str) -> list[str] | None:
    """The steps of a chain ordering event operation `first` before `last` (keys of model.event_operations) through
    other event operations, else None. Each is one operation, after what its first synchronization scope holds and
    before what a wait for its set orders (7.1: "an execution dependency chain exists if the intersection of
    ScopedOps2 in ExeDep A and ScopedOps1 in ExeDep B is not an empty set"), which the search from the stages an
    operation is held at does not join: a set's first scope is the union of its memory dependencies' (7.5)."""
    ops = model.event_operations

    def reaches(a: str, b: str) -> AccessNode | None:
        return next((e for e in ops[a][1] if SINK in model.graph(Pair("order", e, ops[b][2], False, ()), (0, 1))),
                    None)

    found, todo = {first: []}, [first]
    while todo:
        a = todo.pop(0)
        for b in ops:
            e = None if b in found else reaches(a, b)
            if e is None:
                continue
            found[b] = found[a] + _explain_segment(model, Pair("order", e, ops[b][2], False, ()), (0, 1))[0][0]
            if b == last:
                return found[b]
            found[b].append(f"{b}'s event operation: the chain goes on from it, one operation (7.1)")
            todo.append(b)
    return None


def _operation_text(x: AccessNode) -> str:
    return f"{'host' if x.host else EVENT_OPERATION}/{x.reads[0]}"


def op_at(stream: ir.Stream, ref: str):
    parsed = parse_ref(ref)
    if parsed is None:
        return None
    owner, pos = parsed.owner, parsed.index
    index = stream.index
    if owner in index.command_buffers:
        return index.command_buffers[owner].commands[pos]
    return index.threads[owner].ops[pos] if owner in index.threads else None


def _describe(x: AccessNode) -> str:
    names = x.reads + ((x.write,) if x.write else ())
    return f"{stage_text(x.stage)}/{'+'.join(names) if names else 'destroy'}"


def _pairs(model: Model, firsts: list[AccessNode], seconds: list[AccessNode]) -> list[tuple[Pair, list]]:
    """The conflicting pairs (rule 5) over common bytes, as the checker would compare them."""
    out: dict[tuple, tuple[Pair, list]] = {}
    for e in firsts:
        for x in seconds:
            if e.uid == x.uid or e.root != x.root or max(e.lo, x.lo) >= min(e.hi, x.hi) or model.mutually_ordered(e, x):
                continue
            kinds = conflicts(e, x, model.readings)
            if not x.reads and not x.write and not e.host:
                kinds.append(("keepalive", False, ()))  # x is a destroy: the use must complete first
            for kind, memory, need in kinds:
                key = (kind, e.ref, x.ref, x.buffer, e.stage, x.stage, need)
                if key not in out:
                    out[key] = (Pair(kind, e, x, memory, need), [])
                out[key][1].extend(s for s in model.segments(x.root, max(e.lo, x.lo), min(e.hi, x.hi))
                                   if s not in out[key][1])
    return list(out.values())


def _merge(results: list) -> list:
    """Neighbouring segments with the same explanation, as one range."""
    merged = []
    for (lo, hi), result in sorted(results, key=lambda r: r[0]):
        if merged and merged[-1][0][1] == lo and merged[-1][1] == result:
            merged[-1] = ((merged[-1][0][0], hi), result)
        else:
            merged.append(((lo, hi), result))
    return merged


def _explain_segment(model: Model, pair: Pair, seg: tuple[int, int]) -> tuple[list, list]:
    g = model.graph(pair, seg)
    start = g.graph["start"]
    if SINK not in g:
        return [], _why_not(model, pair, seg, g)
    chains, seen = [], set()
    for path in islice(nx.shortest_simple_paths(g, start, SINK), MAX_PATHS):
        ops = tuple(k for k, _ in path[1:-1])
        if ops in seen:
            continue
        seen.add(ops)
        chains.append(_chain(model, pair, path))
        if len(chains) == MAX_CHAINS:
            break
    return chains, []


# ---- ordered: the steps of a chain ---------------------------------------------


def names(stages_or_accesses) -> str:
    return ", ".join(sorted(stages_or_accesses)) or "none"


def _barrier_masks(model: Model, key: tuple):
    """The memory barrier of a `bar` node as written (a barrier, one of its buffer barriers, an event's
    dependency), and its command's label."""
    return model.nodes[key].written, op_at(model.stream, without_submit(key[1])).label


def command_text(model: Model, key: tuple) -> str:
    """What the command of a `bar` node is: a barrier, or an event's set or wait."""
    cmd = op_at(model.stream, without_submit(key[1]))
    if isinstance(cmd, (ir.SetEvent, ir.ResetEvent)):
        return f"{'set_event' if isinstance(cmd, ir.SetEvent) else 'reset_event'} {cmd.event}"
    return f"wait_events {', '.join(cmd.events)}" if isinstance(cmd, ir.WaitEvents) else "barrier"


def name(model: Model, key: tuple) -> str:
    """A synchronization node of the model, for people."""
    kind = key[0]
    if kind == "bar":
        b, _ = _barrier_masks(model, key)
        where = f" (buffer barrier on {b.buffer})" if isinstance(b, ir.BufferBarrier) else \
            f" (image barrier on {b.image})" if isinstance(b, ir.ImageBarrier) else ""
        return f"{command_text(model, key)} {key[1]}{_label_of(model.stream, key[1])}{where}"
    if kind in ("wait", "sig"):
        submit, bi, i = key[1], key[2], key[3]
        op = op_at(model.stream, submit)
        s = (op.batches[bi].waits if kind == "wait" else op.batches[bi].signals)[i]
        value = f" value {s.value}" if s.value is not None else ""
        verb = "wait on" if kind == "wait" else "signal of"
        return f"{verb} {s.semaphore}{value} by {submit} on {op.queue}"
    if kind == "sub":
        op = op_at(model.stream, key[1])
        return f"submission {key[1]} on {op.queue}"
    if kind == "fence":
        op = op_at(model.stream, key[1])
        return f"fence {op.fence} signalled by {key[1]} on {op.queue}"
    if kind == "idle":
        return f"idle of {key[2]}"
    op = op_at(model.stream, key[1])
    return f"host {host_op_text(op)} {key[1]}{_label_of(model.stream, key[1])}"


def host_op_text(op: ir.HostOp) -> str:
    if isinstance(op, ir.WaitFences):
        return f"wait_fences {names(op.fences)}"
    if isinstance(op, ir.GetSemaphoreCounterValue):
        return f"get_semaphore_counter_value {op.waits[0].semaphore} = {op.waits[0].value}"
    if isinstance(op, ir.WaitSemaphores):
        return "wait_semaphores " + ", ".join(f"{w.semaphore} >= {w.value}" for w in op.waits)
    if isinstance(op, ir.SignalSemaphore):
        return f"signal_semaphore {op.semaphore} = {op.value}"
    if isinstance(op, ir.HostAccess):
        return f"{op.op} {op.buffer}"
    if isinstance(op, ir.Submit):
        return f"submit to {op.queue}"
    if isinstance(op, ir.QueueWaitIdle):
        return f"queue_wait_idle {op.queue}"
    if isinstance(op, ir.DeviceWaitIdle):
        return f"device_wait_idle {op.device}"
    if isinstance(op, ir.ResetFences):
        return f"reset_fences {names(op.fences)}"
    if isinstance(op, (ir.HostSetEvent, ir.HostResetEvent)):
        return f"{'set_event' if isinstance(op, ir.HostSetEvent) else 'reset_event'} {op.event}"
    return f"destroy {op.buffer}"


def _chain(model: Model, pair: Pair, path: list) -> list[str]:
    """One line per synchronization on the path, with the scope each satisfies."""
    e, x = pair.first, pair.second
    steps = []
    nodes = [k for k, _ in path]
    for i in range(1, len(path) - 1):
        key, tok = path[i]
        prev, nxt = nodes[i - 1], nodes[i + 1]
        node = model.nodes[key]
        parts = []
        if key[0] == "bar":
            b, _ = _barrier_masks(model, key)
            masks = (f"src_stage {names(b.src_stage)}, src_access {names(b.src_access)}; "
                     f"dst_stage {names(b.dst_stage)}, dst_access {names(b.dst_access)}")
            if prev[0] == "access" and is_transition(e.stage):
                parts.append("its layout transition of the image comes before its second scopes (7.7.4)")
            elif prev[0] == "access" and e.reads[:1] in (("set_event",), ("reset_event",)):
                parts.append(f"first scope: it holds {e.ref}'s event operation ("
                             + ("src_stage all_commands or bottom_of_pipe)" if e.stage == EARLIER_EVENT_OPERATIONS
                                else "a wait for its set, 7.5)"))
            elif prev[0] == "access":
                parts.append(f"first scope: {stage_text(e.stage)} is in src_stage"
                             + ("" if e.stage in node.entry.src_stages else " (logically earlier)"))
                if pair.memory and e.write and in_first_access_scope(e.stage, e.write, node.entry.src_stages,
                                                                     node.entry.src_access):
                    parts.append(f"access scope: {e.write} is in src_access: made available")
            else:
                parts.append(f"chains after {name(model, prev)}")
            if nxt == SINK[0] and x.stage.startswith(EVENT_OPERATION):
                parts.append(f"it is the first synchronization scope of {x.ref}'s event operation")
            elif nxt == SINK[0] and is_transition(x.stage):
                parts.append("its layout transition of the image comes after its first scopes (7.7.4)")
            elif nxt == SINK[0]:
                parts.append(f"second scope: {stage_text(x.stage)} is in dst_stage")
                if pair.memory:
                    parts.append(f"dst_access makes it visible to {stage_text(x.stage)}/{'+'.join(pair.need)}")
            elif tok.host_visible and x.host:
                parts.append("dst_stage host and dst_access host_read make it visible to the host")
            steps.append(f"{name(model, key)} ({masks}): " + "; ".join(parts))
            continue
        if key[0] in ("sig", "fence", "idle") and prev[0] in ("bar", "wait", "sub"):
            parts.append(f"its first scope meets the second scope of step {i - 1}"
                         + (" in the layout transition, which all_commands holds (7.6)"
                            if node.ins & model.nodes[prev].outs == {EARLIER_TRANSITIONS} else ""))
        elif key[0] == "sig" and prev[0] == "access":
            stage = names(op_at(model.stream, key[1]).batches[key[2]].signals[key[3]].stage)
            parts.append(f"first scope: {stage_text(e.stage)} is in its stage mask {stage} "
                         f"(with everything earlier on {node.agent})")
        elif key[0] in ("fence", "idle") and prev[0] == "access":
            parts.append(f"first scope: all earlier work on {node.agent}")
        elif key[0] == "wait" and nxt == SINK[0]:
            parts.append(f"second scope: {stage_text(x.stage)} is in its stage mask {names(_wait(model, key).stage)}")
        elif key[0] == "sub" and nxt == SINK[0]:
            parts.append("the submission orders earlier host operations before every command in it")
        elif key[0] == "host" and prev[0] == "access":
            parts.append(f"after {e.ref} in program order")
        elif key[0] == "host" and nxt == SINK[0] and x.host:
            parts.append(f"before {x.ref} in program order")
        if key[0] == "wait" and model.nodes.get(prev) is not None and prev[0] in ("sig", "host"):
            parts.insert(0, f"paired with the {name(model, prev)}")
        if key[0] == "host" and prev[0] in ("fence", "idle", "sig"):
            parts.insert(0, "the host waits for it")
        if pair.memory and x.host and tok.invalidated and isinstance(node.op, ir.HostAccess):
            parts.append("invalidates the mapped range")
        steps.append(name(model, key) + (": " + "; ".join(parts) if parts else ""))
    return steps


# ---- not ordered: the missing scope ----------------------------------------------


def _what(x: AccessNode) -> str:
    return "write" if x.write else "read" if x.reads else "destroy"


def _why_not(model: Model, pair: Pair, seg: tuple[int, int], g: nx.DiGraph) -> list[str]:
    """The missing link, by the rules the graph applies: with no execution dependency, the scope where the
    path stops (7.1 chain); ordered by execution alone, where the write is not made available or visible."""
    e, x = pair.first, pair.second
    execution = model.graph(replace(pair, memory=False), seg) if pair.memory else g
    if SINK in execution:
        # Only the synchronizations on an execution path to the second access can carry its memory dependency.
        on_path = {k for k, _ in nx.ancestors(execution, SINK)}
        reasons = _no_memory_dependency(model, pair, seg, _reached(model, g, on_path),
                                        _reached(model, execution, on_path))
        # A barrier that makes the write available off every path to the second access: its chain stops.
        for key, toks in _reached(model, g).items():
            if key[0] == "bar" and key not in on_path and any(t.available for t in toks):
                b, _ = _barrier_masks(model, key)
                reasons.append(f"the barrier {key[1]} makes {e.ref}'s write available, but its dst_stage "
                               f"{names(b.dst_stage)} chains into nothing that orders {x.ref}")
    else:
        reasons = _no_execution_dependency(model, pair, _reached(model, execution))
    return list(dict.fromkeys(reasons)) or [f"no synchronization leads from {e.ref} to {x.ref}"]


def _reached(model: Model, g: nx.DiGraph, among=None) -> dict[tuple, list]:
    """The synchronization nodes (of `among`, if given) a graph reaches from the first access, with the
    tokens they carry."""
    out: dict[tuple, list] = {}
    for key, tok in g.nodes:
        if key in model.nodes and (among is None or key in among):
            out.setdefault(key, []).append(tok)
    return out


def _between(model: Model, pair: Pair) -> list[SyncNode]:
    """The nodes on the second access's agent before it (after the first, where they share it)."""
    e, x = pair.first, pair.second
    return [n for n in model.on_agent.get(x.agent, ()) if n.seq < x.seq and (e.agent != x.agent or n.seq > e.seq)]


def _no_execution_dependency(model: Model, pair: Pair, reached: dict) -> list[str]:
    """Spec 7.1: each link of a chain is one scope meeting the next; name where the path stops."""
    e, x = pair.first, pair.second
    reasons = []
    for n in _between(model, pair):
        if n.key in reached and not x.host and not in_synchronization_scope(x.stage, n.outs):
            if n.kind == "bar":
                b, _ = _barrier_masks(model, n.key)
                reasons.append(f"the barrier {n.key[1]} has dst_stage {names(b.dst_stage)}, the {_what(x)} {x.ref} "
                               f"is at {stage_text(x.stage)}")
            elif n.kind == "wait":
                reasons.append(f"the {name(model, n.key)} has stage {names(_wait(model, n.key).stage)}, the "
                               f"{_what(x)} {x.ref} is at {stage_text(x.stage)}")
    if e.agent == x.agent and not x.host:
        bars = [n for n in _between(model, pair) if n.kind == "bar"]
        if not bars:
            reasons.append(f"no barrier between {e.ref} and {x.ref} on {x.agent} (submission order orders nothing)")
        for n in bars:
            if n.key in reached:
                continue
            if is_transition(e.stage) and in_synchronization_scope(e.stage, n.entry.src_exec):  # its second half
                b, _ = _barrier_masks(model, n.key)
                reasons.append(f"the layout transition of {e.ref} is ordered only before its barrier's second scope, "
                               f"dst_stage {names(b.dst_stage)}; the {_what(x)} {x.ref} is at {stage_text(x.stage)}")
                continue
            if through_event(n.entry):
                sets = [m for m in model.on_agent[x.agent] if m.seq < n.seq and stages_chain(m.outs, n.entry.src_exec)]
                if sets and e.seq > sets[-1].seq:
                    reasons.append(f"the {name(model, n.key)} orders only work before {name(model, sets[-1].key)} "
                                   f"(7.5): the {_what(e)} {e.ref} comes after it")
                continue  # the set it waits for says why, as a barrier would
            b, _ = _barrier_masks(model, n.key)
            reasons.append(f"the {command_text(model, n.key)} {n.key[1]} has src_stage {names(b.src_stage)}, "
                           f"the {_what(e)} {e.ref} is at {stage_text(e.stage)}")
    if e.agent != x.agent and not reasons:
        reasons += _no_cross_edge(model, pair, reached)
    return reasons


def _no_memory_dependency(model: Model, pair: Pair, seg: tuple[int, int], reached: dict, executed: dict) -> list[str]:
    """Ordered by execution: spec 7.1, a memory dependency needs an availability operation for the write that
    happens-before a visibility operation for the access (for the host, a domain operation to it, 7.1.3)."""
    e, x = pair.first, pair.second
    if e.host and x.host:
        return _unshared_between_threads(pair, reached)
    available = any(t.available for toks in reached.values() for t in toks)
    if e.host and not available:
        return _host_write_not_available(model, pair, executed)
    if not e.host and not available:
        return _not_made_available(model, pair, seg, executed)
    if x.host:
        return _not_made_visible_to_host(model, pair, reached)
    makers = [model.nodes[k] for k, toks in reached.items() if k[0] == "bar" and any(t.available for t in toks)]
    reasons = []
    for n in _between(model, pair):
        if n.kind == "bar" and in_synchronization_scope(x.stage, n.outs) and \
                not second_access_scope_gap(x.stage, pair.need, n.entry.dst_scope) and _gap(model, n, x, seg) is None \
                and not any(t.available for t in reached.get(n.key, ())):
            b, _ = _barrier_masks(model, n.key)
            for m in makers:
                a, _ = _barrier_masks(model, m.key)
                reasons.append(f"the barrier {n.key[1]} makes the write visible to "
                               f"{stage_text(x.stage)}/{'+'.join(pair.need)} but does not chain after the barrier "
                               f"{m.key[1]}, which made it available: "
                               f"{m.key[1]}'s dst_stage {names(a.dst_stage)} misses its src_stage "
                               f"{names(b.src_stage)}")
    if reasons:
        return reasons
    for n in _between(model, pair):
        toks = reached.get(n.key, ())
        if n.kind == "bar" and in_synchronization_scope(x.stage, n.outs) and any(t.available for t in toks) and \
                (gap := _gap(model, n, x, seg)) != "":
            b, _ = _barrier_masks(model, n.key)
            if gap:
                reasons.append(gap)
            else:
                lacking = second_access_scope_gap(x.stage, pair.need, n.entry.dst_scope)
                reasons.append(f"the barrier {n.key[1]} makes {e.ref}'s write available but its dst_access "
                               f"{names(b.dst_access)} lacks {names(lacking)}: not visible to "
                               f"{stage_text(x.stage)}/{'+'.join(pair.need)}")
    if not reasons:
        for n in makers:
            b, _ = _barrier_masks(model, n.key)
            reasons.append(f"the barrier {n.key[1]} makes {e.ref}'s write available, but no barrier that makes it "
                           f"visible to {stage_text(x.stage)} chains after its dst_stage {names(b.dst_stage)}")
    return reasons


def _not_made_available(model: Model, pair: Pair, seg: tuple[int, int], executed: dict) -> list[str]:
    """Spec 7.1: a barrier makes e available when e is in its first access scope (its src_stage names e's stage,
    its src_access e's write, its range e's bytes); a signal only the accesses of its own first scope (7.4.1);
    a chain's first access scope is its first barrier's."""
    e = pair.first
    reasons = []
    for n in model.on_agent.get(e.agent, ()):
        if n.seq <= e.seq or n.key not in executed:
            continue
        if n.kind == "bar" and in_synchronization_scope(e.stage, n.entry.src_exec) and \
                (gap := _gap(model, n, e, seg)) != "":
            b, _ = _barrier_masks(model, n.key)
            if gap:
                reasons.append(gap)
            elif first_access_scope_gap(e.stage, e.write, n.entry.src_stages, n.entry.src_access) == "src_access":
                reasons.append(f"the barrier {n.key[1]} chains with {e.ref} but its src_access "
                               f"{names(b.src_access)} lacks {e.write}")
            else:
                reasons.append(f"the barrier {n.key[1]} chains with {e.ref} only as a stage logically earlier than its "
                               f"src_stage {names(b.src_stage)}: its access scope holds only the stages it names")
        elif n.kind == "rel" and n.key[0] == "sig" and not in_synchronization_scope(e.stage, n.ins):
            s = op_at(model.stream, n.key[1]).batches[n.key[2]].signals[n.key[3]]
            reasons.append(f"the {name(model, n.key)} has stage {names(s.stage)}, which excludes "
                           f"{stage_text(e.stage)}: {e.ref} reaches it only through a chain whose first barrier made "
                           f"nothing available")
    return reasons or [f"nothing makes the {e.write} of {e.ref} available"]


def _host_write_not_available(model: Model, pair: Pair, executed: dict) -> list[str]:
    """Spec 7.9 and 11.2: a submission makes earlier host writes available to the device, once they are in the
    host domain (a flush, for non-coherent memory); a later host write needs a barrier with src_stage host."""
    e, x = pair.first, pair.second
    if e.memory == "host_cached":
        subs = [k for k in executed if k[0] == "sub" and model.nodes[k].agent == x.agent]
        where = f"before {name(model, subs[-1])}" if subs else f"before {x.ref}"
        return [f"{e.buffer} is host_cached: no flush of the bytes {e.ref} wrote {where}"]
    return [(f"{e.ref} comes after the submission of {x.ref}: no barrier with src_stage host and src_access "
             f"host_write before {x.ref} makes it available")]


def _unshared_between_threads(pair: Pair, reached: dict) -> list[str]:
    """Spec 7.1.3 (rules.host_write_needs_flush): another thread's write to host_cached memory reaches a host access
    through the writer's flush before the release the reader acquires, and for a read, the reader's invalidate
    after that acquire."""
    e, x = pair.first, pair.second
    if not any(t.host_written for toks in reached.values() for t in toks):
        return [(f"{e.buffer} is host_cached and {x.ref} is on another thread: no flush by {e.agent} of the bytes "
                f"{e.ref} wrote before a release {x.agent} acquires (reading host_threads_coherent)")]
    return [(f"{x.buffer} is host_cached and {e.ref} is on another thread: no invalidate of the bytes by {x.agent} "
            f"after it acquires the flush, before {x.ref} (reading host_threads_coherent)")]


def _not_made_visible_to_host(model: Model, pair: Pair, reached: dict) -> list[str]:
    """Spec 7.1.3 host access: a device write reaches the host through a domain operation (a barrier whose
    dst_access has host_read or host_write, in a chain the host waits for), then, for non-coherent memory, an
    invalidate of its bytes."""
    e, x = pair.first, pair.second
    waits = [model.nodes[k] for k in reached if model.nodes[k].agent == x.agent and model.nodes[k].seq < x.seq]
    waited = f" the host waits ({name(model, waits[-1].key)}) but" if waits else ""
    toks = [t for n in waits for t in reached[n.key]]
    if not any(t.host_visible if x.reads else t.host_domain for t in toks):
        access = "host_read" if x.reads else "host_read or host_write"
        return [(f"no domain operation to the host:{waited} no barrier with dst_stage host and dst_access {access} "
                 f"after {e.ref} in the chain it waits for")]
    return [(f"{x.buffer} is host_cached: no invalidate of the bytes after {name(model, waits[-1].key)} before "
             f"{x.ref}")]


def _gap(model: Model, n: SyncNode, x: AccessNode, seg: tuple[int, int]) -> str | None:
    """Spec 7.7.2: why the barrier entry n does not hold x's bytes `seg` in its access scopes (None: it does;
    "": a buffer barrier on other memory, nothing to say)."""
    through = None if model.readings.buffer_barrier_covers_aliases else x.buffer
    cover = coverage(n.entry, x.root, *seg, through)
    if cover in (FULL, OWN):
        return None
    if cover == NONE and n.entry.root != x.root:
        return ""
    b, _ = _barrier_masks(model, n.key)
    if isinstance(b, ir.ImageBarrier):
        r = b.subresources
        levels = f"[{r.base_mip_level}, {r.base_mip_level + r.level_count})"
        layers = f"[{r.base_array_layer}, {r.base_array_layer + r.layer_count})"
        return (f"the image barrier {n.key[1]} covers {b.image} levels {levels} layers {layers} only, not bytes "
                f"[{seg[0]}, {seg[1]}) of its layout (spec 7.7.3)")
    if cover == ALIAS:
        return (f"the buffer barrier {n.key[1]} is on {b.buffer}: it covers only access through {b.buffer}, not "
                f"{x.ref}'s through {x.buffer} (spec 7.7.2; reading buffer_barrier_covers_aliases)")
    base = model.index.root(b.buffer)[1]
    return (f"the buffer barrier {n.key[1]} covers {b.buffer} [{b.offset}, {b.offset + b.size}) only, "
            f"not bytes [{seg[0] - base}, {seg[1] - base})")


def _wait(model: Model, key: tuple) -> ir.SemaphoreOp:
    return op_at(model.stream, key[1]).batches[key[2]].waits[key[3]]


def _no_cross_edge(model: Model, pair: Pair, reached: dict) -> list[str]:
    """Across queues and threads: the release after the first access, and the missing wait for it."""
    e, x = pair.first, pair.second
    where = f"{x.agent} before {x.ref}"
    if e.host:
        submit = next((n for n in model.on_agent.get(x.agent, ()) if n.kind == "sub" and n.seq < x.seq), None)
        if submit is not None and owner_of(submit.key[1]) == e.agent:
            return [(f"{x.ref} was submitted by {submit.key[1]}, before {e.ref}: a host access orders only work "
                     "submitted after it")]
        return [(f"nothing orders {e.ref} on thread {e.agent} before {x.ref}: no semaphore signal or fence "
                 f"{e.agent} raises after it is waited for on {x.agent}")]
    releases = [n for n in model.on_agent.get(e.agent, ()) if n.kind == "rel" and n.seq > e.seq]
    out = []
    if not x.host and not any(n.key[0] == "sig" for n in releases):
        out.append(f"no semaphore signal on {e.agent} after {e.ref}, so no semaphore wait on {where}")
    batch = next((n for n in reversed(model.on_agent.get(x.agent, ())) if n.kind == "sub" and n.seq < x.seq), None)
    for n in releases:
        if n.key not in reached:
            if n.key[0] == "sig":
                s = op_at(model.stream, n.key[1]).batches[n.key[2]].signals[n.key[3]]
                out.append(f"the {name(model, n.key)} has stage {names(s.stage)}, the {_what(e)} {e.ref} is at "
                           f"{stage_text(e.stage)}")
            continue
        targets = [model.nodes[t] for t in model.cross.get(n.key, [])]
        if not targets:
            waiter = "semaphore wait" if n.key[0] == "sig" else "host wait"
            out.append(f"no {waiter} on {x.agent} after the {name(model, n.key)}")
        for t in targets:
            if t.agent == x.agent:
                out.append(f"the {name(model, n.key)} is waited for on {x.agent} only after {x.ref}")
            elif t.kind == "host" and batch is not None and owner_of(batch.key[1]) == t.agent and \
                    parse_ref(t.key[1]).index > parse_ref(batch.key[1]).index:
                out.append(f"the host waits for the {name(model, n.key)} at {t.key[1]}, after it submitted "
                           f"{x.ref} ({batch.key[1]})")
            elif t.agent != x.agent and t.kind != "host":
                out.append(f"the {name(model, n.key)} is waited for on {t.agent} ({t.key[1]}), not on {where}")
    if not releases:
        out.append(f"no semaphore signal, fence or idle wait on {e.agent} after {e.ref}")
    return out


# ---- text ------------------------------------------------------------------------


def format_text(ex: Explanation, stream: ir.Stream) -> str:
    verdict = "ordered" if ex.ordered else "NOT ordered"
    lines = [f"{ex.first}{_label_of(stream, ex.first)} -> {ex.second}{_label_of(stream, ex.second)}: {verdict}"]
    lines += [f"  note: {n}" for n in ex.notes]
    for p in ex.pairs:
        kind = "use then destroy" if p.kind == "keepalive" else p.kind
        where = f"{p.buffer}" if p.kind == "event" else f"{p.buffer} [{p.range[0]}, {p.range[1]})"
        lines.append(f"  {kind} {where}: {p.first} -> {p.second}: " + ("ordered" if p.ordered else "not ordered"))
        if p.order:
            lines.append(f"    in the submission order {p.order}")
        for n, chain in enumerate(p.chains):
            lines.append("    chain:" if n == 0 else "    also:")
            lines += [f"      {i}. {step}" for i, step in enumerate(chain, 1)]
        lines += [f"    why not: {r}" for r in p.reasons]
    return "\n".join(lines)


def _label_of(stream: ir.Stream, ref: str) -> str:
    op = op_at(stream, without_submit(ref))
    return f' "{op.label}"' if op is not None and op.label else ""
