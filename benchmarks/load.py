"""How fast a stream file loads (vkverify.model.load: JSON, value and schema checks, the IR) next to checking it.

Writes decode-shaped streams (benchmarks/decode_stream.py) of about 10^5 and 10^6 commands as vkverify writes a
stream (model.dumps), then for each size, in a fresh process: the load's seconds, time per command and peak
memory (the process's peak RSS, VmHWM, less its RSS before loading); schedule.check's seconds on the loaded
stream, and its peak memory measured as the load's in a fresh process that holds only the loaded stream
(unpickled; VmHWM during the check less the RSS before it: what the check adds to the stream; in the load's
process the check would reuse the heap the load freed); the ratios load/check of time (target: at most 1.0
at 10^6) and of peak memory (target: at most 3 at 10^6); and the seconds vkverify.check.check() spends
validating the same stream built in memory (loader.validate: dumped and loaded again), and their ratio to the
check's. Under each row, from a process of its own, the peaks of what the load and the check allocate
(tracemalloc), which unlike RSS do not depend on what freed heap a phase reuses. The ratios of time are
printed of wall-clock seconds and of the process's CPU seconds: on a machine shared with other work, the CPU
time is the steadier of the two.

    python benchmarks/load.py                                # 1e5, 1e6
    python benchmarks/load.py --baseline 4b73e7b 1e5 1e6     # also the loader of that commit, on the same files
    python benchmarks/load.py --compact 1e6                  # the file written without indentation

With --baseline REV each file is also loaded by the code of commit REV (check_scaling.py's temporary worktree),
alternating with the current code, and the ratios current/baseline are printed: the same machine, the same minutes.
"""

from __future__ import annotations

import json
import pickle
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1 << 20
sys.path[:0] = [str(HERE.parent), str(HERE)]


def measure(file: str, n: int, code: str | None) -> dict:
    from decode_stream import command_count, decode_stream

    from vkverify.check.schedule import check
    from vkverify.model import load
    from vkverify.model.loader import validate

    before = _status_kib("VmRSS")
    with _timed("load") as load_time:
        stream = load(file)
    peak = _status_kib("VmHWM")
    with _timed("check") as check_time:
        findings = check(stream)
    pickled = Path(file + ".pickle")
    pickled.write_bytes(pickle.dumps(stream, pickle.HIGHEST_PROTOCOL))
    try:
        check_peak = run_one(pickled, n, code and Path(code), "--check-peak")["check_peak_mib"]
    finally:
        pickled.unlink()
    built = decode_stream(n)
    with _timed("validate") as validate_time:
        validate(built)
    return {"commands": command_count(stream), "peak_mib": (peak - before) / 1024,
            "check_peak_mib": check_peak, "findings": len(findings),
            **load_time, **check_time, **validate_time}


def check_peak(pickled: str) -> float:
    """MiB: the peak RSS during schedule.check of the pickled stream less the RSS before it, unpickling's own
    peak left out."""
    from vkverify.check.schedule import check

    stream = pickle.loads(Path(pickled).read_bytes())
    _reset_peak()
    before = _status_kib("VmRSS")
    check(stream)
    return (_status_kib("VmHWM") - before) / 1024


def traced_peaks(file: str) -> dict:
    """MiB: the peaks of what the load and then the check allocate (tracemalloc: Python's allocations, whatever
    the heap held before). An RSS figure depends on what freed heap a phase can reuse: with the IR's objects
    slotted, unpickling frees less, and the check's RSS growth rose from 24-27 to 40-44 MiB while its
    allocations stayed at 36 MiB. Run apart from the timed runs: tracing slows them."""
    import tracemalloc

    from vkverify.check.schedule import check
    from vkverify.model import load

    tracemalloc.start()
    stream = load(file)
    load_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    held = tracemalloc.get_traced_memory()[0]
    check(stream)
    return {"load_traced_mib": load_peak / MIB, "check_traced_mib": (tracemalloc.get_traced_memory()[1] - held) / MIB}


@contextmanager
def _timed(name: str):
    """{name: wall seconds, name_cpu: CPU seconds} of the block, filled when it ends."""
    times: dict[str, float] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    yield times
    times.update({name: time.perf_counter() - wall, f"{name}_cpu": time.process_time() - cpu})


def _status_kib(field: str) -> int:
    """A field of /proc/self/status (Linux), in KiB. Not ru_maxrss: exec keeps the parent's, here the larger."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return int(line.split()[1])


def _reset_peak() -> None:
    """VmHWM back to the current RSS (Linux 4.0 and later), so that a later phase's peak is its own."""
    Path("/proc/self/clear_refs").write_text("5")


def run_one(file: Path, n: int, code: Path | None = None, what: str = "--one") -> dict:
    """One file in a fresh process, loaded (--check-peak: unpickled and checked) by the `vkverify` under `code`
    (None: this checkout's)."""
    from check_scaling import fresh_process

    return fresh_process(__file__, [what, str(file), str(n)], code)


def traced_row(t: dict) -> str:
    return (f"{'':>9} allocation peaks (tracemalloc): load {t['load_traced_mib']:.0f} MiB, check "
            f"{t['check_traced_mib']:.0f} MiB, load/check {t['load_traced_mib'] / t['check_traced_mib']:.2f}")


def row(label: str, r: dict) -> str:
    return (f"{label:>9} {r['commands']:>9} {r['load']:>7.2f} {r['load'] / r['commands'] * 1e6:>7.2f} "
            f"{r['peak_mib']:>8.0f} {r['check']:>7.2f} {r['check_peak_mib']:>8.0f} {r['validate']:>10.2f} "
            f"{r['load'] / r['check']:>5.2f} {r['load_cpu'] / r['check_cpu']:>5.2f} "
            f"{r['peak_mib'] / r['check_peak_mib']:>5.2f} {r['validate'] / r['check']:>5.2f} "
            f"{r['validate_cpu'] / r['check_cpu']:>5.2f}")


def main(argv: list[str]) -> int:
    from check_scaling import _nothing, _option, worktree

    code, argv = _option(argv, "--code", None)
    if code:
        sys.path.insert(0, code)
    if argv[:1] == ["--one"]:
        print(json.dumps(measure(argv[1], int(argv[2]), code)))
        return 0
    if argv[:1] == ["--check-peak"]:
        print(json.dumps({"check_peak_mib": check_peak(argv[1])}))
        return 0
    if argv[:1] == ["--traced"]:
        print(json.dumps(traced_peaks(argv[1])))
        return 0
    baseline, argv = _option(argv, "--baseline", None)
    indent = None if "--compact" in argv else 1
    sizes = [int(float(a)) for a in argv if a != "--compact"] or [10**5, 10**6]
    with (worktree(baseline) if baseline else _nothing()) as old, \
            tempfile.TemporaryDirectory(prefix="vkverify-load-") as tmp:
        return _compare(sizes, indent, Path(tmp), old, baseline)


def _compare(sizes: list[int], indent: int | None, tmp: Path, old: Path | None, baseline: str | None) -> int:
    from decode_stream import decode_stream

    from vkverify.model import dumps

    print(f"{'':>55} {'':>10} {'load/check':>17} {'validate/check':>11}")
    print(f"{'code':>9} {'commands':>9} {'load s':>7} {'us/cmd':>7} {'peak MiB':>8} {'check s':>7} {'peak MiB':>8} "
          f"{'validate s':>10} {'wall':>5} {'cpu':>5} {'peak':>5} {'wall':>5} {'cpu':>5}", flush=True)
    result = 0
    for n in sizes:
        file = tmp / f"decode-{n}.json"
        file.write_text(dumps(decode_stream(n), indent=indent))
        try:
            r = run_one(file, n)
            print(row("current", r), flush=True)
            print(traced_row(run_one(file, n, None, "--traced")), flush=True)
            if old is not None:
                b = run_one(file, n, old)
                print(row(baseline[:9], b), flush=True)
                print(traced_row(run_one(file, n, old, "--traced")), flush=True)
                print(f"{'':>9} current/baseline: load {r['load'] / b['load']:.2f}x, peak memory "
                      f"{r['peak_mib'] / b['peak_mib']:.2f}x, validate {r['validate'] / b['validate']:.2f}x",
                      flush=True)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
        if r["findings"]:
            print("error: the decode stream is meant to be hazard-free", file=sys.stderr)
            result = 1
        file.unlink()
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
