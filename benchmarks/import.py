"""`vkverify import` against gfxrecon-convert on the same captures: throughput past start-up, its growth at
10x the calls, peak memory against the written stream, for two shapes of capture (issue 24's targets).

Shapes, each captured on the default device (Lavapipe here) at a start-up size and two sizes 10x apart:
- `decode`: `vkverify replay` of a decode-shaped stream (decode_stream.py; 1 KiB buffers: a replay's time
  grows with them, the calls do not), ggml's shape: few submits, many dispatches;
- `semaphores`: vkdispatch's FFT round trip in a loop (fft_loop.py), the shape whose import grew with the
  square of the run: a submit, a timeline signal and host semaphore waits per step, buffers bound in turn
  to one memory. Skipped, saying why, where vkdispatch cannot be imported.

Every figure is of a fresh process, as a user runs it (the least of three runs for the start-up and the
smaller size, whose times a loaded machine blurs most): gfxrecon-convert writing its JSON lines (the
baseline), `vkverify import CAPTURE -o STREAM` (wall time, CPU time, max RSS), then `vkverify check
STREAM`. Start-up is the start-up size (one token, one round): Python's imports, the tools' start, the
program's own set-up. Past start-up (each size less the start-up size, the import's and the converter's
alike), per size: calls/s; the import's time over gfxrecon-convert's (target <= 3x), in wall and CPU time;
the import's max RSS over start-up's, over the stream's size (target <= 2x). Between the sizes: time per
call past start-up at 10x the calls over that at 1x (target <= 1.2x). Targets are printed beside the
figures, never asserted: a loaded machine slows both sides of each ratio.

    python benchmarks/import.py                                # both shapes: 1 + 20 tokens, 1 + 1250 rounds
    python benchmarks/import.py --tokens 200 --rounds 0        # 0: leave the shape out
    python benchmarks/import.py --rounds 12000 --keep DIR      # keep the captures and streams in DIR
    python benchmarks/import.py --rounds 12000 --keep DIR --reuse   # measure again the captures kept there
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
MIB = 1 << 20
PER_TOKEN = 30 * 41  # decode_stream's commands per token
REPEATS = (3, 3, 1)  # runs of convert and import per size: start-up, smaller, larger


@dataclass(frozen=True)
class Run:
    """One fresh process: wall and CPU seconds, max RSS in bytes."""

    wall: float
    cpu: float
    rss: int


# Linux carries a process's peak RSS over exec (the forking process's, here this one's, which holds the decode
# streams): each measured program is started by a small interpreter of its own, which reports the program's
# wait4 figures, so that a figure is at least that interpreter's few MiB, never this process's.
LAUNCHER = """import json, os, subprocess, sys, time
t0 = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage.ru_utime + usage.ru_stime,
                  usage.ru_maxrss * 1024]))
"""


def run(argv: list[str]) -> Run:
    """`argv` as a process of its own, timed; its output discarded, its failure raised with its stderr's end."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True, check=True)
    returncode, wall, cpu, rss = json.loads(done.stdout)
    if returncode not in (0, 1):  # check: 1 is findings
        raise RuntimeError(f"{Path(argv[1] if argv[0] == sys.executable else argv[0]).name} failed ({returncode}): "
                           f"{done.stderr.strip()[-500:]}")
    return Run(wall, cpu, rss)


@dataclass(frozen=True)
class Size:
    label: str
    calls: int
    capture: int  # bytes
    stream: int  # bytes of the written stream
    convert: Run
    imported: Run
    checked: Run


def fastest(argv: list[str], repeat: int) -> Run:
    """The least wall time, CPU time and max RSS of `repeat` runs: on a loaded machine a short run's time is
    mostly other processes'."""
    runs = [run(argv) for _ in range(repeat)]
    return Run(min(r.wall for r in runs), min(r.cpu for r in runs), min(r.rss for r in runs))


def capture_program(label: str, program: list[str], capture: Path) -> None:
    from vkverify.importer import capture_env

    done = subprocess.run(program, env=capture_env(capture, os.environ), capture_output=True, text=True, check=False)
    if done.returncode != 0 or not capture.exists():
        raise RuntimeError(f"{label}: the program failed under the capture layer ({done.returncode}): "
                           f"{done.stderr.strip()[-500:]}")


def measure(label: str, stem: str, program: list[str], workdir: Path, repeat: int, reuse: bool) -> Size:
    """Capture `program` into workdir/`stem`.gfxr (with `reuse`, unless it is there), then convert, import and check
    the capture, each in a process of its own (convert and import `repeat` times)."""
    capture, stream = workdir / f"{stem}.gfxr", workdir / f"{stem}.json"
    if reuse and capture.exists():
        print(f"  {label}: reusing {capture}")
    else:
        capture.unlink(missing_ok=True)
        capture_program(label, program, capture)
    jsonl = workdir / f"{stem}.jsonl"
    convert = fastest(["gfxrecon-convert", "--output", str(jsonl), str(capture)], repeat)
    with jsonl.open("rb") as lines:
        calls = sum(1 for _ in lines) - 1  # the header line
    jsonl.unlink()
    imported = fastest([sys.executable, "-m", "vkverify.cli", "import", str(capture), "-o", str(stream)], repeat)
    checked = run([sys.executable, "-m", "vkverify.cli", "check", "-q", str(stream)])
    return Size(label, calls, capture.stat().st_size, stream.stat().st_size, convert, imported, checked)


def report(title: str, sizes: list[Size]) -> None:
    """Past start-up: each size less the start-up size, the import's and the converter's time alike (the
    start-up capture holds the program's own set-up: a decode replay's 12k calls of buffers and pipelines)."""
    start, small, large = sizes
    print(f"{title}\n  start-up ({start.label}: {start.calls:,} calls): import {start.imported.wall:.2f} s wall, "
          f"{start.imported.cpu:.2f} s CPU, max RSS {start.imported.rss / MIB:.0f} MiB; gfxrecon-convert "
          f"{start.convert.wall:.2f} s")
    per_call = []
    for s in (small, large):
        calls = s.calls - start.calls
        wall, cpu = s.imported.wall - start.imported.wall, s.imported.cpu - start.imported.cpu
        convert, convert_cpu = s.convert.wall - start.convert.wall, s.convert.cpu - start.convert.cpu
        memory = s.imported.rss - start.imported.rss
        per_call.append((wall / calls, cpu / calls))
        print(f"  {s.label}: {s.calls:,} calls, capture {s.capture / MIB:.1f} MiB, stream {s.stream / MIB:.1f} MiB\n"
              f"    gfxrecon-convert {s.convert.wall:.2f} s, max RSS {s.convert.rss / MIB:.0f} MiB\n"
              f"    import {s.imported.wall:.2f} s, max RSS {s.imported.rss / MIB:.0f} MiB; "
              f"check {s.checked.wall:.2f} s, max RSS {s.checked.rss / MIB:.0f} MiB; "
              f"import + check {s.imported.wall + s.checked.wall:.2f} s\n"
              f"    past start-up ({calls:,} calls): import {wall:.2f} s, {calls / wall:,.0f} calls/s, "
              f"{wall / convert:.1f}x gfxrecon-convert's {convert:.2f} s (target <= 3x); in CPU time "
              f"{cpu:.2f} s, {cpu / convert_cpu:.1f}x convert's {convert_cpu:.2f} s\n"
              f"    max RSS past start-up {memory / MIB:.0f} MiB: {memory / s.stream:.2f}x the stream (target <= 2x)")
    print(f"  time per call past start-up at {(large.calls - start.calls) / (small.calls - start.calls):.1f}x the "
          f"calls: {per_call[1][0] / per_call[0][0]:.2f}x wall, {per_call[1][1] / per_call[0][1]:.2f}x CPU "
          f"(target <= 1.2x)")


def decode(tokens: int, workdir: Path, reuse: bool) -> list[Size]:
    from decode_stream import decode_stream

    from vkverify.model.dump import dumps

    sizes = []
    for repeat, n in zip(REPEATS, (1, 1 + tokens // 10, 1 + tokens)):  # past the first token: 10x the calls
        source = workdir / f"decode{n}.json"
        source.write_text(dumps(decode_stream(n * PER_TOKEN, size=1024)))
        program = [sys.executable, "-m", "vkverify.cli", "replay", str(source)]
        sizes.append(measure(f"{n} token{'s' * (n > 1)}", f"decode{n}", program, workdir, repeat, reuse))
    return sizes


def semaphores(rounds: int, workdir: Path, reuse: bool) -> list[Size]:
    sizes = []
    for repeat, n in zip(REPEATS, (1, 1 + rounds // 10, 1 + rounds)):
        program = [sys.executable, str(HERE / "fft_loop.py"), str(n)]
        sizes.append(measure(f"{n} round{'s' * (n > 1)}", f"fft{n}", program, workdir, repeat, reuse))
    return sizes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=20, help="decode tokens past the start-up token at the "
                                                                 "larger size (0: leave the shape out)")
    parser.add_argument("--rounds", type=int, default=1250, help="FFT round trips past the start-up round at "
                                                                   "the larger size (0: leave the shape out)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep captures and streams here")
    parser.add_argument("--reuse", action="store_true", help="with --keep: a capture already in DIR is measured, "
                                                             "not made again (a 10^6-call capture takes minutes)")
    args = parser.parse_args(argv)
    if args.reuse and not args.keep:
        parser.error("--reuse needs --keep DIR")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="vkverify-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.tokens:
            report("decode (vkverify replay of decode_stream, ggml's shape)", decode(args.tokens, workdir, args.reuse))
        if args.rounds:
            try:
                import vkdispatch  # noqa: F401
            except ImportError as e:
                print(f"semaphores: skipped: vkdispatch cannot be imported ({e}); pip install vkdispatch")
            else:
                report("semaphores (vkdispatch FFT round trip, looped)", semaphores(args.rounds, workdir, args.reuse))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
