"""The shader library: every kernel's SPIR-V, reflected interface and numpy
semantics, by name."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from vkverify.shaders.reflect import DescriptorType, ShaderInterface, reflect
from vkverify.shaders.semantics import SEMANTICS, Semantics, generic_name

__all__ = ["ATOMIC_KERNEL", "IMAGE_KERNELS", "SAMPLED_KERNELS", "SHADER_DIR", "UNIFORM_KERNEL", "GenericPlan", "Shader",
           "binding_accesses", "generic_plan", "interface", "library", "load_spirv", "stream_accesses"]

SHADER_DIR = Path(__file__).parent


@dataclass(frozen=True)
class Shader:
    name: str
    spv_path: Path
    interface: ShaderInterface
    semantics: Semantics | None  # None: a replay's kernel (IMAGE_KERNELS, UNIFORM_KERNEL)


# The replay's storage image kernels (image.glsl), (load, store) by whether the image is 3D and the u32 words of its
# texel block (1, 2, 4): one mip level of an abstract shader's storage image binding to u32 words of a buffer and
# back, in the model's linear layout; and its uniform kernel, which reads a uniform binding as a uniform buffer into
# words of a buffer. They are not dispatched by streams (no numpy semantics): the simulator reads and writes a
# binding's bytes directly. SAMPLED_KERNELS read a sampled binding (a combined image sampler) as IMAGE_KERNELS' loads
# read a storage one.
IMAGE_KERNELS = {(volume, words): tuple(f"image_{kind}{'_3d' * volume}{f'_w{words}' * (words > 1)}"
                                        for kind in ("load", "store"))
                 for volume in (False, True) for words in (1, 2, 4)}
SAMPLED_KERNELS = {(volume, words): f"sampled_load{'_3d' * volume}{f'_w{words}' * (words > 1)}"
                   for volume in (False, True) for words in (1, 2, 4)}
UNIFORM_KERNEL = "uniform_load"
_REPLAY_KERNELS = frozenset({UNIFORM_KERNEL, *SAMPLED_KERNELS.values(),
                             *(k for pair in IMAGE_KERNELS.values() for k in pair)})


@functools.cache
def library() -> Mapping[str, Shader]:
    """Every library shader by name (those with numpy semantics)."""
    shaders = {}
    for name, semantics in sorted(SEMANTICS.items()):
        path = SHADER_DIR / f"{name}.spv"
        shaders[name] = Shader(name, path, reflect(path.read_bytes()), semantics)
    return MappingProxyType(shaders)


@functools.cache
def _replay_kernel(name: str) -> Shader:
    path = SHADER_DIR / f"{name}.spv"
    return Shader(name, path, reflect(path.read_bytes()), None)


def _get(name: str) -> Shader:
    if name in _REPLAY_KERNELS:
        return _replay_kernel(name)
    try:
        return library()[name]
    except KeyError:
        raise KeyError(f"no shader {name!r} in the library (have {', '.join(library())})") from None


def load_spirv(name: str) -> bytes:
    return _get(name).spv_path.read_bytes()


def interface(name: str) -> ShaderInterface:
    return _get(name).interface



@functools.cache  # the loader asks once per dispatch: a long run's stream holds hundreds of thousands
def binding_accesses(name: str) -> tuple[str, ...] | None:
    """Per binding (in binding order), the stream format's access for a library shader, from its
    reflected SPIR-V; None when the library has no such shader."""
    return stream_accesses(interface(name)) if name in library() else None


def stream_accesses(shader: ShaderInterface) -> tuple[str, ...]:
    """Per binding (in binding order), the stream format's access a reflected interface makes."""
    return tuple("uniform" if b.descriptor_type == DescriptorType.UNIFORM_BUFFER else b.access
                 for b in sorted(shader.bindings, key=lambda b: (b.set, b.binding)))

ATOMIC_KERNEL = "atomic_add"  # runs one atomic binding of an abstract shader: push = [ref, u32 words]


@dataclass(frozen=True)
class GenericPlan:
    """How to run an abstract shader on the library's kernels.

    `name` is the generic kernel of the plain bindings, None where every
    binding is atomic. Its binding k < len(read_slots) is the stream binding
    read_slots[k]; its binding len(read_slots) + k is write_slots[k]
    (indices into the dispatch's `bindings` list, in stream order). A
    read_write stream binding is in both lists. The kernel reads its inputs
    while other workgroups already write, so a replay must not bind one
    buffer range to both: it copies the range to a scratch buffer first
    (copy, then a transfer_write -> shader_storage_read barrier) and binds the
    scratch at the read slot and the original at the write slot. The result
    is what `semantics.generic` gives for the contents before the dispatch.
    Push constants: [ref, u32 words of kernel binding 0, 1, ...].

    Each stream binding in `atomic_slots` runs ATOMIC_KERNEL once, at the
    same place and with no barrier between the dispatches: its atomics
    commute with each other and the generic kernel never reads an atomic
    binding (docs/format.md, "Abstract shaders").
    """

    name: str | None
    read_slots: tuple[int, ...]
    write_slots: tuple[int, ...]
    atomic_slots: tuple[int, ...] = ()


def generic_plan(accesses: Sequence[str]) -> GenericPlan:
    """The plan for an abstract shader whose bindings have `accesses`
    ("read", "write", "read_write", "atomic"; "uniform" and "sampled" count as read). ValueError where no generic kernel
    runs the plain bindings (more than 4 read or written). A dispatch that writes no plain binding still reads
    its inputs (the accesses a replay is checked by): its generic kernel has one written binding more than
    `write_slots`, which the replay binds to a scratch word."""
    reads = tuple(i for i, a in enumerate(accesses) if a in ("read", "read_write", "uniform", "sampled"))
    writes = tuple(i for i, a in enumerate(accesses) if a in ("write", "read_write"))
    atomics = tuple(i for i, a in enumerate(accesses) if a == "atomic")
    name = generic_name(len(reads), max(len(writes), 1)) if reads or writes or not atomics else None
    return GenericPlan(name, reads, writes, atomics)
