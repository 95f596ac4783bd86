"""Compute kernels for vkverify's tests and replays, with SPIR-V reflection.

Each kernel is `<name>.comp` (GLSL) beside its committed `<name>.spv`; its
numpy semantics are in `semantics.SEMANTICS`. Regenerate the SPIR-V with
`python -m vkverify.shaders build`. Nothing here imports Vulkan.
"""

from vkverify.shaders.library import (ATOMIC_KERNEL, IMAGE_KERNELS, SAMPLED_KERNELS, GenericPlan, Shader,
                                      binding_accesses, UNIFORM_KERNEL, generic_plan, interface, library, load_spirv,
                                      stream_accesses)
from vkverify.shaders.reflect import (
    BindingInfo,
    DescriptorType,
    PushField,
    ShaderInterface,
    SpirvError,
    pack_push,
    reflect,
)
from vkverify.shaders.semantics import SEMANTICS, atomic_addends, checksum, generic, generic_name, mix

__all__ = [
                                      "ATOMIC_KERNEL",
                                      "IMAGE_KERNELS",
                                      "SAMPLED_KERNELS",
                                      "SEMANTICS",
                                      "UNIFORM_KERNEL",
                                      "BindingInfo",
                                      "DescriptorType",
                                      "GenericPlan",
                                      "PushField",
                                      "Shader",
                                      "ShaderInterface",
                                      "SpirvError",
                                      "atomic_addends",
                                      "binding_accesses",
                                      "checksum",
                                      "generic",
                                      "generic_name",
                                      "generic_plan",
                                      "interface",
                                      "library",
                                      "load_spirv",
                                      "mix",
                                      "pack_push",
                                      "reflect",
                                      "stream_accesses",
]
