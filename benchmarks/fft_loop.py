"""vkdispatch's FFT round trip in a loop: the semaphore-heavy shape of benchmarks/import.py (issue 24).

Each round uploads a complex signal into a new buffer, runs vkdispatch's FFT and inverse FFT on it and
reads it back: vkdispatch submits each step with a timeline semaphore signal, waits for it on the host
(vkWaitSemaphores, vkGetSemaphoreCounterValue) and binds each round's buffers in turn to its memory.
About 83 Vulkan calls a round (1024 points). Exits 1 where a round does not give its input back.

    python benchmarks/fft_loop.py ROUNDS [POINTS]     # POINTS: the signal's length (default 1024)
"""

from __future__ import annotations

import sys

import numpy as np


def main(argv: list[str]) -> int:
    import vkdispatch as vd

    rounds = int(argv[0]) if argv else 10
    points = int(argv[1]) if len(argv) > 1 else 1024
    vd.make_context(use_cpu=True)  # Lavapipe is a CPU device; a GPU, where there is one, comes first
    rng = np.random.default_rng(0)
    signal = (rng.random(points) + 1j * rng.random(points)).astype(np.complex64)
    for i in range(rounds):
        buffer = vd.asbuffer(signal)
        vd.fft.fft(buffer)
        vd.fft.ifft(buffer)
        if not np.allclose(buffer.read(0), signal, atol=1e-3):
            print(f"round {i}: the round trip DIFFERS from its input", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
