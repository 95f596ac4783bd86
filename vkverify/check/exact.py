"""Where the one-order checker is not exact, ask z3 (smt.Semantics); and witnesses (check/witness.py).

Runs only when it has something to decide, so streams whose timelines each
have one signaller and that have no cross-queue hazard do no more work:
- a timeline several queues or threads signal: `timeline_not_increasing` when
  some complete schedule orders two signals non-increasingly, and deadlocks
  named by an unsat core (z3);
- a racing hazard (two queues or threads, no execution dependency), and a
  non-increasing signal: a witness schedule (the walk's), one per class of
  findings (the same buffer or timeline and the same two agents), at most
  `limit` computed per stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from ..model import ir
from ..model.refs import owner_of, sort_key, split_submit
from . import smt, witness
from .findings import ACCESS_KINDS, Finding, Findings
from .walk import deadlock_message

__all__ = ["WITNESSES", "refine"]

WITNESSES = 5  # computed per stream by default: a handful to read, at the cost of one walk each


def refine(stream: ir.Stream, findings: Sequence[Finding], shared: frozenset[str],
           scope: witness.Scope = "slice", limit: int = WITNESSES) -> Findings:
    """The findings with witnesses and named deadlocks, and the non-increasing timeline signals; those it
    changes are settled in `findings` (findings.Findings), the others left to be worded when read."""
    if not isinstance(findings, Findings):
        findings = Findings.of(findings)
    kinds = findings.kinds
    if not shared and not any(kind in ACCESS_KINDS for kind in kinds):
        return findings  # nothing to decide: no model, no plan (keeps clean streams as fast as before)
    # Racing: two queues or threads with no execution dependency at all. Any dependency orders the two
    # batches too, so then no schedule overlaps them: no witness to look for.
    cross = findings.racing_hazards()
    if not shared and not cross:
        return findings
    nodes = _NodeIndex(stream)
    semantics = smt.Semantics(stream) if shared else None
    budget = _Budget(limit)
    for i in cross:
        f = findings[i]
        first, second = nodes.node(f.first), nodes.node(f.second)
        findings.settle(i, _named_steps(stream, replace(f, **budget.witness(
            (f.buffer, nodes.agent(first), nodes.agent(second)), (first, second, f.order and tuple(f.order.items())),
            i + 1, partial(witness.overlap, stream, first, f.first, second, f.second, scope, f.order)))))
    if semantics is not None:
        for i in [i for i, kind in enumerate(kinds) if kind == "deadlock"]:
            findings.settle(i, _named_deadlock(findings[i], semantics, stream))
        for a, b in semantics.non_increasing(shared):
            first, second = nodes.signal_node(a), nodes.signal_node(b)
            findings.settle(len(findings), _named_steps(stream, replace(_not_increasing(a, b), **budget.witness(
                (a.semaphore, a.agent, b.agent), (first, second), len(findings) + 1,
                partial(witness.in_order, stream, first, second, scope)))))
    return findings


class _Budget:
    """One witness per class of findings, at most `limit` walks: the rest point to their class's."""

    def __init__(self, limit: int) -> None:
        self.limit, self.spent = limit, 0
        self.found: dict[tuple, int] = {}  # class -> number of the finding holding its witness
        self.none: set[tuple] = set()  # pairs of nodes (and the submission order walked) with no witness found

    def witness(self, key: tuple, pair: tuple, number: int, compute) -> dict:
        """The witness fields of finding `number` of class `key` about nodes `pair` (with the submission order
        walked). The walk's answer depends on these only, so a pair without a witness is not walked again; a
        class without one tries again with its next pair."""
        if key in self.found:
            return {"witness_same_as": self.found[key]}
        if pair in self.none:
            return {}
        if self.spent >= self.limit:
            return {"witness_limit": self.limit}
        self.spent += 1
        found = compute()
        if found is None:
            self.none.add(pair)
        else:
            self.found[key] = number
        return {"witness": found}


def _named_steps(stream: ir.Stream, f: Finding) -> Finding:
    """The finding with each step of its witness named for people, its two accesses by their labels."""
    if f.witness is None:
        return f
    accesses = {ref: " ".join(x for x in (f"{which} access:", f'"{label}"' if label else None, access) if x)
                for ref, which, label, access in ((f.first, "first", f.labels[0], f.first_access),
                                                  (f.second, "second", f.labels[1], f.second_access)) if ref}
    return replace(f, witness_steps=witness.steps(stream, f.witness, accesses))


def _named_deadlock(f: Finding, semantics: smt.Semantics, stream: ir.Stream) -> Finding:
    """Spec 7.4: no complete schedule exists; name the waits of a minimal unsat core and the operations
    that hold what they wait for."""
    core = semantics.blocking_core()
    if not core:
        return f
    ops = set()
    for wait in core:
        if not isinstance(wait, smt.Wait):
            continue  # a submission or program order: the waits name the operations
        ops.add(wait.op)
        if wait.waited in stream.index.fences:
            ops.update(b.submit for b in semantics.plan.batches if b.fence == wait.waited)
        else:
            ops.update(s.ref for s in semantics.plan.signals_of(wait.waited)
                       if wait.value is None or s.value >= wait.value)
    names = tuple(sorted(ops, key=sort_key))
    return replace(f, ops=names, message=deadlock_message(names))


def _not_increasing(a: smt.SignalNode, b: smt.SignalNode) -> Finding:
    """Spec 7.4.2: a signal's value must be greater than the timeline's current value."""
    return Finding("timeline_not_increasing",
                   f"some schedule runs {a.ref} (signals {a.semaphore!r} to {a.value}) before {b.ref} "
                   f"(signals it to {b.value}), so the second signal is not greater than the current value",
                   f"order {b.ref}'s signal before {a.ref}'s with a semaphore wait, or give it a smaller value",
                   ops=(a.ref, b.ref))


class _NodeIndex:
    """Finding references -> schedule nodes (batches or host ops) and their agents."""

    def __init__(self, stream: ir.Stream) -> None:
        self.threads = stream.index.threads
        # (command buffer, submit or None: any) -> the first batch submitting it there: a finding's reference
        # is resolved in constant time, however often its command buffer was submitted.
        self.batches: dict[tuple[str, str | None], str] = {}
        self.queue: dict[str, str] = {}  # batch key -> queue
        for b in smt.plan(stream).batches:
            self.queue[b.key] = b.queue
            for submitted in b.batch.command_buffers:
                for cb in stream.index.executed(submitted):  # the secondaries it runs are in the batch too
                    self.batches.setdefault((cb, None), b.key)
                    self.batches.setdefault((cb, b.submit), b.key)

    def node(self, ref: str) -> witness.ScheduleNode:
        base, submit = split_submit(ref)
        owner = owner_of(base)
        if owner in self.threads:
            return witness.ScheduleNode(base, False)
        return witness.ScheduleNode(self.batches[owner, submit or None], True)

    def signal_node(self, s: smt.SignalNode) -> witness.ScheduleNode:
        return witness.ScheduleNode(s.owner, s.owner in self.queue)  # a host signal's ref names no batch

    def agent(self, node: witness.ScheduleNode) -> str:
        return self.queue[node.key] if node.batch else owner_of(node.key)
