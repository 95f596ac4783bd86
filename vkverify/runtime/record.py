"""Recording stream commands into a VkCommandBuffer.

Abstract shaders run through the generic kernels (shaders.generic_plan), and
each atomic binding through the `atomic_add` kernel at the same place. A
read_write binding is first copied to a scratch buffer by the library's
`copy` kernel, not by vkCmdCopyBuffer: a compute-stage copy falls in exactly
the barriers' scopes that cover the dispatch itself (a transfer-stage copy
would escape a compute -> compute barrier), and a compute write -> compute
read barrier orders it before the kernel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

from ..model import ir
from ..model.accesses import binding_writes
from ..model.data import data_bytes, ref_hash
from ..model.images import COMPRESSED, level_extent
from ..model.refs import format_ref, parse_ref, without_submit
from ..model.stages import access_mask, stage_mask
from ..shaders import ATOMIC_KERNEL, IMAGE_KERNELS, SAMPLED_KERNELS, UNIFORM_KERNEL, generic_plan, pack_push
from .errors import Unsupported
from .pipelines import ImageSlot
from .images import clear_color, extent3d, layers, offset3d, subresource_range, vk_layout

__all__ = ["QUERY_RESULT_FLAGS", "Recorder", "binding_access", "global_barrier", "scratch_orders"]

UPDATE_CHUNK = 65536  # vkCmdUpdateBuffer's dataSize limit
# A query result copy's VK_QUERY_RESULT_*_BIT flags by the stream's bytes per query (runtime.Recorder.query_results).
QUERY_RESULT_FLAGS = {4: (), 8: ("64",), 16: ("64", "WITH_AVAILABILITY")}


def scratch_orders(stream: ir.Stream, kind: str, buffer: str | None, second: str | None) -> bool:
    """Whether a `kind` finding ending at `second` disappears in any replay: a WAR whose write is replayed behind a
    compute -> compute barrier, which orders every earlier compute-stage read (the replay synchronizes more than the
    stream): a write of a dispatch whose inputs are staged (`staged`), or a storage image binding's (stored after
    the generic kernel)."""
    if kind != "war" or buffer is None:
        return False
    cmd = _dispatch(stream, second)
    if cmd is None:
        return False
    writes = [b for b in cmd.bindings if b.buffer == buffer and binding_writes(b.access)]
    return any(b.subresources is not None for b in writes) or bool(writes) and any(map(staged, cmd.bindings))


def staged(b: ir.Binding) -> bool:
    """Whether an abstract shader's input binding is copied to a scratch buffer before the generic kernel reads it:
    a read_write one (the kernel would read what other workgroups already wrote), a uniform one (the kernel reads
    storage buffers) and a storage image or sampled one (the kernel reads buffers)."""
    return b.access in ("read_write", "uniform") or b.subresources is not None and b.access in ("read", "sampled")


def binding_access(stream: ir.Stream, ref: str | None, buffer: str, access: str) -> bool:
    """Whether the command at `ref` is a dispatch with an `access` binding of `buffer`."""
    cmd = _dispatch(stream, ref)
    return cmd is not None and any(b.access == access and b.buffer == buffer for b in cmd.bindings)


def _dispatch(stream: ir.Stream, ref: str | None) -> ir.Dispatch | None:
    parsed = parse_ref(without_submit(ref)) if ref else None
    cb = stream.index.command_buffers.get(parsed.owner) if parsed else None
    cmd = cb.commands[parsed.index] if cb and parsed.index < len(cb.commands) else None
    return cmd if isinstance(cmd, ir.Dispatch) else None


def image_bytes(b: ir.Binding) -> int:
    """How many bytes a storage image binding's subresources hold (its `size` is the whole image's)."""
    return sum(hi - lo for lo, hi in b.ranges)


def global_barrier(vk, cb, names: Mapping[str, Iterable[str]]) -> None:
    """vkCmdPipelineBarrier (sync1) with one global memory barrier whose masks are those of the
    stream barrier `names` (src_stage, src_access, dst_stage, dst_access): the barrier the runtime
    records and the one it submits are the same by construction."""
    barriers = [vk.VkMemoryBarrier(srcAccessMask=access_mask(names["src_access"], False),
                                   dstAccessMask=access_mask(names["dst_access"], False))]
    vk.vkCmdPipelineBarrier(cb, stage_mask(names["src_stage"], False, True),  # vkCmdPipelineBarrier
                            stage_mask(names["dst_stage"], False, False), 0, 1, barriers, 0, None, 0, None)


class Recorder:
    """Records one stream command buffer for one submission into `cb`."""

    def __init__(self, runtime, cb, cb_id: str, at: str | None,
                 secondary: Callable[[str], object] | None = None) -> None:
        """secondary: the VkCommandBuffer of a secondary command buffer cb's vkCmdExecuteCommands runs, recorded
        when asked, as the commands before it have been (the kind of an event's last set: Recorder.event)."""
        self.rt, self.vk, self.cb, self.cb_id, self.at = runtime, runtime.vk, cb, cb_id, at
        self.secondary = secondary
        self.sync2 = runtime.device.synchronization2

    def ref(self, index: int) -> str:
        """The command's reference: `cb0[2]`, or `cb0[2]@main[5]` where the stream
        submits the command buffer more than once (docs/format.md, findings)."""
        return format_ref(self.cb_id, index, self.at)

    def command(self, index: int, c: ir.Command) -> None:
        """Record `c` inside a debug label region named by its reference: a capture of the
        replay maps each Vulkan command (scratch copies included) back to the stream command."""
        self.rt.instance.operation = self.ref(index)
        self.rt.instance.begin_label(self.cb, self.ref(index))
        self.record(index, c)
        self.rt.instance.end_label(self.cb)

    def record(self, index: int, c: ir.Command) -> None:
        vk, cb, buf = self.vk, self.cb, self.rt.vk_buffer
        if isinstance(c, ir.Copy):
            regions = [vk.VkBufferCopy(srcOffset=r.src_offset, dstOffset=r.dst_offset, size=r.size) for r in c.regions]
            vk.vkCmdCopyBuffer(cb, buf(c.src), buf(c.dst), len(regions), regions)  # vkCmdCopyBuffer
        elif isinstance(c, ir.Fill):
            vk.vkCmdFillBuffer(cb, buf(c.dst), c.offset, c.size, c.value & 0xFFFFFFFF)  # vkCmdFillBuffer
        elif isinstance(c, ir.Update):
            data = data_bytes(c.data, c.size, c.dst, self.ref(index))
            for start in range(0, c.size, UPDATE_CHUNK):
                chunk = self.vk.ffi.from_buffer(data[start:start + UPDATE_CHUNK])
                vk.vkCmdUpdateBuffer(cb, buf(c.dst), c.offset + start, len(chunk), chunk)  # vkCmdUpdateBuffer
        elif isinstance(c, ir.Dispatch):
            self.dispatch(index, c)
        elif isinstance(c, (ir.ImageCopy, ir.BlitImage, ir.ClearColorImage)):
            self.image_command(c)
        elif isinstance(c, ir.Barrier):
            self.barrier(c)
        elif isinstance(c, ir.CopyQueryPoolResults):
            self.query_results(c)
        elif isinstance(c, ir.WriteBufferMarker):
            self.marker(c)
        elif isinstance(c, ir.ExecuteCommands):
            handles = [self.secondary(s) for s in c.command_buffers]
            self.rt.instance.operation = self.ref(index)  # the layer's messages at the execute are this command's
            vk.vkCmdExecuteCommands(cb, len(handles), handles)  # vkCmdExecuteCommands
        else:
            self.event(c)

    def query_results(self, c: ir.CopyQueryPoolResults) -> None:
        """vkCmdCopyQueryPoolResults, waiting, of pipeline statistics queries that count compute shader invocations,
        each reset and begun and ended just before over no command (a copy sees the query commands before it on its
        queue without further synchronization): every value is 0 and every availability word non-zero (1 on the
        devices seen; the simulator writes 1), where the stream's query timestamps would differ from run to run. A
        result size of 4 is a 32-bit value, 8 a 64-bit one, 16 a 64-bit value and its availability; 12 has no
        Vulkan layout (replayable refuses it)."""
        vk, rt, cb = self.vk, self.rt, self.cb
        pool = rt.query_pool(c.query_count)
        vk.vkCmdResetQueryPool(cb, pool, 0, c.query_count)  # vkCmdResetQueryPool
        for query in range(c.query_count):
            vk.vkCmdBeginQuery(cb, pool, query, 0)  # vkCmdBeginQuery
            vk.vkCmdEndQuery(cb, pool, query)  # vkCmdEndQuery
        flags = sum(getattr(vk, f"VK_QUERY_RESULT_{f}_BIT") for f in ("WAIT", *QUERY_RESULT_FLAGS[c.result_size]))
        # One query's stride is not used (the stream's is 0); layer 1.3.239 takes stride x count as the range written.
        vk.vkCmdCopyQueryPoolResults(cb, pool, 0, c.query_count, rt.vk_buffer(c.dst), c.offset,
                                     c.stride or c.result_size, flags)  # vkCmdCopyQueryPoolResults

    def marker(self, c: ir.WriteBufferMarker) -> None:
        """vkCmdWriteBufferMarker2AMD (with synchronization2) or vkCmdWriteBufferMarkerAMD; the replay enables
        VK_AMD_buffer_marker for a stream with markers, and a device without it refuses the stream at its start."""
        vk, rt = self.vk, self.rt
        write, sync2 = None, self.sync2
        if sync2:
            try:
                write = vk.vkGetDeviceProcAddr(rt.device.handle, "vkCmdWriteBufferMarker2AMD")  # vkGetDeviceProcAddr
            except vk.ProcedureNotFoundError:  # a layer older than the command (1.3.239) hides it: the sync1 one
                sync2 = False
        if write is None:
            write = vk.vkGetDeviceProcAddr(rt.device.handle, "vkCmdWriteBufferMarkerAMD")  # vkGetDeviceProcAddr
        write(self.cb, stage_mask(c.stage, sync2, True), rt.vk_buffer(c.dst), c.offset,
              c.marker & 0xFFFFFFFF)  # vkCmdWriteBufferMarker2AMD, vkCmdWriteBufferMarkerAMD

    def image_command(self, c: ir.ImageCopy | ir.BlitImage | ir.ClearColorImage) -> None:
        """An image command with its regions as written; each image in the layout the stream's barriers left the
        subresource of its first region (or range) in (runtime/images.py)."""
        vk, cb, images = self.vk, self.cb, self.rt.images

        def layout(image, level: int, layer: int) -> int:
            return vk_layout(vk, image.layout(level, layer))
        if isinstance(c, ir.ClearColorImage):
            image, first = images[c.image], c.subresources[0]
            ranges = [subresource_range(vk, r) for r in c.subresources]
            vk.vkCmdClearColorImage(cb, image.handle, layout(image, first.base_mip_level, first.base_array_layer),
                                    clear_color(vk, image.image.format, c.value), len(ranges),
                                    ranges)  # vkCmdClearColorImage
        elif isinstance(c, ir.BlitImage):
            src, dst, first = images[c.src], images[c.dst], c.regions[0]
            blits = [vk.VkImageBlit(
                srcSubresource=layers(vk, r.src_mip_level, r.src_base_array_layer, r.layer_count),
                srcOffsets=[offset3d(vk, o) for o in r.src_offsets],
                dstSubresource=layers(vk, r.dst_mip_level, r.dst_base_array_layer, r.layer_count),
                dstOffsets=[offset3d(vk, o) for o in r.dst_offsets]) for r in c.regions]
            vk.vkCmdBlitImage(cb, src.handle, layout(src, first.src_mip_level, first.src_base_array_layer),
                              dst.handle, layout(dst, first.dst_mip_level, first.dst_base_array_layer),
                              len(blits), blits, getattr(vk, f"VK_FILTER_{c.filter.upper()}"))  # vkCmdBlitImage
        elif isinstance(c, ir.CopyImage):
            src, dst, first = images[c.src], images[c.dst], c.regions[0]
            regions = [vk.VkImageCopy(
                srcSubresource=layers(vk, r.src_mip_level, r.src_base_array_layer, r.layer_count),
                srcOffset=offset3d(vk, r.src_offset),
                dstSubresource=layers(vk, r.dst_mip_level, r.dst_base_array_layer, r.layer_count),
                dstOffset=offset3d(vk, r.dst_offset), extent=extent3d(vk, r.extent)) for r in c.regions]
            vk.vkCmdCopyImage(cb, src.handle, layout(src, first.src_mip_level, first.src_base_array_layer),
                              dst.handle, layout(dst, first.dst_mip_level, first.dst_base_array_layer),
                              len(regions), regions)  # vkCmdCopyImage
        else:
            to_image, first = isinstance(c, ir.CopyBufferToImage), c.regions[0]
            image = images[c.dst if to_image else c.src]
            buffer = self.rt.vk_buffer(c.src if to_image else c.dst)
            regions = [vk.VkBufferImageCopy(
                bufferOffset=r.buffer_offset, bufferRowLength=r.buffer_row_length,
                bufferImageHeight=r.buffer_image_height,
                imageSubresource=layers(vk, r.mip_level, r.base_array_layer, r.layer_count),
                imageOffset=offset3d(vk, r.image_offset), imageExtent=extent3d(vk, r.image_extent))
                for r in c.regions]
            now, n = layout(image, first.mip_level, first.base_array_layer), len(regions)
            if to_image:
                vk.vkCmdCopyBufferToImage(cb, buffer, image.handle, now, n, regions)  # vkCmdCopyBufferToImage
            else:
                vk.vkCmdCopyImageToBuffer(cb, image.handle, now, buffer, n, regions)  # vkCmdCopyImageToBuffer

    def dispatch(self, index: int, c: ir.Dispatch) -> None:
        rt = self.rt
        if c.shader not in rt.abstract_shaders:
            if any(b.subresources is not None for b in c.bindings):
                raise Unsupported(f"{self.ref(index)}: shader {c.shader!r} binds a storage image: only an abstract "
                                  "shader's storage image bindings replay (through the image kernels)")
            pipeline = rt.pipelines.get(c.shader)
            slots = [(rt.vk_buffer(b.buffer), b.offset, b.size) for b in c.bindings]
            self.run(c, pipeline, slots, pack_push(pipeline.interface, c.push))
            return
        plan, ref = generic_plan([b.access for b in c.bindings]), ref_hash(self.ref(index))
        if plan.name is not None:
            reads = [c.bindings[i] for i in plan.read_slots]
            writes = [c.bindings[i] for i in plan.write_slots]
            # Inputs the generic kernel may not read in place go to scratch buffers first, all made visible to it by
            # one compute -> compute barrier.
            inputs = {i: self.scratch_input(b) for i, b in enumerate(reads) if staged(b)}
            if inputs:
                self.compute_barrier()
            slots = [inputs.get(i) or (rt.vk_buffer(b.buffer), b.offset, b.size) for i, b in enumerate(reads)]
            outputs = [(rt.scratch_buffer(b.buffer, image_bytes(b)).handle, 0, image_bytes(b))
                       if b.subresources is not None else (rt.vk_buffer(b.buffer), b.offset, b.size) for b in writes]
            # Without a written binding the kernel still reads its inputs; it writes a scratch word.
            slots += outputs or [(rt.scratch_buffer(f"{c.shader}.discard", 4).handle, 0, 4)]
            pipeline = rt.pipelines.get(plan.name)
            self.run(c, pipeline, slots, pack_push(pipeline.interface, [ref] + [size // 4 for _, _, size in slots]))
            stores = [(b, out) for b, out in zip(writes, outputs) if b.subresources is not None]
            if stores:
                self.compute_barrier()
            for b, (scratch, _, _) in stores:
                self.image_words(c, b, scratch, store=True)
        for b in (c.bindings[i] for i in plan.atomic_slots):
            # No barrier before it: atomics commute, and the generic kernel reads no atomic binding.
            pipeline = rt.pipelines.get(ATOMIC_KERNEL)
            self.run(c, pipeline, [(rt.vk_buffer(b.buffer), b.offset, b.size)],
                     pack_push(pipeline.interface, [ref, b.size // 4]))

    def image_words(self, c: ir.Dispatch | None, b: ir.Binding, words, store: bool) -> None:
        """A storage image binding's texels into the u32 words of buffer `words` in the model's linear layout (the
        binding's bytes: docs/format.md, Abstract shaders), or back; a sampled binding's through a combined image
        sampler (SAMPLED_KERNELS: a sampled read, as the stream's): one image kernel per mip level, on a view of that
        level and the binding's layers (of each layer: a compressed image's uncompressed view has one, VUID-
        VkImageViewCreateInfo-image-07072), in the layout the stream's barriers left the level's first layer in. A
        texel block is 1, 2 or 4 words. A store runs with dispatch `c`'s own group count, so a
        dispatch of no groups (indirect too) stores nothing; a load (c None) covers every texel whatever the count,
        as the simulator reads the binding whatever it is."""
        rt, r = self.rt, b.subresources
        image = rt.images[b.buffer]
        kernels = (image.image.extent[2] > 1, image.image.texel // 4)
        load_kernel, store_kernel = IMAGE_KERNELS[kernels]
        pipeline = rt.pipelines.get(store_kernel if store else SAMPLED_KERNELS[kernels] if b.access == "sampled"
                                    else load_kernel)
        (bw, bh), compressed = image.image.block, image.image.format in COMPRESSED
        layers = [(layer, 1) for layer in range(r.base_array_layer, r.base_array_layer + r.layer_count)] \
            if compressed else [(r.base_array_layer, r.layer_count)]
        first = 0
        for level in range(r.base_mip_level, r.base_mip_level + r.level_count):
            w, h, d = level_extent(image.image.extent, level)
            for base, count in layers:
                view = ImageSlot(rt.storage_view(b.buffer, level, base, count),
                                 vk_layout(self.vk, image.layout(level, base)))
                buffer = (words, 0, image_bytes(b))
                push = pack_push(pipeline.interface, [first])
                blocks = -(-w // bw) * -(-h // bh) * d * count  # texels, but of a compressed format
                if store:
                    self.run(c, pipeline, [buffer, view], push)
                else:
                    self.bind_and_push(pipeline, [view, buffer], push)
                    self.vk.vkCmdDispatch(self.cb, max(1, min(-(-blocks // 64), 65535)), 1, 1)  # vkCmdDispatch
                first += blocks * image.image.texel // 4

    def run(self, c: ir.Dispatch, pipeline, slots, push: bytes) -> None:
        """One kernel dispatch in the place of `c`, with its group count (direct or indirect)."""
        self.bind_and_push(pipeline, slots, push)
        if c.indirect is None:
            self.vk.vkCmdDispatch(self.cb, *c.groups)  # vkCmdDispatch
        else:
            # vkCmdDispatchIndirect
            self.vk.vkCmdDispatchIndirect(self.cb, self.rt.vk_buffer(c.indirect.buffer), c.indirect.offset)

    def bind_and_push(self, pipeline, slots, push: bytes) -> None:
        vk, cb = self.vk, self.cb
        descriptor_set = self.rt.pipelines.descriptor_set(pipeline, slots)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)  # vkCmdBindPipeline
        sets = [descriptor_set]
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, sets,
                                   0, None)  # vkCmdBindDescriptorSets
        if push:
            values = vk.ffi.from_buffer(push)
            vk.vkCmdPushConstants(cb, pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push),
                                  values)  # vkCmdPushConstants

    def scratch_input(self, binding: ir.Binding) -> tuple[object, int, int]:
        """Copy a read_write buffer binding's bytes (the library `copy` kernel), a uniform binding's (read as a
        uniform buffer: UNIFORM_KERNEL) or a storage image or sampled binding's texels (image_words) to a fresh
        scratch buffer, read by the generic kernel after compute_barrier: each binding is read with the access the
        stream gives."""
        vk, rt = self.vk, self.rt
        if binding.subresources is not None:
            scratch = rt.scratch_buffer(binding.buffer, image_bytes(binding))
            self.image_words(None, binding, scratch.handle, store=False)
            return scratch.handle, 0, image_bytes(binding)
        scratch = rt.scratch_buffer(binding.buffer, binding.size)
        pipeline = rt.pipelines.get(UNIFORM_KERNEL if binding.access == "uniform" else "copy")
        words = binding.size // 4
        self.bind_and_push(pipeline, [(rt.vk_buffer(binding.buffer), binding.offset, binding.size),
                                      (scratch.handle, 0, binding.size)], pack_push(pipeline.interface, [words]))
        vk.vkCmdDispatch(self.cb, max(1, min(-(-words // 64), 65535)), 1, 1)  # vkCmdDispatch
        return scratch.handle, 0, binding.size

    def compute_barrier(self) -> None:
        """Scratch words written by a compute kernel made visible to the next. A global barrier, not a scratch-only
        buffer barrier: layer 1.3.239 limits a buffer barrier's execution dependency to its range and would report
        the generic kernel's write after the copy's read as a WAR the spec does not have."""
        compute = frozenset({"compute_shader"})
        self.pipeline_barrier(compute, frozenset({"shader_storage_write"}), compute,
                              frozenset({"shader_storage_read"}), [], [])

    def barrier(self, c: ir.Barrier) -> None:
        self.pipeline_barrier(*self.parts(self.from_held_layouts(c)))
        self.transition(c)

    def from_held_layouts(self, c: ir.Barrier) -> ir.Barrier:
        """c with each image barrier's old layout the one its subresources are in now (not `undefined`, which
        discards): a stream may start where a program's set-up left an image, which the replay's zero clear left in
        general. Not an event's dependency, which the set and the wait must give alike (they transition once), nor
        an ownership transfer between two device families, whose release and acquire must name the same layouts
        (7.7.4; the acquire finds the image in the release's new layout)."""
        images = []
        ignored = self.vk.VK_QUEUE_FAMILY_IGNORED
        for b in c.images:
            held = self.rt.images[b.image].held_layout(b.subresources)
            kept = b.old_layout == "undefined" or held in (None, b.old_layout) or self.families(b)[0] != ignored
            images.append(b if kept else dataclasses.replace(b, old_layout=held))
        return dataclasses.replace(c, images=tuple(images)) if images != list(c.images) else c

    def transition(self, c: ir.Barrier) -> None:
        """Later commands of this and later recorded command buffers see the layouts c's image barriers leave (a
        2d_array_compatible image stays in general: image_fields)."""
        for b in c.images:
            image = self.rt.images[b.image]
            if not image.image.slices_are_layers:
                image.transition(b.subresources, b.new_layout)

    def parts(self, c: ir.Barrier) -> tuple:
        """A stream barrier as the arguments of pipeline_barrier, dependency_info and sync1_barriers."""
        return (c.src_stage, c.src_access, c.dst_stage, c.dst_access,
                [(b, self.rt.vk_buffer(b.buffer)) for b in c.buffers], [(b, self.rt.images[b.image]) for b in c.images])

    def event(self, c: ir.SetEvent | ir.ResetEvent | ir.WaitEvents) -> None:
        """Spec 7.5. A set is vkCmdSetEvent (stage form) or vkCmdSetEvent2 (dependency form), and the runtime
        notes which: a wait must be of the same kind as the set it waits for (vkCmdWaitEvents may not wait on
        vkCmdSetEvent2's signal, nor vkCmdWaitEvents2 on vkCmdSetEvent's), so each event's wait takes the kind
        of its last recorded set; an event only the host sets (vkSetEvent, which both accept) is waited for as
        the runtime records barriers. A reset is recorded as barriers are (either reset suits either set)."""
        vk, cb, rt = self.vk, self.cb, self.rt
        if isinstance(c, ir.SetEvent):
            if c.dependency is None:
                vk.vkCmdSetEvent(cb, rt.events[c.event], stage_mask(c.stage, False, True))  # vkCmdSetEvent
            elif not self.sync2:
                raise Unsupported(f"{self.rt.instance.operation}: set_event with a dependency is vkCmdSetEvent2, "
                                  "and the device has no synchronization2")
            else:
                info = self.dependency_info(*self.parts(c.dependency))
                vk.vkCmdSetEvent2(cb, rt.events[c.event], info)  # vkCmdSetEvent2
                self.transition(c.dependency)
            rt.event_sets[c.event] = c.dependency is not None
        elif isinstance(c, ir.ResetEvent):
            if self.sync2:
                vk.vkCmdResetEvent2(cb, rt.events[c.event], stage_mask(c.stage, True, True))  # vkCmdResetEvent2
            else:
                vk.vkCmdResetEvent(cb, rt.events[c.event], stage_mask(c.stage, False, True))  # vkCmdResetEvent
        else:
            waits = list(zip(c.events, c.dependencies))
            sync2 = [(e, d) for e, d in waits if rt.event_sets.get(e, self.sync2)]
            if sync2:
                events = [rt.events[e] for e, _ in sync2]
                infos = [self.dependency_info(*self.parts(d)) for _, d in sync2]
                vk.vkCmdWaitEvents2(cb, len(events), events, infos)  # vkCmdWaitEvents2
            # vkCmdWaitEvents has one dependency for all its events: one call per distinct dependency, each
            # event's wait keeping its own, as the checker pairs them (check/events.py).
            sync1 = [(e, d) for e, d in waits if (e, d) not in sync2]
            for dependency in dict.fromkeys(d for _, d in sync1):
                events = [rt.events[e] for e, d in sync1 if d == dependency]
                src, dst, memory, buffers, images = self.sync1_barriers(*self.parts(dependency))
                vk.vkCmdWaitEvents(cb, len(events), events, src, dst, len(memory), memory or None, len(buffers),
                                   buffers or None, len(images), images or None)  # vkCmdWaitEvents
            for dependency in dict.fromkeys(c.dependencies):
                self.transition(dependency)

    def families(self, b: ir.BufferBarrier | ir.ImageBarrier) -> tuple[int, int]:
        """Device families of an ownership transfer; IGNORED when the stream's
        two families landed on one device family (then it is no transfer)."""
        ignored = self.vk.VK_QUEUE_FAMILY_IGNORED
        if b.src_family is None:
            return ignored, ignored
        src, dst = self.rt.device_family(b.src_family), self.rt.device_family(b.dst_family)
        return (ignored, ignored) if src == dst else (src, dst)

    def pipeline_barrier(self, src_stage, src_access, dst_stage, dst_access, buffers, images) -> None:
        vk = self.vk
        if self.sync2:
            info = self.dependency_info(src_stage, src_access, dst_stage, dst_access, buffers, images)
            vk.vkCmdPipelineBarrier2(self.cb, info)  # vkCmdPipelineBarrier2
            return
        src, dst, memory, buffer_barriers, image_barriers = self.sync1_barriers(
            src_stage, src_access, dst_stage, dst_access, buffers, images)
        vk.vkCmdPipelineBarrier(self.cb, src, dst, 0, len(memory), memory or None, len(buffer_barriers),
                                buffer_barriers or None, len(image_barriers),
                                image_barriers or None)  # vkCmdPipelineBarrier

    def label_transfers(self, buffers, images) -> None:
        """The stream's families of each ownership transfer, which the device's may have merged (then the
        barrier is none): a capture keeps the label, an import takes the families from it."""
        for kind, barriers in (("buffer", buffers), ("image", images)):
            for i, (b, _) in enumerate(barriers):
                if b.src_family is not None:
                    self.rt.instance.insert_label(self.cb, f"{kind} barrier {i}: queue family {b.src_family} -> "
                                                           f"{b.dst_family}")

    def dependency_info(self, src_stage, src_access, dst_stage, dst_access, buffers, images):
        """The VkDependencyInfo of one stream barrier (vkCmdPipelineBarrier2, vkCmdSetEvent2, vkCmdWaitEvents2);
        the structs it points to live as long as it does (the `vulkan` package keeps them with it)."""
        vk = self.vk
        self.label_transfers(buffers, images)
        memory = [] if buffers or images else [vk.VkMemoryBarrier2(
            srcStageMask=stage_mask(src_stage, True, True), srcAccessMask=access_mask(src_access, True),
            dstStageMask=stage_mask(dst_stage, True, False), dstAccessMask=access_mask(dst_access, True))]
        buffer_barriers = [vk.VkBufferMemoryBarrier2(
            srcStageMask=stage_mask(b.src_stage, True, True), srcAccessMask=access_mask(b.src_access, True),
            dstStageMask=stage_mask(b.dst_stage, True, False), dstAccessMask=access_mask(b.dst_access, True),
            srcQueueFamilyIndex=self.families(b)[0], dstQueueFamilyIndex=self.families(b)[1],
            buffer=handle, offset=b.offset, size=b.size) for b, handle in buffers]
        image_barriers = [vk.VkImageMemoryBarrier2(
            srcStageMask=stage_mask(b.src_stage, True, True), srcAccessMask=access_mask(b.src_access, True),
            dstStageMask=stage_mask(b.dst_stage, True, False), dstAccessMask=access_mask(b.dst_access, True),
            **self.image_fields(b, image)) for b, image in images]
        return vk.VkDependencyInfo(memoryBarrierCount=len(memory), pMemoryBarriers=memory or None,
                                   bufferMemoryBarrierCount=len(buffer_barriers),
                                   pBufferMemoryBarriers=buffer_barriers or None,
                                   imageMemoryBarrierCount=len(image_barriers),
                                   pImageMemoryBarriers=image_barriers or None)

    def sync1_barriers(self, src_stage, src_access, dst_stage, dst_access, buffers,
                       images) -> tuple[int, int, list, list, list]:
        """Sync1's (srcStageMask, dstStageMask, memory, buffer and image barriers) of one stream barrier
        (vkCmdPipelineBarrier, vkCmdWaitEvents): one stage mask pair for the whole command, the union of the
        entries'."""
        vk = self.vk
        self.label_transfers(buffers, images)
        src = stage_mask(set(src_stage).union(*(b.src_stage for b, _ in (*buffers, *images))), False, True)
        dst = stage_mask(set(dst_stage).union(*(b.dst_stage for b, _ in (*buffers, *images))), False, False)
        memory = [] if buffers or images else [vk.VkMemoryBarrier(srcAccessMask=access_mask(src_access, False),
                                                                  dstAccessMask=access_mask(dst_access, False))]
        buffer_barriers = [vk.VkBufferMemoryBarrier(
            srcAccessMask=access_mask(b.src_access, False), dstAccessMask=access_mask(b.dst_access, False),
            srcQueueFamilyIndex=self.families(b)[0], dstQueueFamilyIndex=self.families(b)[1],
            buffer=handle, offset=b.offset, size=b.size) for b, handle in buffers]
        image_barriers = [vk.VkImageMemoryBarrier(
            srcAccessMask=access_mask(b.src_access, False), dstAccessMask=access_mask(b.dst_access, False),
            **self.image_fields(b, image)) for b, image in images]
        return src, dst, memory, buffer_barriers, image_barriers

    def image_fields(self, b: ir.ImageBarrier, image) -> dict:
        """What an image memory barrier (sync1 or sync2) has beside its masks: layouts as the stream writes them,
        families, the image and its subresource range.

        A 2d_array_compatible image's barrier names depth slices (VK_KHR_maintenance9), which the runtime does not
        enable: it covers the image's one layer, every slice of the stream's levels, and makes no layout transition
        (general, where create_image left the image, to general; every command the runtime records takes general).
        A superset of the stream's dependencies, and no transition of slices the stream does not transition: the
        bytes of a stream without hazards are the same (a transition moves none: sim/execute.py), and the device
        may order more than the stream (docs/runtime.md)."""
        src, dst = self.families(b)
        old, new, r = b.old_layout, b.new_layout, b.subresources
        if image.image.slices_are_layers:
            old = new = "general"
            r = ir.Subresources(r.base_mip_level, r.level_count, 0, 1)
        return {"oldLayout": vk_layout(self.vk, old), "newLayout": vk_layout(self.vk, new),
                "srcQueueFamilyIndex": src, "dstQueueFamilyIndex": dst, "image": image.handle,
                "subresourceRange": subresource_range(self.vk, r)}
