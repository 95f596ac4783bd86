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
    python benchmarks/check_scaling.py --baseline 566cccb 1e6   # also the checker of that commit, side by side

With --baseline REV each size is also checked by the code of commit REV (a temporary git worktree,
its own copy of this script), alternating with the current code, and the ratio current/baseline is
printed: the same machine, the same minutes.

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
import tempfile
import time
from contextlib import contextmanager
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


@contextmanager
def worktree(rev: str):
    """This script as it was at commit `rev`, in a temporary git worktree."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(path), rev], check=True)
        try:
            yield path / "benchmarks" / "check_scaling.py"
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(path)], check=True)


def run_one(script: Path, n: int, kv_history: bool) -> dict:
    out = subprocess.run([sys.executable, str(script), "--one", str(n)] + ["--kv-history"] * kv_history,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def row(label: str, r: dict) -> str:
    return (f"{label:>9} {r['commands']:>10} {r['seconds']:>9.2f} {r['commands'] / r['seconds']:>11.0f} "
            f"{r['peak_mib']:>9.1f} {r['findings']:>8}")


def main(argv: list[str]) -> int:
    kv_history = "--kv-history" in argv
    argv = [a for a in argv if a != "--kv-history"]
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(int(float(argv[1])), kv_history)))
        return 0
    baseline = None
    if argv[:1] == ["--baseline"]:
        baseline, argv = argv[1], argv[2:]
    sizes = [int(float(a)) for a in argv] or [10**4, 10**5, 10**6]
    with (worktree(baseline) if baseline else _nothing()) as old:
        return _compare(sizes, kv_history, old, baseline)


@contextmanager
def _nothing():
    yield None


def _compare(sizes: list[int], kv_history: bool, old: Path | None, baseline: str | None) -> int:
    rows = []
    print(f"{'code':>9} {'commands':>10} {'seconds':>9} {'commands/s':>11} {'peak MiB':>9} {'findings':>8}", flush=True)
    for n in sizes:
        try:
            r = run_one(Path(__file__), n, kv_history)
            print(row("current", r), flush=True)
            if old is not None:
                b = run_one(old, n, kv_history)
                print(row(baseline[:9], b), flush=True)
                print(f"{'':>9} current/baseline time {r['seconds'] / b['seconds']:.2f}x", flush=True)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
        rows.append(r)
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
