"""How `vkverify check` scales with the stream's length (issue: the checker is linear).

Generates decode-shaped streams (benchmarks/decode_stream.py) of about 10^4,
10^5 and 10^6 commands, checks each in a fresh process, and prints commands/s,
the checker's peak memory (the process's peak RSS less its RSS before
checking) and the ratio of the time per command at the largest size to that
at the smallest. Targets: 10^6 commands in at most 20 s and 2 GiB; the ratio
within 1.5.

    python benchmarks/check_scaling.py                  # 1e4, 1e5, 1e6
    python benchmarks/check_scaling.py 1e4 1e5          # other sizes
    python benchmarks/check_scaling.py --kv-history     # attention reads the whole KV cache

With --kv-history each token reads every KV slot written so far, each slot by
a different dispatch: the work per token grows with the context, so time per
command grows with the stream's length by construction (the range map holds
one range per slot, as syncval's would).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]


def measure(n: int, kv_history: bool) -> dict:
    from decode_stream import command_count, decode_stream

    from vkverify.check import check

    stream = decode_stream(n, kv_history=kv_history)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    findings = check(stream)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"commands": command_count(stream), "seconds": seconds, "findings": len(findings),
            "peak_mib": (peak - before) / 1024}


def main(argv: list[str]) -> int:
    kv_history = "--kv-history" in argv
    argv = [a for a in argv if a != "--kv-history"]
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(int(float(argv[1])), kv_history)))
        return 0
    sizes = [int(float(a)) for a in argv] or [10**4, 10**5, 10**6]
    rows = []
    print(f"{'commands':>10} {'seconds':>9} {'commands/s':>11} {'peak MiB':>9} {'findings':>8}", flush=True)
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)] + ["--kv-history"] * kv_history,
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        r = json.loads(out.stdout)
        rows.append(r)
        print(f"{r['commands']:>10} {r['seconds']:>9.2f} {r['commands'] / r['seconds']:>11.0f} "
              f"{r['peak_mib']:>9.1f} {r['findings']:>8}", flush=True)
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        ratio = (large["seconds"] / large["commands"]) / (small["seconds"] / small["commands"])
        print(f"time per command, {large['commands']} vs {small['commands']} commands: {ratio:.2f}x "
              f"(target <= 1.5x)")
    if any(r["findings"] for r in rows):
        print("error: the decode stream is meant to be hazard-free", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
