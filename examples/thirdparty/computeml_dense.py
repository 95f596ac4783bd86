"""A third-party compute program: computeml (PyPI `computeml`), a dense layer through its Vulkan kernels.

relu(x @ w) * 2 over a 64x32 input and 32x16 weights, read back and checked
against numpy. computeml records the three kernels (a tiled matmul, relu, a
scale) into one command buffer with its own barriers, submits it with a fence
when `.numpy()` asks for the result, and reads the output through its
mapping; `vkverify capture -- python examples/thirdparty/computeml_dense.py`
checks them.

Exit status 0 when the device's result equals numpy's, 1 otherwise.
"""

from __future__ import annotations

import sys

import computeml as cml
import numpy as np


def main() -> int:
    rng = np.random.default_rng(24)
    x, w = rng.random((64, 32), dtype=np.float32), rng.random((32, 16), dtype=np.float32)
    ctx = cml.Context()
    got = (cml.ops.relu(ctx.asarray(x) @ ctx.asarray(w)) * 2.0).numpy()
    ok = np.allclose(got, np.maximum(x @ w, 0) * 2, atol=1e-4)
    print(f"computeml_dense: relu(x @ w) * 2 on {ctx.device_name}, result {'matches' if ok else 'DIFFERS from'} numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
