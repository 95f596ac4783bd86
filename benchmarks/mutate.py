"""`vkverify mutate` throughput on the corpus: mutants per second with -j 1 and -j 2 (the checker
as reader, no cache), and the cache's speedup on a second run (a warm cache answers every mutant).

    python benchmarks/mutate.py

Each run is a fresh `vkverify mutate` process, so the figures include generating the mutants
(the happens-before analysis and the equivalence filter), which no cache or worker count speeds up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted(str(p) for p in (*ROOT.glob("tests/corpus/*.json"), *ROOT.glob("examples/*.json")))


def mutate(*args: str) -> tuple[float, dict]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vkverify.cli", "mutate", "--format", "json", "--fail-under", "0",
                           *args, *FILES], capture_output=True, text=True, cwd=ROOT, check=True)
    return time.perf_counter() - began, json.loads(done.stdout)


def main() -> None:
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


if __name__ == "__main__":
    main()
