"""A third-party compute program: vkdispatch (PyPI `vkdispatch`), an FFT round trip in a loop.

Each round uploads a complex signal into one buffer, runs vkdispatch's
generated FFT and inverse FFT shaders over it in place, and reads it back,
checked against the signal (the round trip is the identity, up to float32
rounding). vkdispatch records its own barriers and submits each step with a
timeline semaphore; `vkverify capture -- python examples/thirdparty/vkdispatch_fft.py`
checks them. On a CPU device (Lavapipe) the context asks for it: vkdispatch
picks a GPU otherwise.

Exit status 0 when every round gives the signal back, 1 otherwise.
"""

from __future__ import annotations

import sys

import numpy as np
import vkdispatch as vd

ROUNDS, N = 3, 256


def main() -> int:
    vd.make_context(use_cpu=True)
    rng = np.random.default_rng(24)
    buffer = vd.Buffer((N,), vd.complex64)
    worst = 0.0
    for _ in range(ROUNDS):
        signal = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64)
        buffer.write(signal)
        vd.fft.fft(buffer)
        vd.fft.ifft(buffer)
        worst = max(worst, float(np.abs(buffer.read(0) - signal).max()))
    ok = worst < 1e-4
    print(f"vkdispatch_fft: {ROUNDS} FFT round trips of {N} points, result {'matches' if ok else 'DIFFERS from'} "
          f"the signal (largest error {worst:.1e})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
