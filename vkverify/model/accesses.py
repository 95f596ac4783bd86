"""The bytes, stages and accesses each command touches: one statement of it, which the checker, the slow
reference, the happens-before graph and the runtime share."""

from __future__ import annotations

from . import ir
from .stages import DEVICE_ACCESSES

__all__ = ["ACCESSES_BY_KIND", "BINDING_ACCESSES", "DEVICE_ACCESSES", "binding_reads", "binding_writes",
           "command_accesses"]



# A binding's access kind -> what it reads, what it writes (None: nothing). An atomic binding's operations
# read and write (atomicAdd, atomicExchange, ...): the storage accesses SPIR-V's OpAtomic* make. A sampled binding
# (a combined image sampler's image, texture()) is read by SHADER_SAMPLED_READ (7.7: "a sampled image").
_BINDING = {"read": (("shader_storage_read",), None), "read_write": (("shader_storage_read",), "shader_storage_write"),
            "uniform": (("uniform_read",), None), "write": ((), "shader_storage_write"),
            "atomic": (("shader_storage_read",), "shader_storage_write"), "sampled": (("shader_sampled_read",), None),
            "none": ((), None)}
BINDING_ACCESSES = tuple(_BINDING)


def binding_reads(access: str) -> bool:
    """Whether a binding of this access kind reads its bytes."""
    return bool(_BINDING[access][0])


def binding_writes(access: str) -> bool:
    """Whether a binding of this access kind writes its bytes."""
    return _BINDING[access][1] is not None


def _copy_accesses(cmd: ir.Copy) -> tuple[tuple, ...]:
    return tuple(("copy", ("transfer_read",), None, cmd.src, r.src_offset, r.src_offset + r.size, False, None)
                 for r in cmd.regions) + tuple(("copy", (), "transfer_write", cmd.dst, r.dst_offset,
                                                r.dst_offset + r.size, False, None) for r in cmd.regions)


def _clear_accesses(cmd: ir.Fill | ir.Update) -> tuple[tuple, ...]:
    return (("clear", (), "transfer_write", cmd.dst, cmd.offset, cmd.offset + cmd.size, False, None),)


def _dispatch_accesses(cmd: ir.Dispatch) -> tuple[tuple, ...]:
    reads, writes = [], []
    if cmd.indirect is not None:
        reads.append(("draw_indirect", ("indirect_command_read",), None, cmd.indirect.buffer, cmd.indirect.offset,
                      cmd.indirect.offset + 12, False, None))
    for b in cmd.bindings:
        read, write = _BINDING[b.access]
        if not read and write is None:  # bound, not accessed (imageSize() only): a descriptor is no memory access
            continue
        if b.ranges:  # a storage image's subresources
            (reads if write is None else writes).extend(("compute_shader", read, write, b.buffer, lo, hi,
                                                          b.access == "atomic", None) for lo, hi in b.ranges)
            continue
        (reads if write is None else writes).append(("compute_shader", read, write, b.buffer, b.offset,
                                                     b.offset + b.size, b.access == "atomic", None))
    return (*reads, *writes)


def _image_copy_accesses(cmd: ir.ImageCopy) -> tuple[tuple, ...]:
    return tuple(("copy", ("transfer_read",), None, cmd.src, lo, hi, False, None) for lo, hi in cmd.src_ranges) + \
        tuple(("copy", (), "transfer_write", cmd.dst, lo, hi, False, None) for lo, hi in cmd.dst_ranges)


def _blit_accesses(cmd: ir.BlitImage) -> tuple[tuple, ...]:
    """7.6.1: vkCmdBlitImage reads and writes at the blit stage, the texels of each region's two boxes."""
    return tuple(("blit", ("transfer_read",), None, cmd.src, lo, hi, False, None) for lo, hi in cmd.src_ranges) + \
        tuple(("blit", (), "transfer_write", cmd.dst, lo, hi, False, None) for lo, hi in cmd.dst_ranges)


def _resolve_accesses(cmd: ir.ResolveImage) -> tuple[tuple, ...]:
    """7.6: VK_PIPELINE_STAGE_2_RESOLVE_BIT "specifies the execution of vkCmdResolveImage"; 7.7.1: transfer reads and
    writes occur in it. Each region's source texels (every sample) and destination texels."""
    return tuple(("resolve", ("transfer_read",), None, cmd.src, lo, hi, False, None) for lo, hi in cmd.src_ranges) + \
        tuple(("resolve", (), "transfer_write", cmd.dst, lo, hi, False, None) for lo, hi in cmd.dst_ranges)


def _clear_image_accesses(cmd: ir.ClearColorImage | ir.ClearDepthStencilImage) -> tuple[tuple, ...]:
    """clears.adoc: "Clears outside render pass instances are treated as transfer operations for the purposes of
    memory barriers": a transfer write at the clear stage, of each range's bytes (its aspects')."""
    return tuple(("clear", (), "transfer_write", cmd.image, lo, hi, False, None) for lo, hi in cmd.ranges)


def _marker_accesses(cmd: ir.WriteBufferMarker) -> tuple[tuple, ...]:
    """copies.adoc "Buffer Markers": "the access scope for buffer marker writes falls under the
    VK_ACCESS_TRANSFER_WRITE_BIT flag, and is performed by either pipelineStage or VK_PIPELINE_STAGE_TRANSFER_BIT"
    (syncval: a transfer write). Not an atomic operation: it races a shader's atomics on its bytes. Its `marker`
    field, the stage it names, is what its implicit dependency on earlier marker writes reads (rules.py
    marker_writes_ordered; the reference states it again)."""
    return (("copy", (), "transfer_write", cmd.dst, cmd.offset, cmd.offset + 4, False, cmd.stage),)


def _query_copy_accesses(cmd: ir.CopyQueryPoolResults) -> tuple[tuple, ...]:
    """vkCmdCopyQueryPoolResults "is considered to be a transfer operation" writing each result at its stride (one
    query: its result alone, whatever the stride)."""
    return tuple(("copy", (), "transfer_write", cmd.dst, lo, lo + cmd.result_size, False, None)
                 for lo in (cmd.offset + i * cmd.stride for i in range(cmd.query_count)))


ACCESSES_BY_KIND = {ir.CopyBufferToImage: _image_copy_accesses, ir.CopyImageToBuffer: _image_copy_accesses,
                    ir.CopyImage: _image_copy_accesses, ir.BlitImage: _blit_accesses,
                    ir.ResolveImage: _resolve_accesses,
                    ir.ClearColorImage: _clear_image_accesses, ir.ClearDepthStencilImage: _clear_image_accesses,
                    ir.Copy: _copy_accesses, ir.Fill: _clear_accesses, ir.Update: _clear_accesses,
                    ir.Dispatch: _dispatch_accesses, ir.WriteBufferMarker: _marker_accesses,
                    ir.CopyQueryPoolResults: _query_copy_accesses,
                    **{kind: lambda cmd: () for kind in (*ir.SYNC_COMMANDS, ir.ExecuteCommands)}}


def command_accesses(cmd: ir.Command) -> tuple[tuple, ...]:
    """(stage, reads, write, buffer, lo, hi, atomic, marker) of each access a command performs, reads first
    (spec 7.6.1 "Pipeline stages" of vkCmdCopyBuffer, vkCmdFillBuffer, vkCmdUpdateBuffer, vkCmdDispatch);
    none for a pipeline barrier, an event command or vkCmdExecuteCommands (its command buffers' commands have theirs).
    A read_write or atomic binding is one access that reads and
    writes; atomic: made by atomic operations (appendices/memorymodel.adoc, "Data race": two atomic operations do
    not race); marker: the stages a buffer marker write names (its pipelineStage), None for any other access."""
    return ACCESSES_BY_KIND[type(cmd)](cmd)
