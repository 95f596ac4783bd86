"""The stream a runtime records: its document (resources, command buffers, host threads) under one
lock, and the public API every writer uses (the runtime and its uploader)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..model import from_dict, ir
from ..model.refs import format_ref

__all__ = ["StreamRecord"]


class StreamRecord:
    """A `vkverify-stream/1` document being recorded. Every change takes `lock` (reentrant): a
    caller holds it across several calls that must stay together."""

    def __init__(self, name: str, queues: list[dict], lock: threading.RLock | None = None,
                 device_id: str = "gpu0") -> None:
        """queues: the one device's queues, {"id", "family"} each; device_id: the device's id in the stream."""
        self.doc = {"format": ir.FORMAT, "name": name, "devices": [{"id": device_id, "queues": queues}],
                    "buffers": [], "semaphores": [], "fences": [], "shaders": {}}
        self.command_buffers: dict[str, list[dict]] = {}
        self.threads: dict[str, list[dict]] = {}
        self.lock = lock or threading.RLock()
        self._ir: dict[str, tuple[int, tuple[ir.Command, ...]]] = {}  # command buffer -> (length, its IR)

    # ---- writing -------------------------------------------------------------------

    def next_ref(self, thread: str) -> str:
        """The reference the next op of `thread` will have (`main[3]`)."""
        with self.lock:
            return format_ref(thread, len(self.threads.get(thread, ())))

    def append_op(self, thread: str, entry: dict) -> str:
        """Append a host op (its JSON object) to `thread`; its reference."""
        with self.lock:
            ops = self.threads.setdefault(thread, [])
            ops.append(entry)
            return format_ref(thread, len(ops) - 1)

    def declare(self, kind: str, entry: dict) -> None:
        """A buffer, image, semaphore, fence or event (`kind`: the document's list, made at its first entry) is
        created."""
        with self.lock:
            self.doc.setdefault(kind, []).append(entry)

    def declare_shader(self, id: str, bindings) -> None:
        with self.lock:
            self.doc["shaders"][id] = {"bindings": list(bindings)}

    def commands_of(self, cb_id: str) -> list[dict]:
        """The command list of `cb_id` (created empty), for a builder to append to."""
        with self.lock:
            return self.command_buffers.setdefault(cb_id, [])

    def set_command_buffer(self, cb_id: str, commands: list[dict],
                           loaded: tuple[ir.Command, ...] | None = None) -> None:
        """`cb_id` holds `commands`; `loaded`: their IR where the caller has it (no loader pass)."""
        with self.lock:
            self.command_buffers[cb_id] = commands
            if loaded is not None:
                self._ir[cb_id] = (len(commands), loaded)

    def prepend_commands(self, cb_id: str, commands: list[dict]) -> None:
        """`commands` go to the head of `cb_id`, before it is recorded into a VkCommandBuffer."""
        with self.lock:
            self.command_buffers[cb_id][:0] = commands
            self._ir.pop(cb_id, None)

    def drop_command_buffer(self, cb_id: str) -> None:
        with self.lock:
            self.command_buffers.pop(cb_id, None)
            self._ir.pop(cb_id, None)

    # ---- reading -------------------------------------------------------------------

    def commands(self, cb_id: str) -> tuple[ir.Command, ...]:
        """The IR of a command buffer, through the loader (defaults, validation)."""
        with self.lock:
            dicts = self.command_buffers[cb_id]
            cached = self._ir.get(cb_id)
            if cached is None or cached[0] != len(dicts):
                doc = {**self.doc, "command_buffers": {**self._executed((cb_id,)), cb_id: dicts}}
                self._ir[cb_id] = cached = (len(dicts), from_dict(doc, f"<command buffer {cb_id}>")
                                            .index.command_buffers[cb_id].commands)
            return cached[1]

    def document(self, threads: Mapping[str, list[dict]] | None = None) -> dict:
        """A copy of the document, `threads` replacing those of the same name."""
        with self.lock:
            return {**self.doc, "command_buffers": {k: list(v) for k, v in self.command_buffers.items()},
                    "threads": {t: list(ops) for t, ops in {**self.threads, **(threads or {})}.items()}}

    def stream(self, file: str = "<runtime>") -> ir.Stream:
        """Everything recorded so far, as a validated stream."""
        with self.lock:
            return from_dict(self.document(), file)

    def loaded(self, threads: Mapping[str, list[dict]]) -> ir.Stream:
        """The resources, `threads` with these ops and the command buffers they submit, through the loader."""
        cbs = {cb for ops in threads.values() for op in ops if op["op"] == "submit"
               for b in op.get("batches", [op]) for cb in b.get("command_buffers", ())}
        with self.lock:
            doc = {**self.doc, "command_buffers": self._executed(cbs),
                   "threads": {t: list(ops) for t, ops in threads.items()}}
        return from_dict(doc, "<runtime>", schema=False)

    def _executed(self, cbs) -> dict[str, list[dict]]:
        """Copies of `cbs` and of the secondary command buffers their execute_commands run, transitively: the
        loader resolves the names an execute_commands gives."""
        out: dict[str, list[dict]] = {}
        todo = list(cbs)
        while todo:
            cb = todo.pop()
            if cb not in out and cb in self.command_buffers:
                out[cb] = list(self.command_buffers[cb])
                todo += [s for c in out[cb] if c["cmd"] == "execute_commands" for s in c["command_buffers"]]
        return out
