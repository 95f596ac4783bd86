"""A Python builder for streams, with methods named after the Vulkan calls.

    s = Stream("copy-then-dispatch")
    s.create_buffer("A", 4096)
    cb = s.allocate_command_buffer("cb0")
    cb.cmd_fill_buffer("A", value=0).cmd_pipeline_barrier2(
        src_stage="clear", src_access="transfer_write", dst_stage="compute_shader",
        dst_access="shader_storage_read")
    s.queue_submit("q0", ["cb0"], fence="F")
    s.wait_for_fences(["F"])
    stream = s.build()          # the same IR the loader gives for the JSON
    text = dumps(stream)        # vkverify-stream/1 JSON

The builder writes the JSON document and `build()` runs it through the
loader, so a built stream is validated exactly like a file.
"""

from __future__ import annotations

from typing import Any, Iterable

from . import ir
from .loader import from_dict


def _opt(**fields: Any) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in fields.items() if v is not None}


class CommandBuffer:
    def __init__(self, commands: list[dict]) -> None:
        self._commands = commands

    def _add(self, cmd: str, **fields: Any) -> CommandBuffer:
        self._commands.append({"cmd": cmd, **_opt(**fields)})
        return self

    def cmd_copy_buffer(self, src: str, dst: str, regions: Iterable[tuple[int, int, int]] | None = None,
                        id: str | None = None, label: str | None = None) -> CommandBuffer:
        """vkCmdCopyBuffer; regions as (src_offset, dst_offset, size)."""
        regs = None if regions is None else [{"src_offset": a, "dst_offset": b, "size": n} for a, b, n in regions]
        return self._add("copy", src=src, dst=dst, regions=regs, id=id, label=label)

    def cmd_fill_buffer(self, dst: str, offset: int | None = None, size: int | None = None, value: int = 0,
                        id: str | None = None, label: str | None = None) -> CommandBuffer:
        return self._add("fill", dst=dst, offset=offset, size=size, value=value, id=id, label=label)

    def cmd_update_buffer(self, dst: str, offset: int | None = None, size: int | None = None,
                          data: dict | None = None, id: str | None = None, label: str | None = None) -> CommandBuffer:
        return self._add("update", dst=dst, offset=offset, size=size, data=data, id=id, label=label)

    def cmd_dispatch(self, shader: str, bindings: Iterable[dict | str], groups: tuple[int, ...] = (1, 1, 1),
                     push: Iterable[float] | None = None, indirect: dict | None = None,
                     id: str | None = None, label: str | None = None) -> CommandBuffer:
        """vkCmdDispatch (or vkCmdDispatchIndirect with `indirect`); a binding is a dict or a buffer id."""
        binds = [{"buffer": b} if isinstance(b, str) else b for b in bindings]
        return self._add("dispatch_indirect" if indirect else "dispatch", shader=shader, bindings=binds,
                         groups=list(groups), push=None if push is None else list(push), indirect=indirect,
                         id=id, label=label)

    def cmd_pipeline_barrier2(self, src_stage: str | Iterable[str] | None = None,
                              src_access: str | Iterable[str] | None = None,
                              dst_stage: str | Iterable[str] | None = None,
                              dst_access: str | Iterable[str] | None = None,
                              buffers: Iterable[dict] | None = None,
                              id: str | None = None, label: str | None = None) -> CommandBuffer:
        def names(x):
            return None if x is None else ([x] if isinstance(x, str) else list(x))
        return self._add("barrier", src_stage=names(src_stage), src_access=names(src_access),
                         dst_stage=names(dst_stage), dst_access=names(dst_access),
                         buffers=None if buffers is None else list(buffers), id=id, label=label)


class Stream:
    def __init__(self, name: str, description: str | None = None,
                 devices: Iterable[dict] | None = None) -> None:
        self.doc: dict[str, Any] = {"format": ir.FORMAT, "name": name}
        if description is not None:
            self.doc["description"] = description
        if devices is not None:
            self.doc["devices"] = list(devices)
        self._threads: dict[str, list[dict]] = {}

    def _list(self, key: str) -> list:
        return self.doc.setdefault(key, [])

    def create_buffer(self, id: str, size: int | None = None, memory: str = "device_local",
                      device: str | None = None, alias_of: str | None = None, offset: int | None = None,
                      sharing: str | None = None) -> Stream:
        self._list("buffers").append(_opt(id=id, size=size, memory=memory, device=device, alias_of=alias_of,
                                          offset=offset, sharing=sharing))
        return self

    def create_semaphore(self, id: str, timeline: bool = False, initial: int | None = None) -> Stream:
        self._list("semaphores").append(_opt(id=id, type="timeline" if timeline else "binary", initial=initial))
        return self

    def create_fence(self, id: str, signaled: bool = False) -> Stream:
        self._list("fences").append({"id": id, "signaled": signaled})
        return self

    def declare_shader(self, id: str, bindings: Iterable[str]) -> Stream:
        self.doc.setdefault("shaders", {})[id] = {"bindings": list(bindings)}
        return self

    def allocate_command_buffer(self, id: str) -> CommandBuffer:
        return CommandBuffer(self.doc.setdefault("command_buffers", {}).setdefault(id, []))

    def expect(self, **finding: Any) -> Stream:
        self.doc.setdefault("expect", {"findings": []})["findings"].append(finding)
        return self

    # ---- host ops (thread "main" unless `thread` is given) ---------------

    def _op(self, op: str, thread: str, **fields: Any) -> Stream:
        self._threads.setdefault(thread, []).append({"op": op, **_opt(**fields)})
        return self

    def queue_submit(self, queue: str, command_buffers: Iterable[str] = (), wait: Iterable[dict] | None = None,
                     signal: Iterable[dict] | None = None, fence: str | None = None, thread: str = "main",
                     id: str | None = None, label: str | None = None) -> Stream:
        """vkQueueSubmit2 with one batch; wait/signal entries are {"semaphore", "value"?, "stage"?}."""
        return self._op("submit", thread, queue=queue, command_buffers=list(command_buffers),
                        wait=None if wait is None else list(wait), signal=None if signal is None else list(signal),
                        fence=fence, id=id, label=label)

    def wait_for_fences(self, fences: Iterable[str], thread: str = "main", id: str | None = None) -> Stream:
        return self._op("wait_fences", thread, fences=list(fences), id=id)

    def reset_fences(self, fences: Iterable[str], thread: str = "main", id: str | None = None) -> Stream:
        return self._op("reset_fences", thread, fences=list(fences), id=id)

    def wait_semaphores(self, waits: dict[str, int], thread: str = "main", id: str | None = None) -> Stream:
        return self._op("wait_semaphores", thread, waits=[{"semaphore": s, "value": v} for s, v in waits.items()],
                        id=id)

    def signal_semaphore(self, semaphore: str, value: int, thread: str = "main", id: str | None = None) -> Stream:
        return self._op("signal_semaphore", thread, semaphore=semaphore, value=value, id=id)

    def host_write(self, buffer: str, offset: int | None = None, size: int | None = None, data: dict | None = None,
                   thread: str = "main", id: str | None = None) -> Stream:
        """A host write through a mapped pointer (memcpy into vkMapMemory's result)."""
        return self._op("host_write", thread, buffer=buffer, offset=offset, size=size, data=data, id=id)

    def host_read(self, buffer: str, offset: int | None = None, size: int | None = None,
                  thread: str = "main", id: str | None = None) -> Stream:
        return self._op("host_read", thread, buffer=buffer, offset=offset, size=size, id=id)

    def flush_mapped_memory_ranges(self, buffer: str, offset: int | None = None, size: int | None = None,
                                   thread: str = "main") -> Stream:
        return self._op("flush", thread, buffer=buffer, offset=offset, size=size)

    def invalidate_mapped_memory_ranges(self, buffer: str, offset: int | None = None, size: int | None = None,
                                        thread: str = "main") -> Stream:
        return self._op("invalidate", thread, buffer=buffer, offset=offset, size=size)

    def queue_wait_idle(self, queue: str, thread: str = "main") -> Stream:
        return self._op("queue_wait_idle", thread, queue=queue)

    def device_wait_idle(self, device: str | None = None, thread: str = "main") -> Stream:
        return self._op("device_wait_idle", thread, device=device)

    def destroy_buffer(self, buffer: str, thread: str = "main", id: str | None = None) -> Stream:
        return self._op("destroy", thread, buffer=buffer, id=id)

    # ---- output ------------------------------------------------------------

    def to_json(self) -> dict:
        return {**self.doc, "threads": {t: list(ops) for t, ops in self._threads.items()}}

    def build(self) -> ir.Stream:
        return from_dict(self.to_json(), f"<builder {self.doc['name']}>")
