"""A program of storage images, written with the `vulkan` package, for tests/test_import_images.py to capture.

It uploads 4x4 r32_uint texels from a buffer to image S, runs a compute shader that reads S (`readonly`) and writes
S + 1 to image D (`writeonly`), copies D back to a buffer, then clears S; layout transitions by sync1 image barriers
throughout, and a barrier to the host before the fence. S is bound by vkBindImageMemory, D by vkBindImageMemory2
(its requirements by vkGetImageMemoryRequirements2). With `--race` the barrier between the dispatch and the copy of
D is missing (D stays in `general`, which a copy may read); with `--template` the descriptors are written by a
descriptor update template, with `--push` pushed (vkCmdPushDescriptorSetKHR). Prints DIFFERS where the buffer does
not hold S + 1 (Lavapipe runs the dispatch and the copy in order all the same).

    python -m tests.storage_image_program [--race] [--template | --push]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from tests._lavapipe import ComputeDevice

SHADER = """#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(set = 0, binding = 0, r32ui) uniform readonly uimage2D S;
layout(set = 0, binding = 1, r32ui) uniform writeonly uimage2D D;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(D, p, imageLoad(S, p) + 1u);
}
"""
SIDE, TEXEL = 4, 4
SIZE = SIDE * SIDE * TEXEL


def spirv() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "shader.spv"
        subprocess.run(["glslangValidator", "-V", "--stdin", "-S", "comp", "-o", str(out)], input=SHADER,
                       text=True, check=True, capture_output=True)
        return out.read_bytes()


class Program(ComputeDevice):
    def image(self, version2: bool):
        """A 4x4 r32_uint image, bound to memory of its own (by vkGetImageMemoryRequirements2 and vkBindImageMemory2
        where `version2`), and its view."""
        vk = self.vk
        info = vk.VkImageCreateInfo(
            imageType=vk.VK_IMAGE_TYPE_2D, format=vk.VK_FORMAT_R32_UINT,
            extent=vk.VkExtent3D(width=SIDE, height=SIDE, depth=1), mipLevels=1, arrayLayers=1,
            samples=vk.VK_SAMPLE_COUNT_1_BIT, tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=vk.VK_IMAGE_USAGE_STORAGE_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
            vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED)
        image = vk.vkCreateImage(self.device, info, None)
        if version2:
            requirements = vk.vkGetImageMemoryRequirements2(
                self.device, vk.VkImageMemoryRequirementsInfo2(image=image)).memoryRequirements
        else:
            requirements = vk.vkGetImageMemoryRequirements(self.device, image)
        kind = next(i for i in range(32) if requirements.memoryTypeBits & (1 << i))
        alloc = vk.VkMemoryAllocateInfo(allocationSize=requirements.size, memoryTypeIndex=kind)
        memory = vk.vkAllocateMemory(self.device, alloc, None)
        if version2:
            binds = [vk.VkBindImageMemoryInfo(image=image, memory=memory, memoryOffset=0)]
            vk.vkBindImageMemory2(self.device, 1, binds)
        else:
            vk.vkBindImageMemory(self.device, image, memory, 0)
        whole = vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1,
                                           baseArrayLayer=0, layerCount=1)
        view_info = vk.VkImageViewCreateInfo(image=image, viewType=vk.VK_IMAGE_VIEW_TYPE_2D,
                                             format=vk.VK_FORMAT_R32_UINT, subresourceRange=whole)
        return image, memory, vk.vkCreateImageView(self.device, view_info, None)

    def barrier(self, cb, src_stage, dst_stage, images) -> None:
        """vkCmdPipelineBarrier of image barriers (image, src access, dst access, old layout, new layout)."""
        vk = self.vk
        whole = vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1,
                                           baseArrayLayer=0, layerCount=1)
        barriers = [vk.VkImageMemoryBarrier(
            srcAccessMask=src, dstAccessMask=dst, oldLayout=old, newLayout=new,
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            image=image, subresourceRange=whole) for image, src, dst, old, new in images]
        vk.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 0, None, 0, None, len(barriers), barriers)

    def main(self, race: bool, template: bool, push: bool) -> None:
        vk, device = self.vk, self.device
        values = np.arange(SIDE * SIDE, dtype=np.uint32)
        up, up_memory = self._buffer(values.tobytes(), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT)
        down, down_memory = self._buffer(bytes(SIZE), vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        (s, s_memory, s_view), (d, d_memory, d_view) = self.image(version2=False), self.image(version2=True)
        storage = vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
        layout_bindings = [vk.VkDescriptorSetLayoutBinding(binding=b, descriptorType=storage, descriptorCount=1,
                                                           stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                           for b in range(2)]
        set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
            flags=vk.VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR if push else 0, bindingCount=2,
            pBindings=layout_bindings)
        set_layout = vk.vkCreateDescriptorSetLayout(device, set_layout_info, None)
        set_layouts = [set_layout]
        layout_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=set_layouts)
        layout = vk.vkCreatePipelineLayout(device, layout_info, None)
        code = spirv()
        module_info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
        module = vk.vkCreateShaderModule(device, module_info, None)
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                   pName="main")
        pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)
        pipeline = vk.vkCreateComputePipelines(device, None, 1, [pipeline_info], None)[0]
        pool_sizes = [vk.VkDescriptorPoolSize(type=storage, descriptorCount=2)]
        pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=1, poolSizeCount=1, pPoolSizes=pool_sizes)
        pool = vk.vkCreateDescriptorPool(device, pool_info, None)
        alloc_info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1,
                                                    pSetLayouts=set_layouts)
        descriptor_set = None if push else vk.vkAllocateDescriptorSets(device, alloc_info)[0]
        infos = [[vk.VkDescriptorImageInfo(imageView=view, imageLayout=vk.VK_IMAGE_LAYOUT_GENERAL)]
                 for view in (s_view, d_view)]
        writes = [vk.VkWriteDescriptorSet(dstSet=descriptor_set or vk.VK_NULL_HANDLE, dstBinding=b, descriptorCount=1,
                                          descriptorType=storage, pImageInfo=info) for b, info in enumerate(infos)]
        # VkDescriptorImageInfo: {VkSampler sampler; VkImageView imageView; VkImageLayout imageLayout}, 24 bytes.
        data = vk.ffi.from_buffer(np.array([[0, int(vk.ffi.cast("uint64_t", view)), vk.VK_IMAGE_LAYOUT_GENERAL]
                                            for view in (s_view, d_view)], np.uint64).tobytes())
        entries = [vk.VkDescriptorUpdateTemplateEntry(dstBinding=0, descriptorCount=2, descriptorType=storage,
                                                      offset=0, stride=24)]
        template_info = vk.VkDescriptorUpdateTemplateCreateInfo(
            descriptorUpdateEntryCount=1, pDescriptorUpdateEntries=entries,
            templateType=vk.VK_DESCRIPTOR_UPDATE_TEMPLATE_TYPE_DESCRIPTOR_SET, descriptorSetLayout=set_layout)
        if template:  # two descriptors of binding 0's one go on into binding 1 (VkDescriptorUpdateTemplateEntry)
            update = vk.vkCreateDescriptorUpdateTemplate(device, template_info, None)
            vk.vkUpdateDescriptorSetWithTemplate(device, descriptor_set, update, data)
            vk.vkDestroyDescriptorUpdateTemplate(device, update, None)
        elif not push:  # pushed: recorded with the commands
            vk.vkUpdateDescriptorSets(device, len(writes), writes, 0, None)
        layers = vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, baseArrayLayer=0,
                                             layerCount=1)
        regions = [vk.VkBufferImageCopy(bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
                                        imageSubresource=layers, imageOffset=vk.VkOffset3D(x=0, y=0, z=0),
                                        imageExtent=vk.VkExtent3D(width=SIDE, height=SIDE, depth=1))]
        ranges = [vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1,
                                             baseArrayLayer=0, layerCount=1)]
        zero = vk.VkClearColorValue(uint32=[0, 0, 0, 0])
        general, undefined = vk.VK_IMAGE_LAYOUT_GENERAL, vk.VK_IMAGE_LAYOUT_UNDEFINED
        to_dst, to_src = vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
        transfer, compute = vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        write, read = vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT
        shader_read, shader_write = vk.VK_ACCESS_SHADER_READ_BIT, vk.VK_ACCESS_SHADER_WRITE_BIT
        sets = [descriptor_set]

        def record(cb) -> None:
            self.barrier(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, transfer | compute,
                         [(s, 0, write, undefined, to_dst), (d, 0, shader_write, undefined, general)])
            vk.vkCmdCopyBufferToImage(cb, up, s, to_dst, 1, regions)
            self.barrier(cb, transfer, compute, [(s, write, shader_read, to_dst, general)])
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            if push:
                push_set = vk.vkGetDeviceProcAddr(device, "vkCmdPushDescriptorSetKHR")
                push_set(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, len(writes), writes)
            else:
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, sets, 0, None)
            vk.vkCmdDispatch(cb, 1, 1, 1)
            if not race:
                self.barrier(cb, compute, transfer, [(d, shader_write, read, general, to_src)])
            vk.vkCmdCopyImageToBuffer(cb, d, general if race else to_src, down, 1, regions)
            self.barrier(cb, compute, transfer, [(s, shader_read, write, general, to_dst)])
            vk.vkCmdClearColorImage(cb, s, to_dst, zero, 1, ranges)
            host = [vk.VkMemoryBarrier(srcAccessMask=write, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)]
            vk.vkCmdPipelineBarrier(cb, transfer, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, host, 0, None, 0, None)

        self._execute(record)
        got = self.read(down_memory, SIZE, np.uint32)
        print("DIFFERS" if not (got == values + 1).all() else "ok")
        vk.vkDestroyDescriptorPool(device, pool, None)
        vk.vkDestroyPipeline(device, pipeline, None)
        vk.vkDestroyShaderModule(device, module, None)
        vk.vkDestroyPipelineLayout(device, layout, None)
        vk.vkDestroyDescriptorSetLayout(device, set_layout, None)
        for view, image, memory in ((s_view, s, s_memory), (d_view, d, d_memory)):
            vk.vkDestroyImageView(device, view, None)
            vk.vkDestroyImage(device, image, None)
            vk.vkFreeMemory(device, memory, None)
        for buffer, memory in ((up, up_memory), (down, down_memory)):
            vk.vkDestroyBuffer(device, buffer, None)
            vk.vkFreeMemory(device, memory, None)
        self.close()


if __name__ == "__main__":
    options = sys.argv[1:]
    Program(push_descriptors="--push" in options).main("--race" in options, "--template" in options,
                                                       "--push" in options)
