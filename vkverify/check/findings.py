"""Findings: what the checker reports, with one stable id per kind; a run's, recorded in columns and worded as
they are read (Findings: a stream where every access races then costs a few dozen bytes per finding, not a
Finding with its text; issue 29)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..model import ir
from ..model.refs import format_ref
from . import fixes
from .access import Access
from .barriers import stage_text

__all__ = ["ACCESS_KINDS", "KINDS", "Finding", "Findings", "order_calls", "order_text"]


@dataclass(frozen=True)
class FindingKind:
    kind: str
    rule_id: str  # stable, for SARIF and CI systems
    title: str
    description: str  # what the rule demands, for SARIF's fullDescription (docs/format.md, Finding kinds)
    help: str  # the usual fix


KINDS = {k.kind: k for k in (
    FindingKind("raw", "VKV001", "read after write without a memory dependency",
                "A read of bytes that an earlier write made, with no execution dependency ordering the two and "
                "no memory dependency making the write available and visible to the read (7.1, memory model).",
                "Add a barrier (or semaphore wait stage and access masks) from the write's stage and access to the "
                "read's, or a host wait covering the write before a host read; the finding's fix names it."),
    FindingKind("war", "VKV002", "write after read without an execution dependency",
                "A write to bytes that an earlier read still reads, with no execution dependency ordering the read "
                "before the write (7.1).",
                "Add an execution dependency from the read's stage to the write's stage (a barrier, a semaphore, "
                "or a host wait before a host write)."),
    FindingKind("waw", "VKV003", "write after write without a memory dependency",
                "Two writes to the same bytes with no execution and memory dependency between them: the final "
                "contents depend on the schedule (7.1, memory model).",
                "Add a barrier from the first write's stage and access to the second's, or a semaphore or host wait."),
    FindingKind("use_after_destroy", "VKV004", "buffer used after, or destroyed before the end of, its use",
                "A buffer destroyed while a submitted command may still use it, or used after its destroy "
                "(vkDestroyBuffer: all submitted commands that refer to it must have completed).",
                "Wait for the fence, semaphore or idle that covers the last use before destroying the buffer."),
    FindingKind("uninitialized_read", "VKV005", "read of device-local bytes nothing wrote",
                "A read of device memory that no write (device or host) reached before it: its contents are "
                "undefined.",
                "Write (fill, copy, upload) the bytes before the read, ordered before it."),
    FindingKind("deadlock", "VKV006", "no schedule completes: waits block forever",
                "Semaphore or fence waits that no legal schedule can satisfy together: the program never finishes.",
                "Signal what the named waits wait for before waiting, or submit the signalling work first."),
    FindingKind("wait_never_satisfied", "VKV007", "a wait for a value no signal reaches",
                "A semaphore wait (device or host) for a value that no signal in the stream ever reaches (7.4).",
                "Signal the value (or a larger one) somewhere the wait can see it, or wait for a smaller value."),
    FindingKind("timeline_not_increasing", "VKV008", "timeline semaphore signals that do not strictly increase",
                "Signals of a timeline semaphore whose values do not strictly increase in execution order "
                "(VUID-VkSubmitInfo-pSignalSemaphores-03242).",
                "Give each signal of a timeline semaphore a value greater than every earlier one."),
    FindingKind("binary_semaphore_misuse", "VKV009", "binary semaphore wait without exactly one pending signal",
                "A binary semaphore waited on without a signal pending, or signalled while a signal is pending "
                "(7.4.1).",
                "Pair every wait of a binary semaphore with exactly one earlier signal."),
    FindingKind("fence_misuse", "VKV010", "fence waited, submitted or reset in a state Vulkan forbids",
                "A fence submitted while still signalled or pending, or waited on when nothing will signal it (7.3).",
                "Reset the fence after its wait and before submitting it again; wait only for submitted fences."),
    FindingKind("ownership_missing", "VKV011",
                "exclusive buffer used by another queue family without an ownership transfer",
                "An exclusive-sharing buffer written on one queue family and accessed on another with no release "
                "and acquire pair of queue family ownership transfer barriers (7.7.4).",
                "Add a release barrier (src_family, dst_family) on the source queue and the matching acquire on "
                "the destination queue, ordered by a semaphore."),
    FindingKind("event_race", "VKV012", "event set or reset unordered with another set or reset of it",
                "Two operations on one event's state (vkCmdSetEvent(2), vkCmdResetEvent(2), vkSetEvent, "
                "vkResetEvent), not both resets, with no execution dependency between them: the event's state, "
                "and what a wait on it orders, depend on the schedule (7.5).",
                "Order the two with an execution dependency whose first scope holds the earlier operation: a "
                "barrier or semaphore signal at all_commands, all_commands in the later one's stage mask, or a "
                "host wait."),
)}

ACCESS_KINDS = ("raw", "war", "waw")


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str
    fix: str
    buffer: str | None = None
    range: tuple[int, int] | None = None
    first: str | None = None
    second: str | None = None
    first_access: str | None = None
    second_access: str | None = None
    racing: bool = False
    ops: tuple[str, ...] | None = None
    labels: tuple[str | None, str | None] = field(default=(None, None), compare=False)
    # Events in time order showing the hazard (check/witness.py): the slice of a legal complete schedule,
    # or with `witness="full"` the whole schedule.
    witness: tuple[str, ...] | None = None
    witness_steps: tuple[str, ...] | None = None  # each event named by the stream's ids and labels
    # Instead of a witness of its own: the number (1-based, in this stream's findings) of the finding of
    # the same buffer and agents whose witness stands for it; or the limit of witnesses per stream reached.
    witness_same_as: int | None = None
    witness_limit: int | None = None
    # For a `params` stream: the parameter values of the instance the finding is about.
    params: tuple[tuple[str, int], ...] | None = None
    # Threads sharing a queue (docs/format.md, "Several host threads"): the submission order whose run found it,
    # where the walk's own did not (explain and graph read it there).
    order: ir.SubmissionOrder | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        """The findings format of docs/format.md."""
        out: dict = {"kind": self.kind}
        if self.ops is not None:
            out["ops"] = list(self.ops)
            if self.buffer is not None:
                out["buffer"] = self.buffer
        else:
            out.update({"buffer": self.buffer, "range": list(self.range) if self.range else None,
                        "first": self.first, "second": self.second,
                        "first_access": self.first_access, "second_access": self.second_access,
                        "racing": self.racing})
        out.update({"message": self.message, "fix": self.fix})
        if any(self.labels):  # the operations' own names: a capture's call, an import's assumed host read
            out["labels"] = list(self.labels)
        if self.witness is not None:
            out["witness"] = list(self.witness)
        if self.witness_steps is not None:
            out["witness_steps"] = list(self.witness_steps)
        if self.witness_same_as is not None:
            out["witness_same_as"] = self.witness_same_as
        if self.witness_limit is not None:
            out["witness_limit"] = self.witness_limit
        if self.params is not None:
            out["params"] = dict(self.params)
        if self.order is not None:
            out["order"] = order_calls(self.order)
        return out

    def in_order(self) -> str:
        """What a one-line report adds to the message of a finding the walk's own submission order does not give:
        the order whose run gives it."""
        return f" (in the submission order {order_text(self.order)})" if self.order else ""


def order_calls(order: ir.SubmissionOrder) -> dict[str, list[str]]:
    """A submission order as the findings name it: the calls, in order, of each queue several threads call."""
    return {q: [format_ref(*call) for call in calls] for q, calls in order.items() if len({t for t, _ in calls}) > 1}


def order_text(order: ir.SubmissionOrder) -> str:
    """order_calls as text: `q0: use[0], up[0]; q1: ...`."""
    return "; ".join(f"{q}: {', '.join(calls)}" for q, calls in order_calls(order).items())


RACING, HOSTS_ORDERED = 1, 2  # flags: ordered neither way; two host threads ordered (fixes.memory_dependency)
_ABSENT = -1
# A finding's ROW numbers in Findings.rows: its two accesses' facts (indexes in Findings.facts, _ABSENT: none), the
# bytes of its first report (its message's; its range too unless later reports added bytes, Findings.grown; _ABSENT:
# none), its flags.
LO, HI, FLAGS, ROW = 2, 3, 4, 5


class Findings(Sequence[Finding]):
    """Findings in the order found, deduplicated by (kind, buffer, first, second, ops) with their bytes merged.
    A key names the operation being checked (the second access, or the first of a racing pair named in stream
    order), so while each operation's reference names one execution (`refs_repeat` False) only the keys of the
    operation being checked are kept to find repeats; the ops of misuse findings are kept all along."""

    def __init__(self, wording: fixes.Wording | None, refs_repeat: bool = False) -> None:
        self.wording = wording
        self.refs_repeat = refs_repeat
        self.kinds: list[str] = []
        self.buffers: list[str | None] = []
        self.firsts: list[str | None] = []
        self.seconds: list[str | None] = []
        self.rows = array("q")  # ROW numbers per finding (above): one array, one append per finding
        self.grown: dict[int, tuple[int, int]] = {}  # finding -> its bytes, where later reports added to the first's
        self.words: dict[int, tuple[str, str, tuple[str, ...] | None]] = {}  # message, fix, ops worded when found
        self.settled: dict[int, Finding] = {}  # findings as exact.refine left them
        self.facts: list[tuple] = []  # (agent, family, stage, reads, write, buffer, label): few per stream
        self.fact_index: dict[tuple, int] = {}
        self.keys: dict[tuple, int] = {}  # key -> finding, of the operation `scope` (all, where refs repeat)
        self.lasting: dict[tuple, int] = {}  # key -> finding, of misuse findings
        self.scope: int | None = None
        self.capture: list | None = None  # what `record` records, also appended here (Checker._replay)

    def add(self, kind: str, buffer: str | None, lo: int | None, hi: int | None, first: Access | None,
            second: Access | None, scope: int | None, racing: bool = False, hosts_ordered: bool = False,
            words: tuple[str, str] | None = None, ops: tuple[str, ...] | None = None, described: bool = True) -> None:
        """A finding of the operation `scope` (an access uid; None: a misuse): a new one, or bytes of an earlier
        one with the same key. `words`: its message and fix (None: an access hazard's, worded when read);
        `described`: whether the accesses' facts are kept (their stages and accesses, labels)."""
        # Most accesses are in several findings: their facts' index is kept on them (Access.fact).
        e = _ABSENT if first is None or not described else first.fact if first.fact != _ABSENT else self._fact(first)
        x = _ABSENT if second is None or not described else second.fact if second.fact != _ABSENT else \
            self._fact(second)
        self.record(kind, buffer, lo, hi, first and first.ref, second and second.ref, e, x, scope,
                    racing * RACING | hosts_ordered * HOSTS_ORDERED, words, ops)

    def record(self, kind: str, buffer: str | None, lo: int | None, hi: int | None, first: str | None,
               second: str | None, e: int, x: int, scope: int | None, flags: int,
               words: tuple[str, str] | None = None, ops: tuple[str, ...] | None = None) -> None:
        """`add`'s finding by its operations' references, their facts' indexes (e, x; -1: none) and its flags.
        While `capture` is a list, each is appended to it too, as these arguments but `scope` (Checker._replay
        repeats them)."""
        if self.capture is not None:
            self.capture.append((kind, buffer, lo, hi, first, second, e, x, flags, words, ops))
        key = (kind, buffer, first, second, ops)
        if ops is not None:
            keys = self.lasting
        else:
            keys = self.keys
            if scope != self.scope and not self.refs_repeat:
                keys.clear()
                self.scope = scope
        at = keys.get(key)
        if at is not None:
            if lo is not None:
                first_lo, first_hi = self.rows[ROW * at + LO:ROW * at + HI + 1]
                merged = self.grown.get(at) or (None if first_lo == _ABSENT else (first_lo, first_hi))
                merged = (lo, hi) if merged is None else (min(merged[0], lo), max(merged[1], hi))
                if merged != (first_lo, first_hi):
                    self.grown[at] = merged
            return
        keys[key] = n = len(self.kinds)
        if words is not None:
            self.words[n] = (*words, ops)
        if lo is None:
            lo = hi = _ABSENT
        self._append(kind, buffer, first, second, (e, x, lo, hi, flags))

    def _append(self, kind: str, buffer: str | None, first: str | None, second: str | None, numbers: tuple) -> None:
        self.kinds.append(kind)
        self.buffers.append(buffer)
        self.firsts.append(first)
        self.seconds.append(second)
        self.rows.extend(numbers)

    def _fact(self, a: Access) -> int:
        """The index of a's facts in `facts`, kept on `a`."""
        fact = (a.agent, a.family, a.stage, a.reads, a.write, a.buffer, a.label)
        at = self.fact_index.get(fact)
        if at is None:
            at = self.fact_index[fact] = len(self.facts)
            self.facts.append(fact)
        a.fact = at
        return at

    def __len__(self) -> int:
        return len(self.kinds)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.finding(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.finding(i)

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    __hash__ = None  # a sequence that grows

    def __repr__(self) -> str:
        return repr(list(self))

    def racing_hazards(self) -> list[int]:
        """The numbers (from 0) of the RAW, WAR and WAW findings whose accesses are ordered neither way."""
        kinds = self.kinds
        return [i for i, flags in enumerate(self.rows[FLAGS::ROW]) if flags & RACING and kinds[i] in ACCESS_KINDS]

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> Findings:
        """Findings already worded (those of runtime/online.py), in a Findings."""
        new = cls(None)
        for f in findings:
            new.settle(len(new), f)
        return new

    def join(self, other: Findings, order: ir.SubmissionOrder | None = None) -> None:
        """Add the findings of `other` (another run of the stream: schedule.check's, in submission order `order`)
        this lacks, worded and marked with `order` (Finding.order), by the key `record` dedupes by; of one both
        have, the bytes are merged. Only those added are worded: most are in every run."""
        at = {self.key(i): i for i in range(len(self))}
        for j in range(len(other)):
            i = at.get(other.key(j))
            if i is None:
                at[other.key(j)] = len(self)
                self.settle(len(self), replace(other.finding(j), order=order))
                continue
            theirs, mine = other.span(j), self.span(i)
            if theirs is None or theirs == mine:
                continue
            span = theirs if mine is None else (min(mine[0], theirs[0]), max(mine[1], theirs[1]))
            if i in self.settled:
                self.settled[i] = replace(self.settled[i], range=span)
            else:
                self.grown[i] = span

    def key(self, i: int) -> tuple:
        """Finding i's key, as `record` dedupes by, without wording it."""
        if i in self.settled:
            f = self.settled[i]
            return f.kind, f.buffer, f.first, f.second, f.ops
        words = self.words.get(i)
        return self.kinds[i], self.buffers[i], self.firsts[i], self.seconds[i], words and words[2]

    def span(self, i: int) -> tuple[int, int] | None:
        """Finding i's bytes (its range), without wording it."""
        if i in self.settled:
            return self.settled[i].range
        lo, hi = self.rows[ROW * i + LO:ROW * i + HI + 1]
        return self.grown.get(i) or (None if lo == _ABSENT else (lo, hi))

    def settle(self, i: int, f: Finding) -> None:
        """Finding i is `f` from now on; i == len(self): `f` is added after the others."""
        if i == len(self):
            self._append(f.kind, f.buffer, f.first, f.second, (_ABSENT,) * FLAGS + (f.racing * RACING,))
        self.settled[i] = f

    def finding(self, i: int) -> Finding:
        """Finding i, worded."""
        if i in self.settled:
            return self.settled[i]
        e, x, lo, hi, flags = self.rows[ROW * i:ROW * (i + 1)]
        first, second = self._access(self.firsts[i], e), self._access(self.seconds[i], x)
        message, fix, ops = self.words.get(i) or self._hazard_words(i, first, second, lo, hi,
                                                                    bool(flags & HOSTS_ORDERED))
        return Finding(self.kinds[i], message, fix, self.buffers[i], self.span(i), self.firsts[i], self.seconds[i],
                       _described(first), _described(second), bool(flags & RACING), ops,
                       (first and first.label, second and second.label))

    def names(self, i: int) -> tuple:
        """Finding i's kind, first and second, first_access and second_access, ops as `finding` gives them, without
        wording it (the mutation analysis asks for these of every finding of its many forks)."""
        if i in self.settled:
            f = self.settled[i]
            return f.kind, f.first, f.second, f.first_access, f.second_access, f.ops
        words = self.words.get(i)
        first, second = self.firsts[i], self.seconds[i]
        return (self.kinds[i], first, second, _described(self._access(first, self.rows[ROW * i])),
                _described(self._access(second, self.rows[ROW * i + 1])), words and words[2])

    def _access(self, ref: str | None, fact: int) -> Access | None:
        """The access as its finding words it: its facts, without its place in the run."""
        if fact == _ABSENT:
            return None
        agent, family, stage, reads, write, buffer, label = self.facts[fact]
        return Access(agent, 0, stage, reads, write, ref, buffer, 0, label, family)

    def _hazard_words(self, i: int, e: Access, x: Access, lo: int, hi: int,
                      hosts_ordered: bool) -> tuple[str, str, None]:
        """A RAW, WAR or WAW: its message and the smallest synchronization that orders the two accesses."""
        kind, span = self.kinds[i], f"{self.buffers[i]!r} bytes [{lo}, {hi})"
        image = self.wording.images.get(self.buffers[i])
        if image is not None:  # bytes of its layout (model/images.py): say which subresources
            span = f"{self.buffers[i]!r} {image.subresources_text(lo, hi)} (bytes [{lo}, {hi}) of its layout)"
        if kind == "war":
            return (f"{x.ref} writes {span} that {e.ref} may still be reading",
                    fixes.execution_dependency(self.wording, e, x), None)
        verb = "reads" if kind == "raw" else "writes"
        message = f"{x.ref} {verb} {span} that {e.ref} wrote, without a memory dependency"
        return message, fixes.memory_dependency(self.wording, e, x, hosts_ordered), None

    def fork(self, wording: fixes.Wording) -> Findings:
        """A copy that grows apart from this one, worded by `wording`."""
        new = Findings(wording, self.refs_repeat)
        for name in ("kinds", "buffers", "firsts", "seconds", "rows", "facts"):
            setattr(new, name, getattr(self, name)[:])
        new.words, new.settled, new.fact_index = dict(self.words), dict(self.settled), dict(self.fact_index)
        new.grown = dict(self.grown)
        new.keys, new.lasting, new.scope = dict(self.keys), dict(self.lasting), self.scope
        return new


def _described(a: Access | None) -> str | None:
    """An access as a finding words it: its stage and accesses (compute_shader/shader_storage_read)."""
    return a and f"{stage_text(a.stage)}/{'+'.join(a.reads + ((a.write,) if a.write else ()))}"
