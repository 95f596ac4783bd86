"""Runtime(barriers="auto"): the pipeline barriers of a program's command buffers placed for it, at submit.

A command buffer the program records (`Runtime.command_buffer`), submitted for the first time, gets a full barrier
before each of its commands (every stage and access to every stage and access), and `vkverify optimize`'s analysis
(check/optimize.py) over everything recorded so far plus this submit removes each one that orders no conflicting
pair and narrows the rest to the stages and accesses of the pairs they order: the fewest global barriers, each
proved needed by a check of the stream without it, each as narrow as its pairs. Barriers the program recorded
itself are candidates like the inserted ones. What the host will read comes after the submit, so it cannot be
proved then: a command buffer that writes host-visible memory ends with a barrier from those writes to the host
(spec 7.9 "Host Write Ordering Guarantees" and 7.1.3: a fence wait makes writes visible to the host only through
such a dependency).

Limits: a barrier orders work on its own queue only; what another queue or the host does with the same bytes
needs a semaphore, fence or host wait that the program still states (the online check and `vkverify check`
report what is missing). A command buffer is placed at its first submit, in that submit's context: submitted
again later it keeps those barriers (the online check, VKVERIFY_CHECK=1, checks each submit). The uploader's
own command buffers keep theirs. Each placement checks the whole recorded stream a few times: meant for tests
and small programs, not a hot path.
"""

from __future__ import annotations

from dataclasses import replace

from ..check.optimize import optimize
from ..model import ir
from ..model.accesses import command_accesses
from ..model.dump import command_to_dict, host_op_to_dict

__all__ = ["FULL_BARRIER", "AutoBarriers"]

# Spec 7.6.2: every command stage; memory_read / memory_write cover every access type of them.
FULL_BARRIER = ir.Barrier(frozenset({"all_commands"}), frozenset({"memory_write"}), frozenset({"all_commands"}),
                          frozenset({"memory_read", "memory_write"}), label="auto barrier")


class AutoBarriers:
    """The hook (runtime hooks protocol: `before(thread, op)`, `close()`) that places the barriers of each
    command buffer the program records, at its first submit."""

    def __init__(self, runtime) -> None:
        self.runtime = runtime
        self.placed: set[str] = set()

    def before(self, thread: str, op: ir.HostOp) -> ir.HostOp:
        if isinstance(op, ir.Submit):
            new = [cb for cb in dict.fromkeys(c for b in op.batches for c in b.command_buffers)
                   if cb in self.runtime.recorders and cb not in self.placed and not self.runtime.was_recorded(cb)]
            if new:
                self._place(thread, op, new)
                self.placed.update(new)
        return op

    def close(self) -> None:
        """Nothing held: the placed barriers are in the recorded stream."""

    def _place(self, thread: str, op: ir.Submit, cbs: list[str]) -> None:
        record = self.runtime.record
        with record.lock:
            for cb in cbs:  # each barrier carries the line of the command it guards: where a finding points
                record.set_command_buffer(cb, [d for c in record.commands_of(cb) for d in (
                    command_to_dict(replace(FULL_BARRIER, source=c.get("source"))), c)])
            threads = {t: list(ops) for t, ops in record.threads.items()}
            threads.setdefault(thread, []).append(host_op_to_dict(op))
            optimized = optimize(record.loaded(threads)).stream
            for cb in optimized.command_buffers:
                if cb.id in cbs:
                    commands = cb.commands + _to_host(optimized, cb.commands)
                    record.set_command_buffer(cb.id, [command_to_dict(c) for c in commands], commands)


def _to_host(stream: ir.Stream, commands: tuple[ir.Command, ...]) -> tuple[ir.Barrier, ...]:
    """A barrier from the writes of `commands` to host-visible memory to the host's reads and writes, or none."""
    index = stream.index
    writes = {(stage, write) for c in commands for stage, _, write, buffer, *_ in command_accesses(c)
              if write is not None and index.buffers[index.root(buffer)[0]].memory in ir.HOST_VISIBLE_KINDS}
    if not writes:
        return ()
    return (ir.Barrier(frozenset(w[0] for w in writes), frozenset(w[1] for w in writes), frozenset({"host"}),
                       frozenset({"host_read", "host_write"}), label="auto barrier",
                       source=commands[-1].source),)

