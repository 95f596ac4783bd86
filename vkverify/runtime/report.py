"""What `vkverify replay` and `vkverify devices` print (text or JSON)."""

from __future__ import annotations

import json

from .device import Instance, vulkan
from .memory import flag_names
from .replay_result import ReplayResult
from .uploads import staged

__all__ = ["devices", "devices_json", "devices_text", "replay_json", "replay_text"]


def replay_json(result: ReplayResult) -> dict:
    out = {"stream": result.stream, "device": result.device, "digests": result.digests, "reads": result.reads,
           "reference": None if result.reference is None else {k: list(v) for k, v in result.reference.items()},
           "reference_note": result.reference_note,
           "layer_errors": [m.text for m in result.messages if m.severity == "error"
                            and not m.id_name.startswith("SYNC-HAZARD")]}
    if result.agreement is not None:
        a = result.agreement
        out["syncval"] = {
            "shared": [{"kind": f.kind, "buffer": f.buffer, "first": f.first, "second": f.second} for f, _ in a.shared],
            "only_vkverify": [{"kind": f.kind, "buffer": f.buffer, "first": f.first, "second": f.second}
                              for f in a.only_vkverify],
            "only_layer": [{"kind": lf.kind, "buffer": lf.buffer, "second": lf.second} for lf in a.only_layer]}
    return out


def replay_text(result: ReplayResult) -> str:
    lines = [f"{result.stream} on {result.device}"]
    images = {i.id for i in result.recorded.images}
    lines += [f"  {'image' if k in images else 'buffer'} {k}: {v}" for k, v in result.digests.items()]
    lines += [f"  read {k}: {v}" for k, v in result.reads.items()]
    if result.reference is None:
        lines.append(f"  reference: {result.reference_note}")
    else:
        lines.append("  reference: all digests equal" if not result.reference else
                     "  reference: MISMATCH " + ", ".join(result.reference))
    if result.agreement is not None:
        a = result.agreement
        lines += [f"  found by both vkverify and syncval: {f.kind} {f.buffer} {f.first} -> {f.second}"
                  for f, _ in a.shared]
        lines += [f"  DISAGREE only vkverify: {f.kind} {f.buffer} {f.first} -> {f.second}" for f in a.only_vkverify]
        lines += [f"  DISAGREE only layer: {lf.kind} {lf.buffer or ''} at {lf.second}" for lf in a.only_layer]
    return "\n".join(lines)


def devices() -> list[dict]:
    """Every physical device: name, driver, API version, queue families, memory."""
    vk = vulkan()
    instance = Instance()
    try:
        out = []
        for index, p in enumerate(instance.physical_devices()):
            props = vk.vkGetPhysicalDeviceProperties(p)  # vkGetPhysicalDeviceProperties
            driver = vk.VkPhysicalDeviceDriverProperties()
            props2 = vk.VkPhysicalDeviceProperties2(pNext=driver)
            vk.vkGetPhysicalDeviceProperties2(p, props2)  # vkGetPhysicalDeviceProperties2
            families = vk.vkGetPhysicalDeviceQueueFamilyProperties(p)  # vkGetPhysicalDeviceQueueFamilyProperties
            memory = vk.vkGetPhysicalDeviceMemoryProperties(p)  # vkGetPhysicalDeviceMemoryProperties
            heaps = [{"size": memory.memoryHeaps[i].size,
                      "device_local": bool(memory.memoryHeaps[i].flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)}
                     for i in range(memory.memoryHeapCount)]
            types = [{"heap": memory.memoryTypes[i].heapIndex,
                      "flags": flag_names(vk, memory.memoryTypes[i].propertyFlags)}
                     for i in range(memory.memoryTypeCount)]
            v = props.apiVersion
            out.append({
                "index": index, "name": props.deviceName,
                "driver": f"{vk.ffi.string(driver.driverName).decode()} {vk.ffi.string(driver.driverInfo).decode()}",
                "api_version": f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}",
                "queue_families": [{"index": i, "count": f.queueCount, "flags": [
                    n for n in ("GRAPHICS", "COMPUTE", "TRANSFER", "SPARSE_BINDING")
                    if f.queueFlags & getattr(vk, f"VK_QUEUE_{n}_BIT")]} for i, f in enumerate(families)],
                "heaps": heaps, "memory_types": types, "upload": staged(heaps, types)[1]})
        return out
    finally:
        instance.release()


def devices_text(devs: list[dict]) -> str:
    lines = []
    for d in devs:
        lines.append(f"[{d['index']}] {d['name']}  driver {d['driver']}  Vulkan {d['api_version']}")
        for f in d["queue_families"]:
            lines.append(f"    queue family {f['index']}: {'|'.join(f['flags'])} x{f['count']}")
        for i, h in enumerate(d["heaps"]):
            lines.append(f"    heap {i}: {h['size'] >> 20} MiB{' device-local' if h['device_local'] else ''}")
        for i, t in enumerate(d["memory_types"]):
            lines.append(f"    memory type {i}: heap {t['heap']} {'|'.join(t['flags']) or '-'}")
        lines.append(f"    upload rule: {d['upload']}")
    return "\n".join(lines)


def devices_json(devs: list[dict]) -> str:
    return json.dumps(devs, indent=1)
