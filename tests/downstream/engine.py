"""A downstream engine on vkverify's runtime with a kernel of its own (twice.spv, loaded with
Runtime.load_shader). Per frame: the host writes In; In -> Mid -> Out by two dispatches of
`twice` with a barrier between them and one to the host after; the host waits for the frame's
fence, then reads Out. That wait also orders the next frame's host write to In after this
frame's read of it."""

from pathlib import Path

import numpy as np

SPIRV = (Path(__file__).parent / "twice.spv").read_bytes()
GROUPS = (16, 1, 1)  # the kernel loops with a stride: any count computes the same


class Engine:
    def __init__(self, rt, n: int) -> None:
        self.rt, self.n, self.frames = rt, n, 0
        rt.load_shader("twice", SPIRV)
        rt.create_buffer("In", 4 * n, "host_coherent")
        rt.create_buffer("Mid", 4 * n)
        rt.create_buffer("Out", 4 * n, "host_coherent")
        rt.create_fence("F")

    def frame(self, x: np.ndarray) -> np.ndarray:
        rt, f = self.rt, self.frames
        self.frames += 1
        rt.host_write("In", x.astype(np.float32).tobytes(), label="inputs")
        cb = rt.command_buffer(f"frame{f}")
        cb.cmd_dispatch("twice", ["In", "Mid"], GROUPS, push=[self.n])
        cb.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "compute_shader", "shader_storage_read")
        cb.cmd_dispatch("twice", ["Mid", "Out"], GROUPS, push=[self.n])
        cb.cmd_pipeline_barrier2("compute_shader", "shader_storage_write", "host", "host_read")
        if f:
            rt.reset_fences(["F"])
        rt.submit("q0", [f"frame{f}"], fence="F")
        rt.wait_fences(["F"], label="frame done")
        return np.frombuffer(rt.host_read("Out", label="outputs"), np.float32).copy()
