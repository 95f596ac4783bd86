"""Command-buffer calls: recordings, descriptor state at each dispatch, copies, fills, barriers.

A mixin of `Translator`: it reads the translator's resources and writes
the stream's command buffers and abstract shaders.
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass, field

from ..model.dump import Encoded
from ..shaders import interface as library_interface
from ..shaders.reflect import ShaderInterface, unpack_push
from .encoded import TemplateData, specialization_data, template_data
from .flags import access_names, stage_names
from .readback import Touch, touch
from .records import Call
from .resources import PUSH_EVALUATIONS, ImageDescriptor, Specialization

__all__ = ["QUEUE_FAMILY_IGNORED", "CommandBufferRecording", "Commands"]

QUEUE_FAMILY_IGNORED = 0xFFFFFFFF
# The bindings a dispatch accesses memory through: buffers and images (a sampled read is said to be missing).
SAMPLED_BINDINGS = ("sampled_image", "combined_image_sampler")
MEMORY_BINDINGS = ("storage_buffer", "uniform_buffer", "storage_texel_buffer", "uniform_texel_buffer", "storage_image",
                   *SAMPLED_BINDINGS)
TRANSFER_LABEL = re.compile(r"(buffer|image) barrier (\d+): queue family (\d+) -> (\d+)")  # see __init__.py
NO_DEPENDENCY = {"src_stage": ["none"], "dst_stage": ["none"]}  # a VkDependencyInfo with no barrier


@dataclass(slots=True)  # one per recording, all kept: a long run records thousands
class CommandBufferRecording:
    id: str
    commands: Encoded = field(default_factory=Encoded)
    touches: list[Touch] = field(default_factory=list)  # what each command touches, for the readback walk
    pipeline: int | None = None
    sets: dict[int, tuple[int, list[int]]] = field(default_factory=dict)  # set number -> (set, dynamic offsets)
    push: bytearray = field(default_factory=bytearray)  # the push-constant bytes set so far
    regions: list[str] = field(default_factory=list)  # the debug label regions open now, outermost first
    # buffer barrier index -> the stream's (src, dst) families, from labels for the next pipeline barrier
    transfers: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)


class Commands:
    # ---- descriptor sets and pipelines -------------------------------------

    def vkCreateDescriptorSetLayout(self, call: Call, a: dict) -> None:
        self.res.set_layouts[a["pSetLayout"]] = {
            b["binding"]: (b["descriptorType"], b["descriptorCount"]) for b in a["pCreateInfo"]["pBindings"] or []}

    def vkAllocateDescriptorSets(self, call: Call, a: dict) -> None:
        for descriptor_set, layout in zip(a["pDescriptorSets"], a["pAllocateInfo"]["pSetLayouts"]):
            self.res.set_layout_of[descriptor_set] = layout
            self.res.sets[descriptor_set] = {}
        self.res.pool_sets.setdefault(a["pAllocateInfo"]["descriptorPool"], []).extend(a["pDescriptorSets"])

    def vkFreeDescriptorSets(self, call: Call, a: dict) -> None:
        self.res.free_sets(a["pDescriptorSets"] or [])  # left in the pool's list: freed again at its reset

    def vkResetDescriptorPool(self, call: Call, a: dict) -> None:
        self.res.free_sets(self.res.pool_sets.pop(a["descriptorPool"], []))

    vkDestroyDescriptorPool = vkResetDescriptorPool

    def vkUpdateDescriptorSets(self, call: Call, a: dict) -> None:
        for write in a["pDescriptorWrites"] or []:
            self.res.write_descriptors(write)
        for copy in a["pDescriptorCopies"] or []:
            self.res.copy_descriptors(copy)

    def vkCreatePipelineLayout(self, call: Call, a: dict) -> None:
        self.res.pipeline_layouts[a["pPipelineLayout"]] = list(a["pCreateInfo"]["pSetLayouts"] or [])

    def vkCreateDescriptorUpdateTemplate(self, call: Call, a: dict) -> None:
        self.res.templates[a["pDescriptorUpdateTemplate"]] = a["pCreateInfo"]

    vkCreateDescriptorUpdateTemplateKHR = vkCreateDescriptorUpdateTemplate

    def vkUpdateDescriptorSetWithTemplate(self, call: Call, a: dict) -> None:
        data = self._template_data(call, 24)  # after the device, set and template ids
        if data is None:
            self.res.unknown_sets.add(a["descriptorSet"])
        else:
            self.res.write_template(a["descriptorSet"], a["descriptorUpdateTemplate"], data)

    vkUpdateDescriptorSetWithTemplateKHR = vkUpdateDescriptorSetWithTemplate

    def _template_data(self, call: Call, at: int) -> TemplateData | None:
        """The template data of `call` (its JSON line prints only an address); None, with a warning, without it."""
        parameters = None if self.call_parameters is None else self.call_parameters.get(call.index)
        data = None if parameters is None else template_data(parameters, at)
        if data is None:
            self.warn(call.name, f"{call.name} #{call.index}: the descriptors it writes are not in the capture "
                                 "(JSON lines only, or a null pData): dispatches that use them are unresolved")
        return data

    def vkCreateComputePipelines(self, call: Call, a: dict) -> None:
        infos = [info["stage"].get("pSpecializationInfo") for info in a["pCreateInfos"]]
        parameters = None if self.call_parameters is None else self.call_parameters.get(call.index)
        data = [None] * len(infos) if parameters is None else specialization_data(parameters, infos)
        for info, spec, values, pipeline in zip(a["pCreateInfos"], infos, data, a["pPipelines"]):
            module = info["stage"]["module"]
            specialization = _specialization(spec, values)
            if specialization is None:
                self.warn(f"specialization{module}", f"vkCreateComputePipelines #{call.index}: the values of its "
                                                     f"specialization constants are not in the capture: shader module "
                                                     f"{module} is reflected with every branch")
            self.res.pipelines[pipeline] = (module, info["stage"]["pName"], specialization)

    # ---- command buffers ---------------------------------------------------

    def vkBeginCommandBuffer(self, call: Call, a: dict) -> None:
        handle = a["commandBuffer"]
        self.recorded[handle] += 1
        n = self.recorded[handle]
        rec = CommandBufferRecording(f"cb{handle}" if n == 1 else f"cb{handle}_{n}")
        self.recordings[handle] = rec
        self.command_buffers[rec.id] = rec.commands
        self.touches[rec.id] = rec.touches

    def vkEndCommandBuffer(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        if rec is not None:
            rec.commands.seal()

    def cmd(self, call: Call, cmd: str, accessed: tuple | None = None, **fields) -> None:
        """A command, written as its text at once (model.dump.Encoded): nothing changes it after. accessed: the
        buffer ranges it touches where readback.accesses cannot tell them (an image command's)."""
        rec = self.recordings.get(call.args["commandBuffer"])
        if rec is not None:
            where = " > ".join(rec.regions) + ": " if rec.regions else ""
            command = {"cmd": cmd, **fields, "label": f"{where}{call.name} #{call.index}"}
            rec.commands.append(command)
            found = touch(command, accessed)  # one object for the commands that touch alike (a decode's tokens do)
            rec.touches.append(self.touched.setdefault(found, found))
            self.summary.commands[cmd] += 1

    def vkCmdBeginDebugUtilsLabelEXT(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        if rec is not None:
            rec.regions.append(a["pLabelInfo"]["pLabelName"])

    def vkCmdInsertDebugUtilsLabelEXT(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        transfer = TRANSFER_LABEL.fullmatch(a["pLabelInfo"]["pLabelName"])
        if rec is not None and transfer is not None:
            rec.transfers[transfer[1], int(transfer[2])] = (int(transfer[3]), int(transfer[4]))

    def vkCmdEndDebugUtilsLabelEXT(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        if rec is not None and rec.regions:
            rec.regions.pop()

    def vkCmdPushConstants(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        data = None if self.push_data is None else self.push_data.get(call.index)
        if rec is not None and data is not None:
            end = a["offset"] + len(data)
            rec.push.extend(bytes(max(0, end - len(rec.push))))
            rec.push[a["offset"]:end] = data

    def vkCmdBindPipeline(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        if rec is not None and a["pipelineBindPoint"] == "VK_PIPELINE_BIND_POINT_COMPUTE":
            rec.pipeline = a["pipeline"]

    def vkCmdPushDescriptorSetKHR(self, call: Call, a: dict) -> None:
        if a["pipelineBindPoint"] != "VK_PIPELINE_BIND_POINT_COMPUTE":
            return
        key = self._push_set(call, a["layout"], a["set"])
        for write in a["pDescriptorWrites"] or []:
            if key is not None:
                self.res.write_descriptors({**write, "dstSet": key})

    def vkCmdPushDescriptorSetWithTemplateKHR(self, call: Call, a: dict) -> None:
        data = self._template_data(call, 28)  # after the command buffer, template and layout ids and the set number
        template = self.res.templates.get(a["descriptorUpdateTemplate"], {})
        # The converter leaves `set` out; the spec requires it to be the template's.
        key = self._push_set(call, a["layout"], a.get("set", template.get("set", 0)))
        if key is not None and data is None:
            self.res.unknown_sets.add(key)
        elif key is not None:
            self.res.write_template(key, a["descriptorUpdateTemplate"], data)

    def _push_set(self, call: Call, layout: int, number: int) -> int | None:
        """The descriptor set a push makes, bound at `number`: one of its own, keyed -(call index) (no handle
        is negative), holding what an earlier push to that set number left (a push updates only what it writes)."""
        rec = self.recordings.get(call.args["commandBuffer"])
        if rec is None:
            return None
        key, before = -call.index, rec.sets.get(number, (0, []))[0]
        self.res.sets[key] = dict(self.res.sets[before]) if before < 0 else {}
        if before in self.res.unknown_sets:
            self.res.unknown_sets.add(key)
        set_layouts = self.res.pipeline_layouts.get(layout, [])
        if number < len(set_layouts):
            self.res.set_layout_of[key] = set_layouts[number]
        rec.sets[number] = (key, [])
        return key

    def vkCmdBindDescriptorSets(self, call: Call, a: dict) -> None:
        rec = self.recordings.get(a["commandBuffer"])
        if rec is None or a["pipelineBindPoint"] != "VK_PIPELINE_BIND_POINT_COMPUTE":
            return
        offsets = list(a["pDynamicOffsets"] or [])
        for i, descriptor_set in enumerate(a["pDescriptorSets"]):
            n = len(self.res.dynamic_slots(descriptor_set))  # each set takes its dynamic offsets in turn
            rec.sets[a["firstSet"] + i] = (descriptor_set, offsets[:n])
            offsets = offsets[n:]

    def vkCmdExecuteCommands(self, call: Call, a: dict) -> None:
        """An execute_commands of the secondaries' recordings as they are now (spec 6.7: their commands run in
        its place), each a command buffer of its own, so that its commands keep their own references."""
        secondaries = [self.recordings[s].id for s in a["pCommandBuffers"] if s in self.recordings]
        if secondaries:
            self.cmd(call, "execute_commands", command_buffers=secondaries)

    def vkCmdCopyBuffer(self, call: Call, a: dict) -> None:
        self._copy(call, a["srcBuffer"], a["dstBuffer"], a["pRegions"])

    def vkCmdCopyBuffer2(self, call: Call, a: dict) -> None:
        info = a["pCopyBufferInfo"]
        self._copy(call, info["srcBuffer"], info["dstBuffer"], info["pRegions"])

    vkCmdCopyBuffer2KHR = vkCmdCopyBuffer2

    def _copy(self, call: Call, src: int, dst: int, regions: list[dict]) -> None:
        s, d = self.bound(src, call), self.bound(dst, call)
        if s is not None and d is not None:
            self.cmd(call, "copy", src=s.id, dst=d.id, regions=[
                {"src_offset": r["srcOffset"], "dst_offset": r["dstOffset"], "size": r["size"]} for r in regions])

    def vkCmdFillBuffer(self, call: Call, a: dict) -> None:
        buf = self.bound(a["dstBuffer"], call)
        if buf is not None:
            offset, size = buf.range(a["dstOffset"], a["size"])
            # VK_WHOLE_SIZE fills the largest multiple of 4 bytes that fits (vkCmdFillBuffer).
            self.cmd(call, "fill", dst=buf.id, offset=offset, size=size - size % 4, value=a["data"])

    def vkCmdUpdateBuffer(self, call: Call, a: dict) -> None:
        buf = self.bound(a["dstBuffer"], call)
        if buf is not None:
            self.cmd(call, "update", dst=buf.id, offset=a["dstOffset"], size=a["dataSize"])

    def vkCmdDispatch(self, call: Call, a: dict) -> None:
        self._dispatch(call, [a["groupCountX"], a["groupCountY"], a["groupCountZ"]])

    def vkCmdDispatchBase(self, call: Call, a: dict) -> None:
        self._dispatch(call, [a["groupCountX"], a["groupCountY"], a["groupCountZ"]])

    vkCmdDispatchBaseKHR = vkCmdDispatchBase

    def vkCmdDispatchIndirect(self, call: Call, a: dict) -> None:
        buf = self.bound(a["buffer"], call)
        if buf is not None:
            self._dispatch(call, [1, 1, 1], {"buffer": buf.id, "offset": a["offset"]})

    def _dispatch(self, call: Call, groups: list[int], indirect: dict | None = None) -> None:
        rec = self.recordings.get(call.args["commandBuffer"])
        if rec is None:
            return
        if rec.pipeline not in self.res.pipelines:
            self.unresolved("no compute pipeline is bound" if rec.pipeline is None else
                            f"pipeline {rec.pipeline} is made by no vkCreateComputePipelines in the capture")
            return
        module, entry, specialization = self.res.pipelines[rec.pipeline]
        bindings = self._bindings(call, rec, module, entry, specialization)
        kernel = None if self.push_data is None else self.res.library_kernel(module, entry)
        if kernel is None or len(bindings) != len(library_interface(kernel).bindings):  # not all of them bound
            fields = {"shader": self._shader_id(module, entry, [b["access"] for b in bindings])}
        else:  # a library kernel, replayed as itself: its push constants are the ones captured
            fields = {"shader": kernel, "push": unpack_push(library_interface(kernel), rec.push)}
        fields.update(bindings=bindings, groups=groups)
        if indirect is not None:
            fields["indirect"] = indirect
        self.cmd(call, "dispatch_indirect" if indirect else "dispatch", **fields)

    def _bindings(self, call: Call, rec: CommandBufferRecording, module: int, entry: str,
                  specialization: Specialization | None) -> list[dict]:
        """The buffers the dispatch accesses, from the sets bound now and the shader's reflected interface; a
        binding the shader uses with no descriptor bound leaves the dispatch unresolved."""
        # The push constants set so far are the dispatch's (None where the capture lacks their values).
        interface = self.res.interface(module, entry, specialization, None if self.push_data is None else
                                       bytes(rec.push))
        if module in self.res.push_capped:
            self.assume(f"push{module}", f"shader module {module} is dispatched with more than {PUSH_EVALUATIONS} "
                                         "distinct push-constant values that decide its branches: its dispatches "
                                         "past those count every branch on them")
        if module in self.res.unspecialized:
            self.warn(f"unspecialized{module}", f"shader module {module}: {self.res.unspecialized[module]}; its "
                                                "bindings are reflected with every branch")
        if interface is None:
            self.warn(f"shader{module}", f"shader module {module} (first dispatched at #{call.index}): "
                                         f"{self.res.shader_problems[module]}; every storage buffer bound at "
                                         "its dispatches is taken as read_write")
            used = []  # nothing is known to be used: what is bound is all there is
            wanted = [(n, b, e, None) for n, (s, _) in sorted(rec.sets.items())
                      for (b, e) in sorted(self.res.sets.get(s, {}))]
            for n, (s, _) in sorted(rec.sets.items()):
                if s in self.res.unknown_sets:
                    self.unresolved(f"shader module {module} (no SPIR-V) has set {n} bound, written by a descriptor "
                                    "update template whose data is not in the capture: its accesses are left out")
        else:
            used = self._used(interface)
            wanted = [(n, b, e, access) for n, b, count, access in used if n in rec.sets
                      for e in range(count or self.res.layout_count(rec.sets[n][0], b))]
        out, resolved = [], set()
        for number, binding, element, access in wanted:
            descriptor_set, offsets = rec.sets[number]
            d = self.res.sets.get(descriptor_set, {}).get((binding, element))
            if access == "sampled" or isinstance(d, ImageDescriptor) and d.sampled:
                # A sampled image's or combined image sampler's read (shader_sampled_read). Of an image the stream does
                # not hold (or a buffer descriptor), it touches nothing the stream holds: the dispatch stays whole.
                if not (isinstance(d, ImageDescriptor) and d.image is not None and self.holds(d.image)):
                    resolved.add((number, binding))
                    continue
                access = "sampled"
            if isinstance(d, ImageDescriptor) and d.refused is not None:  # a storage view the format cannot hold
                resolved.add((number, binding))
                self.unresolved(f"shader module {module} uses set {number}, binding {binding}: {d.refused}; that "
                                "access is left out")
                continue
            if isinstance(d, ImageDescriptor):
                image = self.held_image(d.image, call)
                if image is not None:
                    resolved.add((number, binding))
                    out.append({"image": image.id, **dict(d.subresources), "access": access or "read_write"})
                continue
            buf = None if d is None else self.bound(d.buffer, call)
            if buf is None:
                continue
            resolved.add((number, binding))
            extra = 0
            if d.dynamic:
                slot = self.res.dynamic_slots(descriptor_set).index((binding, element))
                extra = offsets[slot] if slot < len(offsets) else 0
            offset, size = buf.range(d.offset + extra, d.range)
            out.append({"buffer": buf.id, "offset": offset, "size": size,
                        "access": d.access or access or "read_write"})
        for number, binding in sorted({(n, b) for n, b, _, _ in used} - resolved):
            self.unresolved(f"shader module {module} uses set {number}, binding {binding}, where no descriptor of a "
                            "bound buffer is: that access is left out")
        return out

    def _used(self, interface: ShaderInterface) -> tuple[tuple[int, int, int, str], ...]:
        """(set, binding, count, access) of each buffer or image binding the code touches (access `sampled` for a
        sampled image's): one it never touches is no access. Kept per interface (Resources keeps each for the
        whole import, so its id names it)."""
        found = self.used_bindings.get(id(interface))
        if found is None:
            found = self.used_bindings[id(interface)] = tuple(
                (i.set, i.binding, i.count, "sampled" if i.descriptor_type in SAMPLED_BINDINGS else i.access)
                for i in interface.bindings if i.descriptor_type in MEMORY_BINDINGS and i.access != "none")
        return found

    def unresolved(self, why: str) -> None:
        """A dispatch the stream cannot hold in full: counted by reason in the summary, which makes the verdict
        on the stream partial."""
        self.summary.unresolved[why] += 1

    def _shader_id(self, module: int, entry: str, accesses: list[str]) -> str:
        """An abstract shader per module and entry point, one more for each other binding shape it is used with."""
        base = f"sh{module}" if entry == "main" else f"sh{module}.{entry}"
        shader, n = base, 1
        while shader in self.shaders and self.shaders[shader] != accesses:
            n += 1
            shader = f"{base}_{n}"
        self.shaders[shader] = accesses
        return shader

    # ---- barriers ----------------------------------------------------------

    def _buffer_entries(self, call: Call, barriers: list[dict], stages: bool) -> list[dict]:
        """The entries of a barrier call's bound buffers; stages: each barrier has its own (sync2)."""
        rec = self.recordings.get(call.args["commandBuffer"])
        labelled = {} if rec is None else rec.transfers
        if labelled:
            rec.transfers = {}
        entries = (self._buffer_entry(call, b, labelled.get(("buffer", i)),
                                      *((b["srcStageMask"], b["dstStageMask"]) if stages else ()))
                   for i, b in enumerate(barriers))
        return [e for e in entries if e]

    def _buffer_entry(self, call: Call, b: dict, labelled: tuple[int, int] | None,
                      src_stage: int | None = None, dst_stage: int | None = None) -> dict | None:
        """labelled: the stream's families of an ownership transfer, which the device's may have merged."""
        buf = self.bound(b["buffer"], call)
        if buf is None:
            return None
        offset, size = buf.range(b["offset"], b["size"])
        entry = {"buffer": buf.id, "offset": offset, "size": size,
                 "src_access": access_names(b["srcAccessMask"]), "dst_access": access_names(b["dstAccessMask"])}
        if src_stage is not None:
            entry.update(src_stage=stage_names(src_stage), dst_stage=stage_names(dst_stage))
        families = labelled or (b["srcQueueFamilyIndex"], b["dstQueueFamilyIndex"])
        if families[0] != families[1] and QUEUE_FAMILY_IGNORED not in families:
            entry.update(src_family=families[0], dst_family=families[1])
        return entry

    def sync1_dependencies(self, call: Call, a: dict) -> list[dict]:
        """Sync1's (vkCmdPipelineBarrier, vkCmdWaitEvents): one stage pair for all barriers. Memory barriers (their
        access masks merged) become one global dependency, buffer and image barriers a second one."""
        stages = {"src_stage": stage_names(a["srcStageMask"]), "dst_stage": stage_names(a["dstStageMask"])}
        memory = a["pMemoryBarriers"] or []
        # An image barrier the stream does not hold keeps its execution dependency: the stage pair is the call's.
        images, _ = self.image_entries(call, a["pImageMemoryBarriers"] or [], stages=False)
        entries = _entries(self._buffer_entries(call, a["pBufferMemoryBarriers"] or [], stages=False), images)
        out = []
        if memory or not entries:
            src = functools.reduce(operator.or_, (m["srcAccessMask"] for m in memory), 0)
            dst = functools.reduce(operator.or_, (m["dstAccessMask"] for m in memory), 0)
            out.append(_global_barrier(a["srcStageMask"], a["dstStageMask"], src, dst))
        if entries:
            out.append({**stages, **entries})
        return out

    def vkCmdPipelineBarrier(self, call: Call, a: dict) -> None:
        for dependency in self.sync1_dependencies(call, a):
            self.cmd(call, "barrier", **dependency)

    def sync2_dependencies(self, call: Call, info: dict) -> list[dict]:
        """A VkDependencyInfo's (vkCmdPipelineBarrier2, vkCmdSetEvent2, vkCmdWaitEvents2): each memory barrier is
        one dependency, each image barrier the stream does not hold one more (execution only); the buffer and image
        barriers, each with its own stages, one more."""
        out = [{"src_stage": stage_names(m["srcStageMask"]), "dst_stage": stage_names(m["dstStageMask"]),
                "src_access": access_names(m["srcAccessMask"]), "dst_access": access_names(m["dstAccessMask"])}
               for m in info["pMemoryBarriers"] or []]
        images, dropped = self.image_entries(call, info["pImageMemoryBarriers"] or [], stages=True)
        out += [{"src_stage": stage_names(m["srcStageMask"]), "dst_stage": stage_names(m["dstStageMask"])}
                for m in dropped]
        entries = _entries(self._buffer_entries(call, info["pBufferMemoryBarriers"] or [], stages=True), images)
        if entries:
            each = [e for kind in entries.values() for e in kind]
            union = [sorted({s for e in each for s in e[key]}) for key in ("src_stage", "dst_stage")]
            out.append({"src_stage": union[0], "dst_stage": union[1], **entries})
        return out

    def vkCmdPipelineBarrier2(self, call: Call, a: dict) -> None:
        for dependency in self.sync2_dependencies(call, a["pDependencyInfo"]):
            self.cmd(call, "barrier", **dependency)

    vkCmdPipelineBarrier2KHR = vkCmdPipelineBarrier2

    # ---- events (spec 7.5) -------------------------------------------------

    def vkCmdSetEvent(self, call: Call, a: dict) -> None:
        self.cmd(call, "set_event", event=self.event_id(a["event"]), stage=stage_names(a["stageMask"]))

    def vkCmdSetEvent2(self, call: Call, a: dict) -> None:
        """The stream's set holds one dependency: one of several barriers is held as their union, which orders
        more than they do (findings may go missing, never appear), and says so."""
        dependencies = self.sync2_dependencies(call, a["pDependencyInfo"]) or [NO_DEPENDENCY]
        if len(dependencies) > 1:
            self.warn(f"widened{call.index}", f"{call.name} #{call.index}: its {len(dependencies)} barriers are held "
                                              "as one dependency from the union of their scopes, which may order "
                                              "more than the program does")
            dependencies = [_union(dependencies)]
        self.cmd(call, "set_event", event=self.event_id(a["event"]), **dependencies[0])

    vkCmdSetEvent2KHR = vkCmdSetEvent2

    def vkCmdResetEvent(self, call: Call, a: dict) -> None:
        self.cmd(call, "reset_event", event=self.event_id(a["event"]), stage=stage_names(a["stageMask"]))

    vkCmdResetEvent2 = vkCmdResetEvent2KHR = vkCmdResetEvent

    def vkCmdWaitEvents(self, call: Call, a: dict) -> None:
        """One wait per sync1 dependency (sync1_dependencies), each on every event: the waits the one would be."""
        events = [self.event_id(e) for e in a["pEvents"]]
        for dependency in self.sync1_dependencies(call, a):
            self.cmd(call, "wait_events", events=events, **dependency)

    def vkCmdWaitEvents2(self, call: Call, a: dict) -> None:
        """One dependency per event where each event's VkDependencyInfo is one (sync2_dependencies); else a wait
        per event and dependency, which together wait as the one does."""
        events = [self.event_id(e) for e in a["pEvents"]]
        dependencies = [self.sync2_dependencies(call, info) or [NO_DEPENDENCY] for info in a["pDependencyInfos"]]
        if all(len(d) == 1 for d in dependencies):
            self.cmd(call, "wait_events", events=events, dependencies=[d for d, in dependencies])
            return
        for event, each in zip(events, dependencies):
            for dependency in each:
                self.cmd(call, "wait_events", events=[event], dependencies=[dependency])

    vkCmdWaitEvents2KHR = vkCmdWaitEvents2


def _union(dependencies: list[dict]) -> dict:
    """One global dependency with the stages and accesses of all of `dependencies` (their buffer and image entries'
    too: an image barrier's layout transition is not kept)."""
    parts = [d for dependency in dependencies
             for d in (dependency, *dependency.get("buffers", ()), *dependency.get("images", ()))]
    return {key: sorted({name for d in parts for name in d.get(key, ())} - {"none"}) or ["none"]
            for key in ("src_stage", "dst_stage", "src_access", "dst_access")}


def _entries(buffers: list[dict], images: list[dict]) -> dict:
    """A dependency's buffer and image barrier fields, those it has."""
    return {**({"buffers": buffers} if buffers else {}), **({"images": images} if images else {})}


@functools.lru_cache(maxsize=1024)  # a run repeats a few barriers thousands of times: each named once
def _global_barrier(src_stage: int | str, dst_stage: int | str, src_access: int, dst_access: int) -> dict:
    """A global barrier command's stages and accesses (shared: a command is written as its text at once)."""
    return {"src_stage": stage_names(src_stage), "dst_stage": stage_names(dst_stage),
            "src_access": access_names(src_access), "dst_access": access_names(dst_access)}


def _specialization(info: dict | None, data: bytes | None) -> Specialization | None:
    """A VkSpecializationInfo's constant values by id: () where there is none, None where the capture
    lacks its data."""
    if not info or not info["pMapEntries"]:
        return ()
    if data is None:
        return None
    return tuple(sorted((e["constantID"], data[e["offset"]:e["offset"] + e["size"]]) for e in info["pMapEntries"]))
