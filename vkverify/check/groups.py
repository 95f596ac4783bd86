"""Findings grouped by root cause: one missing dependency repeated over submits, frames and tokens.

Two findings of a stream are in one group when they have the same kind, the same buffer, the same program
point for each of their operations and the same fix once the finding's own operations are taken out of it
(docs/format.md, Groups). A program point is what stays the same when a program repeats itself: the
operation's kind (a dispatch with its shader), its stage and access in the finding, and the program's source
line where the stream records one; never its position in the stream, which every repetition changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import ir
from ..model.dump import command_to_dict, host_op_to_dict
from ..model.refs import parse_ref
from .explain import op_at
from .findings import Finding
from .params import instance

__all__ = ["Group", "group"]


@dataclass(frozen=True)
class Group:
    id: int  # 1-based, in the order of the groups' first findings
    findings: tuple[int, ...]  # the members, numbered from 1 in the stream's findings (as `#k` and witness_same_as)
    points: tuple[str, ...]  # the program point of each operation: first, second (or each of `ops`)

    @property
    def first(self) -> int:
        return self.findings[0]

    @property
    def last(self) -> int:
        return self.findings[-1]


def _refs(f: Finding) -> tuple[str | None, ...]:
    return (f.first, f.second) if f.ops is None else f.ops


def point(stream: ir.Stream | None, ref: str | None, access: str | None, named: dict | None = None) -> str:
    """`copy copy/transfer_write`, `dispatch k compute_shader/shader_storage_read at app.py:12`, `main: host_read
    host/host_read`, `main: submit to q0`; `-` for the missing first operation of an uninitialized read. `named`:
    the points of commands already named, by the command and access (a command's point is its own, wherever it
    runs; a host op's names its thread as well)."""
    if ref is None:
        return "-"
    op = None if stream is None else op_at(stream, ref)
    if named is None or not isinstance(op, ir.Command):
        return _point(op, ref, access)
    key = (id(op), access)
    if key not in named:
        named[key] = _point(op, ref, access)
    return named[key]


def _point(op: ir.Command | ir.HostOp | None, ref: str, access: str | None) -> str:
    """The program point of `op`, which `ref` names (None: an operation the stream does not hold)."""
    if op is None:
        what = []
    elif isinstance(op, ir.Dispatch):
        what = [command_to_dict(op)["cmd"], op.shader]
    elif isinstance(op, ir.Command):
        what = [command_to_dict(op)["cmd"]]
    else:  # a host op: its thread is part of the program, its position in it is not
        what = [f"{parse_ref(ref).owner}:", host_op_to_dict(op)["op"]] + \
            ([f"to {op.queue}"] if isinstance(op, ir.Submit) else [])
    source = getattr(op, "source", None)
    return " ".join(what + ([access] if access else []) + ([f"at {source}"] if source else []))


def _fix_without_refs(f: Finding) -> str:
    """The fix with the finding's own references replaced by their roles: the same barrier, wait or semaphore
    wherever the pair repeats."""
    roles = {r: f"<{i}>" for i, r in enumerate(_refs(f)) if r}
    fix = f.fix
    for ref in sorted(roles, key=len, reverse=True):  # `cb0[2]@main[5]` before the `main[5]` in it
        fix = fix.replace(ref, roles[ref])
    return fix


def group(stream: ir.Stream | None, findings: list[Finding]) -> tuple[Group, ...]:
    """The findings' groups, in the order of their first findings; `stream` names the operations' kinds and
    source lines (without it, only the accesses are the points)."""
    if stream is not None and findings:  # a params stream's findings are about one instance: name its operations
        stream = instance(stream, findings[0].params)
    members: dict[tuple, list[int]] = {}
    points: dict[tuple, tuple[str, ...]] = {}
    named: dict = {}  # the stream's commands, alive while it is, are the keys' ids
    for number, f in enumerate(findings, 1):
        accesses = (f.first_access, f.second_access) if f.ops is None else (None,) * len(f.ops)
        at = tuple(point(stream, ref, access, named) for ref, access in zip(_refs(f), accesses))
        key = (f.kind, f.buffer, at, _fix_without_refs(f))
        members.setdefault(key, []).append(number)
        points.setdefault(key, at)
    return tuple(Group(i, tuple(numbers), points[key]) for i, (key, numbers) in enumerate(members.items(), 1))
