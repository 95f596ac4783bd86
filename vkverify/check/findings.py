"""Findings: what the checker reports, with one stable id per kind."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FindingKind:
    kind: str
    rule_id: str  # stable, for SARIF and CI systems
    title: str
    description: str  # what the rule demands, for SARIF's fullDescription (docs/format.md, Finding kinds)
    help: str  # the usual fix


KINDS = {k.kind: k for k in (
    FindingKind("raw", "VKV001", "read after write without a memory dependency",
                "A read of bytes that an earlier write made, with no execution dependency ordering the two and "
                "no memory dependency making the write available and visible to the read (7.1, memory model).",
                "Add a barrier (or semaphore wait stage and access masks) from the write's stage and access to the "
                "read's, or a host wait covering the write before a host read; the finding's fix names it."),
    FindingKind("war", "VKV002", "write after read without an execution dependency",
                "A write to bytes that an earlier read still reads, with no execution dependency ordering the read "
                "before the write (7.1).",
                "Add an execution dependency from the read's stage to the write's stage (a barrier, a semaphore, "
                "or a host wait before a host write)."),
    FindingKind("waw", "VKV003", "write after write without a memory dependency",
                "Two writes to the same bytes with no execution and memory dependency between them: the final "
                "contents depend on the schedule (7.1, memory model).",
                "Add a barrier from the first write's stage and access to the second's, or a semaphore or host wait."),
    FindingKind("use_after_destroy", "VKV004", "buffer used after, or destroyed before the end of, its use",
                "A buffer destroyed while a submitted command may still use it, or used after its destroy "
                "(vkDestroyBuffer: all submitted commands that refer to it must have completed).",
                "Wait for the fence, semaphore or idle that covers the last use before destroying the buffer."),
    FindingKind("uninitialized_read", "VKV005", "read of device-local bytes nothing wrote",
                "A read of device memory that no write (device or host) reached before it: its contents are "
                "undefined.",
                "Write (fill, copy, upload) the bytes before the read, ordered before it."),
    FindingKind("deadlock", "VKV006", "no schedule completes: waits block forever",
                "Semaphore or fence waits that no legal schedule can satisfy together: the program never finishes.",
                "Signal what the named waits wait for before waiting, or submit the signalling work first."),
    FindingKind("wait_never_satisfied", "VKV007", "a wait for a value no signal reaches",
                "A semaphore wait (device or host) for a value that no signal in the stream ever reaches (7.4).",
                "Signal the value (or a larger one) somewhere the wait can see it, or wait for a smaller value."),
    FindingKind("timeline_not_increasing", "VKV008", "timeline semaphore signals that do not strictly increase",
                "Signals of a timeline semaphore whose values do not strictly increase in execution order "
                "(VUID-VkSubmitInfo-pSignalSemaphores-03242).",
                "Give each signal of a timeline semaphore a value greater than every earlier one."),
    FindingKind("binary_semaphore_misuse", "VKV009", "binary semaphore wait without exactly one pending signal",
                "A binary semaphore waited on without a signal pending, or signalled while a signal is pending "
                "(7.4.1).",
                "Pair every wait of a binary semaphore with exactly one earlier signal."),
    FindingKind("fence_misuse", "VKV010", "fence waited, submitted or reset in a state Vulkan forbids",
                "A fence submitted while still signalled or pending, or waited on when nothing will signal it (7.3).",
                "Reset the fence after its wait and before submitting it again; wait only for submitted fences."),
    FindingKind("ownership_missing", "VKV011",
                "exclusive buffer used by another queue family without an ownership transfer",
                "An exclusive-sharing buffer written on one queue family and accessed on another with no release "
                "and acquire pair of queue family ownership transfer barriers (7.7.4).",
                "Add a release barrier (src_family, dst_family) on the source queue and the matching acquire on "
                "the destination queue, ordered by a semaphore."),
)}

ACCESS_KINDS = ("raw", "war", "waw")


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str
    fix: str
    buffer: str | None = None
    range: tuple[int, int] | None = None
    first: str | None = None
    second: str | None = None
    first_access: str | None = None
    second_access: str | None = None
    racing: bool = False
    ops: tuple[str, ...] | None = None
    labels: tuple[str | None, str | None] = field(default=(None, None), compare=False)
    # Events in time order showing the hazard (check/witness.py): the slice of a legal complete schedule,
    # or with `witness="full"` the whole schedule.
    witness: tuple[str, ...] | None = None
    witness_steps: tuple[str, ...] | None = None  # each event named by the stream's ids and labels
    # Instead of a witness of its own: the number (1-based, in this stream's findings) of the finding of
    # the same buffer and agents whose witness stands for it; or the limit of witnesses per stream reached.
    witness_same_as: int | None = None
    witness_limit: int | None = None
    # For a `params` stream: the parameter values of the instance the finding is about.
    params: tuple[tuple[str, int], ...] | None = None

    def to_json(self) -> dict:
        """The findings format of docs/format.md."""
        out: dict = {"kind": self.kind}
        if self.ops is not None:
            out["ops"] = list(self.ops)
            if self.buffer is not None:
                out["buffer"] = self.buffer
        else:
            out.update({"buffer": self.buffer, "range": list(self.range) if self.range else None,
                        "first": self.first, "second": self.second,
                        "first_access": self.first_access, "second_access": self.second_access,
                        "racing": self.racing})
        out.update({"message": self.message, "fix": self.fix})
        if any(self.labels):  # the operations' own names: a capture's call, an import's assumed host read
            out["labels"] = list(self.labels)
        if self.witness is not None:
            out["witness"] = list(self.witness)
        if self.witness_steps is not None:
            out["witness_steps"] = list(self.witness_steps)
        if self.witness_same_as is not None:
            out["witness_same_as"] = self.witness_same_as
        if self.witness_limit is not None:
            out["witness_limit"] = self.witness_limit
        if self.params is not None:
            out["params"] = dict(self.params)
        return out
