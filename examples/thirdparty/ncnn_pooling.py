"""A third-party compute program: ncnn (PyPI `ncnn`) with use_vulkan_compute, whose output is small.

A network of weightless layers (ReLU, Sigmoid, a global average pooling) over a 12x16x64 blob, given as
param text, run on the Vulkan device, and its 12-float output (48 bytes) checked against numpy. ncnn
sub-allocates its blobs from one large buffer, so the output shares a 4 KiB page with the layers'
intermediate blobs; the host reads the 48 bytes through the mapping after ncnn's barrier to the host and a
fence wait. `vkverify capture -- python examples/thirdparty/ncnn_pooling.py` checks it.

Exit status 0 when the device's result equals numpy's, 1 otherwise.
"""

from __future__ import annotations

import sys

import ncnn
import numpy as np

PARAM = """7767517
4 4
Input    data 0 1 data 0=64 1=16 2=12
ReLU     relu 1 1 data r
Sigmoid  sig  1 1 r s
Pooling  pool 1 1 s out 0=1 4=1
"""


def forward(x: np.ndarray) -> np.ndarray | None:
    """The network's output for `x` on the Vulkan device; None where the network does not load."""
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    net.opt.use_fp16_packed = net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = False  # fp32, as numpy
    if net.load_param_mem(PARAM) != 0 or net.load_model(ncnn.DataReaderFromEmpty()) != 0:
        return None
    extractor = net.create_extractor()
    extractor.input("data", ncnn.Mat(x).clone())
    _, out = extractor.extract("out")
    return np.array(out).ravel()


def main() -> int:
    x = (np.arange(12 * 16 * 64, dtype=np.float32).reshape(12, 16, 64) - 6000) / 1500
    ncnn.create_gpu_instance()
    try:
        got = forward(x)
    finally:
        ncnn.destroy_gpu_instance()
    if got is None:
        print("ncnn_pooling: the network did not load", file=sys.stderr)
        return 1
    ok = got.shape == (12,) and np.allclose(got, (1 / (1 + np.exp(-np.maximum(x, 0)))).mean(axis=(1, 2)), atol=1e-5)
    print(f"ncnn_pooling: 12 channels pooled, result {'matches' if ok else 'DIFFERS from'} numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
