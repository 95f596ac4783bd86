"""The happens-before graph of submissions and synchronizations, as DOT or SVG (`vkverify graph`).

One node per host op, submitted batch, semaphore wait and signal, fence or idle release and
barrier (the nodes of check/hb.py, a barrier's entries merged), and one per command that accesses
memory as executed, in its place on its queue; each labelled with its label and the program line that
recorded it where the stream has them. The operations findings name are highlighted, with the missing
edge between them dashed red and labelled with the finding's kind and the number of its fix: findings
that one synchronization fixes (the same smallest single fix) share a number, listed with that fix
beside a legend of the edges.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from itertools import pairwise

import networkx as nx

from ..errors import VkverifyError
from ..model import ir
from ..model.refs import format_ref, without_submit
from .explain import command_text, host_op_text, name, names, op_at
from .findings import Finding
from .hb import Model

__all__ = ["DOT_TIMEOUT", "GraphvizError", "build", "to_dot", "to_svg"]

HIGHLIGHT = "#d62728"
EDGE_STYLE = {  # kind -> DOT attributes
    "order": {"color": "gray55"},
    "submit": {"color": "#1f77b4", "label": "submit"},
    "semaphore": {"color": "#2ca02c", "penwidth": "1.6"},
    "host wait": {"color": "#9467bd", "penwidth": "1.6"},
    "missing": {"color": HIGHLIGHT, "style": "dashed", "penwidth": "2", "fontcolor": HIGHLIGHT, "constraint": "false"},
}


DOT_TIMEOUT = 120  # seconds: dot's layout time grows about as the cube of the nodes (cli.MAX_SVG_NODES)


class GraphvizError(VkverifyError, RuntimeError):
    """`dot` is not on PATH, or failed. Seen by the user of `vkverify graph --format svg`."""


@dataclass(frozen=True)
class Drawn:
    stream: ir.Stream
    graph: nx.MultiDiGraph  # nodes: id -> agent, label, shape, highlight; edges: kind, label
    params: tuple[tuple[str, int], ...] | None
    fixes: tuple[tuple[str, tuple[Finding, ...]], ...] = ()  # each smallest single fix, the findings it fixes


def by_fix(findings: list[Finding]) -> tuple[tuple[str, tuple[Finding, ...]], ...]:
    """Findings grouped by their fix (one synchronization that orders them all), in order of first mention."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.fix, []).append(f)
    return tuple((fix, tuple(fs)) for fix, fs in groups.items())


def build(stream: ir.Stream, findings: list[Finding]) -> Drawn:
    """The graph of `stream` (for a params stream: the instance the findings are about, else the smallest)."""
    params = None
    if stream.params:
        wanted = next((f.params for f in findings if f.params), None)
        params, stream = next(((v, s) for v, s in stream.instances if v == wanted), stream.instances[0])
    model = Model(stream)
    g = nx.MultiDiGraph()
    named = {r for f in findings for r in (f.first, f.second, *(f.ops or ())) if r}
    for t in stream.threads:
        for i, op in enumerate(t.ops):
            ref = format_ref(t.id, i)
            g.add_node(ref, agent=t.id, seq=i, label=f"{ref}{_tag(op)}\n{host_op_text(op)}", shape="box",
                       highlight=ref in named)
    for agent, nodes in model.on_agent.items():
        if agent in stream.index.threads:
            continue
        for n in nodes:
            node_id = _id(n.key)
            if node_id not in g:  # a barrier's entries share one node
                g.add_node(node_id, agent=agent, seq=n.seq, label=_queue_label(model, n.key),
                           shape="box" if n.kind == "bar" else "ellipse", highlight=False)
    # Every command that accesses memory (a dispatch, copy, fill or update as executed), at its position on its
    # queue; those findings name highlighted.
    for ref, accesses in sorted(model.accesses.items()):
        if ref not in g and accesses and not accesses[0].host:
            g.add_node(ref, agent=accesses[0].agent, seq=accesses[0].seq, label=f"{ref}{_tag_ref(stream, ref)}",
                       shape="note", highlight=ref in named)
    for agent in {d["agent"] for _, d in g.nodes(data=True)}:
        chain = sorted((d["seq"], n) for n, d in g.nodes(data=True) if d["agent"] == agent)
        for (_, a), (_, b) in pairwise(chain):
            g.add_edge(a, b, kind="order", label="")
    for src, targets in model.cross.items():
        for dst in targets:
            g.add_edge(_id(src), _id(dst), **_cross(model, src, dst))
    fixes = by_fix(findings)
    for k, (_, group) in enumerate(fixes, 1):
        for f in group:
            ends = (f.first, f.second) if f.first and f.second else f.ops if f.ops and len(f.ops) == 2 else None
            if ends and all(e in g for e in ends):
                g.add_edge(*ends, kind="missing", label=f"{f.kind} (fix {k})")
    return Drawn(stream, g, params, fixes)


def _id(key: tuple) -> str:
    """hb's host nodes are the op's reference; a barrier's entries collapse to the barrier."""
    if key[0] == "host":
        return key[1]
    if key[0] == "bar":
        return f"barrier {key[1]}"
    return " ".join(str(k) for k in key)


def _tag(op) -> str:
    """The op's label and the program line that recorded it, where the stream has them."""
    return (f' "{op.label}"' if op.label else "") + (f"\nat {op.source}" if op.source else "")


def _tag_ref(stream: ir.Stream, ref: str) -> str:
    return _tag(op_at(stream, without_submit(ref)))


def _queue_label(model: Model, key: tuple) -> str:
    if key[0] == "bar":
        cmd = op_at(model.stream, without_submit(key[1]))
        what = f"{command_text(model, key)} {key[1]}{_tag(cmd)}"
        if isinstance(cmd, (ir.SetEvent, ir.ResetEvent)):
            return f"{what}\n{names(cmd.stage)}"
        b = cmd.dependencies[0] if isinstance(cmd, ir.WaitEvents) else cmd
        return (f"{what}\n{names(b.src_stage)} -> {names(b.dst_stage)}"
                + (f"\n{names(b.src_access)} -> {names(b.dst_access)}" if b.src_access or b.dst_access else ""))
    if key[0] == "sub":
        return f"batch {key[2]} of {key[1]}"
    if key[0] in ("wait", "sig"):
        return name(model, key).split(" by ")[0] + f"\n@ {names(_semaphore_op(model, key).stage)}"
    if key[0] == "fence":
        return f"fence {op_at(model.stream, key[1]).fence}"
    return name(model, key)  # an idle release


def _semaphore_op(model: Model, key: tuple) -> ir.SemaphoreOp:
    batch = op_at(model.stream, key[1]).batches[key[2]]
    return (batch.waits if key[0] == "wait" else batch.signals)[key[3]]


def _cross(model: Model, src: tuple, dst: tuple) -> dict:
    if dst[0] == "sub":
        return {"kind": "submit", "label": ""}
    if src[0] == "fence":
        return {"kind": "host wait", "label": f"fence {op_at(model.stream, src[1]).fence}"}
    if src[0] == "idle":
        return {"kind": "host wait", "label": "idle"}
    # A semaphore signal (a queue's or a host signal_semaphore) to a batch's wait or a host wait_semaphores.
    semaphore = _semaphore_op(model, src).semaphore if src[0] == "sig" else op_at(model.stream, src[1]).semaphore
    return {"kind": "semaphore" if dst[0] == "wait" else "host wait", "label": semaphore}


MAX_QUOTED = 1000  # characters of one DOT string; Graphviz rejects a quoted string over 16384 bytes
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def _quote(text: str) -> str:
    """A DOT string: escaped, control characters shown as <U+00XX> (DOT has no escape for them), a long
    one cut and told apart from others by a digest of the whole."""
    if len(text) > MAX_QUOTED:
        text = f"{text[:MAX_QUOTED // 2]}... ({len(text)} characters, {hashlib.sha256(text.encode()).hexdigest()[:12]})"
    text = _CONTROL.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(drawn: Drawn) -> str:
    """DOT text: one cluster per queue and host thread, in program order from top to bottom."""
    g, stream = drawn.graph, drawn.stream
    title = stream.name + (" (" + ", ".join(f"{k}={v}" for k, v in drawn.params) + ")" if drawn.params else "")
    lines = ["digraph happens_before {", f"  label={_quote(title)}; labelloc=t; rankdir=TB; newrank=true;",
             '  node [fontname="Helvetica", fontsize=10, style=filled, fillcolor=white];',
             '  edge [fontname="Helvetica", fontsize=9];']
    # A queue and a thread may share an id (ids are unique within their kind) and the graph's nodes name their agent
    # by id: one cluster for both, so that no node is drawn twice (Graphviz crashed on such a graph).
    agents = list(dict.fromkeys([q.id for d in stream.devices for q in d.queues] + [t.id for t in stream.threads]))
    for i, agent in enumerate(agents):
        kind = "thread" if agent in stream.index.threads else "queue"
        lines.append(f"  subgraph cluster_{i} {{ label={_quote(f'{kind} {agent}')}; style=rounded; color=gray70;")
        for n, d in sorted(((n, d) for n, d in g.nodes(data=True) if d["agent"] == agent), key=lambda x: x[1]["seq"]):
            extra = f', color="{HIGHLIGHT}", fillcolor="#fde0dd", penwidth=2' if d["highlight"] else ""
            lines.append(f"    {_quote(n)} [label={_quote(d['label'])}, shape={d['shape']}{extra}];")
        lines.append("  }")
    for a, b, d in g.edges(data=True):
        attrs = dict(EDGE_STYLE[d["kind"]])
        if d["label"]:
            attrs["label"] = d["label"]
        lines.append(_edge(a, b, attrs))
    lines += _legend({d["kind"] for _, _, d in g.edges(data=True)}, drawn.fixes)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _edge(a: str, b: str, attrs: dict) -> str:
    return f"  {_quote(a)} -> {_quote(b)} [" + ", ".join(f"{k}={_quote(v)}" for k, v in attrs.items()) + "];"


LEGEND = {"order": "program / submission order", "submit": "a submit starts its batch",
          "semaphore": "semaphore signal -> wait", "host wait": "a signal a host wait observes",
          "missing": "a finding: the ordering that is missing"}


def _legend(kinds: set[str], fixes: tuple[tuple[str, tuple[Finding, ...]], ...]) -> list[str]:
    """A cluster with a sample edge of each kind drawn, and the fixes, each with the findings it fixes (indented
    apart from the stream's own nodes and edges)."""
    lines = [f"  subgraph cluster_legend {{ label={_quote('legend')}; style=rounded; color=gray70;",
             '      node [shape=plaintext, style="", fontsize=9];']
    for i, (kind, meaning) in enumerate((k, m) for k, m in LEGEND.items() if k in kinds):
        a, b = f"legend {i}", f"legend {i} to"
        lines.append(f"      {_quote(a)} [label={_quote(kind)}];")
        lines.append(f"      {_quote(b)} [label={_quote(meaning)}];")
        lines.append("    " + _edge(a, b, {**EDGE_STYLE[kind], "label": "", "constraint": "true"}))
    if fixes:
        text = "\n".join(f"fix {k}: {fix}\n" + "\n".join(f"  {_finding_line(f)}" for f in group)
                         for k, (fix, group) in enumerate(fixes, 1))
        lines.append(f"      {_quote('legend fixes')} [label={_quote(text)}, shape=note, style=filled, "
                     f"fillcolor=\"#fde0dd\"];")
    lines.append("  }")
    return lines


def _finding_line(f: Finding) -> str:
    """The finding, and where its run's submission order is not the walk's drawn here, that order (Finding.order)."""
    where = f.in_order()
    if f.ops is not None:
        return f"{f.kind}: {', '.join(f.ops)}{where}"
    return f"{f.kind} {f.buffer or ''}: {f.first or '(unwritten)'} -> {f.second}{where}"


def to_svg(dot: str, timeout: float = DOT_TIMEOUT) -> str:
    """SVG through Graphviz `dot`, stopped after `timeout` seconds (its layout grows faster than the graph)."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizError("Graphviz `dot` is not on PATH: install graphviz (Debian: apt-get install graphviz) "
                              "or use --format dot")
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot, capture_output=True, text=True, check=False,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GraphvizError(f"dot -Tsvg ran past its time limit ({timeout:g} s) and was stopped: use --format dot, "
                            "or draw fewer operations") from None
    if done.returncode != 0:
        raise GraphvizError(f"dot -Tsvg failed: {done.stderr.strip()}")
    return done.stdout
