"""Mutants of one stream: every operator applied to every load-bearing operation it fits.

Each candidate is checked against the happens-before model before it becomes a mutant: the
model must find a hazard in the mutant that the original does not have. A candidate it does not
(a timeline wait lowered to a value the same signal still satisfies, masks removed from a
barrier that only chains) is an equivalent mutant, listed but never run, so that every mutant
run is one a correct reader must kill. The model, not the checker, decides this: the checker
killing each mutant is then a consistency test between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from ..check import check
from ..check.events import dependencies
from ..check.hb import Model
from ..model import ir
from ..model.dump import command_to_dict, host_op_to_dict
from ..model.refs import format_ref, split_ref
from ..model.stages import EXECUTING_STAGES, STAGES
from . import operators as o
from .load_bearing import Analysis, analyze

__all__ = [
    "ACCESS_CLASSES",
    "TARGETS",
    "Equivalent",
    "Mutant",
    "barrier_edits",
    "borne_out",
    "drop_description",
    "hazards",
    "mutant_targets",
    "mutants",
    "new_hazards",
    "plain",
    "semaphore_edits",
]

TARGETS = ("raw", "waw", "war", "semaphore", "fence", "keepalive", "host")
ACCESS_CLASSES = ("raw", "war", "waw")
# Wrong stages a mask is narrowed to, each stage something executes at, tried in table order until one breaks
# an ordering.
NARROW_STAGES = tuple(s.name for s in STAGES if s.name in EXECUTING_STAGES)
HOST_WAITS = (ir.WaitFences, ir.WaitSemaphores, ir.QueueWaitIdle, ir.DeviceWaitIdle)


@dataclass(frozen=True)
class Mutant:
    id: str  # FILE:operator:op, unique and stable: sharding and the cache sort and key by it
    file: str
    targets: tuple[str, ...]
    operator: str
    op: str  # the operation it changes, by reference in the original stream
    description: str
    predicted: tuple[tuple, ...]  # hazards the model finds in the mutant, by original references
    stream: ir.Stream
    refmap: o.RefMap
    source: str | None = None  # the program's file:line of the op, where the stream records one


@dataclass(frozen=True)
class Equivalent:
    file: str
    operator: str
    op: str
    description: str


@dataclass(frozen=True)
class _Candidate:
    operator: str
    op: str
    description: str
    targets: tuple[str, ...]
    make: Callable[[], tuple[ir.Stream, o.RefMap]]


def plain(stream: ir.Stream) -> ir.Stream:
    """What is mutated: the stream itself, or a `params` stream's smallest instance (the checker
    reads a params stream's templates, which a mutation of its first instance would not change)."""
    if not stream.params:
        return stream
    return replace(stream.instances[0][1], params=(), instances=())


def mutants(stream: ir.Stream, file: str, analysis: Analysis | None = None) -> tuple[list[Mutant], list[Equivalent]]:
    """The mutants of plain(stream) (sorted by id) and the candidates the model found equivalent.

    A hazard the checker already reports on the original is not a new one: in a stream with
    findings, a mutant must break an ordering that is not already broken."""
    stream = plain(stream)
    analysis = analysis or analyze(stream)
    known = hazards(stream, analysis.model)
    found, equivalent = [], []
    for group in _candidates(stream, analysis):
        for c in group:  # alternatives: the first that breaks an ordering is the mutant
            mutated, refmap = c.make()
            predicted = new_hazards(mutated, refmap, known)
            if predicted:
                found.append(Mutant(f"{file}:{c.operator}:{c.op}", file, _targets(c, predicted), c.operator, c.op,
                                    c.description, tuple(sorted(predicted, key=str)), mutated, refmap))
                break
        else:
            if group:
                c = group[0]
                equivalent.append(Equivalent(file, c.operator, c.op, c.description))
    return sorted(found, key=lambda m: m.id), equivalent


def hazards(stream: ir.Stream, model: Model | None = None) -> set[tuple]:
    """What the stream already has, the model's hazards and the checker's findings: a mutant must add one."""
    return (model or Model(stream)).all_hazards() | {(f.kind, f.first, f.second) for f in check(stream) if f.first}


def new_hazards(mutated: ir.Stream, refmap: o.RefMap, known: set[tuple]) -> set[tuple]:
    """The model's hazards in `mutated` that `known` lacks, by the original stream's references."""
    return {_translate(h, refmap) for h in Model(mutated).all_hazards()} - known


def borne_out(m: Mutant, predicted: set[tuple]) -> tuple[str, ...]:
    """The targets of `m` that `predicted` (its hazards in a longer stream) still bears out: an access
    class only where a hazard of that class is predicted, the other targets wherever any is."""
    classes = {h[0] for h in predicted}
    return tuple(t for t in m.targets if t in classes or t not in ACCESS_CLASSES) if predicted else ()


def _translate(hazard: tuple, refmap: o.RefMap) -> tuple:
    if not refmap:  # no position moved: every reference is the original's
        return hazard
    return tuple(o.translate(x, refmap) if isinstance(x, str) and i else x for i, x in enumerate(hazard))


def _targets(c: _Candidate, predicted: set[tuple]) -> tuple[str, ...]:
    return mutant_targets(c.operator, c.targets, predicted)


def mutant_targets(operator: str, targets: tuple[str, ...], predicted: set[tuple]) -> tuple[str, ...]:
    """A barrier mutant counts for the access classes it breaks; the others for their family (`targets`)."""
    if "barrier" not in operator:
        return targets
    broken = {h[0] for h in predicted if h[0] in ACCESS_CLASSES}
    return tuple(t for t in TARGETS if t in broken or (t == "host" and "host" in targets)) or targets


def _candidates(s: ir.Stream, a: Analysis) -> Iterator[list[_Candidate]]:
    for op in sorted(a.load_bearing):
        head, rest = split_ref(op)
        owner, i = head.owner, head.index
        if owner in s.index.command_buffers:
            yield from _barrier(s, a, op, owner, i, rest)
        elif rest:
            yield from _semaphore(s, op, owner, i, rest)
        else:
            yield from _host(s, op, owner, i)
    yield from _keepalive(s, a)


def _barrier(s: ir.Stream, a: Analysis, op: str, cb: str, i: int, rest: str) -> Iterator[list[_Candidate]]:
    b = s.index.command_buffers[cb].commands[i]
    classes = a.classes(op)
    host = any(p.second.host and p.second.reads for p in a.load_bearing[op]) and "host" in _dst_stages(b)
    targets = tuple(t for t in TARGETS if t in classes or (t == "host" and host))
    for group in barrier_edits(b, op, int(rest.removeprefix(".buffers[").rstrip("]")) if rest else None):
        yield [_Candidate(operator, op, description, targets,
                          (lambda: o.drop_command(s, cb, i)) if new is None else
                          (lambda new=new: o.replace_command(s, cb, i, new)))
               for operator, description, new in group]


def barrier_edits(b: ir.Barrier | ir.SetEvent | ir.WaitEvents, op: str,
                  entry: int | None = None) -> list[list[tuple[str, str, ir.Command | None]]]:
    """The mutations of barrier `b` (reference `op`), or of its buffer barrier `entry`, or of an event's set or
    wait: per operator, its alternatives, the first that breaks an ordering being the mutant, each (operator,
    description, the command it becomes; None: dropped)."""
    what = _label(b, op)
    if isinstance(b, ir.WaitEvents):
        groups = [[("drop_wait_events", f"drop {what}", None)]]
        if any(d.src_access or d.dst_access or any(bb.src_access or bb.dst_access for bb in d.buffers)
               for d in b.dependencies):
            groups.append([("weaken_wait_events", f"remove the access masks of {what} (execution dependency only)",
                            replace(b, dependencies=tuple(o.weaken(d) for d in b.dependencies)))])
        return groups
    if isinstance(b, ir.SetEvent):
        return [[("drop_set_event", f"drop {what}", None)]]
    if entry is not None:  # one entry of a barrier with several
        return [[("drop_barrier_entry", f"drop buffer barrier entry {entry} ({b.buffers[entry].buffer}) of {what}",
                  o.drop_entry(b, entry))]]
    groups = [[("drop_barrier", f"drop {what}", None)]]
    if b.src_access or b.dst_access or any(x.src_access or x.dst_access for x in b.buffers + b.images):
        groups.append([("weaken_barrier", f"remove the access masks of {what} (execution dependency only)",
                        o.weaken(b))])
    for mask in ("src_stage", "dst_stage"):
        groups.append([(f"narrow_barrier_{mask}", f"narrow {mask} of {what} to {stage}", o.narrow(b, mask, stage))
                       for stage in NARROW_STAGES if frozenset({stage}) != getattr(b, mask)])
    return groups


def _dst_stages(b: ir.Barrier | ir.SetEvent | ir.WaitEvents) -> set[str]:
    return set().union(*(set(d.dst_stage).union(*(x.dst_stage for x in d.buffers + d.images)) for d in dependencies(b)))


def _semaphore(s: ir.Stream, op: str, thread: str, i: int, rest: str) -> Iterator[list[_Candidate]]:
    submit = s.index.threads[thread].ops[i]
    for group in semaphore_edits(submit, format_ref(thread, i), rest):
        yield [_Candidate(operator, op, description, ("semaphore",),
                          lambda new=new: o.replace_host_op(s, thread, i, new))
               for operator, description, new in group]


def semaphore_edits(submit: ir.Submit, ref: str, rest: str) -> list[list[tuple[str, str, ir.Submit]]]:
    """The mutations of the semaphore wait or signal `rest` (`.batches[0].wait[1]`) of `submit` (reference
    `ref`): per operator, its alternatives, each (operator, description, the submit it becomes)."""
    bi, kind, k = o.batch_ref(rest)
    field = "waits" if kind == "wait" else "signals"
    item = getattr(submit.batches[bi], field)[k]
    what = f"{kind} on {item.semaphore!r}" + (f" (value {item.value})" if item.value is not None else "") + f" of {ref}"

    def edited(new):
        return o.edit_batch(submit, bi, field, k, new)

    groups = [[(f"drop_{kind}", f"drop the {what}", edited(None))]]
    if kind != "wait":
        return groups
    if item.value is not None and item.value > 0:
        groups.append([("lower_wait_value", f"lower the {what} to {item.value - 1}",
                        edited(replace(item, value=item.value - 1)))])
    groups.append([("narrow_wait_stage", f"narrow the stage mask of the {what} to {stage}",
                    edited(replace(item, stage=frozenset({stage}))))
                   for stage in NARROW_STAGES if stage != "host" and frozenset({stage}) != item.stage])
    return groups


def _host(s: ir.Stream, op: str, thread: str, i: int) -> Iterator[list[_Candidate]]:
    host_op = s.index.threads[thread].ops[i]
    what = _label(host_op, op)
    if isinstance(host_op, ir.SignalSemaphore):
        yield [_Candidate("drop_signal", op, drop_description(host_op, op), ("semaphore",),
                          lambda: o.drop_host_op(s, thread, i))]
    elif isinstance(host_op, ir.HostAccess):  # flush or invalidate
        yield [_Candidate(f"drop_{host_op.op}", op, drop_description(host_op, op), ("host",),
                          lambda: o.drop_host_op(s, thread, i))]
    elif isinstance(host_op, HOST_WAITS):
        yield [_Candidate("drop_host_wait", op, drop_description(host_op, op), ("fence",),
                          lambda: o.drop_host_op(s, thread, i))]
        if isinstance(host_op, ir.WaitFences):
            reset = ir.ResetFences(host_op.fences)
            yield [_Candidate("reset_fence_before_wait", op, f"reset {', '.join(host_op.fences)} before {what}",
                              ("fence",), lambda: o.insert_host_op(s, thread, i, reset))]


def drop_description(host_op: ir.HostOp, ref: str) -> str:
    """What dropping the host op `ref` (a wait, a flush, an invalidate, a signal) is called."""
    return f"drop {_label(host_op, ref)}"


def _keepalive(s: ir.Stream, a: Analysis) -> Iterator[list[_Candidate]]:
    """Move a destroy, or a host write that reuses memory, before the latest host wait on its
    thread that alone orders it after the device work."""
    moves: dict[str, tuple[str, int, int]] = {}
    for op, pairs in a.load_bearing.items():
        head, rest = split_ref(op)
        owner, w = head.owner, head.index
        if rest or owner not in s.index.threads or not isinstance(s.index.threads[owner].ops[w], HOST_WAITS):
            continue
        for p in pairs:
            x = p.second
            second = split_ref(x.ref)[0]
            thread, i = second.owner, second.index
            host_op = s.index.threads[owner].ops[i] if thread == owner else None
            if host_op is None or w >= i or not (isinstance(host_op, ir.Destroy) or x.write):
                continue
            if x.ref not in moves or moves[x.ref][1] < w:
                moves[x.ref] = (thread, w, i)
    for ref, (thread, w, i) in sorted(moves.items()):
        ops = s.index.threads[thread].ops
        description = f"move {_label(ops[i], ref)} before {_label(ops[w], format_ref(thread, w))}"
        yield [_Candidate("move_before_wait", ref, description,
                          ("keepalive",), lambda thread=thread, i=i, w=w: o.move_host_op(s, thread, i, w))]


def _label(item, ref: str) -> str:
    kind = command_to_dict(item)["cmd"] if isinstance(item, ir.SYNC_COMMANDS) else \
        host_op_to_dict(item)["op"]
    return f"{kind} {ref}" + (f" ({item.label!r})" if item.label else "")
