"""Load a stream: JSON Schema validation, then ids, ranges and names, then the IR.

Every problem is collected (not only the first) and raised as one
InvalidStream, each naming the JSON path.
"""

from __future__ import annotations

import base64
import binascii
import json
import marshal
import math
import os
import re
import stat
import weakref
from dataclasses import replace
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema

from . import ir, jsontext, params
from .errors import InputError, InvalidStream, UsageError, json_path
from .gcpause import cyclic_gc_paused
from .images import (COMPRESSED, DEPTH_STENCIL, FORMATS, LAYOUTS, PLANES, blit_box, buffer_rows, copy_dst_extent,
                     format_name, layout_name, level_extent, merge_ranges)
from .names import access_name, stage_name
from .refs import parse_ref, split_submit, with_submit
from .schema import schema

__all__ = ["compile_schema", "from_dict", "load", "loads", "resolve_ref", "schema", "schema_errors", "validate",
           "value_errors"]

def load(path: str | Path) -> ir.Stream:
    """Read and validate one stream file."""
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError("path", f"expected a str or a Path, got {type(path).__name__}")
    path = str(path)
    try:
        doc = _read(path)
        # Text the reading a chunk at a time did not take: read whole, for json.loads's verdict and messages.
        text = None if doc is not None else _decode(Path(path).read_bytes(), path)
    except OSError as e:
        raise InvalidStream(path, [InputError("$", f"cannot read: {e.strerror}")]) from None
    return from_dict(doc, path) if text is None else loads(text, path)


def _read(path: str) -> Any | None:
    """The document in a regular file, read a chunk at a time (jsontext.load: the whole text is never held);
    None where the file is no regular one (a pipe cannot be read again) or jsontext.load did not take it."""
    with open(path, encoding="utf-8-sig", newline="") as f:  # newline "": \r\n kept, as json.loads sees it
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        with cyclic_gc_paused():  # a stream's document is millions of objects and no cycle
            return jsontext.load(f, _no_constant)


def loads(text: str | bytes, file: str = "<string>") -> ir.Stream:
    """The stream in JSON text (bytes: UTF-8)."""
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text), file)
    elif not isinstance(text, str):
        raise UsageError("text", f"expected a str or bytes of JSON, got {type(text).__name__}")
    try:
        with cyclic_gc_paused():  # a stream's document is millions of objects and no cycle
            doc = jsontext.loads(text, _no_constant)
    except json.JSONDecodeError as e:
        raise InvalidStream(file, [InputError("$", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}")]) \
            from None
    except RecursionError:
        raise InvalidStream(file, [InputError("$", f"nested too deeply (a stream nests at most {MAX_DEPTH} "
                                                   "levels)")]) from None
    except ValueError as e:  # a number past Python's digit limit, NaN or Infinity
        raise InvalidStream(file, [InputError("$", f"invalid JSON: {e}")]) from None
    return from_dict(doc, file)


def _decode(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InvalidStream(file, [InputError("$", f"not UTF-8: byte 0x{data[e.start]:02x} at line {line} "
                                                   f"column {column}")]) from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


MAX_DEPTH = 100  # levels of nesting read; a stream has 8, a params template a few more
# No string of a stream holds a control character: an id becomes a Vulkan object's debug name (a C
# string: NUL ends it), a DOT node and terminal text. Free text may hold newlines and tabs.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FREE_TEXT = ("description", "label")
# Every integer of a stream is a Vulkan uint64_t or int64_t (sizes, offsets, values, families).
INT_RANGE = (-(2 ** 63), 2 ** 64 - 1)


def from_dict(doc: Any, file: str = "<dict>", schema: bool = True) -> ir.Stream:
    """The stream a JSON document (parsed) describes; InvalidStream naming every error's JSON path.
    schema False skips the value checks and the JSON schema (the ids, ranges and references are still
    checked): for documents vkverify writes itself, shaped right by construction (the runtime's)."""
    with cyclic_gc_paused():  # the document and the IR are millions of objects and no cycle
        doc = _shared_operations(doc)
        values, integral_floats = value_errors(doc) if schema else ([], False)
        if values:
            raise InvalidStream(file, values)
        if isinstance(doc, dict) and "params" in doc:
            return _valid(_from_template(doc, file, integral_floats))
        return _valid(_from_plain(doc, file, integral_floats, schema))


def _shared_operations(doc: Any) -> Any:
    """`doc` with each command and host op that has the JSON value of an earlier one replaced by that
    one (a copy where one is replaced: the caller's document is left as it was). Each check below runs once
    per operation object that passed it, so once per distinct operation: a decode stream repeats a few ten
    thousand commands a million times. An error is still reported at each of its paths: an operation with an
    error is checked again wherever it appears."""
    first: dict[bytes, Any] = {}  # the first operation of each value
    kept: dict[int, Any] = {}  # those by id: jsontext gives an operation's repeated text one object

    def one(op: Any) -> Any:
        # marshal writes a value with its types (1, 1.0 and True apart), in C: a cheap exact key. Its
        # back-references depend on reference counts: equal values may (rarely) differ, and go unshared.
        known = first.setdefault(marshal.dumps(op), op)
        if known is op:
            kept[id(op)] = op
        return known

    def first_of(op: Any) -> Any:
        return kept.get(id(op)) or one(op)  # an empty, falsy operation: one() again

    def shared(kind: str, ops: list | tuple) -> list | tuple:
        if type(ops) is not list:  # the same array type in the copy: jsonschema refuses a tuple
            return ops
        try:
            at = next((i for i, op in enumerate(ops) if first_of(op) is not op), None)
            # Each operation the first of its value (jsontext shares them by their text): the list itself, not
            # a copy of a million places.
            return ops if at is None else ops[:at] + [first_of(op) for op in ops[at:]]
        except ValueError:  # an object that is no JSON value: the list as it is, for the checks to report
            return ops

    return _map_operations(doc, shared)


def _map_operations(doc: Any, change: Callable[[str, list | tuple], list | tuple]) -> Any:
    """A copy of `doc` (a dict; anything else as it is) with each array (a list or tuple, as the compiled schema
    has it) of commands or host ops replaced by change(the field naming an operation's kind, the array); the
    rest is shared, not copied."""
    if not isinstance(doc, dict):
        return doc
    out = dict(doc)
    for key, kind in (("command_buffers", "cmd"), ("threads", "op")):
        if isinstance(doc.get(key), dict):
            out[key] = {k: change(kind, ops) if isinstance(ops, (list, tuple)) else ops for k, ops in doc[key].items()}
    if isinstance(doc.get("host"), (list, tuple)):
        out["host"] = change("op", doc["host"])
    return out


# Streams this loader made (by id, while they live): `validate` takes them as they are.
_VALID: dict[int, weakref.ref] = {}


def _valid(stream: ir.Stream) -> ir.Stream:
    key = id(stream)
    _VALID[key] = weakref.ref(stream, lambda _, key=key: _VALID.pop(key, None))
    return stream


def validate(stream: Any, argument: str = "stream") -> ir.Stream:
    """`stream`, once it is known to be what the loader would make of its JSON: a stream built by hand
    (or edited with dataclasses.replace) is dumped and loaded again, so it is checked by the very rules
    of a file. InvalidStream names the JSON path of each error in the dump; UsageError for an object
    that is no ir.Stream."""
    if not isinstance(stream, ir.Stream):
        raise UsageError(argument, f"expected a vkverify stream (ir.Stream: load() or Stream(...).build() "
                                   f"makes one), got {type(stream).__name__}")
    known = _VALID.get(id(stream))
    if known is not None and known() is stream:
        return stream
    from dataclasses import replace

    from .dump import to_dict
    file = f"<stream {stream.name!r}>" if isinstance(stream.name, str) else "<stream>"
    plain = replace(stream, params=(), instances=(), expect=None if stream.params else stream.expect)
    try:
        with cyclic_gc_paused():  # a dict per command, and no cycle
            doc = to_dict(plain)
    except (AttributeError, TypeError, ValueError, KeyError) as e:  # a field of the wrong type
        raise InvalidStream(file, [InputError("$", f"not a stream: {type(e).__name__}: {e}")]) from None
    from_dict(doc, file)
    for _, instance in stream.instances:
        validate(instance, argument)
    return _valid(stream)


def _from_plain(doc: Any, file: str, integral_floats: bool, schema: bool = True) -> ir.Stream:
    errors = schema_errors(doc, integral_floats) if schema else []
    builder = _Builder(doc)
    try:
        stream = builder.build()
    except (KeyError, TypeError, AttributeError, ValueError, IndexError):
        if not errors:
            raise
        # The document's shape is wrong where the schema said; the id/range checks could not finish.
    reported = {e.path for e in errors}
    errors += [e for e in builder.errors if e.path not in reported]
    if errors:
        raise InvalidStream(file, errors)
    return stream


def _from_template(doc: dict, file: str, integral_floats: bool) -> ir.Stream:
    """A params stream (docs/format.md "params"): check the template, then load every instance."""
    from dataclasses import replace

    head = {k: doc[k] for k in ("format", "params", "expect") if k in doc}
    errors = schema_errors(head, integral_floats)
    if not errors:
        for name, p in doc["params"].items():
            if p["min"] > p["max"]:
                errors.append(InputError(json_path(("params", name)), f"min {p['min']} is greater than max {p['max']}"))
    if not errors:  # the expressions are read once `params` names the parameters
        errors = params.errors(doc)
    if errors:
        raise InvalidStream(file, errors)
    expect = doc.get("expect")
    named = {tuple(sorted(f["params"].items())) for f in (expect or {}).get("findings", [])
             if isinstance(f, dict) and isinstance(f.get("params"), dict)}
    try:
        combos = params.combinations({k: (p["min"], p["max"]) for k, p in doc["params"].items()})
    except params.ExprError as e:
        raise InvalidStream(file, [InputError("params", str(e))]) from None
    if len(named) > 1:
        raise InvalidStream(file, [InputError("expect.findings", "expected findings name several `params` "
                                                                 "combinations; the checker reports one")])
    holder = next(iter(named)) if named else combos[0]
    if holder not in combos:
        raise InvalidStream(file, [InputError("expect.findings", f"`params` {dict(holder)} is not a combination "
                                                                 f"of the parameters' ranges")])
    instances, made = [], [0]
    for values in combos:
        try:
            plain = params.instantiate(doc, dict(values), made)
            if values == holder and expect is not None:
                plain["expect"] = expect
            instances.append((values, from_dict(plain, file)))
        except (InvalidStream, params.ExprError) as e:
            where = ", ".join(f"{k}={v}" for k, v in values)
            lines = e.errors if isinstance(e, InvalidStream) else [InputError("$", str(e))]
            raise InvalidStream(file, [InputError(err.path, f"with {where}: {err.message}") for err in lines]) \
                from None
    shown = dict(instances)[holder]
    return replace(shown, params=tuple(ir.Param(k, p["min"], p["max"]) for k, p in doc["params"].items()),
                   instances=tuple(instances))


def value_errors(doc: Any) -> tuple[list[InputError], bool]:
    """What a JSON Schema cannot say about a document's values: nesting past MAX_DEPTH, strings that
    are no Unicode text (lone surrogates) or hold control characters, integers past 64 bits, numbers
    that are not finite, Python objects that are not JSON; and whether a float with an integral value
    (4096.0) appears, which the schema's `integer` accepts and a stream's integers must not be.
    A node's path is kept as (parent's, key) pairs and spelled only for an error. A dict found clean
    in a list is not walked again at the same depth (_shared_operations makes equal operations one dict)."""
    errors: list[InputError] = []
    integral = False
    clean: dict[int, set[int]] = defaultdict(set)  # depth -> ids of the dicts found clean there

    def error(where: tuple | None, message: str) -> None:
        parts = []
        while where is not None:
            where, key = where
            parts.append(key)
        errors.append(InputError(json_path(reversed(parts)), message))

    def walk(node: Any, where: tuple | None, depth: int) -> None:
        nonlocal integral
        kind = type(node) if type(node) in _JSON_TYPES else next((t for t in _JSON_TYPES if isinstance(node, t)), None)
        if kind is str:
            if not (node.isascii() and node.isprintable()):
                problem = _string_problem(node, where is not None and where[1] in FREE_TEXT)
                if problem:
                    error(where, f"{_clip(node)} {problem}")
        elif kind is int:
            if not INT_RANGE[0] <= node <= INT_RANGE[1]:
                error(where, f"an integer of {node.bit_length()} bits is past Vulkan's 64")
        elif kind in (dict, list, tuple) and depth >= MAX_DEPTH:
            error(where, f"nested more than {MAX_DEPTH} levels deep")
        elif kind is dict:
            found = len(errors)
            for k, v in node.items():
                problem = "is not a string" if not isinstance(k, str) else \
                    None if k.isascii() and k.isprintable() else _string_problem(k, False)
                if problem:
                    error(where, f"key {_clip(k) if isinstance(k, str) else repr(k)} {problem}")
                else:
                    walk(v, (where, k), depth + 1)
            if len(errors) == found:
                clean[depth].add(id(node))
        elif kind in (list, tuple):
            seen = clean[depth + 1]
            for i, v in enumerate(node):
                if id(v) not in seen:
                    walk(v, (where, i), depth + 1)
        elif kind is float:
            if not math.isfinite(node):
                error(where, f"{node} is not a finite number")
            integral = integral or node.is_integer()
        elif kind is None:
            error(where, f"a {type(node).__name__} is not a JSON value")
    walk(doc, None, 0)
    return sorted(errors, key=lambda e: e.path), integral


_JSON_TYPES = (str, bool, int, float, dict, list, tuple, type(None))


def _string_problem(s: str, free_text: bool) -> str | None:
    if not _is_text(s):
        return "is no Unicode text (a lone surrogate)"
    if (CONTROL_IN_TEXT if free_text else CONTROL).search(s):
        return "holds a control character" + (" other than newline and tab" if free_text else "")
    return None


def _clip(s: str) -> str:
    return repr(s if len(s) <= 60 else s[:57] + "...")


def _is_text(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@cache
def _strict_validator() -> jsonschema.protocols.Validator:
    """Draft 2020-12 with `integer` meaning an int: JSON Schema lets 4096.0 and 1e308 be integers, a
    size or offset of a stream is not one (Python keeps 4096 and 4096.0 apart)."""
    base = jsonschema.Draft202012Validator
    strict = base.TYPE_CHECKER.redefine("integer", lambda _, x: isinstance(x, int) and not isinstance(x, bool))
    return jsonschema.validators.extend(base, type_checker=strict)(schema())


_DRAFT_07 = {"$schema": "http://json-schema.org/draft-07/schema#"}
_OPERATIONS = {"cmd": "command", "op": "host_op"}  # an operation's kind field -> its definition


@cache
def _fast_validator() -> Callable[[Any], Any]:
    """The schema compiled to Python (fastjsonschema): ten times faster than jsonschema on a valid
    stream, which is every stream but the ones with errors. Only the keywords that draft-07 and
    2020-12 share are used, so the two agree; jsonschema then names every error of a bad stream.
    Commands and host ops are left to _operation_validator: _fast_schema_valid gives a document without them."""
    whole = {k: v for k, v in schema().items() if k not in ("$id", "$schema")}
    defs = {**whole["$defs"], **{name: {} for name in _OPERATIONS.values()}}
    return fastjsonschema.compile({**_DRAFT_07, **whole, "$defs": defs})


@cache
def _operation_validator(kind: str, name: str) -> Callable[[Any], Any] | None:
    """The compiled schema of an operation whose `kind` field is `name` (a name of the schema's enum), or
    None: picked here, since the schema's if/then on the kind costs the compiled code an exception for
    each alternative that does not apply. Compiled on first use: a stream uses few kinds."""
    defs = schema()["$defs"]
    branch = next((b["then"] for b in defs[_OPERATIONS[kind]]["allOf"]
                   if b["if"]["properties"][kind]["const"] == name), None)
    return None if branch is None else fastjsonschema.compile({**_DRAFT_07, "$defs": defs, "allOf": [branch]})


def compile_schema() -> None:
    """Compile the fast schema and every operation's now, not on first use: a process that forks workers (the
    mutation gate's forking server, mutations/forks.py) compiles them once for all."""
    _fast_validator()
    for kind, name in _OPERATIONS.items():
        for op in schema()["$defs"][name]["properties"][kind]["enum"]:
            _operation_validator(kind, op)


def _fast_schema_valid(doc: Any) -> bool:
    """Whether the compiled schema accepts `doc`: the document without its commands and host ops by the
    whole schema, then each distinct operation object once, by the schema of its kind."""
    distinct: dict[str, dict[int, Any]] = {kind: {} for kind in _OPERATIONS}  # kind -> id -> operation

    def gather(kind: str, ops: list | tuple) -> list:
        distinct[kind].update(zip(map(id, ops), ops))
        return []

    try:
        _fast_validator()(_map_operations(doc, gather))
        for kind, ops in distinct.items():
            names = schema()["$defs"][_OPERATIONS[kind]]["properties"][kind]["enum"]
            for op in ops.values():
                name = op.get(kind) if isinstance(op, dict) else None
                validator = _operation_validator(kind, name) if isinstance(name, str) and name in names else None
                if validator is None:
                    return False
                validator(op)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def schema_errors(doc: Any, integral_floats: bool = False) -> list[InputError]:
    """Every schema error, one per JSON path; `integral_floats` (value_errors) forbids the fast path,
    whose `integer` accepts 4096.0."""
    if not integral_floats and _fast_schema_valid(doc):
        return []
    validator = _strict_validator()
    found: dict[str, InputError] = {}
    for error in validator.iter_errors(doc):
        # oneOf/if-then report a summary; the deepest sub-error says what is wrong.
        leaf = jsonschema.exceptions.best_match([error]) if not error.context else \
            jsonschema.exceptions.best_match(error.context)
        path = json_path(leaf.absolute_path)
        if path not in found:
            found[path] = InputError(path, _schema_message(leaf))
    return sorted(found.values(), key=lambda e: e.path)


def _schema_message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field")
    if error.validator == "const" and error.absolute_path and error.absolute_path[-1] == "format":
        return f"expected \"{ir.FORMAT}\", got {json.dumps(error.instance)}"
    if error.validator == "minimum":
        return f"must be >= {error.validator_value}, got {error.instance}"
    return error.message


class _Builder:
    """Turns a schema-valid document into the IR, checking what a schema cannot."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        self.errors: list[InputError] = []
        self.made: dict[str, dict[int, Any]] = {}  # per kind, id of an operation's dict -> its IR, if no error
        self.values: dict[Any, Any] = {}  # each binding, binding list and stage or access set made, held once

    def error(self, path: tuple, message: str) -> None:
        self.errors.append(InputError(json_path(path), message))

    def one(self, value: Any) -> Any:
        """The value made before that equals `value`, else `value`: distinct dispatches of a decode stream bind
        the same few thousand ranges. Only for values of strings and integers (a stream holds no 1.0 nor True
        where an integer goes: value_errors and the schema say so), whose equality is sameness."""
        return self.values.setdefault(value, value)

    def operations(self, make: Callable[[tuple, dict], Any], where: tuple, items: list) -> tuple:
        """make(path, item) for each item of the list at `where`, made once for an object that gives no error:
        what it checks (ids, sizes, names) is the same at every path of one document, and _shared_operations
        makes equal operations one object."""
        known, out = self.made.setdefault(make.__name__, {}), []
        for i, item in enumerate(items):
            made = known.get(id(item))
            if made is None:
                found = len(self.errors)
                made = make(where + (i,), item)
                if len(self.errors) == found:
                    known[id(item)] = made
            out.append(made)
        return tuple(out)

    # ---- resources ---------------------------------------------------------

    def build(self) -> ir.Stream:
        doc = self.doc
        devices = tuple(
            ir.Device(d["id"], tuple(ir.Queue(q["id"], q.get("family", 0)) for q in d.get("queues", [{"id": "q0"}])))
            for d in doc.get("devices", [{"id": "gpu0"}]))
        self.unique("devices", [d.id for d in devices])
        self.unique("devices", [q.id for d in devices for q in d.queues], what="queue")
        self.device_ids = {d.id for d in devices}
        self.queue_ids = {q.id for d in devices for q in d.queues}

        self.buffer_sizes: dict[str, int | None] = {}
        buffers = tuple(self.buffer(i, b, devices) for i, b in enumerate(doc.get("buffers", [])))
        self.unique("buffers", [b.id for b in buffers])
        self.check_aliases(buffers)
        images = tuple(self.image(i, m, devices) for i, m in enumerate(doc.get("images", [])))
        self.unique("images", [m.id for m in images])
        for i, m in enumerate(images):
            if m.id in self.buffer_sizes:
                self.error(("images", i, "id"), f"image id {m.id!r} is a buffer's too")
        self.images = {m.id: m for m in images}
        self.check_image_aliases(images)

        semaphores = tuple(ir.Semaphore(s["id"], s.get("type", "binary"), s.get("initial", 0), s.get("payload_of"))
                           for s in doc.get("semaphores", []))
        self.unique("semaphores", [s.id for s in semaphores])
        self.semaphore_types = {s.id: s.type for s in semaphores}
        self.payloads = self.semaphore_payloads(doc.get("semaphores", []), semaphores)
        fences = tuple(ir.Fence(f["id"], f.get("signaled", False)) for f in doc.get("fences", []))
        self.unique("fences", [f.id for f in fences])
        self.fence_ids = {f.id for f in fences}
        events = tuple(ir.Event(e["id"]) for e in doc.get("events", []))
        self.unique("events", [e.id for e in events])
        self.event_ids = {e.id for e in events}
        shaders = tuple(ir.ShaderDecl(k, tuple(v["bindings"])) for k, v in doc.get("shaders", {}).items())
        self.shader_decls = {s.id: s for s in shaders}

        command_buffers = tuple(
            ir.CommandBuffer(cb, self.operations(self.command, ("command_buffers", cb), cmds))
            for cb, cmds in doc.get("command_buffers", {}).items())
        self.cb_ids = {c.id for c in command_buffers}
        self.owner_ids(("command_buffers",), self.cb_ids)
        self.check_secondaries(command_buffers)

        thread_docs = doc.get("threads") or ({"main": doc["host"]} if "host" in doc else {})
        base = ("threads",) if "threads" in doc else ("host",)
        threads = tuple(
            ir.Thread(t, self.operations(self.host_op, base + ((t,) if base == ("threads",) else ()), ops))
            for t, ops in thread_docs.items())
        if "threads" in doc:
            self.owner_ids(("threads",), [t.id for t in threads])
        if "threads" in doc and "host" in doc:
            self.error(("host",), "give either `threads` or `host`, not both")

        params = tuple(self.param(k, v) for k, v in doc.get("params", {}).items())
        stream = ir.Stream(
            name=doc.get("name", ""), description=doc.get("description"), devices=devices, buffers=buffers,
            semaphores=semaphores, fences=fences, events=events, images=images, shaders=shaders,
            command_buffers=command_buffers, threads=threads, params=params, expect=None)
        self.check_references(stream)
        if "expect" in doc:
            stream = _replace(stream, expect=tuple(
                self.expected(("expect", "findings", i), f, stream) for i, f in enumerate(doc["expect"]["findings"])))
        if "ignore" in doc:
            stream = _replace(stream, ignore=tuple(ir.Ignore(self.expected(("ignore", i), f, stream), f["reason"])
                                                   for i, f in enumerate(doc["ignore"])))
        return stream

    def check_secondaries(self, command_buffers: tuple[ir.CommandBuffer, ...]) -> None:
        """Spec 6.7: a secondary command buffer runs only inside a primary's vkCmdExecuteCommands, and never
        inside itself; each runs once in a primary's execution here, so that `s0[1]@main[5]` names one run."""
        executes = {cb.id: [(i, c) for i, c in enumerate(cb.commands) if type(c) is ir.ExecuteCommands]
                    for cb in command_buffers}
        self.secondaries = {s for found in executes.values() for _, c in found for s in c.command_buffers}

        def runs(cb: str, within: tuple[str, ...], path: tuple) -> list[str]:
            out = []
            for i, c in executes.get(cb, ()):
                for j, s in enumerate(c.command_buffers):
                    if s in within + (cb,):
                        self.error(path + (i, "command_buffers", j), f"command buffer {s!r} executes itself")
                    else:
                        out += [s, *runs(s, within + (cb,), ("command_buffers", s))]
            return out
        self.secondary_runs = {}
        for cb in command_buffers:
            seen = self.secondary_runs[cb.id] = runs(cb.id, (), ("command_buffers", cb.id))
            for s in sorted({s for s in seen if seen.count(s) > 1}):
                self.error(("command_buffers", cb.id), f"secondary command buffer {s!r} runs more than once in "
                                                       f"{cb.id!r}: give each run its own command buffer")

    def owner_ids(self, path: tuple, ids) -> None:
        """A command buffer's or thread's id is the owner in references `cb0[2]@main[5]` (refs.py)."""
        for x in ids:
            if any(c in x for c in "[]@"):
                self.error(path + (x,), f"id {x!r} holds '[', ']' or '@', which spell references such as "
                                        "cb0[2]@main[5]")

    def unique(self, path: str, ids: list[str], what: str | None = None) -> None:
        seen = set()
        for i, x in enumerate(ids):
            if x in seen:
                self.error((path,) if what else (path, i, "id"), f"duplicate {what or path[:-1]} id {x!r}")
            seen.add(x)

    def buffer(self, i: int, b: dict, devices: tuple[ir.Device, ...]) -> ir.Buffer:
        path = ("buffers", i)
        owners = tuple(b["devices"]) if "devices" in b else ((b["device"],) if "device" in b else (devices[0].id,))
        for d in owners:
            if d not in self.device_ids:
                self.error(path + ("devices" if "devices" in b else "device",), f"unknown device {d!r}")
        if "alias_of" not in b and "size" not in b:
            self.error(path, "`size` is required (or `alias_of`)")
        size = b.get("size", 0)
        # A size the schema rejected is not checked against again: one error, not one per use.
        self.buffer_sizes[b["id"]] = size if isinstance(size, int) and size >= 0 else None
        return ir.Buffer(b["id"], size, b.get("memory", "device_local"), owners, b.get("alias_of"),
                         b.get("offset", 0), b.get("sharing", "concurrent"))

    def image(self, i: int, m: dict, devices: tuple[ir.Device, ...]) -> ir.Image:
        path = ("images", i)
        fmt = format_name(m.get("format", "r8g8b8a8_unorm"))
        if fmt is None:
            self.error(path + ("format",), f"unknown format {m['format']!r} (known: {', '.join(sorted(FORMATS))})")
            fmt = "r8g8b8a8_unorm"
        extent = tuple(m["extent"]) + (1,) * (3 - len(m["extent"]))
        levels = m.get("mip_levels", 1)
        if levels > max(extent).bit_length():
            self.error(path + ("mip_levels",), f"{levels} mip levels for an extent of {list(extent)}: at most "
                                               f"{max(extent).bit_length()} (12.3 Image Miplevel Sizing)")
        if extent[2] > 1 and m.get("array_layers", 1) != 1:
            self.error(path + ("array_layers",), f"a 3D image (depth {extent[2]}) has one array layer "
                                                 "(VUID-VkImageCreateInfo-imageType-00961)")
        flags = frozenset(m.get("create_flags", ()))
        if "2d_array_compatible" in flags and extent[2] == 1:
            self.error(path + ("create_flags",), "2d_array_compatible is a 3D image's flag "
                                                 "(VUID-VkImageCreateInfo-flags-00950)")
        device = m.get("device", devices[0].id)
        if device not in self.device_ids:
            self.error(path + ("device",), f"unknown device {device!r}")
        return ir.Image(m["id"], extent, fmt, levels, m.get("array_layers", 1), m.get("memory", "device_local"),
                        (device,), m.get("sharing", "concurrent"), flags, m.get("samples", 1), m.get("alias_of"))

    def check_image_aliases(self, images: tuple[ir.Image, ...]) -> None:
        """resources.adoc, "Memory Aliasing": two images "created with identical creation parameters, both were
        created with the VK_IMAGE_CREATE_ALIAS_BIT flag set, and both are bound identically to memory" interpret its
        contents "in consistent ways", so the model's layout of one is the other's; an alias of other parameters is
        not held."""
        for i, m in enumerate(images):
            if m.alias_of is None:
                continue
            target = self.images.get(m.alias_of)
            if target is None or target.alias_of is not None:
                self.error(("images", i, "alias_of"), f"{m.alias_of!r} is not an image of this stream that aliases "
                                                      "none itself")
            elif replace(m, id=target.id, alias_of=None) != target or "alias" not in m.create_flags:
                self.error(("images", i, "alias_of"), f"{m.id!r} and {target.id!r} alias one memory: their creation "
                                                      "parameters must be identical, with create flag `alias` "
                                                      "(resources.adoc, Memory Aliasing)")

    def image_ref(self, path: tuple, image: str) -> ir.Image | None:
        if image not in self.images:
            self.error(path, f"unknown image {image!r}")
        return self.images.get(image)

    def subresources(self, path: tuple, obj: dict, image: ir.Image | None, whole: bool = True,
                     slices: bool = False) -> ir.Subresources:
        """A subresource range (VkImageSubresourceRange) checked against the image; by default all of it. `slices`:
        an image barrier's, whose layers are a slices_are_layers image's depth slices."""
        levels = image.mip_levels if image else 1
        layers = (image.extent[2] if slices and image.slices_are_layers else image.array_layers) if image else 1
        base_level, base_layer = obj.get("base_mip_level", 0), obj.get("base_array_layer", 0)
        aspects = frozenset(obj["aspects"]) if "aspects" in obj else None
        if image is not None and aspects is not None and not aspects <= set(image.aspects):
            self.error(path + ("aspects",), f"{image.id!r} ({image.format}) has the aspects "
                                            f"{', '.join(image.aspects)}, not {', '.join(sorted(aspects))}")
        r = ir.Subresources(base_level, obj.get("level_count", levels - base_level if whole else 1),
                            base_layer, obj.get("layer_count", layers - base_layer), aspects)
        if image is not None and (r.base_mip_level + r.level_count > levels or not r.level_count or
                                  r.base_array_layer + r.layer_count > layers or not r.layer_count):
            self.error(path, f"levels [{r.base_mip_level}, {r.base_mip_level + r.level_count}) and layers "
                             f"[{r.base_array_layer}, {r.base_array_layer + r.layer_count}) are not within "
                             f"{image.id!r} ({levels} levels, {layers} layers)")
        elif image is not None and slices and image.slices_are_layers:
            self.slices(path, image, r)
        return r

    def slices(self, path: tuple, image: ir.Image, r: ir.Subresources) -> None:
        """An image barrier's depth slices of a 2d_array_compatible 3D image are its base level's, and a subset of
        them (not every slice from 0 on) is of one level (VUID-VkImageMemoryBarrier2-maintenance9-10798, -10799,
        -10800). Slices up to the full depth are VK_REMAINING_ARRAY_LAYERS, as the model keeps an omitted count."""
        remaining = r.base_array_layer + r.layer_count == image.extent[2]
        depth = level_extent(image.extent, r.base_mip_level)[2]
        slices = f"slices [{r.base_array_layer}, {r.base_array_layer + r.layer_count}) of {image.id!r}"
        if r.base_array_layer >= depth or not remaining and r.base_array_layer + r.layer_count > depth:
            vuid = 10798 if r.base_array_layer >= depth else 10800
            self.error(path, f"{slices} are not within mip level {r.base_mip_level}'s depth {depth} "
                             f"(VUID-VkImageMemoryBarrier2-maintenance9-{vuid})")
        elif (r.base_array_layer or not remaining) and r.level_count != 1:
            self.error(path, f"{slices} over {r.level_count} mip levels: a subset of slices is of one level "
                             "(VUID-VkImageMemoryBarrier2-maintenance9-10799)")

    def single_plane(self, path: tuple, image: ir.Image | None) -> None:
        """Only copy_image and barriers take a multi-planar image (a plane's region of a copy; every plane), and
        they and clear_depth_stencil_image a depth/stencil one (its aspects are its planes)."""
        if image is not None and image.format in PLANES:
            self.error(path, f"{image.id!r} is multi-planar ({image.format}): the format copies its planes with "
                             "copy_image and barriers cover them, no other command takes it")
        if image is not None and image.format in DEPTH_STENCIL:
            self.error(path, f"{image.id!r} is a depth/stencil image ({image.format}): only copy_image, "
                             "clear_depth_stencil_image and barriers take it")

    def single_sample(self, path: tuple, image: ir.Image | None) -> None:
        """Buffer to image copies, blits and storage image bindings take single-sampled images
        (VUID-vkCmdCopyBufferToImage-dstImage-07973, VUID-vkCmdBlitImage-srcImage-00233 and kin)."""
        if image is not None and image.samples != 1:
            self.error(path, f"{image.id!r} has {image.samples} samples: only copy_image, resolve_image, clears and "
                             "barriers take a multisampled image")

    def copy_planes(self, path: tuple, r: dict, src: ir.Image | None, dst: ir.Image | None) -> list[tuple[int, int]]:
        """The (source, destination) planes of a copy_image region: `src_plane` and `dst_plane`, or one pair per
        aspect `aspects` names (VkImageSubresourceLayers' aspectMask; a depth/stencil image's aspects are its
        planes, and a copy between two names the same on both sides: VUID-vkCmdCopyImage-srcImage-01551)."""
        if "aspects" not in r:
            return [(r.get("src_plane", 0), r.get("dst_plane", 0))]
        if "src_plane" in r or "dst_plane" in r:
            self.error(path, "give `aspects` or `src_plane` and `dst_plane`, not both")
        out = []
        for aspect in r["aspects"]:
            if src is not None and dst is not None and not (aspect in src.aspects and aspect in dst.aspects):
                self.error(path + ("aspects",), f"{aspect!r} is not an aspect of both {src.id!r} ({src.format}) "
                                                f"and {dst.id!r} ({dst.format})")
            elif src is not None and dst is not None:
                out.append((src.aspects.index(aspect), dst.aspects.index(aspect)))
        return out

    def box(self, path: tuple, image: ir.Image | None, level: int, offset: tuple, extent: tuple,
            plane: int = 0) -> None:
        if image is None:
            return
        if plane >= len(image.planes):
            self.error(path, f"{image.id!r} has no plane {plane} ({image.format})")
            return
        size = level_extent(image.planes[plane][0], level) if level < image.mip_levels else (0, 0, 0)
        # A box of a compressed image may end in the partial blocks at the level's edge (spec 20.3).
        whole = tuple(-(-s // b) * b for s, b in zip(size, image.block + (1,)))
        if any(o + e > s for o, e, s in zip(offset, extent, whole)):
            self.error(path, f"the box at {list(offset)} of {list(extent)} texels is past mip level {level} of "
                             f"{image.id!r} ({list(size)})")

    def image_command(self, path: tuple, c: dict, tag: dict) -> ir.Command:
        kind = c["cmd"]
        if kind == "clear_color_image":
            image = self.image_ref(path + ("image",), c["image"])
            self.single_plane(path + ("image",), image)
            if image is not None and image.format in COMPRESSED:
                self.error(path + ("image",), f"{image.id!r} is {image.format}: a compressed image is not cleared "
                                              "(VUID-vkCmdClearColorImage-image-00007)")
            ranges = tuple(self.subresources(path + ("ranges", j), r, image)
                           for j, r in enumerate(c.get("ranges", [{}])))
            return ir.ClearColorImage(c["image"], ranges, tuple(c.get("value", (0, 0, 0, 0))),
                                      tuple(x for r in ranges for x in (image.ranges(r) if image else ())), **tag)
        if kind == "clear_depth_stencil_image":
            image = self.image_ref(path + ("image",), c["image"])
            if image is not None and image.format not in DEPTH_STENCIL:
                self.error(path + ("image",), f"{image.id!r} is {image.format}: vkCmdClearDepthStencilImage clears a "
                                              "depth/stencil image (VUID-vkCmdClearDepthStencilImage-image-00014)")
            ranges = tuple(self.subresources(path + ("ranges", j), r, image)
                           for j, r in enumerate(c.get("ranges", [{}])))
            return ir.ClearDepthStencilImage(c["image"], ranges, c.get("depth", 0.0), c.get("stencil", 0), tuple(
                x for r in ranges for x in (image.ranges(r) if image else ())), **tag)
        if kind in ("copy_image", "resolve_image"):
            src, dst = self.image_ref(path + ("src",), c["src"]), self.image_ref(path + ("dst",), c["dst"])
            if src is not None and dst is not None and kind == "copy_image" and src.samples != dst.samples:
                self.error(path, f"{src.id!r} has {src.samples} samples, {dst.id!r} {dst.samples}: a copy's images "
                                 "have as many (VUID-vkCmdCopyImage-srcImage-00136)")
            if src is not None and dst is not None and kind == "resolve_image" and (
                    src.samples == 1 or dst.samples != 1 or src.format != dst.format):
                self.error(path, f"a resolve is from a multisampled image to a single-sampled one of its format, not "
                                 f"{src.id!r} ({src.samples} samples, {src.format}) to {dst.id!r} ({dst.samples}, "
                                 f"{dst.format}) (VUID-vkCmdResolveImage-srcImage-00257, -dstImage-00259, "
                                 "-srcImage-01386)")
            regions = []
            for j, r in enumerate(c["regions"]):
                where = path + ("regions", j)
                extent = _extent(r["extent"])
                # The extent is the source's texels; the destination's box has as many of its own blocks.
                dst_extent = copy_dst_extent(extent, src.block, dst.block) if src and dst else extent
                for src_plane, dst_plane in self.copy_planes(where, r, src, dst):
                    region = ir.ImageCopyRegion(r.get("src_mip_level", 0), r.get("src_base_array_layer", 0),
                                                r.get("dst_mip_level", 0), r.get("dst_base_array_layer", 0),
                                                r.get("layer_count", 1), _offset(r.get("src_offset", [])),
                                                _offset(r.get("dst_offset", [])), extent, src_plane, dst_plane)
                    self.box(where, src, region.src_mip_level, region.src_offset, extent, region.src_plane)
                    self.box(where, dst, region.dst_mip_level, region.dst_offset, dst_extent, region.dst_plane)
                    regions.append((region, dst_extent))
            valid = [(r, e) for r, e in regions if src and dst and r.src_plane < len(src.planes)
                     and r.dst_plane < len(dst.planes)]
            cls = ir.CopyImage if kind == "copy_image" else ir.ResolveImage
            return cls(c["src"], c["dst"], tuple(r for r, _ in regions), tuple(
                x for r, _ in valid for x in src.box(r.src_mip_level, r.src_base_array_layer, r.layer_count,
                                                     r.src_offset, r.extent, r.src_plane)), tuple(
                x for r, e in valid for x in dst.box(r.dst_mip_level, r.dst_base_array_layer, r.layer_count,
                                                     r.dst_offset, e, r.dst_plane)), **tag)
        if kind == "blit_image":
            return self.blit_image(path, c, tag)
        to_image = kind == "copy_buffer_to_image"
        buffer_key, image_key = ("src", "dst") if to_image else ("dst", "src")
        total = self.buffer_ref(path + (buffer_key,), c[buffer_key])
        image = self.image_ref(path + (image_key,), c[image_key])
        self.single_plane(path + (image_key,), image)
        self.single_sample(path + (image_key,), image)
        regions, buffer_ranges, image_ranges = [], [], []
        for j, r in enumerate(c["regions"]):
            where = path + ("regions", j)
            region = ir.ImageRegion(r.get("buffer_offset", 0), r.get("buffer_row_length", 0),
                                    r.get("buffer_image_height", 0), r.get("mip_level", 0),
                                    r.get("base_array_layer", 0), r.get("layer_count", 1),
                                    _offset(r.get("image_offset", [])), _extent(r["image_extent"]))
            self.box(where, image, region.mip_level, region.image_offset, region.image_extent)
            regions.append(region)
            if image is None:
                continue
            rows = buffer_rows(region, image.texel, image.block)
            if total is not None and rows and rows[-1][1] > total:
                self.error(where, f"the region's texels end at byte {rows[-1][1]} of {c[buffer_key]!r} (size {total})")
            buffer_ranges += rows
            image_ranges += image.box(region.mip_level, region.base_array_layer, region.layer_count,
                                      region.image_offset, region.image_extent)
        cls = ir.CopyBufferToImage if to_image else ir.CopyImageToBuffer
        buffer_ranges, image_ranges = tuple(merge_ranges(buffer_ranges)), tuple(merge_ranges(image_ranges))
        return cls(c["src"], c["dst"], tuple(regions), *((buffer_ranges, image_ranges) if to_image else
                                                         (image_ranges, buffer_ranges)), **tag)

    def blit_image(self, path: tuple, c: dict, tag: dict) -> ir.BlitImage:
        src, dst = self.image_ref(path + ("src",), c["src"]), self.image_ref(path + ("dst",), c["dst"])
        for key, image in (("src", src), ("dst", dst)):
            self.single_plane(path + (key,), image)
            self.single_sample(path + (key,), image)
        regions, src_ranges, dst_ranges = [], [], []
        for j, r in enumerate(c["regions"]):
            where = path + ("regions", j)
            region = ir.ImageBlit(r.get("src_mip_level", 0), r.get("src_base_array_layer", 0),
                                  r.get("dst_mip_level", 0), r.get("dst_base_array_layer", 0), r.get("layer_count", 1),
                                  tuple(_offset(o) for o in r["src_offsets"]),
                                  tuple(_offset(o) for o in r["dst_offsets"]))
            regions.append(region)
            for image, level, layer, corners, ranges in (
                    (src, region.src_mip_level, region.src_base_array_layer, region.src_offsets, src_ranges),
                    (dst, region.dst_mip_level, region.dst_base_array_layer, region.dst_offsets, dst_ranges)):
                # The box between the two corners, which may be in either order (a blit may mirror).
                low, box = blit_box(corners)
                if not all(box):
                    self.error(where, f"the box between {[list(o) for o in corners]} holds no texels (a 2D image's z "
                                      "offsets are 0 and 1: VUID-vkCmdBlitImage-srcImage-00247, -dstImage-00252)")
                    continue
                self.box(where, image, level, low, box)
                if image is not None:
                    ranges += image.box(level, layer, region.layer_count, low, box)
        return ir.BlitImage(c["src"], c["dst"], tuple(regions), c.get("filter", "nearest"),
                            tuple(merge_ranges(src_ranges)), tuple(merge_ranges(dst_ranges)), **tag)

    def check_aliases(self, buffers: tuple[ir.Buffer, ...]) -> None:
        by_id = {b.id: b for b in buffers}
        for i, b in enumerate(buffers):
            if b.alias_of is None:
                if "offset" in self.doc["buffers"][i]:
                    self.error(("buffers", i, "offset"), "`offset` is only meaningful with `alias_of`")
                continue
            target, seen = by_id.get(b.alias_of), {b.id}
            if target is None:
                self.error(("buffers", i, "alias_of"), f"unknown buffer {b.alias_of!r}")
                continue
            sizes = (self.buffer_sizes.get(b.id), self.buffer_sizes.get(target.id))
            if None not in sizes and b.offset + b.size > target.size:
                self.error(("buffers", i), f"alias range [{b.offset}, {b.offset + b.size}) is past the end of "
                                           f"{target.id!r} (size {target.size})")
            while target.alias_of is not None and target.id not in seen:
                seen.add(target.id)
                target = by_id.get(target.alias_of, target)
            if target.id in seen:
                self.error(("buffers", i, "alias_of"), "aliases form a cycle")

    # ---- names and ranges --------------------------------------------------

    def names(self, path: tuple, value: Any, parse: Callable[[str], str | None], kind: str,
              default: frozenset[str]) -> frozenset[str]:
        if value is None:
            return default
        items = [value] if isinstance(value, str) else value
        out = set()
        for j, name in enumerate(items):
            canonical = parse(name)
            if canonical is None:
                self.error(path if isinstance(value, str) else path + (j,), f"unknown {kind} name {name!r}")
            else:
                out.add(canonical)
        return self.one(frozenset(out))

    def buffer_ref(self, path: tuple, buffer: str) -> int | None:
        """The buffer's size; None (after reporting it if unknown) when ranges cannot be checked."""
        if buffer not in self.buffer_sizes:
            self.error(path, f"unknown buffer {buffer!r}")
            return None
        return self.buffer_sizes[buffer]

    def byte_range(self, path: tuple, obj: dict, buffer: str, size_key: str = "size",
                   offset_key: str = "offset") -> tuple[int, int]:
        """(offset, size) with `size` defaulting to the rest of the buffer."""
        total = self.buffer_ref(path + ("buffer" if "buffer" in obj else "dst",), buffer)
        offset = obj.get(offset_key, 0)
        if total is None:
            return offset, obj.get(size_key, 0)
        size = obj.get(size_key, max(total - offset, 0))
        if offset + size > total:
            self.error(path, f"range [{offset}, {offset + size}) is past the end of {buffer!r} (size {total})")
        return offset, size

    # ---- commands ----------------------------------------------------------

    def command(self, path: tuple, c: dict) -> ir.Command:
        tag = {"id": c.get("id"), "label": c.get("label"), "source": c.get("source")}
        kind = c["cmd"]
        if kind == "copy":
            return self.copy(path, c, tag)
        if kind == "fill":
            offset, size = self.byte_range(path, c, c["dst"])
            return ir.Fill(c["dst"], offset, size, c.get("value", 0), **tag)
        if kind == "update":
            offset, size = self.byte_range(path, c, c["dst"])
            return ir.Update(c["dst"], offset, size, self.data(path, c.get("data"), size), **tag)
        if kind in ("dispatch", "dispatch_indirect"):
            return self.dispatch(path, c, tag)
        if kind in _IMAGE_COMMANDS:
            return self.image_command(path, c, tag)
        if kind == "write_buffer_marker":
            offset, _ = self.byte_range(path, {"offset": c.get("offset", 0), "size": 4}, c["dst"])
            stage = self.names(path + ("stage",), c.get("stage"), stage_name, "stage", frozenset({"all_commands"}))
            return ir.WriteBufferMarker(c["dst"], offset, stage, c.get("marker", 0), **tag)
        if kind == "copy_query_pool_results":
            count, size = c.get("query_count", 1), c.get("result_size", 4)
            stride = c.get("stride", size) if count > 1 else 0  # one query: the stride is not used
            span = {"offset": c.get("offset", 0), "size": stride * (count - 1) + size}
            offset, _ = self.byte_range(path, span, c["dst"])
            return ir.CopyQueryPoolResults(c["dst"], offset, stride, count, size, **tag)
        if kind == "execute_commands":
            for j, cb in enumerate(c["command_buffers"]):
                if cb not in self.doc.get("command_buffers", {}):
                    self.error(path + ("command_buffers", j), f"unknown command buffer {cb!r}")
            return ir.ExecuteCommands(tuple(c["command_buffers"]), **tag)
        if kind in ("set_event", "reset_event"):
            self.event_ref(path + ("event",), c["event"])
            if kind == "reset_event" or "stage" in c:
                stage = self.names(path + ("stage",), c.get("stage"), stage_name, "stage", frozenset({"all_commands"}))
                if kind == "reset_event":
                    return ir.ResetEvent(c["event"], stage, **tag)
                if any(key in c for key in _DEPENDENCY_KEYS):
                    self.error(path, "give `stage` (vkCmdSetEvent) or a dependency (vkCmdSetEvent2), not both")
                return ir.SetEvent(c["event"], stage, **tag)
            dependency = self.barrier(path, c, {})
            return ir.SetEvent(c["event"], frozenset().union(*ir.SetEvent("", frozenset(), dependency).first_scopes),
                               dependency, **tag)
        if kind == "wait_events":
            for j, e in enumerate(c["events"]):
                self.event_ref(path + ("events", j), e)
            if "dependencies" not in c:
                return ir.WaitEvents(tuple(c["events"]), (self.barrier(path, c, {}),) * len(c["events"]), **tag)
            if any(key in c for key in _DEPENDENCY_KEYS):
                self.error(path, "give `dependencies` (one per event) or one dependency for all events, not both")
            if len(c["dependencies"]) != len(c["events"]):
                self.error(path + ("dependencies",), f"{len(c['dependencies'])} dependencies for "
                                                     f"{len(c['events'])} events: give one per event")
            return ir.WaitEvents(tuple(c["events"]), tuple(self.barrier(path + ("dependencies", j), d, {})
                                                          for j, d in enumerate(c["dependencies"])), **tag)
        return self.barrier(path, c, tag)

    def event_ref(self, path: tuple, event: str) -> None:
        if event not in self.event_ids:
            self.error(path, f"unknown event {event!r}")

    def copy(self, path: tuple, c: dict, tag: dict) -> ir.Copy:
        src = self.buffer_ref(path + ("src",), c["src"])
        dst = self.buffer_ref(path + ("dst",), c["dst"])
        if "regions" in c:
            regions = tuple(ir.Region(r.get("src_offset", 0), r.get("dst_offset", 0), r["size"]) for r in c["regions"])
        else:
            regions = (ir.Region(0, 0, min(src or 0, dst or 0)),)
        for j, r in enumerate(regions):
            for side, total, off in (("src", src, r.src_offset), ("dst", dst, r.dst_offset)):
                if total is not None and off + r.size > total:
                    self.error(path + ("regions", j), f"{side} range [{off}, {off + r.size}) is past the end of "
                                                      f"{c[side]!r} (size {total})")
        return ir.Copy(c["src"], c["dst"], regions, **tag)

    def dispatch(self, path: tuple, c: dict, tag: dict) -> ir.Dispatch:
        accesses = self.shader_accesses(path + ("shader",), c["shader"], len(c["bindings"]))
        bindings = []
        for j, b in enumerate(c["bindings"]):
            if ("image" in b) == ("buffer" in b):  # not in the schema: a oneOf there costs every binding twice
                self.error(path + ("bindings", j), "a binding names a `buffer` or an `image`, one of them")
                continue
            image = self.image_ref(path + ("bindings", j, "image"), b["image"]) if "image" in b else None
            offset, size = (0, image.memory_view.size if image else 0) if "image" in b else \
                self.byte_range(path + ("bindings", j), b, b["buffer"])
            access = b.get("access") or (accesses[j] if accesses and j < len(accesses) else None)
            if access is None:
                self.error(path + ("bindings", j, "access"), "no access given and the shader does not declare one")
                access = "read_write"
            elif accesses and j < len(accesses) and not _access_covers(access, accesses[j]):
                self.error(path + ("bindings", j, "access"),
                           f"declared {access!r} but shader {c['shader']!r} binding {j} is {accesses[j]!r}")
            if access == "sampled" and "image" not in b:
                self.error(path + ("bindings", j, "access"), "a sampled binding is an image's (a combined image "
                                                             "sampler); a uniform texel buffer is not in the format")
            if "image" in b:
                self.single_plane(path + ("bindings", j, "image"), image)
                self.single_sample(path + ("bindings", j, "image"), image)
                r = self.subresources(path + ("bindings", j), b, image)
                bindings.append(ir.Binding(b["image"], offset, size, access, r,
                                           tuple(image.ranges(r)) if image else ()))
            else:
                bindings.append(self.one(ir.Binding(b["buffer"], offset, size, access)))
        indirect = None
        if "indirect" in c:
            ind = c["indirect"]
            total = self.buffer_ref(path + ("indirect", "buffer"), ind["buffer"])
            if total is not None and ind.get("offset", 0) + 12 > total:
                self.error(path + ("indirect",), f"the 12-byte indirect command at {ind.get('offset', 0)} is past "
                                                 f"the end of {ind['buffer']!r} (size {total})")
            indirect = ir.IndirectRef(ind["buffer"], ind.get("offset", 0))
        groups = tuple(c.get("groups", [1])) + (1,) * (3 - len(c.get("groups", [1])))
        return ir.Dispatch(c["shader"], self.one(tuple(bindings)), self.one(groups), self.one(tuple(c.get("push", ()))),
                           indirect, **tag)

    def shader_accesses(self, path: tuple, shader: str, count: int) -> tuple[str, ...] | None:
        """Per binding access of a declared or library shader; None when unknown."""
        if shader in self.shader_decls:
            declared = self.shader_decls[shader].bindings
        else:
            declared = _library_accesses(shader)
            if declared is None:
                declared_here = ", ".join(self.shader_decls) or "none"
                self.error(path, f"unknown shader {shader!r}: not in `shaders` ({declared_here}) nor in the shader "
                                 f"library ({', '.join(_library_names()) or 'not installed'})")
                return None
        if len(declared) != count:
            self.error(path, f"shader {shader!r} has {len(declared)} bindings, the dispatch binds {count}")
        return declared

    def barrier(self, path: tuple, c: dict, tag: dict) -> ir.Barrier:
        masks = self.masks(path, c, None)
        entries = []
        for j, b in enumerate(c.get("buffers", [])):
            offset, size = self.byte_range(path + ("buffers", j), b, b["buffer"])
            if ("src_family" in b) != ("dst_family" in b):
                self.error(path + ("buffers", j), "give both `src_family` and `dst_family`, or neither")
            entries.append(ir.BufferBarrier(b["buffer"], offset, size, *self.masks(path + ("buffers", j), b, masks),
                                            b.get("src_family"), b.get("dst_family")))
        images = []
        for j, b in enumerate(c.get("images", [])):
            where = path + ("images", j)
            image = self.image_ref(where + ("image",), b["image"])
            r = self.subresources(where, b, image, slices=True)
            if ("src_family" in b) != ("dst_family" in b):
                self.error(where, "give both `src_family` and `dst_family`, or neither")
            for key in ("old_layout", "new_layout"):
                if key in b and layout_name(b[key]) is None:
                    self.error(where + (key,), f"unknown layout {b[key]!r} (known: {', '.join(LAYOUTS)})")
            images.append(ir.ImageBarrier(b["image"], r, *self.masks(where, b, masks),
                                          layout_name(b.get("old_layout", "general")) or "general",
                                          layout_name(b.get("new_layout", "general")) or "general",
                                          b.get("src_family"), b.get("dst_family"),
                                          tuple(image.barrier_ranges(r)) if image else ()))
        return ir.Barrier(*masks, tuple(entries), tuple(images), **tag)

    def masks(self, path: tuple, obj: dict, inherited: tuple | None) -> tuple[frozenset, ...]:
        all_commands, none = frozenset({"all_commands"}), frozenset()
        defaults = inherited or (all_commands, none, all_commands, none)
        return tuple(
            self.names(path + (key,), obj.get(key), stage_name if key.endswith("stage") else access_name,
                       "stage" if key.endswith("stage") else "access", default)
            for key, default in zip(("src_stage", "src_access", "dst_stage", "dst_access"), defaults))

    def data(self, path: tuple, d: dict | None, size: int) -> ir.Data | None:
        if d is None:
            return None
        if "base64" in d:
            try:
                n = len(base64.b64decode(d["base64"], validate=True))
            except binascii.Error:
                self.error(path + ("data", "base64"), "not valid base64")
            else:
                if n != size:
                    self.error(path + ("data", "base64"), f"{n} bytes of data for a range of {size} bytes")
        return ir.Data(d.get("pattern"), d.get("value"), d.get("seed"), d.get("base64"))

    # ---- host ops ----------------------------------------------------------

    def host_op(self, path: tuple, op: dict) -> ir.HostOp:
        tag = {"id": op.get("id"), "label": op.get("label"), "source": op.get("source")}
        kind = op["op"]
        if kind == "submit":
            return self.submit(path, op, tag)
        if kind in ("wait_fences", "reset_fences"):
            for j, f in enumerate(op["fences"]):
                if f not in self.fence_ids:
                    self.error(path + ("fences", j), f"unknown fence {f!r}")
            cls = ir.WaitFences if kind == "wait_fences" else ir.ResetFences
            return cls(tuple(op["fences"]), **tag)
        if kind == "wait_semaphores":
            for j, w in enumerate(op["waits"]):
                self.semaphore_ref(path + ("waits", j), w, timeline_only=True)
            return ir.WaitSemaphores(tuple(ir.SemaphoreValue(self.payloads.get(w["semaphore"], w["semaphore"]),
                                                             w["value"]) for w in op["waits"]), **tag)
        if kind == "signal_semaphore":
            self.semaphore_ref(path, op, timeline_only=True)
            return ir.SignalSemaphore(self.payloads.get(op["semaphore"], op["semaphore"]), op["value"], **tag)
        if kind == "get_semaphore_counter_value":
            self.semaphore_ref(path, op, timeline_only=True)
            return ir.GetSemaphoreCounterValue(
                (ir.SemaphoreValue(self.payloads.get(op["semaphore"], op["semaphore"]), op["value"]),), **tag)
        if kind in ("host_write", "host_read", "flush", "invalidate"):
            offset, size = self.byte_range(path, op, op["buffer"])
            return ir.HostAccess(kind, op["buffer"], offset, size, self.data(path, op.get("data"), size), **tag)
        if kind in ("set_event", "reset_event"):
            self.event_ref(path + ("event",), op["event"])
            return (ir.HostSetEvent if kind == "set_event" else ir.HostResetEvent)(op["event"], **tag)
        if kind == "queue_wait_idle":
            if op["queue"] not in self.queue_ids:
                self.error(path + ("queue",), f"unknown queue {op['queue']!r}")
            return ir.QueueWaitIdle(op["queue"], **tag)
        if kind == "device_wait_idle":
            device = op.get("device") or next(iter(sorted(self.device_ids)))
            if "device" not in op and len(self.device_ids) > 1:
                self.error(path, "`device` is required when the stream has several devices")
            elif device not in self.device_ids:
                self.error(path + ("device",), f"unknown device {device!r}")
            return ir.DeviceWaitIdle(device, **tag)
        if op["buffer"] not in self.images:  # an image's lifetime ends as a buffer's does
            self.buffer_ref(path + ("buffer",), op["buffer"])
        return ir.Destroy(op["buffer"], **tag)

    def submit(self, path: tuple, op: dict, tag: dict) -> ir.Submit:
        if op["queue"] not in self.queue_ids:
            self.error(path + ("queue",), f"unknown queue {op['queue']!r}")
        if op.get("fence") is not None and op["fence"] not in self.fence_ids:
            self.error(path + ("fence",), f"unknown fence {op['fence']!r}")
        shorthand = any(k in op for k in ("wait", "command_buffers", "signal"))
        if shorthand and "batches" in op:
            self.error(path, "give either `batches` or `wait`/`command_buffers`/`signal`, not both")
        batch_docs = [(path, op)] if shorthand else \
            [(path + ("batches", j), b) for j, b in enumerate(op.get("batches", []))]
        batches, submitted, secondaries = [], set(), {}
        for bpath, b in batch_docs:
            for j, cb in enumerate(b.get("command_buffers", [])):
                for run in self.secondary_runs.get(cb, ()):
                    if run in secondaries:
                        self.error(bpath + ("command_buffers", j), f"secondary command buffer {run!r} runs in "
                                   f"{secondaries[run]!r} and {cb!r} of this submit: give each run its own command "
                                   "buffer")
                    secondaries[run] = cb
                if cb not in self.doc.get("command_buffers", {}):
                    self.error(bpath + ("command_buffers", j), f"unknown command buffer {cb!r}")
                elif cb in self.secondaries:
                    self.error(bpath + ("command_buffers", j), f"command buffer {cb!r} is a secondary one (an "
                                                               "execute_commands runs it): it cannot be submitted")
                elif cb in submitted:
                    # Spec 6.4: without SIMULTANEOUS_USE it must not be pending twice; `cb[i]@submit` names one run.
                    self.error(bpath + ("command_buffers", j), f"command buffer {cb!r} is submitted twice by this "
                                                               "submit")
                submitted.add(cb)
            waits = tuple(self.semaphore_op(bpath + ("wait", j), w) for j, w in enumerate(b.get("wait", [])))
            signals = tuple(self.semaphore_op(bpath + ("signal", j), s) for j, s in enumerate(b.get("signal", [])))
            batches.append(ir.Batch(waits, tuple(b.get("command_buffers", [])), signals))
        return ir.Submit(op["queue"], tuple(batches), op.get("fence"), **tag)

    def semaphore_payloads(self, docs: list[dict], semaphores: tuple[ir.Semaphore, ...]) -> dict[str, str]:
        """Per semaphore that imports another's payload permanently (`payload_of`), the semaphore holding that
        payload: waits and signals of either handle are of one payload (7.4.5 "Importing Semaphore Payloads": "A
        permanent payload import behaves as if the target semaphore was destroyed, and a new semaphore was created
        with the same handle but the imported payload"; "importing a payload to a semaphore adds the semaphore to the
        set of all semaphores sharing that payload"). It has the payload's type
        (VUID-VkImportSemaphoreFdInfoKHR-handleType-03264) and value, not an initial one of its own."""
        by_id = {s.id: s for s in semaphores}
        out = {}
        for i, s in enumerate(semaphores):
            if s.payload_of is None:
                continue
            path, seen, root = ("semaphores", i), {s.id}, s.payload_of
            while root in by_id and by_id[root].payload_of is not None and root not in seen:
                seen.add(root)
                root = by_id[root].payload_of
            if root not in by_id:
                self.error(path + ("payload_of",), f"unknown semaphore {s.payload_of!r}")
            elif root in seen:
                self.error(path + ("payload_of",), f"{s.id!r} imports its own payload (a cycle of payload_of)")
            elif by_id[root].type != s.type:
                self.error(path + ("type",),
                           f"{s.id!r} is {s.type}, the payload it imports ({root!r}) {by_id[root].type}")
            elif "initial" in docs[i]:
                self.error(path + ("initial",), f"{s.id!r} imports {root!r}'s payload, and with it its value: no "
                                                "`initial` of its own")
            else:
                out[s.id] = root
        return out

    def semaphore_op(self, path: tuple, s: dict) -> ir.SemaphoreOp:
        self.semaphore_ref(path, s, timeline_only=False)
        stage = self.names(path + ("stage",), s.get("stage"), stage_name, "stage", frozenset({"all_commands"}))
        return ir.SemaphoreOp(self.payloads.get(s["semaphore"], s["semaphore"]), s.get("value"), stage)

    def semaphore_ref(self, path: tuple, s: dict, timeline_only: bool) -> None:
        kind = self.semaphore_types.get(s["semaphore"])
        if kind is None:
            self.error(path + ("semaphore",), f"unknown semaphore {s['semaphore']!r}")
        elif kind == "binary" and timeline_only:
            self.error(path + ("semaphore",), f"{s['semaphore']!r} is a binary semaphore; this op needs a timeline one")
        elif kind == "binary" and "value" in s:
            self.error(path + ("value",), f"{s['semaphore']!r} is a binary semaphore: it takes no `value`")
        elif kind == "timeline" and "value" not in s:
            self.error(path, f"{s['semaphore']!r} is a timeline semaphore: `value` is required")

    def param(self, name: str, p: dict) -> ir.Param:
        if p["min"] > p["max"]:
            self.error(("params", name), f"min {p['min']} is greater than max {p['max']}")
        return ir.Param(name, p["min"], p["max"])

    # ---- cross references --------------------------------------------------

    def check_references(self, stream: ir.Stream) -> None:
        ids: dict[str, str] = {}
        for path, item in _items_with_ids(stream):
            if item.id in ids or parse_ref(split_submit(item.id)[0]) or "@" in item.id:
                why = "is used twice" if item.id in ids else "looks like a positional reference" \
                    if "@" not in item.id else "holds '@', which spells a submission (cb0[2]@main[5])"
                self.error(path + ("id",), f"id {item.id!r} {why}")
            ids[item.id] = path

    def expected(self, path: tuple, f: dict, stream: ir.Stream) -> ir.ExpectedFinding:
        for key in ("first", "second"):
            if f.get(key) is not None and resolve_ref(stream, f[key]) is None:
                self.error(path + (key,), f"no operation {f[key]!r} in this stream")
        for j, ref in enumerate(f.get("ops", [])):
            if resolve_ref(stream, ref) is None:
                self.error(path + ("ops", j), f"no operation {ref!r} in this stream")
        if f.get("kind") == "event_race":  # its `buffer` names the event whose state races (docs/format.md)
            if f.get("buffer") is not None and f["buffer"] not in stream.index.events:
                self.error(path + ("buffer",), f"unknown event {f['buffer']!r}")
        elif f.get("buffer") is not None and f["buffer"] not in stream.index.buffers:
            self.error(path + ("buffer",), f"unknown buffer {f['buffer']!r}")
        return ir.ExpectedFinding(f["kind"], f.get("buffer"), f.get("first"), f.get("second"),
                                  tuple(f["ops"]) if "ops" in f else None,
                                  tuple(sorted(f["params"].items())) if "params" in f else None,
                                  tuple(f["range"]) if "range" in f else None)


_DEPENDENCY_KEYS = ("src_stage", "src_access", "dst_stage", "dst_access", "buffers", "images")
_IMAGE_COMMANDS = ("copy_buffer_to_image", "copy_image_to_buffer", "copy_image", "blit_image", "resolve_image",
                   "clear_color_image", "clear_depth_stencil_image")


def _offset(values: list[int]) -> tuple[int, int, int]:
    """An offset of 1-3 numbers as three: the missing ones are 0."""
    return tuple(values) + (0,) * (3 - len(values))


def _extent(values: list[int]) -> tuple[int, int, int]:
    """An extent of 1-3 numbers as three: the missing ones are 1."""
    return tuple(values) + (1,) * (3 - len(values))


def _access_covers(declared: str, actual: str) -> bool:
    """A stream may declare more access than the shader has, never less."""
    if declared == actual or declared == "read_write" or actual == "none":
        return True
    return declared == "read" and actual == "uniform" or declared == "uniform" and actual == "read"


def _library_accesses(shader: str) -> tuple[str, ...] | None:
    try:
        from ..shaders import binding_accesses
    except ImportError:  # the shader library is optional for the model
        return None
    return binding_accesses(shader)


def _library_names() -> list[str]:
    try:
        from ..shaders import library
    except ImportError:
        return []
    return sorted(library())


def _replace(stream: ir.Stream, **fields) -> ir.Stream:
    from dataclasses import replace
    return replace(stream, **fields)


def _items_with_ids(stream: ir.Stream):
    for cb in stream.command_buffers:
        for i, c in enumerate(cb.commands):
            if c.id is not None:
                yield ("command_buffers", cb.id, i), c
    for t in stream.threads:
        for i, op in enumerate(t.ops):
            if op.id is not None:
                yield ("threads", t.id, i), op


def resolve_ref(stream: ir.Stream, ref: str) -> str | None:
    """The positional form (`cb0[2]`, `main[4]`, keeping any `@submission`) of a reference or id."""
    base, at = split_submit(ref)
    parsed = parse_ref(base)
    if parsed:
        cb, thread = stream.index.command_buffers.get(parsed.owner), stream.index.threads.get(parsed.owner)
        seq = cb.commands if cb else (thread.ops if thread else None)
        if seq is None or parsed.index >= len(seq):
            return None
        positional = base
    else:
        positional = stream.index.ids.get(base)
        if positional is None:
            return None
    if at:
        at_resolved = resolve_ref(stream, at)
        return None if at_resolved is None else with_submit(positional, at_resolved)
    return positional
