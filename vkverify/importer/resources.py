"""The Vulkan objects an import tracks: memory, buffers, descriptor sets, pipelines, shaders.

Handles are gfxrecon's capture ids: small integers, never reused within a
capture, so a handle names one object for the whole file.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..shaders import interface as library_interface
from ..shaders import library, load_spirv
from ..shaders.reflect import DescriptorType, ShaderInterface, SpirvError, push_loads, reflect, spec_constant_types
from ..shaders.specialize import specialize
from .encoded import TemplateData
from .flags import memory_kind

__all__ = ["PUSH_EVALUATIONS", "REMAINING", "WHOLE_SIZE", "CapturedBuffer", "CapturedImage", "Descriptor",
           "ImageDescriptor", "Memory", "Resources", "Specialization"]

WHOLE_SIZE = 2**64 - 1
REMAINING = 2**32 - 1  # VK_REMAINING_MIP_LEVELS, VK_REMAINING_ARRAY_LAYERS
# Descriptor type -> the binding access it fixes (None: the shader's). 7.7: a uniform buffer is read as UNIFORM_READ,
# a uniform texel buffer as SHADER_SAMPLED_READ, which SHADER_READ covers: of the format's accesses, a plain read.
BUFFER_DESCRIPTORS = {
    "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER": None, "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC": None,
    "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER": "uniform", "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC": "uniform",
    "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER": None, "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER": "read",
}
DYNAMIC = ("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC")
STORAGE_IMAGE = "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"  # its access is the shader's, over its view's subresources
# Images a shader samples: kept so that a dispatch reading a held image so says that read is missing.
SAMPLED_IMAGES = ("VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER")
# The descriptor types whose template data is a VkDescriptorImageInfo each (gfxrecon encodes them as one group).
IMAGE_INFO_DESCRIPTORS = ("VK_DESCRIPTOR_TYPE_SAMPLER", "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
                          "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", STORAGE_IMAGE, "VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT")
Specialization = tuple[tuple[int, bytes], ...]  # (constant id, its bytes) of a VkSpecializationInfo, by id
Push = tuple[tuple[int, bytes], ...]  # (offset, bytes) of the push-constant loads a branch depends on
# Distinct push-constant values a module is evaluated with (a spirv-opt run each); past that, every branch counts.
PUSH_EVALUATIONS = 16
GENERATED_ID = re.compile(r"(buf|mem|img)\d+(_\d+)?")  # the ids the import makes up; a debug name may not take one
BUFFER_BINDINGS = (DescriptorType.STORAGE_BUFFER, DescriptorType.UNIFORM_BUFFER,
                   DescriptorType.STORAGE_TEXEL_BUFFER, DescriptorType.UNIFORM_TEXEL_BUFFER)


@dataclass
class Memory:
    handle: int
    device: str
    size: int
    type_index: int
    physical: int | None
    host: int | None = None  # the host address it imports (VkImportMemoryHostPointerInfoEXT)
    declared: str | None = None  # the stream memory kind its debug name declares (see __init__.py)
    mapped: tuple[int, int] | None = None  # (offset, size) of the current mapping
    ever_mapped: bool = False
    buffers: list[int] = field(default_factory=list)
    live: dict[int, None] = field(default_factory=dict)  # those of `buffers` not destroyed, in bind order
    images: list[int] = field(default_factory=list)  # the images bound to it


@dataclass
class CapturedBuffer:
    handle: int
    id: str
    size: int
    exclusive: bool
    device: str
    usage: int = 0  # VkBufferUsageFlags
    memory: int | None = None
    offset: int = 0
    live: bool = True
    used: bool = False  # the stream refers to it: its id is fixed
    same: CapturedBuffer | None = None  # the buffer of another device over the same host bytes: one stream buffer

    def range(self, offset: int, size: int) -> tuple[int, int]:
        """(offset, size) within the buffer, VK_WHOLE_SIZE resolved and clipped to its end."""
        offset = min(offset, self.size)
        return offset, self.size - offset if size == WHOLE_SIZE else min(size, self.size - offset)


@dataclass
class CapturedImage:
    handle: int
    id: str
    extent: tuple[int, int, int]
    format: str | None  # the stream's name of its format; None: one the stream cannot hold
    mip_levels: int
    array_layers: int
    exclusive: bool
    device: str
    refused: str | None = None  # why the stream cannot hold it: its accesses are left out
    memory: int | None = None
    offset: int = 0  # in `memory`
    size: int | None = None  # of its memory requirements; None where the capture does not query them
    bound_at: int = 0  # the call index of its vkBindImageMemory
    used: bool = False  # the stream refers to it: its id is fixed

    def overlaps(self, offset: int, size: int) -> bool:
        """Whether its bytes in its memory meet [offset, offset + size) (all past its offset, size unknown)."""
        end = math.inf if self.size is None else self.offset + self.size
        return offset < end and self.offset < offset + size

    def subresources(self, r: dict) -> dict:
        """A VkImageSubresourceRange (or, with `mipLevel`, VkImageSubresourceLayers) as the stream's fields,
        VK_REMAINING_* resolved."""
        level = r.get("baseMipLevel", r.get("mipLevel", 0))
        levels = 1 if "mipLevel" in r else r["levelCount"]
        layer = r["baseArrayLayer"]
        return {"base_mip_level": level,
                "level_count": self.mip_levels - level if levels == REMAINING else levels,
                "base_array_layer": layer,
                "layer_count": self.array_layers - layer if r["layerCount"] == REMAINING else r["layerCount"]}


@dataclass(frozen=True, slots=True)
class ImageDescriptor:
    """A storage or sampled image descriptor: its view's image and subresource range (VkImageSubresourceRange)."""

    image: int | None  # None: an image no call of the capture creates
    subresources: tuple[tuple[str, int], ...]
    sampled: bool = False  # a sampled image's (or a combined image sampler's): a read the format has no access for
    refused: str | None = None  # why the format cannot hold its view


@dataclass(frozen=True, slots=True)
class Descriptor:
    buffer: int
    offset: int
    range: int
    access: str | None  # the access its type fixes (BUFFER_DESCRIPTORS), None: the shader's
    dynamic: bool


class Resources:
    def __init__(self, shader_dir: Path | None) -> None:
        self.shader_dir = shader_dir
        self.memory_types: dict[int, list[int]] = {}  # physical device -> propertyFlags per memory type
        self.memories: dict[int, Memory] = {}
        self.buffers: dict[int, CapturedBuffer] = {}
        self.host_buffers: dict[tuple[int, int], CapturedBuffer] = {}  # (host address, size) -> first buffer there
        self.twins: dict[int, list[CapturedBuffer]] = {}  # that first buffer -> the other devices' buffers there
        self.buffer_views: dict[int, tuple[int, int, int]] = {}  # view -> (buffer, offset, range)
        self.images: dict[int, CapturedImage] = {}
        self.image_views: dict[int, ImageDescriptor] = {}  # image view -> the descriptor of it
        self.set_layouts: dict[int, dict[int, tuple[str, int]]] = {}  # layout -> binding -> (type, count)
        self.set_layout_of: dict[int, int] = {}  # descriptor set -> its layout
        self.sets: dict[int, dict[tuple[int, int], Descriptor]] = {}  # set -> (binding, element) -> descriptor
        # Each (binding, element) and descriptor as one object, however many sets hold it: a program that
        # allocates a set per dispatch and frees them at its end (a decode does) holds tens of thousands of sets.
        self.interned: dict = {}
        self.unknown_sets: set[int] = set()  # sets written by a template whose data the capture lacks
        self.pool_sets: dict[int, list[int]] = {}  # descriptor pool -> the sets allocated from it
        self.pipeline_layouts: dict[int, list[int]] = {}  # pipeline layout -> its set layouts
        self.templates: dict[int, dict] = {}  # descriptor update template -> its VkDescriptorUpdateTemplateCreateInfo
        # compute pipeline -> (shader module, entry point, the values of its specialization constants: None
        # where the capture does not have them)
        self.pipelines: dict[int, tuple[int, str, Specialization | None]] = {}
        self._interfaces: dict[tuple[int, str, Specialization | None, Push], ShaderInterface | None] = {}
        self._deciding: dict[int, tuple[tuple[int, int], ...]] = {}  # module -> (offset, size) of branching loads
        self.push_evaluated: dict[int, set[Push]] = {}  # module -> the push values it was evaluated with
        self.push_capped: set[int] = set()  # modules dispatched with more distinct push values than evaluated
        self._kernels: dict[tuple[int, str], str | None] = {}
        self.shader_problems: dict[int, str] = {}  # module -> why its bindings are all taken as read_write
        self.unspecialized: dict[int, str] = {}  # module -> why a pipeline's constants were not applied to it

    # ---- memory ------------------------------------------------------------

    def kind(self, memory: Memory) -> str | None:
        """The declared kind, else the memory type's (None where the capture has no memory properties)."""
        if memory.declared is not None:
            return memory.declared
        types = self.memory_types.get(memory.physical)
        if types is None or memory.type_index >= len(types):
            return None
        kind = memory_kind(types[memory.type_index])
        # Imported host memory is the host's, whatever else its type serves: the device reaches it over the bus.
        return "host_coherent" if memory.host is not None and kind == "device_host_visible" else kind

    def buffers_over(self, memory: Memory, offset: int, size: int):
        """(buffer, offset in it, size) for each live buffer bound to `memory` overlapping [offset, offset+size)."""
        for handle in memory.live:  # a long run binds thousands of buffers in turn to one memory
            buf = self.buffers[handle]
            lo, hi = max(offset, buf.offset), min(offset + size, buf.offset + buf.size)
            if lo < hi:
                buf.used = True
                yield buf, lo - buf.offset, hi - lo

    def bind(self, buf: CapturedBuffer, memory: Memory, offset: int) -> None:
        buf.memory, buf.offset = memory.handle, offset
        memory.buffers.append(buf.handle)
        memory.live[buf.handle] = None
        if memory.host is not None:  # host bytes another device's buffer may import too
            first = self.host_buffers.setdefault((memory.host + offset, buf.size), buf)
            if first is not buf:
                buf.same, buf.id = first, first.id
                self.twins.setdefault(first.handle, []).append(buf)

    def sharing(self, buf: CapturedBuffer) -> list[CapturedBuffer]:
        """`buf` and the buffers of other devices over the same host bytes, the one the stream lists first."""
        first = buf.same or buf
        return [first, *self.twins.get(first.handle, ())]

    def name_buffer(self, buf: CapturedBuffer, name: str) -> None:
        """The program's debug name becomes the buffer's id (of every device's buffer over its host bytes),
        unless the stream already refers to the buffer, another buffer has that id, or it is of the form of
        the ids the import makes up."""
        group = self.sharing(buf)
        handles = {b.handle for b in group}  # not `in group`: a dataclass's == compares every field
        if not any(b.used for b in group) and not GENERATED_ID.fullmatch(name) and \
                all(b.id != name for b in self.buffers.values() if b.handle not in handles) and \
                all(i.id != name for i in self.images.values()):
            for b in group:
                b.id = name

    def name_image(self, image: CapturedImage, name: str) -> None:
        """The program's debug name becomes the image's id, on name_buffer's terms (no buffer's id either)."""
        if not image.used and not GENERATED_ID.fullmatch(name) and \
                all(i.id != name for i in self.images.values() if i is not image) and \
                all(b.id != name for b in self.buffers.values()):
            image.id = name

    # ---- descriptors -------------------------------------------------------

    def write_descriptors(self, write: dict) -> None:
        """One VkWriteDescriptorSet; descriptors past a binding's count go on into the next binding."""
        kind = write["descriptorType"]
        if kind not in BUFFER_DESCRIPTORS and kind != STORAGE_IMAGE and kind not in SAMPLED_IMAGES:
            return
        if kind == STORAGE_IMAGE or kind in SAMPLED_IMAGES:  # a view the capture does not create is no descriptor
            infos = [self.image_views.get(i["imageView"]) for i in write.get("pImageInfo") or []]
        elif kind.endswith("TEXEL_BUFFER"):
            infos = [self.buffer_views.get(v) for v in write.get("pTexelBufferView") or []]
            infos = [None if v is None else {"buffer": v[0], "offset": v[1], "range": v[2]} for v in infos]
        else:
            infos = write.get("pBufferInfo") or []
        contents = self.sets.setdefault(write["dstSet"], {})
        layout = self.set_layouts.get(self.set_layout_of.get(write["dstSet"]), {})
        binding, element = write["dstBinding"], write["dstArrayElement"]
        for info in infos:
            while binding in layout and element >= layout[binding][1]:
                binding, element = binding + 1, 0
            if info is not None:
                where = (binding, element)
                if kind == STORAGE_IMAGE:
                    found = info
                elif kind in SAMPLED_IMAGES:
                    found = replace(info, sampled=True)
                else:
                    fields = (info["buffer"], info["offset"], info["range"], BUFFER_DESCRIPTORS[kind],
                              kind in DYNAMIC)
                    found = self.interned.get(fields)  # by its fields' tuple: a dataclass's hash and == are Python's
                    if found is None:
                        found = self.interned[fields] = Descriptor(*fields)
                contents[self.interned.setdefault(where, where)] = found
            element += 1

    def free_sets(self, sets: list[int]) -> None:
        """Forget freed descriptor sets: a long run allocates a set per dispatch, from pools it destroys."""
        for descriptor_set in sets:
            self.sets.pop(descriptor_set, None)
            self.set_layout_of.pop(descriptor_set, None)
            self.unknown_sets.discard(descriptor_set)

    def write_template(self, descriptor_set: int, template: int, data: TemplateData) -> None:
        """A descriptor update template's data, as VkWriteDescriptorSets: each buffer entry takes its
        descriptorCount of the data's buffer infos in turn, each texel buffer entry its views, each image entry
        (a storage image's, or another kind's, passed over) its image infos."""
        buffers, views, images = iter(data.buffers), iter(data.texel_buffer_views), iter(data.image_views)
        for entry in self.templates.get(template, {}).get("pDescriptorUpdateEntries") or ():
            kind, count = entry["descriptorType"], entry["descriptorCount"]
            write = {"descriptorType": kind, "dstSet": descriptor_set, "dstBinding": entry["dstBinding"],
                     "dstArrayElement": entry["dstArrayElement"]}
            if kind in IMAGE_INFO_DESCRIPTORS:
                write["pImageInfo"] = [{"imageView": next(images)} for _ in range(count)]
            elif kind.endswith("TEXEL_BUFFER"):
                write["pTexelBufferView"] = [next(views) for _ in range(count)]
            elif kind in BUFFER_DESCRIPTORS:
                write["pBufferInfo"] = [dict(zip(("buffer", "offset", "range"), next(buffers))) for _ in range(count)]
            else:
                continue
            self.write_descriptors(write)

    def copy_descriptors(self, copy: dict) -> None:
        src, dst = self.sets.get(copy["srcSet"], {}), self.sets.setdefault(copy["dstSet"], {})
        for i in range(copy["descriptorCount"]):
            found = src.get((copy["srcBinding"], copy["srcArrayElement"] + i))
            if found is not None:
                dst[copy["dstBinding"], copy["dstArrayElement"] + i] = found

    def dynamic_slots(self, descriptor_set: int) -> list[tuple[int, int]]:
        """The (binding, element) that each dynamic offset applies to, in the order vkCmdBindDescriptorSets takes
        them."""
        layout = self.set_layouts.get(self.set_layout_of.get(descriptor_set), {})
        return [(b, e) for b, (kind, count) in sorted(layout.items()) if kind in DYNAMIC for e in range(count)]

    # ---- shaders -----------------------------------------------------------

    def interface(self, module: int, entry: str, specialization: Specialization | None,
                  push: bytes | None = None) -> ShaderInterface | None:
        """The entry point's reflected interface as a dispatch runs it: with `specialization` applied (the
        constants it leaves out at their defaults) and the loads of the push-constant bytes `push` (the
        dispatch's; None where unknown) that decide branches frozen; every branch counting where the
        constants are unknown (None) or spirv-opt cannot apply them (reason in unspecialized). None (reason
        in shader_problems) without usable SPIR-V."""
        frozen = self._push(module, push)
        key = (module, entry, specialization, frozen)
        if key not in self._interfaces:  # the path made only here: per dispatch, it was a tenth of a decode's walk
            self._interfaces[key] = None
            path = self._spirv(module)
            if path is None or not path.exists():
                self.shader_problems[module] = "no SPIR-V (gfxrecon-extract output) for it"
                return None
            spirv = path.read_bytes()
            try:
                constants = spec_constant_types(spirv)
                # Constants whose values are unknown (None) would be frozen at their defaults: nothing is then.
                if (specialization is not None or not constants) and (constants or frozen):
                    spirv = specialize(spirv, dict(specialization or ()), dict(frozen))
            except SpirvError as e:
                self.unspecialized[module] = str(e)
            try:
                self._interfaces[key] = reflect(spirv, entry)
            except SpirvError as e:
                self.shader_problems[module] = f"its SPIR-V does not reflect: {e}"
        return self._interfaces[key]

    def _spirv(self, module: int) -> Path | None:
        """Where gfxrecon-extract wrote the module's SPIR-V, if it ran."""
        return None if self.shader_dir is None else self.shader_dir / f"sh{module}"

    def _push(self, module: int, push: bytes | None) -> Push:
        """The (offset, bytes) of `push` that the module's push-constant loads deciding a branch read: the
        values its dispatch is evaluated with; () where none is known, or past PUSH_EVALUATIONS distinct ones."""
        if push is None:
            return ()
        if module not in self._deciding:
            path = self._spirv(module)
            try:
                loads = push_loads(path.read_bytes(), branching=True) if path is not None and path.exists() else ()
            except SpirvError:
                loads = ()
            self._deciding[module] = tuple(sorted({(load.offset, load.size) for load in loads}))
        frozen = tuple((at, push[at:at + n]) for at, n in self._deciding[module] if at + n <= len(push))
        seen = self.push_evaluated.setdefault(module, set())
        if not frozen:
            return ()
        if frozen not in seen and len(seen) >= PUSH_EVALUATIONS:
            self.push_capped.add(module)
            return ()
        seen.add(frozen)
        return frozen

    def library_kernel(self, module: int, entry: str) -> str | None:
        """The library kernel whose committed SPIR-V the module's is, word for word: a dispatch of it is
        replayed by that kernel (with the captured push constants) rather than as an abstract shader."""
        key = (module, entry)
        if key not in self._kernels:
            path = self._spirv(module)
            name = None if path is None or not path.exists() else \
                _library_digests().get(hashlib.sha256(path.read_bytes()).digest())
            self._kernels[key] = name if name is not None and library_interface(name).entry_point == entry else None
        return self._kernels[key]

    def layout_count(self, descriptor_set: int, binding: int) -> int:
        return self.set_layouts.get(self.set_layout_of.get(descriptor_set), {}).get(binding, ("", 1))[1]


@functools.cache
def _library_digests() -> dict[bytes, str]:
    return {hashlib.sha256(load_spirv(name)).digest(): name for name in library()}
