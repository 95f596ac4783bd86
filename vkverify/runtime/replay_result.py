"""What a replay returns, single- or multi-device, and its comparison with the simulator's reference."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ir
from .syncval import agreement, layer_findings

__all__ = ["ReplayResult", "compare_reference", "finish"]


@dataclass
class ReplayResult:
    stream: str
    device: str
    digests: dict[str, str]  # buffer id -> sha256 hex of its final bytes
    reads: dict[str, str]  # host_read reference (`main[3]`) -> sha256 hex of the bytes it read
    recorded: ir.Stream  # what the runtime issued, as a stream
    gpu_ns: dict[str, float] = field(default_factory=dict)  # command buffer -> GPU time, with replay(timestamps=True)
    messages: list = field(default_factory=list)  # device.Message, with validation on
    reference: dict | None = None  # from compare_reference: mismatches, or None without a simulator
    reference_note: str = ""
    findings: list = field(default_factory=list)  # vkverify's, for the stream (with syncval)
    agreement: object = None  # syncval.LayerAgreement, with syncval
    notes: list[str] = field(default_factory=list)  # the replay's choices (how several devices share), for its user


def compare_reference(stream: ir.Stream, result: ReplayResult) -> tuple[dict | None, str]:
    """Digests that differ from the simulator's reference ({} when all agree),
    or None and why when there is no simulator to compare with."""
    try:
        from ..sim import reference
    except ImportError as error:
        return None, f"no simulator reference ({error})"
    ref = reference(stream)
    mismatches = {f"buffer {k}": (v, ref.digests.get(k)) for k, v in result.digests.items()
                  if ref.digests.get(k) != v}
    mismatches.update({f"read {k}": (v, ref.reads.get(k)) for k, v in result.reads.items() if ref.reads.get(k) != v})
    return mismatches, "compared with vkverify.sim.reference"


def finish(result: ReplayResult, stream: ir.Stream, messages: list, syncval: bool) -> ReplayResult:
    """`result` with the layer's messages, vkverify's verdict beside the layer's (syncval), and the
    comparison with the reference."""
    result.messages = messages
    if syncval:
        from ..check import check
        result.findings = check(stream)
        result.agreement = agreement(result.findings, layer_findings(result.messages), stream.index.executed)
    result.reference, result.reference_note = compare_reference(stream, result)
    return result
