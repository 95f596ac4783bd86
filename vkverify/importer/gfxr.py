"""The binary .gfxr file: what gfxrecon-convert's JSON lines leave out, and the tools.

The converter omits the capture's memory-fill records (the bytes the program
wrote through mapped pointers), the thread of each call, and the bytes of
vkCmdPushConstants (it prints pValues as an address). Layout from
GFXReconstruct's `format/format.h`: a file header (fourcc "GFXR", version,
option count, options), then blocks of `{u64 size, u32 type}` + payload.
Function-call payloads start `{u32 api_call_id, u64 thread_id}` and go on
with the call's encoded parameters; meta-data payloads start
`{u32 meta_data_id}`, and a fill-memory command continues `{u64 thread_id,
u64 memory_id, u64 offset, u64 size}` then the bytes. Those headers are never
compressed, the rest of a payload may be: the bytes are read from the capture
as gfxrecon-compress writes it uncompressed. The converter numbers blocks from
0 in file order, so a block's ordinal is the `index` of its JSON line. A
file cut off inside a block (the program killed before the layer wrote its
buffer out) is read up to its last whole block, as the converter reads it.
"""

from __future__ import annotations

import base64
import fcntl
import math
import mmap
import os
import pickle
import resource
import shutil
import struct
import signal
import subprocess
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .errors import CaptureError

__all__ = ["Blocks", "CallThreads", "CapturedBytes", "FillMemory", "capture_env", "converting", "decompress",
           "extracting", "held_open", "read_blocks", "reading_blocks"]

_COMPRESSED = 0x80000000
_META_DATA_BLOCK = 3
_FUNCTION_CALL_BLOCK = 4
_FILL_MEMORY = 2  # MetaDataType::kFillMemoryCommand (low 16 bits of the meta-data id)
_PUSH_CONSTANTS = 0x11084  # ApiCall_vkCmdPushConstants
# Calls whose JSON line leaves out what the import needs: VkSpecializationInfo's pData, a descriptor
# update template's data (ApiCall_vkCreateComputePipelines, _vkUpdateDescriptorSetWithTemplate,
# _vkCmdPushDescriptorSetWithTemplateKHR, _vkUpdateDescriptorSetWithTemplateKHR).
_KEPT_CALLS = (0x11042, 0x110A0, 0x110DD, 0x110E0)
_COMPRESSION_OPTION = 1  # file option kCompressionType; value 0 is kNone
# Compiled once: a capture has a block per call, and these are read for each.
_BLOCK_HEADER = struct.Struct("<QI").unpack_from  # size, type
_CALL_HEADER = struct.Struct("<IQ").unpack_from  # api call id, thread id


@dataclass(frozen=True, slots=True)
class FillMemory:
    """A host write the capture layer recorded: `size` bytes at `offset` of the mapped range of `memory`."""

    index: int
    thread: int
    memory: int
    offset: int
    size: int
    at: int | None  # where its bytes lie in `Blocks.path`; None where the payload is compressed

    def data(self, capture: Path) -> CapturedBytes | None:
        """The bytes written, in `capture` (`Blocks.path`); None where they are not there (compressed)."""
        return None if self.at is None else CapturedBytes(capture, self.at, self.size)


_held: dict[Path, int] = {}  # capture files `held_open` keeps open -> their descriptors


@contextmanager
def held_open(path: Path) -> Iterator[None]:
    """`path` kept open for CapturedBytes.read within the block: an open and a close per read were 7 us of its 8,
    and a long run reads thousands of fill records (each twice: the readback walk, the writing)."""
    if path in _held:
        yield
        return
    _held[path] = os.open(path, os.O_RDONLY)
    try:
        yield
    finally:
        os.close(_held.pop(path))


@dataclass(frozen=True, slots=True)
class CapturedBytes:
    """`size` bytes of a capture file from byte `at`, read where used: a long run's fill records are most of its
    stream, and held as text they were most of an import's memory. Its str() is the stream's base64 text, as a
    document that holds it is written (model.dump.document_chunks)."""

    path: Path
    at: int
    size: int

    def read(self) -> bytes:
        held = _held.get(self.path)
        if held is not None:
            return os.pread(held, self.size, self.at)
        fd = os.open(self.path, os.O_RDONLY)  # not a buffered file object: a long run reads thousands of these
        try:
            return os.pread(fd, self.size, self.at)
        finally:
            os.close(fd)

    def part(self, skip: int, size: int) -> CapturedBytes:
        return CapturedBytes(self.path, self.at + skip, size)

    def __str__(self) -> str:
        return base64.b64encode(self.read()).decode()


@dataclass
class CallThreads:
    """Call index -> capture thread id, as the runs of calls on one thread: a program's calls change thread
    seldom, and a dict of every call's was most of a long capture's import memory."""

    # The first block index of each run: a list, not an array("Q"), which a bisection boxes each int of anew (a
    # thread lookup per host op took three times as long); a million-call capture has 67k runs, 2 MB as a list.
    starts: list[int] = field(default_factory=list)
    tids: list[int] = field(default_factory=list)  # the thread of each run

    def add(self, index: int, thread: int) -> None:
        """Block `index` (past those added) is on `thread`; the blocks between are on the one before."""
        if not self.tids or self.tids[-1] != thread:
            self.starts.append(index)
            self.tids.append(thread)

    def get(self, index: int, default: int = 0) -> int:
        at = bisect_right(self.starts, index) - 1
        return self.tids[at] if at >= 0 else default


class _Part(NamedTuple):
    """What the blocks from the part before up to `read_to` (math.inf: the end) hold."""

    read_to: float
    fills: list[FillMemory]
    starts: list[int]  # the thread runs that start in the part (CallThreads)
    tids: list[int]
    pushes: dict[int, bytes]
    kept: dict[int, bytes]
    truncated: str | None  # in the last part
    error: str | None = None  # why the blocks cannot be read past the part before


@dataclass
class Blocks:
    path: Path  # the file the blocks were read from (uncompressed)
    compressed: bool
    fills: list[FillMemory] = field(default_factory=list)
    threads: CallThreads = field(default_factory=CallThreads)  # the capture thread of each call and fill record
    push_constants: dict[int, bytes] = field(default_factory=dict)  # vkCmdPushConstants call index -> pValues
    parameters: dict[int, bytes] = field(default_factory=dict)  # call index -> a call in _KEPT_CALLS's parameters
    truncated: str | None = None  # where the file is cut off inside a block; None for a whole file
    read_to: float = 0  # the blocks before this index are in (math.inf: all of them)
    parts: Iterator[_Part] = field(default_factory=lambda: iter(()))  # those to come from reading_blocks

    def load(self, index: float) -> None:
        """Take the parts in that hold the blocks up to `index` (math.inf: all of them)."""
        while self.read_to <= index and self.read_to != math.inf:
            self.add(next(self.parts))

    def add(self, part: _Part) -> None:
        self.fills += part.fills
        self.threads.starts += part.starts
        self.threads.tids += part.tids
        self.push_constants.update(part.pushes)
        self.parameters.update(part.kept)
        self.truncated, self.read_to = part.truncated, part.read_to


def _mapped(path: Path, shown: str) -> tuple[mmap.mmap | bytes, int]:
    """The capture's bytes and its option count; a CaptureError where it has no whole GFXR file header."""
    with path.open("rb") as f:
        # Mapped, not read: a long run's capture is gigabytes, of which the walk keeps a few bytes per block.
        data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
    if len(data) < 16 or data[:4] != b"GFXR":
        raise CaptureError(shown, "not a GFXReconstruct capture (no GFXR file header)")
    (count,) = struct.unpack_from("<I", data, 12)
    if 16 + 8 * count > len(data):
        raise CaptureError(shown, f"truncated: the file header's {count} options are cut off")
    return data, count


def _compressed(data: mmap.mmap | bytes, count: int) -> bool:
    options = dict(struct.unpack_from("<II", data, 16 + 8 * i) for i in range(count))
    return options.get(_COMPRESSION_OPTION, 0) != 0


def read_blocks(path: Path, shown_as: Path | None = None) -> Blocks:
    shown = str(shown_as or path)
    data, count = _mapped(path, shown)
    with data if isinstance(data, mmap.mmap) else nullcontext():
        blocks = Blocks(path, _compressed(data, count))
        for part in _parts(data, count, math.inf):
            if part.error is not None:
                raise CaptureError(shown, part.error)
            blocks.add(part)
        return blocks


_PART_BLOCKS = 8192  # blocks a part of reading_blocks holds: a few milliseconds of reading


@contextmanager
def reading_blocks(path: Path) -> Iterator[Blocks]:
    """The capture's blocks, read by a process of its own while the walk goes on (`Blocks.load` takes in the
    parts up to a call): reading them was a fifteenth of a long run's import, on one core with the walk. Its
    header is checked here: a file without one raises the CaptureError read_blocks raises."""
    if threading.active_count() > 1:  # a fork copies only this thread: what the others hold (locks) stays held
        yield read_blocks(path)
        return
    shown = str(path)
    data, count = _mapped(path, shown)
    with data if isinstance(data, mmap.mmap) else nullcontext():
        compressed = _compressed(data, count)
        receive, send = os.pipe()
        child = os.fork()
        if child == 0:  # the reader: what it read, a part at a time, then its exit, running nothing of the parent's
            try:
                os.close(receive)
                with os.fdopen(send, "wb") as out:
                    for part in _parts(data, count, _PART_BLOCKS):
                        pickle.dump(part, out, pickle.HIGHEST_PROTOCOL)
                        out.flush()
            finally:
                os._exit(0)
    os.close(send)
    with os.fdopen(receive, "rb") as parts:
        try:
            yield Blocks(path, compressed, parts=_received(parts, shown))
        finally:
            with suppress(ProcessLookupError):  # stopped where the walk ended first (a CaptureError)
                os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)


def _received(parts, shown: str) -> Iterator[_Part]:
    while True:
        try:
            part = pickle.load(parts)
        except (EOFError, pickle.UnpicklingError):
            raise CaptureError(shown, "the process reading its blocks stopped") from None
        if part.error is not None:
            raise CaptureError(shown, part.error)
        yield part


_RELEASE = 16 << 20  # bytes of the mapping read past before their pages are given back


def _release(data: mmap.mmap | bytes, upto: int, released: int) -> int:
    """Give back the pages of `data` read before `upto` (from `released` on): they count in the process's
    memory until then. The new `released`."""
    if not isinstance(data, mmap.mmap):
        return upto
    end = upto - upto % mmap.PAGESIZE
    data.madvise(mmap.MADV_DONTNEED, released, end - released)
    return end


def _parts(data: mmap.mmap | bytes, count: int, every: float) -> Iterator[_Part]:
    """The blocks after the file header, `every` blocks a part (the last one to the end)."""
    pos, index = 16 + 8 * count, 0
    part = _Part(0, [], [], [], {}, {}, None)
    fills, starts, tids, pushes, kept = part[1:6]
    truncated, released, last, cut = None, 0, None, every
    total = len(data)
    try:
        while pos < total:
            if index == cut:
                yield part._replace(read_to=index)
                part, cut = _Part(0, [], [], [], {}, {}, None), cut + every
                fills, starts, tids, pushes, kept = part[1:6]
            if pos - released >= _RELEASE:
                released = _release(data, pos, released)
            if pos + 12 > total:
                truncated = f"block {index}'s header at byte {pos} is cut off"
                break
            size, kind = _BLOCK_HEADER(data, pos)
            end = pos + 12 + size
            if end > total:
                truncated = f"block {index} at byte {pos} needs {size} bytes, {total - pos - 12} remain"
                break
            plain = not kind & _COMPRESSED
            kind &= ~_COMPRESSED
            if kind == _FUNCTION_CALL_BLOCK and size >= 12:
                api, thread = _CALL_HEADER(data, pos + 12)
                if thread != last:  # a call on the thread of the one before: nothing to add (most of them)
                    starts.append(index)
                    tids.append(thread)
                    last = thread
                if api == _PUSH_CONSTANTS and plain:
                    # Parameters: command buffer, layout (u64 ids), stage flags, offset, size (u32), then
                    # pValues as an encoded array that ends with its `size` bytes.
                    (length,) = struct.unpack_from("<I", data, pos + 48)
                    pushes[index] = data[end - length:end]
                elif api in _KEPT_CALLS and plain:
                    kept[index] = data[pos + 24:end]
            elif kind == _META_DATA_BLOCK and size >= 36 and \
                    struct.unpack_from("<I", data, pos + 12)[0] & 0xFFFF == _FILL_MEMORY:
                thread, memory, offset, length = struct.unpack_from("<QQQQ", data, pos + 16)
                if thread != last:
                    starts.append(index)
                    tids.append(thread)
                    last = thread
                fills.append(FillMemory(index, thread, memory, offset, length, pos + 48 if plain else None))
            pos, index = end, index + 1
    except struct.error:  # a block too short for the header its type promises
        yield part._replace(read_to=math.inf, error="corrupted: a block is shorter than its type's header")
        return
    yield part._replace(read_to=math.inf, truncated=truncated)


def capture_env(capture: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` plus what runs a program under the capture layer, writing `capture`."""
    return dict(env, VK_INSTANCE_LAYERS="VK_LAYER_LUNARG_gfxreconstruct", GFXRECON_CAPTURE_FILE=str(capture),
                GFXRECON_CAPTURE_FILE_TIMESTAMP="false",
                GFXRECON_LOG_LEVEL="warning",  # the layer logs to stdout: keep the program's output its own
                # Page-aligned buffers: the layer writes whole dirty pages, which otherwise spill onto neighbours.
                GFXRECON_PAGE_GUARD_ALIGN_BUFFER_SIZES="true",
                # Uncompressed: the fill bytes and push constants are read without a gfxrecon-compress pass.
                GFXRECON_CAPTURE_COMPRESSION_TYPE="NONE")


def _tool(name: str, path: Path) -> str:
    found = shutil.which(name)
    if found is None:
        raise CaptureError(str(path), f"{name} not found (install GFXReconstruct: apt-get install gfxreconstruct)")
    return found


def decompress(path: Path, workdir: Path) -> Path:
    """The capture rewritten without compression by gfxrecon-compress (same blocks, same order)."""
    out = workdir / "uncompressed.gfxr"
    _run([_tool("gfxrecon-compress", path), str(path), str(out), "NONE"], path)
    return out


# A corrupted capture can make the tools decode an array of a billion structs: their memory and time
# are bounded (generously for a capture's size), and running past either is a CaptureError.
TOOL_MEMORY = 4 << 30  # bytes of address space, or 64 per byte of the capture where that is more
TOOL_SECONDS = 120  # or a second per 256 KiB of the capture where that is more


def _limits(path: Path) -> tuple[int, float]:
    """(bytes of address space, seconds) a tool may take on `path`."""
    size = path.stat().st_size
    return max(TOOL_MEMORY, 64 * size), max(TOOL_SECONDS, size / (256 << 10))


def _limited(memory: int):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return limit


def _failed(argv: list[str], path: Path, returncode: int, output: str) -> CaptureError:
    last = (output.strip() or "no output").splitlines()[-1]
    return CaptureError(str(path), f"{Path(argv[0]).name} failed ({returncode}): {last}")


def _ran_past(argv: list[str], path: Path, seconds: float, what: str = "s") -> CaptureError:
    return CaptureError(str(path), f"{Path(argv[0]).name} ran past {seconds:.0f} {what}: a corrupted capture?")


def _run(argv: list[str], path: Path) -> None:
    _finish(_start(argv, path), argv, path)


def _start(argv: list[str], path: Path) -> tuple[subprocess.Popen, float]:
    """A tool started on `path`, within its limits: (the process, the monotonic time it must be done by)."""
    memory, seconds = _limits(path)
    # Limited before it runs (preexec_fn, as subprocess.run had it): a prlimit after the start races the tool.
    tool = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                            preexec_fn=_limited(memory))  # noqa: PLW1509
    return tool, time.monotonic() + seconds


def _finish(started: tuple[subprocess.Popen, float], argv: list[str], path: Path) -> None:
    """Wait for a tool `_start` started; its failure, or its running past its time, is a CaptureError."""
    tool, deadline = started
    try:
        out, err = tool.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        tool.kill()
        tool.communicate()
        raise _ran_past(argv, path, _limits(path)[1]) from None
    if tool.returncode != 0:
        raise _failed(argv, path, tool.returncode, err.strip() or out)


def _widen(pipe: int) -> None:
    """Make `pipe` hold as much as a process may make it hold (Linux: /proc/sys/fs/pipe-max-size, 1 MiB by default),
    where it can. A pipe holds 64 KiB by default, some 250 lines: the converter then stopped whenever the walk
    lagged, and the walk waited whenever the converter did (on fft1251, 0.3-0.8 s of a 1.1-1.6 s walk; with
    1 MiB, under 0.01 s)."""
    with suppress(OSError, AttributeError, ValueError):  # not Linux, or a limit this process may not reach
        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, int(Path("/proc/sys/fs/pipe-max-size").read_text()))


@contextmanager
def converting(path: Path, workdir: Path) -> Iterator[Iterator[bytes]]:
    """gfxrecon-convert's JSON lines (bytes) as it writes them, read while it runs: neither a file of them nor
    all of them at once (a long run's are gigabytes), and the converter's time overlaps the walk's. Its
    time is bounded in CPU seconds, not wall time: it waits on the pipe for as long as the walk takes.
    Its failure is raised at the end of the block, in place of whatever the block raised over the lines
    it cut short."""
    argv = [_tool("gfxrecon-convert", path), "--output", "stdout", str(path)]
    memory, seconds = _limits(path)
    with (workdir / "convert.err").open("w+", encoding="utf-8", errors="replace") as errors:
        tool = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, bufsize=1 << 20)
        _widen(tool.stdout.fileno())
        with suppress(ProcessLookupError):  # done already; set from here: a caller of this may run threads
            resource.prlimit(tool.pid, resource.RLIMIT_AS, (memory, memory))
            resource.prlimit(tool.pid, resource.RLIMIT_CPU, (int(seconds), int(seconds) + 1))  # SIGXCPU, then KILL

        def failure(returncode: int | None) -> CaptureError | None:
            if returncode == -signal.SIGXCPU:
                return _ran_past(argv, path, seconds, "s of CPU")
            if returncode:
                errors.seek(0)
                return _failed(argv, path, returncode, errors.read())
            return None

        try:
            with tool.stdout:  # its log lines share it with the records: records.read_lines skips them
                yield tool.stdout
            found = failure(tool.wait())
        except BaseException:
            returncode = tool.poll()  # None: still running, stopped by what the block raised
            tool.kill()
            tool.wait()
            found = failure(returncode)
            if found is None:
                raise
        if found is not None:
            raise found from None


@contextmanager
def extracting(path: Path, workdir: Path) -> Iterator[Callable[[], Path]]:
    """gfxrecon-extract started on `path` (it runs while the block reads the capture's blocks), and a function
    that waits for it: the directory of the `sh<handle>` SPIR-V files. Stopped where the block raises first."""
    shaders = workdir / "shaders"
    shaders.mkdir()
    argv = [_tool("gfxrecon-extract", path), "--dir", str(shaders), str(path)]
    started = _start(argv, path)

    def done() -> Path:
        _finish(started, argv, path)
        return shaders
    try:
        yield done
    finally:
        if started[0].returncode is None:  # not waited for: what the block raised stands
            started[0].kill()
            started[0].communicate()
