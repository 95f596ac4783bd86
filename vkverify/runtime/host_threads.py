"""A stream's host threads as Python threads: each thread's ops in program order, one failure
stopping the others' waits."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

from ..model import ir
from ..model.refs import format_ref
from .errors import RuntimeFault

__all__ = ["run_concurrently", "run_thread_ops"]


def run_thread_ops(execute, stream: ir.Stream, thread: ir.Thread, reads: dict[str, str]) -> None:
    """A stream thread's ops in program order through `execute(thread, op, submissions)`; each
    host_read's digest lands in `reads` under its reference."""
    for i, op in enumerate(thread.ops):
        ref = format_ref(thread.id, i)
        # A secondary command buffer run in several submissions is named (and recorded) per submission too.
        at = {run: ref for b in op.batches for cb in b.command_buffers for run in stream.index.executed(cb)
              if run in stream.index.resubmitted} if isinstance(op, ir.Submit) else None
        out = execute(thread.id, op, at)
        if isinstance(op, ir.HostAccess) and op.op == "host_read":
            reads[ref] = hashlib.sha256(out).hexdigest()


def run_concurrently(work: list[tuple[Callable, object, str]], aborted: threading.Event) -> None:
    """Each `(function, argument, name)` on a thread of its own named `vkverify-<name>`. The first
    failure sets `aborted`, so the others stop waiting; once all have ended it is raised (a
    RuntimeFault before any other error)."""
    errors: list[BaseException] = []

    def guarded(function, argument) -> None:
        try:
            function(argument)
        except BaseException as error:  # noqa: BLE001 - reported by the caller; the others stop waiting
            errors.append(error)
            aborted.set()

    workers = [threading.Thread(target=guarded, args=(function, argument), name=f"vkverify-{name}")
               for function, argument, name in work]
    for w in workers:
        w.start()
    try:
        for w in workers:
            w.join()
    except BaseException:  # --timeout or ^C here: the workers stop waiting before the device is closed under them
        aborted.set()
        for w in workers:
            w.join()
        raise
    if errors:
        raise next((e for e in errors if isinstance(e, RuntimeFault)), errors[0])
