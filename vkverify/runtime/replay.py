"""Replay a stream on a device: resources, command buffers, host threads.

Host threads run as Python threads, each thread's ops in program order; they
order each other only through the stream's own fences and semaphores (and the
runtime holds a binary wait back until its signal is submitted). Afterwards
every buffer that is neither an alias nor destroyed is read back, and each
buffer's bytes and each host_read's bytes get a sha256 digest.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field

from ..model import ir
from ..model.refs import format_ref
from ..shaders import generic_plan
from .device import QueueRequest
from .errors import RuntimeFault, Unsupported
from .runtime import Runtime
from .syncval import agreement, layer_findings

# Findings after which a real device would hang or touch freed memory.
UNSAFE_KINDS = frozenset({"use_after_destroy", "deadlock", "wait_never_satisfied", "fence_misuse",
                          "binary_semaphore_misuse", "timeline_not_increasing"})


@dataclass
class ReplayResult:
    stream: str
    device: str
    digests: dict[str, str]  # buffer id -> sha256 hex of its final bytes
    reads: dict[str, str]  # host_read reference (`main[3]`) -> sha256 hex of the bytes it read
    recorded: ir.Stream  # what the runtime issued, as a stream
    messages: list = field(default_factory=list)  # device.Message, with validation on
    reference: dict | None = None  # from compare_reference: mismatches, or None without a simulator
    reference_note: str = ""
    findings: list = field(default_factory=list)  # vkverify's, for the stream (with syncval)
    agreement: object = None  # syncval.Agreement, with syncval


def replayable(stream: ir.Stream) -> str | None:
    """Why `stream` cannot run on a device, or None when it can."""
    from ..check import check

    unsafe = sorted({f.kind for f in check(stream)} & UNSAFE_KINDS)
    if unsafe:
        return f"{', '.join(unsafe)}: a device would hang or touch freed memory"
    abstract = {s.id for s in stream.shaders}
    written_by_abstract = {b.buffer for cb in stream.command_buffers for c in cb.commands
                           if isinstance(c, ir.Dispatch) and c.shader in abstract
                           for b in c.bindings if b.access in ("write", "read_write")}
    for cb in stream.command_buffers:
        for i, c in enumerate(cb.commands):
            if isinstance(c, ir.Dispatch) and c.indirect is not None and c.indirect.buffer in written_by_abstract:
                return (f"dispatch_indirect reads group counts from {c.indirect.buffer!r}, which an abstract shader "
                        "writes with hash values past any device's maxComputeWorkGroupCount")
            if isinstance(c, ir.Dispatch) and c.shader in abstract:
                try:
                    generic_plan([b.access for b in c.bindings])
                except ValueError as e:  # the library's generic kernels stand for abstract shaders on a device
                    return f"{format_ref(cb.id, i)} (abstract shader {c.shader!r}): {e}"
    return None


def _queue_requests(stream: ir.Stream, device: ir.Device) -> dict[str, QueueRequest]:
    cbs = stream.index.command_buffers
    dispatching = {op.queue for t in stream.threads for op in t.ops if isinstance(op, ir.Submit)
                   for b in op.batches for cb in b.command_buffers
                   if any(isinstance(c, ir.Dispatch) for c in cbs[cb].commands)}
    return {q.id: QueueRequest(q.id, q.family, q.id in dispatching) for q in device.queues}


def replay(stream: ir.Stream, device: str | None = None, syncval: bool = False) -> ReplayResult:
    """Run `stream` on `device` (default VKVERIFY_DEVICE, else the first GPU, else Lavapipe);
    a stream with several devices runs on one VkDevice each (multidevice.replay_devices).

    Raises Unsupported for a stream that cannot run (see `replayable`),
    DeviceFault when a Vulkan call fails; what was created is freed either way.
    """
    reason = replayable(stream)
    if reason is not None:
        raise Unsupported(f"{stream.name}: {reason}")
    if len(stream.devices) > 1:
        from .multidevice import replay_devices
        return replay_devices(stream, device, syncval)
    with Runtime(_queue_requests(stream, stream.devices[0]), device=device, validation=syncval, syncval=syncval,
                 check=False, name=stream.name, device_id=stream.devices[0].id) as rt:
        reason = _shared_queue_deadlock(stream, rt)
        if reason is not None:
            raise Unsupported(f"{stream.name}: {reason}")
        _create(rt, stream)
        reads = _run_threads(rt, stream)
        rt.device_idle()
        digests = {b.id: hashlib.sha256(rt.read_back(b.id)).hexdigest() for b in stream.buffers
                   if b.alias_of is None and rt.buffers[b.id].handle is not None}
        result = ReplayResult(stream.name, rt.device.name, digests, reads, rt.stream())
    result.messages = list(rt.instance.messages)
    if syncval:
        from ..check import check
        result.findings = check(stream)
        result.agreement = agreement(result.findings, layer_findings(result.messages))
    result.reference, result.reference_note = compare_reference(stream, result)
    return result


def _shared_queue_deadlock(stream: ir.Stream, rt: Runtime) -> str | None:
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


def _create(rt: Runtime, stream: ir.Stream) -> None:
    def depth(b: ir.Buffer) -> int:
        return 0 if b.alias_of is None else 1 + depth(stream.index.buffers[b.alias_of])
    for b in sorted(stream.buffers, key=depth):
        rt.create_buffer(b.id, b.size, b.memory, b.alias_of, b.offset, b.sharing)
    for s in stream.semaphores:
        rt.create_semaphore(s.id, s.type == "timeline", s.initial)
    for f in stream.fences:
        rt.create_fence(f.id, f.signaled)
    for s in stream.shaders:
        rt.declare_shader(s.id, s.bindings)
    for cb in stream.command_buffers:
        rt.load_command_buffer(cb)


def run_thread_ops(execute, stream: ir.Stream, thread: ir.Thread, reads: dict[str, str]) -> None:
    """A stream thread's ops in program order through `execute(thread, op, submissions)`; each
    host_read's digest lands in `reads` under its reference."""
    for i, op in enumerate(thread.ops):
        ref = format_ref(thread.id, i)
        at = {cb: ref for b in op.batches for cb in b.command_buffers if cb in stream.index.resubmitted} \
            if isinstance(op, ir.Submit) else None
        out = execute(thread.id, op, at)
        if isinstance(op, ir.HostAccess) and op.op == "host_read":
            reads[ref] = hashlib.sha256(out).hexdigest()


def _run_threads(rt: Runtime, stream: ir.Stream) -> dict[str, str]:
    reads: dict[str, str] = {}
    errors: list[BaseException] = []

    def run(thread: ir.Thread) -> None:
        try:
            run_thread_ops(rt.execute, stream, thread, reads)
        except BaseException as error:  # noqa: BLE001 - reported by the caller; the others stop waiting
            errors.append(error)
            rt.aborted.set()

    workers = [threading.Thread(target=run, args=(t,), name=f"vkverify-{t.id}") for t in stream.threads]
    for w in workers:
        w.start()
    try:
        for w in workers:
            w.join()
    except BaseException:  # --timeout or ^C here: the workers stop waiting before the device is closed under them
        rt.aborted.set()
        for w in workers:
            w.join()
        raise
    if errors:
        first = next((e for e in errors if isinstance(e, RuntimeFault)), errors[0])
        raise first
    return reads


def compare_reference(stream: ir.Stream, result: ReplayResult) -> tuple[dict | None, str]:
    """Digests that differ from the simulator's reference ({} when all agree),
    or None and why when there is no simulator to compare with."""
    try:
        from ..sim import reference
    except ImportError as error:
        return None, f"no simulator reference ({error})"
    ref = reference(stream)
    mismatches = {f"buffer {k}": (v, ref.digests.get(k)) for k, v in result.digests.items()
                  if ref.digests.get(k) != v}
    mismatches.update({f"read {k}": (v, ref.reads.get(k)) for k, v in result.reads.items() if ref.reads.get(k) != v})
    return mismatches, "compared with vkverify.sim.reference"
