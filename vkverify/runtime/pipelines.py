"""Compute pipelines from the shader library or the program's own SPIR-V, and their descriptor sets.

Bindings are checked against the SPIR-V's reflected interface before any
Vulkan object is made (a pipeline that binds a different number of buffers
than the module declares is refused, as inference engines' Vulkan paths refuse it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..shaders import DescriptorType, ShaderInterface, interface, load_spirv
from ..shaders.reflect import reflect
from .errors import Unsupported

__all__ = ["ImageSlot", "Pipeline", "Pipelines"]

SETS_PER_POOL = 256


@dataclass(frozen=True)
class ImageSlot:
    """A storage image or combined image sampler descriptor's contents: the view, and the layout its subresources are
    in when it is used (a combined image sampler's sampler is Pipelines.sampler)."""
    view: object
    layout: int


DESCRIPTOR_TYPES = (DescriptorType.STORAGE_BUFFER, DescriptorType.UNIFORM_BUFFER, DescriptorType.STORAGE_IMAGE)
# The replay's sampled kernels (shaders.SAMPLED_KERNELS) bind a combined image sampler; a program's shaders may not.
KERNEL_DESCRIPTOR_TYPES = (*DESCRIPTOR_TYPES, DescriptorType.COMBINED_IMAGE_SAMPLER)


@dataclass(eq=False)
class Pipeline:
    name: str
    interface: ShaderInterface
    set_layout: object
    layout: object
    module: object
    handle: object


@dataclass(eq=False)
class Pipelines:
    device: object  # runtime.device.LogicalDevice
    by_name: dict[str, Pipeline] = field(default_factory=dict)
    own: dict[str, tuple[bytes, ShaderInterface]] = field(default_factory=dict)  # the program's shaders
    pools: list = field(default_factory=list)
    free_in_pool: int = 0
    _sampler: object = None

    @property
    def vk(self):
        return self.device.instance.vk

    def add(self, name: str, spirv: bytes) -> ShaderInterface:
        """The program's shader `name`: reflected now (SpirvError), made into a pipeline at first use."""
        self.own[name] = (spirv, reflect(spirv))
        return self.own[name][1]

    def get(self, name: str) -> Pipeline:
        if name not in self.by_name:
            self.by_name[name] = self._create(name)
        return self.by_name[name]

    def _create(self, name: str) -> Pipeline:
        vk, device = self.vk, self.device.handle
        spirv, shader = self.own[name] if name in self.own else (None, interface(name))
        allowed = DESCRIPTOR_TYPES if name in self.own else KERNEL_DESCRIPTOR_TYPES
        if any(b.set != 0 or b.descriptor_type not in allowed for b in shader.bindings):
            raise Unsupported(f"shader {name!r}: only set 0 storage/uniform buffers and storage images are supported")
        bindings = [vk.VkDescriptorSetLayoutBinding(
            binding=b.binding, descriptorType=_descriptor_type(vk, b.descriptor_type), descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b in shader.bindings]
        set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(bindings), pBindings=bindings)
        set_layout = vk.vkCreateDescriptorSetLayout(device, set_layout_info, None)  # vkCreateDescriptorSetLayout
        push_ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                              size=shader.push_constant_size)] if shader.push_constant_size else []
        set_layouts = [set_layout]
        layout_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=set_layouts,
                                                    pushConstantRangeCount=len(push_ranges),
                                                    pPushConstantRanges=push_ranges)
        layout = vk.vkCreatePipelineLayout(device, layout_info, None)  # vkCreatePipelineLayout
        spirv = spirv or load_spirv(name)
        module_info = vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv)
        module = vk.vkCreateShaderModule(device, module_info, None)  # vkCreateShaderModule
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                   pName=shader.entry_point)
        pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)
        handle = vk.vkCreateComputePipelines(device, None, 1, [pipeline_info], None)[0]  # vkCreateComputePipelines
        self.device.instance.name(device, vk.VK_OBJECT_TYPE_PIPELINE, handle, name)
        return Pipeline(name, shader, set_layout, layout, module, handle)

    def descriptor_set(self, pipeline: Pipeline, slots: list[tuple[object, int, int] | ImageSlot]):
        """A set for `pipeline` with slots[k] at binding k of the interface (binding order): (VkBuffer, offset, size)
        for a buffer, an ImageSlot for a storage image or a combined image sampler. Sets live until release."""
        vk, device = self.vk, self.device.handle
        if len(slots) != len(pipeline.interface.bindings):
            raise Unsupported(f"shader {pipeline.name!r} declares {len(pipeline.interface.bindings)} bindings, "
                              f"the dispatch binds {len(slots)}")
        if self.free_in_pool == 0:
            sizes = [vk.VkDescriptorPoolSize(type=_descriptor_type(vk, t), descriptorCount=SETS_PER_POOL * 8)
                     for t in KERNEL_DESCRIPTOR_TYPES]
            pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=SETS_PER_POOL, poolSizeCount=len(sizes), pPoolSizes=sizes)
            self.pools.append(vk.vkCreateDescriptorPool(device, pool_info, None))  # vkCreateDescriptorPool
            self.free_in_pool = SETS_PER_POOL
        set_layouts = [pipeline.set_layout]
        alloc_info = vk.VkDescriptorSetAllocateInfo(descriptorPool=self.pools[-1], descriptorSetCount=1,
                                                    pSetLayouts=set_layouts)
        descriptor_set = vk.vkAllocateDescriptorSets(device, alloc_info)[0]  # vkAllocateDescriptorSets
        self.free_in_pool -= 1
        infos = [{"pImageInfo": [vk.VkDescriptorImageInfo(
                     sampler=self.sampler() if info.descriptor_type == DescriptorType.COMBINED_IMAGE_SAMPLER else None,
                     imageView=slot.view, imageLayout=slot.layout)]}
                 if isinstance(slot, ImageSlot) else
                 {"pBufferInfo": [vk.VkDescriptorBufferInfo(buffer=slot[0], offset=slot[1], range=slot[2])]}
                 for info, slot in zip(pipeline.interface.bindings, slots)]
        writes = [vk.VkWriteDescriptorSet(dstSet=descriptor_set, dstBinding=info.binding, descriptorCount=1,
                                          descriptorType=_descriptor_type(vk, info.descriptor_type), **descriptor)
                  for info, descriptor in zip(pipeline.interface.bindings, infos)]
        vk.vkUpdateDescriptorSets(device, len(writes), writes, 0, None)  # vkUpdateDescriptorSets
        return descriptor_set

    def sampler(self):
        """The combined image samplers' VkSampler: the sampled kernels read with texelFetch, which filters nothing.
        Made at first use, destroyed at release."""
        if self._sampler is None:
            vk = self.vk
            info = vk.VkSamplerCreateInfo(magFilter=vk.VK_FILTER_NEAREST, minFilter=vk.VK_FILTER_NEAREST,
                                          mipmapMode=vk.VK_SAMPLER_MIPMAP_MODE_NEAREST)
            self._sampler = vk.vkCreateSampler(self.device.handle, info, None)  # vkCreateSampler
        return self._sampler

    def release(self) -> None:
        vk, device = self.vk, self.device.handle
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            vk.vkDestroySampler(device, sampler, None)  # vkDestroySampler
        pools, self.pools = self.pools, []
        for pool in pools:
            vk.vkDestroyDescriptorPool(device, pool, None)  # vkDestroyDescriptorPool
        pipelines, self.by_name = self.by_name, {}
        for p in pipelines.values():
            vk.vkDestroyPipeline(device, p.handle, None)  # vkDestroyPipeline
            vk.vkDestroyShaderModule(device, p.module, None)  # vkDestroyShaderModule
            vk.vkDestroyPipelineLayout(device, p.layout, None)  # vkDestroyPipelineLayout
            vk.vkDestroyDescriptorSetLayout(device, p.set_layout, None)  # vkDestroyDescriptorSetLayout


def _descriptor_type(vk, kind: DescriptorType) -> int:
    return getattr(vk, f"VK_DESCRIPTOR_TYPE_{kind.name}")
