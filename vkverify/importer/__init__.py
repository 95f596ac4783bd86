"""Import a GFXReconstruct capture as a vkverify stream.

    stream, summary = import_capture("app.gfxr")   # or a gfxrecon-convert .jsonl
    print("\\n".join(summary.lines()))

A .gfxr goes through gfxrecon-convert (calls as JSON lines) and
gfxrecon-extract (the SPIR-V the program passed); its fill-memory records
(host writes through mapped pointers, with the bytes written), push
constants, specialization constants, descriptor update templates' data
and call threads are read from the binary blocks. A shader module
whose SPIR-V is a library kernel's is dispatched as that kernel, with the
push constants captured, so the stream replays what the program computed. A
.jsonl has none of that: host writes are assumed (see
`ImportSummary.assumed`), shaders without `shader_dir` have every storage
binding taken as read_write, pipelines are reflected with every branch, and
dispatches whose sets a template wrote are unresolved. Nothing here calls
Vulkan.

What a program states in debug-utils metadata, which a capture keeps, the import
takes over what Vulkan objects would say (the vkverify runtime states it, so that
a capture of its replay is the stream it replayed, on devices that merge queues
or memory kinds):
- a buffer's or image's debug name is its id (`Resources.name_buffer`, `name_image`); a command recorded
  inside command-buffer label regions keeps them in its label;
- a queue label region (vkQueueBeginDebugUtilsLabelEXT) named
  "queue <id>, family <n>": the submits and idle waits on that VkQueue inside it
  are stream queue <id>'s, of stream family <n>, whichever VkQueue and family
  served it; a VkQueue whose calls were all labelled is no queue of its own;
- a command-buffer label (vkCmdInsertDebugUtilsLabelEXT)
  "buffer barrier <i>: queue family <src> -> <dst>" ("image barrier <i>: ..."):
  buffer (image) barrier <i> of the next pipeline barrier transfers ownership
  from family <src> to <dst> (the families of such labels), whatever its queue
  family indices say;
- a VkDeviceMemory whose debug name is a stream memory kind (`host_cached`, ...)
  is of that kind, whatever its memory type's property flags;
- a debug message (vkSubmitDebugUtilsMessageEXT) "host_write" or "host_read":
  the calling thread's next flush or invalidate is that host access's (made so
  that the capture records it), not a flush or invalidate of the stream's;
  "concurrent": its next vkCreateBuffer or vkCreateImage is of a concurrent buffer or
  image, whatever its sharing mode (exclusive where the device has one queue family).

`capture_env` is the environment that runs a program under the capture layer.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from operator import itemgetter
from os import PathLike
from pathlib import Path

from ..model import InvalidStream, UsageError, from_dict, ir
from ..model.dump import Encoded
from ..model.gcpause import cyclic_gc_paused
from .batches import ImportedBatch
from .errors import CaptureError
from .gfxr import (Blocks, CapturedBytes, capture_env, converting, decompress, extracting, held_open, read_blocks,
                   reading_blocks)
from .records import Call, call_index, read_calls, read_lines
from .resources import Resources
from .summary import ImportSummary
from .translate import PROGRESS_CALLS, UNREADABLE, Translator, UnreadableCall

__all__ = ["PROGRESS_CALLS", "CaptureError", "ImportSummary", "call_index", "capture_env", "import_capture",
           "import_document"]


def import_capture(path: str | Path, shader_dir: str | Path | None = None, threads: bool = False,
                   assume_reads: bool = True,
                   progress: Callable[[str], None] | None = None) -> tuple[ir.Stream, ImportSummary]:
    """The stream a capture records, and what the import skipped, assumed and warns about.

    By default the calls go on one thread `main`, in capture order: how the
    program's threads synchronize with each other (mutexes, condition
    variables, joins) is not in a capture, and a second thread that waits for
    a semaphore before the first destroys what it used (wgpu's poller does) is
    ordered only through that. A thread that signals semaphores from the host
    (a proxy between devices' timelines) hands what it waited for on through
    Vulkan: it stays a thread of its own, so that its waits block only it.
    `threads=True` (a .gfxr only) keeps each capture thread as a stream
    thread, ordered only through Vulkan objects.

    A capture records no host reads: `assume_reads` adds the readback
    pattern's (the host reads a staging buffer the device wrote, after the
    first host wait that covers the write), labelled "assumed host read"
    (readback.py; docs/format.md, "Host reads in imported captures").

    A capture that ends without the program's teardown (cut off inside a
    block, or without vkDestroyDevice) and one that uses events give a
    partial summary (`ImportSummary.partial_lines`).

    `progress` is told, on a capture of PROGRESS_CALLS calls or more, how many calls were read every
    PROGRESS_CALLS calls, then each later step.

    Raises CaptureError for a capture that cannot be read (cut off before a
    device, of another converter version, without a device).
    """
    doc, summary = import_document(path, shader_dir, threads, assume_reads, progress)
    try:
        return _stream(doc, str(path)), summary
    except InvalidStream as e:  # a mapping gap: say where, in the capture's terms
        raise CaptureError(str(path), f"the imported stream is invalid: {e.lines()[0]}") from None


def import_document(path: str | Path, shader_dir: str | Path | None = None, threads: bool = False,
                    assume_reads: bool = True,
                    progress: Callable[[str], None] | None = None) -> tuple[dict, ImportSummary]:
    """`import_capture`'s stream as the document it is built from (vkverify-stream/1, as parsed JSON), for a
    caller that writes it out (model.dump.document_chunks): building the IR was a third of an import's time and
    memory. The bytes of fill-memory records stay in the capture until written (gfxr.CapturedBytes, whose str()
    is their base64 text), and each command buffer's commands are their texts (model.dump.Encoded). The
    translator shapes it right by construction (the suite loads every document it imports strictly)."""
    for argument, value in (("path", path), ("shader_dir", shader_dir or "")):
        if not isinstance(value, (str, PathLike)):
            raise UsageError(argument, f"expected a str or a Path, got {type(value).__name__}")
    path = Path(path)
    if not path.is_file():
        raise CaptureError(str(path), "no such file")
    with cyclic_gc_paused():  # millions of dicts and no cycle: each collection would walk them all again
        if path.suffix != ".gfxr":
            return _translate(path, read_calls(path, str(path)), None if shader_dir is None else Path(shader_dir),
                              None, False, assume_reads, progress)
        with tempfile.TemporaryDirectory(prefix="vkverify-import-") as tmp, \
                extracting(path, Path(tmp)) as shaders, reading_blocks(path) as blocks:  # both while the walk goes on
            compressed = blocks.compressed
            if compressed:  # the fill bytes and push constants are in the compressed part
                blocks.load(math.inf)
                blocks = replace(read_blocks(decompress(path, Path(tmp)), shown_as=path), truncated=blocks.truncated)
            with converting(path, Path(tmp)) as lines, held_open(blocks.path):  # converts while the walk goes on
                doc, summary = _translate(path, read_lines(lines, str(path)), shaders(), blocks, threads,
                                          assume_reads, progress)
            if compressed:  # its bytes are in the uncompressed copy, which goes with `tmp`
                _as_text(doc)
            return doc, summary


def _translate(path: Path, calls: Iterator[Call], shader_dir: Path | None, blocks: Blocks | None,
               threads: bool, assume_reads: bool,
               progress: Callable[[str], None] | None) -> tuple[dict, ImportSummary]:
    translator = Translator(Resources(shader_dir), blocks, threads, assume_reads, progress)
    try:
        translator.run(calls)
        translator.say(f"{translator.summary.calls} calls read: inferring the host reads, then the stream")
        if not translator.devices:
            cut = "" if translator.truncated is None else f" (truncated: {translator.truncated})"
            raise CaptureError(str(path), f"no vkCreateDevice among its {translator.summary.calls} calls{cut}: "
                                          "nothing to import")
        doc = translator.document(path.stem)
    except UnreadableCall as e:
        raise CaptureError(str(path), str(e)) from None
    except UNREADABLE as e:  # calls each readable that do not fit together (a handle of another kind)
        raise CaptureError(str(path), f"calls that do not fit together ({type(e).__name__}: {str(e)[:200]})") from None
    summary = translator.summary
    for ops in doc["threads"].values():  # counted in C: a long run has 100k ops
        summary.host_ops.update(map(itemgetter("op"), ops))
    return doc, summary


def _stream(doc: dict, file: str) -> ir.Stream:
    """The stream of the translator's document (its captured bytes made text, its batches JSON, in place). Its
    value and schema checks were half an import's loading time, and the translator shapes a document right by
    construction (a test checks its documents with them): they run only to say what is wrong when the document
    does not build."""
    _as_text(doc, batches=True)
    cbs = doc["command_buffers"]
    for cb, commands in cbs.items():  # the translator's are their texts (model.dump.Encoded)
        if isinstance(commands, Encoded):
            cbs[cb] = commands.decoded()
    try:
        return from_dict(doc, file, schema=False)
    except (InvalidStream, KeyError, TypeError, AttributeError, ValueError, IndexError):
        return from_dict(doc, file)


def _as_text(doc: dict, batches: bool = False) -> None:
    """`doc` with the bytes of the capture it holds (gfxr.CapturedBytes) as their base64 text, in place; with
    `batches`, its submits' batches (batches.ImportedBatch) as their JSON too."""
    for ops in doc["threads"].values():
        for op in ops:
            if "data" in op and isinstance(op["data"].get("base64"), CapturedBytes):
                op["data"] = {**op["data"], "base64": str(op["data"]["base64"])}
            elif batches and "batches" in op:
                op["batches"] = [b.as_json() if isinstance(b, ImportedBatch) else b for b in op["batches"]]
