"""Creating a stream's objects on the runtimes of its devices: the one path single- and
multi-device replay share (multi-device replay creates what its devices share itself)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ..model import ir
from ..model.refs import format_ref
from .device import QueueRequest
from .errors import Unsupported
from .runtime import Runtime

__all__ = ["create_objects", "owners", "queue_requests", "shared_queue_deadlock"]


def queue_requests(stream: ir.Stream, device: ir.Device) -> dict[str, QueueRequest]:
    """The queues `device` needs for `stream`: compute capability where a dispatch is submitted."""
    cbs = stream.index.command_buffers
    dispatching = {op.queue for op, b in ir.batches(stream) for cb in b.command_buffers
                   if any(isinstance(c, ir.Dispatch) for c in cbs[cb].commands)}
    return {q.id: QueueRequest(q.id, q.family, q.id in dispatching) for q in device.queues}


def owners(stream: ir.Stream, buffer: str) -> tuple[str, ...]:
    """The devices whose memory `buffer` is (an alias: its root's)."""
    return stream.index.buffers[stream.index.root(buffer)[0]].devices


def create_objects(stream: ir.Stream, runtimes: Mapping[str, Runtime], home: Mapping[str, str] | None = None,
                   buffer: Callable[[ir.Buffer], bool] | None = None,
                   semaphore: Callable[[ir.Semaphore], bool] | None = None,
                   command_buffers: Iterable[ir.CommandBuffer] = ()) -> None:
    """Every object of `stream` on `runtimes` (stream device -> Runtime): buffers on each device
    whose memory they are, an alias after what it aliases; semaphores and fences on their `home`
    device (default the first); shaders, the stream's command buffers and `command_buffers` on
    every device. `buffer(b)` and `semaphore(s)` create an object the caller shares between
    devices and say True, or leave it to this path. Unsupported where a device's shared queue
    would deadlock (shared_queue_deadlock)."""
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
    for s in stream.semaphores:
        if semaphore is None or not semaphore(s):
            runtimes[home.get(s.id, first)].create_semaphore(s.id, s.type == "timeline", s.initial)
    for f in stream.fences:
        runtimes[home.get(f.id, first)].create_fence(f.id, f.signaled)
    for rt in runtimes.values():
        for s in stream.shaders:
            rt.declare_shader(s.id, s.bindings)
        for cb in (*stream.command_buffers, *command_buffers):
            rt.load_command_buffer(cb)


def shared_queue_deadlock(stream: ir.Stream, rt: Runtime) -> str | None:
    """Where the device has fewer queues than the stream, stream queues share a
    VkQueue; a timeline wait submitted there before its signal (legal across
    stream queues) would block that VkQueue, and with it the signal, forever.
    Not where the host signals it, from another thread (a multidevice replay's
    proxy threads end their mirror timelines' waits so) or later in the same one
    with no host wait in between that the blocked VkQueue could hold up: that
    signal does not queue behind the wait."""
    shared = {q for q, (_, _, lock) in rt.device.queues.items()
              if sum(other is lock for _, _, other in rt.device.queues.values()) > 1}
    initial = {s.id: s.initial for s in stream.semaphores if s.type == "timeline"}
    host_signals = [(t.id, op) for t in stream.threads for op in t.ops if isinstance(op, ir.SignalSemaphore)]

    def signalled_by_host(t: ir.Thread, i: int, w: ir.SemaphoreOp) -> bool:
        if any(other != t.id and op.semaphore == w.semaphore and op.value >= w.value for other, op in host_signals):
            return True
        for op in t.ops[i + 1:]:
            if isinstance(op, ir.SignalSemaphore) and op.semaphore == w.semaphore and op.value >= w.value:
                return True
            if isinstance(op, (ir.WaitFences, ir.WaitSemaphores, ir.QueueWaitIdle, ir.DeviceWaitIdle)):
                return False
        return False
    for t in stream.threads:
        reached = dict(initial)
        for i, op in enumerate(t.ops):
            if isinstance(op, ir.SignalSemaphore):
                reached[op.semaphore] = max(reached[op.semaphore], op.value)
            if not isinstance(op, ir.Submit):
                continue
            for b in op.batches:
                for w in b.waits:
                    if w.semaphore in reached and w.value > reached[w.semaphore] and op.queue in shared \
                            and not signalled_by_host(t, i, w):
                        return (f"{format_ref(t.id, i)} waits {w.semaphore} >= {w.value} before its signal is "
                                "submitted, on a queue the device shares between stream queues: it would block forever")
                for sig in b.signals:
                    if sig.semaphore in reached:
                        reached[sig.semaphore] = max(reached[sig.semaphore], sig.value)
    return None
