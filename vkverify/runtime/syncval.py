"""The validation layer's synchronization messages as findings, beside vkverify's.

A message arrives during the Vulkan call that found it, so the runtime's
current operation names it: a command's reference while a command buffer is
recorded (`cb0[2]`: the second access), a submit's reference for hazards found
at vkQueueSubmit2 (then the message names the command buffer, not the buffer).
Layer 1.3.239 tracks neither host access, timeline semaphores nor
uninitialized memory: those findings are vkverify's alone.
"""

from __future__ import annotations

from collections.abc import Callable

import re
from dataclasses import dataclass

from ..check.walk import several_orders
from ..model import ir
from ..model.images import COMPRESSED, LAYOUT_TRANSITION
from ..model.refs import owner_of, parse_ref, without_submit
from .record import binding_access, scratch_orders

__all__ = ["COMPRESSED_BOXES", "SLICES_WIDENED", "TRANSITION_OUT_OF_SCOPE", "LayerAgreement", "LayerFinding",
           "agreement", "explain_only_layer", "explain_only_vkverify", "layer_findings"]

LAYER_KINDS = {"SYNC-HAZARD-READ-AFTER-WRITE": "raw", "SYNC-HAZARD-WRITE-AFTER-READ": "war",
               "SYNC-HAZARD-WRITE-AFTER-WRITE": "waw"}
# Seen on Lavapipe (corpus 161-163): two atomic_add dispatches, or one and a plain read with no barrier, give no
# message; a plain write after one gives a WAR whose prior usage is a read (VVL issue 8278: its shader analysis
# does not follow atomics).
ATOMIC_AS_READ = "an atomic access: the layer records it as a read"
# Layer 1.3.239 takes VK_ACCESS_SHADER_READ_BIT to cover uniform reads (its test UseShaderReadAccessForUniformBuffer);
# vk.xml's SHADER_READ is sampled, storage and binding table reads (corpus 145).
UNIFORM_UNDER_SHADER_READ = "a uniform read: the layer takes shader_read to cover it"
# docs/format.md, "Several host threads": vkverify reads every order in which threads' calls to one queue can come.
SUBMISSION_ORDERS = "threads calling one queue: the replay runs one of the submission orders vkverify reads"
# Spec 7.6: ALL_COMMANDS "specifies all operations performed by all commands", a barrier's layout transition too; the
# layer here (1.3.239) leaves transitions out of such scopes and of a none-stage barrier's, which later syncval holds
# (its SemaphoreScopeIncludesLayoutTransition and QSTransitionWithSrcNoneStage tests).
TRANSITION_OUT_OF_SCOPE = "a layout transition: syncval 1.3.239 holds none in an all_commands or none-stage scope"
# Layer 1.3.239 places a copy box's x offset in a compressed image in texels times the bytes per texel, not in blocks
# (fixed by VVL pull request 7713, 2024; syncval's test CopyBufferToCompressedImage): side by side boxes overlap for it.
COMPRESSED_BOXES = ("a compressed image's copy boxes: syncval 1.3.239 misplaces a box's x offset in blocks (VVL pull "
                    "request 7713), so side by side boxes overlap for it")
# Without VK_KHR_maintenance9 the replay's barriers of a 2d_array_compatible image cover every slice and make no
# layout transition (record.Recorder.image_fields).
SLICES_WIDENED = ("a 2d_array_compatible image: the replay's barriers of it cover every slice and make no layout "
                  "transition (no VK_KHR_maintenance9), which orders more")
# 7.7.4: the layout transitions of one queue run in submission order, which orders no other command; layer 1.3.239
# compares a transition after another with that one alone, as if it stood for the reads before it (corpus 238).
TRANSITION_AFTER_TRANSITION = ("a layout transition after another: syncval 1.3.239 compares it with that one alone, "
                               "not with the reads before it")
# Likewise an access after two transitions, with the second alone: not with the write before the first (corpus 240).
AFTER_TWO_TRANSITIONS = ("an access after two layout transitions: syncval 1.3.239 compares it with the second alone, "
                         "not with the write before the first")
_SUBMIT_CB = re.compile(r"Hazard \w+ for entry \d+, VkCommandBuffer 0x[0-9a-f]+\[([^\]@]+)")
# The layer's checks of an event's sets and resets (1.3.239: SYNC-vkCmdResetEvent-missingbarrier-wait and kin; later
# SYNC-vkCmdSetEvent-reset-race and kin), on the set or reset it reports: vkverify's event_race (docs/format.md).
_EVENT_RACE = re.compile(r"SYNC-vkCmd(Set|Reset)Event2?(KHR)?-")


@dataclass(frozen=True)
class LayerFinding:
    kind: str  # raw | war | waw | event_race
    buffer: str | None  # None for submit-time hazards (the layer names the queue); an event_race's event
    second: str  # a command reference (`cb0[2]`) or, at submit time, a command buffer id
    operation: str  # the runtime operation during which it arrived


def layer_findings(messages) -> list[LayerFinding]:
    out: dict[tuple, LayerFinding] = {}
    for m in messages:
        kind = LAYER_KINDS.get(m.id_name) or ("event_race" if _EVENT_RACE.match(m.id_name) else None)
        if kind is None or m.operation is None:
            continue
        submit_cb = _SUBMIT_CB.search(m.text)
        if submit_cb:
            second, buffer = submit_cb.group(1), None
        else:
            second = without_submit(m.operation)
            # Scratch copies (`B.scratch0`) stand for the buffer they copy, storage views (`I.view0`) for their image.
            buffer = next((o.partition(".")[0] for o in m.objects), None)
        finding = LayerFinding(kind, buffer, second, m.operation)
        out.setdefault((kind, buffer, second), finding)
    return list(out.values())


def _matches(layer: LayerFinding, f, executed: Callable[[str], list[str]]) -> bool:
    if f.kind != layer.kind or f.second is None:
        return False
    second = without_submit(f.second)
    if layer.buffer is None:  # submit-time: the (primary) command buffer is all the layer names
        return owner_of(second) in executed(layer.second)
    return layer.buffer == f.buffer and second == layer.second


@dataclass
class LayerAgreement:
    shared: list  # (vkverify Finding, LayerFinding)
    only_vkverify: list  # Finding
    only_layer: list  # LayerFinding


def agreement(findings, layer: list[LayerFinding],
              executed: Callable[[str], list[str]] = lambda cb: [cb]) -> LayerAgreement:
    """`executed`: the command buffers a submitted one runs (itself and its secondaries: StreamIndex.executed)."""
    shared, only_v, matched = [], [], set()
    for f in findings:
        hit = next((lf for lf in layer if _matches(lf, f, executed)), None)
        if hit is None:
            only_v.append(f)
        else:
            shared.append((f, hit))
            matched.add(hit)
    return LayerAgreement(shared, only_v, [lf for lf in layer if lf not in matched])


def explain_only_vkverify(stream, f) -> str:
    """Why layer 1.3.239 cannot report finding `f` (a category for the table)."""
    refs = [r for r in (f.first, f.second) if r]
    threads = stream.index.threads
    if any(owner_of(r) in threads for r in refs):
        return "host access to mapped memory: the layer never tracks it"
    if f.kind == "uninitialized_read":
        return "uninitialized memory: the layer does not track what was written"
    if several_orders(stream):
        return SUBMISSION_ORDERS
    if f.kind == "ownership_missing":
        return "queue family ownership: no synchronization check in the layer (one device family here)"
    if any(s.type == "timeline" for s in stream.semaphores):
        return "timeline semaphores: syncval 1.3.239 does not support them"
    if f.buffer in stream.index.images and stream.index.images[f.buffer].slices_are_layers:
        return SLICES_WIDENED
    if f.buffer is not None and any(binding_access(stream, r, f.buffer, "atomic") for r in refs):
        return ATOMIC_AS_READ
    if scratch_orders(stream, f.kind, f.buffer, f.second):
        if binding_access(stream, f.second, f.buffer, "read_write"):
            return ("a read_write binding is replayed after a scratch copy and a compute barrier, which orders earlier "
                    "reads")
        return ("the replay stages the dispatch's inputs or stores its image after a compute barrier, which orders "
                "earlier reads")
    if f.kind == "raw" and binding_access(stream, f.second, f.buffer, "uniform"):
        return UNIFORM_UNDER_SHADER_READ
    if f.kind != "war" and _transitions_between(stream, f) >= 2:
        return AFTER_TWO_TRANSITIONS
    if f.kind == "waw" and _written(f.first_access) == _written(f.second_access):
        return "two writes of the same stage and access: the layer reports no WAW between them"
    if f.kind == "war" and f.second_access.startswith(LAYOUT_TRANSITION) and _transitions_between(stream, f):
        return TRANSITION_AFTER_TRANSITION
    return "not reported by the layer"


def _transitions_between(stream, f) -> int:
    """How many barriers between f's two commands, in the command buffer of both, transition f's image."""
    first, second = parse_ref(without_submit(f.first)), parse_ref(without_submit(f.second))
    if first is None or second is None or first.owner != second.owner:
        return 0
    return sum(isinstance(c, ir.Barrier) and any(b.image == f.buffer and b.transition for b in c.images)
               for c in stream.index.command_buffers[second.owner].commands[first.index + 1:second.index])


def _written(access: str) -> tuple[str, frozenset[str]]:
    """A finding's `stage/access+access` as its stage and the accesses that write."""
    stage, _, names = access.partition("/")
    return stage, frozenset(n for n in names.split("+") if n.endswith("_write"))


def explain_only_layer(stream, lf: LayerFinding, messages) -> str:
    """Why the layer reports what vkverify proves safe (a category for the table)."""
    text = " ".join(m.text for m in messages if m.operation == lf.operation)
    if "prior_usage: SYNC_COPY_TRANSFER_WRITE" in text and "vkCmdFillBuffer" in text:
        return "vkCmdFillBuffer tracked at the copy stage: a barrier from sync2's clear stage misses it"
    if any(s.type == "timeline" for s in stream.semaphores):
        return "timeline semaphores: syncval 1.3.239 does not see the ordering their waits give"
    if (lf.kind == "war" and "prior_usage: SYNC_COMPUTE_SHADER_SHADER_STORAGE_READ" in text
            and any(b.access == "atomic" for cb in stream.command_buffers for c in cb.commands
                    if isinstance(c, ir.Dispatch) for b in c.bindings)):
        return f"{ATOMIC_AS_READ}: a plain write after it is a WAR to the layer"
    if "_usage: SYNC_IMAGE_LAYOUT_TRANSITION" in text:
        return TRANSITION_OUT_OF_SCOPE
    if lf.buffer in stream.index.images and stream.index.images[lf.buffer].format in COMPRESSED:
        return COMPRESSED_BOXES
    return "reported by the layer only"
