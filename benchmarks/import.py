"""Calls per second through `import_capture` and through `check`, for a capture of >= 10^5 calls.

The capture comes from a program of our own (vkverify.runtime cannot replay under the capture layer
yet): tests/_lavapipe.py's device, one command buffer of N (bind descriptor set, push, dispatch,
barrier) groups over three buffers, submitted once. Run: python benchmarks/import.py [N]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = """
import sys
import numpy as np
from tests._lavapipe import ComputeDevice
from vkverify.shaders import interface, load_spirv, pack_push

groups = int(sys.argv[1])
d = ComputeDevice()
vk, dev = d.vk, d.device
submit = d._submit

def many(pipeline, layout, descriptor_set, push, g):
    # One command buffer with `groups` dispatches, each followed by a compute->compute barrier.
    alloc = vk.VkCommandBufferAllocateInfo(commandPool=d.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           commandBufferCount=1)
    cbs = vk.vkAllocateCommandBuffers(dev, alloc)
    cb = cbs[0]
    begin = vk.VkCommandBufferBeginInfo()
    vk.vkBeginCommandBuffer(cb, begin)
    vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
    sets = [descriptor_set]
    values = vk.ffi.from_buffer(push)
    barrier = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
                                 dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
    barriers = [barrier]
    for _ in range(groups):
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, sets, 0, None)
        vk.vkCmdPushConstants(cb, layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push), values)
        vk.vkCmdDispatch(cb, 1, 1, 1)
        vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                0, 1, barriers, 0, None, 0, None)
    vk.vkEndCommandBuffer(cb)
    submits = [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cbs)]
    vk.vkQueueSubmit(d.queue, 1, submits, None)
    vk.vkQueueWaitIdle(d.queue)

d._submit = many
n = 64
d.run(load_spirv("add"), [np.arange(n, dtype=np.float32)] * 2 + [np.zeros(n, np.float32)],
      pack_push(interface("add"), [n]), (1, 1, 1))
d.close()
"""


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from vkverify.check import check
    from vkverify.importer import import_capture

    groups = int(sys.argv[1]) if len(sys.argv) > 1 else 25_000
    with tempfile.TemporaryDirectory() as tmp:
        capture = Path(tmp) / "bench.gfxr"
        env = dict(os.environ, VK_INSTANCE_LAYERS="VK_LAYER_LUNARG_gfxreconstruct", GFXRECON_CAPTURE_FILE=str(capture),
                   GFXRECON_CAPTURE_FILE_TIMESTAMP="false", PYTHONPATH=str(ROOT))
        subprocess.run([sys.executable, "-c", PROGRAM, str(groups)], env=env, cwd=ROOT, check=True,
                       capture_output=True)
        size = capture.stat().st_size
        t0 = time.perf_counter()
        stream, summary = import_capture(capture)
        t1 = time.perf_counter()
        findings = check(stream)
        t2 = time.perf_counter()
    calls = summary.calls
    print(f"capture: {calls} calls, {size} bytes; "
          f"stream: {sum(summary.commands.values())} commands, {sum(summary.host_ops.values())} host ops")
    print(f"import: {t1 - t0:.2f} s, {calls / (t1 - t0):,.0f} calls/s")
    print(f"check:  {t2 - t1:.2f} s, {calls / (t2 - t1):,.0f} calls/s ({len(findings)} findings)")


if __name__ == "__main__":
    main()
