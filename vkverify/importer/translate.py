"""Vulkan calls (JSON lines, plus the .gfxr's fill records and threads) to a vkverify-stream/1 document.

One `Translator` walks the calls in capture order. Command buffers become one
stream command buffer per recording (`cb<handle>`, then `cb<handle>_2`, ...),
so a re-recorded VkCommandBuffer is submitted under the name of the recording
it held at that moment. Every command and host op keeps `label`
"<vkCall> #<index>": a finding names the original call; a command recorded
inside debug label regions (vkCmdBeginDebugUtilsLabelEXT) is labelled
"<outer region> > <inner region>: <vkCall> #<index>". A buffer's id is the
debug name the program gave it (vkSetDebugUtilsObjectNameEXT) where that can
be an id (`Resources.name_buffer`), else `buf<handle>`.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from operator import itemgetter

import orjson

from ..errors import VkverifyError
from ..model.dump import Encoded
from ..model.ir import MEMORY_KINDS

from .commands import Commands, CommandBufferRecording
from .gfxr import Blocks, CapturedBytes, FillMemory
from .images import Images
from .order import WAITS, Satisfied
from .queues import Queues
from .readback import ASSUMED, Placement, Readbacks, Touch
from .records import Call
from .resources import WHOLE_SIZE, CapturedBuffer, Memory, Resources
from .summary import ImportSummary

__all__ = ["PROGRESS_CALLS", "UNREADABLE", "Translator", "UnreadableCall"]

# Calls of rendering, presentation and image work the format does not have: outside the stream format's scope (the
# image calls it has are read: images.py; their other calls, queries and such, change nothing it holds).
OUT_OF_SCOPE = re.compile(r"Image|RenderPass|Rendering|Framebuffer|Swapchain|Surface|Present|Draw|Sampler|Blit|"
                          r"Resolve|Clear(Color|DepthStencil|Attachments)|Viewport|Scissor|QueryPool|"
                          r"Sparse|DescriptorSetWithTemplate|PushDescriptorSet|Subpass|AccelerationStructure|"
                          r"TraceRays|Micromap|Video|OpticalFlow")
# Commands that set state, bind or take queries and timestamps: no buffer access, no ordering of their own.
STATE_ONLY = re.compile(r"vkCmd(Set\w*|Bind\w*|(Begin|End)Query\w*|WriteTimestamp\w*|DebugMarker\w*)")
HOST_VISIBLE = ("host_coherent", "host_cached", "device_host_visible")
TRANSFER_SRC, TRANSFER_DST = 0x1, 0x2  # VkBufferUsageFlagBits
TRANSFER_ONLY = TRANSFER_SRC | TRANSFER_DST
# What the host accesses a capture does not record are inferred from: the label of each goes on "<call> #<index>: ".
ASSUMED_WRITE = "an assumed host write of the mapped range (no fill-memory records)"
INVALIDATED_READ = "an assumed host read of the range invalidated (a capture records no host reads)"
NOTES = ("host_write", "host_read", "concurrent")  # debug messages that say what a call is for (see __init__.py)
QUEUE_LABEL = re.compile(r"queue (\S+), family (\d+)")  # see __init__.py
# Of those, the ones whose absence can hide or invent synchronization: each gets a warning.
ORDERING = re.compile(r"CopyQueryPoolResults|Sparse|DescriptorSetWithTemplate|PushDescriptorSet")
# An event's status as the host reads it: what the host does on seeing it set, the stream cannot order. Each call
# is counted, and makes a verdict on the stream partial. (Event sets, resets and waits, on a queue or the host, are
# in the stream; vkDestroyEvent orders nothing.)
EVENT_ORDERING = re.compile(r"vkGetEventStatus")
GENERATED_EVENT = re.compile(r"ev\d+")  # the ids the import makes up for events


PROGRESS_CALLS = 100_000  # a progress line every this many calls, on a capture at least this long

# What a handler raises on arguments of another shape than a converter writes (a corrupted or
# hand-edited capture): a field missing, of another type, or a handle no earlier call made.
UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError)


class UnreadableCall(VkverifyError):
    """A call whose arguments the translator cannot read. Seen by no user: the importer raises it
    as a CaptureError naming the capture."""


class Translator(Commands, Queues, Images):
    def __init__(self, resources: Resources, blocks: Blocks | None, threads: bool, assume_reads: bool,
                 progress: Callable[[str], None] | None = None) -> None:
        """blocks: what the .gfxr holds beside the JSON lines (None for JSON lines only);
        threads: keep each capture thread as a stream thread; assume_reads: add the readback reads (readback.py);
        progress: told how far a long walk got (`say`)."""
        self.progress = progress
        self.res = resources
        self.assume_reads = assume_reads
        self.blocks = blocks
        self.fills = None if blocks is None else blocks.fills  # None: no fill records
        self.capture = None if blocks is None else blocks.path  # where the fill records' bytes are read from
        self.flushed_fills: set[int] = set()  # the fill records made at a flush: writes the program declared
        # (call index, memory, lo, hi, shown) of each range flushed and of each fill record's bytes no buffer holds
        self.page_marks: list[tuple[int, int, int, int, bool]] = []
        self.push_data = None if blocks is None else blocks.push_constants  # None: push constants unknown
        self.call_parameters = None if blocks is None else blocks.parameters  # None: JSON lines only
        self.call_threads = None if blocks is None else blocks.threads  # None: every call on one thread
        self.every_thread = threads  # keep each capture thread, not only those that signal semaphores
        self.summary = ImportSummary()
        self.devices: dict[int, str] = {}
        self.device_physical: dict[int, int] = {}
        self.queues: dict[int, tuple[str, str, int]] = {}  # handle -> (queue id, device id, family)
        self.queue_regions: dict[int, list[str]] = {}  # VkQueue -> its debug label regions open now
        self.stream_queues: dict[str, tuple[str, int]] = {}  # queue id from a label -> (device id, family)
        self.attributed: dict[int, set[str]] = {}  # VkQueue -> the queue ids its calls went to
        self.noted: dict[int, str] = {}  # capture thread -> the last of NOTES it sent, for its next call it concerns
        self.semaphores: dict[int, dict] = {}
        # capture thread -> timeline semaphore id -> the highest value a host op of the thread has waited for
        self.observed: dict[int, dict[str, int]] = {}
        self.fences: dict[int, dict] = {}
        self.events: dict[int, str] = {}  # VkEvent -> its stream id
        self.used_events: set[int] = set()  # those the stream refers to: their ids are fixed
        self.stage_lists: dict[int | str, list[str]] = {}  # stage mask -> the stages of semaphore ops, each list once
        self.recordings: dict[int, CommandBufferRecording] = {}
        self.recorded: Counter = Counter()
        self.command_buffers: dict[str, Encoded] = {}
        self.touches: dict[str, list[Touch]] = {}  # command buffer -> what its commands touch (readback.py)
        self.touched: dict[Touch, Touch] = {}  # each Touch made, as the one object that stands for it
        self.shaders: dict[str, list[str]] = {}
        self.used_bindings: dict[int, tuple] = {}  # id of a shader interface -> its buffer bindings used (_used)
        # (call index, capture thread, host op) in capture order: the calls are walked in it, a fill-memory
        # record before the first call after it.
        self.ops: list[tuple[int, int, dict]] = []
        self.signalling: set[int] = set()  # the capture threads of the host's semaphore signals (stream_threads)
        self.exported: dict[int, dict] = {}  # file descriptor -> the semaphore exported as it
        self.warned: set[str] = set()
        # Captures without fill records: memory -> its mapping that no submit, flush or unmap has followed yet.
        self.unwritten: dict[int, Memory] = {}
        self.truncated = None if blocks is None else blocks.truncated
        self.last: Call | None = None  # the last call read: where a capture without its teardown ends
        self.destroyed: set[int] = set()  # VkDevices destroyed

    # ---- the walk ----------------------------------------------------------

    def run(self, calls) -> None:
        fills = [] if self.fills is None else self.fills  # grows as the blocks are taken in (Blocks.load)
        read_to = math.inf if self.blocks is None else self.blocks.read_to
        kinds: dict[str, tuple] = {}  # a call's name -> what it is (_kind): a long capture repeats a few dozen
        count, call, taken = self.summary.calls, None, 0
        next_fill = fills[0].index if fills else math.inf
        for call in calls:
            index, name, args, result = call  # unpacked once, not read by name at each use (millions of calls)
            if index >= read_to:  # the blocks up to the call: its thread, push constants and the fills before it
                self.blocks.load(index)
                read_to = self.blocks.read_to
                next_fill = fills[taken].index if taken < len(fills) else math.inf
            while next_fill < index:
                if name == "vkFlushMappedMemoryRanges":  # the call that made the layer write the record
                    self.flushed_fills.add(next_fill)
                self.fill_memory(fills[taken], fills[taken].data(self.capture))
                taken += 1
                next_fill = fills[taken].index if taken < len(fills) else math.inf
            count += 1
            if not count % PROGRESS_CALLS:
                self.summary.calls = count
                self.say(f"{count} calls read")
            kind = kinds.get(name)
            if kind is None:
                kind = kinds[name] = self._kind(name)
            handler, any_result, other = kind
            if handler is not None and (any_result or result is None or result == "VK_SUCCESS"):
                try:
                    handler(call, args)
                except UNREADABLE as e:
                    raise UnreadableCall(f"call #{call.index} {call.name}: arguments this importer cannot read "
                                         f"({type(e).__name__}: {str(e)[:200]})") from None
            elif other is not None:
                other(call)
        self.summary.calls = count
        self.last = call if call is not None else self.last
        if self.blocks is not None:
            self.blocks.load(math.inf)
            self.truncated = self.blocks.truncated
        for rest in fills[taken:]:
            self.fill_memory(rest, rest.data(self.capture))
        self.note_ending()

    def _kind(self, name: str) -> tuple:
        """(its handler or None, whether the handler reads a call whatever it returned, what to do with a call
        of it no handler takes: count it as an event, outside the format or unknown, or nothing)."""
        # Only Vulkan names dispatch: a capture's call named `run` or `document` is no method to call.
        handler = getattr(self, name, None) if name.startswith("vk") else None
        any_result = name in ("vkWaitForFences", "vkGetFenceStatus", "vkWaitSemaphores")
        if EVENT_ORDERING.fullmatch(name):
            return handler, any_result, self._unmodelled
        if OUT_OF_SCOPE.search(name):
            return handler, any_result, self._skipped
        if name.startswith("vkCmd") and not STATE_ONLY.fullmatch(name):
            return handler, any_result, self._unknown
        return handler, any_result, None

    def _unmodelled(self, call: Call) -> None:
        self.summary.unmodelled[call.name] += 1
        self.summary.first_unmodelled.setdefault(call.name, call.index)

    def _skipped(self, call: Call) -> None:
        self.summary.skipped[call.name] += 1
        if ORDERING.search(call.name):
            self.warn(call.name, f"{call.name} (first at #{call.index}) is not in the stream format: "
                                 "the ordering or accesses it makes are missing from the stream")

    def _unknown(self, call: Call) -> None:
        # A command this importer does not read may access buffers or order work: never dropped silently.
        self.summary.unknown[call.name] += 1
        self.summary.first_unknown.setdefault(call.name, call.index)

    def note_ending(self) -> None:
        """A capture that ends without the program's teardown holds only the calls made up to its end: a
        program killed, or whose capture file was not written out, would have gone on."""
        last = "no call" if self.last is None else f"call #{self.last.index} {self.last.name}"
        live = [dev for handle, dev in self.devices.items() if handle not in self.destroyed]
        if self.truncated is not None:
            self.summary.cut = (f"the capture is truncated ({self.truncated}): it ends at {last}, the last "
                                "whole call; the verdict covers the calls up to there")
        elif live:
            self.summary.cut = (f"the capture ends at {last} without vkDestroyDevice of {', '.join(live)} (the "
                                "program was killed, or it exits without its teardown): the verdict covers the "
                                "calls up to there")

    def say(self, line: str) -> None:
        """A progress line, on a capture of PROGRESS_CALLS calls or more (a shorter one takes seconds)."""
        if self.progress is not None and self.summary.calls >= PROGRESS_CALLS:
            self.progress(line)

    def warn(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.summary.warnings.append(message)

    def assume(self, key: str, assumption: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.summary.assumed.append(assumption)

    def host(self, call: Call, op: str, why: str = "", **fields) -> None:
        """A host op of `call`, labelled by it; why: what an access the capture does not record is inferred from."""
        self.labelled(call, {"op": op, **fields}, why)

    def labelled(self, call: Call, op: dict, why: str = "") -> None:
        """`host` of an op made whole by the caller, its label to come last: a long run's submits and counter
        reads, without a dict of keywords and a copy of it each."""
        op["label"] = f"{call.name} #{call.index}: {why}" if why else f"{call.name} #{call.index}"
        self.add_op(call.index, op)

    def add_op(self, index: int, op: dict) -> None:
        threads = self.call_threads  # `thread_of`, inline: a run adds tens of thousands of ops
        self.ops.append((index, 0 if threads is None else threads.get(index, 0), op))

    def thread_of(self, index: int) -> int:
        return 0 if self.call_threads is None else self.call_threads.get(index, 0)

    def read_back(self) -> None:
        """Add to the host ops the host reads a capture does not record, and make page-guard fills of read
        bytes reads (readback.py)."""
        self.touched = {}  # no command is recorded past here: what the walk needs of them is in `touches`
        placements = {}
        for buf in self.res.buffers.values():
            mem = self.res.memories.get(buf.memory)
            kind = None if mem is None else self.memory_kind(mem)
            if kind in HOST_VISIBLE and buf.same is None:
                placements[buf.id] = Placement(mem.handle, buf.offset, _staging(kind, buf.usage), mem.ever_mapped)
        queue_device = {qid: dev for qid, dev, _ in self.queues.values()}
        queue_device.update((qid, dev) for qid, (dev, _) in self.stream_queues.items())
        walk = Readbacks(placements, self.touches, queue_device, self.flushed_fills, self.page_marks,
                         self.assume_reads)
        # A hand-made .jsonl's calls may be out of order: the walk reads them by index. Each pair compared in C, with
        # no list of the indices (a long run's ops are 100k, and the walk's peak memory follows).
        indices = map(itemgetter(0), self.ops)
        if any(map(operator.gt, indices, itertools.islice(map(itemgetter(0), self.ops), 1, None))):
            self.ops.sort(key=itemgetter(0))
        self.ops = walk.walk(self.ops)
        self.note_reads(walk)

    def note_reads(self, walk: Readbacks) -> None:
        """What the summary says of the reads a walk assumed or found, and of writes it found missing."""
        if walk.assumed_reads:
            self.summary.assumed.append(
                f"{len(walk.assumed_reads)} host reads ({_some(sorted(set(walk.assumed_reads)))}): a capture "
                "records no host reads, so the host is taken to read each staging buffer (coherent host-visible "
                "memory, usage transfer only) the device copied into, right after the first host wait that covers "
                "the copy, unless page-guard records show the host never touched the bytes before the device "
                f"rewrote them; their labels start '{ASSUMED}' (import with assume_reads=False, --no-assumed-reads, to "
                "leave them out)")
        if walk.unrecorded is not None and self.fills is not None:  # JSON lines: host writes are assumed anyway
            cb, at, buffer, lo, hi = walk.unrecorded
            label = orjson.loads(self.command_buffers[cb].texts()[at])["label"]
            self.warn("unrecorded", f"device commands read mapped memory that no captured write reached (first: "
                                    f"{label} reads {buffer} bytes [{lo}, {hi})): a capture made with assisted memory "
                                    "tracking records a host write only at its vkFlushMappedMemoryRanges, so the "
                                    "writes of a program that does not flush coherent memory are lost; capture with "
                                    "page_guard tracking (the default) for them")
        if walk.fill_reads:
            self.summary.assumed.append(
                f"{len(walk.fill_reads)} fill-memory records are host reads of bytes a device command wrote, after a "
                "host wait that covers it (a page-guard capture writes back each whole page the host touched, read "
                "or written): each record is read byte range by byte range, a read where the device wrote a result "
                "for the host, no access where it repeats the page's last record or holds an intermediate result, "
                "a write where the bytes changed or a later command reads what the host put there; the label of "
                "each access says which")

    def stream_threads(self) -> dict[str, list[dict]]:
        """Capture threads that signal a semaphore from the host as threads of their own (all of them with
        `every_thread`); the others as one thread `main`, in capture order."""
        threads = dict.fromkeys(map(itemgetter(1), self.ops))  # in the order of their first ops
        own = [t for t in threads if self.every_thread or t in self.signalling]
        merged = [t for t in threads if t not in own]
        out = {}
        if merged:
            out["main"] = self._merged(merged)
        by_thread: dict[int, list[dict]] = {t: [] for t in own}  # one pass over the ops, whatever the threads
        for _, thread, op in self.ops if own else ():
            if thread in by_thread:
                by_thread[thread].append(op)
        for t in own:
            out["main" if not out else f"thread{t}"] = by_thread[t]
        if len(merged) > 1:
            self.summary.assumed.append(
                f"the calls of {len(merged)} threads are put on one thread in capture order: how the program's "
                "threads synchronize with each other is not in a capture"
                + (f"; the threads that signal semaphores from the host ({len(own)}) are kept as threads of their "
                   "own: what they wait for reaches the others through those signals" if own else ""))
        return out

    def _merged(self, tids: list[int]) -> list[dict]:
        """The ops of capture threads `tids` in capture order, except that a host wait that no call before it
        satisfies comes, with the rest of its thread, after the call that does: a return-order artifact, which
        on one thread would be a deadlock."""
        satisfied = Satisfied(self.ops,
                              {s["id"]: s["initial"] for s in self.semaphores.values() if "initial" in s},
                              {f["id"] for f in self.fences.values() if f["signaled"]})
        floors = dict.fromkeys(tids, -1)
        kept, moved = [], []
        for item in self.ops:
            index, thread, op = item
            floor = floors.get(thread)
            if floor is None:
                continue
            if op["op"] in WAITS:
                floor = floors[thread] = max(floor, satisfied.after(index, op))
            if floor > index:
                moved.append((floor, index, op))
            else:
                kept.append(item)
        # The ops that stay are in capture order already; each of the few moved (in order of where it goes, then
        # of its index) goes after the last that stays at or before the call it waits for: sliced in by bisection,
        # not merged op by op (a merge key per op was a tenth of a long run's memory, and heapq.merge's time).
        moved.sort(key=itemgetter(0, 1))
        indices = list(map(itemgetter(0), kept))
        out, start = [], 0
        for floor, _, op in moved:
            at = bisect_right(indices, floor)
            out += map(itemgetter(2), kept[start:at])
            out.append(op)
            start = at
        out += map(itemgetter(2), kept[start:])
        return out

    # ---- devices and queues ------------------------------------------------

    def vkGetPhysicalDeviceMemoryProperties(self, call: Call, a: dict) -> None:
        props = a["pMemoryProperties"]
        props = props.get("memoryProperties", props)  # the ...2 variants wrap the struct
        self.res.memory_types[a["physicalDevice"]] = [t["propertyFlags"] for t in props["memoryTypes"]]

    vkGetPhysicalDeviceMemoryProperties2 = vkGetPhysicalDeviceMemoryProperties
    vkGetPhysicalDeviceMemoryProperties2KHR = vkGetPhysicalDeviceMemoryProperties

    def vkCreateDevice(self, call: Call, a: dict) -> None:
        self.devices[a["pDevice"]] = f"gpu{len(self.devices)}"
        self.device_physical[a["pDevice"]] = a["physicalDevice"]

    def vkDestroyDevice(self, call: Call, a: dict) -> None:
        self.destroyed.add(a["device"])

    def _queue(self, device: int, family: int, index: int, handle: int) -> None:
        dev = self.devices.get(device, "gpu0")
        qid = f"q{family}" if index == 0 else f"q{family}_{index}"
        self.queues[handle] = (qid if dev == "gpu0" else f"{dev}.{qid}", dev, family)

    def vkGetDeviceQueue(self, call: Call, a: dict) -> None:
        self._queue(a["device"], a["queueFamilyIndex"], a["queueIndex"], a["pQueue"])

    def vkGetDeviceQueue2(self, call: Call, a: dict) -> None:
        info = a["pQueueInfo"]
        self._queue(a["device"], info["queueFamilyIndex"], info["queueIndex"], a["pQueue"])

    def vkQueueBeginDebugUtilsLabelEXT(self, call: Call, a: dict) -> None:
        self.queue_regions.setdefault(a["queue"], []).append(a["pLabelInfo"]["pLabelName"])

    def vkQueueEndDebugUtilsLabelEXT(self, call: Call, a: dict) -> None:
        if self.queue_regions.get(a["queue"]):
            self.queue_regions[a["queue"]].pop()

    def queue_id(self, handle: int) -> str:
        """The stream queue a call on VkQueue `handle` is for: the one the innermost queue label names, else
        the VkQueue's own (`queues` holds `handle`)."""
        own, device, _ = self.queues[handle]
        regions = self.queue_regions.get(handle)  # the innermost that names a queue (a match is never false)
        label = next(filter(None, map(QUEUE_LABEL.fullmatch, reversed(regions))), None) if regions else None
        qid = own if label is None else label[1]
        if label is not None:
            self.stream_queues.setdefault(qid, (device, int(label[2])))
        attributed = self.attributed.get(handle)  # not setdefault: that makes a set at each of a run's submits
        if attributed is None:
            attributed = self.attributed[handle] = set()
        attributed.add(qid)
        return qid

    def vkSetDebugUtilsObjectNameEXT(self, call: Call, a: dict) -> None:
        info = a["pNameInfo"]
        name = info.get("pObjectName")
        buf = self.res.buffers.get(info["objectHandle"])
        mem = self.res.memories.get(info["objectHandle"])
        image = self.res.images.get(info["objectHandle"])
        if info["objectType"] == "VK_OBJECT_TYPE_BUFFER" and buf is not None and name:
            self.res.name_buffer(buf, name)
        elif info["objectType"] == "VK_OBJECT_TYPE_IMAGE" and image is not None and name:
            self.res.name_image(image, name)
        elif info["objectType"] == "VK_OBJECT_TYPE_DEVICE_MEMORY" and mem is not None and name in MEMORY_KINDS:
            mem.declared = name
        elif info["objectType"] == "VK_OBJECT_TYPE_EVENT" and info["objectHandle"] in self.events and name:
            self.name_event(info["objectHandle"], name)

    def vkSubmitDebugUtilsMessageEXT(self, call: Call, a: dict) -> None:
        message = a["pCallbackData"]["pMessage"]
        if message in NOTES:
            self.noted[self.thread_of(call.index)] = message

    def take_note(self, call: Call, *notes: str) -> bool:
        """Whether the calling thread's last note is one of `notes`: then `call` is what it concerns, and it
        is used up."""
        thread = self.thread_of(call.index)
        if self.noted.get(thread) in notes:
            del self.noted[thread]
            return True
        return False

    # ---- events ------------------------------------------------------------

    def vkCreateEvent(self, call: Call, a: dict) -> None:
        self.events[a["pEvent"]] = f"ev{a['pEvent']}"

    def name_event(self, handle: int, name: str) -> None:
        """The program's debug name becomes the event's id, unless the stream already refers to the event,
        another event has that id, or it is of the form of the ids the import makes up."""
        if handle not in self.used_events and not GENERATED_EVENT.fullmatch(name) and name not in \
                self.events.values():
            self.events[handle] = name

    def event_id(self, handle: int) -> str:
        """The stream id of VkEvent `handle` (one no call of the capture creates is declared all the same)."""
        self.used_events.add(handle)
        return self.events.setdefault(handle, f"ev{handle}")

    def vkSetEvent(self, call: Call, a: dict) -> None:
        self.host(call, "set_event", event=self.event_id(a["event"]))

    def vkResetEvent(self, call: Call, a: dict) -> None:
        self.host(call, "reset_event", event=self.event_id(a["event"]))

    # ---- memory and buffers ------------------------------------------------

    def vkAllocateMemory(self, call: Call, a: dict) -> None:
        info = a["pAllocateInfo"]
        mem = Memory(a["pMemory"], self.devices.get(a["device"], "gpu0"), info["allocationSize"],
                     info["memoryTypeIndex"], self.device_physical.get(a["device"]))
        chain = info["pNext"]
        while chain is not None:
            if chain["sType"] == "VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT":
                mem.host = int(chain["pHostPointer"], 16)
            chain = chain.get("pNext")
        self.res.memories[a["pMemory"]] = mem

    def vkCreateBuffer(self, call: Call, a: dict) -> None:
        info = a["pCreateInfo"]
        concurrent = self.take_note(call, "concurrent")
        self.res.buffers[a["pBuffer"]] = CapturedBuffer(a["pBuffer"], f"buf{a['pBuffer']}", info["size"],
                                                info["sharingMode"] == "VK_SHARING_MODE_EXCLUSIVE" and not concurrent,
                                                self.devices.get(a["device"], "gpu0"), info["usage"])

    def _bind(self, buffer: int, memory: int, offset: int) -> None:
        buf, mem = self.res.buffers.get(buffer), self.res.memories.get(memory)
        if buf is not None and mem is not None:
            self.res.bind(buf, mem, offset)

    def vkBindBufferMemory(self, call: Call, a: dict) -> None:
        self._bind(a["buffer"], a["memory"], a["memoryOffset"])

    def vkBindBufferMemory2(self, call: Call, a: dict) -> None:
        for info in a["pBindInfos"]:
            self._bind(info["buffer"], info["memory"], info["memoryOffset"])

    vkBindBufferMemory2KHR = vkBindBufferMemory2

    def vkCreateBufferView(self, call: Call, a: dict) -> None:
        info = a["pCreateInfo"]
        self.res.buffer_views[a["pView"]] = (info["buffer"], info["offset"], info["range"])

    def bound(self, handle: int, call: Call) -> CapturedBuffer | None:
        """The buffer if it is bound to memory (only those are in the stream); a warning otherwise."""
        buf = self.res.buffers.get(handle)
        if buf is None or buf.memory is None:
            self.warn(f"unbound{handle}", f"{call.name} #{call.index} uses buffer {handle}, which is not bound "
                                          "to memory in the capture: that use is left out")
            return None
        buf.used = True
        return buf

    def vkDestroyBuffer(self, call: Call, a: dict) -> None:
        buf = self.res.buffers.get(a["buffer"])
        if buf is not None and buf.memory is not None:
            self._end(call, buf)

    def vkFreeMemory(self, call: Call, a: dict) -> None:
        mem = self.res.memories.get(a["memory"])
        for handle in [] if mem is None else mem.buffers:  # freeing the memory ends what is bound to it
            self._end(call, self.res.buffers[handle])

    def _end(self, call: Call, buf: CapturedBuffer) -> None:
        """The stream buffer is destroyed with the last live buffer of any device over its bytes."""
        if buf.live:
            buf.live = False
            del self.res.memories[buf.memory].live[buf.handle]
            if not any(b.live for b in self.res.sharing(buf)):
                self.host(call, "destroy", buffer=buf.id)

    # ---- host access to mapped memory --------------------------------------

    def vkMapMemory(self, call: Call, a: dict) -> None:
        mem = self.res.memories[a["memory"]]
        mem.mapped = (a["offset"], mem.size - a["offset"] if a["size"] == WHOLE_SIZE else a["size"])
        mem.ever_mapped = True
        if self.fills is None:
            self.unwritten[mem.handle] = mem

    def vkUnmapMemory(self, call: Call, a: dict) -> None:
        mem = self.res.memories[a["memory"]]
        self.assumed_write(mem, call)
        mem.mapped = None

    def _host_access(self, call: Call, op: str, mem: Memory, offset: int, size: int, why: str = "") -> None:
        for buf, off, n in self.res.buffers_over(mem, offset, size):
            self.host(call, op, why, buffer=buf.id, offset=off, size=n)

    def assumed_write(self, mem: Memory, call: Call) -> None:
        """Without fill records: the host wrote the whole mapped range before the first submit after a map."""
        if mem.handle in self.unwritten and mem.mapped is not None:
            del self.unwritten[mem.handle]
            self._host_access(call, "host_write", mem, *mem.mapped, ASSUMED_WRITE)
            self.assume("assumed", "the capture has no fill-memory records (JSON lines only): each mapping is "
                                   "taken as a host write of the whole mapped range just before the first submit, "
                                   "flush or unmap after the map")

    def fill_memory(self, fill: FillMemory, data: CapturedBytes | None) -> None:
        """data: the bytes the record wrote; None where they are not in the capture (compressed)."""
        mem = self.res.memories.get(fill.memory)
        if mem is None:
            return
        start = (mem.mapped[0] if mem.mapped is not None else 0) + fill.offset  # the offset is in the mapped range
        held = []
        for buf, off, n in self.res.buffers_over(mem, start, fill.size):
            op = {"op": "host_write", "buffer": buf.id, "offset": off, "size": n}
            if data is not None:  # the bytes written, so that a replay writes them too
                op["data"] = {"base64": data.part(buf.offset + off - start, n)}
            self.add_op(fill.index, {**op, "label": f"fill memory #{fill.index}"})
            held.append((buf.offset + off, buf.offset + off + n))
        # The bytes no live buffer holds: an assumed read of a buffer destroyed since stands on them (readback.py).
        unheld = start
        for lo, hi in sorted(held):
            if unheld < lo:
                self.page_marks.append((fill.index, mem.handle, unheld, lo, True))
            unheld = max(unheld, hi)
        if unheld < start + fill.size:
            self.page_marks.append((fill.index, mem.handle, unheld, start + fill.size, True))

    def _ranges(self, call: Call, op: str, ranges: list[dict], then: str | None = None) -> None:
        """`op` over each range where the memory is not coherent (only there does it mean something) and the
        call is not noted as a host access's, then `then` over each range whatever the memory."""
        if self.take_note(call, "host_write", "host_read"):
            op = None  # the runtime's flush of a write or invalidate of a read, not the stream's
        for r in ranges:
            mem = self.res.memories.get(r["memory"])
            if mem is None:
                continue
            self.assumed_write(mem, call)
            size = mem.size - r["offset"] if r["size"] == WHOLE_SIZE else r["size"]
            if op is not None and self.res.kind(mem) == "host_cached":
                self._host_access(call, op, mem, r["offset"], size)
            if then is not None:
                self._host_access(call, then, mem, r["offset"], size, INVALIDATED_READ)

    def vkFlushMappedMemoryRanges(self, call: Call, a: dict) -> None:
        self._ranges(call, "flush", a["pMemoryRanges"])
        for r in a["pMemoryRanges"]:
            mem = self.res.memories.get(r["memory"])
            if mem is not None:  # a size of 0 (invalid) is taken as the rest of the memory, as the layer does
                end = mem.size if r["size"] in (WHOLE_SIZE, 0) else r["offset"] + r["size"]
                self.page_marks.append((call.index, mem.handle, r["offset"], end, False))

    def vkInvalidateMappedMemoryRanges(self, call: Call, a: dict) -> None:
        # A capture records no reads: a program invalidates a range to read it, so the read is put here.
        self._ranges(call, "invalidate", a["pMemoryRanges"], then="host_read")
        self.assume("invalidate", "a capture records no host reads: each vkInvalidateMappedMemoryRanges is taken as "
                                  "a host read of the whole invalidated range, right after it; reads without one "
                                  "are not in the stream")

    # ---- the document ------------------------------------------------------

    def document(self, name: str) -> dict:
        """The stream document; resources are declared from what the walk saw."""
        self.read_back()
        # A VkQueue whose calls all went to labelled stream queues is not a queue of the stream itself.
        declared = {qid: (dev, family) for h, (qid, dev, family) in self.queues.items()
                    if qid in self.attributed.get(h, {qid})}
        queues: dict[str, list[dict]] = {d: [] for d in self.devices.values()}
        for qid, (dev, family) in {**self.stream_queues, **declared}.items():
            queues.setdefault(dev, []).append({"id": qid, "family": family})
        devices = [{"id": d, "queues": q or [{"id": f"{d}.unused", "family": 0}]} for d, q in queues.items()]
        images = self.image_docs()
        return {
            "format": "vkverify-stream/1", "name": name,
            "description": f"imported from a GFXReconstruct capture of {self.summary.calls} calls",
            "devices": devices, "buffers": self.buffer_docs(), **({"images": images} if images else {}),
            "semaphores": list({s["id"]: s for s in self.semaphores.values()}.values()),  # imported ones once
            "fences": list(self.fences.values()), "shaders": {k: {"bindings": v} for k, v in self.shaders.items()},
            **({"events": [{"id": e} for e in self.events.values()]} if self.events else {}),
            "command_buffers": self.command_buffers, "threads": self.stream_threads()}

    def memory_kind(self, mem: Memory) -> str:
        """The stream kind of `mem`; without memory properties in the capture, as its use says: mapped or not."""
        return self.res.kind(mem) or ("host_coherent" if mem.ever_mapped else "device_local")

    def buffer_docs(self) -> list[dict]:
        """Bound buffers. Buffers of one memory object whose bytes overlap alias a root: the one of them
        that holds all their bytes, else a root `mem<handle>_<offset>` made up over their bytes."""
        out = []
        for mem in self.res.memories.values():
            kind = self.memory_kind(mem)
            if self.res.kind(mem) is None:
                self.warn("memory-properties", f"no vkGetPhysicalDeviceMemoryProperties for memory {mem.handle}'s "
                                               f"device in the capture: taken as {kind}")
            bufs = sorted((self.res.buffers[h] for h in mem.buffers if self.res.buffers[h].same is None),
                          key=lambda b: (b.offset, -b.size))
            for group in _overlapping(bufs):
                start, end = group[0].offset, max(b.offset + b.size for b in group)
                root = group[0].id
                if group[0].offset + group[0].size < end:
                    root = f"mem{mem.handle}_{start}"
                    out.append({"id": root, "size": end - start, "memory": kind, "device": mem.device})
                for b in group:
                    devices = [s.device for s in self.res.sharing(b)]
                    doc = {"id": b.id, "size": b.size}
                    doc.update({"devices": devices} if len(devices) > 1 else {"device": b.device})
                    doc.update({"memory": kind} if b.id == root else {"alias_of": root, "offset": b.offset - start})
                    if b.exclusive:
                        doc["sharing"] = "exclusive"
                    out.append(doc)
        return out


def _staging(kind: str, usage: int) -> bool:
    """A buffer the device can only copy into and out of, on coherent memory: it is there for the host."""
    return kind != "host_cached" and bool(usage & TRANSFER_DST) and not usage & ~TRANSFER_ONLY


def _overlapping(bufs: list[CapturedBuffer]) -> list[list[CapturedBuffer]]:
    """`bufs` (by offset) in groups whose bytes overlap, transitively."""
    groups: list[list[CapturedBuffer]] = []
    end = 0
    for b in bufs:
        if groups and b.offset < end:
            groups[-1].append(b)
            end = max(end, b.offset + b.size)
        else:
            groups.append([b])
            end = b.offset + b.size
    return groups


def _some(names: list[str], shown: int = 8) -> str:
    """The first `shown` names and how many more: a long run reads back hundreds of buffers, one summary line."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
