"""Where an uploader runs: a vkverify Runtime's device, or a device an engine owns
and hands over as the `vulkan` package's handles."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ...model.errors import choice_argument
from ..device import LogicalDevice, vulkan
from ..memory import Allocator
from .placement import choose_queue
from .recording import UploadRecording

__all__ = ["Borrowed", "EngineDevice", "Site"]


@dataclass(frozen=True)
class EngineDevice:
    """A device the engine created and keeps: its VkPhysicalDevice, VkDevice, and the queue
    (family index and VkQueue) uploads go to. `submit_lock`: the lock every submit of the
    engine to that queue takes (None: the queue is the uploader's alone). The uploader
    creates only its own command pool, fences, staging memory and destinations on it."""

    physical: object
    device: object
    queue_family: int
    queue: object
    submit_lock: object = None
    queue_id: str = "q0"  # the queue's id in the recorded stream


@dataclass(frozen=True)
class Borrowed:
    """The instance side of a borrowed device: the `vulkan` module, and no debug names
    (the engine's instance may not have VK_EXT_debug_utils)."""

    vk: object

    def name(self, device, object_type: int, handle, name: str) -> None:
        """Nothing: see the class."""


@dataclass(frozen=True)
class Site:
    vk: object
    device: LogicalDevice  # handle, physical, queues: what the allocator and the queue choice read
    allocator: Allocator
    recording: UploadRecording
    queue_id: str
    queue_kind: str  # "transfer" | "spare" | "main" | "engine" | "given"
    family: int
    queue: object
    queue_lock: object
    runtime: object  # the Runtime, or None on an engine's device

    @classmethod
    def of(cls, target, thread: str, queue: str | None = None) -> Site:
        """target: a Runtime, or an EngineDevice; queue: a Runtime's stream queue for the copies (None: the
        placement's choice)."""
        if isinstance(target, EngineDevice):
            return cls.engine(target, thread)
        if queue is not None:
            choice_argument("queue", queue, tuple(target.device.queues))
        queue_id, kind = (queue, "given") if queue is not None else choose_queue(target.vk, target.device)
        family, queue, lock = target.device.queues[queue_id]
        return cls(target.vk, target.device, target.allocator, UploadRecording.of_runtime(target, thread), queue_id,
                   kind, family, queue, lock, target)

    @classmethod
    def engine(cls, engine: EngineDevice, thread: str) -> Site:
        vk = vulkan()
        lock = engine.submit_lock if engine.submit_lock is not None else threading.Lock()
        name = vk.vkGetPhysicalDeviceProperties(engine.physical).deviceName
        device = LogicalDevice(Borrowed(vk), engine.physical, engine.device, name=name,
                               queues={engine.queue_id: (engine.queue_family, engine.queue, lock)})
        return cls(vk, device, Allocator(device), UploadRecording.own(engine.queue_id, thread), engine.queue_id,
                   "engine", engine.queue_family, engine.queue, lock, None)
