"""Host reads that a capture does not record, and page-guard fills that are such reads (docs/format.md,
"Host reads in imported captures").

A capture records what the host writes through a mapping (fill-memory records), never what it reads. Yet
every compute program reads its results back: a copy into a staging buffer, a fence or semaphore wait, a
read through the mapping. Without that read in the stream, a missing barrier to the host stage is never
found. `Readbacks` walks the host ops in capture order, with the bytes each submit's commands access, and:
- after the first host wait that covers the copy that wrote a staging buffer's bytes last, adds an assumed
  host read of them (label ASSUMED ...); a staging buffer is one on coherent host-visible memory whose
  usage is transfer only: the device can only copy into and out of it, so it is there for the host. Only
  a copy's bytes: a fill of such a buffer is how an engine makes a zero source for its clears (wgpu does);
- takes a fill-memory record as a host read where a device command wrote every byte of it last, a host
  wait covered that command, no device command and no host write touched the bytes since, and no read
  reads them later before a write (what is read there was written): a
  page-guard capture writes back each page the host touched, read or written, and it holds no earlier
  content of those bytes to tell the two apart. Where an assumed read already stands for it, the fill
  is dropped. A fill made at a vkFlushMappedMemoryRanges stays a write: a program flushes what it wrote
  (assisted memory tracking makes only such fills).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

__all__ = ["ASSUMED", "Placement", "Readbacks", "Written", "accesses"]

ASSUMED = "assumed host read"  # how an assumed read's label starts: the finding that names it shows it
FILL = "fill memory"  # how the label of a fill-memory record's host write starts (translate.py)
HOST_WAITS = ("wait_fences", "wait_semaphores", "queue_wait_idle", "device_wait_idle")

Frontier = dict[str, int]  # queue -> the number of its submits that are complete, the latest of them included


@dataclass(frozen=True)
class Placement:
    """Where a stream buffer's bytes lie: `offset` in memory `memory`."""

    memory: int
    offset: int
    staging: bool  # coherent host-visible memory, usage transfer only
    mapped: bool  # the program maps the memory: the host may write it


@dataclass(frozen=True)
class Written:
    """Bytes [lo, hi) of one memory that a device command wrote last, through `buffer` from `at` on."""

    lo: int
    hi: int
    buffer: str
    at: int
    queue: str
    submit: int
    copied: bool  # by a copy command: a readback
    waited: bool = False  # a host wait covers the command
    assumed: bool = False  # and an assumed host read of the bytes follows it


@dataclass
class _Signals:
    """One semaphore's signals so far, for a wait to find its own by bisection: a capture of a long run
    signals a timeline semaphore tens of thousands of times."""

    latest: Frontier = field(default_factory=dict)  # what the latest signal covers: a binary wait's
    highest: list[int] = field(default_factory=list)  # per signal with a value: the highest value so far
    frontiers: list[Frontier] = field(default_factory=list)  # what each of those covers

    def add(self, value: int | None, frontier: Frontier) -> None:
        self.latest = frontier
        if value is not None:
            self.highest.append(max(value, self.highest[-1]) if self.highest else value)
            self.frontiers.append(frontier)

    def reaching(self, value: int) -> Frontier:
        """What the first signal of `value` or more covers."""
        at = bisect_left(self.highest, value)
        return self.frontiers[at] if at < len(self.frontiers) else {}


def _cut(entries: list[Written], lo: int, hi: int) -> list[Written]:
    """`entries` less the bytes [lo, hi)."""
    out = []
    for e in entries:
        if e.lo < lo:
            out.append(replace(e, hi=min(e.hi, lo)))
        if e.hi > hi:
            out.append(replace(e, lo=max(e.lo, hi), at=e.at + max(0, hi - e.lo)))
    return out


def _clip(entries: list[Written], lo: int, hi: int) -> list[Written]:
    """The parts of `entries` within [lo, hi)."""
    return [replace(e, lo=max(e.lo, lo), hi=min(e.hi, hi), at=e.at + max(0, lo - e.lo))
            for e in entries if e.lo < hi and e.hi > lo]


def _join(frontiers) -> Frontier:
    out: Frontier = {}
    for f in frontiers:
        for queue, n in f.items():
            out[queue] = max(out.get(queue, 0), n)
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
            yield b["buffer"], b["offset"], b["size"], b["access"] != "write", b["access"] in ("write", "read_write")
        if "indirect" in cmd:
            yield cmd["indirect"]["buffer"], cmd["indirect"]["offset"], 12, True, False


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


def _covers(spans: list[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a <= lo and hi <= b for a, b in spans)


def _overlaps(spans: list[tuple[int, int]], lo: int, hi: int) -> bool:
    return any(a < hi and lo < b for a, b in spans)


class Readbacks:
    def __init__(self, placements: dict[str, Placement], command_buffers: dict[str, list[dict]],
                 queue_device: dict[str, str], flushed_fills: set[int], assume: bool) -> None:
        """placements: the buffers on host-visible memory; queue_device: stream queue -> its device;
        flushed_fills: the call indices of the fill records made at a flush; assume: add the assumed reads."""
        self.placements = placements
        self.flushed_fills = flushed_fills
        self.queue_device = queue_device
        self.command_buffers = command_buffers
        self.assume = assume
        self.written: dict[int, list[Written]] = {}  # memory -> what device commands wrote last there
        self.unwaited: set[int] = set()  # memories with writes no host wait covered yet: a wait looks only there
        self.rank: dict[int, int] = {}  # memory -> its place in `written`, the order a wait goes through them in
        self.submitted: dict[str, int] = {}  # queue -> its submits so far
        self.queue_frontier: dict[str, Frontier] = {}  # queue -> what its latest submit's completion covers
        self.signals: dict[str, _Signals] = {}
        self.fences: dict[str, Frontier] = {}
        self.destroyed: set[str] = set()
        self.assumed_reads: list[str] = []  # buffer ids, for the summary
        self.fill_reads: set[int] = set()  # the call indices of the fill-memory records taken as host reads
        self.recorded: dict[int, list[tuple[int, int]]] = {}  # memory -> the bytes a captured write reached
        self.unrecorded: str | None = None  # the first device read of mapped bytes no captured write reached

    def walk(self, ops: list[tuple[int, int, dict]]) -> list[tuple[int, int, dict]]:
        """(call index, capture thread, host op) in capture order, with assumed reads added after the waits
        and page-guard fills of read bytes turned into reads or dropped."""
        out = []
        consumed = self._consumed(ops)
        for at, (index, thread, op) in enumerate(ops):
            kind = op["op"]
            if kind == "submit":
                self._submit(op)
            elif kind == "host_write" and op["label"].startswith(FILL) and index not in self.flushed_fills \
                    and at not in consumed:
                op = self._fill(index, op)
                if op is None:
                    continue
            elif kind == "host_write":
                self._host_write(op)
            elif kind == "signal_semaphore":  # orders the host's waits, covers no device work
                self.signals.setdefault(op["semaphore"], _Signals()).add(op["value"], {})
            elif kind == "destroy":
                self.destroyed.add(op["buffer"])
            out.append((index, thread, op))
            if kind in HOST_WAITS:
                out += [(index, thread, read) for read in self._waited(self._covered(op), op["label"])]
        return out

    def _consumed(self, ops: list[tuple[int, int, dict]]) -> set[int]:
        """The positions in `ops` of the fills whose bytes a later read (device or host) reads before anything
        writes them: the program wrote what it reads there. Another buffer bound later over a readback
        buffer's memory, the layer's late record of a read can land on it; only a write there is read."""
        read_next: dict[int, list[tuple[int, int]]] = {}  # memory -> the bytes whose next access is a read
        out = set()
        for at in reversed(range(len(ops))):
            op = ops[at][2]
            if op["op"] == "submit":
                touched = [(buffer, offset, size, reads, writes) for batch in op["batches"]
                           for _, buffer, offset, size, reads, writes in self._accesses(batch)]
            else:
                touched = [(op["buffer"], op["offset"], op["size"], op["op"] == "host_read",
                            op["op"] == "host_write")] if op["op"] in ("host_read", "host_write") else []
            for buffer, offset, size, reads, writes in reversed(touched):
                found = self._range(buffer, offset, size)
                if found is None:
                    continue
                (place, lo, hi), spans = found, read_next.get(found[0].memory, [])
                if writes and op["label"].startswith(FILL) and _overlaps(spans, lo, hi):
                    out.add(at)
                spans = _subtract(spans, lo, hi) if writes else spans
                read_next[place.memory] = _add(spans, lo, hi) if reads else spans  # a read_write reads first
        return out

    def _accesses(self, batch: dict) -> Iterator[tuple[dict, str, int, int, bool, bool]]:
        """(command, buffer, offset, size, reads, writes) for each access of a batch's commands, in order."""
        for cb in batch["command_buffers"]:
            for cmd in self.command_buffers.get(cb, ()):
                for access in accesses(cmd):
                    yield (cmd, *access)

    # ---- what completes when -----------------------------------------------

    def _submit(self, op: dict) -> None:
        queue = op["queue"]
        self.submitted[queue] = n = self.submitted.get(queue, 0) + 1
        frontier = _join([self.queue_frontier.get(queue, {}), {queue: n}])
        for batch in op["batches"]:
            frontier = _join([frontier] + [self._signal(w["semaphore"], w.get("value")) for w in batch["wait"]])
            for cmd, buffer, offset, size, reads, writes in self._accesses(batch):
                found = self._range(buffer, offset, size)
                if found is not None:
                    if reads:
                        self._device_read(cmd, buffer, *found)
                    self._device_access(*found, buffer, offset, writes and cmd["cmd"], queue, n)
            for s in batch["signal"]:
                self.signals.setdefault(s["semaphore"], _Signals()).add(s.get("value"), frontier)
        self.queue_frontier[queue] = frontier
        if "fence" in op:
            self.fences[op["fence"]] = frontier

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
        if kind == "wait_semaphores":
            return _join(self._signal(w["semaphore"], w["value"]) for w in op["waits"])
        if kind == "queue_wait_idle":
            return self.queue_frontier.get(op["queue"], {})
        return _join(f for q, f in self.queue_frontier.items() if self.queue_device.get(q) == op["device"])

    # ---- bytes -------------------------------------------------------------

    def _range(self, buffer: str, offset: int, size: int) -> tuple[Placement, int, int] | None:
        place = self.placements.get(buffer)
        return None if place is None else (place, place.offset + offset, place.offset + offset + size)

    def _device_read(self, cmd: dict, buffer: str, place: Placement, lo: int, hi: int) -> None:
        """Assisted memory tracking records a host write only at its flush: a program that writes coherent
        memory without flushing leaves the device reading mapped bytes that no captured write reached."""
        if place.mapped and self.unrecorded is None and not _covers(self.recorded.get(place.memory, []), lo, hi):
            self.unrecorded = f"{cmd['label']} reads {buffer} bytes [{lo - place.offset}, {hi - place.offset})"

    def _device_access(self, place: Placement, lo: int, hi: int, buffer: str, offset: int, writer: str | bool,
                       queue: str, submit: int) -> None:
        """writer: the command kind where it writes the bytes, False where it only reads them."""
        if writer:
            self.recorded[place.memory] = _add(self.recorded.get(place.memory, []), lo, hi)
        entries = _cut(self.written.get(place.memory, []), lo, hi)  # a read: the bytes are no longer readback's
        if writer:
            entries.append(Written(lo, hi, buffer, offset, queue, submit, writer == "copy"))
            self.unwaited.add(place.memory)
        self.written[place.memory] = entries
        self.rank.setdefault(place.memory, len(self.rank))

    def _host_write(self, op: dict) -> None:
        found = self._range(op["buffer"], op["offset"], op["size"])
        if found is not None:
            place, lo, hi = found
            self.written[place.memory] = _cut(self.written.get(place.memory, []), lo, hi)
            self.rank.setdefault(place.memory, len(self.rank))
            self.recorded[place.memory] = _add(self.recorded.get(place.memory, []), lo, hi)

    def _waited(self, covered: Frontier, wait: str) -> list[dict]:
        """Mark the device writes a host wait covers; the assumed reads of those of staging buffers."""
        reads = []
        for memory in sorted(self.unwaited, key=self.rank.__getitem__):
            entries, pending = self.written[memory], False
            for i, e in enumerate(entries):
                if e.waited or e.submit > covered.get(e.queue, 0):
                    pending = pending or not e.waited
                    continue
                assumed = self.assume and e.copied and self.placements[e.buffer].staging and \
                    e.buffer not in self.destroyed
                entries[i] = replace(e, waited=True, assumed=assumed)
                if assumed:
                    self.assumed_reads.append(e.buffer)
                    reads.append({"op": "host_read", "buffer": e.buffer, "offset": e.at, "size": e.hi - e.lo,
                                  "label": f"{ASSUMED} (readback) after {wait}"})
            if not pending:
                self.unwaited.discard(memory)
        return reads

    def _fill(self, index: int, fill: dict) -> dict | None:
        """The op a fill-memory record is: the host read of bytes that a device command wrote last, a host wait
        covered, and nothing touched since (None where assumed reads stand for all of them); else the write."""
        found = self._range(fill["buffer"], fill["offset"], fill["size"])
        under = [] if found is None else _clip(self.written.get(found[0].memory, []), found[1], found[2])
        if not under or not all(e.waited for e in under) or sum(e.hi - e.lo for e in under) < fill["size"]:
            self._host_write(fill)
            return fill
        self.fill_reads.add(index)
        if all(e.assumed for e in under):
            return None
        return {"op": "host_read", "buffer": fill["buffer"], "offset": fill["offset"], "size": fill["size"],
                "label": f"{fill['label']}: a host read of bytes the device wrote (page guard)"}
