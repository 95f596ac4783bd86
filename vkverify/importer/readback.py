"""Host reads that a capture does not record, and what each page-guard fill-memory record is (docs/format.md,
"Host reads in imported captures").

A capture records what the host writes through a mapping (fill-memory records), never what it reads. Yet
every compute program reads its results back: a copy into a staging buffer, a fence or semaphore wait, a
read through the mapping. Without that read in the stream, a missing barrier to the host stage is never
found. `Readbacks` walks the host ops in capture order, with the bytes each submit's commands access, and:
- after the first host wait that covers the copy that wrote a staging buffer's bytes last, adds an assumed
  host read of them (label ASSUMED ...); a staging buffer is one on coherent host-visible memory whose
  usage is transfer only: the device can only copy into and out of it, so it is there for the host. Only
  a copy's bytes: a fill of such a buffer is how an engine makes a zero source for its clears (wgpu does).
  Where the capture has page-guard records (not made at a flush), which show the pages the host touched by
  the next submit or flush, a read stands unless no record covers its bytes by a device rewrite of them, a
  flush of them, or the end with a submit after its wait: a page the host never touched it never read;
- reads each fill-memory record byte range by byte range (`_kind`): a page-guard capture writes back each
  whole page the host touched, read or written, and each record holds the page's bytes. Bytes an earlier
  record showed are no access where it repeats them, a host write where it changes them; bytes a device
  command wrote, a host wait covering it, are a host read where they are a result for the host (no device
  command read them since, or a barrier to the host stage covers them), else no access, unless a later
  command reads them before a write: the program wrote what is read there (through another buffer bound
  over the same memory: recycled; after the device read them back; or flushed); bytes no write reached,
  and bytes a device command may still be writing, are a host write. Each access's label says which.
"""

from __future__ import annotations

import base64
import functools
import itertools
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import NamedTuple

from ..model.accesses import binding_reads, binding_writes
from .gfxr import CapturedBytes
from .order import semaphore_waits

__all__ = ["ASSUMED", "Placement", "Readbacks", "Touch", "Written", "accesses", "touch"]

ASSUMED = "assumed host read"  # how an assumed read's label starts: the finding that names it shows it
FILL = "fill memory"  # how the label of a fill-memory record's host write starts (translate.py)
# How an assumed read's label ends in a capture with page-guard records (none that names a call: labels name theirs).
CONFIRMED = ", which a page-guard record of its bytes confirms"
UNCONFIRMED = ", which no record confirms (no submit after the wait, nor a flush of its bytes)"
# What a page-guard record's host access is inferred from: its label goes on "fill memory #<index>: <this>".
READ_SHOWN = "a host read of bytes the device wrote (page guard)"
WRITE_CHANGED = "a host write (the bytes differ from their last record)"
WRITE_FRESH = "a host write (bytes no earlier write reached)"
WRITE_RECYCLED = ("a host write (bytes the device wrote through another buffer, which a later command reads through "
                  "this one)")
WRITE_REUSED = "a host write (bytes the device wrote and read back, which a later command reads)"
WRITE_UNWAITED = "a host write (bytes a device command may still be writing)"
WRITE_FLUSHED = "a host write (flushed bytes the device wrote, which a later command reads)"
HOST_WAITS = ("wait_fences", "wait_semaphores", "get_semaphore_counter_value", "queue_wait_idle", "device_wait_idle")

Frontier = dict[str, int]  # queue -> the number of its submits that are complete, the latest of them included


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a stream buffer's bytes lie: `offset` in memory `memory`."""

    memory: int
    offset: int
    staging: bool  # coherent host-visible memory, usage transfer only
    mapped: bool  # the program maps the memory: the host may write it


class Written(NamedTuple):
    """Bytes [lo, hi) of one memory that a device command wrote last, through `buffer` from `at` on. A tuple: a
    frozen dataclass's init (a setattr per field) took four times as long, at each write and wait."""

    lo: int
    hi: int
    buffer: str
    at: int
    queue: str
    submit: int
    copied: bool  # by a copy command: a readback
    waited: bool = False  # a host wait covers the command
    assumed: int | None = None  # the assumed host read of the bytes after that wait (its place in Readbacks.reads)
    read: bool = False  # a device command read the bytes since: an intermediate result
    for_host: bool = False  # a barrier to the host stage covers them since: the program prepared them for the host
    epoch: int = 0  # the barriers to the host stage over every byte before the write (Readbacks.host_barriers)

    def part(self, lo: int, hi: int) -> Written:
        # Made field by field (so is `waited_for`): _replace takes twice the time, at each write and wait.
        return Written(lo, hi, self.buffer, self.at + lo - self.lo, self.queue, self.submit, self.copied, self.waited,
                       self.assumed, self.read, self.for_host, self.epoch)

    def waited_for(self, assumed: int | None) -> Written:
        """These bytes with a host wait covering them, and `assumed` the read after it."""
        return Written(self.lo, self.hi, self.buffer, self.at, self.queue, self.submit, self.copied, True, assumed,
                       self.read, self.for_host, self.epoch)


@dataclass
class _Signals:
    """One semaphore's signals so far, for a wait to find its own by bisection: a capture of a long run
    signals a timeline semaphore tens of thousands of times."""

    latest: Frontier = field(default_factory=dict)  # what the latest signal covers: a binary wait's
    highest: list[int] = field(default_factory=list)  # per signal with a value: the highest value so far
    # What each of those covers. One of a single queue (a long run's every one) as that queue, and its count in
    # `counts`: 16 bytes a signal, not a (queue, count) tuple's 96 or a dict's 250.
    frontiers: list[Frontier | str] = field(default_factory=list)
    counts: array = field(default_factory=lambda: array("q"))

    def add(self, value: int | None, frontier: Frontier) -> None:
        self.latest = frontier
        if value is not None:
            self.highest.append(max(value, self.highest[-1]) if self.highest else value)
            if len(frontier) == 1:
                queue, count = next(iter(frontier.items()))
                self.frontiers.append(queue)
                self.counts.append(count)
            else:
                self.frontiers.append(frontier)
                self.counts.append(0)

    def reaching(self, value: int) -> Frontier:
        """What the first signal of `value` or more covers."""
        at = bisect_left(self.highest, value)
        if at == len(self.frontiers):
            return {}
        found = self.frontiers[at]
        return {found: self.counts[at]} if type(found) is str else found


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Bytes [lo, hi) of one memory whose contents a fill-memory record showed, no write since: those of the
    record's `text` (its bytes in the capture, or base64) from byte `skip` on, read when compared."""

    lo: int
    hi: int
    text: CapturedBytes | str
    skip: int

    def part(self, lo: int, hi: int) -> Snapshot:
        return Snapshot(lo, hi, self.text, self.skip + lo - self.lo)  # not dataclasses.replace: twice the time

    def data(self) -> bytes:
        return _decoded(self.text)[self.skip:self.skip + self.hi - self.lo]


@functools.lru_cache(maxsize=4)
def _decoded(text: CapturedBytes | str) -> bytes:
    """A record's bytes (its pages are compared range by range, one after another)."""
    return text.read() if isinstance(text, CapturedBytes) else base64.b64decode(text)


def _part(text: CapturedBytes | str, skip: int, size: int) -> CapturedBytes | str:
    """`size` bytes of a record's bytes from `skip` on, as the record holds them."""
    if isinstance(text, CapturedBytes):
        return text.part(skip, size)
    return base64.b64encode(_decoded(text)[skip:skip + size]).decode()


def _cut(entries: list, lo: int, hi: int) -> list:
    """`entries` (Written or Snapshot) less the bytes [lo, hi)."""
    out = []
    for e in entries:
        if e.hi <= lo or hi <= e.lo:  # untouched: kept as it is, not remade
            out.append(e)
            continue
        if e.lo < lo:
            out.append(e.part(e.lo, min(e.hi, lo)))
        if e.hi > hi:
            out.append(e.part(max(e.lo, hi), e.hi))
    return out


def _clip(entries: list, lo: int, hi: int) -> list:
    """The parts of `entries` within [lo, hi)."""
    return [e.part(max(e.lo, lo), min(e.hi, hi)) for e in entries if e.lo < hi and e.hi > lo]


def _marked(entries: list[Written], lo: int, hi: int, flag: str) -> list[Written]:
    """`entries` with `flag` set on their bytes within [lo, hi): `entries` itself where those bytes have it
    already (a long run reads the same bytes at every step)."""
    if all(getattr(e, flag) for e in entries if e.lo < hi and lo < e.hi):
        return entries
    return _cut(entries, lo, hi) + [e._replace(**{flag: True}) for e in _clip(entries, lo, hi)]


def _join(frontiers) -> Frontier:
    """What all of `frontiers` cover. Frontiers are never changed once made: where one covers the others (a wait
    for the submit before, on one queue), it is the join itself, not a copy."""
    out: Frontier = {}
    copied = False
    for f in frontiers:
        if not out:
            out = f
            continue
        for queue, n in f.items():
            if n > out.get(queue, 0):
                if not copied:
                    out, copied = dict(out), True
                out[queue] = n
    return out


def accesses(cmd: dict) -> Iterator[tuple[str, int, int, bool, bool]]:
    """(buffer, offset, size, reads, writes) for each buffer range a stream command accesses."""
    kind = cmd["cmd"]
    if kind == "copy":
        for r in cmd["regions"]:
            yield cmd["src"], r["src_offset"], r["size"], True, False
            yield cmd["dst"], r["dst_offset"], r["size"], False, True
    elif kind in ("fill", "update"):
        yield cmd["dst"], cmd["offset"], cmd["size"], False, True
    elif kind.startswith("dispatch"):
        for b in cmd["bindings"]:
            if "buffer" in b:  # not a storage image's: the host reaches no image
                yield b["buffer"], b["offset"], b["size"], binding_reads(b["access"]), binding_writes(b["access"])
        if "indirect" in cmd:
            yield cmd["indirect"]["buffer"], cmd["indirect"]["offset"], 12, True, False


class Touch(NamedTuple):
    """What the walk needs of a stream command (`touch`): an import keeps this of each command, not its dict."""

    kind: str  # the command's `cmd`
    accesses: tuple[tuple[str, int, int, bool, bool], ...]  # `accesses`
    to_host: tuple[tuple[str, int, int] | None, ...]  # `_to_host`
    executes: tuple[str, ...] = ()  # an execute_commands' secondary command buffers


def touch(cmd: dict, accessed: tuple | None = None) -> Touch:
    """accessed: the command's buffer accesses, given where `accesses` cannot tell them (an image command's)."""
    return Touch(cmd["cmd"], tuple(accesses(cmd)) if accessed is None else accessed, tuple(_to_host(cmd)),
                 tuple(cmd["command_buffers"]) if cmd["cmd"] == "execute_commands" else ())


def _to_host(cmd: dict) -> Iterator[tuple[str, int, int] | None]:
    """The buffer ranges a barrier command makes available to the host stage (dst stage `host`); None for a
    global barrier's: every buffer's."""
    if cmd["cmd"] != "barrier":
        return
    if not cmd.get("buffers") and not cmd.get("images"):
        if "host" in _names(cmd.get("dst_stage")):
            yield None
        return
    for b in cmd.get("buffers", ()):  # an image barrier makes nothing available to the host: it reaches no image
        if "host" in _names(b.get("dst_stage", cmd.get("dst_stage"))):
            yield b["buffer"], b["offset"], b["size"]


def _names(stages: str | list[str] | None) -> list[str]:
    return [stages] if isinstance(stages, str) else list(stages or ())


_span_end = itemgetter(1)


def _add(spans: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The union of disjoint sorted `spans` and [lo, hi), disjoint and sorted."""
    out = []
    for a, b in spans:
        if b < lo or a > hi:
            out.append((a, b))
        else:
            lo, hi = min(a, lo), max(b, hi)
    return sorted(out + [(lo, hi)])


def _subtract(spans: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """Disjoint sorted `spans` less [lo, hi)."""
    return [(a, b) for x, y in spans for a, b in ((x, min(y, lo)), (max(x, hi), y)) if a < b]


def _within(spans: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """The parts of disjoint sorted `spans` within [lo, hi)."""
    return [(max(a, lo), min(b, hi)) for a, b in spans if a < hi and lo < b]


def _covers(spans: list[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a <= lo and hi <= b for a, b in spans)


@dataclass(slots=True, eq=False)  # one record is one object: the walk collects them by identity
class _Record:
    """A page-guard record's host write (`fill`), as the walk saw its bytes [lo, hi) of `place`'s memory: what
    the device wrote there last and what records showed (`written`, `shown`, clipped), the barriers to the host
    stage over every byte by then; and what the accesses after it decided of its bytes so far."""

    index: int
    thread: int
    fill: dict
    place: Placement
    lo: int
    hi: int
    written: list[Written]
    shown: list[Snapshot]
    host_barriers: int
    unreached: int  # its spans of bytes no access reached since (Readbacks.unreached)
    consumed: list[tuple[int, int]] = field(default_factory=list)  # those whose first access since was a read
    accesses: list[tuple[int, int, dict]] = field(default_factory=list)  # what it shows (`Readbacks._shown`)


class Readbacks:
    def __init__(self, placements: dict[str, Placement], command_buffers: dict[str, list[Touch]],
                 queue_device: dict[str, str], flushed_fills: set[int],
                 page_marks: list[tuple[int, int, int, int, bool]], assume: bool) -> None:
        """placements: the buffers on host-visible memory; command_buffers: what each command of each touches;
        queue_device: stream queue -> its device;
        flushed_fills: the call indices of the fill records made at a flush; page_marks: (call index, memory, lo,
        hi, shown), by call index, of each range a vkFlushMappedMemoryRanges flushed (shown False) and of the
        bytes of a fill record that no live buffer holds (True); assume: add the assumed reads."""
        self.page_marks = page_marks
        self.placements = placements
        self.flushed_fills = flushed_fills
        self.queue_device = queue_device
        self.command_buffers = command_buffers
        self.assume = assume
        self.written: dict[int, list[Written]] = {}  # memory -> what device commands wrote last there
        self.unwaited: set[int] = set()  # memories with writes no host wait covered yet: a wait looks only there
        self.rank: dict[int, int] = {}  # memory -> its place in `written`, the order a wait goes through them in
        self.host_barriers = 0  # barriers to the host stage over every byte so far (Written.epoch)
        self.shown: dict[int, list[Snapshot]] = {}  # memory -> what fill records showed there, no write since
        self.submitted: dict[str, int] = {}  # queue -> its submits so far
        self.queue_frontier: dict[str, Frontier] = {}  # queue -> what its latest submit's completion covers
        self.signals: dict[str, _Signals] = {}
        self.fences: dict[str, Frontier] = {}
        self.destroyed: set[str] = set()
        self.reads: list[tuple[int, int, dict]] = []  # the assumed reads: (call index, thread, host_read op)
        self.confirmed: set[int] = set()  # those a page-guard record covers (their places in `reads`)
        self.refuted: set[int] = set()  # those no record covered by a device rewrite of their bytes or a flush
        self.submits = 0  # the submits walked so far
        self.submits_before: list[int] = []  # for each assumed read, the submits before its wait
        self.assumed_reads: list[str] = []  # buffer ids of the assumed reads kept, for the summary
        self.fill_reads: set[int] = set()  # the call indices of the fill-memory records with a host read
        # memory -> the bytes of records that no access reached since, as (lo, hi, record) by lo: disjoint (a record
        # reaches the bytes of those before it), so that an access finds the few it reaches by bisection.
        self.unreached: dict[int, list[tuple[int, int, _Record]]] = {}
        self.recorded: dict[int, list[tuple[int, int]]] = {}  # memory -> the bytes a captured write reached
        # The first device read of mapped bytes no captured write reached: (command buffer, the command's place in
        # it, buffer, lo, hi), the bytes in the buffer.
        self.unrecorded: tuple[str, int, str, int, int] | None = None

    def walk(self, ops: list[tuple[int, int, dict]]) -> list[tuple[int, int, dict]]:
        """(call index, capture thread, host op) in capture order, with assumed reads added after the waits and
        page-guard records turned into the host reads and writes they show (`_fill`, `_shown`)."""
        # An int: the place in self.reads of an assumed read. The ops go in runs, a _Record between two: what a
        # record shows is known once the accesses after it decide each of its bytes (`_later`).
        out: list[tuple[int, int, dict] | int] = []
        runs: list[list | _Record] = [out]
        guarded = False  # page-guard records show touches
        marks = iter(self.page_marks)
        mark = next(marks, None)
        for item in ops:
            index, thread, op = item
            while mark is not None and mark[0] < index:
                self._page_mark(*mark[1:])
                mark = next(marks, None)
            kind = op["op"]
            if kind == "submit":
                self._submit(op)
            elif kind == "host_write":
                record = None
                if op["label"].startswith(FILL):
                    guarded = guarded or index not in self.flushed_fills
                    record = self._fill(index, thread, op)
                if record is not None:
                    out = []
                    runs += [record, out]
                    continue
                self._host_write(op)
            elif kind == "host_read":
                found = self._range(op["buffer"], op["offset"], op["size"])
                if found is not None:
                    self._later(found[0].memory, found[1], found[2], True)
            elif kind == "signal_semaphore":  # orders the host's waits, covers no device work
                self._signals(op["semaphore"]).add(op["value"], {})
            elif kind == "destroy":
                self.destroyed.add(op["buffer"])
            out.append(item)  # the same tuple: a long run has tens of thousands of ops
            if kind in HOST_WAITS and self.unwaited:  # with no write pending, what a wait covers changes nothing
                out += self._waited(self._covered(op), op["label"], index, thread)
        for rest in [mark, *marks] if mark is not None else ():
            self._page_mark(*rest[1:])
        for spans in self.unreached.values():  # the records with bytes no access reached after them: none read
            for record in dict.fromkeys(record for _, _, record in spans):
                self._shown(record)
        if len(runs) > 1:
            out = []
            for run in runs:
                out += run if type(run) is list else run.accesses
        # Where the page guard shows the host's touches, a read stands unless no record covers its bytes by the
        # time the device rewrites them, a flush of them, or the end with a submit after its wait: the layer
        # records the pages the host touched at the next submit or flush. One with no submit after it is kept.
        unseen = self.refuted | {i for i, n in enumerate(self.submits_before) if n < self.submits}
        kept = set(range(len(self.reads))) - (unseen - self.confirmed if guarded else set())
        self.assumed_reads = [self.reads[i][2]["buffer"] for i in sorted(kept)]
        for i in kept if guarded else ():  # what the read stands on
            self.reads[i][2]["label"] += CONFIRMED if i in self.confirmed else UNCONFIRMED
        return [x if not isinstance(x, int) else self.reads[x] for x in out if not isinstance(x, int) or x in kept]

    def _later(self, memory: int, lo: int, hi: int, reads: bool) -> None:
        """An access of bytes [lo, hi) of `memory` (a read, or a read_write: it reads first, where `reads`): of
        the bytes of the records before it that no access reached since, those it reads are what the program
        reads there (_Record.consumed); a record all of whose bytes are reached is read (`_shown`)."""
        spans = self.unreached.get(memory)
        if not spans:
            return
        first = last = bisect_right(spans, lo, key=_span_end)  # the first span that ends past lo
        while last < len(spans) and spans[last][0] < hi:
            last += 1
        if first == last:
            return
        left, done = [], []
        for a, b, record in spans[first:last]:
            if reads:
                record.consumed = _add(record.consumed, max(a, lo), min(b, hi))
            record.unreached -= 1
            for part in ((a, lo, record), (hi, b, record)):
                if part[0] < part[1]:
                    left.append(part)
                    record.unreached += 1
            if not record.unreached:
                done.append(record)
        spans[first:last] = left
        for record in done:
            self._shown(record)

    # ---- what completes when -----------------------------------------------

    def _submit(self, op: dict) -> None:
        self.submits += 1
        queue = op["queue"]
        self.submitted[queue] = n = self.submitted.get(queue, 0) + 1
        before = self.queue_frontier.get(queue)
        frontier = {**before, queue: n} if before else {queue: n}  # none covers more of its own submits
        for waits, command_buffers, signals in op["batches"]:
            if waits:
                frontier = _join([frontier, *[self._signal(w.semaphore, w.value) for w in waits]])
            for cb in command_buffers:
                for owner, at, t in self._run(cb):
                    self._command(t, queue, n, owner, at)
            for s in signals:
                self._signals(s.semaphore).add(s.value, frontier)
        self.queue_frontier[queue] = frontier
        if "fence" in op:
            self.fences[op["fence"]] = frontier

    def _run(self, cb: str) -> Iterable[tuple[str, int, Touch]]:
        """(command buffer, position, touch) of each command an execution of cb runs: a secondary's in the place
        of the execute_commands that runs it (spec 6.7)."""
        touches = self.command_buffers.get(cb)
        if not touches:  # most of a long run's: a submit that only signals a timeline (no generator for them)
            return ()
        return self._commands(cb, touches)

    def _commands(self, cb: str, touches: list[Touch]) -> Iterator[tuple[str, int, Touch]]:
        for at, t in enumerate(touches):
            if t.executes:
                for s in t.executes:
                    yield from self._run(s)
            else:
                yield cb, at, t

    def _command(self, t: Touch, queue: str, submit: int, cb: str, at: int) -> None:
        for buffer, offset, size, reads, writes in t.accesses:
            place = self.placements.get(buffer)  # `_range`, without its tuple: a run's every command comes here
            if place is not None:
                lo = place.offset + offset
                if reads:
                    self._device_read(cb, at, buffer, place, lo, lo + size)
                self._device_access(place, lo, lo + size, buffer, offset, writes and t.kind, queue, submit)
                if self.unreached:
                    self._later(place.memory, lo, lo + size, reads)
        for target in t.to_host:
            found = None if target is None else self._range(*target)
            if target is None or found is not None:
                self._for_host(found)

    def _signals(self, semaphore: str) -> _Signals:
        found = self.signals.get(semaphore)  # not setdefault: that makes a _Signals at each of a run's submits
        if found is None:
            found = self.signals[semaphore] = _Signals()
        return found

    def _signal(self, semaphore: str, value: int | None) -> Frontier:
        """What the signal a wait for `value` (None: binary, the latest signal) synchronizes with covers."""
        signals = self.signals.get(semaphore)
        if signals is None:
            return {}
        return signals.latest if value is None else signals.reaching(value)

    def _covered(self, op: dict) -> Frontier:
        kind = op["op"]
        if kind == "wait_fences":
            return _join(self.fences.get(f, {}) for f in op["fences"])
        if kind in ("wait_semaphores", "get_semaphore_counter_value"):
            return _join(self._signal(w["semaphore"], w["value"]) for w in semaphore_waits(op))
        if kind == "queue_wait_idle":
            return self.queue_frontier.get(op["queue"], {})
        return _join(f for q, f in self.queue_frontier.items() if self.queue_device.get(q) == op["device"])

    # ---- bytes -------------------------------------------------------------

    def _range(self, buffer: str, offset: int, size: int) -> tuple[Placement, int, int] | None:
        place = self.placements.get(buffer)
        return None if place is None else (place, place.offset + offset, place.offset + offset + size)

    def _device_read(self, cb: str, at: int, buffer: str, place: Placement, lo: int, hi: int) -> None:
        """Assisted memory tracking records a host write only at its flush: a program that writes coherent
        memory without flushing leaves the device reading mapped bytes that no captured write reached."""
        if place.mapped and self.unrecorded is None and not _covers(self.recorded.get(place.memory, []), lo, hi):
            self.unrecorded = (cb, at, buffer, lo - place.offset, hi - place.offset)

    def _device_access(self, place: Placement, lo: int, hi: int, buffer: str, offset: int, writer: str | bool,
                       queue: str, submit: int) -> None:
        """writer: the command kind where it writes the bytes, False where it only reads them."""
        entries = self.written.get(place.memory, [])
        if writer:
            self._refute(entries, lo, hi)
            self.recorded[place.memory] = _add(self.recorded.get(place.memory, []), lo, hi)
            self.shown[place.memory] = _cut(self.shown.get(place.memory, []), lo, hi)
            entries = _cut(entries, lo, hi) + [Written(lo, hi, buffer, offset, queue, submit, writer == "copy",
                                                       epoch=self.host_barriers)]
            self.unwaited.add(place.memory)
        else:
            entries = _marked(entries, lo, hi, "read")
        self.written[place.memory] = entries
        self.rank.setdefault(place.memory, len(self.rank))

    def _page_mark(self, memory: int, lo: int, hi: int, shown: bool) -> None:
        """A flush of bytes [lo, hi) of `memory`: the layer records the pages of them the host touched (before
        the flush call), so an assumed read of them that no record confirmed by now never happened. Or (shown) a
        record of bytes no buffer holds any more: the host touched them since the last record, so an assumed
        read of them happened (a program reads a staging buffer, destroys it, and the layer writes the record
        at the next submit)."""
        entries = self.written.get(memory, [])
        if shown:
            self.confirmed |= {e.assumed for e in entries if e.assumed is not None and e.lo < hi and lo < e.hi}
        else:
            self._refute(entries, lo, hi)

    def _refute(self, entries: list[Written], lo: int, hi: int) -> None:
        """The assumed reads of bytes [lo, hi) of `entries`' memory never happened, unless a record confirms them."""
        self.refuted |= {e.assumed for e in entries if e.assumed is not None and e.lo < hi and lo < e.hi}

    def _for_host(self, found: tuple[Placement, int, int] | None) -> None:
        """A barrier to the host stage over the bytes `found` (None: every byte) covers the writes before it.
        Over every byte it is counted, not applied to each write: a long run records one per submit."""
        if found is None:
            self.host_barriers += 1
            return
        place, lo, hi = found
        entries = self.written.get(place.memory)
        if entries:
            self.written[place.memory] = _marked(entries, lo, hi, "for_host")

    def _host_write(self, op: dict) -> None:
        found = self._range(op["buffer"], op["offset"], op["size"])
        if found is not None:
            place, lo, hi = found
            self._later(place.memory, lo, hi, False)
            self.written[place.memory] = _cut(self.written.get(place.memory, []), lo, hi)
            self.rank.setdefault(place.memory, len(self.rank))
            self.recorded[place.memory] = _add(self.recorded.get(place.memory, []), lo, hi)
            self.shown[place.memory] = _cut(self.shown.get(place.memory, []), lo, hi)
            if op["label"].startswith(FILL) and "data" in op:  # a fill record shows the bytes
                self.shown[place.memory].append(Snapshot(lo, hi, op["data"]["base64"], 0))

    def _waited(self, covered: Frontier, wait: str, index: int, thread: int) -> list[int]:
        """Mark the device writes a host wait covers; the assumed reads of those of staging buffers, as their
        places in self.reads."""
        out = []
        for memory in sorted(self.unwaited, key=self.rank.__getitem__):
            entries, pending = self.written[memory], False
            for i, e in enumerate(entries):
                if e.waited or e.submit > covered.get(e.queue, 0):
                    pending = pending or not e.waited
                    continue
                assumed = self.assume and e.copied and not e.read and self.placements[e.buffer].staging and \
                    e.buffer not in self.destroyed
                entries[i] = e.waited_for(len(self.reads) if assumed else None)
                if assumed:
                    out.append(len(self.reads))
                    self.submits_before.append(self.submits)
                    self.reads.append((index, thread, {"op": "host_read", "buffer": e.buffer, "offset": e.at,
                                                       "size": e.hi - e.lo,
                                                       "label": f"{ASSUMED} (readback) after {wait}"}))
            if not pending:
                self.unwaited.discard(memory)
        return out

    def _fill(self, index: int, thread: int, fill: dict) -> _Record | None:
        """A page-guard record: what it shows is read range by range (`_kind`) once the accesses after it decide
        which of its bytes the program reads (`_later`, then `_shown`); None where its bytes are on no memory
        the walk follows (an op as it is)."""
        found = self._range(fill["buffer"], fill["offset"], fill["size"])
        if found is None:
            return None
        place, lo, hi = found
        record = _Record(index, thread, fill, place, lo, hi, _clip(self.written.get(place.memory, []), lo, hi),
                         _clip(self.shown.get(place.memory, []), lo, hi), self.host_barriers, 1)
        confirms = {e.assumed for e in record.written if e.assumed is not None}  # the assumed reads it confirms
        self.confirmed |= confirms
        if confirms:
            self.fill_reads.add(index)
        self._host_write(fill)  # the bytes are what the record shows; it reaches those of the records before
        spans = self.unreached.setdefault(place.memory, [])
        spans.insert(bisect_right(spans, lo, key=_span_end), (lo, hi, record))
        return record

    def _shown(self, record: _Record) -> None:
        """The host accesses `record` shows, range by range (`_kind`), merged, as its `accesses`."""
        index, fill, lo, hi, consumed = record.index, record.fill, record.lo, record.hi, record.consumed
        data = _decoded(fill["data"]["base64"]) if "data" in fill else None
        edges = [x for e in [*record.written, *record.shown] for x in (e.lo, e.hi)] + \
            [x for span in consumed for x in span]
        cuts = sorted({lo, hi, *edges})
        parts: list[tuple[int, int, str | None]] = []
        for a, b in itertools.pairwise(cuts):
            kind = self._kind(record, a, b, data and data[a - lo:b - lo])
            if parts and parts[-1][2] == kind:
                parts[-1] = (parts[-1][0], b, kind)
            else:
                parts.append((a, b, kind))
        for a, b, kind in parts:
            if kind is not None:
                op = "host_read" if kind == READ_SHOWN else "host_write"
                access = {"op": op, "buffer": fill["buffer"], "offset": a - record.place.offset, "size": b - a,
                          "label": f"{fill['label']}: {kind}"}
                if op == "host_write" and data is not None:  # the record's own text where it is all written
                    access["data"] = fill["data"] if (a, b) == (lo, hi) else \
                        {"base64": _part(fill["data"]["base64"], a - lo, b - a)}
                record.accesses.append((index, record.thread, access))
        if any(kind == READ_SHOWN for _, _, kind in parts):
            self.fill_reads.add(index)

    def _kind(self, record: _Record, lo: int, hi: int, data: bytes | None) -> str | None:
        """What `record` is on bytes [lo, hi), which one device write or one snapshot covers, or neither: a host
        read (READ_SHOWN), a host write (one of WRITE_*), or no access (None)."""
        index, fill = record.index, record.fill
        later = _covers(record.consumed, lo, hi)  # a later command reads the bytes before a write
        snapshot = next((s for s in record.shown if s.lo <= lo and hi <= s.hi), None)
        if snapshot is not None:
            return None if data == snapshot.part(lo, hi).data() else WRITE_CHANGED
        device = next((e for e in record.written if e.lo <= lo and hi <= e.hi), None)
        if device is None:
            return WRITE_FRESH
        if not device.waited:
            return WRITE_UNWAITED
        for_host = device.for_host or device.epoch < record.host_barriers
        result = not device.read or for_host  # a result for the host, not an intermediate one
        if later and device.buffer != fill["buffer"]:
            return WRITE_RECYCLED
        if later and index in self.flushed_fills:
            return WRITE_FLUSHED
        if later and not result:
            return WRITE_REUSED
        if device.assumed is not None or not result:
            return None  # an assumed read stands for it; an intermediate result, not the host's
        return READ_SHOWN
