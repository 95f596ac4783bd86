"""Instance, physical-device choice, logical device and queues.

Every struct a Vulkan call points to is bound to a local name until the call
returns: the `vulkan` package does not keep nested temporaries alive
(an inline nested struct segfaulted vkCreateComputePipelines under the validation layer).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field

from .errors import NoDevice, Unsupported

__all__ = ["Instance", "LogicalDevice", "Message", "QueueRequest", "assign_families", "internal_group", "pick_physical",
           "vulkan"]

SYNCVAL_QUEUE_SUBMIT = "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT"
VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"


def vulkan():
    """The `vulkan` module; NoDevice when the loader cannot be opened."""
    try:
        import vulkan as vk
    except OSError as error:  # cffi could not dlopen libvulkan
        raise NoDevice(f"Vulkan loader not loadable: {error}") from None
    return vk


# Errors the validation layer reports about its own bookkeeping, not about the program: its
# timeline-semaphore tracking timed out ("This is most likely a validation bug", in its words;
# renamed INTERNAL-ERROR- in later layers). Seen on Lavapipe under load, where a proxy thread
# signals a semaphore from the host for a device that cannot import it.
LAYER_SELF_DIAGNOSED = ("UNASSIGNED-VkSemaphore-state-timeout", "INTERNAL-ERROR-VkSemaphore-state-timeout")


@dataclass
class Message:
    """One validation-layer message, with the runtime operation it arrived in."""

    severity: str  # "error" | "warning" | "internal" (the layer about itself: LAYER_SELF_DIAGNOSED)
    id_name: str  # e.g. SYNC-HAZARD-READ-AFTER-WRITE
    text: str
    objects: tuple[str, ...]  # debug-utils names of the objects it lists
    operation: str | None  # what the runtime was doing: a stream reference


class Instance:
    """A VkInstance, optionally with the Khronos validation layer,
    synchronization validation and a messenger that collects messages."""

    def __init__(self, validation: bool = False, syncval: bool = False) -> None:
        self.vk = vk = vulkan()
        self.handle = self.messenger = None
        self.messages: list[Message] = []
        self.operation: str | None = None  # set by the runtime around each call
        self._lock = threading.Lock()
        validation = validation or syncval
        layers = [VALIDATION_LAYER] if validation else []
        if validation and VALIDATION_LAYER not in {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}:
            raise NoDevice(f"{VALIDATION_LAYER} is not installed")
        if syncval:
            # Layer 1.3.239 checks hazards across command buffers and submits only
            # with this switch (marked alpha then); it reads the variable at
            # vkCreateInstance.
            enables = [e for e in os.environ.get("VK_LAYER_ENABLES", "").split(":") if e]
            if SYNCVAL_QUEUE_SUBMIT not in enables:
                os.environ["VK_LAYER_ENABLES"] = ":".join(enables + [SYNCVAL_QUEUE_SUBMIT])
        app = vk.VkApplicationInfo(pApplicationName="vkverify", apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
        # Debug names wherever the loader offers them, not only under validation: a capture layer
        # (GFXReconstruct) records them, so an imported capture names the stream's objects.
        offered = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
        debug_utils = validation or vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME in offered
        extensions = [vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME] if debug_utils else []
        features = [vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT]
        validation_features = vk.VkValidationFeaturesEXT(
            enabledValidationFeatureCount=1, pEnabledValidationFeatures=features) if syncval else None
        messenger_info = vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
            | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
            | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT,
            pfnUserCallback=self._on_message) if validation else None
        info = vk.VkInstanceCreateInfo(
            pNext=validation_features, pApplicationInfo=app,
            enabledLayerCount=len(layers), ppEnabledLayerNames=layers,
            enabledExtensionCount=len(extensions), ppEnabledExtensionNames=extensions)
        try:
            self.handle = vk.vkCreateInstance(info, None)  # vkCreateInstance
        except vk.VkError as error:
            raise NoDevice(f"vkCreateInstance failed ({type(error).__name__})") from None
        self._debug_utils = {}  # function name -> pointer
        if debug_utils:
            self._debug_utils = {f: vk.vkGetInstanceProcAddr(self.handle, f) for f in (
                "vkSetDebugUtilsObjectNameEXT", "vkCmdBeginDebugUtilsLabelEXT", "vkCmdEndDebugUtilsLabelEXT",
                "vkCmdInsertDebugUtilsLabelEXT", "vkQueueBeginDebugUtilsLabelEXT", "vkQueueEndDebugUtilsLabelEXT",
                "vkSubmitDebugUtilsMessageEXT")}
        if validation:
            create = vk.vkGetInstanceProcAddr(self.handle, "vkCreateDebugUtilsMessengerEXT")
            self.messenger = create(self.handle, messenger_info, None)  # vkCreateDebugUtilsMessengerEXT

    def _on_message(self, severity, types, data, user_data) -> int:
        """PFN_vkDebugUtilsMessengerCallbackEXT: collect, never abort the call."""
        vk = self.vk
        objects = tuple(vk.ffi.string(data.pObjects[i].pObjectName).decode()
                        for i in range(data.objectCount) if data.pObjects[i].pObjectName != vk.ffi.NULL)
        id_name = vk.ffi.string(data.pMessageIdName).decode() if data.pMessageIdName != vk.ffi.NULL else ""
        kind = ("internal" if id_name in LAYER_SELF_DIAGNOSED
                else "error" if severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT else "warning")
        with self._lock:
            self.messages.append(Message(kind, id_name, vk.ffi.string(data.pMessage).decode(), objects,
                                         self.operation))
        return vk.VK_FALSE

    def name(self, device, object_type: int, handle, name: str) -> None:
        """vkSetDebugUtilsObjectNameEXT, so layer messages and captures name stream objects."""
        if "vkSetDebugUtilsObjectNameEXT" in self._debug_utils:
            vk = self.vk
            info = vk.VkDebugUtilsObjectNameInfoEXT(objectType=object_type,
                                                    objectHandle=int(vk.ffi.cast("uint64_t", handle)),
                                                    pObjectName=name)
            self._debug_utils["vkSetDebugUtilsObjectNameEXT"](device, info)

    def _label(self, function: str, target, name: str | None = None) -> None:
        """A debug-utils label call on a command buffer or queue; nothing without the extension."""
        if function in self._debug_utils:
            args = () if name is None else (self.vk.VkDebugUtilsLabelEXT(pLabelName=name, color=[0.0] * 4),)
            self._debug_utils[function](target, *args)

    def begin_label(self, cb, name: str) -> None:
        """vkCmdBeginDebugUtilsLabelEXT: the commands up to end_label belong to stream command `name`."""
        self._label("vkCmdBeginDebugUtilsLabelEXT", cb, name)

    def end_label(self, cb) -> None:
        self._label("vkCmdEndDebugUtilsLabelEXT", cb)

    def insert_label(self, cb, name: str) -> None:
        """vkCmdInsertDebugUtilsLabelEXT: a note on the next command recorded."""
        self._label("vkCmdInsertDebugUtilsLabelEXT", cb, name)

    @contextmanager
    def queue_label(self, queue, name: str):
        """vkQueueBeginDebugUtilsLabelEXT / vkQueueEndDebugUtilsLabelEXT around the queue calls made inside:
        they act for stream queue `name`. The caller holds the queue's lock (queues are externally synchronized)."""
        self._label("vkQueueBeginDebugUtilsLabelEXT", queue, name)
        try:
            yield
        finally:
            self._label("vkQueueEndDebugUtilsLabelEXT", queue)

    def note(self, text: str) -> None:
        """vkSubmitDebugUtilsMessageEXT (general, info): a capture keeps it between the calls around it."""
        if "vkSubmitDebugUtilsMessageEXT" in self._debug_utils:
            vk = self.vk
            data = vk.VkDebugUtilsMessengerCallbackDataEXT(pMessage=text)
            self._debug_utils["vkSubmitDebugUtilsMessageEXT"](
                self.handle, vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT,
                vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT, data)

    def physical_devices(self) -> list:
        return list(self.vk.vkEnumeratePhysicalDevices(self.handle))  # vkEnumeratePhysicalDevices

    def release(self) -> None:
        """Idempotent: the handle is cleared before it is destroyed."""
        vk = self.vk
        messenger, self.messenger = self.messenger, None
        if messenger is not None:
            destroy = vk.vkGetInstanceProcAddr(self.handle, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self.handle, messenger, None)  # vkDestroyDebugUtilsMessengerEXT
        handle, self.handle = self.handle, None
        if handle is not None:
            vk.vkDestroyInstance(handle, None)  # vkDestroyInstance


def pick_physical(instance: Instance, wanted: str | None = None):
    """By VKVERIFY_DEVICE (an index or a case-insensitive part of the name);
    default: the first real GPU (discrete, then integrated), else the first device."""
    vk = instance.vk
    physicals = instance.physical_devices()
    if not physicals:
        raise NoDevice("no Vulkan physical device")
    names = [vk.vkGetPhysicalDeviceProperties(p).deviceName for p in physicals]
    wanted = wanted if wanted is not None else os.environ.get("VKVERIFY_DEVICE") or None
    if wanted is not None:
        if wanted.isdigit() and int(wanted) < len(physicals):
            return physicals[int(wanted)]
        for p, name in zip(physicals, names):
            if wanted.lower() in name.lower():
                return p
        raise NoDevice(f"no device matches {wanted!r} (have: {', '.join(names)})")
    rank = {vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0, vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1}
    return min(physicals, key=lambda p: rank.get(vk.vkGetPhysicalDeviceProperties(p).deviceType, 2))


@dataclass(frozen=True)
class QueueRequest:
    """A queue the program wants: `group` queues share one device family,
    distinct groups get distinct families where the device has them."""

    id: str
    group: int = 0
    compute: bool = True  # False: copies and fills only (a transfer-only family will do)


@dataclass
class LogicalDevice:
    """A VkDevice with its queues; `queues[id]` is (family, VkQueue, lock)."""

    instance: Instance
    physical: object
    handle: object = None
    queues: dict = field(default_factory=dict)
    families: dict = field(default_factory=dict)  # request group -> device family
    synchronization2: bool = False
    name: str = ""
    pipeline_statistics: bool = False  # the pipelineStatisticsQuery feature, enabled where the device has it

    @classmethod
    def open(cls, instance: Instance, physical, requests: list[QueueRequest],
             extensions: tuple[str, ...] = ()) -> LogicalDevice:
        """extensions: device extensions to enable; Unsupported, naming them, where the device lacks some."""
        vk = instance.vk
        props = vk.vkGetPhysicalDeviceProperties(physical)
        if vk.VK_VERSION_MINOR(props.apiVersion) < 2 and vk.VK_VERSION_MAJOR(props.apiVersion) == 1:
            raise Unsupported(f"{props.deviceName}: Vulkan 1.2 is needed (timeline semaphores)")
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
        groups = assign_families([f.queueFlags for f in families], requests, vk)
        # Queue indices: a group's queues take distinct queues of its family
        # while there are some, then share them (submits take the queue's lock).
        per_family: dict[int, list[str]] = {}
        for r in requests:
            per_family.setdefault(groups[r.group], []).append(r.id)
        counts = {fam: min(len(ids), families[fam].queueCount) for fam, ids in per_family.items()}
        priorities = {fam: [1.0] * n for fam, n in counts.items()}
        queue_infos = [vk.VkDeviceQueueCreateInfo(queueFamilyIndex=fam, queueCount=n, pQueuePriorities=priorities[fam])
                       for fam, n in counts.items()]
        v13 = vk.VkPhysicalDeviceVulkan13Features()
        v12 = vk.VkPhysicalDeviceVulkan12Features(pNext=v13)
        query = vk.VkPhysicalDeviceFeatures2(pNext=v12)
        vk.vkGetPhysicalDeviceFeatures2(physical, query)  # vkGetPhysicalDeviceFeatures2
        if not v12.timelineSemaphore:
            raise Unsupported(f"{props.deviceName}: no timelineSemaphore feature")
        sync2 = bool(v13.synchronization2) and vk.VK_VERSION_MINOR(props.apiVersion) >= 3
        statistics = bool(query.features.pipelineStatisticsQuery)
        enable13 = vk.VkPhysicalDeviceVulkan13Features(synchronization2=vk.VK_TRUE) if sync2 else None
        enable12 = vk.VkPhysicalDeviceVulkan12Features(pNext=enable13, timelineSemaphore=vk.VK_TRUE)
        # The replay's query result copies read pipeline statistics queries (runtime.Runtime.query_pool).
        enable10 = vk.VkPhysicalDeviceFeatures(pipelineStatisticsQuery=vk.VK_TRUE if statistics else vk.VK_FALSE)
        enable = vk.VkPhysicalDeviceFeatures2(pNext=enable12, features=enable10)
        names = list(extensions)
        offered = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(
            physical, None)}  # vkEnumerateDeviceExtensionProperties
        missing = sorted(set(names) - offered)
        if missing:
            raise Unsupported(f"{props.deviceName} offers no {', '.join(missing)}")
        info = vk.VkDeviceCreateInfo(pNext=enable, queueCreateInfoCount=len(queue_infos),
                                     pQueueCreateInfos=queue_infos, enabledExtensionCount=len(names),
                                     ppEnabledExtensionNames=names or None)
        device = cls(instance, physical, synchronization2=sync2, name=props.deviceName, families=groups,
                     pipeline_statistics=statistics)
        device.handle = vk.vkCreateDevice(physical, info, None)  # vkCreateDevice
        locks = {}
        for fam, ids in per_family.items():
            for k, qid in enumerate(ids):
                index = k % counts[fam]
                queue = vk.vkGetDeviceQueue(device.handle, fam, index)  # vkGetDeviceQueue
                lock = locks.setdefault((fam, index), threading.Lock())
                device.queues[qid] = (fam, queue, lock)
                instance.name(device.handle, vk.VK_OBJECT_TYPE_QUEUE, queue, qid)
        return device

    def release(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            self.instance.vk.vkDestroyDevice(handle, None)  # vkDestroyDevice


def internal_group(groups: Iterable[int]) -> int:
    """The request group whose family the runtime's own work runs on (Runtime._internal: zero fills, read backs),
    and any group the device has no family for: group 0, else the first."""
    groups = list(groups)
    return 0 if 0 in groups or not groups else groups[0]


def assign_families(flags: list[int], requests: list[QueueRequest], vk) -> dict[int, int]:
    """Request group -> device family: distinct families where the device has
    enough; compute groups need COMPUTE, transfer groups prefer a transfer-only family."""
    needs: dict[int, bool] = {}
    for r in requests:
        needs[r.group] = needs.get(r.group, False) or r.compute
    compute, transfer = vk.VK_QUEUE_COMPUTE_BIT, vk.VK_QUEUE_TRANSFER_BIT
    graphics = vk.VK_QUEUE_GRAPHICS_BIT
    taken: set[int] = set()
    out = {}
    for group, needs_compute in needs.items():
        able = [i for i, f in enumerate(flags)
                if (f & compute if needs_compute else f & (compute | transfer | graphics))]
        if not able:
            raise Unsupported("the device has no queue family with " + ("compute" if needs_compute else "transfer"))
        # Unused families first; a transfer group prefers the family with the fewest capabilities.
        best = min(able, key=lambda i: (i in taken, 0 if needs_compute else flags[i].bit_count(), i))
        out[group] = best
        taken.add(best)
    return out
