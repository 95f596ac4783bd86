"""Pure edits of an ir.Stream: each returns the new stream and how its references map back.

A RefMap says, per command buffer or thread whose positions changed, which original position
each new position holds (None: an inserted op), so a finding on the mutant can be compared with
the original stream's findings by the original's references.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import ir
from ..model.refs import format_ref, map_positions, split_ref

__all__ = ["RefMap", "batch_ref", "drop", "drop_command", "drop_entry", "drop_host_op", "edit_batch", "insert_host_op",
           "move_host_op", "narrow", "replace_command", "replace_host_op", "translate", "weaken", "with_command_buffer"]

RefMap = dict[str, tuple[int | None, ...]]


def translate(ref: str, refmap: RefMap) -> str:
    """A mutant's reference (`cb0[2]`, `cb0[2]@main[5]`) in the original stream's positions."""
    def back(owner: str, i: int) -> str | None:
        if owner not in refmap:
            return None
        old = refmap[owner][i] if i < len(refmap[owner]) else None
        return format_ref(owner, "new" if old is None else old)
    return map_positions(ref, back)


def _positions(n: int, drop: int | None = None, insert: int | None = None) -> tuple[int | None, ...]:
    old = [i for i in range(n) if i != drop]
    if insert is not None:
        old.insert(insert, None)
    return tuple(old)


def with_command_buffer(s: ir.Stream, cb: ir.CommandBuffer) -> ir.Stream:
    """`s` with the command buffer of cb's id replaced by `cb`."""
    return replace(s, command_buffers=tuple(cb if c.id == cb.id else c for c in s.command_buffers), expect=None)


def _with_commands(s: ir.Stream, cb: str, commands: tuple[ir.Command, ...]) -> ir.Stream:
    return with_command_buffer(s, replace(s.index.command_buffers[cb], commands=commands))


def _with_ops(s: ir.Stream, thread: str, ops: tuple[ir.HostOp, ...]) -> ir.Stream:
    return replace(s, threads=tuple(replace(t, ops=ops) if t.id == thread else t for t in s.threads), expect=None)


def drop_command(s: ir.Stream, cb: str, i: int) -> tuple[ir.Stream, RefMap]:
    commands = s.index.command_buffers[cb].commands
    return _with_commands(s, cb, commands[:i] + commands[i + 1:]), {cb: _positions(len(commands), drop=i)}


def replace_command(s: ir.Stream, cb: str, i: int, cmd: ir.Command) -> tuple[ir.Stream, RefMap]:
    commands = s.index.command_buffers[cb].commands
    return _with_commands(s, cb, commands[:i] + (cmd,) + commands[i + 1:]), {}


def drop_host_op(s: ir.Stream, thread: str, i: int) -> tuple[ir.Stream, RefMap]:
    ops = s.index.threads[thread].ops
    return _with_ops(s, thread, ops[:i] + ops[i + 1:]), {thread: _positions(len(ops), drop=i)}


def insert_host_op(s: ir.Stream, thread: str, i: int, op: ir.HostOp) -> tuple[ir.Stream, RefMap]:
    ops = s.index.threads[thread].ops
    return _with_ops(s, thread, ops[:i] + (op,) + ops[i:]), {thread: _positions(len(ops), insert=i)}


def move_host_op(s: ir.Stream, thread: str, i: int, j: int) -> tuple[ir.Stream, RefMap]:
    """Move the op at position i to position j < i."""
    ops = s.index.threads[thread].ops
    moved = ops[:j] + (ops[i],) + ops[j:i] + ops[i + 1:]
    return _with_ops(s, thread, moved), {thread: tuple(range(j)) + (i,) + tuple(range(j, i)) +
                                         tuple(range(i + 1, len(ops)))}


def replace_host_op(s: ir.Stream, thread: str, i: int, op: ir.HostOp) -> tuple[ir.Stream, RefMap]:
    ops = s.index.threads[thread].ops
    return _with_ops(s, thread, ops[:i] + (op,) + ops[i + 1:]), {}


# ---- edits of one operation ----------------------------------------------------


def weaken(b: ir.Barrier) -> ir.Barrier:
    """Only the execution dependency stays: no access masks anywhere in the barrier."""
    none = {"src_access": frozenset(), "dst_access": frozenset()}
    return replace(b, **none, buffers=tuple(replace(bb, **none) for bb in b.buffers),
                   images=tuple(replace(ib, **none) for ib in b.images))


def narrow(b: ir.Barrier, mask: str, stage: str) -> ir.Barrier:
    """Replace the source or destination stage mask (`mask`: src_stage | dst_stage) by one stage."""
    one = {mask: frozenset({stage})}
    return replace(b, **one, buffers=tuple(replace(bb, **one) for bb in b.buffers),
                   images=tuple(replace(ib, **one) for ib in b.images))


def drop_entry(b: ir.Barrier, k: int) -> ir.Barrier:
    return replace(b, buffers=b.buffers[:k] + b.buffers[k + 1:])


def edit_batch(op: ir.Submit, bi: int, field: str, k: int, new: ir.SemaphoreOp | None) -> ir.Submit:
    """Replace (or, with new None, drop) the k-th wait or signal (`field`: waits | signals) of a batch."""
    batch = op.batches[bi]
    items = getattr(batch, field)
    items = items[:k] + ((new,) if new is not None else ()) + items[k + 1:]
    return replace(op, batches=op.batches[:bi] + (replace(batch, **{field: items}),) + op.batches[bi + 1:])


def batch_ref(rest: str) -> tuple[int, str, int]:
    """`.batches[0].wait[1]` -> (0, "wait", 1)."""
    batch, item = rest.strip(".").split(".")
    kind, k = item.rstrip("]").split("[")
    return int(batch.removeprefix("batches[").rstrip("]")), kind, int(k)


def drop(s: ir.Stream, op: str) -> tuple[ir.Stream, RefMap]:
    """`s` without the synchronization operation `op`, named as the load-bearing analysis names it: a barrier
    (`cb0[1]`), one buffer barrier of it (`cb0[1].buffers[0]`), a semaphore wait or signal of a submit
    (`main[2].batches[0].wait[0]`) or a host op (`main[3]`)."""
    head, rest = split_ref(op)
    if head.owner in s.index.command_buffers:
        if not rest:
            return drop_command(s, head.owner, head.index)
        barrier = s.index.command_buffers[head.owner].commands[head.index]
        k = int(rest.removeprefix(".buffers[").rstrip("]"))
        return replace_command(s, head.owner, head.index, drop_entry(barrier, k))
    if not rest:
        return drop_host_op(s, head.owner, head.index)
    bi, kind, k = batch_ref(rest)
    submit = s.index.threads[head.owner].ops[head.index]
    return replace_host_op(s, head.owner, head.index,
                           edit_batch(submit, bi, "waits" if kind == "wait" else "signals", k, None))
