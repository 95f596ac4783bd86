"""SPIR-V reflection: the resource interface of one entry point.

Pure Python over the binary's words (SPIR-V spec, 2.3 "Physical Layout" and
3 "Binary Form"); only what vkverify needs: descriptor bindings with their
read/write use, the push-constant block and the local size. A buffer's use
is what the code does with it (`uses`), within what its NonWritable /
NonReadable decorations guarantee.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from ..errors import VkverifyError
from .uses import ATOMIC, PLAIN, READ, WRITE, Instruction, branch_sources, variable_uses

__all__ = [
    "MAGIC",
    "BindingInfo",
    "DescriptorType",
    "PushField",
    "PushLoad",
    "ShaderInterface",
    "SpirvError",
    "pack_push",
    "push_loads",
    "reflect",
    "spec_constant_types",
    "unpack_push",
]

MAGIC = 0x07230203

# Opcodes (spec 3.49).
_OP_ENTRY_POINT = 15
_OP_EXECUTION_MODE = 16
_OP_TYPE_BOOL = 20
_OP_TYPE_INT = 21
_OP_TYPE_FLOAT = 22
_OP_TYPE_VECTOR = 23
_OP_TYPE_MATRIX = 24
_OP_TYPE_IMAGE = 25
_OP_TYPE_SAMPLER = 26
_OP_TYPE_SAMPLED_IMAGE = 27
_OP_TYPE_ARRAY = 28
_OP_TYPE_RUNTIME_ARRAY = 29
_OP_TYPE_STRUCT = 30
_OP_TYPE_POINTER = 32
_OP_CONSTANT = 43
_OP_CONSTANT_COMPOSITE = 44
_OP_SPEC_CONSTANT_TRUE = 48
_OP_SPEC_CONSTANT = 50
_OP_SPEC_CONSTANT_COMPOSITE = 51
_OP_FUNCTION = 54
_OP_VARIABLE = 59
_OP_LOAD = 61
_OP_ACCESS_CHAIN = 65
_OP_IN_BOUNDS_ACCESS_CHAIN = 66
_OP_DECORATE = 71
_OP_MEMBER_DECORATE = 72
_OP_EXECUTION_MODE_ID = 331
_OP_TYPE_ACCELERATION_STRUCTURE = 5341

# Decorations (3.20), storage classes (3.7), execution modes (3.6).
_SPEC_ID = 1
_BUFFER_BLOCK = 3
_ARRAY_STRIDE = 6
_MATRIX_STRIDE = 7
_BUILT_IN = 11
_NON_WRITABLE = 24
_NON_READABLE = 25
_BINDING = 33
_DESCRIPTOR_SET = 34
_OFFSET = 35
_BUILT_IN_WORKGROUP_SIZE = 25
_UNIFORM_CONSTANT = 0
_UNIFORM = 2
_PUSH_CONSTANT = 9
_STORAGE_BUFFER = 12
_LOCAL_SIZE = 17
_LOCAL_SIZE_ID = 38
_DIM_BUFFER = 5
_VERSION_1_4 = 0x00010400


class SpirvError(VkverifyError, ValueError):
    """The bytes are not SPIR-V that this reflector can read.

    Seen by whoever hands the shader library a shader binary: a corrupt or
    truncated file, or an entry point that is not in the module.
    """


class DescriptorType(StrEnum):
    STORAGE_BUFFER = "storage_buffer"
    UNIFORM_BUFFER = "uniform_buffer"
    STORAGE_IMAGE = "storage_image"
    SAMPLED_IMAGE = "sampled_image"
    STORAGE_TEXEL_BUFFER = "storage_texel_buffer"
    UNIFORM_TEXEL_BUFFER = "uniform_texel_buffer"
    SAMPLER = "sampler"
    COMBINED_IMAGE_SAMPLER = "combined_image_sampler"
    ACCELERATION_STRUCTURE = "acceleration_structure"


@dataclass(frozen=True)
class BindingInfo:
    """One descriptor binding. `count` is the descriptor array length (1 for
    a plain variable, 0 for a runtime-sized array). A storage or uniform
    buffer is readable when the entry point's code reads its memory and it is
    not NonReadable, writable when the code writes it and it is not
    NonWritable: a binding the code does not touch is neither. Images and
    texel buffers are reached through loaded image objects, not pointers:
    those go by their decorations only (writable unless NonWritable, readable
    unless NonReadable)."""

    set: int
    binding: int
    descriptor_type: DescriptorType
    count: int
    readable: bool
    writable: bool
    atomic: bool = False  # read and written by atomic instructions (OpAtomic*) only

    @property
    def access(self) -> str:
        """The stream format's access name: read, write, read_write, atomic (or none)."""
        if self.atomic and self.readable and self.writable:
            return "atomic"
        return {(True, False): "read", (False, True): "write",
                (True, True): "read_write", (False, False): "none"}[self.readable, self.writable]


@dataclass(frozen=True)
class PushField:
    """One scalar of the push-constant block, at a byte offset; `scalar` is
    u32, i32, f32 (or another width: u16, f64, ...). Arrays, vectors and
    matrices are flattened in memory order."""

    offset: int
    scalar: str


@dataclass(frozen=True)
class PushLoad:
    """An OpLoad of one scalar or vector of the push-constant block through an access chain of constant
    indices: its result id, its type's id, the scalar type's id, the scalars it reads and their bytes
    [offset, offset + size) of the block."""

    result: int
    type_id: int
    scalar_type: int
    fields: tuple[PushField, ...]
    offset: int
    size: int


@dataclass(frozen=True)
class ShaderInterface:
    entry_point: str
    local_size: tuple[int, int, int] | None
    bindings: tuple[BindingInfo, ...]
    push_constant_size: int
    push_fields: tuple[PushField, ...]

    def binding(self, binding: int, set: int = 0) -> BindingInfo:
        for info in self.bindings:
            if (info.set, info.binding) == (set, binding):
                return info
        raise KeyError(f"no binding {binding} in set {set}")


def _words(data: bytes) -> tuple[int, ...]:
    if len(data) % 4:
        raise SpirvError(f"SPIR-V length {len(data)} is not a multiple of 4 bytes")
    if len(data) < 20:
        raise SpirvError(f"SPIR-V too short for its 5-word header ({len(data)} bytes)")
    for order in "<>":
        if struct.unpack_from(order + "I", data)[0] == MAGIC:
            return struct.unpack(f"{order}{len(data) // 4}I", data)
    raise SpirvError(f"bad SPIR-V magic 0x{struct.unpack_from('<I', data)[0]:08x} "
                     f"(expected 0x{MAGIC:08x})")


def _string(words: tuple[int, ...]) -> tuple[str, int]:
    """A literal string and the number of words it takes."""
    raw = struct.pack(f"<{len(words)}I", *words)
    end = raw.find(b"\0")
    if end < 0:
        raise SpirvError("unterminated literal string")
    return raw[:end].decode("utf-8", "replace"), end // 4 + 1


class _Module:
    def __init__(self, data: bytes):
        words = _words(data)
        self.version = words[1]
        self.entry_points: dict[str, tuple[int, tuple[int, ...]]] = {}
        self.modes: dict[tuple[int, int], tuple[int, ...]] = {}
        self.types: dict[int, tuple[int, tuple[int, ...]]] = {}
        self.constants: dict[int, int] = {}
        self.composites: dict[int, tuple[int, ...]] = {}
        self.spec_types: dict[int, int] = {}  # scalar specialization constant -> its type
        self.variables: dict[int, tuple[int, int]] = {}
        self.decorations: dict[int, dict[int, tuple[int, ...]]] = {}
        self.member_decorations: dict[tuple[int, int], dict[int, tuple[int, ...]]] = {}
        self.code: list[Instruction] = []  # the functions' instructions, from the first OpFunction on
        at = 5
        while at < len(words):
            count, opcode = words[at] >> 16, words[at] & 0xFFFF
            if count == 0 or at + count > len(words):
                raise SpirvError(f"truncated or malformed instruction at word {at} "
                                 f"(opcode {opcode}, {count} words, {len(words) - at} left)")
            self._add(opcode, words[at + 1:at + count])
            at += count

    def _add(self, opcode: int, ops: tuple[int, ...]) -> None:
        if self.code or opcode == _OP_FUNCTION:
            self.code.append((opcode, ops))
        elif opcode == _OP_ENTRY_POINT:
            name, used = _string(ops[2:])
            self.entry_points[name] = (ops[1], ops[2 + used:])
        elif opcode in (_OP_EXECUTION_MODE, _OP_EXECUTION_MODE_ID):
            self.modes[ops[0], ops[1]] = ops[2:]
        elif _OP_TYPE_BOOL <= opcode <= _OP_TYPE_POINTER or opcode == _OP_TYPE_ACCELERATION_STRUCTURE:
            self.types[ops[0]] = (opcode, ops[1:])
        elif _OP_SPEC_CONSTANT_TRUE <= opcode <= _OP_SPEC_CONSTANT:  # OpSpecConstantTrue, False, OpSpecConstant
            self.spec_types[ops[1]] = ops[0]
            if opcode == _OP_SPEC_CONSTANT:
                self.constants[ops[1]] = ops[2]
        elif opcode == _OP_CONSTANT:
            self.constants[ops[1]] = ops[2]
        elif opcode in (_OP_CONSTANT_COMPOSITE, _OP_SPEC_CONSTANT_COMPOSITE):
            self.composites[ops[1]] = ops[2:]
        elif opcode == _OP_VARIABLE:
            self.variables[ops[1]] = (ops[0], ops[2])
        elif opcode == _OP_DECORATE:
            self.decorations.setdefault(ops[0], {})[ops[1]] = ops[2:]
        elif opcode == _OP_MEMBER_DECORATE:
            self.member_decorations.setdefault((ops[0], ops[1]), {})[ops[2]] = ops[3:]

    def type(self, type_id: int) -> tuple[int, tuple[int, ...]]:
        try:
            return self.types[type_id]
        except KeyError:
            raise SpirvError(f"id {type_id} is used as a type but declares none") from None

    def constant(self, const_id: int) -> int:
        try:
            return self.constants[const_id]
        except KeyError:
            raise SpirvError(f"id {const_id} is used as a constant but declares none") from None

    def decorated(self, target: int, decoration: int) -> bool:
        return decoration in self.decorations.get(target, {})

    def struct_members_all(self, struct_id: int, decoration: int) -> bool:
        opcode, members = self.type(struct_id)
        return opcode == _OP_TYPE_STRUCT and bool(members) and all(
            decoration in self.member_decorations.get((struct_id, m), {})
            for m in range(len(members)))


def _local_size(module: _Module, function: int) -> tuple[int, int, int] | None:
    for target, values in module.decorations.items():
        builtin = values.get(_BUILT_IN)
        if builtin == (_BUILT_IN_WORKGROUP_SIZE,) and target in module.composites:
            x, y, z = (module.constant(c) for c in module.composites[target])
            return x, y, z
    if (function, _LOCAL_SIZE) in module.modes:
        x, y, z = module.modes[function, _LOCAL_SIZE]
        return x, y, z
    if (function, _LOCAL_SIZE_ID) in module.modes:
        x, y, z = (module.constant(c) for c in module.modes[function, _LOCAL_SIZE_ID])
        return x, y, z
    return None


def _descriptor(module: _Module, var: int, storage: int, type_id: int, used: int) -> BindingInfo | None:
    """used: the READ | WRITE flags of the variable's uses in the entry point's code."""
    count = 1
    opcode, ops = module.type(type_id)
    if opcode == _OP_TYPE_ARRAY:
        count, (opcode, ops), type_id = module.constant(ops[1]), module.type(ops[0]), ops[0]
    elif opcode == _OP_TYPE_RUNTIME_ARRAY:
        count, (opcode, ops), type_id = 0, module.type(ops[0]), ops[0]
    if storage == _STORAGE_BUFFER or (storage == _UNIFORM and module.decorated(type_id, _BUFFER_BLOCK)):
        kind = DescriptorType.STORAGE_BUFFER
    elif storage == _UNIFORM:
        kind = DescriptorType.UNIFORM_BUFFER
    elif opcode == _OP_TYPE_IMAGE:
        storage_image, texel = ops[5] == 2, ops[1] == _DIM_BUFFER
        kind = {(True, False): DescriptorType.STORAGE_IMAGE,
                (True, True): DescriptorType.STORAGE_TEXEL_BUFFER,
                (False, False): DescriptorType.SAMPLED_IMAGE,
                (False, True): DescriptorType.UNIFORM_TEXEL_BUFFER}[storage_image, texel]
    elif opcode == _OP_TYPE_SAMPLER:
        kind = DescriptorType.SAMPLER
    elif opcode == _OP_TYPE_SAMPLED_IMAGE:
        kind = DescriptorType.COMBINED_IMAGE_SAMPLER
    elif opcode == _OP_TYPE_ACCELERATION_STRUCTURE:
        kind = DescriptorType.ACCELERATION_STRUCTURE
    else:
        return None
    may_write = kind in (DescriptorType.STORAGE_BUFFER, DescriptorType.STORAGE_IMAGE,
                         DescriptorType.STORAGE_TEXEL_BUFFER)
    if kind not in (DescriptorType.STORAGE_BUFFER, DescriptorType.UNIFORM_BUFFER):
        used = READ | WRITE

    def proven(decoration: int) -> bool:
        return module.decorated(var, decoration) or module.struct_members_all(type_id, decoration)

    decorations = module.decorations.get(var, {})
    return BindingInfo(
        set=decorations.get(_DESCRIPTOR_SET, (0,))[0],
        binding=decorations.get(_BINDING, (0,))[0],
        descriptor_type=kind,
        count=count,
        readable=bool(used & READ) and not proven(_NON_READABLE),
        writable=may_write and bool(used & WRITE) and not proven(_NON_WRITABLE),
        atomic=bool(used & ATOMIC) and not used & PLAIN,
    )


def _fields(module: _Module, type_id: int, offset: int, matrix_stride: int | None) -> tuple[list[PushField], int]:
    """The scalars of a push-constant member and the bytes it spans."""
    opcode, ops = module.type(type_id)
    if opcode in (_OP_TYPE_INT, _OP_TYPE_FLOAT):
        prefix = "f" if opcode == _OP_TYPE_FLOAT else "i" if ops[1] else "u"
        return [PushField(offset, f"{prefix}{ops[0]}")], ops[0] // 8
    if opcode == _OP_TYPE_VECTOR:
        size = _fields(module, ops[0], offset, None)[1]
        return [_fields(module, ops[0], offset + k * size, None)[0][0] for k in range(ops[1])], ops[1] * size
    if opcode in (_OP_TYPE_ARRAY, _OP_TYPE_MATRIX):
        length = module.constant(ops[1]) if opcode == _OP_TYPE_ARRAY else ops[1]
        stride = (module.decorations.get(type_id, {}).get(_ARRAY_STRIDE, (None,))[0]
                  if opcode == _OP_TYPE_ARRAY else matrix_stride)
        if stride is None:
            raise SpirvError(f"push-constant array or matrix {type_id} has no stride")
        out = []
        for k in range(length):
            out += _fields(module, ops[0], offset + k * stride, matrix_stride)[0]
        return out, length * stride
    if opcode == _OP_TYPE_STRUCT:
        out, end = [], 0
        for member, member_type in enumerate(ops):
            decorations = module.member_decorations.get((type_id, member), {})
            if _OFFSET not in decorations:
                raise SpirvError(f"push-constant struct {type_id} member {member} has no Offset")
            start = offset + decorations[_OFFSET][0]
            leaves, size = _fields(module, member_type, start,
                                   decorations.get(_MATRIX_STRIDE, (None,))[0])
            out += leaves
            end = max(end, start + size - offset)
        return out, end
    raise SpirvError(f"unsupported push-constant member type (opcode {opcode})")


def reflect(spirv: bytes, entry_point: str | None = None) -> ShaderInterface:
    """The interface of `entry_point` (default: the module's only one).

    Before SPIR-V 1.4 an entry point's interface lists only its inputs and
    outputs, so every resource variable of the module is attributed to it;
    from 1.4 on, only those it lists.
    """
    module = _Module(spirv)
    if entry_point is None:
        if len(module.entry_points) != 1:
            raise SpirvError(f"module has {len(module.entry_points)} entry points "
                             f"{sorted(module.entry_points)}; name one")
        entry_point = next(iter(module.entry_points))
    if entry_point not in module.entry_points:
        raise SpirvError(f"no entry point {entry_point!r} (have {sorted(module.entry_points)})")
    function, interface = module.entry_points[entry_point]
    variables = [v for v in module.variables
                 if module.version < _VERSION_1_4 or v in interface]
    bindings, push_fields, push_size = [], (), 0
    uses = variable_uses(module.code, function, variables)
    for var in variables:
        pointer_type, storage = module.variables[var]
        pointee = module.type(pointer_type)[1][1]
        if storage == _PUSH_CONSTANT:
            leaves, push_size = _fields(module, pointee, 0, None)
            push_fields = tuple(leaves)
        elif storage in (_UNIFORM_CONSTANT, _UNIFORM, _STORAGE_BUFFER):
            info = _descriptor(module, var, storage, pointee, uses[var])
            if info is not None:
                bindings.append(info)
    return ShaderInterface(
        entry_point=entry_point,
        local_size=_local_size(module, function),
        bindings=tuple(sorted(bindings, key=lambda b: (b.set, b.binding))),
        push_constant_size=push_size,
        push_fields=push_fields,
    )


def spec_constant_types(spirv: bytes) -> dict[int, str]:
    """The scalar type of each specialization constant, by SpecId: "bool", or a push field's
    scalar name ("u32", "i64", "f32", ...)."""
    module = _Module(spirv)
    out = {}
    for const, type_id in module.spec_types.items():
        spec_id = module.decorations.get(const, {}).get(_SPEC_ID)
        if spec_id is not None:
            is_bool = module.type(type_id)[0] == _OP_TYPE_BOOL
            out[spec_id[0]] = "bool" if is_bool else _fields(module, type_id, 0, None)[0][0].scalar
    return out


def push_loads(spirv: bytes, branching: bool = False) -> tuple[PushLoad, ...]:
    """The loads of scalars and vectors of the module's push-constant block, each through an access chain
    whose indices are constants (the shape compilers give them); loads of another shape are left out.
    branching: only those whose values reach a conditional branch or a switch (`uses.branch_sources`)."""
    module = _Module(spirv)
    blocks = {var: module.type(pointer)[1][1] for var, (pointer, storage) in module.variables.items()
              if storage == _PUSH_CONSTANT}
    chains: dict[int, tuple[int, int]] = {}  # pointer id -> (byte offset, type id) it points to
    out = []
    for opcode, ops in module.code:
        if opcode in (_OP_ACCESS_CHAIN, _OP_IN_BOUNDS_ACCESS_CHAIN) and ops[2] in blocks:
            found = _member(module, blocks[ops[2]], ops[3:])
            if found is not None:
                chains[ops[1]] = found
        elif opcode == _OP_LOAD and ops[2] in chains:
            offset, type_id = chains[ops[2]]
            kind, type_ops = module.type(type_id)
            if kind in (_OP_TYPE_INT, _OP_TYPE_FLOAT, _OP_TYPE_VECTOR):
                fields, size = _fields(module, type_id, offset, None)
                out.append(PushLoad(ops[1], type_id, type_ops[0] if kind == _OP_TYPE_VECTOR else type_id,
                                    tuple(fields), offset, size))
    if branching:
        deciding = branch_sources(module.code, [load.result for load in out])
        out = [load for load in out if load.result in deciding]
    return tuple(out)


def _member(module: _Module, type_id: int, indices: Sequence[int]) -> tuple[int, int] | None:
    """(byte offset, type id) of the member of a push-constant block of type `type_id` that access chain
    `indices` (constant ids) reaches; None where an index is not a constant or the layout has no offset."""
    offset = 0
    for index in indices:
        if index not in module.constants:
            return None
        k = module.constants[index]
        opcode, ops = module.type(type_id)
        if opcode == _OP_TYPE_STRUCT and k < len(ops):
            at = module.member_decorations.get((type_id, k), {}).get(_OFFSET)
            if at is None:
                return None
            offset, type_id = offset + at[0], ops[k]
        elif opcode == _OP_TYPE_ARRAY:
            stride = module.decorations.get(type_id, {}).get(_ARRAY_STRIDE)
            if stride is None:
                return None
            offset, type_id = offset + k * stride[0], ops[0]
        elif opcode == _OP_TYPE_VECTOR:
            offset, type_id = offset + k * _fields(module, ops[0], 0, None)[1], ops[0]
        else:  # a matrix's columns: their stride is the member's, not the type's
            return None
    return offset, type_id


_PACK = {"u32": "I", "i32": "i", "f32": "f", "u64": "Q", "i64": "q", "f64": "d",
         "u16": "H", "i16": "h", "f16": "e", "u8": "B", "i8": "b"}


def pack_push(interface: ShaderInterface, values: Sequence[float]) -> bytes:
    """The push-constant bytes for `values`, one per push field in order
    (the stream format's `push` list); missing trailing fields are zero and
    integers wrap to their field's width (-1 into a u32 is 0xFFFFFFFF)."""
    if len(values) > len(interface.push_fields):
        raise ValueError(f"{len(values)} push values for {len(interface.push_fields)} push fields")
    out = bytearray(interface.push_constant_size)
    for field, value in zip(interface.push_fields, values):
        code = _PACK[field.scalar]
        if code.isupper():
            value = int(value) % (1 << 8 * struct.calcsize(code))
        elif code not in "fde":
            value = int(value)
        struct.pack_into("<" + code, out, field.offset, value)
    return bytes(out)


def unpack_push(interface: ShaderInterface, data: bytes) -> list[float]:
    """The push values (pack_push's `values`) that `data`, push-constant bytes, holds; bytes past
    `data` read as zero."""
    data = bytes(data).ljust(interface.push_constant_size, b"\0")
    return [struct.unpack_from("<" + _PACK[f.scalar], data, f.offset)[0] for f in interface.push_fields]
