"""Write the IR back out as `vkverify-stream/1` JSON (load(dump(s)) == s)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

import orjson

from . import ir

__all__ = ["Encoded", "command_to_dict", "document_chunks", "dump_chunks", "dumps", "host_op_to_dict", "to_dict"]


def _tag(item: Any) -> dict:
    return {k: v for k, v in (("id", item.id), ("label", item.label), ("source", item.source)) if v is not None}


def _names(names: frozenset[str]) -> list[str]:
    return sorted(names)


def _data(d: ir.Data | None) -> dict:
    if d is None:
        return {}
    return {"data": {k: v for k, v in (("pattern", d.pattern), ("value", d.value), ("seed", d.seed),
                                          ("base64", d.base64)) if v is not None}}


def _masks(x: ir.Barrier | ir.BufferBarrier) -> dict:
    return {"src_stage": _names(x.src_stage), "src_access": _names(x.src_access),
            "dst_stage": _names(x.dst_stage), "dst_access": _names(x.dst_access)}


def command_to_dict(c: ir.Command) -> dict:
    if isinstance(c, ir.Copy):
        out = {"cmd": "copy", "src": c.src, "dst": c.dst,
               "regions": [{"src_offset": r.src_offset, "dst_offset": r.dst_offset, "size": r.size} for r in c.regions]}
    elif isinstance(c, ir.Fill):
        out = {"cmd": "fill", "dst": c.dst, "offset": c.offset, "size": c.size, "value": c.value}
    elif isinstance(c, ir.Update):
        out = {"cmd": "update", "dst": c.dst, "offset": c.offset, "size": c.size, **_data(c.data)}
    elif isinstance(c, ir.Dispatch):
        out = {"cmd": "dispatch" if c.indirect is None else "dispatch_indirect", "shader": c.shader,
               "bindings": [{"buffer": b.buffer, "offset": b.offset, "size": b.size, "access": b.access}
                            if b.subresources is None else
                            {"image": b.buffer, **_subresources(b.subresources), "access": b.access}
                            for b in c.bindings],
               "groups": list(c.groups), "push": list(c.push)}
        if c.indirect is not None:
            out["indirect"] = {"buffer": c.indirect.buffer, "offset": c.indirect.offset}
    elif isinstance(c, (ir.CopyBufferToImage, ir.CopyImageToBuffer)):
        out = {"cmd": "copy_buffer_to_image" if isinstance(c, ir.CopyBufferToImage) else "copy_image_to_buffer",
               "src": c.src, "dst": c.dst, "regions": [
                   {"buffer_offset": r.buffer_offset, "buffer_row_length": r.buffer_row_length,
                    "buffer_image_height": r.buffer_image_height, "mip_level": r.mip_level,
                    "base_array_layer": r.base_array_layer, "layer_count": r.layer_count,
                    "image_offset": list(r.image_offset), "image_extent": list(r.image_extent)} for r in c.regions]}
    elif isinstance(c, (ir.CopyImage, ir.ResolveImage)):
        out = {"cmd": "copy_image" if isinstance(c, ir.CopyImage) else "resolve_image", "src": c.src, "dst": c.dst,
               "regions": [
            {"src_mip_level": r.src_mip_level, "src_base_array_layer": r.src_base_array_layer,
             "dst_mip_level": r.dst_mip_level, "dst_base_array_layer": r.dst_base_array_layer,
             "layer_count": r.layer_count, "src_offset": list(r.src_offset), "dst_offset": list(r.dst_offset),
             "extent": list(r.extent), **({"src_plane": r.src_plane} if r.src_plane else {}),
             **({"dst_plane": r.dst_plane} if r.dst_plane else {})} for r in c.regions]}
    elif isinstance(c, ir.BlitImage):
        out = {"cmd": "blit_image", "src": c.src, "dst": c.dst, "filter": c.filter, "regions": [
            {"src_mip_level": r.src_mip_level, "src_base_array_layer": r.src_base_array_layer,
             "dst_mip_level": r.dst_mip_level, "dst_base_array_layer": r.dst_base_array_layer,
             "layer_count": r.layer_count, "src_offsets": [list(o) for o in r.src_offsets],
             "dst_offsets": [list(o) for o in r.dst_offsets]} for r in c.regions]}
    elif isinstance(c, ir.ClearColorImage):
        out = {"cmd": "clear_color_image", "image": c.image, "ranges": [_subresources(r) for r in c.subresources],
               "value": list(c.value)}
    elif isinstance(c, ir.ClearDepthStencilImage):
        out = {"cmd": "clear_depth_stencil_image", "image": c.image,
               "ranges": [_subresources(r) for r in c.subresources], "depth": c.depth, "stencil": c.stencil}
    elif isinstance(c, ir.WriteBufferMarker):
        out = {"cmd": "write_buffer_marker", "dst": c.dst, "offset": c.offset, "stage": _names(c.stage),
               "marker": c.marker}
    elif isinstance(c, ir.CopyQueryPoolResults):
        out = {"cmd": "copy_query_pool_results", "dst": c.dst, "offset": c.offset, "stride": c.stride,
               "query_count": c.query_count, "result_size": c.result_size}
    elif isinstance(c, ir.ExecuteCommands):
        out = {"cmd": "execute_commands", "command_buffers": list(c.command_buffers)}
    elif isinstance(c, ir.SetEvent):
        out = {"cmd": "set_event", "event": c.event,
               **({"stage": _names(c.stage)} if c.dependency is None else _dependency(c.dependency))}
    elif isinstance(c, ir.ResetEvent):
        out = {"cmd": "reset_event", "event": c.event, "stage": _names(c.stage)}
    elif isinstance(c, ir.WaitEvents):
        out = {"cmd": "wait_events", "events": list(c.events),
               "dependencies": [_dependency(d) for d in c.dependencies]}
    else:
        out = {"cmd": "barrier", **_dependency(c)}
    return {**out, **_tag(c)}


def _dependency(c: ir.Barrier) -> dict:
    """A barrier's or event's dependency: its masks, or its buffer barriers."""
    out = _masks(c)
    if c.buffers:
        out["buffers"] = [{"buffer": b.buffer, "offset": b.offset, "size": b.size, **_masks(b),
                           **({"src_family": b.src_family, "dst_family": b.dst_family}
                              if b.src_family is not None else {})} for b in c.buffers]
    if c.images:
        out["images"] = [{"image": b.image, **_subresources(b.subresources), **_masks(b), "old_layout": b.old_layout,
                          "new_layout": b.new_layout, **({"src_family": b.src_family, "dst_family": b.dst_family}
                                                         if b.src_family is not None else {})} for b in c.images]
    return out


def _subresources(r: ir.Subresources) -> dict:
    return {"base_mip_level": r.base_mip_level, "level_count": r.level_count, "base_array_layer": r.base_array_layer,
            "layer_count": r.layer_count, **({"aspects": sorted(r.aspects)} if r.aspects is not None else {})}


def _semaphore_op(s: ir.SemaphoreOp) -> dict:
    return {"semaphore": s.semaphore, **({"value": s.value} if s.value is not None else {}), "stage": _names(s.stage)}


def host_op_to_dict(op: ir.HostOp) -> dict:
    if isinstance(op, ir.Submit):
        out = {"op": "submit", "queue": op.queue, "batches": [
            {"wait": [_semaphore_op(w) for w in b.waits], "command_buffers": list(b.command_buffers),
             "signal": [_semaphore_op(s) for s in b.signals]} for b in op.batches]}
        if op.fence is not None:
            out["fence"] = op.fence
    elif isinstance(op, (ir.WaitFences, ir.ResetFences)):
        out = {"op": "wait_fences" if isinstance(op, ir.WaitFences) else "reset_fences", "fences": list(op.fences)}
    elif isinstance(op, ir.GetSemaphoreCounterValue):
        out = {"op": "get_semaphore_counter_value", "semaphore": op.waits[0].semaphore, "value": op.waits[0].value}
    elif isinstance(op, ir.WaitSemaphores):
        out = {"op": "wait_semaphores", "waits": [{"semaphore": w.semaphore, "value": w.value} for w in op.waits]}
    elif isinstance(op, ir.SignalSemaphore):
        out = {"op": "signal_semaphore", "semaphore": op.semaphore, "value": op.value}
    elif isinstance(op, ir.HostAccess):
        out = {"op": op.op, "buffer": op.buffer, "offset": op.offset, "size": op.size, **_data(op.data)}
    elif isinstance(op, ir.QueueWaitIdle):
        out = {"op": "queue_wait_idle", "queue": op.queue}
    elif isinstance(op, ir.DeviceWaitIdle):
        out = {"op": "device_wait_idle", "device": op.device}
    elif isinstance(op, (ir.HostSetEvent, ir.HostResetEvent)):
        out = {"op": "set_event" if isinstance(op, ir.HostSetEvent) else "reset_event", "event": op.event}
    else:
        out = {"op": "destroy", "buffer": op.buffer}
    return {**out, **_tag(op)}


@dataclass(frozen=True)
class _Each:
    """The list of `convert` of each of `items`, made an item at a time as it is written: a long run's
    operations as dicts all at once were most of an import's memory."""

    convert: Callable[[Any], dict]
    items: Sequence[Any]

    def __iter__(self) -> Iterator[dict]:
        return map(self.convert, self.items)


class Encoded:
    """A list of JSON values held as their texts (orjson's, one line each), for a document vkverify makes itself:
    an import's commands as dicts were most of its memory. `document_chunks` writes the texts as they are;
    `decoded` is the list. The texts are copied into one buffer, which `seal` trims (a command buffer's, once
    recorded): orjson's own result holds kilobytes past its text."""

    __slots__ = ("_text",)

    def __init__(self) -> None:
        self._text: bytes | bytearray = b""  # each text followed by a newline (orjson escapes those in strings)

    def append(self, value: Any) -> None:
        text = self._open()
        text += _orjson_bytes(value)
        text += b"\n"

    def extend(self, other: Encoded) -> None:
        self._open().extend(other._text)

    def _open(self) -> bytearray:
        if isinstance(self._text, bytes):
            self._text = bytearray(self._text)
        return self._text

    def seal(self) -> None:
        self._text = bytes(self._text)

    def texts(self) -> list[str]:
        return self._text.decode().split("\n")[:-1]

    def joined(self, separator: str) -> str:
        """The texts joined by `separator`: one replace over the whole, not a list of texts to join."""
        return self._text[:-1].decode().replace("\n", separator)

    def __len__(self) -> int:
        return self._text.count(b"\n")

    def __bool__(self) -> bool:  # not len()'s count: the writer asks it of each of a run's 150k command buffers
        return bool(self._text)

    def decoded(self) -> list:
        return orjson.loads(f"[{','.join(self.texts())}]")


def _listed(convert: Callable[[Any], dict], items: Sequence[Any]) -> list[dict]:
    return [convert(x) for x in items]


def to_dict(s: ir.Stream) -> dict:
    return _doc(s, _listed)


def _doc(s: ir.Stream, each: Callable[[Callable[[Any], dict], Sequence[Any]], Any]) -> dict:
    """The document of `s`, its operations' lists made by `each` (a list, or an _Each to write)."""
    out: dict[str, Any] = {"format": ir.FORMAT, "name": s.name}
    if s.description is not None:
        out["description"] = s.description
    out["devices"] = [{"id": d.id, "queues": [{"id": q.id, "family": q.family} for q in d.queues]} for d in s.devices]
    out["buffers"] = [{"id": b.id, "size": b.size, "memory": b.memory, "devices": list(b.devices),
                       **({"alias_of": b.alias_of, "offset": b.offset} if b.alias_of is not None else {}),
                       **({"sharing": b.sharing} if b.sharing != "concurrent" else {})} for b in s.buffers]
    out["semaphores"] = [{"id": x.id, "type": x.type, **({"payload_of": x.payload_of} if x.payload_of else
                                                          {"initial": x.initial})} for x in s.semaphores]
    out["fences"] = [{"id": f.id, "signaled": f.signaled} for f in s.fences]
    if s.images:
        out["images"] = [{"id": m.id, "extent": list(m.extent), "format": m.format, "mip_levels": m.mip_levels,
                          "array_layers": m.array_layers, "memory": m.memory, "device": m.devices[0],
                          **({"sharing": m.sharing} if m.sharing != "concurrent" else {}),
                          **({"create_flags": sorted(m.create_flags)} if m.create_flags else {}),
                          **({"samples": m.samples} if m.samples != 1 else {}),
                          **({"alias_of": m.alias_of} if m.alias_of is not None else {})} for m in s.images]
    if s.events:
        out["events"] = [{"id": e.id} for e in s.events]
    out["shaders"] = {x.id: {"bindings": list(x.bindings)} for x in s.shaders}
    out["command_buffers"] = {cb.id: each(command_to_dict, cb.commands) for cb in s.command_buffers}
    out["threads"] = {t.id: each(host_op_to_dict, t.ops) for t in s.threads}
    if s.params:
        out["params"] = {p.name: {"min": p.min, "max": p.max} for p in s.params}
    if s.expect is not None:
        out["expect"] = {"findings": [
            {k: v for k, v in (("kind", f.kind), ("buffer", f.buffer), ("first", f.first), ("second", f.second),
                               ("ops", list(f.ops) if f.ops is not None else None),
                               ("params", dict(f.params) if f.params is not None else None),
                               ("range", list(f.range) if f.range is not None else None)) if v is not None}
            for f in s.expect]}
    if s.ignore:
        out["ignore"] = [{k: v for k, v in (("kind", i.finding.kind), ("first", i.finding.first),
                                            ("second", i.finding.second), ("reason", i.reason)) if v is not None}
                         for i in s.ignore]
    return out


def dumps(s: ir.Stream, indent: int | None = 1) -> str:
    return "".join(dump_chunks(s, indent))


# How many levels of each top-level member are laid out one item per line; below them each item is one line.
_EXPANDED = {"command_buffers": 2, "threads": 2, "expect": 2}


def dump_chunks(s: ir.Stream, indent: int | None = 1) -> Iterator[str]:
    """The text of `dumps` in pieces, for a writer that never holds all of it (an imported run's is gigabytes).
    With an indent, one operation (command, host op), buffer or shader per line: a diff or grep shows whole
    operations, and each line is written by json's C encoder (the pure-Python one, which any indent needs,
    was most of an import's writing time)."""
    if indent is None:
        yield json.dumps(to_dict(s))
        return
    yield from _expanded(_doc(s, _Each), 1, " " * indent, "")


def document_chunks(doc: dict, indent: int = 1) -> Iterator[str]:
    """A stream document's text in `dump_chunks`'s layout, for a document vkverify made itself (an import's),
    each line written by orjson (UTF-8, no spaces between items: a third of json's time on a long capture); a
    value of a type JSON does not have is written as its str()."""
    return _expanded(doc, 1, " " * indent, "", _orjson_text)


def _orjson_text(value: Any) -> str:
    return _orjson_bytes(value).decode()


def _orjson_bytes(value: Any) -> bytes:
    return orjson.dumps(value, default=_json_of, option=orjson.OPT_PASSTHROUGH_DATACLASS)


def _json_of(value: Any) -> Any:
    """What JSON has no type for (a dataclass too: orjson would write its fields, a NamedTuple is no array): the
    value its `as_json` gives (an import's submit batches), else its text (an import's bytes)."""
    as_json = getattr(value, "as_json", None)
    return str(value) if as_json is None else as_json()


def _encoded(value: Encoded, levels: int, pad: str, outer: str) -> str:
    """An Encoded's items' texts as they are, one per line indented by `pad` below `levels` 1."""
    if not value:  # most of a long run's command buffers: a submit that only signals a timeline
        return "[]"
    if levels == 0:
        return f"[{value.joined(',')}]"
    return f"[\n{pad}" + value.joined(f",\n{pad}") + f"\n{outer}]"


def _key(key: Any) -> str:
    """json.dumps(key), a string's without json.dumps's own calls: an import's 150k command buffers are keys."""
    return encode_basestring_ascii(key) if type(key) is str else json.dumps(key)


def _expanded(value: Any, levels: int, step: str, pad: str,
              encode: Callable[[Any], str] = json.dumps) -> Iterator[str]:
    """`value` with `levels` levels of containers laid out one item per line, and each item below on one line
    (by `encode`)."""
    inner = pad + step
    if isinstance(value, Encoded):
        yield _encoded(value, levels, inner, pad)
        return
    if isinstance(value, _Each) and (levels == 0 or not value.items):
        value = list(value)
    if levels == 0 or not isinstance(value, (dict, list, _Each)) or not value:
        yield encode(value)
        return
    if levels == 1 and pad and not isinstance(value, dict):  # a list of leaves, a thread's ops: a run's most
        sep, start, texts, size = f",\n{inner}", f"[\n{inner}", [], 0
        for text in map(encode, value):  # no head, index or test per item
            texts.append(text)
            size += len(text)
            if size >= 1 << 16:
                yield start + sep.join(texts)
                start, texts, size = sep, [], 0
        yield (start + sep.join(texts) if texts else "") + f"\n{pad}]"
        return
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    # Leaves are written some 64 KiB at a time, not each as a piece: a long run has 100k, a host write's data MiBs.
    leaves, size, deeper = ["{" if isinstance(value, dict) else "["], 0, inner + step
    for i, (key, item) in enumerate(items):
        head = f"{',' if i else ''}\n{inner}" if key is None else f"{',' if i else ''}\n{inner}{_key(key)}: "
        below = _EXPANDED.get(key, 1) if pad == "" else levels - 1
        if below == 0 or isinstance(item, Encoded):  # in one piece: no generator of its own (a run has 100k)
            leaves.append(head + (_encoded(item, below, deeper, inner) if isinstance(item, Encoded) else
                                  encode(list(item) if isinstance(item, _Each) else item)))
            size += len(leaves[-1])
            if size >= 1 << 16:
                yield "".join(leaves)
                leaves, size = [], 0
        else:
            yield "".join(leaves) + head
            leaves, size = [], 0
            yield from _expanded(item, below, step, inner, encode)
    yield "".join(leaves) + f"\n{pad}{'}' if isinstance(value, dict) else ']'}"
