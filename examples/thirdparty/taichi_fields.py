"""A third-party compute program: Taichi (PyPI `taichi`) with arch=vulkan.

Two fields uploaded from numpy, three kernels (a saxpy twice, then a
neighbour sum reading one field and writing the other), then a readback
checked against numpy. Taichi records its own barriers, submits and waits;
`vkverify capture -- python examples/thirdparty/taichi_fields.py` checks them.

Exit status 0 when the device's result equals numpy's, 1 otherwise.
"""

import sys  # no `from __future__ import annotations`: Taichi reads kernel annotations as objects

import numpy as np
import taichi as ti

N = 1024


def main() -> int:
    ti.init(arch=ti.vulkan, offline_cache=False, log_level=ti.WARN)
    x = ti.field(ti.f32, shape=N)
    y = ti.field(ti.f32, shape=N)

    @ti.kernel
    def saxpy(a: ti.f32):
        for i in x:
            y[i] = a * x[i] + y[i]

    @ti.kernel
    def neighbours():
        for i in x:
            x[i] = y[i] + y[(i + 1) % N]

    host_x = np.arange(N, dtype=np.float32) * 0.5
    host_y = np.ones(N, dtype=np.float32)
    x.from_numpy(host_x)
    y.from_numpy(host_y)
    saxpy(2.0)
    saxpy(3.0)
    neighbours()
    host_y = host_y + 5.0 * host_x
    host_x = host_y + np.roll(host_y, -1)
    ok = np.allclose(x.to_numpy(), host_x) and np.allclose(y.to_numpy(), host_y)
    print(f"taichi_fields: 3 kernels, result {'matches' if ok else 'DIFFERS from'} numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
