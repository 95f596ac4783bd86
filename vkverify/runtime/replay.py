"""Replay a stream on a device: resources, command buffers, host threads.

Host threads run as Python threads, each thread's ops in program order; they
order each other only through the stream's own fences and semaphores (and the
runtime holds a binary wait back until its signal is submitted). Afterwards
every buffer that is neither an alias nor destroyed, and every image not destroyed (the bytes
of its linear layout, model/images.py), is read back, and each one's bytes and
each host_read's bytes get a sha256 digest.
"""

from __future__ import annotations

import hashlib

from ..model import ir
from ..model.accesses import binding_writes
from ..model.images import DEPTH_STENCIL, FORMATS, PLANES
from ..model.refs import format_ref
from ..shaders import generic_plan
from .create import create_objects, queue_requests
from .errors import Unsupported
from .images import KERNEL_VIEW_FORMATS
from .record import QUERY_RESULT_FLAGS
from .host_threads import run_concurrently, run_thread_ops
from .multidevice import replay_devices
from .replay_result import ReplayResult, finish
from .runtime import Runtime

__all__ = ["ReplayResult", "replay", "replayable"]

BUFFER_MARKER = "VK_AMD_buffer_marker"
# The uniform kernel's block (uniform_load.comp), which reads an abstract shader's uniform binding.
UNIFORM_BLOCK = 65536
# Findings after which a real device would hang or touch freed memory.
UNSAFE_KINDS = frozenset({"use_after_destroy", "deadlock", "wait_never_satisfied", "fence_misuse",
                          "binary_semaphore_misuse", "timeline_not_increasing"})


# Images the runtime does not replay: (which, why), the first that a stream's image meets is its refusal.
_IMAGE_REFUSALS = (
    (lambda i: i.format in PLANES, lambda i: f"is {i.format}: multi-planar images are not replayed (the runtime's "
                                             "images are one plane: create_image takes no multi-planar format)"),
    (lambda i: i.alias_of is not None, lambda i: f"aliases {i.alias_of!r}: aliased images are not replayed (the "
                                                 "runtime binds each image to memory of its own)"),
    (lambda i: i.samples != 1, lambda i: f"has {i.samples} samples: multisampled images are not replayed (the "
                                         "runtime uploads and reads back single-sampled images)"),
    (lambda i: i.format in DEPTH_STENCIL, lambda i: f"is {i.format}: depth/stencil images are not replayed (the "
                                                    "runtime creates, uploads and reads back color images only)"),
)


def replayable(stream: ir.Stream) -> str | None:
    """Why `stream` cannot run on a device, or None when it can."""
    from ..check import check

    unsafe = sorted({f.kind for f in check(stream)} & UNSAFE_KINDS)
    if unsafe:
        return f"{', '.join(unsafe)}: a device would hang or touch freed memory"
    if stream.events and len(stream.devices) > 1:
        # A VkEvent belongs to one VkDevice, and multi-device replay gives each stream device its own.
        return "events are replayed in a stream of one device"
    executed = {s for cb in stream.command_buffers for c in cb.commands if isinstance(c, ir.ExecuteCommands)
                for s in c.command_buffers}
    nested = sorted(cb.id for cb in stream.command_buffers if cb.id in executed
                    and any(isinstance(c, ir.ExecuteCommands) for c in cb.commands))
    if nested:
        # VUID-vkCmdExecuteCommands-bufferlevel-00088 without VK_EXT_nested_command_buffer, which the runtime
        # does not enable.
        return f"secondary command buffer {nested[0]!r} executes another: nesting needs VK_EXT_nested_command_buffer"
    abstract = {s.id for s in stream.shaders}
    written_by_abstract = {b.buffer for cb in stream.command_buffers for c in cb.commands
                           if isinstance(c, ir.Dispatch) and c.shader in abstract
                           for b in c.bindings if binding_writes(b.access)}
    if stream.images and len(stream.devices) > 1:
        return "images on a stream of several devices: multi-device replay creates and reads back buffers only"
    for refused, why in _IMAGE_REFUSALS:
        image = next((i for i in stream.images if refused(i)), None)
        if image is not None:
            return f"image {image.id!r} {why(image)}"
    if needed_extensions(stream) and len(stream.devices) > 1:
        return "buffer markers are replayed in a stream of one device (the one that enables VK_AMD_buffer_marker)"
    for cb in stream.command_buffers:
        for i, c in enumerate(cb.commands):
            if isinstance(c, ir.CopyQueryPoolResults) and c.result_size not in QUERY_RESULT_FLAGS:
                return (f"{format_ref(cb.id, i)}: a query result of {c.result_size} bytes has no Vulkan layout (4, 8: "
                        "one 32- or 64-bit value; 16: a 64-bit value and its availability)")
            # A `none` image binding is bound and not accessed: the generic kernel leaves it out.
            image = next((b for b in c.bindings if b.subresources is not None and b.access != "none"), None) \
                if isinstance(c, ir.Dispatch) else None
            if image is not None:
                why = storage_image_refusal(stream, c, image)
                if why is not None:
                    kind = "sampled" if image.access == "sampled" else "storage"
                    return f"{format_ref(cb.id, i)} binds image {image.buffer!r} as a {kind} image: {why}"
            if isinstance(c, ir.Dispatch) and c.indirect is not None and c.indirect.buffer in written_by_abstract:
                return (f"dispatch_indirect reads group counts from {c.indirect.buffer!r}, which an abstract shader "
                        "writes with hash values past any device's maxComputeWorkGroupCount")
            if isinstance(c, ir.Dispatch) and c.shader in abstract:
                wide = next((b for b in c.bindings if b.access == "uniform" and b.size > UNIFORM_BLOCK), None)
                if wide is not None:
                    return (f"{format_ref(cb.id, i)} (abstract shader {c.shader!r}): its uniform binding of "
                            f"{wide.buffer!r} is {wide.size} bytes; the uniform kernel's block is {UNIFORM_BLOCK}")
                try:
                    generic_plan([b.access for b in c.bindings])
                except ValueError as e:  # the library's generic kernels stand for abstract shaders on a device
                    return f"{format_ref(cb.id, i)} (abstract shader {c.shader!r}): {e}"
    return None


def needed_extensions(stream: ir.Stream) -> tuple[str, ...]:
    """The device extensions a replay of `stream` enables: VK_AMD_buffer_marker for buffer markers (a device without
    it refuses the stream as the runtime opens it, naming the extension)."""
    markers = any(isinstance(c, ir.WriteBufferMarker) for cb in stream.command_buffers for c in cb.commands)
    return (BUFFER_MARKER,) if markers else ()


def storage_image_refusal(stream: ir.Stream, c: ir.Dispatch, binding: ir.Binding) -> str | None:
    """Why the image kernels (runtime/record.py, image_words) cannot run `c`'s storage image or sampled `binding`,
    or None."""
    format = stream.index.images[binding.buffer].format
    if c.shader not in {s.id for s in stream.shaders}:
        return f"shader {c.shader!r} is not abstract: only an abstract shader's image bindings replay"
    if binding.access not in ("read", "write", "read_write", "sampled"):
        return f"a {binding.access} image binding has no image kernel"
    if FORMATS[format] not in KERNEL_VIEW_FORMATS:
        return f"{format} has {FORMATS[format]}-byte texels: the image kernels move 4-, 8- and 16-byte ones"
    return None


def replay(stream: ir.Stream, device: str | None = None, syncval: bool = False,
           timestamps: bool = False) -> ReplayResult:
    """Run `stream` on `device` (default VKVERIFY_DEVICE, else the first GPU, else Lavapipe);
    a stream with several devices runs on one VkDevice each (multidevice.replay_devices).
    timestamps: each command buffer timed on the GPU (`ReplayResult.gpu_ns`; one device only).

    Raises Unsupported for a stream that cannot run (see `replayable`),
    DeviceFault when a Vulkan call fails; what was created is freed either way.
    """
    reason = replayable(stream)
    if reason is not None:
        raise Unsupported(f"{stream.name}: {reason}")
    if len(stream.devices) > 1:
        if timestamps:
            raise Unsupported(f"{stream.name}: timestamps are taken on a stream of one device")
        return replay_devices(stream, device, syncval)
    with Runtime(queue_requests(stream, stream.devices[0]), device=device, validation=syncval, syncval=syncval,
                 check=False, name=stream.name, device_id=stream.devices[0].id, timestamps=timestamps,
                 extensions=needed_extensions(stream)) as rt:
        create_objects(stream, {stream.devices[0].id: rt})
        reads: dict[str, str] = {}
        run_concurrently([(lambda t: run_thread_ops(rt.execute, stream, t, reads), t, t.id) for t in stream.threads],
                         rt.aborted)
        rt.device_idle()
        digests = {b.id: hashlib.sha256(rt.read_back(b.id)).hexdigest() for b in stream.buffers
                   if b.alias_of is None and rt.buffers[b.id].handle is not None}
        digests.update({i.id: hashlib.sha256(rt.read_back(i.id)).hexdigest() for i in stream.images
                        if i.id in rt.images})
        result = ReplayResult(stream.name, rt.device.name, digests, reads, rt.stream(),
                              gpu_ns=rt.gpu_nanoseconds() if timestamps else {})
    return finish(result, stream, list(rt.instance.messages), syncval)
