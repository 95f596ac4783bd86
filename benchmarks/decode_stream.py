"""Decode-shaped streams, as an LLM engine's Vulkan backend issues them (barriers only on proven hazards).

Per token: `layers` layers of dispatches over a few hundred weight buffers and
a ring of activation buffers, a barrier wherever the next dispatch touches what
the previous group wrote, the KV cache written at the token's slot, logits read
back by the host, one submit per token with a timeline signal, and a host wait
every few tokens before the host reuses an input slot. Built as IR directly so
that generating a million commands costs little next to checking them.

Shapes (`SHAPES`, by name):
- `tokens`: one command buffer recorded per token (30 layers);
- `resubmitted`: a real decode loop's, one command buffer recorded per input slot (4 slots, 48 layers),
  resubmitted at every token that uses the slot, its KV write at the slot's place.
"""

from __future__ import annotations

from dataclasses import replace

from vkverify.model import ir

MIB = 1 << 20
COMPUTE = frozenset({"compute_shader"})


def decode_stream(n_commands: int, layers: int = 30, weights_per_layer: int = 10, slots: int = 4,
                  hazard: bool = False, kv_history: bool = False, size: int = 64 * 1024,
                  resubmitted: bool = False) -> ir.Stream:
    """A stream of about `n_commands` executed commands; with `hazard`, one barrier of the last token is missing.

    Attention reads this token's KV slot; with `kv_history` it reads every slot so far, as a real
    decode does: then each token's work grows with the context, in the checker as on the GPU.
    `size`: bytes of each weight, activation and staging buffer (a replay's time grows with it, a check's does not).
    `resubmitted`: one command buffer per input slot, submitted again at each token of the slot (`hazard`: the
    last slot's misses the barrier, at every submission).
    """
    if resubmitted and kv_history:
        raise ValueError("a resubmitted command buffer reads the same KV bytes every time")
    per_token = layers * 41  # 30 dispatches and 11 barriers per layer
    tokens = max(1, round(n_commands / per_token))
    weight_ids = [f"W{layer}_{i}" for layer in range(layers) for i in range(weights_per_layer)]
    act = [f"act{i}" for i in range(8)]
    kv_places = slots if resubmitted else tokens
    buffers = [ir.Buffer(w, size) for w in weight_ids]
    buffers += [ir.Buffer(a, size) for a in act]
    buffers += [ir.Buffer(f"kv{layer}", 4096 * kv_places) for layer in range(layers)]
    buffers += [ir.Buffer(f"in{s}", 4096, "host_coherent") for s in range(slots)]
    buffers += [ir.Buffer("logits", 4096, "host_coherent"), ir.Buffer("staging", size, "host_coherent")]
    shaders = (ir.ShaderDecl("matmul", ("read", "read", "write")), ir.ShaderDecl("kv_store", ("read", "write")),
               ir.ShaderDecl("attend", ("read", "read", "write")))

    compute_barrier = ir.Barrier(COMPUTE, frozenset({"shader_storage_write"}), COMPUTE,
                                 frozenset({"shader_storage_read", "shader_storage_write"}))
    upload = [ir.Copy("staging", w, (ir.Region(0, 0, size),)) for w in weight_ids]
    upload.append(ir.Barrier(frozenset({"copy"}), frozenset({"transfer_write"}), COMPUTE,
                             frozenset({"shader_storage_read"})))
    command_buffers = [ir.CommandBuffer("upload", tuple(upload))]

    def bind(buf, access, offset=0, n=size):
        return ir.Binding(buf, offset, n, access)

    def token(slot: str, place: int, history: tuple[int, int], missing_barrier: bool) -> tuple[ir.Command, ...]:
        """One token's commands: input `slot`, its KV written at `place`, attention reading `history`."""
        cmds: list[ir.Command] = [ir.Dispatch("matmul", (bind(slot, "read", 0, 4096), bind(weight_ids[0], "read"),
                                                         bind(act[0], "write")))]
        cur = 0
        for layer in range(layers):
            w = weight_ids[layer * weights_per_layer:(layer + 1) * weights_per_layer]
            for g in range(10):
                if not (missing_barrier and layer == layers - 1 and g == 9):
                    cmds.append(compute_barrier)
                src, dst = act[cur], act[(cur + 1 + g % 3) % len(act)]
                if g == 4:  # the KV cache: this token's slot written, then read (kv_history: all slots)
                    cmds.append(ir.Dispatch("kv_store", (bind(src, "read"), bind(f"kv{layer}", "write", place, 4096))))
                    cmds.append(compute_barrier)
                    cmds.append(ir.Dispatch("attend", (bind(src, "read"), bind(f"kv{layer}", "read", *history),
                                                       bind(dst, "write"))))
                    cmds.append(ir.Dispatch("matmul", (bind(src, "read"), bind(w[g], "read"),
                                                       bind(act[(cur + 5) % len(act)], "write"))))
                else:  # three independent projections from one input
                    for k in range(3):
                        cmds.append(ir.Dispatch("matmul", (bind(src, "read"), bind(w[(g + k) % len(w)], "read"),
                                                           bind(act[(cur + 1 + k) % len(act)], "write"))))
                cur = (cur + 1) % len(act)
        cmds.append(ir.Barrier(COMPUTE, frozenset({"shader_storage_write"}), frozenset({"host", "compute_shader"}),
                               frozenset({"host_read", "shader_storage_read", "shader_storage_write"})))
        cmds.append(ir.Dispatch("matmul", (bind(act[cur], "read"), bind(weight_ids[-1], "read"),
                                           bind("logits", "write", 0, 4096))))
        # Logits to the host; with 48 layers the last matmul reads act0, which the next token's first
        # dispatch overwrites: the resubmitted shape's last barrier orders that too.
        cmds.append(ir.Barrier(COMPUTE, frozenset({"shader_storage_write"}),
                               frozenset({"host"}) | (COMPUTE if resubmitted else frozenset()),
                               frozenset({"host_read"})))
        return tuple(cmds)

    if resubmitted:
        command_buffers += [ir.CommandBuffer(f"slot{s}", token(f"in{s}", 4096 * s, (4096 * s, 4096),
                                                               hazard and s == (tokens - 1) % slots))
                            for s in range(min(slots, tokens))]
    ops: list[ir.HostOp] = [ir.HostAccess("host_write", "staging", 0, size),
                            ir.Submit("q0", (ir.Batch(command_buffers=("upload",)),))]
    for t in range(tokens):
        slot = f"in{t % slots}"
        if resubmitted:
            cb = f"slot{t % slots}"
        else:
            cb = f"tok{t}"
            history = (0, 4096 * (t + 1)) if kv_history else (4096 * t, 4096)
            command_buffers.append(ir.CommandBuffer(cb, token(slot, 4096 * t, history, hazard and t == tokens - 1)))
        if t >= slots - 1:  # the host reuses input slot t % slots only once token t - slots finished
            ops.append(ir.WaitSemaphores((ir.SemaphoreValue("T", t - slots + 1),)))
        ops.append(ir.HostAccess("host_write", slot, 0, 4096))
        ops.append(ir.Submit("q0", (ir.Batch(command_buffers=(cb,), signals=(ir.SemaphoreOp("T", t + 1),)),)))
        if t % slots == slots - 1 or t == tokens - 1:
            ops.append(ir.WaitSemaphores((ir.SemaphoreValue("T", t + 1),)))
            ops.append(ir.HostAccess("host_read", "logits", 0, 4096))
    return ir.Stream(
        name=f"decode-{tokens}-tokens", devices=(ir.Device("gpu0", (ir.Queue("q0"),)),), buffers=tuple(buffers),
        semaphores=(ir.Semaphore("T", "timeline"),), shaders=shaders, command_buffers=tuple(command_buffers),
        threads=(ir.Thread("main", tuple(ops)),))


# Named shapes: decode_stream's keyword arguments.
SHAPES = {"tokens": {}, "resubmitted": {"layers": 48, "slots": 4, "resubmitted": True}}


def barriers_dropped(stream: ir.Stream) -> ir.Stream:
    """The stream without its barrier commands: every access that a barrier ordered races (issue 29)."""
    return replace(stream, command_buffers=tuple(
        replace(cb, commands=tuple(c for c in cb.commands if not isinstance(c, ir.Barrier)))
        for cb in stream.command_buffers))


# What an engine that cannot prove a hazard absent records before every dispatch (issue 27).
FULL_BARRIER = ir.Barrier(frozenset({"compute_shader", "copy"}), frozenset({"memory_write"}),
                          frozenset({"compute_shader", "copy", "host"}), frozenset({"memory_read", "memory_write"}),
                          label="full barrier")


def full_barriers(stream: ir.Stream) -> ir.Stream:
    """The stream with a FULL_BARRIER before every dispatch in place of its compute barriers (those to the host
    stage and the upload's stay)."""
    def commands(cb: ir.CommandBuffer):
        for c in cb.commands:
            if isinstance(c, ir.Dispatch):
                yield FULL_BARRIER
            if not (isinstance(c, ir.Barrier) and c.src_stage == COMPUTE and "host" not in c.dst_stage):
                yield c
    return replace(stream, command_buffers=tuple(replace(cb, commands=tuple(commands(cb)))
                                                 for cb in stream.command_buffers))


def command_count(stream: ir.Stream) -> int:
    """Commands executed: each command buffer's commands once per submission of it. Written against the IR's
    oldest form (no ir.batches): check_scaling.py --baseline REV runs it with an older commit's package."""
    sizes = {cb.id: len(cb.commands) for cb in stream.command_buffers}
    return sum(sizes[cb] for t in stream.threads for op in t.ops if isinstance(op, ir.Submit)
               for b in op.batches for cb in b.command_buffers)
