"""Replay every replayable corpus stream and print its digests (benchmarks/device_replay.sh)."""

import glob
import time
from concurrent.futures import ProcessPoolExecutor
from vkverify.model import load
from vkverify.runtime import RuntimeFault, replay, replayable


def run(path):
    """One stream in a fresh process: the NVIDIA driver (580, under gVisor) refused the 31st
    vkCreateInstance of one process, though every instance and device before it was destroyed."""
    stream = load(path)
    try:
        result = replay(stream)
    except RuntimeFault as error:
        return stream.name, str(error), None
    verdict = ("no reference" if result.reference is None
               else "reference equal" if not result.reference else "REFERENCE MISMATCH")
    lines = [f"{stream.name} [{'hazard-free' if not stream.expect else 'hazards'}] {verdict}"]
    lines += [f"  buffer {b} {d}" for b, d in sorted(result.digests.items())]
    lines += [f"  read {r} {d}" for r, d in sorted(result.reads.items())]
    return stream.name, None, (result.device, lines)


def main() -> None:
    ran = failed = 0
    device = "-"
    start = time.monotonic()
    paths = [p for p in sorted(glob.glob("tests/corpus/*.json")) if replayable(load(p)) is None]
    with ProcessPoolExecutor(max_workers=1, max_tasks_per_child=1) as pool:
        for name, error, done in pool.map(run, paths):
            if error is not None:
                print(f"{name}: not run: {error}")
                failed += 1
                continue
            ran += 1
            device, lines = done
            print("\n".join(lines), flush=True)
    print(f"replayed {ran} streams on {device} in {time.monotonic() - start:.1f} s; "
          f"{failed} not runnable on this device")


if __name__ == "__main__":
    main()
