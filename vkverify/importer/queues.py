"""Queue and host synchronization calls: submits, semaphores, fences, idle waits.

A mixin of `Translator`: these calls become host ops of the calling thread.
"""

from __future__ import annotations

from collections.abc import Iterable

from .batches import ImportedBatch, ImportedSemaphoreOp
from .flags import stage_names
from .records import Call

__all__ = ["Queues"]

SEMAPHORE_WAIT_ANY = 0x1
SEMAPHORE_IMPORT_TEMPORARY = 0x1  # VK_SEMAPHORE_IMPORT_TEMPORARY_BIT
ALL_COMMANDS = 0x10000  # VK_PIPELINE_STAGE_ALL_COMMANDS_BIT: what a vkQueueSubmit signal waits for
_new_tuple = tuple.__new__  # a NamedTuple's own __new__ is a Python call, at each of a run's batches and semaphore ops


class Queues:
    def vkCreateSemaphore(self, call: Call, a: dict) -> None:
        info, timeline = a["pCreateInfo"]["pNext"], None
        while info is not None:  # VkSemaphoreTypeCreateInfo anywhere in the chain
            if info.get("sType") == "VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO":
                timeline = info
            info = info.get("pNext")
        if timeline is not None and timeline["semaphoreType"] == "VK_SEMAPHORE_TYPE_TIMELINE":
            self.semaphores[a["pSemaphore"]] = {"id": f"sem{a['pSemaphore']}", "type": "timeline",
                                                "initial": timeline["initialValue"]}
        else:
            self.semaphores[a["pSemaphore"]] = {"id": f"sem{a['pSemaphore']}", "type": "binary"}

    def vkGetSemaphoreFdKHR(self, call: Call, a: dict) -> None:
        if a["pGetFdInfo"]["semaphore"] in self.semaphores:
            self.exported[a["pFd"]] = self.semaphores[a["pGetFdInfo"]["semaphore"]]

    def vkImportSemaphoreFdKHR(self, call: Call, a: dict) -> None:
        info = a["pImportSemaphoreFdInfo"]
        # A successful import owns the fd: the number may be reused ("transfers ownership of the file descriptor").
        self._import_semaphore(call, info, self.exported.pop(info["fd"], None))

    def vkGetSemaphoreWin32HandleKHR(self, call: Call, a: dict) -> None:
        if a["pGetWin32HandleInfo"]["semaphore"] in self.semaphores:
            self.exported[a["pHandle"]] = self.semaphores[a["pGetWin32HandleInfo"]["semaphore"]]

    def vkImportSemaphoreWin32HandleKHR(self, call: Call, a: dict) -> None:
        # A Windows handle stays the program's ("does not transfer ownership of the handle"): it may be imported
        # again. A named handle (`name`) is another process's object.
        info = a["pImportSemaphoreWin32HandleInfo"]
        self._import_semaphore(call, info, None if info.get("name") else self.exported.get(info.get("handle")))

    def _import_semaphore(self, call: Call, info: dict, exported: dict | None) -> None:
        """7.4.5: a permanent import of a payload exported in the capture makes the importing semaphore one more
        handle of it (the stream names that payload's semaphore for both). A temporary import (the payload only
        until the next wait) or one from outside the capture (another process's signals) is not in the stream."""
        if info["semaphore"] not in self.semaphores:
            return
        if exported is None or info.get("flags", 0) & SEMAPHORE_IMPORT_TEMPORARY:
            self._unmodelled(call)
            return
        self.semaphores[info["semaphore"]] = exported

    def vkCreateFence(self, call: Call, a: dict) -> None:
        self.fences[a["pFence"]] = {"id": f"fence{a['pFence']}", "signaled": bool(a["pCreateInfo"]["flags"] & 1)}

    def _semaphore_op(self, handle: int, value: int | None, mask: int | str) -> ImportedSemaphoreOp:
        sem = self.semaphores[handle]
        # One list per stage mask, named once: a long run's submits name the same few (a list each was 2 MB of
        # an FFT loop's, and naming them a tenth of its submits' time).
        stage = self.stage_lists.get(mask)
        if stage is None:
            stage = self.stage_lists[mask] = stage_names(mask)
        timeline = sem["type"] == "timeline"
        return _new_tuple(ImportedSemaphoreOp, (sem["id"], stage, value if timeline else None, timeline))

    def _submit(self, call: Call, queue: int, batches: list[ImportedBatch], fence: int | str) -> None:
        if queue not in self.queues:
            self.warn(f"queue{queue}", f"{call.name} #{call.index}: queue {queue} was never retrieved with "
                                       "vkGetDeviceQueue; its submits are left out")
            return
        for handle in sorted(self.unwritten) if self.unwritten else ():  # in allocation order: capture ids grow
            self.assumed_write(self.unwritten[handle], call)
        op = {"op": "submit", "queue": self.queue_id(queue), "batches": tuple(batches)}
        if fence in self.fences:
            op["fence"] = self.fences[fence]["id"]
        self.labelled(call, op)

    def _command_buffers(self, call: Call, handles: list[int]) -> tuple[str, ...]:
        out = []
        for h in handles:
            rec = self.recordings.get(h)
            if rec is not None:
                out.append(rec.id)
            else:
                self.warn(f"cb{h}", f"{call.name} #{call.index} submits command buffer {h}, never recorded "
                                    "in the capture: left out")
        return tuple(out)

    def vkQueueSubmit(self, call: Call, a: dict) -> None:
        batches = []
        for s in a["pSubmits"] or []:
            timeline, chain = {}, s.get("pNext")
            while chain is not None:
                if chain.get("sType") == "VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO":
                    timeline = chain
                chain = chain.get("pNext")
            wait_values = timeline.get("pWaitSemaphoreValues") or []
            signal_values = timeline.get("pSignalSemaphoreValues") or []
            stages = s["pWaitDstStageMask"] or []
            batches.append(_new_tuple(ImportedBatch, (
                tuple([self._semaphore_op(h, wait_values[i] if i < len(wait_values) else None, stages[i])
                       for i, h in enumerate(s["pWaitSemaphores"] or [])]),
                self._command_buffers(call, s["pCommandBuffers"] or []),
                tuple([self._semaphore_op(h, signal_values[i] if i < len(signal_values) else None, ALL_COMMANDS)
                       for i, h in enumerate(s["pSignalSemaphores"] or [])]))))
        self._submit(call, a["queue"], batches, a["fence"])

    def vkQueueSubmit2(self, call: Call, a: dict) -> None:
        batches = [_new_tuple(ImportedBatch, (
            tuple([self._semaphore_op(w["semaphore"], w["value"], w["stageMask"])
                   for w in s["pWaitSemaphoreInfos"] or []]),
            self._command_buffers(call, [c["commandBuffer"] for c in s["pCommandBufferInfos"] or []]),
            tuple([self._semaphore_op(w["semaphore"], w["value"], w["stageMask"])
                   for w in s["pSignalSemaphoreInfos"] or []]))) for s in a["pSubmits"] or []]
        self._submit(call, a["queue"], batches, a["fence"])

    vkQueueSubmit2KHR = vkQueueSubmit2

    # ---- host waits and signals --------------------------------------------

    def vkWaitForFences(self, call: Call, a: dict) -> None:
        if call.result != "VK_SUCCESS":  # timed out: the host learnt nothing
            return
        fences = [self.fences[f]["id"] for f in a["pFences"] if f in self.fences]
        if len(fences) > 1 and not a["waitAll"]:
            self.warn("wait-any", f"vkWaitForFences #{call.index} waits for any of {len(fences)} fences; which "
                                  "one signaled is not recorded, so such waits order nothing in the stream")
            return
        self.host(call, "wait_fences", fences=fences)

    def vkGetFenceStatus(self, call: Call, a: dict) -> None:
        if call.result == "VK_SUCCESS" and a["fence"] in self.fences:  # observed signaled: as good as a wait
            self.host(call, "wait_fences", fences=[self.fences[a["fence"]]["id"]])

    def vkResetFences(self, call: Call, a: dict) -> None:
        self.host(call, "reset_fences", fences=[self.fences[f]["id"] for f in a["pFences"] if f in self.fences])

    def _observe(self, call: Call, waits: Iterable[tuple[int, int]], op: str = "wait_semaphores") -> None:
        """A host wait for timeline values (`op`); values the host has already waited for (or the initial one) add
        nothing."""
        # A value observed is above the initial one: it stands for both (most of a polling run's reads add nothing).
        # Per capture thread: a value another thread saw orders nothing on this one (threads may be kept apart).
        observed = self.observed.get(thread := self.thread_of(call.index))
        if observed is None:
            observed = self.observed[thread] = {}
        fresh = []
        for h, v in waits:
            sem = self.semaphores.get(h)
            if sem is not None and v > observed.get(sem["id"], sem.get("initial", 0)):
                fresh.append({"semaphore": sem["id"], "value": v})
        for w in fresh:  # after: each value is compared with what was observed before this call
            observed[w["semaphore"]] = w["value"]
        if fresh and op == "wait_semaphores":
            self.host(call, op, waits=fresh)
        elif fresh:
            self.labelled(call, {"op": op, **fresh[0]})

    def vkWaitSemaphores(self, call: Call, a: dict) -> None:
        info = a["pWaitInfo"]
        if call.result != "VK_SUCCESS":
            return
        if info["flags"] & SEMAPHORE_WAIT_ANY and info["semaphoreCount"] > 1:
            self.warn("wait-any-sem", f"vkWaitSemaphores #{call.index} waits for any of several semaphores; "
                                      "which one was reached is not recorded, so such waits order nothing")
            return
        self._observe(call, zip(info["pSemaphores"], info["pValues"]))

    vkWaitSemaphoresKHR = vkWaitSemaphores

    def vkGetSemaphoreCounterValue(self, call: Call, a: dict) -> None:
        # Programs poll the counter to learn that work finished (wgpu does); reading V is a host wait for V.
        self._observe(call, ((a["semaphore"], a["pValue"]),), "get_semaphore_counter_value")

    vkGetSemaphoreCounterValueKHR = vkGetSemaphoreCounterValue

    def vkSignalSemaphore(self, call: Call, a: dict) -> None:
        info = a["pSignalInfo"]
        if info["semaphore"] in self.semaphores:
            self.signalling.add(self.thread_of(call.index))
            self.host(call, "signal_semaphore", semaphore=self.semaphores[info["semaphore"]]["id"],
                      value=info["value"])

    vkSignalSemaphoreKHR = vkSignalSemaphore

    def vkQueueWaitIdle(self, call: Call, a: dict) -> None:
        if a["queue"] in self.queues:
            self.host(call, "queue_wait_idle", queue=self.queue_id(a["queue"]))

    def vkDeviceWaitIdle(self, call: Call, a: dict) -> None:
        self.host(call, "device_wait_idle", device=self.devices.get(a["device"], "gpu0"))
