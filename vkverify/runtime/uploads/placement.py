"""Where uploads go (the protocol in the package docstring): staged or mapped, which memory kind the
destinations take, and which queue carries the copies."""

from __future__ import annotations

import os

from ..memory import flag_names

__all__ = ["UPLOAD_QUEUE", "choose_queue", "destination_kind", "memory_layout", "staged"]

UPLOAD_QUEUE = "upload"  # the stream queue id a program requests for uploads (choose_queue)


def staged(heaps: list[dict], types: list[dict], env=os.environ) -> tuple[bool, str]:
    """Staged when the device-local host-visible heap is under a
    quarter of the largest device-local heap, or absent. VKVERIFY_STAGED forces
    either way; VKVERIFY_HOST_VISIBLE_CAP_MB caps the host-visible heap the rule sees
    (a small BAR window emulated on any card). heaps: {size, device_local};
    types: {heap, flags} (flag names), as `vkverify devices` lists them."""
    local = [h["size"] for h in heaps if h["device_local"]]
    largest = max(local, default=0)
    bar = max((heaps[t["heap"]]["size"] for t in types
               if {"DEVICE_LOCAL", "HOST_VISIBLE"} <= set(t["flags"])), default=0)
    cap = env.get("VKVERIFY_HOST_VISIBLE_CAP_MB")
    if cap:
        bar = min(bar, int(cap) << 20)
    decision = bar < largest / 4
    why = (f"device-local host-visible heap {bar >> 20} MiB{' (capped)' if cap else ''}, "
           f"largest device-local heap {largest >> 20} MiB")
    forced = env.get("VKVERIFY_STAGED")
    if forced in ("0", "1"):
        decision, why = forced == "1", f"VKVERIFY_STAGED={forced} ({why})"
    return decision, f"{'staged' if decision else 'mapped'}: {why}"


def memory_layout(vk, physical) -> tuple[list[dict], list[dict]]:
    """The device's heaps and memory types in the placement rule's terms."""
    memory = vk.vkGetPhysicalDeviceMemoryProperties(physical)  # vkGetPhysicalDeviceMemoryProperties
    heaps = [{"size": memory.memoryHeaps[i].size,
              "device_local": bool(memory.memoryHeaps[i].flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)}
             for i in range(memory.memoryHeapCount)]
    types = [{"heap": memory.memoryTypes[i].heapIndex, "flags": flag_names(vk, memory.memoryTypes[i].propertyFlags)}
             for i in range(memory.memoryTypeCount)]
    return heaps, types


def destination_kind(is_staged: bool, types: list[dict]) -> str:
    """The stream memory kind of destinations: device-local behind staging, else the
    device-local host-visible window, else host memory the device reads."""
    if is_staged:
        return "device_local"
    if any({"DEVICE_LOCAL", "HOST_VISIBLE"} <= set(t["flags"]) for t in types):
        return "device_host_visible"
    return "host_coherent"


def choose_queue(vk, device) -> tuple[str, str]:
    """The stream queue uploads go to, and why: the `upload`
    queue (QueueRequest("upload", group=1, compute=False)) on a transfer-only
    family, else on a VkQueue no other stream queue shares, else the main queue.
    device: runtime.device.LogicalDevice."""
    queues = device.queues
    main = next(iter(queues))
    if UPLOAD_QUEUE not in queues:
        return main, "main"
    family, _, lock = queues[UPLOAD_QUEUE]
    flags = vk.vkGetPhysicalDeviceQueueFamilyProperties(device.physical)[family].queueFlags
    if sum(other is lock for _, _, other in queues.values()) > 1:
        # Shared with the program's queue: record on that queue's id, so the stream
        # orders the uploads with the program's submits as the device does.
        return next(q for q, (_, _, other) in queues.items() if other is lock and q != UPLOAD_QUEUE), "main"
    if not flags & (vk.VK_QUEUE_COMPUTE_BIT | vk.VK_QUEUE_GRAPHICS_BIT):
        return UPLOAD_QUEUE, "transfer"
    return UPLOAD_QUEUE, "spare"
