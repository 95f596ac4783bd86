"""`vkverify optimize` on decode-shaped streams with a full barrier before every dispatch (decode_stream.full_barriers,
an engine that cannot prove a hazard absent), and on the hand-placed decode stream (barriers only on proven hazards):
barriers before and after, how many narrowed, the optimizer's time against the plain check's in the same process
(target issue 27: at most 10x at 10^5 commands), and how the kept barriers were chosen. Progress on stderr.

    python benchmarks/optimize.py                 # 1e4 and 1e5 commands, the per-token shape
    python benchmarks/optimize.py 2e5 --shape resubmitted
    python benchmarks/optimize.py --capture run.gfxr   # a capture, through the importer, instead

A third-party program's capture: vkdispatch's FFT round trip looped 1250 times (about 10^5 calls, 5004 pipeline
barriers), made by `python benchmarks/import.py --tokens 0 --rounds 1250 --keep DIR` (DIR/fft1251.gfxr).
"""

from __future__ import annotations

import argparse
import sys
import time

from decode_stream import SHAPES, decode_stream, full_barriers

from vkverify.check import check
from vkverify.check.optimize import optimize
from vkverify.model import ir


def global_barriers(stream: ir.Stream) -> int:
    return sum(isinstance(c, ir.Barrier) and not c.buffers for cb in stream.command_buffers for c in cb.commands)


def measure(name: str, stream: ir.Stream) -> None:
    began = time.perf_counter()
    check(stream)
    plain = time.perf_counter() - began
    result = optimize(stream, progress=lambda line: print(f"  {name}: {line}", file=sys.stderr))
    c = result.counts
    print(f"{name:34} {global_barriers(stream):7} -> {global_barriers(result.stream):6}  narrowed {c['narrow']:6}  "
          f"check {plain:6.2f} s  optimize {result.seconds:7.2f} s  {result.seconds / plain:5.1f}x (<= 10x)  "
          f"{result.rounds} round(s); {result.method}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="*", type=float, default=[1e4, 1e5], help="commands (default 1e4 1e5)")
    p.add_argument("--shape", choices=sorted(SHAPES), default="tokens")
    p.add_argument("--capture", help="a .gfxr capture (or gfxrecon-convert JSON lines) instead of generated streams")
    args = p.parse_args()
    print(f"{'stream':34} {'barriers -> kept':>17}")
    if args.capture:
        from vkverify.importer import import_capture
        stream, _ = import_capture(args.capture)
        measure(args.capture, stream)
        return
    for n in args.sizes:
        placed = decode_stream(int(n), **SHAPES[args.shape])
        measure(f"{args.shape} {n:.0e} full barriers", full_barriers(placed))
        measure(f"{args.shape} {n:.0e} hand-placed", placed)


if __name__ == "__main__":
    main()
