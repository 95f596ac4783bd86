"""A third-party compute program: ncnn (PyPI `ncnn`) with use_vulkan_compute.

A network of weightless layers (ReLU, Sigmoid, a scalar add) over a 4x16x64
blob, given as param text, run on the Vulkan device, and its output checked
against numpy. ncnn uploads the input, records its own barriers (down to the
one that makes the output visible to the host), submits and waits;
`vkverify capture -- python examples/thirdparty/ncnn_layers.py` checks them.

Exit status 0 when the device's result equals numpy's, 1 otherwise.
"""

from __future__ import annotations

import sys

import ncnn
import numpy as np

PARAM = """7767517
4 4
Input    data 0 1 data 0=64 1=16 2=4
ReLU     relu 1 1 data r
Sigmoid  sig  1 1 r s
BinaryOp add  1 1 s out 0=0 1=1 2=1.5
"""


def forward(x: np.ndarray) -> np.ndarray | None:
    """The network's output for `x` on the Vulkan device; None where the network does not load. Its objects
    are freed on return, before the GPU instance is destroyed (they hold its device)."""
    net = ncnn.Net()
    net.opt.use_vulkan_compute = True
    # fp32 throughout, so that numpy's result is the reference.
    net.opt.use_fp16_packed = net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = False
    # No weights, but loading the (empty) model is what creates the layers' Vulkan pipelines.
    if net.load_param_mem(PARAM) != 0 or net.load_model(ncnn.DataReaderFromEmpty()) != 0:
        return None
    extractor = net.create_extractor()
    extractor.input("data", ncnn.Mat(x).clone())
    _, out = extractor.extract("out")
    return np.array(out)


def main() -> int:
    x = (np.arange(4 * 16 * 64, dtype=np.float32).reshape(4, 16, 64) - 2000) / 500
    ncnn.create_gpu_instance()
    try:
        got = forward(x)
    finally:
        ncnn.destroy_gpu_instance()
    if got is None:
        print("ncnn_layers: the network did not load", file=sys.stderr)
        return 1
    ok = np.allclose(got, 1 / (1 + np.exp(-np.maximum(x, 0))) + 1.5, atol=1e-5)
    print(f"ncnn_layers: 3 layers, result {'matches' if ok else 'DIFFERS from'} numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
