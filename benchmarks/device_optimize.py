"""The decode-shaped stream with a full barrier before every dispatch, and what `vkverify optimize` makes of it,
replayed side by side on this machine's device (issue 27): the GPU time of each replay (timestamps before and
after each command buffer, summed: the device's own time, without the host's submission between them) and its
host wall time (the whole replay: resources, recording, submits and waits), per token, their ratios, and whether
each replay's digests equal the simulator's reference.

    python benchmarks/device_optimize.py [TOKENS] [RUNS]      # default 10 tokens, 3 runs each, alternating
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
LAYERS = 4  # decode_stream: 41 commands a layer


def main(argv: list[str]) -> int:
    from decode_stream import decode_stream, full_barriers

    from vkverify.check.optimize import optimize
    from vkverify.model import ir
    from vkverify.runtime import replay

    tokens = int(argv[0]) if argv else 10
    runs = int(argv[1]) if len(argv) > 1 else 3
    full = full_barriers(decode_stream(tokens * LAYERS * 41, layers=LAYERS))
    result = optimize(full)
    streams = {"full": full, "optimized": result.stream}
    barriers = {name: sum(isinstance(c, ir.Barrier) for cb in s.command_buffers for c in cb.commands)
                for name, s in streams.items()}
    print(f"{tokens} tokens: barriers full {barriers['full']}, optimized {barriers['optimized']} "
          f"({result.counts}, {result.method})", flush=True)
    seconds: dict[str, list[float]] = {name: [] for name in streams}
    gpu: dict[str, list[float]] = {name: [] for name in streams}
    device = "-"
    for _ in range(runs):
        for name, stream in streams.items():
            start = time.perf_counter()
            replayed = replay(stream, timestamps=True)
            seconds[name].append(time.perf_counter() - start)
            gpu[name].append(sum(replayed.gpu_ns.values()) / 1e9)
            device = replayed.device
            print(f"  {name:>9}: GPU {1000 * gpu[name][-1]:.3f} ms in {len(replayed.gpu_ns)} command buffers, host "
                  f"{seconds[name][-1]:.3f} s, digests vs simulator: "
                  f"{'equal' if replayed.reference == {} else replayed.reference}", flush=True)
    for label, times in (("GPU", gpu), ("host wall", seconds)):
        full_s, optimized_s = (statistics.median(times[n]) for n in streams)
        print(f"{device}: {label} median per token full {1000 * full_s / tokens:.3f} ms, optimized "
              f"{1000 * optimized_s / tokens:.3f} ms, optimized/full {optimized_s / full_s:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
