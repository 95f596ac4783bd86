"""Where the one-order checker is not exact, ask z3 (smt.Semantics).

Runs only when it has something to decide, so streams whose timelines each
have one signaller and that have no cross-queue hazard never build a model:
- a timeline several queues or threads signal: `timeline_not_increasing` when
  some complete schedule orders two signals non-increasingly, and deadlocks
  named by an unsat core;
- a hazard between two queues or threads: a witness schedule in which the
  second access starts before the first completes.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..model import ir
from ..model.refs import owner_of, sort_key, split_submit
from . import smt
from .findings import ACCESS_KINDS, Finding

WAIT_LABEL = re.compile(r"^wait (\S+) (\S+)(?: >= (\d+))?$")


def refine(stream: ir.Stream, findings: list[Finding], shared: frozenset[str]) -> list[Finding]:
    if not shared and not any(f.kind in ACCESS_KINDS for f in findings):
        return findings  # nothing to decide: no model, no plan (keeps clean streams as fast as before)
    nodes = _NodeIndex(stream)
    cross = [f for f in findings if f.kind in ACCESS_KINDS and nodes.agents_differ(f.first, f.second)]
    if not shared and not cross:
        return findings
    semantics = smt.Semantics(stream)
    out = []
    for f in findings:
        if f in cross:
            first, second = nodes.node(f.first), nodes.node(f.second)
            f = replace(f, witness=semantics.overlap(first, f.first, second, f.second))
        elif f.kind == "deadlock" and shared:
            f = _named_deadlock(f, semantics, stream)
        out.append(f)
    if shared:
        out += [_not_increasing(a, b, witness) for a, b, witness in semantics.non_increasing(shared)]
    return out


def _named_deadlock(f: Finding, semantics: smt.Semantics, stream: ir.Stream) -> Finding:
    """Spec 7.4: no complete schedule exists; name the waits of a minimal unsat core and the operations
    that hold what they wait for."""
    core = semantics.blocking_core()
    if not core:
        return f
    ops = set()
    for label in core:
        m = WAIT_LABEL.match(label)
        if m is None:
            continue  # a submission or program order: the waits name the operations
        node, what, value = m.group(1), m.group(2), m.group(3)
        ops.add(node.partition(".batches")[0])
        if what in stream.index.fences:
            ops.update(b.submit for b in semantics.plan.batches if b.fence == what)
        else:
            ops.update(s.ref for s in semantics.plan.signals_of(what)
                       if value is None or s.value >= int(value))
    names = tuple(sorted(ops, key=sort_key))
    return replace(f, ops=names, message=f"no schedule completes: {', '.join(names)} wait for each other")


def _not_increasing(a: smt.SignalNode, b: smt.SignalNode, witness: smt.Witness) -> Finding:
    """Spec 7.4.2: a signal's value must be greater than the timeline's current value."""
    return Finding("timeline_not_increasing",
                   f"some schedule runs {a.ref} (signals {a.semaphore!r} to {a.value}) before {b.ref} "
                   f"(signals it to {b.value}), so the second signal is not greater than the current value",
                   f"order {b.ref}'s signal before {a.ref}'s with a semaphore wait, or give it a smaller value",
                   ops=(a.ref, b.ref), witness=witness)


class _NodeIndex:
    """Finding references -> schedule nodes (batch keys or host refs) and their agents."""

    def __init__(self, stream: ir.Stream) -> None:
        self.threads = stream.index.threads
        self.batches = smt.plan(stream).batches

    def node(self, ref: str) -> str:
        base, submit = split_submit(ref)
        owner = owner_of(base)
        if owner in self.threads:
            return base
        cb = owner
        return next(b.key for b in self.batches
                    if cb in b.batch.command_buffers and (not submit or b.submit == submit))

    def agent(self, ref: str) -> str:
        node = self.node(ref)
        return next((b.queue for b in self.batches if b.key == node), owner_of(node))

    def agents_differ(self, first: str | None, second: str | None) -> bool:
        return first is not None and second is not None and self.agent(first) != self.agent(second)
