"""Which variables an entry point's code reads and writes: SPIR-V reflection by use.

Generated shaders (naga's WGSL, Taichi, GLSL without readonly/writeonly)
carry no NonWritable/NonReadable decorations, so a buffer's access is found
from its uses: every pointer derived from a variable (access chains, copies,
bitcasts, OpPhi/OpSelect, a function's parameters and return value) is
followed to the memory instructions that take it (SPIR-V spec 3.49.8
"Memory Instructions", 3.49.18 "Atomic Instructions"). Only the functions
the entry point's call tree reaches count; a pointer stored to memory counts
as read and written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["ATOMIC", "PLAIN", "READ", "WRITE", "Instruction", "branch_sources", "variable_uses"]

READ, WRITE = 1, 2
ATOMIC, PLAIN = 4, 8  # accessed by an atomic instruction; by any other memory instruction
Instruction = tuple[int, tuple[int, ...]]  # (opcode, operands)

_OP_FUNCTION = 54
_OP_FUNCTION_PARAMETER = 55
_OP_FUNCTION_CALL = 57
_OP_STORE = 62
_OP_BRANCH_CONDITIONAL = 250
_OP_SWITCH = 251
_OP_PHI = 245
_OP_RETURN_VALUE = 254

# Instructions whose result is a pointer into the memory of a pointer operand: opcode -> those
# operands' indices (operand 0 is the result type, 1 the result id). OpPhi's are every other one.
_DERIVES = {
    60: (2,),  # OpImageTexelPointer
    65: (2,),  # OpAccessChain
    66: (2,),  # OpInBoundsAccessChain
    67: (2,),  # OpPtrAccessChain
    70: (2,),  # OpInBoundsPtrAccessChain
    83: (2,),  # OpCopyObject
    124: (2,),  # OpBitcast
    169: (3, 4),  # OpSelect
}

_RMW = READ | WRITE
# Instructions that access memory through a pointer operand: opcode -> ((operand index, access), ...).
# A pointer OpStore stores as its object (variable pointers) is not followed through memory: it may be
# loaded back and used anywhere, so it counts as read and written.
_ACCESSES = {
    61: ((2, READ | PLAIN),),  # OpLoad
    62: ((0, WRITE | PLAIN), (1, _RMW | PLAIN)),  # OpStore
    63: ((0, WRITE | PLAIN), (1, READ | PLAIN)),  # OpCopyMemory
    64: ((0, WRITE | PLAIN), (1, READ | PLAIN)),  # OpCopyMemorySized
    227: ((2, READ | ATOMIC),),  # OpAtomicLoad
    228: ((0, WRITE | ATOMIC),),  # OpAtomicStore
    **{op: ((2, _RMW | ATOMIC),) for op in range(229, 243)},  # OpAtomicExchange .. OpAtomicXor
    318: ((2, _RMW | ATOMIC),),  # OpAtomicFlagTestAndSet
    319: ((0, WRITE | ATOMIC),),  # OpAtomicFlagClear
    5614: ((2, _RMW | ATOMIC),),  # OpAtomicFMinEXT
    5615: ((2, _RMW | ATOMIC),),  # OpAtomicFMaxEXT
    6035: ((2, _RMW | ATOMIC),),  # OpAtomicFAddEXT
    4457: ((2, READ | PLAIN),),  # OpCooperativeMatrixLoadKHR
    4458: ((0, WRITE | PLAIN),),  # OpCooperativeMatrixStoreKHR
    5359: ((2, READ | PLAIN),),  # OpCooperativeMatrixLoadNV
    5360: ((0, WRITE | PLAIN),),  # OpCooperativeMatrixStoreNV
}


def _functions(code: Sequence[Instruction]) -> dict[int, list[Instruction]]:
    """Each function's instructions, by its id, from OpFunction to OpFunctionEnd."""
    out: dict[int, list[Instruction]] = {}
    body: list[Instruction] = []
    for opcode, ops in code:
        if opcode == _OP_FUNCTION:
            body = out.setdefault(ops[1], [])
        body.append((opcode, ops))
    return out


def _reachable(functions: dict[int, list[Instruction]], entry: int) -> list[int]:
    """The functions of `entry`'s call tree, `entry` first."""
    seen, todo = [entry], [entry]
    while todo:
        for opcode, ops in functions.get(todo.pop(), ()):
            if opcode == _OP_FUNCTION_CALL and ops[2] not in seen:
                seen.append(ops[2])
                todo.append(ops[2])
    return seen


def _flow(functions: dict[int, list[Instruction]],
          reached: Iterable[int]) -> tuple[dict[int, set[int]], dict[int, int]]:
    """(id -> the ids derived from it, pointer id -> how it is accessed) over the `reached` functions.
    A function's return value flows through the node -(function id) to its calls' results."""
    params = {f: [ops[1] for opcode, ops in functions[f] if opcode == _OP_FUNCTION_PARAMETER] for f in functions}
    derived: dict[int, set[int]] = {}
    accesses: dict[int, int] = {}

    def edge(source: int, target: int) -> None:
        derived.setdefault(source, set()).add(target)

    for f in reached:
        for opcode, ops in functions.get(f, ()):  # a callee without a body (invalid for Vulkan) adds nothing
            if opcode in _DERIVES:
                for i in _DERIVES[opcode]:
                    edge(ops[i], ops[1])
            elif opcode == _OP_PHI:
                for value in ops[2::2]:
                    edge(value, ops[1])
            elif opcode == _OP_FUNCTION_CALL:
                for argument, parameter in zip(ops[3:], params.get(ops[2], ())):
                    edge(argument, parameter)
                edge(-ops[2], ops[1])
            elif opcode == _OP_RETURN_VALUE:
                edge(ops[0], -f)
            for i, access in _ACCESSES.get(opcode, ()):
                accesses[ops[i]] = accesses.get(ops[i], 0) | access
    return derived, accesses


def variable_uses(code: Sequence[Instruction], entry: int, variables: Iterable[int]) -> dict[int, int]:
    """READ | WRITE | ATOMIC | PLAIN flags per variable: how the code reachable from function `entry` accesses
    the memory of each variable in `variables` (0: not at all), and whether by atomic instructions, others or
    both."""
    functions = _functions(code)
    derived, accesses = _flow(functions, _reachable(functions, entry))
    out = {}
    for var in variables:
        seen, todo, flags = {var}, [var], 0
        while todo:
            pointer = todo.pop()
            flags |= accesses.get(pointer, 0)
            fresh = derived.get(pointer, set()) - seen
            seen |= fresh
            todo += fresh
        out[var] = flags
    return out


def branch_sources(code: Sequence[Instruction], sources: Iterable[int]) -> set[int]:
    """The ids of `sources` whose values reach the condition of an OpBranchConditional or the selector of an
    OpSwitch: through any instruction's operands to its result, through a store to the pointer stored to,
    through a function's return value to its calls. Over-approximate (any operand word that names a tainted
    id taints the result) and without function parameters: a source it misses is one whose value is left
    unknown, so every branch on it counts."""
    taint: dict[int, frozenset[int]] = {s: frozenset((s,)) for s in sources}
    changed = True
    while changed:
        changed = False
        function = 0
        for opcode, ops in code:
            if opcode == _OP_FUNCTION:
                function = ops[1]
            if opcode == _OP_STORE:
                target, inputs = ops[0], ops[1:2]
            elif opcode == _OP_RETURN_VALUE:
                target, inputs = -function, ops[:1]
            elif opcode == _OP_FUNCTION_CALL:
                target, inputs = ops[1], (-ops[2], *ops[3:])
            elif len(ops) >= 2 and opcode not in (_OP_BRANCH_CONDITIONAL, _OP_SWITCH):
                target, inputs = ops[1], ops[2:]
            else:
                continue
            found = frozenset().union(*(taint.get(i, ()) for i in inputs))
            if found and not found <= taint.get(target, frozenset()):
                taint[target] = taint.get(target, frozenset()) | found
                changed = True
    return {s for opcode, ops in code if opcode in (_OP_BRANCH_CONDITIONAL, _OP_SWITCH) for s in taint.get(ops[0], ())}
