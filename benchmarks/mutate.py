"""`vkverify mutate` throughput on the corpus: mutants per second with -j 1 and -j 2 (the checker
as reader, no cache), and the cache's speedup on a second run (a warm cache answers every mutant).
Then the runtime side (issue 16): a pytest test of examples/engine running 10, 30, 100 and 300 frames, each
run plainly (VKVERIFY_CHECK=0), with the online check on (VKVERIFY_CHECK=1), as the listing run of
`vkverify mutate -- CMD` (a list Selection in VKVERIFY_RUNTIME_MUTATE, online check off, folded under target
all as the gate lists by default: a call site listed in a test is not asked again there) and as the listing run
of `--per-iteration` (every iteration asked), side by side in one run, each the least of `--repeats` interleaved
runs; it prints online / plain (target at most 2x) and listing / plain (target at most 3x), per-iteration / plain,
then what a frame adds to each listing against what it adds to the plain run, between the two largest counts
(issue 29: at most 2x).

Then command mode (issue 28): the gate `vkverify mutate --target all --no-cache -- pytest ...` over the
downstream project's suite (tests/downstream, both tests) against the plain pytest run of that suite,
printed as gate / plain (target at most 3x), and the same gate with --no-fork (a fresh process per
mutant). Beside it, what any run of the command costs before its tests do anything: a pytest run of
one test that only opens vk_runtime (the interpreter, pytest, the test modules' imports, the device);
with --no-fork the gate starts the command 1 + mutants times, so that start-up over -j workers bounds
its ratio from below; forked, it starts it twice, at once (the listing run and the forking server).

    python benchmarks/mutate.py [--frames 10,30,100,300] [--repeats 3] [--runtime-only | --command-only]

Each run is a fresh process, so the figures include generating the mutants (stream mode: the
happens-before analysis and the equivalence filter, which no cache or worker count speeds up;
runtime mode: pytest's start-up, the device's, and the engine's work, which every mode pays).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vkverify.mutations.live import Selection, environment

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "examples" / "engine"
FILES = sorted(str(p) for p in (*ROOT.glob("tests/corpus/*.json"), *ROOT.glob("examples/*.json")))


def mutate(*args: str) -> tuple[float, dict]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "mutate", "--format", "json", "--fail-under", "0",
                           *args, *FILES], capture_output=True, text=True, cwd=ROOT, check=True)
    return time.perf_counter() - began, json.loads(done.stdout)


def stream_mode() -> None:
    t1, report = mutate("-j", "1", "--no-cache")
    n = len(report["mutants"])
    t2, _ = mutate("-j", "2", "--no-cache")
    with tempfile.TemporaryDirectory() as cache:
        cold, _ = mutate("-j", "1", "--cache", cache)
        warm, again = mutate("-j", "1", "--cache", cache)
    assert again["stats"]["executed"] == 0
    print(f"{n} mutants of {len(FILES)} streams")
    print(f"-j 1: {n / t1:.0f} mutants/s ({t1:.2f} s)")
    print(f"-j 2: {n / t2:.0f} mutants/s ({t2:.2f} s); -j 2 / -j 1 throughput: {t1 / t2:.2f}x")
    print(f"cache: cold {cold:.2f} s, warm {warm:.2f} s; speedup {cold / warm:.2f}x")


# The engine's test, with more frames: values checked against numpy at every frame.
FRAMES_TEST = """
import numpy as np

from engine import Engine, expected

N = 1 << 18


def test_frames(vk_runtime, monkeypatch):
    monkeypatch.setenv("VKVERIFY_STAGED", "1")
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(N, np.float32), rng.standard_normal(N, np.float32)
    eng = Engine(vk_runtime, x, y)
    for f in range({frames}):
        factor = (2.0, 0.5)[f % 2]
        out, total = eng.frame(factor)
        want_out, want_total = expected(x, y, factor)
        assert np.array_equal(out, want_out) and total == want_total
"""


def frames_test(directory: Path, frames: int) -> Path:
    """The engine test of `frames` frames, written into `directory`."""
    test = directory / f"test_frames_{frames}.py"
    test.write_text(FRAMES_TEST.format(frames=frames))
    return test


def timed(test: Path, **env: str) -> float:
    """Seconds of one pytest run of `test` under `env` (the caller's VKVERIFY_ variables left out)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)], check=True,
                   env={**environ, "PYTHONPATH": f"{ENGINE}{os.pathsep}{ROOT}", **env}, cwd=test.parent,
                   capture_output=True)
    return time.perf_counter() - began


def runtime_mode(counts: list[int], repeats: int) -> None:
    print(f"frames  plain s  online s  listing s  per-iteration s  online/plain  listing/plain  per-iteration/plain"
          f"  candidates (least of {repeats} interleaved runs)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for frames in counts:
            test = frames_test(directory, frames)
            listings = {fold: directory / f"candidates_{frames}_{fold or 'each'}.jsonl" for fold in ("all", "")}
            runs = {"plain": {"VKVERIFY_CHECK": "0"}, "online": {"VKVERIFY_CHECK": "1"}} | {
                fold or "each": {"VKVERIFY_CHECK": "0", **environment(Selection("list", file=str(path), fold=fold))}
                for fold, path in listings.items()}
            best = dict.fromkeys(runs, float("inf"))
            for _ in range(repeats):
                for path in listings.values():
                    path.unlink(missing_ok=True)  # each holds its last run's candidates
                for name, env in runs.items():
                    best[name] = min(best[name], timed(test, **env))
            lines = [sum("k" in json.loads(line) for line in path.read_text().splitlines())
                     for path in listings.values()]
            plain = best["plain"]
            rows.append((frames, plain, best["all"], best["each"]))
            print(f"{frames:6d}  {plain:7.2f}  {best['online']:8.2f}  {best['all']:9.2f}  {best['each']:15.2f}  "
                  f"{best['online'] / plain:11.2f}x  {best['all'] / plain:12.2f}x  {best['each'] / plain:18.2f}x  "
                  f"{lines[0]} folded, {lines[1]} per iteration")
    if len(rows) > 1:  # what each frame adds, start-up left out: the slope between the two largest counts
        (f1, *first), (f2, *second) = sorted(rows)[-2:]
        plain, *listed = [(b - a) / (f2 - f1) for a, b in zip(first, second)]
        print(f"per frame from {f1} to {f2}: plain {1000 * plain:.1f} ms, listing {1000 * listed[0]:.1f} ms: "
              f"{listed[0] / plain:.2f}x, per-iteration listing {1000 * listed[1]:.1f} ms: {listed[1] / plain:.2f}x "
              "(issue 29's target: at most 2x)")


def command_mode() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(ROOT / "tests" / "downstream", project, ignore=shutil.ignore_patterns("__pycache__"))
        suite = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "check_good.py", "check_weak.py"]
        environ = {**{k: v for k, v in os.environ.items() if not k.startswith("VKVERIFY_")}, "PYTHONPATH": str(ROOT)}

        def seconds(argv: list[str]) -> tuple[float, str]:
            began = time.perf_counter()
            done = subprocess.run(argv, env=environ, cwd=project, capture_output=True, text=True, check=True)
            return time.perf_counter() - began, done.stdout

        plain, _ = seconds(suite)
        gate_argv = [sys.executable, "-m", "vkverify.cli", "mutate", "--target", "all", "--no-cache", "--fail-under",
                     "0", "--format", "json"]
        gate, out = seconds([*gate_argv, "--", *suite])
        fresh, _ = seconds([*gate_argv, "--no-fork", "--", *suite])
        (project / "check_open.py").write_text("def test_open(vk_runtime):\n    pass\n")
        start, _ = seconds([*suite[:-2], "check_good.py", "check_weak.py", "check_open.py", "-k", "test_open"])
    mutants, jobs = len(json.loads(out)["mutants"]), os.cpu_count()
    print(f"command mode, tests/downstream: plain {plain:.2f} s, gate {gate:.2f} s ({mutants} mutants, "
          f"-j {jobs}); gate / plain {gate / plain:.2f}x (target at most 3x); with --no-fork {fresh:.2f} s, "
          f"{fresh / plain:.2f}x")
    floor = (1 + mutants) * start / jobs / plain
    print(f"  start-up of one run (pytest, imports, device; no test body): {start:.2f} s = {start / plain:.2f} of "
          f"plain; --no-fork starts {1 + mutants} runs over -j {jobs}: at least {floor:.2f}x; forked, 2 at once (the "
          "listing run, the server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", default="10,30,100,300", help="frame counts of the runtime rows")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs of each runtime row, the least kept")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--runtime-only", action="store_true", help="only the runtime rows")
    only.add_argument("--command-only", action="store_true", help="only the command-mode row")
    ns = parser.parse_args()
    if not (ns.runtime_only or ns.command_only):
        stream_mode()
    if not ns.command_only:
        runtime_mode([int(n) for n in ns.frames.split(",")], ns.repeats)
    if not ns.runtime_only:
        command_mode()


if __name__ == "__main__":
    main()
