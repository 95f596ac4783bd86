"""Staged upload throughput against one raw vkCmdCopyBuffer of the same bytes
from a host-coherent buffer, and against the mapped path (issue 6).

    python benchmarks/uploads.py [--mib 256] [--runs 3] [--slots 2] [--slot-mib 16] [--threads N]
                                 [--staging host_coherent|host_cached]

Staged: upload() + finish() of a numpy array (host copies into the slots
included); in place: the same upload from a staging_array() the bytes were put
in beforehand, untimed, as a producer writing its output there would (no host
copy: the copy reads it); raw: one copy submitted and waited, its source already
filled;
mapped: the same upload with VKVERIFY_STAGED=0 (writes through the map). The
best of `runs` each, after one untimed run into the same destination. Honours
VKVERIFY_HOST_VISIBLE_CAP_MB and VKVERIFY_DEVICE.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from vkverify.runtime import QueueRequest, Runtime, Uploader
from vkverify.runtime.uploads import UPLOAD_QUEUE

# The program's queue and an upload queue: a transfer-only family where the device has one.
QUEUES = {"q0": QueueRequest("q0"), UPLOAD_QUEUE: QueueRequest(UPLOAD_QUEUE, group=1, compute=False)}


def timed_upload(data: np.ndarray, staged: str, runs: int, in_place: bool = False, **uploader) -> tuple[float, str]:
    os.environ["VKVERIFY_STAGED"] = staged
    best = float("inf")
    with Runtime(QUEUES) as rt, Uploader(rt, **uploader) as up:
        if in_place:
            array = up.staging_array(data.size)
            array[:] = data
            data = array
        # Run 0 is not timed: the block's zero-fill and first touch of fresh pages are not the upload's
        # (the raw copy's destination is warm after its first run too).
        for run in range(runs + 1):
            start = time.perf_counter()
            up.upload("W", 0, data)
            up.finish()
            if run:
                best = min(best, time.perf_counter() - start)
        queue = up.queue_kind
    return best, queue


def timed_raw_copy(data: np.ndarray, runs: int) -> float:
    best = float("inf")
    with Runtime() as rt:
        rt.create_buffer("Src", data.size, "host_coherent")
        rt.create_buffer("Dst", data.size)
        np.frombuffer(rt.buffers["Src"].view(0, data.size), np.uint8)[:] = data
        rt.create_fence("F")
        rt.command_buffer("copy").cmd_copy_buffer("Src", "Dst")
        for run in range(runs + 1):
            if run:
                rt.reset_fences(["F"])
            start = time.perf_counter()
            rt.submit("q0", ["copy"], fence="F")
            rt.wait_fences(["F"])
            if run:
                best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--slot-mib", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None, help="host copy threads (default: up to 16)")
    parser.add_argument("--staging", default="host_coherent", choices=("host_coherent", "host_cached"),
                        help="the slots' memory kind")
    args = parser.parse_args()
    uploader = {"slots": args.slots, "slot_size": args.slot_mib << 20, "copy_threads": args.threads,
                "staging": args.staging}
    data = np.random.default_rng(0).integers(0, 256, args.mib << 20, dtype=np.uint8)
    os.environ.pop("VKVERIFY_FAULT", None)
    staged, queue = timed_upload(data, "1", args.runs, **uploader)
    in_place, _ = timed_upload(data, "1", args.runs, in_place=True, **uploader)
    mapped, _ = timed_upload(data, "0", args.runs)
    os.environ.pop("VKVERIFY_STAGED")
    raw = timed_raw_copy(data, args.runs)
    with Runtime() as rt, Uploader(rt) as up:
        device, rule = rt.device.name, up.reason
    gbs = lambda t: data.size / t / 1e9  # noqa: E731
    print(f"{args.mib} MiB on {device}; placement rule here: {rule}")
    print(f"  staged  {staged * 1e3:8.1f} ms  {gbs(staged):6.2f} GB/s  ({queue} queue, {args.slots} slots of "
          f"{args.slot_mib} MiB, {args.staging})")
    print(f"  in place{in_place * 1e3:8.1f} ms  {gbs(in_place):6.2f} GB/s  (the same, from a staging_array: "
          f"no host copy)")
    print(f"  raw     {raw * 1e3:8.1f} ms  {gbs(raw):6.2f} GB/s  (one vkCmdCopyBuffer, host-coherent source)")
    print(f"  mapped  {mapped * 1e3:8.1f} ms  {gbs(mapped):6.2f} GB/s")
    print(f"  staged/raw throughput: {raw / staged:.2f}   staged/mapped throughput: {mapped / staged:.2f}   "
          f"in place/raw throughput: {raw / in_place:.2f}")


if __name__ == "__main__":
    main()
