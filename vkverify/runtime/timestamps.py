"""GPU time of each command buffer the runtime records: a timestamp written before its first command and after
its last (spec, Queries, "Timestamp Queries": vkCmdWriteTimestamp at TOP_OF_PIPE then BOTTOM_OF_PIPE), read
once the device is idle. What the host's submission costs (Python's part of a replay) is not in it; gaps between command
buffers are not either: the sum over command buffers is the device's own time.

A command buffer submitted several times holds the timestamps of the execution that wrote them last (simultaneous
use: two pending executions may interleave them); a stream that submits each command buffer once, as the decode
streams do, gets one figure per execution."""

from __future__ import annotations

from .errors import Unsupported

__all__ = ["Timestamps"]

POOL_QUERIES = 512  # queries per VkQueryPool: two per command buffer


class Timestamps:
    def __init__(self, device) -> None:
        """device: a LogicalDevice; Unsupported where a queue family it uses writes no timestamps."""
        vk = device.instance.vk
        self.vk, self.device = vk, device
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(device.physical)
        used = {family for family, _, _ in device.queues.values()}
        if any(families[f].timestampValidBits == 0 for f in used):
            raise Unsupported(f"{device.name}: a queue family it uses has no timestamps (timestampValidBits 0)")
        self.period_ns = vk.vkGetPhysicalDeviceProperties(device.physical).limits.timestampPeriod
        self.pools: list = []
        self.used = 0  # queries handed out
        self.brackets: dict[object, int] = {}  # key -> its first query (the second follows)

    def begin(self, key: object, cb) -> None:
        """Before `cb`'s first command: its start timestamp, under `key` (the runtime's recorded-buffer key)."""
        vk = self.vk
        if self.used + 2 > len(self.pools) * POOL_QUERIES:
            info = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=POOL_QUERIES)
            self.pools.append(vk.vkCreateQueryPool(self.device.handle, info, None))  # vkCreateQueryPool
        self.brackets[key] = first = self.used
        self.used += 2
        pool, query = self._place(first)
        vk.vkCmdResetQueryPool(cb, pool, query, 2)  # vkCmdResetQueryPool: a query is written only once reset
        vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, query)  # vkCmdWriteTimestamp

    def end(self, key: object, cb) -> None:
        """After `cb`'s last command: its end timestamp, once every command before it completed."""
        pool, query = self._place(self.brackets[key] + 1)
        self.vk.vkCmdWriteTimestamp(cb, self.vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, query)

    def _place(self, query: int) -> tuple[object, int]:
        return self.pools[query // POOL_QUERIES], query % POOL_QUERIES

    def nanoseconds(self) -> dict[object, float]:
        """key -> the GPU nanoseconds between its command buffer's timestamps, for those whose both are written
        (asked once the device is idle: a command buffer recorded and never submitted has none)."""
        vk, out = self.vk, {}
        flags = vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WITH_AVAILABILITY_BIT
        data = vk.ffi.new("uint64_t[4]")  # per query: its value, then whether it is available
        for key, first in self.brackets.items():
            pool, query = self._place(first)  # a bracket never straddles two pools: POOL_QUERIES is even
            try:
                vk.vkGetQueryPoolResults(self.device.handle, pool, query, 2, 32, data, 16, flags)
            except vk.VkNotReady:  # vkGetQueryPoolResults: not both written
                continue
            if data[1] and data[3]:
                out[key] = (data[2] - data[0]) * self.period_ns
        return out

    def release(self) -> None:
        pools, self.pools = self.pools, []
        for pool in pools:
            self.vk.vkDestroyQueryPool(self.device.handle, pool, None)  # vkDestroyQueryPool
