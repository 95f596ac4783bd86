"""Which synchronization operations are load-bearing: on every ordering path of some pair.

For each conflicting pair the happens-before model (hb.Model) orders, the product graph from
the first access to the second holds every ordering path. An operation (a barrier, one entry of
a barrier, a semaphore wait or signal, a host wait, a flush or invalidate) is load-bearing for
the pair when removing its nodes disconnects the two accesses: a minimal node cut of size one,
computed on the graph, never by re-running the checker. An operation on some ordering path but
in no pair's cut is redundant: another path orders each of its pairs, and that path is named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from ..check.hb import SINK, Model, Pair
from ..model import ir
from ..model.refs import without_submit

__all__ = ["Analysis", "Redundancy", "analyze", "pair_name"]


@dataclass(frozen=True)
class Redundancy:
    op: str
    pair: Pair | None  # None: the op is on no ordering path at all
    other_path: tuple[str, ...]  # the operations of a path that orders the pair without op
    why: str | None = None  # what shows it redundant, where not a pair and a path (a command's runs)


@dataclass
class Analysis:
    stream: ir.Stream
    model: Model
    load_bearing: dict[str, list[Pair]] = field(default_factory=dict)  # op -> pairs it alone orders
    redundant: list[Redundancy] = field(default_factory=list)
    unordered: list[Pair] = field(default_factory=list)  # pairs no path orders (hazards already)

    def classes(self, op: str) -> set[str]:
        """raw / war / waw / keepalive: the kinds of the pairs op alone orders."""
        return {p.kind for p in self.load_bearing.get(op, ())}


def pair_name(p: Pair) -> str:
    return f"{p.kind} {p.first.ref} -> {p.second.ref} on {p.second.buffer}"


def analyze(stream: ir.Stream) -> Analysis:
    model = Model(stream)
    out = Analysis(stream, model)
    on_path: dict[str, Pair] = {}
    others: dict[str, tuple[Pair, tuple[str, ...]]] = {}
    for pair in model.pairs.values():
        for seg, g in model.ordered(pair):
            if SINK not in g:
                out.unordered.append(pair)
                break
            start = g.graph["start"]
            relevant = (nx.descendants(g, start) & nx.ancestors(g, SINK)) | {start}
            # A barrier whose layout transition is one side of the pair performs it: dropping it drops the pair.
            sides = {without_submit(pair.first.ref), without_submit(pair.second.ref)}
            ops = sorted({op for node in relevant for op in _ops(model, node)} - sides)
            for op in ops:
                on_path.setdefault(op, pair)
                rest = nx.subgraph_view(g, filter_node=lambda n, op=op: op not in _ops(model, n))
                if not nx.has_path(rest, start, SINK):
                    if pair not in out.load_bearing.setdefault(op, []):
                        out.load_bearing[op].append(pair)
                elif op not in others:
                    path = nx.shortest_path(rest, start, SINK)
                    others[op] = (pair, tuple(dict.fromkeys(o for n in path for o in _ops(model, n)[:1])))
    for op in sorted(_mutable_ops(model) - out.load_bearing.keys()):
        if op in others:
            out.redundant.append(Redundancy(op, *others[op]))
        else:
            out.redundant.append(Redundancy(op, on_path.get(op), ()))
    return out


def _ops(model: Model, node: tuple) -> tuple[str, ...]:
    found = model.nodes.get(node[0])
    return found.ops if found is not None else ()


def _mutable_ops(model: Model) -> set[str]:
    return {op for n in model.nodes.values() for op in n.ops}
