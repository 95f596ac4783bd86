"""A small engine on vkverify's runtime: inputs staged to the device, then frames of chained
kernels on two queues that a timeline semaphore orders.

Per frame f (factor a):
  q0:  S = X + Y  (add);  barrier;  S *= a  (scale);                      signal T = 2f + 1
  q1:  wait T >= 2f + 1;  Sum = 0 (fill);  barrier;  Sum += words of S (reduce_sum);
       Out = S + X (add);  barrier to the host;                            signal T = 2f + 2, fence F
  host: wait F, read Out and Sum.
Frame f + 1's q0 submit waits T >= 2f + 2: q1 must finish reading S before q0 overwrites it (WAR).
On a device with one queue (Lavapipe) q0 and q1 share it; the stream keeps them apart.
Under Runtime(barriers="auto") the engine records no pipeline barrier: the runtime places them (docs/runtime.md);
the semaphores and the fence stay the engine's.
"""

from __future__ import annotations

import numpy as np

from vkverify.runtime.uploads import Uploader

GROUPS = (64, 1, 1)  # the kernels loop with a stride: any count computes the same
COMPUTE_RW = ("compute_shader", "shader_storage_write", "compute_shader",
              ["shader_storage_read", "shader_storage_write"])


class Engine:
    def __init__(self, rt, x: np.ndarray, y: np.ndarray) -> None:
        self.rt, self.n, self.frames = rt, x.size, 0
        rt.create_buffer("S", 4 * self.n)
        rt.create_buffer("Out", 4 * self.n, "host_coherent")
        rt.create_buffer("Sum", 4, "host_coherent")
        rt.create_semaphore("T", timeline=True)
        rt.create_fence("F")
        self.uploader = Uploader(rt)
        self.uploader.upload("X", 0, x.astype(np.float32))
        self.uploader.upload("Y", 0, y.astype(np.float32))
        self.uploader.finish()  # landed: the other queue may read X and Y too

    def frame(self, factor: float) -> tuple[np.ndarray, int]:
        """(Out, Sum) of one frame."""
        rt, n, f = self.rt, self.n, self.frames
        self.frames += 1
        a = rt.command_buffer(f"a{f}")
        hand = rt.barriers == "manual"
        a.cmd_dispatch("add", ["X", "Y", "S"], GROUPS, push=[n])
        if hand:
            a.cmd_pipeline_barrier2(*COMPUTE_RW)
        a.cmd_dispatch("scale", ["S"], GROUPS, push=[n, factor])
        previous = [{"semaphore": "T", "value": 2 * f, "stage": "compute_shader"}] if f else []
        rt.submit("q0", [f"a{f}"], wait=previous, signal=[{"semaphore": "T", "value": 2 * f + 1}])

        b = rt.command_buffer(f"b{f}")
        b.cmd_dispatch("fill", ["Sum"], (1, 1, 1), push=[1, 0])
        if hand:
            b.cmd_pipeline_barrier2(*COMPUTE_RW)
        b.cmd_dispatch("reduce_sum", ["S", "Sum"], GROUPS, push=[n, 0])
        b.cmd_dispatch("add", ["S", "X", "Out"], GROUPS, push=[n])
        if hand:
            b.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "host", "host_read")
        if f:
            rt.reset_fences(["F"])
        rt.submit("q1", [f"b{f}"], wait=[{"semaphore": "T", "value": 2 * f + 1, "stage": "compute_shader"}],
                  signal=[{"semaphore": "T", "value": 2 * f + 2}], fence="F")
        rt.wait_fences(["F"])
        out = np.frombuffer(rt.host_read("Out"), np.float32).copy()
        return out, int(np.frombuffer(rt.host_read("Sum"), np.uint32)[0])


def expected(x: np.ndarray, y: np.ndarray, factor: float) -> tuple[np.ndarray, int]:
    """numpy's (Out, Sum) for one frame: float32 as the kernels round, the checksum modulo 2^32."""
    s = (x.astype(np.float32) + y.astype(np.float32)) * np.float32(factor)
    return s + x.astype(np.float32), int(s.view(np.uint32).sum(dtype=np.uint64) % 2**32)
