"""The stream the uploader records into: the runtime's (its program's readers and
the uploads are checked together), or one of its own on a device an engine owns."""

from __future__ import annotations

import threading
from dataclasses import replace

from ...model import from_dict, ir
from ..caller import caller

__all__ = ["Recording"]


class Recording:
    """Appends the uploader's host operations (thread `thread`), declarations and
    command buffers to a stream document, under the lock of whoever owns it.
    `rt`: the Runtime that owns the document, whose hooks (a mutator, say) decide the fate
    of the uploader's waits and landing barriers; None for a stream of its own. Each op and
    command records the program's line that caused it (`source`)."""

    def __init__(self, doc: dict, threads: dict, command_buffers: dict, buffers: dict, lock, thread: str,
                 rt=None) -> None:
        self.doc, self.threads, self.command_buffers, self.buffers = doc, threads, command_buffers, buffers
        self.lock, self.thread, self.rt = lock, thread, rt

    @classmethod
    def of_runtime(cls, rt, thread: str) -> Recording:
        return cls(rt.doc, rt.threads, rt.command_buffers, rt.buffers, rt._lock, thread, rt)

    @classmethod
    def own(cls, queue_id: str, thread: str = "main", name: str = "uploads") -> Recording:
        """A stream holding only the uploads, on one device with one queue."""
        doc = {"format": ir.FORMAT, "name": name,
               "devices": [{"id": "gpu0", "queues": [{"id": queue_id, "family": 0}]}],
               "buffers": [], "semaphores": [], "fences": [], "shaders": {}}
        return cls(doc, {}, {}, {}, threading.RLock(), thread)

    def op(self, entry: dict) -> None:
        with self.lock:
            self.threads.setdefault(self.thread, []).append({**entry, "source": caller()})

    def declare(self, key: str, entry: dict) -> None:
        with self.lock:
            self.doc[key].append(entry)

    def name_buffer(self, buf) -> None:
        """`buf` (a DeviceBuffer) is a stream buffer the program may name."""
        with self.lock:
            self.buffers[buf.id] = buf

    def taken(self, name: str) -> bool:
        with self.lock:
            return name in self.buffers

    def add_command_buffer(self, cb_id: str, commands: list[dict]) -> None:
        with self.lock:
            here = caller()
            self.command_buffers[cb_id] = [c if "source" in c else {**c, "source": here} for c in commands]

    def drop_command_buffer(self, cb_id: str) -> None:
        with self.lock:
            self.command_buffers.pop(cb_id, None)

    def keeps(self, op: ir.HostOp) -> bool:
        """False where the runtime's hooks drop `op` from the stream."""
        return self.rt is None or self.rt.before(self.thread, replace(op, source=caller()), uploads=False) is not None

    def last_command(self, cb_id: str, submit: ir.Submit, default: ir.Command) -> ir.Command:
        """The last command of `cb_id` as the runtime's hooks leave it at `submit` (a mutator may drop,
        weaken or narrow it); `default` where there are none, without loading the command buffer
        through the loader (~1 ms a slot)."""
        if self.rt is None or not self.rt.hooks:
            return default
        self.rt.before(self.thread, replace(submit, source=caller()), uploads=False)
        return self.rt._commands(cb_id)[-1]

    def stream(self) -> ir.Stream:
        if self.rt is not None:
            return self.rt.stream()
        with self.lock:
            doc = {**self.doc, "command_buffers": {k: list(v) for k, v in self.command_buffers.items()},
                   "threads": {t: list(ops) for t, ops in self.threads.items()}}
            return from_dict(doc, "<uploader>")
