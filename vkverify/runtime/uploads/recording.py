"""The stream the uploader records into: the runtime's (its program's readers and
the uploads are checked together), or one of its own on a device an engine owns."""

from __future__ import annotations

from dataclasses import replace

from ...model import ir
from ..caller import caller
from ..stream_record import StreamRecord

__all__ = ["UploadRecording"]


class UploadRecording:
    """Appends the uploader's host operations (thread `thread`), declarations and
    command buffers to a stream record (the runtime's, or one of its own), through its
    public API. `rt`: the Runtime that owns the record, whose hooks (a mutator, say) decide
    the fate of the uploader's waits and landing barriers; None for a stream of its own.
    Each op and command records the program's line that caused it (`source`)."""

    def __init__(self, record: StreamRecord, buffers: dict, thread: str, rt=None) -> None:
        self.record, self.buffers, self.thread, self.rt = record, buffers, thread, rt

    @classmethod
    def of_runtime(cls, rt, thread: str) -> UploadRecording:
        return cls(rt.record, rt.buffers, thread, rt)

    @classmethod
    def own(cls, queue_id: str, thread: str = "main", name: str = "uploads") -> UploadRecording:
        """A stream holding only the uploads, on one device with one queue."""
        return cls(StreamRecord(name, [{"id": queue_id, "family": 0}]), {}, thread)

    def op(self, entry: dict) -> None:
        self.record.append_op(self.thread, {**entry, "source": caller()})

    def declare(self, key: str, entry: dict) -> None:
        self.record.declare(key, entry)

    def name_buffer(self, buf) -> None:
        """`buf` (a DeviceBuffer) is a stream buffer the program may name."""
        with self.record.lock:
            self.buffers[buf.id] = buf

    def taken(self, name: str) -> bool:
        with self.record.lock:
            return name in self.buffers

    def add_command_buffer(self, cb_id: str, commands: list[dict]) -> None:
        here = caller()
        self.record.set_command_buffer(cb_id, [c if "source" in c else {**c, "source": here} for c in commands])

    def drop_command_buffer(self, cb_id: str) -> None:
        self.record.drop_command_buffer(cb_id)

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
        return self.record.commands(cb_id)[-1]

    def stream(self) -> ir.Stream:
        return self.record.stream("<runtime>" if self.rt is not None else "<uploader>")
