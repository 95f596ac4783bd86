"""A third-party compute program: wgpu (PyPI `wgpu`, wgpu-native over Vulkan).

24 compute passes over three shared storage buffers, in 4 submits of 6 passes,
with a buffer copy and a clear between submits, then a readback checked against
numpy. wgpu inserts every Vulkan barrier itself; `vkverify capture -- python
examples/thirdparty/wgpu_passes.py` checks that it inserted the right ones.
With `--threads`, use_after_destroy and waw findings appear on the main
thread's destroys and host writes after a readback (2 and 8 in two runs: it depends on timing): the
vkWaitSemaphores that orders them runs on wgpu's poller thread, and the main
thread learns of it through Python, not Vulkan; no capture records that.

Exit status 0 when the device's result equals numpy's, 1 otherwise.
"""

from __future__ import annotations

import sys

import numpy as np
import wgpu

N = 1024  # u32 elements per buffer
WORKGROUP = 64
SUBMITS, PASSES_PER_SUBMIT = 4, 6

# dst[i] = dst[i] * 3 + src[i] + k: reads src, reads and writes dst.
MIX = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
struct Params { k: u32 }
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i < arrayLength(&dst)) { dst[i] = dst[i] * 3u + src[i] + params.k; }
}
"""

# out[i] = a[i] ^ b[(i + 1) % n]: two read-only inputs, a write-only output.
XOR = """
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    let n = arrayLength(&out);
    if (i < n) { out[i] = a[i] ^ b[(i + 1u) % n]; }
}
"""


def mix(src: np.ndarray, dst: np.ndarray, k: int) -> None:
    dst[:] = dst * np.uint32(3) + src + np.uint32(k)


def xor(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    out[:] = a ^ np.roll(b, -1)


def main() -> int:
    device = wgpu.utils.get_default_device()
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    init = [np.arange(N, dtype=np.uint32) * (j + 1) for j in range(3)]
    bufs = [device.create_buffer_with_data(data=x, usage=usage) for x in init]
    host = [x.copy() for x in init]
    params = [device.create_buffer_with_data(data=np.array([k, 0, 0, 0], np.uint32), usage=wgpu.BufferUsage.UNIFORM)
              for k in range(PASSES_PER_SUBMIT)]
    pipelines = {name: device.create_compute_pipeline(
        layout="auto", compute={"module": device.create_shader_module(code=code), "entry_point": "main"})
        for name, code in (("mix", MIX), ("xor", XOR))}
    groups = (N + WORKGROUP - 1) // WORKGROUP

    def bind(name: str, resources: list) -> wgpu.GPUBindGroup:
        layout = pipelines[name].get_bind_group_layout(0)
        return device.create_bind_group(layout=layout, entries=[
            {"binding": i, "resource": {"buffer": r, "offset": 0, "size": r.size}} for i, r in enumerate(resources)])

    for s in range(SUBMITS):
        encoder = device.create_command_encoder()
        for p in range(PASSES_PER_SUBMIT):
            # Rotate which buffer is read and which is written, so every pass depends on an earlier one.
            a, b, c = ((s + p) % 3, (s + p + 1) % 3, (s + p + 2) % 3)
            if p % 2 == 0:
                group = bind("mix", [bufs[a], bufs[b], params[p]])
                mix(host[a], host[b], p)
                pipeline = pipelines["mix"]
            else:
                group = bind("xor", [bufs[a], bufs[b], bufs[c]])
                xor(host[a], host[b], host[c])
                pipeline = pipelines["xor"]
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(groups)
            compute.end()
        # Between submits: copy the first half of one buffer over another, and clear a tail.
        encoder.copy_buffer_to_buffer(bufs[s % 3], 0, bufs[(s + 1) % 3], 0, N * 2)
        host[(s + 1) % 3][: N // 2] = host[s % 3][: N // 2]
        encoder.clear_buffer(bufs[(s + 2) % 3], N * 3, N)
        host[(s + 2) % 3][N * 3 // 4:] = 0
        device.queue.submit([encoder.finish()])

    got = [np.frombuffer(device.queue.read_buffer(b), dtype=np.uint32) for b in bufs]
    ok = all(np.array_equal(g, h) for g, h in zip(got, host))
    print(f"wgpu_passes: {SUBMITS * PASSES_PER_SUBMIT} passes, result {'matches' if ok else 'DIFFERS from'} numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
