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
loader, so a built stream is validated exactly like a file. Each method checks
the Python types of its arguments first: a wrong one raises UsageError naming
the method and the argument (a string where a list of ids goes is not taken as
a list of one-character ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from . import ir
from .errors import UsageError
from .loader import from_dict

__all__ = ["CommandBuffer", "Stream"]


def _opt(**fields: Any) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in fields.items() if v is not None}


def _type_name(value: Any) -> str:
    return f"the string {value!r}" if isinstance(value, str) else f"a {type(value).__name__}"


def _str(where: str, value: Any, optional: bool = False) -> Any:
    if value is None and optional or isinstance(value, str) and value:
        return value
    raise UsageError(where, f"expected a non-empty str, got {_type_name(value) if value != '' else 'an empty one'}")


def _int(where: str, value: Any, optional: bool = False) -> Any:
    if value is None and optional or isinstance(value, int) and not isinstance(value, bool):
        return value
    raise UsageError(where, f"expected an int, got {_type_name(value)}")


def _list(where: str, value: Any, item: Any, optional: bool = False) -> list | None:
    """`value` as a list whose items each pass `item(where[i], x)`; a str or a dict is no list here."""
    if value is None and optional:
        return None
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        hint = f" (write [{value!r}])" if isinstance(value, str) else ""
        raise UsageError(where, f"expected a list, got {_type_name(value)}{hint}")
    return [item(f"{where}[{i}]", x) for i, x in enumerate(value)]


def _dict(where: str, value: Any, optional: bool = False) -> Any:
    if value is None and optional or isinstance(value, dict):
        return value
    raise UsageError(where, f"expected a dict, got {_type_name(value)}")


def _names(where: str, value: Any) -> list[str] | None:
    """Stage or access names: one str, or a list of them."""
    return [_str(where, value)] if isinstance(value, str) else _list(where, value, _str, optional=True)


def _bool(where: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise UsageError(where, f"expected a bool, got {_type_name(value)}")


def _range(where: str, buffer: Any, offset: Any, size: Any) -> dict:
    return {"buffer": _str(f"{where}(buffer)", buffer), "offset": _int(f"{where}(offset)", offset, True),
            "size": _int(f"{where}(size)", size, True)}


def _text(where: str, value: Any, optional: bool = False) -> Any:
    """A name, label or description: any str."""
    if value is None and optional or isinstance(value, str):
        return value
    raise UsageError(where, f"expected a str, got {_type_name(value)}")


def _tags(where: str, id: Any, label: Any = None) -> dict:
    return {"id": _str(f"{where}(id)", id, True), "label": _text(f"{where}(label)", label, True)}


class CommandBuffer:
    def __init__(self, commands: list[dict]) -> None:
        self._commands = commands

    def _add(self, cmd: str, **fields: Any) -> CommandBuffer:
        self._commands.append({"cmd": cmd, **_opt(**fields)})
        return self

    def cmd_copy_buffer(self, src: str, dst: str, regions: Iterable[tuple[int, int, int]] | None = None,
                        id: str | None = None, label: str | None = None) -> CommandBuffer:
        """vkCmdCopyBuffer; regions as (src_offset, dst_offset, size)."""
        def region(where: str, r: Any) -> dict:
            if not isinstance(r, (tuple, list)) or len(r) != 3:
                raise UsageError(where, f"expected (src_offset, dst_offset, size), got {_type_name(r)}")
            a, b, n = (_int(where, x) for x in r)
            return {"src_offset": a, "dst_offset": b, "size": n}
        where = "cmd_copy_buffer"
        regs = _list(f"{where}(regions)", regions, region, optional=True)
        return self._add("copy", src=_str(f"{where}(src)", src), dst=_str(f"{where}(dst)", dst), regions=regs,
                         **_tags(where, id, label))

    def cmd_fill_buffer(self, dst: str, offset: int | None = None, size: int | None = None, value: int = 0,
                        id: str | None = None, label: str | None = None) -> CommandBuffer:
        where = "cmd_fill_buffer"
        return self._add("fill", dst=_str(f"{where}(dst)", dst), offset=_int(f"{where}(offset)", offset, True),
                         size=_int(f"{where}(size)", size, True), value=_int(f"{where}(value)", value),
                         **_tags(where, id, label))

    def cmd_update_buffer(self, dst: str, offset: int | None = None, size: int | None = None,
                          data: dict | None = None, id: str | None = None, label: str | None = None) -> CommandBuffer:
        where = "cmd_update_buffer"
        return self._add("update", dst=_str(f"{where}(dst)", dst), offset=_int(f"{where}(offset)", offset, True),
                         size=_int(f"{where}(size)", size, True), data=_dict(f"{where}(data)", data, True),
                         **_tags(where, id, label))

    def cmd_dispatch(self, shader: str, bindings: Iterable[dict | str], groups: tuple[int, ...] = (1, 1, 1),
                     push: Iterable[float] | None = None, indirect: dict | None = None,
                     id: str | None = None, label: str | None = None) -> CommandBuffer:
        """vkCmdDispatch (or vkCmdDispatchIndirect with `indirect`); a binding is a dict or a buffer id."""
        where = "cmd_dispatch"
        binds = _list(f"{where}(bindings)", bindings, lambda w, b: {"buffer": b} if isinstance(b, str) and b
                      else _dict(w, b))

        def number(w: str, x: Any) -> Any:
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                return x
            raise UsageError(w, f"expected a number, got {_type_name(x)}")
        return self._add("dispatch_indirect" if indirect else "dispatch", shader=_str(f"{where}(shader)", shader),
                         bindings=binds, groups=_list(f"{where}(groups)", groups, _int),
                         push=_list(f"{where}(push)", push, number, optional=True),
                         indirect=_dict(f"{where}(indirect)", indirect, True), **_tags(where, id, label))

    def cmd_pipeline_barrier2(self, src_stage: str | Iterable[str] | None = None,
                              src_access: str | Iterable[str] | None = None,
                              dst_stage: str | Iterable[str] | None = None,
                              dst_access: str | Iterable[str] | None = None,
                              buffers: Iterable[dict] | None = None,
                              id: str | None = None, label: str | None = None) -> CommandBuffer:
        where = "cmd_pipeline_barrier2"
        return self._add("barrier", src_stage=_names(f"{where}(src_stage)", src_stage),
                         src_access=_names(f"{where}(src_access)", src_access),
                         dst_stage=_names(f"{where}(dst_stage)", dst_stage),
                         dst_access=_names(f"{where}(dst_access)", dst_access),
                         buffers=_list(f"{where}(buffers)", buffers, _dict, optional=True), **_tags(where, id, label))


class Stream:
    def __init__(self, name: str, description: str | None = None,
                 devices: Iterable[dict] | None = None) -> None:
        self.doc: dict[str, Any] = {"format": ir.FORMAT, "name": _text("Stream(name)", name)}
        if description is not None:
            self.doc["description"] = _text("Stream(description)", description)
        if devices is not None:
            self.doc["devices"] = _list("Stream(devices)", devices, _dict)
        self._threads: dict[str, list[dict]] = {}

    def _list(self, key: str) -> list:
        return self.doc.setdefault(key, [])

    def create_buffer(self, id: str, size: int | None = None, memory: str = "device_local",
                      device: str | None = None, alias_of: str | None = None, offset: int | None = None,
                      sharing: str | None = None) -> Stream:
        w = "create_buffer"
        self._list("buffers").append(_opt(
            id=_str(f"{w}(id)", id), size=_int(f"{w}(size)", size, True), memory=_str(f"{w}(memory)", memory),
            device=_str(f"{w}(device)", device, True), alias_of=_str(f"{w}(alias_of)", alias_of, True),
            offset=_int(f"{w}(offset)", offset, True), sharing=_str(f"{w}(sharing)", sharing, True)))
        return self

    def create_semaphore(self, id: str, timeline: bool = False, initial: int | None = None) -> Stream:
        w = "create_semaphore"
        kind = "timeline" if _bool(f"{w}(timeline)", timeline) else "binary"
        self._list("semaphores").append(_opt(id=_str(f"{w}(id)", id), type=kind,
                                             initial=_int(f"{w}(initial)", initial, True)))
        return self

    def create_fence(self, id: str, signaled: bool = False) -> Stream:
        self._list("fences").append({"id": _str("create_fence(id)", id),
                                     "signaled": _bool("create_fence(signaled)", signaled)})
        return self

    def declare_shader(self, id: str, bindings: Iterable[str]) -> Stream:
        self.doc.setdefault("shaders", {})[_str("declare_shader(id)", id)] = {
            "bindings": _list("declare_shader(bindings)", bindings, _str)}
        return self

    def allocate_command_buffer(self, id: str) -> CommandBuffer:
        return CommandBuffer(self.doc.setdefault("command_buffers", {}).setdefault(
            _str("allocate_command_buffer(id)", id), []))

    def expect(self, **finding: Any) -> Stream:
        self.doc.setdefault("expect", {"findings": []})["findings"].append(finding)
        return self

    # ---- host ops (thread "main" unless `thread` is given) ---------------

    def _op(self, op: str, thread: str, **fields: Any) -> Stream:
        self._threads.setdefault(_str(f"{op}(thread)", thread), []).append({"op": op, **_opt(**fields)})
        return self

    def queue_submit(self, queue: str, command_buffers: Iterable[str] = (), wait: Iterable[dict] | None = None,
                     signal: Iterable[dict] | None = None, fence: str | None = None, thread: str = "main",
                     id: str | None = None, label: str | None = None) -> Stream:
        """vkQueueSubmit2 with one batch; wait/signal entries are {"semaphore", "value"?, "stage"?}."""
        w = "queue_submit"
        return self._op("submit", thread, queue=_str(f"{w}(queue)", queue),
                        command_buffers=_list(f"{w}(command_buffers)", command_buffers, _str),
                        wait=_list(f"{w}(wait)", wait, _dict, optional=True),
                        signal=_list(f"{w}(signal)", signal, _dict, optional=True),
                        fence=_str(f"{w}(fence)", fence, True), **_tags(w, id, label))

    def wait_for_fences(self, fences: Iterable[str], thread: str = "main", id: str | None = None) -> Stream:
        return self._op("wait_fences", thread, fences=_list("wait_for_fences(fences)", fences, _str),
                        **_tags("wait_for_fences", id))

    def reset_fences(self, fences: Iterable[str], thread: str = "main", id: str | None = None) -> Stream:
        return self._op("reset_fences", thread, fences=_list("reset_fences(fences)", fences, _str),
                        **_tags("reset_fences", id))

    def wait_semaphores(self, waits: dict[str, int], thread: str = "main", id: str | None = None) -> Stream:
        w = "wait_semaphores"
        return self._op(w, thread, waits=[{"semaphore": _str(f"{w}(waits)", s), "value": _int(f"{w}(waits)[{s!r}]", v)}
                                          for s, v in _dict(f"{w}(waits)", waits).items()], **_tags(w, id))

    def signal_semaphore(self, semaphore: str, value: int, thread: str = "main", id: str | None = None) -> Stream:
        w = "signal_semaphore"
        return self._op(w, thread, semaphore=_str(f"{w}(semaphore)", semaphore), value=_int(f"{w}(value)", value),
                        **_tags(w, id))

    def host_write(self, buffer: str, offset: int | None = None, size: int | None = None, data: dict | None = None,
                   thread: str = "main", id: str | None = None) -> Stream:
        """A host write through a mapped pointer (memcpy into vkMapMemory's result)."""
        return self._op("host_write", thread, **_range("host_write", buffer, offset, size),
                        data=_dict("host_write(data)", data, True), **_tags("host_write", id))

    def host_read(self, buffer: str, offset: int | None = None, size: int | None = None,
                  thread: str = "main", id: str | None = None) -> Stream:
        return self._op("host_read", thread, **_range("host_read", buffer, offset, size), **_tags("host_read", id))

    def flush_mapped_memory_ranges(self, buffer: str, offset: int | None = None, size: int | None = None,
                                   thread: str = "main") -> Stream:
        return self._op("flush", thread, **_range("flush_mapped_memory_ranges", buffer, offset, size))

    def invalidate_mapped_memory_ranges(self, buffer: str, offset: int | None = None, size: int | None = None,
                                        thread: str = "main") -> Stream:
        return self._op("invalidate", thread, **_range("invalidate_mapped_memory_ranges", buffer, offset, size))

    def queue_wait_idle(self, queue: str, thread: str = "main") -> Stream:
        return self._op("queue_wait_idle", thread, queue=_str("queue_wait_idle(queue)", queue))

    def device_wait_idle(self, device: str | None = None, thread: str = "main") -> Stream:
        return self._op("device_wait_idle", thread, device=_str("device_wait_idle(device)", device, True))

    def destroy_buffer(self, buffer: str, thread: str = "main", id: str | None = None) -> Stream:
        return self._op("destroy", thread, buffer=_str("destroy_buffer(buffer)", buffer), **_tags("destroy_buffer", id))

    # ---- output ------------------------------------------------------------

    def to_json(self) -> dict:
        return {**self.doc, "threads": {t: list(ops) for t, ops in self._threads.items()}}

    def build(self) -> ir.Stream:
        return from_dict(self.to_json(), f"<builder {self.doc['name']}>")
