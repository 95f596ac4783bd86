"""Findings: what the checker reports, with one stable id per kind."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FindingKind:
    kind: str
    rule_id: str  # stable, for SARIF and CI systems
    title: str


KINDS = {k.kind: k for k in (
    FindingKind("raw", "VKV001", "read after write without a memory dependency"),
    FindingKind("war", "VKV002", "write after read without an execution dependency"),
    FindingKind("waw", "VKV003", "write after write without a memory dependency"),
    FindingKind("use_after_destroy", "VKV004", "buffer used after, or destroyed before the end of, its use"),
    FindingKind("uninitialized_read", "VKV005", "read of device-local bytes nothing wrote"),
    FindingKind("deadlock", "VKV006", "no schedule completes: waits block forever"),
    FindingKind("wait_never_satisfied", "VKV007", "a wait for a value no signal reaches"),
    FindingKind("timeline_not_increasing", "VKV008", "timeline semaphore signals that do not strictly increase"),
    FindingKind("binary_semaphore_misuse", "VKV009", "binary semaphore wait without exactly one pending signal"),
    FindingKind("fence_misuse", "VKV010", "fence waited, submitted or reset in a state Vulkan forbids"),
    FindingKind("ownership_missing", "VKV011", "exclusive buffer used by another queue family without an ownership transfer"),
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
        """The findings format of STREAM_FORMAT.md."""
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
