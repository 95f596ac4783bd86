"""Streams whose cost lies in byte ranges and submits rather than in length, for benchmarks/check_scaling.py.

Each is built as IR directly and is hazard-free unless said otherwise:
- `fragmented`: one buffer cut into n pieces, as an engine that suballocates every tensor from one VkBuffer
  does: per piece a dispatch writes it, a buffer barrier over the piece alone orders it, a dispatch reads it;
- `range_entries`: n dispatches each write a piece, then ONE barrier command with a buffer barrier per
  piece (n entries), then n dispatches each read a piece;
- `kv_slices`: a decode loop's KV cache, one command buffer per token: the token's slice written, a buffer
  barrier over the slice, the slice read, then a global barrier before the next token's writes;
- `racing_submits`: n submits of one copy into the same buffer alternating between two queues with no
  synchronization: every submit races with the one before it on the other queue (n - 1 waw findings);
- `atomic_counter`: n dispatches on each of two queues add to one counter with atomics, nothing between them
  (no hazard: atomics of one device do not race), then the host reads the total after both queues' barriers
  to the host and an idle wait: the atomics a segment keeps (one per queue and stage) stay few.

`SIZES`: the two sizes, 10x apart, at which benchmarks/check_scaling.py measures each shape's growth.
"""

from __future__ import annotations

from vkverify.model import ir

PIECE = 256
COMPUTE = frozenset({"compute_shader"})
WRITE = frozenset({"shader_storage_write"})
READ = frozenset({"shader_storage_read"})
SHADERS = (ir.ShaderDecl("produce", ("write",)), ir.ShaderDecl("consume", ("read",)),
           ir.ShaderDecl("count", ("atomic",)))


def _piece_barrier(buffer: str, i: int) -> ir.BufferBarrier:
    return ir.BufferBarrier(buffer, i * PIECE, PIECE, COMPUTE, WRITE, COMPUTE, READ)


def _produce(buffer: str, i: int) -> ir.Dispatch:
    return ir.Dispatch("produce", (ir.Binding(buffer, i * PIECE, PIECE, "write"),))


def _consume(buffer: str, i: int) -> ir.Dispatch:
    return ir.Dispatch("consume", (ir.Binding(buffer, i * PIECE, PIECE, "read"),))


def _stream(name: str, buffers: list[ir.Buffer], cbs: list[ir.CommandBuffer], queues=("q0",),
            submits: list[ir.Submit] | None = None) -> ir.Stream:
    """Each command buffer submitted with a fence the host waits for (a release after every access: the
    check then asks what each access's barriers did over its whole memory)."""
    ops = submits if submits is not None else [
        op for cb in cbs for op in (ir.Submit("q0", (ir.Batch(command_buffers=(cb.id,)),), "F"),
                                    ir.WaitFences(("F",)), ir.ResetFences(("F",)))]
    if submits is None:  # the host reads the results back, after the barrier that makes them available to it
        last = cbs[-1]
        cbs[-1] = ir.CommandBuffer(last.id, last.commands + (ir.Barrier(COMPUTE, WRITE, frozenset({"host"}),
                                                                        frozenset({"host_read"})),))
        ops.append(ir.HostAccess("host_read", buffers[0].id, 0, buffers[0].size))
    return ir.Stream(name, (ir.Device("gpu0", tuple(ir.Queue(q) for q in queues)),), tuple(buffers),
                     fences=(ir.Fence("F"),), shaders=SHADERS, command_buffers=tuple(cbs),
                     threads=(ir.Thread("main", tuple(ops)),))


def fragmented(n: int) -> ir.Stream:
    commands = []
    for i in range(n):
        commands += [_produce("B", i), ir.Barrier(frozenset(), frozenset(), frozenset(), frozenset(),
                                                  (_piece_barrier("B", i),)), _consume("B", i)]
    return _stream(f"fragmented-{n}", [ir.Buffer("B", n * PIECE, "host_coherent")],
                   [ir.CommandBuffer("cb", tuple(commands))])


def range_entries(n: int) -> ir.Stream:
    barrier = ir.Barrier(frozenset(), frozenset(), frozenset(), frozenset(),
                         tuple(_piece_barrier("B", i) for i in range(n)))
    commands = [_produce("B", i) for i in range(n)] + [barrier] + [_consume("B", i) for i in range(n)]
    return _stream(f"range-entries-{n}", [ir.Buffer("B", n * PIECE, "host_coherent")],
                   [ir.CommandBuffer("cb", tuple(commands))])


def kv_slices(tokens: int) -> ir.Stream:
    between_tokens = ir.Barrier(COMPUTE, READ, COMPUTE, WRITE)
    cbs = [ir.CommandBuffer(f"t{t}", (between_tokens, _produce("KV", t),
                                      ir.Barrier(frozenset(), frozenset(), frozenset(), frozenset(),
                                                 (_piece_barrier("KV", t),)), _consume("KV", t)))
           for t in range(tokens)]
    return _stream(f"kv-slices-{tokens}", [ir.Buffer("KV", tokens * PIECE, "host_coherent")], cbs)


def racing_submits(n: int) -> ir.Stream:
    copy = ir.CommandBuffer("copy", (ir.Copy("Src", "Dst", (ir.Region(0, 0, PIECE),)),))
    ops = [ir.HostAccess("host_write", "Src", 0, PIECE)]
    ops += [ir.Submit(f"q{i % 2}", (ir.Batch(command_buffers=("copy",)),)) for i in range(n)]
    return _stream(f"racing-submits-{n}", [ir.Buffer("Src", PIECE, "host_coherent"), ir.Buffer("Dst", PIECE)],
                   [copy], queues=("q0", "q1"), submits=ops)


def atomic_counter(n: int) -> ir.Stream:
    add = ir.Dispatch("count", (ir.Binding("C", 0, PIECE, "atomic"),))
    to_host = ir.Barrier(COMPUTE, WRITE, frozenset({"host"}), frozenset({"host_read"}))
    cbs = [ir.CommandBuffer(f"adds{q}", (add,) * n + (to_host,)) for q in range(2)]
    ops = [ir.HostAccess("host_write", "C", 0, PIECE),
           *(ir.Submit(f"q{q}", (ir.Batch(command_buffers=(f"adds{q}",)),)) for q in range(2)),
           ir.DeviceWaitIdle("gpu0"), ir.HostAccess("host_read", "C", 0, PIECE)]
    return _stream(f"atomic-counter-{n}", [ir.Buffer("C", PIECE, "host_coherent")], cbs, queues=("q0", "q1"),
                   submits=ops)


SHAPES = {"fragmented": fragmented, "range_entries": range_entries, "kv_slices": kv_slices,
          "racing_submits": racing_submits, "atomic_counter": atomic_counter}
SIZES = {"fragmented": (100, 1000), "range_entries": (1000, 10_000), "kv_slices": (1000, 10_000),
         "racing_submits": (10_000, 100_000), "atomic_counter": (10_000, 100_000)}
