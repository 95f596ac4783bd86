"""Every library kernel on a real Vulkan device (Lavapipe here) equals its
numpy semantics bit for bit."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from vkverify.shaders import SEMANTICS, interface, load_spirv, pack_push

SIZES = (1, 100, 1000)
PAD = 3  # words past the pushed counts, which no kernel may touch


@pytest.fixture(scope="module")
def device(compute_device):
    return compute_device


def _u32(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**32, n, dtype=np.uint32)


def _f32(rng: np.random.Generator, n: int) -> np.ndarray:
    # Normal magnitudes: no denormals, which a device may flush to zero.
    return rng.uniform(-100, 100, n).astype(np.float32)


def _case(name: str, n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], list[float]]:
    """Random buffers and push constants for `name` over `n` elements."""
    u, f, m = (lambda k=n: _u32(rng, k + PAD)), (lambda k=n: _f32(rng, k + PAD)), n + PAD
    if name.startswith("generic_"):
        n_read, n_write = (int(part[1:]) for part in name.split("_")[1:])
        lengths = [n + k for k in range(n_read)] + [n] * n_write
        return [u(k) for k in lengths], [int(_u32(rng, 1)[0]), *lengths]
    cases = {
        "fill": lambda: ([u()], [n, int(_u32(rng, 1)[0])]),
        "copy": lambda: ([u(), u()], [n]),
        "add": lambda: ([f(), f(), f()], [n]),
        "axpy": lambda: ([f(), f()], [n, 1.37]),
        "scale": lambda: ([f()], [n, -2.71]),
        "reduce_sum": lambda: ([u(), u(4)], [n, 2]),
        "matvec": lambda: ([u(7 * n), u(7), u()], [n, 7]),
        "slow_writer": lambda: ([u()], [n, 200, 12345]),
        "reverse_reader": lambda: ([u(), u()], [n]),
        "histogram": lambda: ([u(), u(16)], [n, 13]),
        "atomic_add": lambda: ([u()], [int(_u32(rng, 1)[0]), n]),
        "gather": lambda: ([u(), rng.integers(0, 2 * m, m, dtype=np.uint32), u()], [n, n]),
    }
    return cases[name]()


def _groups(n: int) -> tuple[int, int, int]:
    # Fewer invocations than elements and a 2-D grid for the largest size, to
    # exercise the grid-stride loops and the grid flattening.
    return (3, 2, 1) if n > 500 else (-(-n // 64), 1, 1)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_device_equals_semantics(device, name, n):
    rng = np.random.default_rng(zlib.crc32(f"{name}/{n}".encode()))
    buffers, push = _case(name, n, rng)
    groups = _groups(n)
    expected = SEMANTICS[name](buffers, push, groups)
    got = device.run(load_spirv(name), buffers, pack_push(interface(name), push), groups)
    for b, before in enumerate(buffers):
        want = expected.get(b, before)
        # Compare bits: -0.0 == 0.0 and NaN != NaN would hide differences.
        np.testing.assert_array_equal(got[b].view(np.uint32), np.asarray(want).view(np.uint32),
                                      err_msg=f"{name} binding {b}")
