"""Creating a stream's objects on the runtimes of its devices: the one path single- and
multi-device replay share (multi-device replay creates what its devices share itself)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..check.walk import Consumer, Walk
from ..model import ir
from .device import QueueRequest, internal_group
from .errors import Unsupported
from .runtime import Runtime

__all__ = ["create_objects", "owners", "queue_requests", "shared_queue_deadlock"]


# Commands a transfer-only family cannot run: a dispatch, and those whose command pool "must support graphics, or
# compute operations" (vkCmdCopyQueryPoolResults, vkCmdClearColorImage; vkCmdSetEvent, vkCmdResetEvent and
# vkCmdWaitEvents, also video) or graphics (vkCmdBlitImage: the families that have compute have graphics on the
# devices replay runs on).
NOT_TRANSFER_ONLY = (ir.Dispatch, ir.CopyQueryPoolResults, ir.ClearColorImage, ir.BlitImage, ir.SetEvent,
                     ir.ResetEvent, ir.WaitEvents)


def queue_requests(stream: ir.Stream, device: ir.Device) -> dict[str, QueueRequest]:
    """The queues `device` needs for `stream`: compute capability where a command of NOT_TRANSFER_ONLY is
    submitted (a secondary command buffer's too), and for the family the runtime's own work runs on
    (device.internal_group) where the device holds images, which that work
    clears (vkCmdClearColorImage)."""
    computing = {op.queue for op, b in ir.batches(stream) for cb in b.command_buffers
                 if any(isinstance(c, NOT_TRANSFER_ONLY) for _, _, c in stream.index.commands_of(cb))}
    internal = internal_group(q.family for q in device.queues)
    clears = any(device.id in m.devices for m in stream.images)
    return {q.id: QueueRequest(q.id, q.family, q.id in computing or (clears and q.family == internal))
            for q in device.queues}


def owners(stream: ir.Stream, buffer: str) -> tuple[str, ...]:
    """The devices whose memory `buffer` is (an alias: its root's)."""
    return stream.index.buffers[stream.index.root(buffer)[0]].devices


def create_objects(stream: ir.Stream, runtimes: Mapping[str, Runtime], home: Mapping[str, str] | None = None,
                   buffer: Callable[[ir.Buffer], bool] | None = None,
                   semaphore: Callable[[ir.Semaphore], bool] | None = None,
                   command_buffers: Iterable[ir.CommandBuffer] = ()) -> None:
    """Every object of `stream` on `runtimes` (stream device -> Runtime): buffers and images on each
    device whose memory they are, an alias after what it aliases; semaphores and fences on their `home`
    device (default the first), events on the first (replay refuses events on several devices); shaders,
    the stream's command buffers and `command_buffers` on every device. `buffer(b)` and `semaphore(s)`
    create an object the caller shares between devices and say True, or leave it to this path.
    Unsupported where a device's shared queue would deadlock (shared_queue_deadlock)."""
    for d, rt in runtimes.items():
        reason = shared_queue_deadlock(stream, rt)
        if reason is not None:
            raise Unsupported(f"{stream.name}{f' on {d}' if len(runtimes) > 1 else ''}: {reason}")
    home, first = home or {}, next(iter(runtimes))

    def depth(b: ir.Buffer) -> int:
        return 0 if b.alias_of is None else 1 + depth(stream.index.buffers[b.alias_of])
    for b in sorted(stream.buffers, key=depth):
        if buffer is None or not buffer(b):
            for d in owners(stream, b.id):
                runtimes[d].create_buffer(b.id, b.size, b.memory, b.alias_of, b.offset, b.sharing)
    for i in stream.images:
        for d in i.devices:
            runtimes[d].create_image(i.id, i.extent, i.format, i.mip_levels, i.array_layers, i.memory, i.sharing,
                                     i.create_flags)
    for s in stream.semaphores:
        if semaphore is None or not semaphore(s):
            runtimes[home.get(s.id, first)].create_semaphore(s.id, s.type == "timeline", s.initial)
    for f in stream.fences:
        runtimes[home.get(f.id, first)].create_fence(f.id, f.signaled)
    for e in stream.events:
        runtimes[first].create_event(e.id)
    for rt in runtimes.values():
        for s in stream.shaders:
            rt.declare_shader(s.id, s.bindings)
        for cb in (*stream.command_buffers, *command_buffers):
            rt.load_command_buffer(cb)


def shared_queue_deadlock(stream: ir.Stream, rt: Runtime) -> str | None:
    """Where the device has fewer queues than the stream, stream queues share a VkQueue and so one
    submission order (spec 7.2): a timeline wait submitted there before its signal (legal across stream
    queues) would block that VkQueue, and with it the signal, forever. The walk runs the stream with
    its queues so shared, each thread in turn first (host threads run concurrently: its submits may
    come before the others'), and names a wait left blocking a shared queue."""
    lock = {q: lock for q, (_, _, lock) in rt.device.queues.items()}
    shared = sorted(q for q in lock if sum(other is lock[q] for other in lock.values()) > 1)
    for first in range(len(stream.threads) if shared else 0):
        walk = Walk(stream, Consumer(), runs_on={q: lock[q] for q in shared})
        _run_first(walk, first)
        for q in shared:
            if walk.pending[q]:
                p = walk.pending[q][0]
                for w in p.batch.waits:
                    if w.value is not None and walk.timeline_signal(w.semaphore, w.value) is None:
                        return (f"{p.submit} waits {w.semaphore} >= {w.value} before its signal is submitted, "
                                "on a queue the device shares between stream queues: it would block forever")
    return None


def _run_first(walk: Walk, first: int) -> None:
    """The walk with thread `first`'s ops as early as it lets them: another thread runs one op only while
    `first` blocks (or is done), each op followed by every queue drained."""
    others = [t for t in range(len(walk.threads)) if t != first]
    while True:
        if not (walk.host_ready(first) and walk.step_host(first)):
            ready = next((t for t in others if walk.host_ready(t)), None)
            if ready is None:
                return
            walk.step_host(ready)
        walk.drain()
