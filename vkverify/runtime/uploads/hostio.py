"""Host-side bytes into staging memory: memcpy, and file reads straight into the
mapped memory (no intermediate array), each split across threads: numpy copies and
preadv release the GIL, and one thread's memcpy is slower than a transfer queue
(benchmarks/upload_paths.py)."""

from __future__ import annotations

import errno
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Self

import numpy as np

__all__ = ["DIRECT_ALIGN", "MAX_THREADS", "FileSource", "HostCopies", "default_threads", "host_cores", "wait_all"]

# Pieces no smaller than this: on the H200 a 16 MiB slot copied in 1 MiB pieces by 16 threads ran
# at 0.22 of the raw copy, in 2 MiB pieces by 8 at 0.35; below a few MiB a piece costs more to hand
# out than to copy.
COPY_SPLIT = 2 << 20
# At most this many host copy threads: more only split the bytes finer.
MAX_THREADS = 16
# O_DIRECT wants the buffer's address, the file offset and the length in whole logical blocks;
# 4 KiB covers the usual block sizes.
DIRECT_ALIGN = 4096


class FileSource:
    """A file opened for upload_file(): O_DIRECT when asked and the file system takes it (a probe
    read of one aligned block), else buffered through the page cache."""

    def __init__(self, path, direct: bool) -> None:
        self.path, self.direct = os.fspath(path), False
        self.fd = os.open(self.path, os.O_RDONLY)
        if direct and hasattr(os, "O_DIRECT"):
            self._try_direct()

    def _try_direct(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        except OSError as error:
            if error.errno != errno.EINVAL:
                raise
            return
        probe = mmap.mmap(-1, DIRECT_ALIGN)  # page-aligned memory
        try:
            os.preadv(fd, [probe], 0)
        except OSError as error:
            os.close(fd)
            if error.errno != errno.EINVAL:
                raise
            return
        finally:
            probe.close()
        os.close(self.fd)
        self.fd, self.direct = fd, True

    @property
    def align(self) -> int:
        """The alignment a read needs: of its memory, its file offset and its length."""
        return DIRECT_ALIGN if self.direct else 1

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def host_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_threads() -> int:
    """Host copy threads: two cores are left to the thread that submits and to the driver's
    threads. A slot is submitted once its slowest piece is written, so one copy thread moved off
    its core stalls the ring: on the H200's 16-core host, 16 threads ran the staged upload at
    0.77-0.86 of the memcpy-beside-a-DMA ceiling in three runs, 14 at 0.95-1.02 in two, 12 at
    0.92-1.00 in three (benchmarks/uploads.py)."""
    return max(1, min(MAX_THREADS, host_cores() - 2))


class HostCopies:
    """A pool of `threads` (default: default_threads()) for memcpy and file reads into staging memory."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads or default_threads()
        self.pool = ThreadPoolExecutor(self.threads)

    def pieces(self, n: int) -> list[tuple[int, int]]:
        """[start, end) of each thread's share of n bytes, in whole DIRECT_ALIGN blocks but the last."""
        piece = -(-max(COPY_SPLIT, -(-n // self.threads)) // DIRECT_ALIGN) * DIRECT_ALIGN
        return [(a, min(a + piece, n)) for a in range(0, n, piece)]

    def copy(self, out: np.ndarray, raw: np.ndarray) -> None:
        self.copy_async(out, raw)()

    def copy_async(self, out: np.ndarray, raw: np.ndarray):
        """memcpy `raw` into `out` on the threads (inline when small), queued behind earlier pieces so
        the threads go from one slot's bytes to the next without idling; a function that waits for it."""
        if raw.size <= COPY_SPLIT:
            out[:] = raw
            return lambda: None
        futures = [self.pool.submit(out.__setitem__, slice(a, b), raw[a:b]) for a, b in self.pieces(raw.size)]
        return lambda: [f.result() for f in wait_all(futures)]

    def read(self, source: FileSource, offset: int, out: np.ndarray) -> int:
        return self.read_async(source, offset, out)()

    def read_async(self, source: FileSource, offset: int, out: np.ndarray):
        """Read `out.size` bytes of `source` from `offset` into `out` (preadv on its memory) on the
        threads; a function that waits for them and returns the bytes read before the first short
        piece (the end of the file). It raises OSError as preadv did."""
        def piece(start: int, end: int) -> int:
            done = start
            while done < end:
                n = os.preadv(source.fd, [out[done:end]], offset + done)
                if n == 0:
                    break
                done += n
            return done - start

        spans = self.pieces(out.size)
        futures = [self.pool.submit(piece, a, b) for a, b in spans]

        def wait() -> int:
            got = [f.result() for f in wait_all(futures)]
            total = 0
            for (start, end), n in zip(spans, got):
                total += n
                if n < end - start:
                    break
            return total
        return wait

    def close(self) -> None:
        self.pool.shutdown()


def wait_all(futures: list[Future]) -> list[Future]:
    """Every one of `futures` done (none still writes into staging memory), whatever the others raised."""
    wait_futures(futures)
    return futures
