"""The resource shapes of issue 30 point 9, each run as a user runs it (the `vkverify` command, a fresh process)
and timed: each must finish within its bound, or stop at its budget with exit 2 and the line that says so.

- churn: `simulate --schedules 2` of 50,000 fills at seeded offsets over a 10^7-byte buffer (about 140,000 waw
  findings, each perturbed); bound 300 s (it was killed at 150 CPU-s, unfinished).
- bindings: `simulate --schedules 2` of one dispatch with 10^5 bindings (10^5 uninitialized reads); bound 300 s
  (it ran past 900 s).
- submits: `graph --format svg` of 2,000 submits, each signalling a timeline (8,000 nodes): refused at once past
  --max-nodes; with --max-nodes raised, stopped at `--timeout 30` with dot killed (it ran dot for over 10 min).

    python benchmarks/bounds.py              # every shape, full size
    python benchmarks/bounds.py --scale 0.1  # a tenth of each size (fills, bindings, submits)
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOUND = 300  # seconds, for the runs that must finish


def churn(fills: int = 50_000, size: int = 10 ** 7, seed: int = 0) -> dict:
    """`fills` fills in one command buffer, no barrier between them, at seeded offsets and sizes up to 400 KB."""
    rnd = random.Random(seed)
    commands = []
    for i in range(fills):
        offset = rnd.randrange(0, size - 4) // 4 * 4
        commands.append({"cmd": "fill", "dst": "B", "offset": offset,
                         "size": max(4, min(size - offset, rnd.randrange(4, 400_000)) // 4 * 4), "value": i})
    return {"format": "vkverify-stream/1", "name": "churn", "buffers": [{"id": "B", "size": size,
                                                                         "memory": "host_coherent"}],
            "command_buffers": {"cb0": commands},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]},
                                 {"op": "device_wait_idle"}, {"op": "host_read", "buffer": "B"}]}}


def bindings(n: int = 10 ** 5) -> dict:
    """One dispatch of an abstract shader reading and writing `n` buffers nothing wrote before."""
    return {"format": "vkverify-stream/1", "name": "bindings",
            "buffers": [{"id": f"b{i}", "size": 64} for i in range(n)],
            "shaders": {"k": {"bindings": ["read_write"] * n}},
            "command_buffers": {"cb0": [{"cmd": "dispatch", "shader": "k",
                                         "bindings": [{"buffer": f"b{i}"} for i in range(n)]}]},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": ["cb0"]}]}}


def submits(n: int = 2_000) -> dict:
    """`n` submits of one fill each to one buffer, each signalling the next value of a timeline (n waw findings)."""
    return {"format": "vkverify-stream/1", "name": "submits", "buffers": [{"id": "A", "size": 4096}],
            "semaphores": [{"id": "T", "type": "timeline", "initial": 0}],
            "command_buffers": {f"cb{i}": [{"cmd": "fill", "dst": "A", "value": i}] for i in range(n)},
            "threads": {"main": [{"op": "submit", "queue": "q0", "command_buffers": [f"cb{i}"],
                                  "signal": [{"semaphore": "T", "value": i + 1}]} for i in range(n)]}}


def run(doc: dict, *argv: str) -> tuple[float, int, str]:
    """(wall seconds, exit code, last stderr line) of `vkverify ARGV FILE` on `doc` written to a file."""
    with tempfile.TemporaryDirectory(prefix="vkverify-bounds-") as tmp:
        path = Path(tmp) / f"{doc['name']}.json"
        path.write_text(json.dumps(doc))
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "vkverify.cli", *argv, str(path)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, check=False)
        return time.perf_counter() - start, done.returncode, (done.stderr.strip().splitlines() or [""])[-1]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0, help="fraction of each shape's size (default 1)")
    args = p.parse_args(argv)
    scaled = lambda n: max(1, int(n * args.scale))  # noqa: E731
    cases = [
        ("churn: simulate --schedules 2, 50,000 fills over 10^7 bytes", churn(scaled(50_000)),
         ["simulate", "--schedules", "2", "--format", "json"], {0, 1}),
        ("bindings: simulate --schedules 2, one dispatch of 10^5 bindings", bindings(scaled(10 ** 5)),
         ["simulate", "--schedules", "2", "--format", "json"], {0, 1}),
        ("submits: graph --format svg, 2,000 submits", submits(scaled(2_000)), ["graph", "--format", "svg"], {0, 2}),
        ("submits: graph --format svg --max-nodes 10^6 --timeout 30", submits(scaled(2_000)),
         ["graph", "--format", "svg", "--max-nodes", "1000000", "--timeout", "30"], {0, 2}),
    ]
    failed = False
    for label, doc, command, codes in cases:
        seconds, code, said = run(doc, *command)
        within = seconds <= BOUND and code in codes
        failed |= not within
        print(f"{label}: {seconds:.1f} s, exit {code}{' (' + said + ')' if code == 2 else ''}"
              f"{'' if within else f'  OUT OF BOUND ({BOUND} s, exit {sorted(codes)})'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
