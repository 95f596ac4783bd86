"""Upload throughput by path against one raw vkCmdCopyBuffer of the same bytes and
against the host's ceiling (issues 6 and 18).

    python benchmarks/uploads.py [--mib 256] [--runs 3] [--slots N --slot-mib M] [--threads N]
                                 [--staging host_coherent|host_cached] [--also 2x128,4x64]

raw: one copy from a host-coherent buffer already filled, submitted and waited.
ceiling: the same copy with a memcpy of the bytes on every core (up to 16) into another host-coherent
buffer running beside it, until both end: what a source in pageable memory can reach when
the host copy and the DMA overlap perfectly. staged: upload() + finish() of a numpy array
with the default (measured) slots, or --slots/--slot-mib; file: upload_file() of the same
bytes from a file in the page cache (buffered), and with O_DIRECT where the file system
takes it; in place: from a staging_array() filled beforehand, untimed (a producer writing
its output there); hand-off: upload(signal=) and a submit on the program's queue that waits for the
signal, timed to that submit's fence; mapped: VKVERIFY_STAGED=0. --also: more staged rows with given slots
(count x MiB). Each path runs once per round, in `runs` rounds, after one untimed run into
the same destination; the table shows each path's best, the targets the median over rounds of
the ratio of two paths measured in the same round (best/best in brackets).
Honours VKVERIFY_HOST_VISIBLE_CAP_MB and VKVERIFY_DEVICE.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from contextlib import ExitStack, contextmanager

import numpy as np

from vkverify.runtime import QueueRequest, Runtime, Uploader
from vkverify.runtime.uploads import UPLOAD_QUEUE
from vkverify.runtime.uploads.hostio import MAX_THREADS, HostCopies, default_threads, host_cores

# The program's queue and an upload queue: a transfer-only family where the device has one.
QUEUES = {"q0": QueueRequest("q0"), UPLOAD_QUEUE: QueueRequest(UPLOAD_QUEUE, group=1, compute=False)}


@contextmanager
def upload_path(data: np.ndarray, staged: str, source: str = "array", **uploader):
    """A function that uploads `data` once and returns the seconds it took, with its Uploader.
    source: array | in_place | file | file_direct (a path in uploader["path"]) | handoff (the upload signals a
    timeline that a submit on the program's queue waits for; timed until that submit's fence, no finish())."""
    os.environ["VKVERIFY_STAGED"] = staged
    path = uploader.pop("path", None)
    with Runtime(QUEUES) as rt, Uploader(rt, **uploader) as up:
        if source == "in_place":
            array = up.staging_array(data.size)
            array[:] = data
            data = array
        rt.create_semaphore("T", timeline=True)
        rt.create_fence("C")
        handoffs = iter(range(1, 1 << 62))

        def once() -> float:
            start = time.perf_counter()
            if source.startswith("file"):
                up.upload_file("W", 0, path, 0, data.size, direct=source == "file_direct")
            elif source == "handoff":
                value = next(handoffs)
                up.upload("W", 0, data, signal=("T", value))
                rt.submit("q0", wait=[{"semaphore": "T", "value": value, "stage": "copy"}], fence="C")
                rt.wait_fences(["C"])
                rt.reset_fences(["C"])
                return time.perf_counter() - start
            else:
                up.upload("W", 0, data)
            up.finish()
            return time.perf_counter() - start
        # Not timed: the block's zero-fill, first touch of fresh pages and the page cache's fill are
        # not the upload's (the raw copy's destination is warm after its first run too).
        once()
        yield once, up
        landed(rt, "W", data, f"{source} (VKVERIFY_STAGED={staged})")


@contextmanager
def raw_copy(data: np.ndarray, threads: int):
    """Two functions: the raw copy's seconds, and the seconds until the copy and a memcpy of `data`
    on `threads` threads started beside it both end."""
    with Runtime() as rt:
        rt.create_buffer("Src", data.size, "host_coherent")
        rt.create_buffer("Dst", data.size)
        rt.create_buffer("Beside", data.size, "host_coherent")
        np.frombuffer(rt.buffers["Src"].view(0, data.size), np.uint8)[:] = data
        beside = np.frombuffer(rt.buffers["Beside"].view(0, data.size), np.uint8)
        rt.create_fence("F")
        rt.command_buffer("copy").cmd_copy_buffer("Src", "Dst")
        copies = HostCopies(threads)  # the uploader's own memcpy, on as many threads as the host gives

        def once(with_memcpy: bool) -> float:
            rt.reset_fences(["F"])
            start = time.perf_counter()
            rt.submit("q0", ["copy"], fence="F")
            if with_memcpy:
                copies.copy(beside, data)
            rt.wait_fences(["F"])
            return time.perf_counter() - start
        rt.submit("q0", ["copy"], fence="F")  # not timed: first touch
        rt.wait_fences(["F"])
        copies.copy(beside, data)
        try:
            yield (lambda: once(False)), (lambda: once(True))
        finally:
            copies.close()
        landed(rt, "Dst", data, "raw")


def landed(rt: Runtime, buffer: str, data: np.ndarray, path: str) -> None:
    """After a path's last run: its destination holds `data`, byte for byte (a fast path that lost bytes fails)."""
    rt.device_idle()
    if rt.read_back(buffer)[:data.size] != data.tobytes():
        raise SystemExit(f"{path}: the bytes in {buffer} differ from the data uploaded")


def interleaved(paths: dict, runs: int) -> dict[str, list[float]]:
    """The seconds of each path in each of `runs` rounds that take every path once, in an order
    rotated each round: the host's memory bandwidth is shared with its neighbours and drifts over a
    run, so a ratio compares two paths measured in the same round (the same minutes)."""
    times: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    for round_ in range(runs):
        k = round_ % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(paths[name]())
    return times


def paired(times: dict[str, list[float]], over: str, under: str) -> float:
    """The median over rounds of times[over] / times[under] in the same round."""
    return statistics.median(a / b for a, b in zip(times[over], times[under]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--slots", type=int, default=None)
    parser.add_argument("--slot-mib", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None,
                        help="the uploader's host copy threads (default: the uploader's, hostio.default_threads)")
    parser.add_argument("--staging", default="host_coherent", choices=("host_coherent", "host_cached"),
                        help="the slots' memory kind")
    parser.add_argument("--also", default="", help="more staged rows with given slots: COUNTxMIB,...")
    args = parser.parse_args()
    # The ceiling's memcpy takes every core it may (up to MAX_THREADS): the host's best, whatever the uploader uses.
    threads, ceiling_threads = args.threads or default_threads(), min(MAX_THREADS, host_cores())
    uploader = {"slots": args.slots, "slot_size": args.slot_mib and args.slot_mib << 20, "copy_threads": threads,
                "staging": args.staging}
    data = np.random.default_rng(0).integers(0, 256, args.mib << 20, dtype=np.uint8)
    os.environ.pop("VKVERIFY_FAULT", None)
    notes = {"raw": "one vkCmdCopyBuffer, host-coherent source",
             "ceiling": f"the raw copy with a memcpy of the bytes beside it ({ceiling_threads} threads)"}
    with ExitStack() as stack, tempfile.NamedTemporaryFile(prefix="vkverify-upload-",
                                                         dir=os.environ.get("TMPDIR")) as f:
        data.tofile(f.name)
        os.fsync(f.fileno())  # no writeback of the file's dirty pages while the paths are timed
        paths = dict(zip(("raw", "ceiling"), stack.enter_context(raw_copy(data, ceiling_threads))))
        paths["staged"], staged_uploader = stack.enter_context(upload_path(data, "1", **uploader))
        notes["staged"] = f"{staged_uploader.report().queue} queue, {staged_uploader.report().sizing}"
        for extra in filter(None, args.also.split(",")):
            count, mib = (int(x) for x in extra.split("x"))
            paths[f"staged {extra}"], _ = stack.enter_context(
                upload_path(data, "1", **{**uploader, "slots": count, "slot_size": mib << 20}))
            notes[f"staged {extra}"] = f"{count} slots of {mib} MiB, given"
        for source, note in (("file", "upload_file, buffered, page cache warm"),
                             ("file_direct", "upload_file, O_DIRECT")):
            paths[source.replace("_", " ")], _ = stack.enter_context(upload_path(data, "1", source, **uploader,
                                                                                 path=f.name))
            notes[source.replace("_", " ")] = note
        paths["hand-off"], _ = stack.enter_context(upload_path(data, "1", "handoff", **uploader))
        notes["hand-off"] = "upload(signal=T) and a q0 submit waiting T, timed to its fence: no finish()"
        paths["in place"], _ = stack.enter_context(upload_path(data, "1", "in_place", **uploader))
        notes["in place"] = "from a staging_array: no host copy"
        paths["mapped"], _ = stack.enter_context(upload_path(data, "0"))
        notes["mapped"] = "written through the map"
        placement = staged_uploader.report().reason
        times = interleaved(paths, args.runs)
    os.environ.pop("VKVERIFY_STAGED")
    print("every path's destination read back equal to the data after its last run")
    with Runtime() as rt:
        device = rt.device.name
    print(f"{args.mib} MiB on {device}; placement rule here: {placement}; {threads} host copy threads in the uploader; "
          f"{args.runs} interleaved rounds, the best of each path")

    def gbs(t: float) -> float:
        return data.size / t / 1e9
    print(f"  {'path':<14}{'ms':>8}{'GB/s':>8}{'x raw':>7}{'x ceil':>8}  notes")
    seconds = {name: min(ts) for name, ts in times.items()}
    raw, ceiling = seconds["raw"], seconds["ceiling"]
    for name, t in seconds.items():
        print(f"  {name:<14}{t * 1e3:8.1f}{gbs(t):8.2f}{raw / t:7.2f}{ceiling / t:8.2f}  {notes[name]}")

    def best(over: str, under: str) -> float:
        return seconds[over] / seconds[under]
    targets = (("staged/ceiling", "ceiling", "staged", 0.9), ("file/ceiling", "ceiling", "file", 0.85),
               ("in place/raw", "raw", "in place", 0.95))
    print("  targets (median of the rounds' ratios; best/best in brackets): " + ", ".join(
        f"{name} {paired(times, over, under):.2f} [{best(over, under):.2f}] (>= {goal})"
        for name, over, under, goal in targets))

if __name__ == "__main__":
    main()
