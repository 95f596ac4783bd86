"""Upload throughput by path against one raw vkCmdCopyBuffer of the same bytes and
against the host's ceiling (issues 6 and 18).

    python benchmarks/uploads.py [--mib 256] [--runs 3] [--slots N --slot-mib M] [--threads N]
                                 [--staging host_coherent|host_cached] [--also 2x128,4x64]

raw: one copy from a host-coherent buffer already filled, submitted and waited.
ceiling: the same copy with a threaded memcpy of the bytes into another host-coherent
buffer running beside it, until both end: what a source in pageable memory can reach when
the host copy and the DMA overlap perfectly. staged: upload() + finish() of a numpy array
with the default (measured) slots, or --slots/--slot-mib; file: upload_file() of the same
bytes from a file in the page cache (buffered), and with O_DIRECT where the file system
takes it; in place: from a staging_array() filled beforehand, untimed (a producer writing
its output there); mapped: VKVERIFY_STAGED=0. --also: more staged rows with given slots
(count x MiB). The best of `runs` each, after one untimed run into the same destination.
Honours VKVERIFY_HOST_VISIBLE_CAP_MB and VKVERIFY_DEVICE.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from vkverify.runtime import QueueRequest, Runtime, Uploader
from vkverify.runtime.uploads import UPLOAD_QUEUE
from vkverify.runtime.uploads.hostio import HostCopies

# The program's queue and an upload queue: a transfer-only family where the device has one.
QUEUES = {"q0": QueueRequest("q0"), UPLOAD_QUEUE: QueueRequest(UPLOAD_QUEUE, group=1, compute=False)}


def timed_upload(data: np.ndarray, staged: str, runs: int, source: str = "array", **uploader) -> tuple[float, object]:
    """source: array | in_place | file | file_direct (a path in uploader["path"])."""
    os.environ["VKVERIFY_STAGED"] = staged
    path = uploader.pop("path", None)
    best = float("inf")
    with Runtime(QUEUES) as rt, Uploader(rt, **uploader) as up:
        if source == "in_place":
            array = up.staging_array(data.size)
            array[:] = data
            data = array
        # Run 0 is not timed: the block's zero-fill, first touch of fresh pages and the page cache's
        # fill are not the upload's (the raw copy's destination is warm after its first run too).
        for run in range(runs + 1):
            start = time.perf_counter()
            if source.startswith("file"):
                up.upload_file("W", 0, path, 0, data.size, direct=source == "file_direct")
            else:
                up.upload("W", 0, data)
            up.finish()
            if run:
                best = min(best, time.perf_counter() - start)
        report = up.report()
    return best, report


def timed_raw_copy(data: np.ndarray, runs: int, threads: int) -> tuple[float, float]:
    """(the raw copy's seconds, seconds until the copy and a memcpy of `data` started beside it both end)."""
    copy_alone = both = float("inf")
    with Runtime() as rt:
        rt.create_buffer("Src", data.size, "host_coherent")
        rt.create_buffer("Dst", data.size)
        rt.create_buffer("Beside", data.size, "host_coherent")
        np.frombuffer(rt.buffers["Src"].view(0, data.size), np.uint8)[:] = data
        beside = np.frombuffer(rt.buffers["Beside"].view(0, data.size), np.uint8)
        rt.create_fence("F")
        rt.command_buffer("copy").cmd_copy_buffer("Src", "Dst")
        copies = HostCopies(threads)  # the uploader's own memcpy
        for run in range(2 * runs + 1):
            if run:
                rt.reset_fences(["F"])
            start = time.perf_counter()
            rt.submit("q0", ["copy"], fence="F")
            if run > runs:
                copies.copy(beside, data)
            rt.wait_fences(["F"])
            elapsed = time.perf_counter() - start
            if 0 < run <= runs:
                copy_alone = min(copy_alone, elapsed)
            elif run > runs:
                both = min(both, elapsed)
        copies.close()
    return copy_alone, both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--slot-mib", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="host copy threads (default: up to 16)")
    parser.add_argument("--staging", default="host_coherent", choices=("host_coherent", "host_cached"),
                        help="the slots' memory kind")
    parser.add_argument("--also", default="", help="more staged rows with given slots: COUNTxMIB,...")
    args = parser.parse_args()
    threads = args.threads or min(16, os.cpu_count() or 1)
    uploader = {"slots": args.slots, "slot_size": args.slot_mib and args.slot_mib << 20, "copy_threads": threads,
                "staging": args.staging}
    data = np.random.default_rng(0).integers(0, 256, args.mib << 20, dtype=np.uint8)
    os.environ.pop("VKVERIFY_FAULT", None)
    raw, ceiling = timed_raw_copy(data, args.runs, threads)
    rows = []  # (name, seconds, note)
    staged, report = timed_upload(data, "1", args.runs, **uploader)
    rows.append(("staged", staged, f"{report.queue} queue, {report.sizing}"))
    for extra in filter(None, args.also.split(",")):
        count, mib = (int(x) for x in extra.split("x"))
        seconds, _ = timed_upload(data, "1", args.runs, **{**uploader, "slots": count, "slot_size": mib << 20})
        rows.append((f"staged {extra}", seconds, f"{count} slots of {mib} MiB, given"))
    with tempfile.NamedTemporaryFile(prefix="vkverify-upload-", dir=os.environ.get("TMPDIR")) as f:
        data.tofile(f.name)
        for source, note in (("file", "upload_file, buffered, page cache warm"), ("file_direct", "upload_file, O_DIRECT")):
            seconds, _ = timed_upload(data, "1", args.runs, source, **uploader, path=f.name)
            rows.append((source.replace("_", " "), seconds, note))
    in_place, _ = timed_upload(data, "1", args.runs, "in_place", **uploader)
    rows.append(("in place", in_place, "from a staging_array: no host copy"))
    mapped, _ = timed_upload(data, "0", args.runs)
    rows.append(("mapped", mapped, "written through the map"))
    os.environ.pop("VKVERIFY_STAGED")
    with Runtime() as rt:
        device = rt.device.name
    print(f"{args.mib} MiB on {device}; placement rule here: {report.reason}; {threads} host copy threads")
    gbs = lambda t: data.size / t / 1e9
    print(f"  {'path':<14}{'ms':>8}{'GB/s':>8}{'x raw':>7}{'x ceil':>8}  notes")
    for name, seconds, note in [("raw", raw, "one vkCmdCopyBuffer, host-coherent source"),
                                ("ceiling", ceiling, "the raw copy with a memcpy of the bytes beside it"), *rows]:
        print(f"  {name:<14}{seconds * 1e3:8.1f}{gbs(seconds):8.2f}{raw / seconds:7.2f}{ceiling / seconds:8.2f}  {note}")
    file = next(s for n, s, _ in rows if n == "file")
    print(f"  targets: staged/ceiling {ceiling / staged:.2f} (>= 0.9), file/ceiling {ceiling / file:.2f} (>= 0.85), "
          f"in place/raw {raw / in_place:.2f} (>= 0.95)")


if __name__ == "__main__":
    main()
