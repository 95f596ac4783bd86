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

import base64
import re
from collections import Counter

from .commands import Commands, Recording
from .gfxr import Blocks, FillMemory
from .queues import Queues
from .records import Call
from .resources import WHOLE_SIZE, Buffer, Memory, Resources
from .summary import ImportSummary

# Calls that touch images, rendering or presentation: outside the stream format's scope.
OUT_OF_SCOPE = re.compile(r"Image|RenderPass|Rendering|Framebuffer|Swapchain|Surface|Present|Draw|Sampler|Blit|"
                          r"Resolve|Clear(Color|DepthStencil|Attachments)|Viewport|Scissor|Event|QueryPool|"
                          r"Sparse|DescriptorSetWithTemplate|PushDescriptorSet")
# Of those, the ones whose absence can hide or invent synchronization: each gets a warning.
ORDERING = re.compile(r"Event|CopyQueryPoolResults|Sparse|DescriptorSetWithTemplate|PushDescriptorSet")


class Translator(Commands, Queues):
    def __init__(self, resources: Resources, blocks: Blocks | None, threads: bool) -> None:
        """blocks: what the .gfxr holds beside the JSON lines (None for JSON lines only);
        threads: keep each capture thread as a stream thread."""
        self.res = resources
        self.fills = None if blocks is None else blocks.fills  # None: no fill records
        self.push_data = None if blocks is None else blocks.push_constants  # None: push constants unknown
        self.call_threads = blocks.threads if threads else None  # None: every call on thread "main", in capture order
        self.summary = ImportSummary()
        self.devices: dict[int, str] = {}
        self.device_physical: dict[int, int] = {}
        self.queues: dict[int, tuple[str, str, int]] = {}  # handle -> (queue id, device id, family)
        self.semaphores: dict[int, dict] = {}
        self.observed: dict[int, int] = {}  # timeline semaphore -> highest value a host op has waited for
        self.fences: dict[int, dict] = {}
        self.recordings: dict[int, Recording] = {}
        self.recorded: Counter = Counter()
        self.command_buffers: dict[str, list[dict]] = {}
        self.shaders: dict[str, list[str]] = {}
        self.threads: dict[str, list[dict]] = {}
        self.thread_names: dict[int, str] = {}
        self.warned: set[str] = set()

    # ---- the walk ----------------------------------------------------------

    def run(self, calls) -> None:
        fills = iter(self.fills or ())
        pending = next(fills, None)
        for call in calls:
            while pending is not None and pending.index < call.index:
                self.fill_memory(pending)
                pending = next(fills, None)
            self.summary.calls += 1
            handler = getattr(self, call.name, None)
            if handler is not None and (call.result is None or call.result == "VK_SUCCESS"
                                        or call.name in ("vkWaitForFences", "vkGetFenceStatus", "vkWaitSemaphores")):
                handler(call, call.args)
            elif OUT_OF_SCOPE.search(call.name):
                self.summary.skipped[call.name] += 1
                if ORDERING.search(call.name):
                    self.warn(call.name, f"{call.name} (first at #{call.index}) is not in the stream format: "
                                         "the ordering or accesses it makes are missing from the stream")
        for rest in fills:
            self.fill_memory(rest)

    def warn(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            self.summary.warnings.append(message)

    def thread(self, index: int) -> list[dict]:
        if self.call_threads is None:
            return self.threads.setdefault("main", [])
        tid = self.call_threads.get(index, 0)
        if tid not in self.thread_names:
            self.thread_names[tid] = "main" if not self.thread_names else f"thread{tid}"
        return self.threads.setdefault(self.thread_names[tid], [])

    def host(self, call: Call, op: str, **fields) -> None:
        self.thread(call.index).append({"op": op, **fields, "label": f"{call.name} #{call.index}"})

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

    def _queue(self, device: int, family: int, index: int, handle: int) -> None:
        dev = self.devices.get(device, "gpu0")
        qid = f"q{family}" if index == 0 else f"q{family}_{index}"
        self.queues[handle] = (qid if dev == "gpu0" else f"{dev}.{qid}", dev, family)

    def vkGetDeviceQueue(self, call: Call, a: dict) -> None:
        self._queue(a["device"], a["queueFamilyIndex"], a["queueIndex"], a["pQueue"])

    def vkGetDeviceQueue2(self, call: Call, a: dict) -> None:
        info = a["pQueueInfo"]
        self._queue(a["device"], info["queueFamilyIndex"], info["queueIndex"], a["pQueue"])

    def vkSetDebugUtilsObjectNameEXT(self, call: Call, a: dict) -> None:
        info = a["pNameInfo"]
        buf = self.res.buffers.get(info["objectHandle"])
        if info["objectType"] == "VK_OBJECT_TYPE_BUFFER" and buf is not None and info.get("pObjectName"):
            self.res.name_buffer(buf, info["pObjectName"])

    # ---- memory and buffers ------------------------------------------------

    def vkAllocateMemory(self, call: Call, a: dict) -> None:
        info = a["pAllocateInfo"]
        self.res.memories[a["pMemory"]] = Memory(a["pMemory"], self.devices.get(a["device"], "gpu0"),
                                                 info["allocationSize"], info["memoryTypeIndex"],
                                                 self.device_physical.get(a["device"]))

    def vkCreateBuffer(self, call: Call, a: dict) -> None:
        info = a["pCreateInfo"]
        self.res.buffers[a["pBuffer"]] = Buffer(a["pBuffer"], f"buf{a['pBuffer']}", info["size"],
                                                info["sharingMode"] == "VK_SHARING_MODE_EXCLUSIVE",
                                                self.devices.get(a["device"], "gpu0"))

    def _bind(self, buffer: int, memory: int, offset: int) -> None:
        buf, mem = self.res.buffers.get(buffer), self.res.memories.get(memory)
        if buf is not None and mem is not None:
            buf.memory, buf.offset = memory, offset
            mem.buffers.append(buffer)

    def vkBindBufferMemory(self, call: Call, a: dict) -> None:
        self._bind(a["buffer"], a["memory"], a["memoryOffset"])

    def vkBindBufferMemory2(self, call: Call, a: dict) -> None:
        for info in a["pBindInfos"]:
            self._bind(info["buffer"], info["memory"], info["memoryOffset"])

    vkBindBufferMemory2KHR = vkBindBufferMemory2

    def vkBindImageMemory(self, call: Call, a: dict) -> None:
        self.summary.skipped[call.name] += 1
        if a["memory"] in self.res.memories:
            self.res.memories[a["memory"]].images.append((a["image"], call.index))

    def vkCreateBufferView(self, call: Call, a: dict) -> None:
        info = a["pCreateInfo"]
        self.res.buffer_views[a["pView"]] = (info["buffer"], info["offset"], info["range"])

    def bound(self, handle: int, call: Call) -> Buffer | None:
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
        if buf is not None and buf.memory is not None and buf.live:
            buf.live = False
            self.host(call, "destroy", buffer=buf.id)

    def vkFreeMemory(self, call: Call, a: dict) -> None:
        mem = self.res.memories.get(a["memory"])
        for handle in [] if mem is None else mem.buffers:
            buf = self.res.buffers[handle]
            if buf.live:  # freeing the memory ends the lifetime of what is bound to it
                buf.live = False
                self.host(call, "destroy", buffer=buf.id)

    # ---- host access to mapped memory --------------------------------------

    def vkMapMemory(self, call: Call, a: dict) -> None:
        mem = self.res.memories[a["memory"]]
        mem.mapped = (a["offset"], mem.size - a["offset"] if a["size"] == WHOLE_SIZE else a["size"])
        mem.ever_mapped = True
        mem.assumed_write_pending = self.fills is None

    def vkUnmapMemory(self, call: Call, a: dict) -> None:
        mem = self.res.memories[a["memory"]]
        self.assumed_write(mem, call)
        mem.mapped = None

    def _host_access(self, call: Call, op: str, mem: Memory, offset: int, size: int, **fields) -> None:
        for buf, off, n in self.res.buffers_over(mem, offset, size):
            self.host(call, op, buffer=buf.id, offset=off, size=n, **fields)

    def assumed_write(self, mem: Memory, call: Call) -> None:
        """Without fill records: the host wrote the whole mapped range before the first submit after a map."""
        if mem.assumed_write_pending and mem.mapped is not None:
            mem.assumed_write_pending = False
            self._host_access(call, "host_write", mem, *mem.mapped)
            if "assumed" not in self.warned:
                self.warned.add("assumed")
                self.summary.assumed.append(
                    "the capture has no fill-memory records (JSON lines only): each mapping is taken as a host "
                    "write of the whole mapped range just before the first submit, flush or unmap after the map; "
                    "host reads are not modelled")

    def fill_memory(self, fill: FillMemory) -> None:
        mem = self.res.memories.get(fill.memory)
        if mem is None:
            return
        start = (mem.mapped[0] if mem.mapped is not None else 0) + fill.offset  # the offset is in the mapped range
        if self.call_threads is not None:
            self.call_threads.setdefault(fill.index, fill.thread)
        for buf, off, n in self.res.buffers_over(mem, start, fill.size):
            op = {"op": "host_write", "buffer": buf.id, "offset": off, "size": n}
            if fill.data is not None:  # the bytes written, so that a replay writes them too
                at = buf.offset + off - start
                op["data"] = {"base64": base64.b64encode(fill.data[at:at + n]).decode()}
            self.thread(fill.index).append({**op, "label": f"fill memory #{fill.index}"})

    def _ranges(self, call: Call, op: str, ranges: list[dict]) -> None:
        for r in ranges:
            mem = self.res.memories.get(r["memory"])
            if mem is None:
                continue
            self.assumed_write(mem, call)
            if self.res.kind(mem) == "host_cached":  # flush/invalidate only mean something on non-coherent memory
                size = mem.size - r["offset"] if r["size"] == WHOLE_SIZE else r["size"]
                self._host_access(call, op, mem, r["offset"], size)

    def vkFlushMappedMemoryRanges(self, call: Call, a: dict) -> None:
        self._ranges(call, "flush", a["pMemoryRanges"])

    def vkInvalidateMappedMemoryRanges(self, call: Call, a: dict) -> None:
        self._ranges(call, "invalidate", a["pMemoryRanges"])

    # ---- the document ------------------------------------------------------

    def document(self, name: str) -> dict:
        """The stream document; resources are declared from what the walk saw."""
        queues: dict[str, list[dict]] = {d: [] for d in self.devices.values()}
        for qid, dev, family in self.queues.values():
            queues.setdefault(dev, []).append({"id": qid, "family": family})
        devices = [{"id": d, "queues": q or [{"id": f"{d}.unused", "family": 0}]} for d, q in queues.items()]
        return {
            "format": "vkverify-stream/1", "name": name,
            "description": f"imported from a GFXReconstruct capture of {self.summary.calls} calls",
            "devices": devices, "buffers": self.buffer_docs(),
            "semaphores": list(self.semaphores.values()), "fences": list(self.fences.values()),
            "shaders": {k: {"bindings": v} for k, v in self.shaders.items()},
            "command_buffers": self.command_buffers, "threads": self.threads}

    def buffer_docs(self) -> list[dict]:
        """Bound buffers. Buffers of one memory object whose bytes overlap alias a root: the one of them
        that holds all their bytes, else a root `mem<handle>_<offset>` made up over their bytes."""
        out = []
        for mem in self.res.memories.values():
            kind = self.res.kind(mem)
            if kind is None:
                kind = "host_coherent" if mem.ever_mapped else "device_local"
                self.warn("memory-properties", f"no vkGetPhysicalDeviceMemoryProperties for memory {mem.handle}'s "
                                               f"device in the capture: taken as {kind}")
            bufs = sorted((self.res.buffers[h] for h in mem.buffers), key=lambda b: (b.offset, -b.size))
            for group in _overlapping(bufs):
                start, end = group[0].offset, max(b.offset + b.size for b in group)
                root = group[0].id
                if group[0].offset + group[0].size < end:
                    root = f"mem{mem.handle}_{start}"
                    out.append({"id": root, "size": end - start, "memory": kind, "device": mem.device})
                for b in group:
                    doc = {"id": b.id, "size": b.size, "device": b.device}
                    doc.update({"memory": kind} if b.id == root else {"alias_of": root, "offset": b.offset - start})
                    if b.exclusive:
                        doc["sharing"] = "exclusive"
                    out.append(doc)
            for image, index in mem.images if bufs else ():
                self.summary.warnings.append(f"image {image} (vkBindImageMemory #{index}) is bound to memory "
                                             f"{mem.handle}, which buffers use too: its accesses are not in the stream")
        return out


def _overlapping(bufs: list[Buffer]) -> list[list[Buffer]]:
    """`bufs` (by offset) in groups whose bytes overlap, transitively."""
    groups: list[list[Buffer]] = []
    end = 0
    for b in bufs:
        if groups and b.offset < end:
            groups[-1].append(b)
            end = max(end, b.offset + b.size)
        else:
            groups.append([b])
            end = b.offset + b.size
    return groups
