"""Test support: run one compute kernel on a Vulkan device and read back.

Uses the `vulkan` package, whose structs do not keep nested temporaries
alive: every struct and array a call points to is
bound to a local name until that call has returned.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence

import numpy as np


class NoDevice(RuntimeError):
    """No Vulkan loader or ICD with a compute queue: tests skip."""


DESCRIPTOR_PATHS = ("set", "template", "push", "push_template", "dynamic")  # how `run` gives the shader its buffers


class ComputeDevice:
    """One instance, device and queue; prefers Lavapipe (a CPU device). `push_descriptors` enables
    VK_KHR_push_descriptor, which `run`'s "push" and "push_template" descriptor paths need."""

    def __init__(self, push_descriptors: bool = False) -> None:
        try:
            import vulkan as vk
        except OSError as error:
            raise NoDevice(f"Vulkan loader not loadable: {error}") from error
        self.vk = vk
        app = vk.VkApplicationInfo(pApplicationName="vkverify-tests", apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
        instance_info = vk.VkInstanceCreateInfo(pApplicationInfo=app)
        try:
            self.instance = vk.vkCreateInstance(instance_info, None)
            physicals = vk.vkEnumeratePhysicalDevices(self.instance)
        except vk.VkError as error:
            raise NoDevice(f"vkCreateInstance or vkEnumeratePhysicalDevices failed ({type(error).__name__})") from error
        if not physicals:
            vk.vkDestroyInstance(self.instance, None)
            raise NoDevice("no Vulkan physical device")
        cpu = [p for p in physicals
               if vk.vkGetPhysicalDeviceProperties(p).deviceType == vk.VK_PHYSICAL_DEVICE_TYPE_CPU]
        self.physical = (cpu or physicals)[0]
        self.name = vk.vkGetPhysicalDeviceProperties(self.physical).deviceName
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        self.family = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        extensions = ["VK_KHR_push_descriptor"] if push_descriptors else []
        device_info = vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[queue_info],
                                            enabledExtensionCount=len(extensions), ppEnabledExtensionNames=extensions)
        self.device = vk.vkCreateDevice(self.physical, device_info, None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        wanted = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        memory = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self.memory_type = next(i for i in range(memory.memoryTypeCount)
                                if memory.memoryTypes[i].propertyFlags & wanted == wanted)
        pool_info = vk.VkCommandPoolCreateInfo(queueFamilyIndex=self.family)
        self.command_pool = vk.vkCreateCommandPool(self.device, pool_info, None)

    def close(self) -> None:
        vk = self.vk
        vk.vkDestroyCommandPool(self.device, self.command_pool, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)

    def run(self, spirv: bytes, buffers: Sequence[np.ndarray], push: bytes, groups: tuple[int, int, int],
            specialization: dict[int, int] | None = None, descriptors: str = "set") -> list[np.ndarray]:
        """Bind buffers[b] at set 0, binding b (storage buffers), push `push`,
        dispatch `groups`; return every buffer's contents afterwards, as
        arrays of the input dtypes. `specialization` and `descriptors`: as `dispatch`."""
        vk, device = self.vk, self.device
        skip = self.dynamic_alignment() if descriptors == "dynamic" else 0
        owned: list[tuple[object, object]] = []
        try:
            for data in buffers:
                owned.append(self._buffer(bytes(skip) + np.ascontiguousarray(data).tobytes()))
            self.dispatch(spirv, [(buffer, data.nbytes) for data, (buffer, _) in zip(buffers, owned)], push, groups,
                          specialization, descriptors)
            return [self.read(memory, data.nbytes, data.dtype, skip) for data, (_, memory) in zip(buffers, owned)]
        finally:
            for buffer, memory in owned:
                vk.vkDestroyBuffer(device, buffer, None)
                vk.vkFreeMemory(device, memory, None)

    def dynamic_alignment(self) -> int:
        """Where a buffer's data starts on the "dynamic" descriptor path: one storage offset alignment in."""
        return self.vk.vkGetPhysicalDeviceProperties(self.physical).limits.minStorageBufferOffsetAlignment

    def dispatch(self, spirv: bytes, bound: Sequence[tuple], push: bytes, groups: tuple[int, int, int],
                 specialization: dict[int, int] | None = None, descriptors: str = "set", submit_lock=None) -> None:
        """Bind bound[b] = (VkBuffer, size[, offset]) at set 0, binding b (storage buffers), push `push`, dispatch
        `groups`, wait; vkQueueSubmit under `submit_lock` where given. `specialization`: u32 value per
        specialization constant id; `descriptors`: one of DESCRIPTOR_PATHS, the calls that write the set
        (a descriptor update template's data is one VkDescriptorBufferInfo per binding, in binding order;
        "dynamic": storage buffer dynamic descriptors, each buffer's data `dynamic_alignment()` into it,
        at that dynamic offset)."""
        vk, device = self.vk, self.device
        dynamic = descriptors == "dynamic"
        skip = self.dynamic_alignment() if dynamic else 0
        descriptor_type = (vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC if dynamic
                           else vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER)
        layout_bindings = [vk.VkDescriptorSetLayoutBinding(
            binding=b, descriptorType=descriptor_type, descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b in range(len(bound))]
        pushed = descriptors.startswith("push")
        set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
            flags=vk.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR if pushed else 0,
            bindingCount=len(layout_bindings), pBindings=layout_bindings)
        set_layout = vk.vkCreateDescriptorSetLayout(device, set_layout_info, None)
        push_ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                              size=len(push))] if push else []
        set_layouts = [set_layout]
        layout_info = vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1, pSetLayouts=set_layouts,
            pushConstantRangeCount=len(push_ranges), pPushConstantRanges=push_ranges)
        layout = vk.vkCreatePipelineLayout(device, layout_info, None)
        module_info = vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv)
        module = vk.vkCreateShaderModule(device, module_info, None)
        constants = sorted((specialization or {}).items())
        map_entries = [vk.VkSpecializationMapEntry(constantID=c, offset=4 * i, size=4)
                       for i, (c, _) in enumerate(constants)]
        spec_data = vk.ffi.from_buffer(np.array([v for _, v in constants], np.uint32).tobytes())
        spec_info = vk.VkSpecializationInfo(mapEntryCount=len(map_entries), pMapEntries=map_entries,
                                            dataSize=len(spec_data), pData=spec_data)
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName="main",
            pSpecializationInfo=spec_info if constants else None)
        pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)
        pipeline = vk.vkCreateComputePipelines(device, None, 1, [pipeline_info], None)[0]
        bound = [(b[0], b[1], b[2] if len(b) > 2 else 0) for b in bound]
        buffer_infos = [[vk.VkDescriptorBufferInfo(buffer=buffer, offset=offset, range=max(4, size))]
                        for buffer, size, offset in bound]
        writes = [vk.VkWriteDescriptorSet(dstBinding=b, descriptorCount=1, descriptorType=descriptor_type,
                                          pBufferInfo=info) for b, info in enumerate(buffer_infos)]
        template_entries = [vk.VkDescriptorUpdateTemplateEntry(
            dstBinding=b, descriptorCount=1, descriptorType=descriptor_type, offset=24 * b, stride=24)
            for b in range(len(bound))]
        template_info = vk.VkDescriptorUpdateTemplateCreateInfo(
            descriptorUpdateEntryCount=len(template_entries), pDescriptorUpdateEntries=template_entries,
            templateType=vk.VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_PUSH_DESCRIPTORS_KHR if pushed
            else vk.VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET,
            descriptorSetLayout=set_layout, pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_COMPUTE,
            pipelineLayout=layout, set=0)
        template = vk.vkCreateDescriptorUpdateTemplate(device, template_info, None) \
            if descriptors.endswith("template") else None
        # VkDescriptorBufferInfo: {VkBuffer buffer; VkDeviceSize offset, range}, 8 bytes each.
        template_data = vk.ffi.from_buffer(np.array(
            [[int(vk.ffi.cast("uint64_t", buffer)), offset, max(4, size)]
             for buffer, size, offset in bound], np.uint64).tobytes())
        descriptor_pool, descriptor_set = None, None
        if not pushed:
            pool_sizes = [vk.VkDescriptorPoolSize(type=descriptor_type, descriptorCount=len(bound))]
            pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=1, pPoolSizes=pool_sizes)
            descriptor_pool = vk.vkCreateDescriptorPool(device, pool_info, None)
            alloc_info = vk.VkDescriptorSetAllocateInfo(
                descriptorPool=descriptor_pool, descriptorSetCount=1, pSetLayouts=set_layouts)
            descriptor_set = vk.vkAllocateDescriptorSets(device, alloc_info)[0]
            if template is None:
                for write in writes:
                    write.dstSet = descriptor_set
                vk.vkUpdateDescriptorSets(device, len(writes), writes, 0, None)
            else:
                vk.vkUpdateDescriptorSetWithTemplate(device, descriptor_set, template, template_data)
        push_descriptors = functools.partial(self._push_descriptors, layout, writes, template, template_data)
        self._submit(pipeline, layout, descriptor_set, push, groups, [skip] * len(bound) if dynamic else [],
                     push_descriptors, submit_lock)
        if descriptor_pool is not None:
            vk.vkDestroyDescriptorPool(device, descriptor_pool, None)
        if template is not None:
            vk.vkDestroyDescriptorUpdateTemplate(device, template, None)
        vk.vkDestroyPipeline(device, pipeline, None)
        vk.vkDestroyShaderModule(device, module, None)
        vk.vkDestroyPipelineLayout(device, layout, None)
        vk.vkDestroyDescriptorSetLayout(device, set_layout, None)

    def read(self, memory, nbytes: int, dtype, offset: int = 0) -> np.ndarray:
        """`nbytes` of host-visible `memory` from `offset`, as an array of `dtype`."""
        vk = self.vk
        mapped = vk.vkMapMemory(self.device, memory, offset, max(4, nbytes), 0)
        out = np.frombuffer(bytes(mapped[:nbytes]), dtype=dtype).copy()
        vk.vkUnmapMemory(self.device, memory)
        return out

    def _buffer(self, data: bytes, usage: int | None = None) -> tuple[object, object]:
        vk, device = self.vk, self.device
        size = max(4, len(data))  # Vulkan forbids zero-sized buffers
        buffer_info = vk.VkBufferCreateInfo(size=size, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT if usage is None
                                            else usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        buffer = vk.vkCreateBuffer(device, buffer_info, None)
        requirements = vk.vkGetBufferMemoryRequirements(device, buffer)
        alloc_info = vk.VkMemoryAllocateInfo(allocationSize=requirements.size, memoryTypeIndex=self.memory_type)
        memory = vk.vkAllocateMemory(device, alloc_info, None)
        vk.vkBindBufferMemory(device, buffer, memory, 0)
        mapped = vk.vkMapMemory(device, memory, 0, size, 0)
        mapped[:len(data)] = data
        vk.vkUnmapMemory(device, memory)
        return buffer, memory

    def read_back(self, data: np.ndarray, host_barrier: bool) -> np.ndarray:
        """The readback pattern: copy `data` from a buffer into a staging buffer (usage transfer dst only),
        wait for a fence, read the staging buffer through a mapping. host_barrier: a barrier from the copy to
        the host's reads before the fence, as the memory model requires."""
        vk, device = self.vk, self.device
        owned = [self._buffer(data.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT),
                 self._buffer(bytes(data.nbytes), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)]
        (src, _), (staging, memory) = owned

        def record(cb: object) -> None:
            regions = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=data.nbytes)]
            vk.vkCmdCopyBuffer(cb, src, staging, 1, regions)
            if host_barrier:
                barriers = [vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                               dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)]
                vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT,
                                        0, 1, barriers, 0, None, 0, None)

        self._execute(record)
        result = self.read(memory, data.nbytes, data.dtype)
        for buffer, buffer_memory in owned:
            vk.vkDestroyBuffer(device, buffer, None)
            vk.vkFreeMemory(device, buffer_memory, None)
        return result

    def _submit(self, pipeline: object, layout: object, descriptor_set: object, push: bytes,
                groups: tuple[int, int, int], dynamic_offsets: Sequence[int] = (),
                push_descriptors: Callable[[object], None] | None = None, submit_lock=None) -> None:
        """descriptor_set: the set to bind, with `dynamic_offsets`; None where `push_descriptors` records the push
        of its descriptors."""
        vk = self.vk

        def record(cb: object) -> None:
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            if descriptor_set is not None:
                sets, offsets = [descriptor_set], list(dynamic_offsets)
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, sets, len(offsets),
                                           offsets or None)
            else:
                push_descriptors(cb)
            if push:
                values = vk.ffi.from_buffer(push)
                vk.vkCmdPushConstants(cb, layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push), values)
            vk.vkCmdDispatch(cb, *groups)
            # Make the shader's writes visible to the host's reads after the fence.
            barrier = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                                         dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)
            barriers = [barrier]
            vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT,
                                    0, 1, barriers, 0, None, 0, None)

        self._execute(record, submit_lock)

    def _execute(self, record: Callable[[object], None], submit_lock=None) -> None:
        """One command buffer, its commands recorded by `record(cb)`, submitted with a fence (under
        `submit_lock` where given); returns once the fence has signaled."""
        vk, device = self.vk, self.device
        alloc_info = vk.VkCommandBufferAllocateInfo(
            commandPool=self.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1)
        command_buffers = vk.vkAllocateCommandBuffers(device, alloc_info)
        cb = command_buffers[0]
        begin_info = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        vk.vkBeginCommandBuffer(cb, begin_info)
        record(cb)
        vk.vkEndCommandBuffer(cb)
        fence_info = vk.VkFenceCreateInfo()
        fence = vk.vkCreateFence(device, fence_info, None)
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=command_buffers)
        submits = [submit]
        with submit_lock or contextlib.nullcontext():
            vk.vkQueueSubmit(self.queue, 1, submits, fence)
        fences = [fence]
        vk.vkWaitForFences(device, 1, fences, vk.VK_TRUE, 10**10)
        vk.vkDestroyFence(device, fence, None)
        vk.vkFreeCommandBuffers(device, self.command_pool, 1, command_buffers)

    def _push_descriptors(self, layout: object, writes: list, template: object, template_data: object,
                          cb: object) -> None:
        """Record the push of set 0's descriptors into `cb`: `writes`, or `template` with its data."""
        vk = self.vk
        if template is None:
            push_set = vk.vkGetDeviceProcAddr(self.device, "vkCmdPushDescriptorSetKHR")
            push_set(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, len(writes), writes)
        else:
            push_template = vk.vkGetDeviceProcAddr(self.device, "vkCmdPushDescriptorSetWithTemplateKHR")
            push_template(cb, template, layout, 0, template_data)
