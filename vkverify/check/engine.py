"""The happens-before checker's walk: runs a stream in one legal order, compares each access, then records it.

Queues and host threads are agents with vector clocks (agents.py). Ordering on one
queue comes from its barriers (barriers.BarrierLog). Each memory keeps a
RangeMap of the last write and the reads since it, so a new access is
compared with a handful of earlier ones: the comparison is the access state's
(access_state.AccessState.detect), the walk reports what it detects. A resubmitted command buffer, once
an execution of it reported nothing, replays a plan (replay.py): only its
accesses that meet earlier work are compared, only those something sees are
recorded; a barrier that changed no clock is skipped until the clocks change. After an execution that reported, the
next records what each access reports, and later ones repeat the hazards among its own accesses in place of
comparing them (a stream where every access races, issue 29). A command's access that meets
only earlier accesses of its queue, each ordered before it by the global barrier after it alone (an answer
already known), is recorded without the general comparison (Checker._run_quick).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import replace
from itertools import count

from ..model import ir
from ..model.accesses import ACCESSES_BY_KIND
from ..model.images import LAYOUT_WRITE
from ..model.refs import format_ref
from ..model.stages import STAGE
from . import fixes
from .access import Access
from .access_state import AccessState
from .agents import EPOCHS, Clock, QueueAgent, ThreadAgent, join, join_all
from .barriers import EVENT_OPERATION, BarrierEntry, Steps, barrier_steps, in_transition_order
from .events import (EventStates, event_entries, event_stage, operation_memory, operation_scope, races,
                     signal_beyond_entries)
from .findings import ACCESS_KINDS, Findings
from .readings import DEFAULT, Readings
from .replay import ALWAYS, DOMINATED, replay_plan
from .rules import makes_host_writes_available, transfers_ownership
from .scopes import EARLIER_EVENT_OPERATIONS, HOST

__all__ = ["Checker"]

_NO_ACCESS = frozenset({*ir.SYNC_COMMANDS, ir.ExecuteCommands})  # steps run by run_barrier (exact types: no subclass)
_NOT_REPLAYED = (*ir.EVENT_COMMANDS, ir.ExecuteCommands)


def _stream_order(a: Access) -> tuple[tuple[int, int], int]:
    """Where a comes in the stream: its submit's (or host op's) thread and position, then its queue position."""
    return a.issued, a.pos if a.family is not None else 0


def _shown(a: Access) -> Access:
    """An event operation's Access as its finding names it: at the event operation, or the host."""
    return a if a.family is None else replace(a, stage=EVENT_OPERATION)


def _repeatable(found: list[tuple], refs: dict[str, int], i: int) -> tuple | None:
    """What an access of command i reported (as Findings.record took it), its references replaced by the command
    indexes `refs` gives: (kind, buffer, lo, hi, the first access's command, e and x facts, words) per hazard
    between two accesses of one queue in that execution (no flags), named only by their references. None for
    anything else (a finding worded with its references, or one of another execution's access)."""
    out = []
    for kind, buffer, lo, hi, first, second, e, x, flags, words, ops in found:
        if kind not in ACCESS_KINDS or ops is not None or flags or any(words or ()) or first not in refs \
                or refs.get(second) != i:
            return None
        out.append((kind, buffer, lo, hi, refs[first], e, x, words))
    return tuple(out)


def _barrier_key(cmd: ir.Barrier, queue: QueueAgent):
    """A barrier's compiled form is the same on every queue, but an image barrier's, which transitions on its
    release's queue only (rules.transitions_here): one per queue family."""
    return (id(cmd), queue.family) if cmd.images else id(cmd)


class Checker:
    def __init__(self, stream: ir.Stream, readings: Readings = DEFAULT, replay: bool = True,
                 quick: bool = True) -> None:
        """`replay`: whether resubmitted command buffers replay a plan (run_command_buffer); without it every
        execution runs every command. `quick`: whether a command's clean accesses of one queue are answered
        without the general comparison (_run_quick). The tests compare each with the checker without it."""
        self.stream = stream
        self.readings = readings
        self.replay = replay
        self.quick = quick
        self.index = stream.index
        threads = stream.threads
        queues = [(d, q) for d in stream.devices for q in d.queues]
        widest = {q.id: 1 for _, q in queues}
        # A command's reference names one execution unless its command buffer runs twice in one submit
        # (ir.StreamIndex.command_ref), which the loader refuses and a stream made by hand may still do.
        refs_repeat = False
        for _, op in ir.submits(stream):
            widest[op.queue] = max(widest[op.queue], *(len(b.signals) for b in op.batches), 1)
            submitted = ir.submitted(op)
            refs_repeat = refs_repeat or len(set(submitted)) < len(submitted)
        # Clock entries: each queue's first semaphore lane and each thread's ops (both at the agent's index),
        # each queue's fence lane, each thread's host writes made available to the device, the other lanes.
        n_queues, n_threads = len(queues), len(threads)
        extra = 2 * (n_queues + n_threads)
        n = extra + sum(widest.values()) - n_queues
        self.queues: dict[str, QueueAgent] = {}
        for i, (d, q) in enumerate(queues):
            lanes = (i, *range(extra, extra + widest[q.id] - 1))
            extra += widest[q.id] - 1
            self.queues[q.id] = QueueAgent(i, q.id, d.id, q.family, n, lanes, n_queues + n_threads + i)
        self.threads = [ThreadAgent(n_queues + i, t.id, t.ops, (0,) * n, 2 * n_queues + n_threads + i)
                        for i, t in enumerate(threads)]
        self.agents: list = list(self.queues.values()) + self.threads
        # The memories' range maps and the comparisons over them (access_state.py); the walk below feeds them.
        self.state = AccessState(self.index, self.agents, self.queues, readings, stream.memories)
        self.barriers = {}
        self.events = EventStates()
        self.event_kinds: dict[tuple, tuple] = {}  # each distinct tuple of _log_entries's entries, held once
        # id of a resubmitted command buffer -> [it, its steps (_step), its replay plan: None before a clean
        # execution, () where none may be made, what its reads met (_replay)]; the command buffer held keeps its
        # id from being reused.
        self.compiled: dict[int, list] = {}
        self.findings = Findings(self.state.wording, refs_repeat)
        self.reported = 0  # calls of report(): an execution that made none compared cleanly
        self.destroyed: dict[str, Access] = {}  # buffer -> its destroy
        # Spec 12.7: a destroy waits for every device use of the buffer, also those a later access
        # replaced in the range map; the latest use per (agent, stage) stands for the earlier ones there.
        self.uses: dict[str, dict] | None = {} if any(
            isinstance(op, ir.Destroy) for t in stream.threads for op in t.ops) else None
        self.issuing: Clock = ()  # the submit clock of the batch being run
        self.issuing_order: tuple[int, int] = (0, 0)  # its submit's thread and op position
        self.issuing_submit = ""  # its submit's reference
        self.uids = count()

    # ---- findings ----------------------------------------------------------

    def report(self, kind: str, buffer: str | None, lo: int | None, hi: int | None, first: Access | None,
               second: Access | None, scope: int | None, words: tuple[str, str], racing: bool = False,
               ops: tuple[str, ...] | None = None) -> None:
        """A finding of the operation `scope` (the uid of the access being checked; None: a misuse) and its
        message and fix (`words`)."""
        self.reported += 1
        self.findings.add(kind, buffer, lo, hi, first, second, scope, racing, False, words, ops)

    def hazard(self, kind: str, buf: ir.Buffer, lo: int, hi: int, e: Access, x: Access) -> None:
        """A RAW, WAW or WAR of e then x on bytes [lo, hi) of buf, worded when read (findings.Findings). A racing
        pair (ordered neither way) is named in stream order, earlier submitted first, whichever of the two this
        schedule ran first."""
        scope = x.uid
        racing = e.agent != x.agent and self.state.racing(e, x)  # most hazards are of one queue: no call
        if racing and _stream_order(x) < _stream_order(e):
            e, x, kind = x, e, {"raw": "war", "war": "raw"}.get(kind, kind)
        # The fix of two host threads' accesses depends on whether they are ordered now (fixes.memory_dependency).
        hosts_ordered = e.family is None and x.family is None and self.agents[x.agent].clock[e.agent] > e.pos
        self.reported += 1
        self.findings.add(kind, buf.id, lo, hi, e, x, scope, racing, hosts_ordered)

    def result(self) -> Findings:
        return self.findings

    # ---- clocks ------------------------------------------------------------

    def submission_clock(self, clock: Clock) -> Clock:
        """A submission's clock: spec "Availability, Visibility, and Domain Operations", vkQueueSubmit performs a
        memory domain operation from host to device, so every host op before it has its writes available to
        the device (a host signal's clock orders execution only)."""
        out = list(clock)
        for t in self.threads:
            out[t.memory_lane] = max(out[t.memory_lane], out[t.index])
        return tuple(out)

    # ---- accesses ----------------------------------------------------------

    def issued_after(self, x: Access, destroyed: Access) -> bool:
        """Whether x's host op (its submit, for a command) comes after the destroy: host clocks count a
        thread's ops from 1."""
        if x.agent == destroyed.agent:
            return x.pos > destroyed.pos
        clock = self.issuing if x.family is not None else self.agents[x.agent].clock
        return clock[destroyed.agent] > destroyed.pos + 1

    def access(self, x: Access, lo: int, hi: int, compare: bool = True, record: bool = True) -> bool:
        """Compare x with the most recent write and the reads since (buffer-relative [lo, hi)), then record it:
        x becomes the most recent write of its bytes, or one of the reads since (one per agent and stage).
        False when x is not to be recorded (a use after its buffer's destroy)."""
        if compare:
            destroyed = self.destroyed and self.destroyed.get(x.buffer)
            if destroyed:
                if self.issued_after(x, destroyed):
                    self.report("use_after_destroy", x.buffer, lo, hi, destroyed, x, x.uid,
                                (f"{x.ref} uses {x.buffer!r} after {destroyed.ref} destroyed it",
                                 f"remove {x.ref} or move the destroy of {x.buffer!r} ({destroyed.ref}) after it"))
                    return False
                if x.family is not None:  # submitted before the destroy, run after it in this schedule: pending
                    self.report("use_after_destroy", x.buffer, lo, hi, x, destroyed, x.uid,
                                (f"{destroyed.ref} destroys {x.buffer!r} while {x.ref} may still use it",
                                 fixes.destroy(x, destroyed.ref)), racing=True)
                # Another thread's host access the destroy does not happen-before is no use after it (rule 9:
                # every later use, and every pending device use), in whichever order this schedule ran the two.
            if self.uses is not None and x.family is not None:
                self.uses.setdefault(x.buffer, {})[(x.agent, x.stage)] = x
        if hi <= lo:
            return False  # no bytes: nothing to order
        buf, root, base, memory = self.state.placement[x.buffer]
        rlo, rhi = base + lo, base + hi
        segments = memory.span(rlo, rhi)
        if compare:
            detect = self.state.detect
            for seg in segments:
                detect(x, buf, root, base, seg, self)
        if not record:
            return True
        if x.atomic:
            hides, alike = self.state.atomic_hides, self.state.alike
            for seg in segments:
                seg.add_atomic(x, hides(x, root, seg), alike)
        elif x.write:
            owner = x.family if buf.sharing == "exclusive" else None
            if x.write != LAYOUT_WRITE:
                memory.overwrite(rlo, rhi, segments, x, owner)
            else:  # 7.7.4: transition order orders nothing else: the reads stay, and the write before a run of them
                for seg in segments:
                    seg.transitioned(x, owner, seg.write is not None and in_transition_order(seg.write, x))
        else:
            for seg in segments:
                seg.add_read(x)
        return True

    # ---- host ops ----------------------------------------------------------

    def host_access(self, t: ThreadAgent, op: ir.HostAccess, ref: str) -> None:
        """Thread t's host access, flush or invalidate at t.pc, named `ref`."""
        root, base = self.index.root(op.buffer)
        if op.op in ("flush", "invalidate"):
            for seg in self.state.memories[root].span(base + op.offset, base + op.offset + op.size):
                if op.op == "invalidate":
                    seg.invalidate(t.index, t.pc)
                else:
                    seg.flush(t.index, t.pc)
            return
        write = op.op == "host_write"
        access = Access(t.index, t.pc, "host", () if write else ("host_read",), "host_write" if write else None,
                        ref, op.buffer, next(self.uids), op.label, None, issued=(t.index, t.pc))
        self.access(access, op.offset, op.offset + op.size)

    def destroy(self, t: ThreadAgent, op: ir.Destroy, ref: str) -> None:
        """Spec 12.7 vkDestroyBuffer: all submitted commands that refer to it must have completed."""
        probe = Access(t.index, t.pc, "host", (), None, ref, op.buffer, next(self.uids), op.label, None)
        state = self.state
        for e in self.uses.get(op.buffer, {}).values():
            if state.unordered(e, probe, *state.root_range(e), None):
                self.report("use_after_destroy", op.buffer, None, None, e, probe, probe.uid,
                            (f"{ref} destroys {op.buffer!r} while {e.ref} may still use it", fixes.destroy(e, ref)),
                            racing=True)
        self.destroyed[op.buffer] = probe

    # ---- commands ----------------------------------------------------------

    def run_command_buffer(self, queue: QueueAgent, cb: ir.CommandBuffer, submit: str) -> None:
        """Run cb's commands on queue (`submit`: the submit's reference). A resubmitted command buffer, after an
        execution that reported nothing, replays its plan (replay.py) instead; after one that reported, the next
        records what each access reports, and the plan made of it repeats the hazards among its own accesses."""
        self.issuing_submit = submit  # the secondary command buffers cb executes run in it too
        compiled = self.compiled.get(id(cb))
        if compiled is not None and compiled[2]:
            if compiled[4] is None or compiled[4] == (queue.index, len(queue.log.kinds)):
                self._replay(queue, cb, compiled[2], compiled[3], submit)
                return
            compiled[2] = None  # its findings were another queue's, or its barrier log's with fewer kinds
        if compiled is not None and compiled[2] is None:
            if self._replayable(queue, compiled[1]):
                self._run_recorded(queue, cb, compiled, submit)
                return
            compiled[2] = False
        if compiled is None and self.replay and cb.id in self.index.resubmitted:
            compiled = self.compiled[id(cb)] = [cb, [self._step(cmd) for cmd in cb.commands], None, {}, None]
        steps = map(self._step, cb.commands) if compiled is None else compiled[1]
        reported, owner = self.reported, cb.id
        submit = submit if owner in self.index.resubmitted else None  # ir.StreamIndex.command_ref
        # The common case, without _run_accesses's set-up: accesses on separate memories, nothing destroyed yet.
        quick, uids = self.quick and not self.destroyed, self.uids
        for i, (cmd, accesses, sharing) in enumerate(steps):
            queue.pos += 1
            if accesses is None:
                self.run_barrier(queue, cmd, format_ref(owner, i, submit))
            elif quick and not sharing:
                self._run_quick(queue, accesses, format_ref(owner, i, submit), next(uids), cmd.label)
            else:
                self._run_accesses(queue, cmd, format_ref(owner, i, submit), accesses, sharing)
        if compiled is not None and compiled[2] is None and self.reported == reported:
            compiled[2] = self._replayable(queue, compiled[1]) and replay_plan(compiled[1], self.state.placement)

    def _run_recorded(self, queue: QueueAgent, cb: ir.CommandBuffer, compiled: list, submit: str) -> None:
        """Run every command of a replayable cb (its `compiled` entry), as a plan that compares and records every
        access does, and make its plan from what each access reported (replay_plan): None (run it again so) where
        an access that meets only the execution's own accesses reported what cannot be repeated. A plan that
        repeats findings holds for this queue (they name its accesses) while its barrier log has the kinds it had
        (their ranges cut the bytes a hazard is reported on: BarrierLog.state_at)."""
        steps, kinds = compiled[1], len(queue.log.kinds)
        every = tuple((i, cmd, accesses and tuple((a, ALWAYS, True, (), False) for a in accesses), False)
                      for i, (cmd, accesses, _) in enumerate(steps))
        reported: dict[tuple[int, int], list] = {}
        self._replay(queue, cb, every, {}, submit, reported)
        command_ref = self.index.command_ref
        refs = {command_ref(cb.id, i, submit): i for i, (_, accesses, _) in enumerate(steps) if accesses is not None}
        repeated = {key: _repeatable(found, refs, key[0]) for key, found in reported.items() if found}
        if repeated and len(queue.log.kinds) != kinds:
            return  # kinds recorded in this execution: the next one records again
        compiled[2:] = replay_plan(steps, self.state.placement, repeated or None), {}, \
            (queue.index, kinds) if repeated else None

    def _step(self, cmd: ir.Command) -> tuple:
        """(cmd, its accesses or None for a barrier, whether two of them touch one memory: buffer ids suffice
        without aliases; most commands have two or three accesses, compared without a set)."""
        if type(cmd) in _NO_ACCESS:
            return cmd, None, False
        accesses = ACCESSES_BY_KIND[type(cmd)](cmd)
        n = len(accesses)
        if n < 2:
            return cmd, accesses, False
        if self.state.aliased:
            placement = self.state.placement
            return cmd, accesses, len({placement[a[3]][1] for a in accesses}) < n
        if n == 2:
            return cmd, accesses, accesses[0][3] == accesses[1][3]
        if n == 3:
            a, b, c = accesses[0][3], accesses[1][3], accesses[2][3]
            return cmd, accesses, a == b or a == c or b == c
        return cmd, accesses, len({a[3] for a in accesses}) < n

    def _replayable(self, queue: QueueAgent, steps: list[tuple]) -> bool:
        """Whether executions of a command buffer meet only what they record: no destroys in the stream (uses
        are kept per access), no barrier that acts on the range map (ownership, host writes made available), no
        atomic access (what it keeps of earlier atomics, Segment.atomics, depends on the execution), no event
        command (what a wait does depends on the event's last set), no vkCmdExecuteCommands (its command buffers
        take positions of their own on the queue)."""
        return self.uses is None and not any(
            isinstance(cmd, _NOT_REPLAYED) or any(self.barriers[_barrier_key(cmd, queue)][2:]) if accesses is None
            else any(a[6] for a in accesses) for cmd, accesses, _ in steps)

    def _run_accesses(self, queue: QueueAgent, cmd: ir.Command, ref: str, accesses: tuple, sharing: bool) -> None:
        uid = next(self.uids)
        index, pos, label, family, first_barrier, issued = \
            queue.index, queue.pos, cmd.label, queue.family, len(queue.log.all_kinds), self.issuing_order
        if not sharing:  # no access sees another's record: compare and record each
            for stage, reads, write, buffer, lo, hi, atomic, marker in accesses:
                x = Access(index, pos, stage, reads, write, ref, buffer, uid, label, family, first_barrier, issued)
                x.atomic, x.marker = atomic, marker
                self.access(x, lo, hi)
            return
        # Every access of the command is compared before any is recorded (syncval's detect, then update): a
        # write through one binding is compared with the reads before another binding's read replaced them.
        compared = []
        for stage, reads, write, buffer, lo, hi, atomic, marker in accesses:
            x = Access(index, pos, stage, reads, write, ref, buffer, uid, label, family, first_barrier, issued)
            x.atomic, x.marker = atomic, marker
            if self.access(x, lo, hi, record=False):
                compared.append((x, lo, hi))
        for x, lo, hi in compared:
            self.access(x, lo, hi, compare=False)

    def _run_quick(self, queue: QueueAgent, accesses: tuple, ref: str, uid: int, label: str | None) -> None:
        """`access` of each of a command's accesses (uid, its reference and label) on separate memories, no buffer
        destroyed yet (a use is kept for a later destroy as `access` keeps it), answered without the general
        comparison in the common case of one queue's clean work: the bytes one segment of a buffer not exclusive
        (no ownership), initialized, and every access there to compare with (the write; a write's, the reads too)
        of the queue and ordered before it by the first barrier after it alone, a global barrier whose answer is
        known (unordered's first test, BarrierLog.alone, which the general comparison fills). Any other access
        takes `access`, which would answer these the same: Checker(quick=False), which the tests compare with."""
        placement, log, agent, pos, family, issued = \
            self.state.placement, queue.log, queue.index, queue.pos, queue.family, self.issuing_order
        kinds, memo, is_global, uses = log.all_kinds, log.alone, log.global_kind, self.uses
        n = len(kinds)
        for stage, reads, write, buffer, lo, hi, atomic, marker in accesses:
            x = Access(agent, pos, stage, reads, write, ref, buffer, uid, label, family, n, issued)
            if atomic:
                x.atomic = True
            if marker is not None:
                x.marker = marker
            buf, _, base, memory = placement[buffer]
            segments = memory.segments
            seg = segments[0]
            if len(segments) != 1 or seg.lo != base + lo or seg.hi != base + hi:  # not the whole memory
                segments = memory.span(base + lo, base + hi)
                seg = segments[0] if len(segments) == 1 else None
            if seg is None or buf.sharing == "exclusive" or atomic or seg.atomics or seg.carried is not None:
                self.access(x, lo, hi)
                continue
            # Spec 7.1: a barrier whose scopes hold both accesses orders them (BarrierLog.orders_alone decided it).
            w = seg.write
            if w is None:
                quiet = not reads or seg.initialized
            elif w.agent != agent or w.first_barrier >= n or not is_global[kind := kinds[w.first_barrier]]:
                quiet = False
            else:
                quiet = (not reads or memo.get((kind, w.stage, w.write, stage, reads)) is True) and \
                    (not write or memo.get((kind, w.stage, w.write, stage, (write,))) is True)
            if quiet and write:
                for r in seg.reads:
                    if r.agent != agent or r.first_barrier >= n or not is_global[kind := kinds[r.first_barrier]] \
                            or memo.get((kind, r.stage, r.write, stage, None)) is not True:
                        quiet = False
                        break
            if not quiet:
                self.access(x, lo, hi)
                continue
            if uses is not None:
                uses.setdefault(buffer, {})[(agent, stage)] = x
            if write:
                seg.written(x, None)  # RangeMap.overwrite of its one segment
            else:
                seg.add_read(x)

    def _replay(self, queue: QueueAgent, cb: ir.CommandBuffer, plan: tuple, met: dict, submit: str,
                reported: dict | None = None) -> None:
        """One execution of cb by its replay plan: every barrier, and only the accesses the plan names. `met`:
        (command, item) -> (queue, write, owner) a read of the plan compared cleanly with in an execution.
        `reported`: where each compared item's findings go, as Findings.record takes them, by (command, item)."""
        base, reported_before, command_ref = queue.pos, self.reported, self.index.command_ref
        index, family, issued, placement = queue.index, queue.family, self.issuing_order, self.state.placement
        # command -> its reference in this execution, one string for every finding that names it
        findings, refs = self.findings, {}
        for i, cmd, items, quiet in plan:
            queue.pos = pos = base + i + 1
            if items is None:
                self.run_barrier(queue, cmd, None)
                continue
            fallback = self.reported != reported_before
            if quiet and not fallback:
                continue
            ref, uid, first_barrier, recorded = None, None, len(queue.log.all_kinds), []
            for j, ((stage, reads, write, buffer, lo, hi, _, marker), mode, record, repeated, cuts) in enumerate(items):
                compare = mode == ALWAYS or (fallback and mode == DOMINATED)
                seen = None
                if compare and write is None:
                    # A read meets only the last write of its bytes: one this read met cleanly on this queue in an
                    # earlier execution is ordered before it still (clocks and barrier states only grow).
                    _, _, offset, memory = placement[buffer]
                    segments = memory.span(offset + lo, offset + hi)
                    if len(segments) == 1:  # the earlier atomics too: each is a write the read meets
                        seen = (index, segments[0].write, segments[0].owner, segments[0].atomics)
                        compare = met.get((i, j)) != seen
                if uid is None and (compare or record or repeated):
                    uid, ref = next(self.uids), refs[i] if i in refs else command_ref(cb.id, i, submit)
                    refs[i] = ref
                if repeated:  # what the access reported in the execution the plan was made from, as this one's
                    for kind, buf, a, b, first, e, x_fact, words in repeated:
                        first_ref = refs.get(first)
                        if first_ref is None:
                            first_ref = refs[first] = command_ref(cb.id, first, submit)
                        findings.record(kind, buf, a, b, first_ref, ref, e, x_fact, uid, 0, words)
                    self.reported += len(repeated)
                if cuts:  # the range map split where the access's comparison would split it (replay.py)
                    _, _, offset, memory = placement[buffer]
                    memory.span(offset + lo, offset + hi)
                if not (compare or record):
                    continue
                x = Access(index, pos, stage, reads, write, ref, buffer, uid, cmd.label, family, first_barrier, issued)
                x.marker = marker
                if compare:
                    before = self.reported
                    if reported is not None:
                        findings.capture = reported[i, j] = []
                    self.access(x, lo, hi, record=False)
                    findings.capture = None
                    if seen is not None and self.reported == before:
                        met[i, j] = seen
                if record:
                    recorded.append((x, lo, hi))
            for x, lo, hi in recorded:
                self.access(x, lo, hi, compare=False)
        queue.pos = base + len(cb.commands)

    def run_barrier(self, queue: QueueAgent, cmd: ir.Barrier, ref: str | None) -> None:
        """`ref` names the proxy of host writes the barrier makes available; None in a replay, which has no such
        barrier (Checker._replayable)."""
        if type(cmd) is not ir.Barrier:
            if type(cmd) is ir.ExecuteCommands:  # spec 6.7: their commands run here, in submission order
                for cb in cmd.command_buffers:
                    self.run_command_buffer(queue, self.index.command_buffers[cb], self.issuing_submit)
            else:
                self.run_event(queue, cmd, ref)
            return
        key = _barrier_key(cmd, queue)
        compiled = self.barriers.get(key)
        if compiled is None:
            steps = barrier_steps(cmd, self.index, queue.family)
            if steps.transitions:
                self._own_stages(queue, steps.entries + steps.after)
            # Per entry, the clocks it reads and writes (_scopes); then the entries that make host writes available,
            # the buffer barriers that transfer ownership, and the steps of the image layout transitions.
            compiled = self.barriers[key] = (steps.entries, self._scopes(queue, steps.entries),
                tuple(e for e in steps.entries if makes_host_writes_available(e.src_stages, e.src_access)),
                tuple(b for b in cmd.buffers + cmd.images if transfers_ownership(b.src_family, b.dst_family)),
                steps.transitions and steps)
        entries, scopes, available, transfers, transitions = compiled
        if transitions:
            self._own_stages(queue, entries)  # another queue may run the command buffer
        queue.log.add(queue.pos, entries, id(cmd))
        for entry in available:
            # The memory model's domain operation from the host (AccessState.make_host_writes_available).
            proxy = Access(queue.index, queue.pos - 1, "host", (), "host_write", ref, "", next(self.uids), cmd.label,
                           queue.family, len(queue.log.all_kinds) - 1)
            self.state.make_host_writes_available(queue, entry, proxy)
        if queue.settled.get(id(cmd)) != queue.epoch:
            self._barrier_clocks(queue, id(cmd), entries, scopes)
        if transitions:
            self._run_transitions(queue, cmd, ref, transitions)
        for b in transfers:  # after the release's transition, a write of the family it releases (7.7.4)
            self.state.ownership_transfer(queue, b)

    def _run_transitions(self, queue: QueueAgent, cmd: ir.Barrier | ir.WaitEvents, ref: str, steps: Steps) -> None:
        """Spec 7.7.4: the layout transitions come after their dependencies' first halves (logged already) and
        before their second halves."""
        queue.pos += 1
        self._run_accesses(queue, cmd, ref, steps.transitions, True)
        queue.pos += 1
        self._log_entries(queue, steps.after)

    def _own_stages(self, queue: QueueAgent, entries: tuple[BarrierEntry, ...]) -> None:
        """Clocks on `queue` for the stages and (stage, access) pairs no command has that `entries` name: an event's
        stage (events.py), an image layout transition's (barriers.layout_transitions). A pipeline stage a queue keeps
        no clock for (host, in a wait's second scope) gets none, as in a barrier's: the scopes of a barrier command,
        compiled on the first queue that runs it, are read on every queue (run_barrier)."""
        zero = (0,) * queue.clock_width
        for e in entries:
            for stage in e.src_exec | e.dst_exec:
                if stage not in STAGE:
                    queue.exec_clock.setdefault(stage, zero)
            for pair in e.dst_scope:
                if pair[0] not in STAGE:
                    queue.vis_clock.setdefault(pair, zero)

    def _log_entries(self, queue: QueueAgent, entries: tuple[BarrierEntry, ...]) -> None:
        """Entries that are no barrier command's (an event's set or wait, a transition's second half): logged and
        clocked as a barrier's, one object per distinct tuple of them keying the log's and the clocks' memos."""
        entries = self.event_kinds.setdefault(entries, entries)
        self._own_stages(queue, entries)
        queue.log.add(queue.pos, entries, id(entries))
        if queue.settled.get(id(entries)) != queue.epoch:
            self._barrier_clocks(queue, id(entries), entries, self._scopes(queue, entries))

    def run_event(self, queue: QueueAgent, cmd: ir.SetEvent | ir.ResetEvent | ir.WaitEvents, ref: str) -> None:
        """Spec 7.5: a set or a wait as entries of the queue's barrier log (events.py); a reset changes only the
        event's state. A wait no set satisfies is reported (the queue would wait for ever) and orders nothing."""
        steps, unsatisfied = event_entries(self.events, queue.id, cmd, self.index)
        for event, why in unsatisfied:
            self.report("wait_never_satisfied", None, None, None, None, None, None,
                        (f"{ref} waits for event {why}",
                         f"set {event!r} on {queue.id} before the wait, or by the host before the submission"),
                        ops=(ref,))
        if steps.entries:
            self._log_entries(queue, steps.entries)
        if steps.transitions:
            self._run_transitions(queue, cmd, ref, steps)
        if isinstance(cmd, ir.WaitEvents):
            return
        # The set's or reset's operation (events.py), after the set's entries: the Access a later operation asks
        # about, and a set's at each of its event stages, which a wait for a set of those stages holds.
        queue.pos += 1
        kind = "set_event" if isinstance(cmd, ir.SetEvent) else "reset_event"
        memory, uid = operation_memory(cmd.event), next(self.uids)
        stages = [EARLIER_EVENT_OPERATIONS] + \
            ([event_stage(cmd.event, scope) for scope in set(cmd.first_scopes)] if kind == "set_event" else [])
        self.event_operation(cmd.event, tuple(
            Access(queue.index, queue.pos, stage, (kind,), None, ref, memory, uid, cmd.label, queue.family,
                   len(queue.log.all_kinds), self.issuing_order) for stage in stages), operation_scope(cmd),
            kind == "set_event" and signal_beyond_entries(cmd))

    def host_event(self, t: ThreadAgent, op: ir.HostSetEvent | ir.HostResetEvent, ref: str) -> None:
        """vkSetEvent, vkResetEvent of thread t at t.pc: the event's state (events.EventStates), an operation on it."""
        self.events.host(op)
        kind = "set_event" if isinstance(op, ir.HostSetEvent) else "reset_event"
        self.event_operation(op.event, (Access(t.index, t.pc, "host", (kind,), None, ref, operation_memory(op.event),
                                               next(self.uids), op.label, None, issued=(t.index, t.pc)),), HOST)

    def event_operation(self, event: str, x: tuple[Access, ...], scope: frozenset[str],
                        signal_beyond: bool = False) -> None:
        """Compare the set or reset x (its Accesses, events.py; its first synchronization scope `scope`) with the
        operations on `event` no later one stands for: an execution dependency must order each before x (7.5's
        note), but where both are resets (events.races). x stands for an earlier one ordered before it that races
        with no more than x does: a set for any, a reset for a reset. `signal_beyond`: x is a device set whose
        signal operation an operation may be ordered before without its entries (events.signal_beyond_entries)."""
        kept = []
        kind = x[0].reads[0]
        through = self.events.through
        for e in self.events.operations.get(event, ()):
            if any(self.state.before_scope(a, x[0], scope) for a in self._held(e)):
                if kind == "reset_event" and e[0].reads[0] == "set_event":
                    kept.append(e)
                else:
                    through.pop(e[0].uid, None)
                continue
            kept.append(e)
            if races(e[0].reads[0], kind):
                racing = e[0].agent != x[0].agent
                first, second = (x[0], e[0]) if racing and _stream_order(x[0]) < _stream_order(e[0]) else (e[0], x[0])
                self.report("event_race", event, None, None, _shown(first), _shown(second), x[0].uid,
                            fixes.event_race(self.state.wording, event, first, second), racing)
        self.events.operations[event] = (*kept, x)
        if not signal_beyond:
            return
        # 7.5 vkCmdSetEvent2: its first scope is "the union of all the memory dependencies", its second its signal
        # operation, which each wait for it holds (7.1 chains them): an operation on another event ordered before
        # the set is ordered before what the set's Accesses are (its own event's, x stands for). Where the scope
        # holds every operation before x on its queue, theirs are held once (EventStates.signals); others, one per
        # agent and stage: an earlier Access reaches all that a later one at its stage does (chains only grow).
        every = EARLIER_EVENT_OPERATIONS in scope
        if every:
            self.events.signals.setdefault(x[0].agent, []).append(x)
        for other, ops in self.events.operations.items():
            for e in ops if other != event else ():
                if not (every and e[0].agent == x[0].agent) and \
                        any(self.state.before_scope(a, x[0], scope) for a in self._held(e)):
                    held = through.setdefault(e[0].uid, {})
                    for a in x:
                        held.setdefault((a.agent, a.stage), a)

    def _held(self, e: tuple[Access, ...]) -> Iterator[Access]:
        """Event operation e's Accesses, then those of the sets of other events it is ordered before."""
        yield from e
        yield from self.events.through.get(e[0].uid, {}).values()
        later = self.events.signals.get(e[0].agent, ())
        for x in later[bisect_right(later, e[0].pos, key=lambda x: x[0].pos):]:
            yield from x

    def _scopes(self, queue: QueueAgent, entries: tuple[BarrierEntry, ...]) -> tuple:
        """Per entry, the clocks it reads and writes: its scopes restricted to what the queue tracks, the host
        accesses of its destination, and its range (spec 7.7.2; None: global)."""
        return tuple((tuple(e.src_exec & queue.exec_clock.keys()), tuple(e.dst_exec & queue.exec_clock.keys()),
                      tuple(e.dst_scope & queue.vis_clock.keys()), tuple(a for s, a in e.dst_scope if s == "host"),
                      self._limit(e)) for e in entries)

    def _barrier_clocks(self, queue: QueueAgent, key: int, entries: tuple, scopes: tuple) -> None:
        """Cross-agent dependencies chain through the barrier too (spec 7.1 "dependency chain"); entries of one
        barrier do not chain with each other (7.6), so every source clock is read before any is written. A
        barrier that changed nothing is settled at the queue's epoch: until the clocks change, it changes nothing."""
        exec_clock, vis_clock = queue.exec_clock, queue.vis_clock
        zero = (0,) * queue.clock_width
        before = []
        for src, *_ in scopes:
            clock = zero
            for s in src:
                clock = join(clock, exec_clock[s])
            before.append(clock)
        changed = False
        if len(self.queues) > 1 and (queue.host_vis or any(scope[3] for scope in scopes)):
            self._host_visibility(queue, entries, scopes, before)
            changed = True
        for (_, dst, pairs, _, limit), clock in zip(scopes, before):
            for s in dst:
                old = exec_clock[s]
                new = exec_clock[s] = join(old, clock)
                changed = changed or new != old
            # Spec 7.7.2: a buffer memory barrier's second access scope holds only its range.
            visible = vis_clock if limit is None else queue.range_vis.setdefault(limit, {})
            for pair in pairs:
                old = visible.get(pair, zero)
                new = visible[pair] = join(old, clock)
                changed = changed or new != old
        if changed:
            queue.epoch = next(EPOCHS)
        else:
            queue.settled[key] = queue.epoch

    def _limit(self, entry: BarrierEntry) -> tuple | None:
        """Spec 7.7.2: a buffer barrier's (root, lo, hi, buffer accesses must go through or None); None: global."""
        return None if entry.root is None else (entry.root, entry.lo, entry.hi, self.state.through(entry))

    def _host_visibility(self, queue: QueueAgent, entries: tuple, scopes: tuple, before: list[Clock]) -> None:
        """Spec 7.1.3 host access: a barrier with host_read or host_write in its destination makes the writes of
        the releases its first scope acquired visible to the host, at the stages its chain reaches (7.1). Only
        another queue's writes come through releases: a stream of one queue has nothing to record."""
        updates = []
        for entry, (*_, accesses, limit), clock in zip(entries, scopes, before):
            for key, by_stage in queue.host_vis.items():
                reached = [by_stage[s] for s in entry.src_exec if s in by_stage]
                if reached:
                    updates.append((key, entry.dst_exec, join_all(reached)))
            updates += [((access, limit), entry.dst_exec, clock) for access in accesses]
        for key, stages, clock in updates:
            by_stage = queue.host_vis.setdefault(key, {})
            for s in stages:
                by_stage[s] = join(by_stage.get(s, clock), clock)
