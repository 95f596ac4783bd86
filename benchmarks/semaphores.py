"""Check time for timeline-semaphore streams (issues 3 and 19).

1. The ring all-reduce (tests/corpus/80-ring-allreduce-params.json) for one n at a time, n = 2..16,
   clean and with the cross-round wait dropped (tests/corpus/81's mutant: a war on every receive
   slot, each with a witness to build) side by side, best of 3 runs each, and their ratio; then the
   params stream itself (n in 2..8 in one call). Targets: n=8 proven in under 10 s; with the wait
   dropped, within 3x the clean time (issue 19).
2. 10^5 timeline submits across 4 queues: queue k waits on queue k-1's timeline for each value
   and signals its own. Target: under 60 s.

    python benchmarks/semaphores.py            # both
    python benchmarks/semaphores.py 1e4        # a smaller submit stream
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vkverify.check import check  # noqa: E402
from vkverify.model import from_dict, to_dict  # noqa: E402

RING = ROOT / "tests" / "corpus" / "80-ring-allreduce-params.json"


def timed(doc: dict, runs: int = 1) -> tuple[float, float, list]:
    """(load seconds: JSON Schema validation and the IR, check seconds (the best of `runs`), findings)."""
    start = time.perf_counter()
    stream = from_dict(doc)
    loaded = time.perf_counter()
    best = float("inf")
    for _ in range(runs):
        begin = time.perf_counter()
        findings = check(stream)
        best = min(best, time.perf_counter() - begin)
    return loaded - start, best, findings


def ring(n: int | None, drop_wait: bool = False) -> dict:
    """The ring for one n (None: the params range); `drop_wait`: without x{d}'s cross-round wait
    C{(d+1)%n} >= s, as tests/corpus/81 (a war and a waw on every receive slot)."""
    doc = json.loads(RING.read_text())
    if n is not None:
        doc["params"] = {"n": {"min": n, "max": n}}
    doc.pop("expect")
    if drop_wait:
        send = doc["threads"]["main"][1]["do"][0]
        send["wait"] = [w for w in send["wait"] if w["semaphore"] != "C{(d+1)%n}"]
    return doc


def ring_one_wait_dropped(n: int) -> dict:
    """The ring for n without one wait: x0's cross-round wait C1 >= s at the last step s, so a war on R1
    between c1's last reduce and x0's last copy, after 2(n-1) rounds of correct synchronization."""
    doc = to_dict(from_dict(ring(n)).instances[0][1])
    last = [op for op in doc["threads"]["main"] if op.get("queue") == "x0"][-1]
    last["batches"][0]["wait"] = [w for w in last["batches"][0]["wait"] if w["semaphore"] != "C1"]
    return doc


def submits(count: int, queues: int = 4) -> dict:
    ops = []
    for i in range(count):
        k, v = i % queues, i // queues + 1
        wait = [{"semaphore": f"T{k - 1}", "value": v, "stage": "compute_shader"}] if k else []
        if k == 0 and v > 1:
            wait = [{"semaphore": f"T{queues - 1}", "value": v - 1, "stage": "compute_shader"}]
        ops.append({"op": "submit", "queue": f"q{k}", "wait": wait, "command_buffers": [f"cb{k}"],
                    "signal": [{"semaphore": f"T{k}", "value": v}]})
    return {"format": "vkverify-stream/1", "name": "timeline-submits",
            "devices": [{"id": "gpu0", "queues": [{"id": f"q{k}"} for k in range(queues)]}],
            "buffers": [{"id": "A", "size": 4096, "memory": "host_coherent"}],
            "semaphores": [{"id": f"T{k}", "type": "timeline"} for k in range(queues)],
            "shaders": {"x": {"bindings": ["read_write"]}},
            "command_buffers": {f"cb{k}": [{"cmd": "dispatch", "shader": "x", "bindings": [{"buffer": "A"}]}]
                                for k in range(queues)},
            "threads": {"main": ops}}


def main(argv: list[str]) -> None:
    count = int(float(argv[0])) if argv else 100_000
    print("ring all-reduce, one n per call, check s (best of 3): clean | one wait dropped (x0's last) | "
          "every cross-round wait dropped (corpus 81); findings, witnesses computed, most steps; ratio to clean")
    for n in range(2, 17):
        load, seconds, found = timed(ring(n), runs=3)
        row = f"  n={n:2d}: load {load:5.3f}, clean {seconds:6.3f} ({len(found)} findings)"
        for doc in (ring_one_wait_dropped(n), ring(n, drop_wait=True)):
            _, dropped, racing = timed(doc, runs=3)
            most = max((len(f.witness) for f in racing if f.witness is not None), default=0)
            computed = sum(f.witness is not None for f in racing)
            row += f" | {dropped:6.3f} ({len(racing):3d}, {computed}, {most:2d}) {dropped / seconds:4.2f}x"
        print(row)
    load, seconds, found = timed(ring(None))
    print(f"  params n in 2..8 in one call: load {load:.2f} s, check {seconds:.2f} s, {len(found)} findings")
    load, seconds, found = timed(submits(count))
    print(f"{count} timeline submits across 4 queues: load {load:.2f} s, check {seconds:.2f} s, {len(found)} findings")


if __name__ == "__main__":
    main(sys.argv[1:])
