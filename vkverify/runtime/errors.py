"""Every error the runtime raises, each saying who should ever see it.

The CLI turns a `DeviceFault` into a one-line message and exit code 3;
`HazardError` is for programs that run with online checking.
"""

from __future__ import annotations

from ..errors import VkverifyError

__all__ = ["DeviceFault", "DeviceLost", "HazardError", "NoDevice", "RuntimeFault", "Unsupported", "UploadFailed"]


class RuntimeFault(VkverifyError):
    """Base of the runtime's errors: what a program built on the runtime, the uploader or
    `vkverify replay` catches to tell a device's refusal or failure from a bug; each
    subclass says who sees it."""


class NoDevice(RuntimeFault):
    """No Vulkan loader, no ICD, or no device matching VKVERIFY_DEVICE.

    Seen by whoever runs replay/devices on a machine without a usable driver;
    tests skip with its message.
    """


class Unsupported(RuntimeFault):
    """The stream or program needs something this device lacks (a memory
    kind, an aligned offset, a queue capability). Seen by the replay's user."""


class DeviceFault(RuntimeFault):
    """A Vulkan call failed while running (device lost, out of memory).

    `operation` names what was being done: a stream reference such as
    `main[3]` or `buffer A`, and the Vulkan function that failed. Seen by the replay's user
    (`vkverify replay` exits 3) and by a program built on the runtime.
    """

    def __init__(self, operation: str, function: str, error: str) -> None:
        self.operation, self.function, self.error = operation, function, error
        super().__init__(f"{operation}: {function} failed: {error}")


class HazardError(RuntimeFault):
    """Online checking (VKVERIFY_CHECK=1) found a hazard in a submit before it
    reached vkQueueSubmit, or a runtime mutant that dropped a signal reached a wait
    nothing will satisfy (deadlock, wait_never_satisfied). `findings` are the
    checker's Finding records.

    Seen by a program built on the runtime, at the submit that would race or the wait
    that would block. `sources`: the program's file:line of that op and of the first
    finding's two operations, by reference.
    """

    def __init__(self, submit: str, findings: list, sources: dict[str, str] | None = None) -> None:
        self.submit, self.findings, self.sources = submit, findings, sources or {}
        first = findings[0]

        def at(ref: str | None) -> str:
            return f" at {self.sources[ref]}" if ref in self.sources else ""
        ops = f" (first {first.first}{at(first.first)}, second {first.second}{at(first.second)})" if first.first else ""
        on = f" on {first.buffer}" if first.buffer else ""
        super().__init__(f"{submit}{at(submit)}: {len(findings)} hazard(s), first: {first.kind}{on}: "
                         f"{first.message}{ops}")


class UploadFailed(RuntimeFault):
    """One upload, commit or deferred upload failed at `point` (stage, block,
    record, submit, commit); the destinations it named (`released`) are destroyed
    and the next upload starts clean. `injected`: VKVERIFY_FAULT made it fail.

    Seen by the caller of Uploader.upload/commit/deferred (uploads.py).
    """

    def __init__(self, point: str, detail: str, injected: bool = False) -> None:
        self.point, self.detail, self.injected = point, detail, injected
        self.released: list[str] = []
        super().__init__(f"upload failed at {point}: {detail}")


class DeviceLost(RuntimeFault):
    """A fence wait of the uploader failed: the device counts as lost, nothing
    the device may still touch was freed, and every later uploader call raises it.

    Seen by an engine built on the uploader, which stops using the device.
    """
