"""The driver half of vkverify: run and record Vulkan compute programs, replay streams.

    from vkverify.runtime import Runtime
    with Runtime() as rt:
        rt.create_buffer("A", 4096, "host_coherent")
        ...
        stream = rt.stream()            # what the program issued, for `vkverify check`

    from vkverify.runtime import replay
    result = replay(load("s.json"))     # digests per buffer and per host_read

Imports the `vulkan` package only when a device is opened, so the checker and
the CLI's `check` work without a Vulkan driver.
"""

from .device import QueueRequest
from .errors import DeviceFault, DeviceLost, HazardError, NoDevice, RuntimeFault, Unsupported, UploadFailed
from .replay import ReplayResult, replay, replayable
from .runtime import CommandBuffer, Runtime
from .uploads import Uploader

__all__ = ["CommandBuffer", "DeviceFault", "DeviceLost", "HazardError", "NoDevice", "QueueRequest", "ReplayResult",
           "Runtime", "RuntimeFault", "Unsupported", "UploadFailed", "Uploader", "replay", "replayable"]
