"""The data effect of one step (docs/format.md, "Commands" and "Host ops")."""

from __future__ import annotations

import functools
from dataclasses import replace
import math

import numpy as np

from ..model import ir
from ..model.accesses import binding_reads, binding_writes
from ..model.data import data_bytes, ref_hash
from ..model.images import blit_box, buffer_rows, clear_depth_stencil_texel, clear_texel, copy_dst_extent
from ..shaders import SEMANTICS, atomic_addends, generic
from .machine import Machine, digest
from .order import Step

__all__ = ["execute", "step_buffers"]


def execute(m: Machine, step: Step) -> None:
    op, ref = step.op, step.ref
    if isinstance(op, ir.Copy):
        # vkCmdCopyBuffer reads every region before writing (the checker's access order).
        data = [m.load(ref, op.src, r.src_offset, r.src_offset + r.size) for r in op.regions]
        for r, d in zip(op.regions, data):
            m.store(op.dst, r.dst_offset, d)
    elif isinstance(op, ir.Fill):
        words = np.full((op.size + 3) // 4, op.value & 0xFFFFFFFF, np.uint32)
        m.store(op.dst, op.offset, words.view(np.uint8)[:op.size])
    elif isinstance(op, ir.Update):
        m.store(op.dst, op.offset, np.frombuffer(data_bytes(op.data, op.size, op.dst, ref), np.uint8))
    elif isinstance(op, ir.Dispatch):
        dispatch(m, step.ref, op)
    elif isinstance(op, ir.ImageCopy):
        image_copy(m, ref, op)
    elif isinstance(op, ir.BlitImage):
        blit(m, ref, op)
    elif isinstance(op, ir.ResolveImage):
        resolve(m, ref, op)
    elif isinstance(op, ir.ClearColorImage):
        texel = np.frombuffer(clear_texel(m.index.images[op.image].format, op.value), np.uint8)
        for lo, hi in op.ranges:  # each starts at a texel: levels and layers are whole texels
            m.store(op.image, lo, np.resize(texel, hi - lo))
    elif isinstance(op, ir.ClearDepthStencilImage):
        clear_depth_stencil(m, op)
    elif isinstance(op, ir.WriteBufferMarker):
        m.store(op.dst, op.offset, np.array([op.marker & 0xFFFFFFFF], np.uint32).view(np.uint8))
    elif isinstance(op, ir.CopyQueryPoolResults):
        # The query pool is not modelled: each result is a value 0 and, where the result has one, an availability
        # word 1 (the last 8 bytes of a 16-byte result, 4 of a 12-byte one), as the replay's queries give
        # (docs/format.md, "Buffer markers and query results").
        available = AVAILABILITY_BYTES.get(op.result_size, 0)
        result = np.zeros(op.result_size, np.uint8)
        if available:
            result[-available] = 1
        for i in range(op.query_count):
            m.store(op.dst, op.offset + i * op.stride, result)
    elif isinstance(op, ir.HostAccess):
        host_access(m, ref, op)
    elif isinstance(op, ir.Destroy):
        m.destroyed.add(op.buffer)
    # A barrier moves no bytes. A layout transition from `undefined` "may discard" the range's contents (spec
    # 7.7.4): the simulator keeps them as they were, one of the executions the spec allows.


# The bytes of a query result's availability word, by the result's size (docs/format.md, query results).
AVAILABILITY_BYTES = {12: 4, 16: 8}


def image_copy(m: Machine, ref: str, op: ir.ImageCopy) -> None:
    """vkCmdCopyBufferToImage, vkCmdCopyImageToBuffer, vkCmdCopyImage on the images' linear layout: each region
    reads all its bytes before any region writes (as Copy). A region's two sides list their rows in one order
    (layer, depth slice, row), each merged where rows are contiguous, so their bytes correspond in sequence."""
    sides = [_region_sides(m.index, op, r) for r in op.regions]
    data = [np.concatenate([m.load(ref, op.src, lo, hi) for lo, hi in src]) for src, _ in sides]
    for (_, dst), d in zip(sides, data):
        _scatter(m, op.dst, dst, d)


def _region_sides(index: ir.StreamIndex, op: ir.ImageCopy, r) -> tuple[list, list]:
    """(source ranges, destination ranges) of one region of `op`."""
    if isinstance(op, ir.CopyImage):
        src, dst = index.images[op.src], index.images[op.dst]
        return (src.box(r.src_mip_level, r.src_base_array_layer, r.layer_count, r.src_offset, r.extent, r.src_plane),
                dst.box(r.dst_mip_level, r.dst_base_array_layer, r.layer_count, r.dst_offset,
                        copy_dst_extent(r.extent, src.block, dst.block), r.dst_plane))
    image = index.images[op.dst if isinstance(op, ir.CopyBufferToImage) else op.src]
    texels = image.box(r.mip_level, r.base_array_layer, r.layer_count, r.image_offset, r.image_extent)
    rows = buffer_rows(r, image.texel, image.block)
    return (rows, texels) if isinstance(op, ir.CopyBufferToImage) else (texels, rows)


def resolve(m: Machine, ref: str, op: ir.ResolveImage) -> None:
    """vkCmdResolveImage as VK_RESOLVE_MODE_SAMPLE_ZERO_BIT: copies.adoc, "Resolving Multisample Images", leaves a float
    or normalized format's resolve mode to the implementation and selects "a single sample's value" of an integer one,
    so each texel's sample 0 is one of the executions the spec allows. Source and destination differ in samples, so
    no region reads what another writes."""
    src, dst = m.index.images[op.src], m.index.images[op.dst]
    for r in op.regions:
        rows = src.box(r.src_mip_level, r.src_base_array_layer, r.layer_count, r.src_offset, r.extent)
        samples = np.concatenate([m.load(ref, op.src, lo, hi) for lo, hi in rows]).reshape(-1, src.samples, src.texel)
        _scatter(m, op.dst, dst.box(r.dst_mip_level, r.dst_base_array_layer, r.layer_count, r.dst_offset, r.extent),
                 samples[:, 0].reshape(-1))


def blit(m: Machine, ref: str, op: ir.BlitImage) -> None:
    """vkCmdBlitImage with the nearest filter between images of one format (Machine refuses others), region by region
    and layer by layer: each destination texel takes the source texel its center maps to (spec 20.5: u = (x + 0.5 -
    dstOffsets[0].x) * (srcOffsets[1].x - srcOffsets[0].x) / (dstOffsets[1].x - dstOffsets[0].x) + srcOffsets[0].x,
    floor(u) clamped to the source box; reversed offsets mirror)."""
    src, dst = m.index.images[op.src], m.index.images[op.dst]
    for r in op.regions:
        (s_low, s_box), (d_low, d_box) = blit_box(r.src_offsets), blit_box(r.dst_offsets)
        # Per dimension (z, y, x): which source texel of the box each destination texel of the box takes.
        picks = []
        for k in (2, 1, 0):
            (s0, s1), (d0, d1) = (r.src_offsets[0][k], r.src_offsets[1][k]), (r.dst_offsets[0][k], r.dst_offsets[1][k])
            u = (np.arange(d_low[k], d_low[k] + d_box[k]) + 0.5 - d0) * (s1 - s0) / (d1 - d0) + s0
            picks.append(np.clip(np.floor(u).astype(np.int64) - s_low[k], 0, s_box[k] - 1))
        for layer in range(r.layer_count):
            rows = src.box(r.src_mip_level, r.src_base_array_layer + layer, 1, s_low, s_box)
            texels = np.concatenate([m.load(ref, op.src, lo, hi) for lo, hi in rows]).reshape(
                s_box[2], s_box[1], s_box[0], src.texel)
            out = texels[np.ix_(*picks)]
            _scatter(m, op.dst, dst.box(r.dst_mip_level, r.dst_base_array_layer + layer, 1, d_low, d_box),
                     out.reshape(-1))


def _scatter(m: Machine, memory: str, ranges, data: np.ndarray) -> None:
    """`data` stored over `ranges` in order, as far as it reaches."""
    at = 0
    for lo, hi in ranges:
        if at >= len(data):
            return
        m.store(memory, lo, data[at:at + hi - lo])
        at += hi - lo


def binding_ranges(b: ir.Binding) -> tuple[tuple[int, int], ...]:
    """A binding's bytes: a buffer binding's range, or a storage image binding's subresources in the image's linear
    layout, level by level; a dispatch reads and writes them as one run of bytes (docs/format.md, Abstract
    shaders)."""
    return b.ranges if b.subresources is not None else ((b.offset, b.offset + b.size),)


def host_access(m: Machine, ref: str, op: ir.HostAccess) -> None:
    end = op.offset + op.size
    if op.op == "host_write":
        m.store(op.buffer, op.offset, np.frombuffer(data_bytes(op.data, op.size, op.buffer, ref), np.uint8), host=True)
    elif op.op == "host_read":
        m.reads[ref] = digest(m.load(ref, op.buffer, op.offset, end, host=True).tobytes())
    elif op.op == "flush":
        m.flush(op.buffer, op.offset, end)
    else:
        m.invalidate(op.buffer, op.offset, end)


def dispatch(m: Machine, ref: str, op: ir.Dispatch) -> None:
    groups = op.groups
    if op.indirect is not None:
        # vkCmdDispatchIndirect: the group count is the three u32 at the offset.
        raw = m.load(ref, op.indirect.buffer, op.indirect.offset, op.indirect.offset + 12, stage="draw_indirect")
        groups = tuple(int(g) for g in raw.view(np.uint32))
    inputs = [np.concatenate([m.load(ref, b.buffer, lo, hi, stage="compute_shader") for lo, hi in binding_ranges(b)])
              for b in op.bindings]
    if not math.prod(groups):
        return
    words = [x[:len(x) // 4 * 4] for x in inputs]
    if op.shader in SEMANTICS:
        results = SEMANTICS[op.shader]([w.view(np.uint32) for w in words], op.push, groups)
        for k, result in results.items():
            b = op.bindings[k]
            new = result.view(np.uint8)
            if ref in m.overlays:
                # Only bytes the kernel changed are stores: a kernel that writes part of a binding
                # leaves the rest as memory holds it, not as this (perturbed) dispatch read it.
                held = np.concatenate([m.peek(b.buffer, lo, hi) for lo, hi in binding_ranges(b)])
                new = np.where(new != words[k], new, held[:len(new)])
            _scatter(m, b.buffer, binding_ranges(b), new)
        return
    # An abstract shader (docs/format.md "Abstract shaders"): read bindings in binding order,
    # a read_write binding read in full before any write; an atomic binding adds to what it holds.
    plain = [(w, b) for w, b in zip(words, op.bindings) if b.access != "atomic"]
    reads = [w for w, b in plain if binding_reads(b.access)]
    written = [(w, b) for w, b in plain if binding_writes(b.access)]
    outputs = generic_outputs(tuple(r.tobytes() for r in reads), tuple(len(w) // 4 for w, _ in written),
                              ref_hash(ref))
    for out, (_, b) in zip(outputs, written):
        _scatter(m, b.buffer, binding_ranges(b), out.view(np.uint8))
    for w, b in zip(words, op.bindings):
        if b.access == "atomic":
            _scatter(m, b.buffer, binding_ranges(b),
                     (w.view(np.uint32) + atomic_addends(len(w) // 4, ref_hash(ref))).view(np.uint8))


@functools.lru_cache(maxsize=256)
def generic_outputs(reads: tuple[bytes, ...], counts: tuple[int, ...], ref: int) -> tuple[np.ndarray, ...]:
    """semantics.generic, memoized on the bytes read: schedules mostly re-run the reference's
    dispatches on the reference's bytes, and the checksum is a sequential Python chain."""
    return tuple(generic([np.frombuffer(r, np.uint32) for r in reads], counts, ref))


def clear_depth_stencil(m: Machine, op: ir.ClearDepthStencilImage) -> None:
    """vkCmdClearDepthStencilImage: each range's aspects, each aspect's texels its value's bytes (images.py)."""
    image = m.index.images[op.image]
    for r in op.subresources:
        for aspect in image.aspects:
            if r.aspects is None or aspect in r.aspects:
                texel = np.frombuffer(clear_depth_stencil_texel(image.format, aspect, op.depth, op.stencil), np.uint8)
                for lo, hi in image.ranges(replace(r, aspects=frozenset({aspect}))):
                    m.store(op.image, lo, np.resize(texel, hi - lo))


def step_buffers(op: ir.Command | ir.HostOp) -> tuple[set[str], set[str]]:
    """(buffers read, buffers written) by an op, for tracing which results a step reaches."""
    if isinstance(op, (ir.Copy, ir.ImageCopy, ir.BlitImage, ir.ResolveImage)):
        return {op.src}, {op.dst}
    if isinstance(op, (ir.Fill, ir.Update)):
        return set(), {op.dst}
    if isinstance(op, (ir.ClearColorImage, ir.ClearDepthStencilImage)):
        return set(), {op.image}
    if isinstance(op, ir.Dispatch):
        reads = {b.buffer for b in op.bindings if binding_reads(b.access)}
        if op.indirect is not None:
            reads.add(op.indirect.buffer)
        return reads, {b.buffer for b in op.bindings if binding_writes(b.access)}
    if isinstance(op, ir.HostAccess):
        if op.op == "host_read":
            return {op.buffer}, set()
        return set(), {op.buffer} if op.op == "host_write" else set()
    if isinstance(op, ir.Destroy):
        return set(), {op.buffer}
    return set(), set()
