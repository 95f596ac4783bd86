"""Runtime mutation: a Runtime hook (VKVERIFY_HOOKS=vkverify.mutations.live:mutator) that, under
VKVERIFY_RUNTIME_MUTATE (a Selection as JSON, see environment()), drops or weakens load-bearing
synchronizations of one target as the program records and executes them: the k-th candidate of a
test, or every candidate of one call site (the program's file:line, `source`); in list mode it
appends every candidate to a file and mutates nothing. Stream mutants (VKVERIFY_MUTATE, for a
command given with streams) are another variable: the command's own Runtime does not obey them.

How candidates are found: per operation, on the runtime's incremental happens-before state of the
stream recorded so far (Runtime.happens_before, check/incremental.py: the checker's one semantics,
kept between ops), keeping only the mutants of the operation about to run, since what already ran
cannot be changed. Each mutation of the operation (the operators and their alternatives of
vkverify.mutations.generate) is fed to a fork of that state, then a probe standing for the accesses
that may follow; it is a mutant where it finds a hazard that the operation as recorded, then the
probe, does not. None of an operation is unless dropping it breaks an access ordering (it is
load-bearing). A checker's RAW between two writes counts as a WAW too, as the model names it. So
each question costs the live state and the operation, not the stream recorded so far:
- a submit: the barriers (and barrier entries) of its command buffers recorded for the first
  time, and its semaphore waits (targets raw, waw, war, host, semaphore). The probe is a later
  submit on the same queue that reads and writes every buffer those command buffers access (a
  dispatch of the abstract shader PROBE binding each): a barrier at the end of a command buffer,
  such as the staged uploader's landing barrier, orders only later submits.
- a host wait (fences, semaphores, queue or device idle): the probe is a host_read and a
  host_write of every host-visible buffer; dropping the wait is a candidate (target fence) when
  it alone orders a device access before one of them, and under target war as well when it
  opens a WAR pair (a device read, then a host write).
- the staged uploader's submits and slot reuse waits (it records around Runtime.execute, but
  asks this same decision): its landing barriers (and zero-fill barriers, in the stream only:
  they are recorded into Vulkan before the decision) and the fence wait before a slot is refilled.
- a barrier into the host stage that a submit records for the first time (target raw): the probe
  is the device idle, then a host_read of every host-visible buffer its command buffers access.
- a flush (target host; probe: a later submit that reads and writes the flushed bytes), an
  invalidate (host; a host_read of its bytes) and a host semaphore signal (semaphore; a later
  submit that waits for it and reads and writes every host-visible buffer): dropping each. A
  dropped signal is asked with the probe's wait left out too (a wait on a signal never recorded
  blocks, and a blocked batch accesses nothing); its shadow's blocked waits count at the close. Its
  mutated run ends at the first wait the drop leaves blocked, with a HazardError naming the blocked
  waits, instead of waiting out the runtime's wait limit (Mutator._unsatisfied).
Not mutated here: fence resets (reset_fence_before_wait would run two ops for one), keepalive
moves (they move an op before one already run), and the uploader's other waits (finish, failures).

The probe only numbers candidates. A list run keeps those whose mutation makes a hazard of their
target in what the program did next: each candidate's fork without the probe (its shadow) is fed
every op recorded after it, and what it finds that the recorded stream does not bears its targets
out. A shadow stops once all its targets are borne out, or once nothing the program may do next
can tell it from the recorded stream (after a host wait: nothing pending, every access so far
ordered before an access of every kind to every buffer on every queue and thread), so the run
costs about what the program records, whatever its length. A landing barrier that the next
slot's barrier, a fence wait or a semaphore makes redundant, or a wait that protects nothing
the program then touches, is therefore never a candidate (never a survivor either).

A folded list run (Selection.fold, the gate's default) does not ask a call site again in a test once a
candidate there is borne out under the fold's target: the gate folds a site's iterations into one mutant,
whose first candidate and target (the first listed) and tests are then the same.

The mutation is recorded as well as executed, so the runtime's stream (and online checking)
shows the mutant. Candidates are numbered per target and per `where` (the pytest test id, or the
runtime's name outside pytest) in the order they are found: the same in the list run and in each
mutated run because both run the same test up to the mutated operation, whichever process (a
pytest-xdist worker) runs it; a mutated run analyses nothing outside its own test (for a call site,
only the ops of that line; a call site's selection with no `where` changes it in every test). A
list line is a JSON object: a candidate (k, target, operator, op, where, source, label,
description; one line per target of a candidate of several), a runtime that opened ({"runtime",
"where"}), the user files the process imported ({"imports"}, at each Runtime's close), the user
files on the call stack of each op a Runtime ran, by the test that ran it ({"reached": {where:
files}}, at its close: a Runtime that served several tests names them all), the tests the pytest
plugin collected ({"tests": {node id: file}}), the test runner's modules the run imported
({"modules"}, at its end), or the synchronization call sites a Runtime ran ({"sync_sites": [[kind,
file:line], ...]}, at its close: those with no candidate are what no test needed, --report-redundant).
The gate (gate.py) selects per call site the tests that reached it and keys its cache on the files that
reach it; forks.py imports those modules before forking.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from dataclasses import asdict, dataclass, replace

from ..model import ir
from ..model.dump import host_op_to_dict
from ..model.files import append_line
from ..model.gcpause import cyclic_gc_paused
from ..model.refs import format_ref, parse_ref, split_ref, without_submit

__all__ = ["Found", "Mutator", "Selection", "Shadow", "environment", "list_modules", "list_tests", "mutator",
           "selection", "site", "stack_files", "sync_sites", "user_files"]

ENV = "VKVERIFY_RUNTIME_MUTATE"
HOOK = "vkverify.mutations.live:mutator"
HAZARDS = "VKVERIFY_HAZARDS"  # runtime.online.HAZARDS, not imported: the runtime needs a Vulkan loader
HOST_WAITS = (ir.WaitFences, ir.WaitSemaphores, ir.QueueWaitIdle, ir.DeviceWaitIdle)
DROPPED = ("drop_host_wait", "drop_flush", "drop_invalidate", "drop_signal")  # the operators that drop a host op
HOST_VISIBLE = ir.HOST_VISIBLE_KINDS
PROBE = "vkverify.probe"  # the probe's command buffer and abstract shader (one read_write binding)

_counts: dict[tuple[str, str], int] = {}  # (where, target) -> candidates found so far in this process


@dataclass(frozen=True)
class Selection:
    """Which mutant a process runs: `target` "list" (write candidates to `file`), or a target with
    either `where` and `k` (one candidate of one test) or `site` (every candidate of one call site,
    site(): in the test `where`, or in every test where it is empty). `tests`: the pytest node ids the
    run keeps, the plugin deselecting the others (empty: every test runs). `fold` (list mode): the target ("all":
    any) under which a call site, once listed in a test, is not asked again there, since a gate that folds a
    site's iterations into one mutant needs it listed once per test; empty: every iteration is asked."""
    target: str
    where: str = ""
    k: int | None = None
    site: tuple[str, str, str, str] | None = None
    file: str = ""
    tests: tuple[str, ...] = ()
    fold: str = ""


def environment(chosen: Selection, hazards: str | None = None) -> dict[str, str]:
    """The variables that make a command's Runtimes run `chosen`; `hazards`: the file their online checks
    write each hazard to instead of raising it (runtime.online.HAZARDS)."""
    return {ENV: json.dumps(asdict(chosen)), "VKVERIFY_HOOKS": HOOK} | ({HAZARDS: hazards} if hazards else {})


def selection() -> Selection | None:
    """VKVERIFY_RUNTIME_MUTATE parsed; None when unset. ValueError names a malformed value."""
    spec = os.environ.get(ENV)
    if not spec:
        return None
    from . import TARGETS
    try:
        fields = json.loads(spec)
        chosen = Selection(**{**fields, "site": tuple(fields["site"]) if fields.get("site") else None,
                              "tests": tuple(fields.get("tests", ()))})
    except (ValueError, TypeError, KeyError):
        chosen = None
    if chosen is None or not (bool(chosen.file) and chosen.fold in ("", "all", *TARGETS) if chosen.target == "list"
                              else chosen.target in TARGETS and not chosen.fold and
                              (chosen.site is not None if chosen.k is None else chosen.site is None and
                               bool(chosen.where))):
        raise ValueError(f"{ENV}={spec!r} is not a selection (vkverify.mutations.live.environment writes one)")
    return chosen


def mutator(rt) -> Mutator | None:
    """The hook factory (VKVERIFY_HOOKS): the Runtime's mutator under VKVERIFY_RUNTIME_MUTATE, else None."""
    chosen = selection()
    return Mutator(rt, chosen) if chosen is not None else None


def site(operator: str, ref: str, source: str | None, label: str | None) -> tuple[str, str, str, str]:
    """A candidate's call site: its operator, the program's line, the op's label (one line may issue
    several ops: an upload's fill and landing barriers), the part of the op inside it
    (`.batches[0].wait[1]`); by reference where no line was recorded (nothing then folds)."""
    _, rest = split_ref(ref) or (None, "")
    return operator, source or without_submit(ref), label or "", rest if rest.startswith(".") else ""



class Mutator:
    """One Runtime's side of the per-test numbering; Runtime.execute asks it about each op."""

    def __init__(self, rt, chosen: Selection) -> None:
        self.rt, self.chosen = rt, chosen
        self._first = self.where  # the test that opened the Runtime
        self._ahead = None  # ((thread, position, the wait), its candidates), analysed before its submit
        self._listed: list = []  # list mode: (k, target, mutant, thread, position, source, label, where) until close()
        self._shadows: dict[int, Shadow] = {}  # list mode: id of a mutant -> its shadow, while it runs (_advance)
        self._borne: dict[int, set] = {}  # list mode: id of a mutant -> what its stopped shadow predicted
        self._site_of: dict[int, tuple] = {}  # list mode with fold: id of a mutant -> (where, its call site)
        self._folded: dict[tuple, set[str]] = {}  # list mode with fold: (where, call site) -> targets borne out there
        self._base = None  # (the op analysed and its probe, the hazards of both, of the op alone): for its candidates
        self._snapshot = None  # list mode: (the recorded stream's state, how many ops it had, a fork of it) for Shadow
        self._head = None  # the submit analysed, loaded, where several questions begin with it (_started)
        self._states = None  # (the recorded stream's state, how many ops it had, states of it fed ops) for _started
        self._settled_at = 0  # how many ops of the recorded stream _advance has looked at for host waits
        self._settle_due = False  # a host wait came since the last _settle
        self._dropped = None  # (thread, the signal) this mutant dropped: waits it blocks end the run (_unsatisfied)
        self._reached: dict[str, set[str]] = {self.where: set()}  # list mode: test -> user files on its ops' stacks
        if chosen.target == "list":
            append_line(chosen.file, json.dumps({"runtime": rt.name, "where": self.where}))

    @property
    def where(self) -> str:
        """The test running now (a Runtime a fixture shares serves several), else the runtime's name:
        numbering per test is the same in any pytest-xdist worker that runs it."""
        test = os.environ.get("PYTEST_CURRENT_TEST")  # "<file>::<test> (<phase>)" under pytest
        return test.rsplit(" ", 1)[0] if test else self.rt.name

    def _skips(self, op: ir.HostOp) -> bool:
        """Nothing to find at `op`: another test's runtime; the one mutant already ran; or, for a call
        site (which needs no numbering), an op whose line, or whose command buffers' lines, is not the
        site's (a host wait's candidates are found at the submit before it, whatever its line)."""
        chosen = self.chosen
        if chosen.target == "list":
            return False
        if chosen.where and chosen.where != self.where:
            return True
        if chosen.k is not None:
            return _counts.get((self.where, chosen.target), 0) > chosen.k
        operator, line = chosen.site[:2]
        if op.source == line or operator == "drop_host_wait" and isinstance(op, ir.Submit):
            return False
        return not (isinstance(op, ir.Submit) and any(c.get("source") == line for b in op.batches
                                                      for cb in b.command_buffers
                                                      for c in self.rt.command_buffers.get(cb, ())))

    def before(self, thread: str, op: ir.HostOp) -> ir.HostOp | None:
        """The op to record and run instead of `op` (None: drop it). The forks of the checker's state that its
        questions make are freed by reference counting once answered: collections meanwhile would only promote
        them, to be scanned again by full collections of the whole program (a tenth of a list run)."""
        with cyclic_gc_paused():
            return self._decide(thread, op)

    def _decide(self, thread: str, op: ir.HostOp) -> ir.HostOp | None:
        if os.environ.get("PYTEST_XDIST_WORKER") and self.where != self._first:
            raise RuntimeError(f"runtime mutation: a Runtime opened in {self._first} serves {self.where} under "
                               "pytest-xdist, where which tests ran before in the worker changes what it records: "
                               "give each test its own Runtime, or run the command without -n")
        if self._dropped is not None and isinstance(op, HOST_WAITS):
            self._unsatisfied(thread, op)
        if self.chosen.target == "list":
            self._reached.setdefault(self.where, set()).update(stack_files())
        if self._skips(op):
            return op
        self._advance(op)
        # Waits give only fence (and war) candidates and submits none: the numbering of the other targets
        # does not need what it does not count.
        waits = self.chosen.target in ("list", "fence", "war")
        position = len(self.rt.threads.get(thread, []))
        if isinstance(op, ir.Submit):
            submitted = (thread, *self._loaded(thread, op))
            # Asked of its probes, then as the submit before the wait for its fence (analysed ahead, below).
            self._head = submitted if waits and op.fence is not None else None
            found = self._submit_candidates(position, submitted) if self.chosen.target != "fence" else []
        elif isinstance(op, ir.SignalSemaphore) and self.chosen.target in ("list", "semaphore") or \
                isinstance(op, ir.HostAccess) and op.op in ("flush", "invalidate") and \
                self.chosen.target in ("list", "host"):
            found = self._host_op_candidates(thread, position, op)
        elif isinstance(op, HOST_WAITS) and waits:
            ahead, self._ahead = self._ahead, None
            # The wait analysed at its submit had no id or label (the program gives them only now).
            found = self._described(ahead[1], op, format_ref(thread, position)) \
                if ahead is not None and ahead[0] == (thread, position, replace(op, id=None, label=None)) else \
                self._wait_candidates(thread, position, [(thread, *self._loaded(thread, op))])
        else:
            return op
        result = self._number(thread, position, found, op)
        if waits and result is op and isinstance(op, ir.Submit) and op.fence is not None:
            # The wait for this fence is analysed now, before the submit: analysed at the wait, the
            # device would finish meanwhile and dropping the wait would open no race to observe.
            wait = ir.WaitFences((op.fence,))
            if self.chosen.target != "list":  # the mutant chosen may have changed a command buffer it submits
                self._head = submitted = (thread, *self._loaded(thread, op))
            ops = [submitted, (thread, *self._loaded(thread, wait))]
            self._ahead = ((thread, position + 1, wait), self._wait_candidates(thread, position + 1, ops))
        return result

    def _described(self, found: list, wait: ir.HostOp, ref: str) -> list:
        """The candidates found ahead for `wait` (dropping it), described by it as it comes: with its label."""
        if wait.label is None:
            return found
        from .generate import drop_description

        out = []
        for m in found:
            new = replace(m, description=drop_description(wait, ref))
            shadow = self._shadows.pop(id(m), None)
            if shadow is not None:
                shadow.mutant, self._shadows[id(new)] = new, shadow
            if id(m) in self._borne:
                self._borne[id(new)] = self._borne.pop(id(m))
            if id(m) in self._site_of:
                self._site_of[id(new)] = self._site_of.pop(id(m))
            out.append(new)
        return out

    def _unsatisfied(self, thread: str, wait: ir.HostOp) -> None:
        """HazardError (its blocked-wait findings: deadlock, wait_never_satisfied) where the mutant's dropped signal
        leaves `wait` blocked: the recorded stream's state fed the wait stops there, and fed the signal given
        back first, not. Without it the run would block in the wait until the runtime's wait limit. What the
        program would record next is taken to be what its list run recorded, which left the wait blocked."""
        from ..runtime import HazardError

        main = self.rt.happens_before()
        position, (op, cbs) = len(self.rt.threads.get(thread, [])), self._loaded(thread, wait)
        mutant = self._fork(main)
        mark = mutant.mark()
        mutant.feed(thread, op, cbs)
        if not mutant.blocked(thread):
            return
        restored = self._fork(main)
        signaller, signal = self._dropped
        restored.feed(signaller, *self._loaded(signaller, signal))
        restored.feed(thread, op, cbs)
        if restored.blocked(thread):
            return
        self._dropped = None
        ref = format_ref(thread, position)
        self.rt.vk_signal_semaphore(ref, signal)  # the device drains: the program's teardown waits for it
        raise self.rt.online.noted(HazardError(ref, mutant.ended().findings_since(mark),
                                               {ref: wait.source} if wait.source else {}), raised=True)

    def _origin(self, ref: str, op: ir.HostOp) -> tuple[str | None, str | None]:
        """The program's line and the label of the command or op `ref` names (`op`: the op about to run)."""
        owner = split_ref(ref)
        if owner is not None and owner[0].owner in self.rt.command_buffers:
            command = self.rt.command_buffers[owner[0].owner][owner[0].index]
            return command.get("source"), command.get("label")
        return op.source, op.label

    def _number(self, thread: str, position: int, found: list, op: ir.HostOp) -> ir.HostOp | None:
        """Number the candidates; the chosen one's version of `op` when it is among them."""
        for m in found:
            source, label = self._origin(m.op, op)
            for target in m.targets:
                key = (self.where, target)
                k = _counts.get(key, 0)
                _counts[key] = k + 1
                if self.chosen.target == "list":
                    self._listed.append((k, target, m, thread, position, source, label, self.where))
                    if self.chosen.fold:
                        self._site_of[id(m)] = (self.where, site(m.operator, m.op, source, label))
                elif target == self.chosen.target and (k == self.chosen.k or
                                                       site(m.operator, m.op, source, label) == self.chosen.site):
                    if m.operator == "drop_signal":
                        self._dropped = (thread, op)
                    return self._apply(op, m)
        return op

    def close(self) -> None:
        """List mode, at the Runtime's close: write the candidates that what the program did next bears
        out, and the user files imported so far."""
        listed, self._listed = self._listed, []
        if self.chosen.target != "list":
            return
        append_line(self.chosen.file, json.dumps({"imports": user_files()}))
        append_line(self.chosen.file, json.dumps({"reached": {w: sorted(f) for w, f in self._reached.items()}}))
        append_line(self.chosen.file, json.dumps({"sync_sites": sync_sites(self.rt.command_buffers,
                                                                           self.rt.threads)}))
        if not listed:
            return
        from .generate import borne_out

        self._advance()
        if self._shadows:
            # What only the end of the stream tells: the waits a shadow leaves blocked (a dropped signal's).
            main = self.rt.happens_before()
            known = _at_end(main, 0)
            for key, shadow in list(self._shadows.items()):
                if shadow.main is main:
                    shadow.predicted |= _at_end(shadow.state, shadow.mark, shadow.refmap()) - known
                self._stop(key)
        for k, target, m, thread, position, source, label, where in listed:
            if target in borne_out(m, self._borne.get(id(m), set())):
                append_line(self.chosen.file, json.dumps({"k": k, "target": target, "operator": m.operator,
                                                          "op": m.op, "where": where, "source": source,
                                                          "label": label, "description": m.description}))
        self._borne.clear()

    def _stop(self, key: int) -> None:
        self._borne[key] = self._shadows.pop(key).predicted
        self._site_of.pop(key, None)

    def _listed_before(self, name: str, groups: list, op: ir.HostOp) -> bool:
        """Fold mode: whether each operator of `name` (`op`: the op about to run) is listed at its call site in this
        test already, under the fold's target: the gate's mutant of that site covers this iteration as well."""
        fold = self.chosen.fold
        if not fold:
            return False
        source, label = self._origin(name, op)
        if not source:  # a site without a line is a reference, which no later iteration repeats
            return False
        for group in groups:
            targets = self._folded.get((self.where, site(group[0][0], name, source, label)), ())
            if fold not in targets if fold != "all" else not targets:
                return False
        return True

    def _advance(self, coming: ir.HostOp | None = None) -> None:
        """Feed each shadow what the program recorded since (check/incremental.py): a shadow is the state of the
        recorded stream with one candidate's mutation made, and what it finds that the stream does not is what
        the mutation breaks in what the program did next. A shadow whose every target is borne out stops.
        `coming`: the op about to run (None at the close)."""
        if not self._shadows:
            return
        from .generate import borne_out

        main = self.rt.happens_before()
        known = main.hazards_since(0)
        for key, shadow in list(self._shadows.items()):
            if shadow.main is not main:  # rebuilt after a HazardError: the list run fails anyway
                self._stop(key)
                continue
            shadow.predicted |= shadow.found() - known
            borne = borne_out(shadow.mutant, shadow.predicted)
            if key in self._site_of:
                self._folded.setdefault(self._site_of[key], set()).update(borne)
            if borne == shadow.mutant.targets:
                self._stop(key)
            elif shadow.state is None:
                shadow.materialize()
        self._settle_due |= any(isinstance(op, HOST_WAITS) for _, _, op in main.fed[self._settled_at:])
        self._settled_at = len(main.fed)
        # A host read or write about to run makes nothing pending and most often bears out the shadows that the
        # wait before it left, which a settle now would probe: the settle waits for what comes after it.
        if self._settle_due and not (isinstance(coming, ir.HostAccess) and coming.op in ("host_read", "host_write")):
            self._settle_due = False
            self._settle(main)

    def _settle(self, main) -> None:
        """Stop the shadows that nothing the program may do next can tell from the recorded stream: no batch
        pending, fences and binary semaphores in the same states, and every access so far ordered before an
        access of each kind to every buffer on every queue and host thread, then its destroy (any later access
        is ordered after at least as much: clocks only grow). The mutation's effects are then over. Asked
        after host waits and the host reads and writes right after them (a shadow settled at the wait finds
        nothing in them); not of a dropped signal's shadow, whose waits on it block (a host thread's as well),
        which only the close reports."""
        probes = self._everything(main)
        for key, shadow in list(self._shadows.items()):
            if shadow.mutant.operator != "drop_signal" and _same_waits(shadow.state.walk, main.walk) and \
                    not any(_probed(shadow.state, probe) for probe in probes):
                self._stop(key)

    def _everything(self, main) -> list[list]:
        """The probes of _settle, each (thread, op, command buffers) to feed: the host's, and apart the device's
        accesses then the destroys (the device probe's writes would hide an earlier device write from a host
        read: one made available to the host by a barrier into the host stage, or not). The host's come first:
        they cost less and tell most shadows from the stream."""
        buffers = [b for b in self.rt.doc["buffers"] if "alias_of" not in b]
        cb = ir.CommandBuffer(PROBE, (ir.Dispatch(shader=PROBE, bindings=tuple(
            ir.Binding(b["id"], 0, b["size"], "read_write") for b in buffers)),) +
            tuple(cmd for b in buffers for cmd in (
                ir.Copy(src=b["id"], dst=b["id"], regions=(ir.Region(0, 0, b["size"]),)),
                ir.Fill(dst=b["id"], offset=0, size=b["size"]))))
        threads = list(main.thread_index)
        device = [(threads[0], ir.Submit(q, (ir.Batch(command_buffers=(PROBE,)),)), [cb]) for q in main.checker.queues]
        destroys = [(threads[0], ir.Destroy(buffer=b), []) for b in main.checker.uses]
        host = [(t, ir.HostAccess(kind, b["id"], 0, b["size"]), []) for t in threads
                for kind in ("host_read", "host_write") for b in buffers if b.get("memory") in HOST_VISIBLE]
        return [host, device + destroys]

    def _submit_candidates(self, position: int, submitted: tuple) -> list:
        """The mutants of the barriers `op` records for the first time and of its semaphore waits, where
        they alone order an access of the stream so far or of the probe after `op`: a later submit on the
        same queue that reads and writes every buffer those command buffers access (a dispatch of the
        abstract shader PROBE binding each). A barrier into the host stage is asked of a second probe too:
        the device idle, then a host_read of every host-visible buffer they access (the first probe stands
        for device work, which such a barrier does not order)."""
        from ..model.accesses import command_accesses
        from .generate import barrier_edits, semaphore_edits
        from .operators import _positions

        thread, op, cbs = submitted
        fresh = [cb for cb in cbs if not self.rt.was_recorded(cb.id)]
        touched = sorted({a[3] for cb in fresh for cmd in cb.commands for a in command_accesses(cmd)})
        probe = ir.CommandBuffer(PROBE, (ir.Dispatch(PROBE, tuple(ir.Binding(b, 0, self._size(b), "read_write")
                                                                 for b in touched)),))
        later = [(thread, ir.Submit(op.queue, (ir.Batch(command_buffers=(PROBE,)),)), [probe])] if touched else []
        original = [submitted]
        # (op reference, its family, per operator the alternatives: (operator, description, what it records
        # instead, the ops to feed, how their references map back)), and those of barriers into the host stage
        edits, host = [], []
        for cb in fresh:
            for i, cmd in enumerate(cb.commands):
                if not isinstance(cmd, ir.Barrier):
                    continue
                ref = format_ref(cb.id, i)
                others = [c for c in cbs if c.id != cb.id]
                entries = [(f"{ref}.buffers[{k}]", k) for k in range(len(cmd.buffers))] if len(cmd.buffers) > 1 else []
                for name, entry in [(ref, None), *entries]:
                    edits.append((name, "barrier", [
                        [(operator, description, changed, [(thread, op, [*others, changed])],
                          {cb.id: _positions(len(cb.commands), drop=i)} if new is None else {})
                         for operator, description, new in group for changed in [_with_command(cb, i, new)]]
                        for group in barrier_edits(cmd, ref, entry)]))
                    if "host" in cmd.dst_stage:
                        host.append(edits[-1])
        for bi, batch in enumerate(op.batches):
            for k in range(len(batch.waits)):
                rest = f".batches[{bi}].wait[{k}]"
                edits.append((format_ref(thread, position) + rest, "semaphore", [
                    [(operator, description, new, [(thread, new, cbs)], {}) for operator, description, new in group]
                    for group in semaphore_edits(op, format_ref(thread, position), rest)]))
        edits = [edit for edit in edits if not self._listed_before(edit[0], edit[2], op)]
        asked = {id(edit) for edit in edits}  # a barrier into the host is one of `edits` too
        host = [edit for edit in host if id(edit) in asked]
        main = self.rt.happens_before() if edits else None
        skip = {(thread, position)}
        found = [m for name, family, groups in edits
                 for m in self._mutants(name, family, groups, main, original, later, skip)]
        visible = {b["id"] for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE}
        reads = [(thread, ir.HostAccess("host_read", b, 0, self._size(b)), []) for b in touched if b in visible]
        if host and reads:
            idle = [(thread, ir.DeviceWaitIdle(self.rt.doc["devices"][0]["id"]), [])]
            known = {(m.op, m.operator) for m in found}
            found += [m for name, family, groups in host
                      for m in self._mutants(name, family, groups, main, original, idle + reads, skip, known)]
        return sorted(found, key=lambda m: (m.operator, m.op))

    def _wait_candidates(self, thread: str, position: int, original: list[tuple]) -> list:
        """Dropping the wait that ends `original` (at `position`; (thread, op, command buffers), as loaded), where it
        alone orders device work before the probe: any host access to host-visible memory."""
        from .generate import drop_description

        ops = [op for _, op, _ in original]
        probe = [(thread, ir.HostAccess(kind, b["id"], 0, b["size"]), []) for kind in ("host_read", "host_write")
                 for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE]
        ref = format_ref(thread, position)
        dropped = [[("drop_host_wait", drop_description(ops[-1], ref), None, original[:-1],
                     _dropped(thread, position))]]
        if self._listed_before(ref, dropped, ops[-1]):
            return []
        return self._mutants(ref, "fence", dropped, self.rt.happens_before(), original, probe,
                             {(thread, position - len(ops) + 1 + i) for i in range(len(ops))})

    def _host_op_candidates(self, thread: str, position: int, op: ir.HostAccess | ir.SignalSemaphore) -> list:
        """Dropping a flush, an invalidate or a host semaphore signal, where it alone orders the probe
        after it: a device access of the flushed bytes; a host read of the invalidated ones; a submit
        that waits for the signal and accesses every host-visible buffer (the dropped signal's probe
        without that wait, which would block)."""
        from .generate import drop_description

        queue = self.rt.doc["devices"][0]["queues"][0]["id"]
        if isinstance(op, ir.HostAccess) and op.op == "invalidate":
            probe, asked = [(thread, ir.HostAccess("host_read", op.buffer, op.offset, op.size), [])], None
        else:
            ranges = [(op.buffer, op.offset, op.size)] if isinstance(op, ir.HostAccess) else \
                [(b["id"], 0, b["size"]) for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE]
            bindings = tuple(ir.Binding(b, offset, size, "read_write") for b, offset, size in ranges)
            cbs = [ir.CommandBuffer(PROBE, (ir.Dispatch(PROBE, bindings),))] if ranges else []
            waits = (ir.SemaphoreOp(op.semaphore, op.value, frozenset({"all_commands"})),) \
                if isinstance(op, ir.SignalSemaphore) else ()
            probe = [(thread, ir.Submit(queue, (ir.Batch(waits, (PROBE,) if cbs else ()),)), cbs)]
            asked = [(thread, ir.Submit(queue, (ir.Batch((), (PROBE,) if cbs else ()),)), cbs)] if waits else None
        ref = format_ref(thread, position)
        loaded = self._loaded(thread, op)
        operator = "drop_signal" if isinstance(op, ir.SignalSemaphore) else f"drop_{op.op}"
        dropped = [[(operator, drop_description(op, ref), None, [], _dropped(thread, position))]]
        if self._listed_before(ref, dropped, op):
            return []
        return self._mutants(ref, "semaphore" if isinstance(op, ir.SignalSemaphore) else "host", dropped,
                             self.rt.happens_before(), [(thread, *loaded)], probe, {(thread, position)}, asked=asked,
                             at_end=isinstance(op, ir.SignalSemaphore))

    def _mutants(self, name: str, family: str, groups: list, main, original: list, probe: list, skip: set,
                 known_ops: set = frozenset(), asked: list | None = None, at_end: bool = False) -> list:
        """Per operator group, the first alternative whose ops, then the probe (`asked`, where the mutation
        needs another), make hazards that the original ops then the probe do not; none at all unless the
        first group (the drop) breaks an access ordering, or with `at_end` leaves a wait blocked (a signal
        that a batch or a host wait already recorded waits for): the operation is load-bearing. Every
        question is asked of a fork of `main`, the recorded stream's incremental state (check/incremental.py),
        fed its ops (_started: where an earlier question began with them, a fork of that state).
        `known_ops`: (op, operator) found already, by another probe."""
        from .generate import TARGETS, mutant_targets

        known, alone = self._baseline(main, original, probe, at_end)
        out, classes = [], ()
        for n, group in enumerate(groups):
            for operator, description, change, ops, refmap in group:
                state, mark = self._started(main, ops)
                own = _by_original(state.hazards_since(mark), refmap, state)
                shadow = self._shadow(main, state, own, ops, alone) if self.chosen.target == "list" else None
                # A semaphore edit counts for its family whatever the probe adds: where its ops alone already
                # break an access ordering (the probe only adds hazards), they decide it without the probe.
                early = own - known if family == "semaphore" and not at_end else set()
                if early and (n or _classes(early)):
                    predicted = early
                else:
                    for thread, op, cbs in asked or probe:
                        state.feed(thread, op, cbs)
                    predicted = (_at_end(state, mark, refmap(state) if callable(refmap) else refmap) if at_end else
                                 _by_original(state.hazards_since(mark), refmap, state)) - known
                if n == 0:
                    classes = _classes(predicted)
                    if not classes and not (at_end and predicted):
                        if shadow is not None and shadow[0] is not None:  # asked again of a second probe, maybe
                            self._states[2][tuple(map(id, ops))] = (ops, shadow[0], mark, False)
                        return []
                if predicted:
                    if (name, operator) in known_ops:
                        break
                    # A barrier counts for the access classes it breaks; a host wait under war too where it
                    # opens a WAR (a device read, then a host write).
                    targets = tuple(t for t in TARGETS if t in classes) if family == "barrier" else \
                        ("war", family) if family == "fence" and "war" in classes else (family,)
                    m = Found(mutant_targets(operator, targets, predicted), operator, name, description, change)
                    if shadow is not None:
                        self._shadows[id(m)] = Shadow(m, main, *shadow, mark, refmap, skip)
                    out.append(m)
                    break
        return out

    def _fork(self, main):
        with self.rt.record.lock:  # another thread may be recording into it
            return main.fork()

    def _started(self, main, ops: list) -> tuple:
        """A fork of `main` fed `ops` (each (thread, op, command buffers)) for the caller to feed on, and its mark
        before them. Questions asked since `main` last changed that begin with the same ops (the same objects) spare
        the feeding: the submit `_head` names, which its probes and the wait for its fence ahead of it begin with,
        is fed once and forked; a drop that broke nothing, which a barrier into the host is asked of a second probe,
        is taken as it was left before its probe (_mutants)."""
        if self._states is None or self._states[0] is not main or self._states[1] != len(main.fed):
            self._states = (main, len(main.fed), {})
        states, key = self._states[2], tuple(map(id, ops))
        left = states.get(key)
        if left is not None and not left[3]:
            del states[key]
            return left[1], left[2]
        head = self._head
        if ops and ops[0] is head:
            first = states.get((id(head),))
            if first is None:
                state = self._fork(main)
                mark = state.mark()
                state.feed(*head)
                first = states[(id(head),)] = ([head], state, mark, True)
            state, mark, rest = first[1].fork(), first[2], ops[1:]
        else:
            state = self._fork(main)
            mark, rest = state.mark(), ops
        for thread, op, cbs in rest:
            state.feed(thread, op, cbs)
        return state, mark

    def _shadow(self, main, state, own: set, ops: list, alone: set) -> tuple:
        """A candidate's shadow before the probe is fed to `state` (`ops` fed after `main`, making hazards `own`):
        (its state, None), or (None, pending) where the ops make hazards that the original does not, which most
        often bear the candidate out at the next _advance: the fork is then left to the few that they do not
        (Shadow.pending)."""
        if not own - alone:
            return state.fork(), None
        if self._snapshot is None or self._snapshot[0] is not main or self._snapshot[1] != len(main.fed):
            self._snapshot = (main, len(main.fed), self._fork(main))
        return None, (self._snapshot[2], ops, own)

    def _baseline(self, main, original: list, probe: list, at_end: bool = False) -> tuple[set, set]:
        """The hazards of the original ops then the probe after `main` (`at_end`: and the waits they leave
        blocked), and those of the original ops alone, once per op and probe analysed. The key holds `main` itself,
        as _started does: a state rebuilt after a HazardError could take a freed one's id."""
        key = (main, len(main.fed), tuple(op for _, op, _ in original + probe), at_end)
        if self._base is None or self._base[0] != key:
            state, mark = self._started(main, original)
            alone = state.hazards_since(mark)
            for thread, op, cbs in probe:
                state.feed(thread, op, cbs)
            self._base = (key, _at_end(state, mark) if at_end else state.hazards_since(mark), alone)
        return self._base[1:]

    def _loaded(self, thread: str, op: ir.HostOp) -> tuple[ir.HostOp, list[ir.CommandBuffer]]:
        """`op` as the loader reads it back from the stream, and the command buffers it submits."""
        loaded = self.rt.record.loaded({thread: [host_op_to_dict(op)]})
        return loaded.threads[0].ops[0], list(loaded.command_buffers)

    def _size(self, buffer: str) -> int:
        return next(b["size"] for b in self.rt.doc["buffers"] if b["id"] == buffer)

    def _apply(self, op: ir.HostOp, m: Found) -> ir.HostOp | None:
        """Run the mutant's version of the op: its command buffer, its submit, or nothing."""
        if isinstance(m.change, ir.CommandBuffer):
            self.rt.load_command_buffer(m.change)
            return op
        return m.change


@dataclass(frozen=True)
class Found:
    """A runtime candidate: `change` is the command buffer it records instead, or its version of the op
    (None: the op dropped)."""

    targets: tuple[str, ...]
    operator: str
    op: str  # the operation it changes, by reference in the recorded stream
    description: str
    change: ir.CommandBuffer | ir.HostOp | None


class Shadow:
    """List mode: the recorded stream's state with one candidate's mutation made (its op, or ops, `skip` are
    not fed again), fed what the program records next; `predicted`: what it finds that the stream does not.
    `state` is None while `pending` (a fork of the recorded stream's state when the shadow was made, the ops its
    mutation feeds, what they found by the stream's references) stands for it: made only where the program
    records more than the mutated ops before the next _advance, or they do not bear the candidate out."""

    def __init__(self, mutant: Found, main, state, pending: tuple | None, mark: int, refmap, skip: set) -> None:
        self.mutant, self.main, self.state, self.pending = mutant, main, state, pending
        self.mark, self.skip, self._refmap = mark, skip, refmap
        self.next = len(main.fed)
        self.predicted: set[tuple] = set()

    def found(self) -> set[tuple]:
        """What it finds since its mutation, by the recorded stream's references, caught up with the program."""
        if self.state is None:
            if all((t, p) in self.skip for t, p, _ in self.main.fed[self.next:]):
                return self.pending[2]
            self.materialize()
        self.catch_up()
        return _by_original(self.state.hazards_since(self.mark), self._refmap, self.state)

    def materialize(self) -> None:
        """Its state made from `pending`, then caught up."""
        (main, ops, _), self.pending = self.pending, None
        self.state = main.fork()
        for thread, op, cbs in ops:
            self.state.feed(thread, op, cbs)
        self.catch_up()

    def catch_up(self) -> None:
        main, state = self.main, self.state
        if state.resources is not main.resources:
            state.add_resources(main.resources)
        known = state.checker.index.command_buffers
        for thread, position, op in main.fed[self.next:]:
            if (thread, position) not in self.skip:
                # Its own version of a mutated command buffer stays.
                state.feed(thread, op, [main.checker.index.command_buffers[c] for c in ir.submitted(op)
                                        if c not in known])
        self.next = len(main.fed)

    def refmap(self) -> dict:
        return self._refmap(self.state) if callable(self._refmap) else self._refmap


def _by_original(hazards: set, refmap, state) -> set:
    """`hazards` by the recorded stream's references: through `refmap`, or the RefMap it gives of `state` (a dropped
    host op's, as long as its thread: made only where there are hazards to map)."""
    from .generate import _translate

    if hazards and callable(refmap):
        refmap = refmap(state)
    return {_translate(h, refmap) for h in hazards}


def _classes(hazards: set) -> set[str]:
    """The targets that `hazards` bear out by their kind: the access classes, keepalive for a use after destroy."""
    from .generate import ACCESS_CLASSES

    return {"keepalive" if h[0] == "use_after_destroy" else h[0] for h in hazards
            if h[0] in (*ACCESS_CLASSES, "use_after_destroy")}


# A host op's kind where it synchronizes (a host access: flush and invalidate only).
_SYNC_OPS = {"wait_fences", "wait_semaphores", "get_semaphore_counter_value", "queue_wait_idle", "device_wait_idle",
             "signal_semaphore", "flush", "invalidate"}


def sync_sites(command_buffers: dict[str, list[dict]], threads: dict[str, list[dict]]) -> list[list[str]]:
    """[kind, file:line] of each synchronization a program recorded where its line is known and an operator
    mutates it: barriers, a submit's semaphore waits, host waits and signals, flushes and invalidates (a submit's
    signal is not mutated: its wait is)."""
    sites = {("barrier", c["source"]) for commands in command_buffers.values() for c in commands
             if c["cmd"] == "barrier" and c.get("source")}
    for ops in threads.values():
        for op in ops:
            if not op.get("source"):
                continue
            if op["op"] == "submit":  # batches, or the one batch's fields on the submit (format.md)
                if any(b.get("wait") for b in op.get("batches") or [op]):
                    sites.add(("semaphore wait", op["source"]))
            elif op["op"] in _SYNC_OPS:
                sites.add((op["op"], op["source"]))
    return sorted([list(site) for site in sites])


def _dropped(thread: str, position: int):
    """The RefMap of a host op of `thread` dropped at `position`, from the state it was dropped in."""
    from .operators import _positions

    return lambda state: {thread: _positions(state.thread_length(thread) + 1, drop=position)}


def _at_end(state, mark: int, refmap: dict | None = None) -> set:
    """The hazards after `mark` with those the end of the stream adds (waits left blocked), by the recorded
    stream's references."""
    from .generate import _translate

    return {_translate(h, refmap or {}) for h in state.ended().hazards_since(mark)}


def _probed(state, probe: list) -> bool:
    """Whether `probe` fed after `state` (a fork of it) leaves an access of `state` unordered before it (the
    probe's own accesses race each other, as they may)."""
    state = state.fork(worded=False)
    mark, lengths = state.mark(), {t: state.thread_length(t) for t in state.thread_index}
    own = PROBE + "["  # how the references to the probe's commands begin

    def earlier(ref: str | None) -> bool:
        if not ref or ref.startswith(own):  # most are the probe's own races: not parsed
            return False
        head = parse_ref(without_submit(ref))
        return head is not None and head.index < lengths.get(head.owner, head.index + 1)
    for thread, op, cbs in probe:
        state.feed(thread, op, cbs)
        if any(len(h) == 3 and earlier(h[1]) for h in state.hazards_since(mark)):
            return True  # the rest of the probe cannot take it back
        mark = state.mark()
    return False


def _same_waits(a, b) -> bool:
    """Whether two walks (check/walk.py) have no batch pending and their fences and binary semaphores alike."""
    return not any(a.pending.values()) and not any(b.pending.values()) and \
        {f: x.state for f, x in a.fences.items()} == {f: x.state for f, x in b.fences.items()} and \
        {s: len(x) for s, x in a.binary.items()} == {s: len(x) for s, x in b.binary.items()}


def _with_command(cb: ir.CommandBuffer, i: int, new: ir.Command | None) -> ir.CommandBuffer:
    """`cb` with its i-th command replaced by `new` (None: dropped)."""
    return ir.CommandBuffer(cb.id, cb.commands[:i] + ((new,) if new is not None else ()) + cb.commands[i + 1:])


_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_users: dict[str, str | None] = {}  # a code object's file name -> its absolute path where it is the user's, else None


def _user(path: str) -> str | None:
    """`path` made absolute where it is the user's: an existing file outside the interpreter's prefixes (the
    standard library, installed packages) and outside vkverify."""
    if path not in _users:
        full = os.path.abspath(path)
        prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, _OWN)
        _users[path] = full if not full.startswith(prefixes) and os.path.isfile(full) else None
    return _users[path]


def user_files() -> list[str]:
    """The Python files this process imported that are the user's (_user)."""
    found = {_user(f) for f in (getattr(m, "__file__", None) for m in list(sys.modules.values())) if f}
    return sorted(f for f in found if f)


def stack_files() -> set[str]:
    """The user's files (_user) on the call stack: the code that issues the op about to run."""
    names, frame = set(), inspect.currentframe().f_back
    while frame is not None:  # walked by hand: traceback.walk_stack works out each frame's line, unused here
        names.add(frame.f_code.co_filename)
        frame = frame.f_back
    return {_user(name) for name in names} - {None}


def list_modules(file: str, packages: set[str]) -> None:
    """List mode, at the end of the run: the modules of `packages` (the test runner's) it imported, in that order,
    which forks.py imports before forking each mutant's run."""
    names = [name for name in list(sys.modules) if name.partition(".")[0] in packages]
    append_line(file, json.dumps({"modules": names}))


def list_tests(file: str, tests: dict[str, str]) -> None:
    """List mode: the tests the pytest plugin collected (node id -> its file), which a mutant's run can select."""
    append_line(file, json.dumps({"tests": tests}))
