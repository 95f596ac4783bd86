"""Simulator throughput: adversarial schedules per second on a decode-shaped stream.

Per token, `layers` layers of library kernels (axpy, add, scale: float32, vectorized in numpy)
over 1 MiB activation buffers, a compute barrier between dependent dispatches, one submit per
token with a timeline signal, the host writing the next input and reading the logits after a
host wait: the shape of benchmarks/decode_stream.py with kernels whose numpy semantics are real
arithmetic. Prints the reference time and schedules per second.

    python benchmarks/simulate.py [--dispatches 10000] [--schedules 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vkverify.check import check
from vkverify.model import ir
from vkverify.sim import reference, simulate

MIB = 1 << 20
N = MIB // 4
COMPUTE = frozenset({"compute_shader"})
BARRIER = ir.Barrier(COMPUTE, frozenset({"shader_storage_write"}), COMPUTE,
                     frozenset({"shader_storage_read", "shader_storage_write"}))


def _bind(buffer: str, access: str) -> ir.Binding:
    return ir.Binding(buffer, 0, MIB, access)


def decode_stream(dispatches: int, per_token: int = 1000) -> ir.Stream:
    tokens = max(1, dispatches // per_token)
    act = [f"act{i}" for i in range(4)]
    buffers = [ir.Buffer(a, MIB) for a in act] + [ir.Buffer("w", MIB), ir.Buffer("input", MIB, "host_coherent"),
                                                  ir.Buffer("logits", MIB, "host_coherent")]
    init = ir.CommandBuffer("init", tuple(ir.Fill(b, 0, MIB, 0x3F800000) for b in act + ["w"]) + (
        ir.Barrier(frozenset({"clear"}), frozenset({"transfer_write"}), COMPUTE,
                   frozenset({"shader_storage_read", "shader_storage_write"})),))
    cbs, ops = [init], [ir.Submit("q0", (ir.Batch(command_buffers=("init",)),))]
    for t in range(tokens):
        cmds: list[ir.Command] = [BARRIER, ir.Dispatch("add", (_bind("input", "read"), _bind("w", "read"),
                                                               _bind(act[0], "write")), push=(N,))]
        for d in range(per_token - 2):
            src, dst = act[d % 4], act[(d + 1) % 4]
            cmds.append(BARRIER)
            if d % 3 == 2:
                cmds.append(ir.Dispatch("scale", (_bind(dst, "read_write"),), push=(N, 0.5)))
            else:
                cmds.append(ir.Dispatch("axpy", (_bind(src, "read"), _bind(dst, "read_write")), push=(N, 0.25)))
        cmds += [ir.Barrier(COMPUTE, frozenset({"shader_storage_write"}), COMPUTE | {"host"},
                            frozenset({"shader_storage_read", "host_read"})),
                 ir.Dispatch("copy", (_bind(act[(per_token - 2) % 4], "read"), _bind("logits", "write")), push=(N,)),
                 ir.Barrier(COMPUTE, frozenset({"shader_storage_write"}), frozenset({"host"}),
                            frozenset({"host_read"}))]
        cbs.append(ir.CommandBuffer(f"tok{t}", tuple(cmds)))
        ops += [ir.HostAccess("host_write", "input", 0, MIB, ir.Data(pattern="iota_f32")),
                ir.Submit("q0", (ir.Batch(command_buffers=(f"tok{t}",), signals=(ir.SemaphoreOp("T", t + 1),)),)),
                ir.WaitSemaphores((ir.SemaphoreValue("T", t + 1),)),
                ir.HostAccess("host_read", "logits", 0, MIB)]
    return ir.Stream(name=f"decode-{tokens}-tokens", devices=(ir.Device("gpu0", (ir.Queue("q0"),)),),
                     buffers=tuple(buffers), semaphores=(ir.Semaphore("T", "timeline"),), command_buffers=tuple(cbs),
                     threads=(ir.Thread("main", tuple(ops)),))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dispatches", type=int, default=10_000)
    p.add_argument("--schedules", type=int, default=3)
    args = p.parse_args()
    stream = decode_stream(args.dispatches)
    n = sum(isinstance(c, ir.Dispatch) for cb in stream.command_buffers for c in cb.commands)
    start = time.perf_counter()
    findings = check(stream)
    checked = time.perf_counter()
    reference(stream)
    referenced = time.perf_counter()
    simulate(stream, schedules=1, findings=findings)
    one = time.perf_counter()
    report = simulate(stream, schedules=1 + args.schedules, findings=findings)
    done = time.perf_counter()
    # Both simulate() calls run the reference and one schedule; the difference is the extra schedules.
    per_schedule = (done - one - (one - referenced)) / args.schedules
    print(f"{stream.name}: {n} dispatches over 1 MiB buffers, {len(findings)} findings "
          f"(check {checked - start:.1f} s)")
    print(f"reference: {referenced - checked:.2f} s; simulate with 1 schedule: {one - referenced:.2f} s")
    print(f"schedules: {1 / per_schedule:.3f} schedules/s ({per_schedule:.2f} s each, {args.schedules} extra run); "
          f"digests changed: {report.changed}")

if __name__ == "__main__":
    main()
