"""Runtime mutation: VKVERIFY_MUTATE=<target>:<k> drops or weakens the k-th load-bearing
synchronization of class <target> as the program records and executes it;
VKVERIFY_MUTATE=list:<file> appends every candidate to <file> and mutates nothing.

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
Not mutated here: flushes and invalidates, semaphore signals (load-bearing only once a later
wait exists), fence resets, keepalive moves, and the uploader's other waits (finish, failures).

The probe only numbers candidates. A list run keeps those whose mutation makes a hazard of their
target in what the program did next: each candidate's fork without the probe (its shadow) is fed
every op recorded after it, and what it finds that the recorded stream does not bears its targets
out. A shadow stops once all its targets are borne out, or once nothing the program may do next
can tell it from the recorded stream (after a host wait: nothing pending, every access so far
ordered before an access of every kind to every buffer on every queue and thread), so the run
costs about what the program records, whatever its length. A landing barrier that the next
slot's barrier, a fence wait or a semaphore makes redundant, or a wait that protects nothing
the program then touches, is therefore never a candidate (never a survivor either).

The mutation is recorded as well as executed, so the runtime's stream (and online checking)
shows the mutant. Candidates are numbered per target in the order they are found, across every
Runtime of the process: a pytest run is one numbering, the same in the list run and in each
mutated run because both run the same program up to the mutated operation (not with xdist).
A list line: k, target, operator, op reference, where (the pytest test, or the runtime's name),
description; tab-separated. A candidate of several targets has a line under each.

`python -m vkverify.runtime.mutate [--target T] [-j N] -- CMD...` runs CMD once with
list:<file> (it must pass), then once per candidate, and names the survivors.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..model import ir
from ..model.dump import host_op_to_dict
from ..model.refs import format_ref, parse_ref, without_submit

ENV = "VKVERIFY_MUTATE"
HOST_WAITS = (ir.WaitFences, ir.WaitSemaphores, ir.QueueWaitIdle, ir.DeviceWaitIdle)
HOST_VISIBLE = ("host_coherent", "host_cached", "device_host_visible")
PROBE = "vkverify.probe"  # the probe's command buffer and abstract shader (one read_write binding)
TIMEOUT_FACTOR, TIMEOUT_FLOOR_S = 10.0, 30.0  # a mutant that hangs is killed; start-up noise needs a floor

_counts: dict[str, int] = {}  # target -> candidates found so far in this process


@dataclass(frozen=True)
class Selection:
    mode: str  # "list" or a target
    value: str  # the list file, or k


def mutator(rt, name: str) -> Mutator | None:
    """The Runtime's mutator under VKVERIFY_MUTATE, else None."""
    chosen = selection()
    return Mutator(rt, chosen, name) if chosen is not None else None


def selection() -> Selection | None:
    """VKVERIFY_MUTATE parsed; None when unset. ValueError names a malformed value."""
    spec = os.environ.get(ENV)
    if not spec:
        return None
    mode, sep, value = spec.partition(":")
    from ..mutations import TARGETS
    if not sep or (mode != "list" and (mode not in TARGETS or not value.isdigit())):
        raise ValueError(f"{ENV}={spec!r} must be <target>:<k> (target one of {', '.join(TARGETS)}) or list:<file>")
    return Selection(mode, value)


class Mutator:
    """One Runtime's side of the process-wide numbering; Runtime.execute asks it about each op."""

    def __init__(self, rt, chosen: Selection, name: str) -> None:
        self.rt, self.chosen = rt, chosen
        where = os.environ.get("PYTEST_CURRENT_TEST")  # "<file>::<test> (<phase>)" under pytest
        self.where = where.rsplit(" ", 1)[0] if where else name
        self._ahead = None  # ((thread, position, the wait), its candidates), analysed before its submit
        self._listed: list = []  # list mode: (k, target, mutant, thread, position) until close() confirms them
        self._shadows: dict[int, Shadow] = {}  # list mode: id of a mutant -> its shadow, while it runs (_advance)
        self._borne: dict[int, set] = {}  # list mode: id of a mutant -> what its stopped shadow predicted
        self._base = None  # (the op analysed, the hazards of it and the probe): shared by its candidates
        self._settled_at = 0  # how many ops of the recorded stream _advance has looked at for host waits

    def before(self, thread: str, op: ir.HostOp) -> ir.HostOp | None:
        """The op to record and run instead of `op` (None: drop it)."""
        if self.chosen.mode != "list" and _counts.get(self.chosen.mode, 0) > int(self.chosen.value):
            return op  # the mutant already ran: no more analysis
        self._advance()
        # Waits give only fence (and war) candidates and submits none: the numbering of the other targets
        # does not need what it does not count.
        waits = self.chosen.mode in ("list", "fence", "war")
        position = len(self.rt.threads.get(thread, []))
        if isinstance(op, ir.Submit):
            found = self._submit_candidates(thread, position, op) if self.chosen.mode != "fence" else []
        elif isinstance(op, HOST_WAITS) and waits:
            ahead, self._ahead = self._ahead, None
            found = ahead[1] if ahead is not None and ahead[0] == (thread, position, op) else \
                self._wait_candidates(thread, position, [op])
        else:
            return op
        result = self._number(thread, position, found, op)
        if waits and result is op and isinstance(op, ir.Submit) and op.fence is not None:
            # The wait for this fence is analysed now, before the submit: analysed at the wait, the
            # device would finish meanwhile and dropping the wait would open no race to observe.
            wait = ir.WaitFences((op.fence,))
            self._ahead = ((thread, position + 1, wait), self._wait_candidates(thread, position + 1, [op, wait]))
        return result

    def _number(self, thread: str, position: int, found: list, op: ir.HostOp) -> ir.HostOp | None:
        """Number the candidates; the chosen one's version of `op` when it is among them."""
        for m in found:
            for target in m.targets:
                k = _counts.get(target, 0)
                _counts[target] = k + 1
                if self.chosen.mode == "list":
                    self._listed.append((k, target, m, thread, position))
                elif (target, str(k)) == (self.chosen.mode, self.chosen.value):
                    return self._apply(op, m)
        return op

    def close(self) -> None:
        """List mode, at the Runtime's close: write the candidates that what the program did next bears out."""
        listed, self._listed = self._listed, []
        if not listed:
            return
        from ..mutations.generate import borne_out

        self._advance()
        for key in list(self._shadows):
            self._stop(key)
        with open(self.chosen.value, "a") as f:
            for k, target, m, thread, position in listed:
                if target in borne_out(m, self._borne.get(id(m), set())):
                    f.write(f"{k}\t{target}\t{m.operator}\t{m.op}\t{self.where}\t{m.description}\n")
        self._borne.clear()

    def _stop(self, key: int) -> None:
        self._borne[key] = self._shadows.pop(key).predicted

    def _advance(self) -> None:
        """Feed each shadow what the program recorded since (check/incremental.py): a shadow is the state of the
        recorded stream with one candidate's mutation made, and what it finds that the stream does not is what
        the mutation breaks in what the program did next. A shadow whose every target is borne out stops."""
        if not self._shadows:
            return
        from ..mutations.generate import _translate, borne_out

        main = self.rt.happens_before()
        known = main.hazards_since(0)
        for key, shadow in list(self._shadows.items()):
            if shadow.main is not main:  # rebuilt after a HazardError: the list run fails anyway
                self._stop(key)
                continue
            shadow.catch_up()
            shadow.predicted |= {_translate(h, shadow.refmap()) for h in shadow.state.hazards_since(shadow.mark)} - known
            if borne_out(shadow.mutant, shadow.predicted) == shadow.mutant.targets:
                self._stop(key)
        waited = any(isinstance(op, HOST_WAITS) for _, _, op in main.fed[self._settled_at:])
        self._settled_at = len(main.fed)
        if waited:
            self._settle(main)

    def _settle(self, main) -> None:
        """Stop the shadows that nothing the program may do next can tell from the recorded stream: no batch
        pending, fences and binary semaphores in the same states, and every access so far ordered before an
        access of each kind to every buffer on every queue and host thread, then its destroy (any later access
        is ordered after at least as much: clocks only grow). The mutation's effects are then over. Asked
        after host waits."""
        probe = self._everything(main)
        for key, shadow in list(self._shadows.items()):
            if _same_waits(shadow.state.walk, main.walk) and not _probed(shadow.state, probe):
                self._stop(key)

    def _everything(self, main) -> list:
        """The probe of _settle: (thread, op, command buffers) to feed."""
        buffers = [b for b in self.rt.doc["buffers"] if "alias_of" not in b]
        cb = ir.CommandBuffer(PROBE, (ir.Dispatch(shader=PROBE, bindings=tuple(
            ir.Binding(b["id"], 0, b["size"], "read_write") for b in buffers)),) + tuple(cmd for b in buffers for cmd in (
                ir.Copy(src=b["id"], dst=b["id"], regions=(ir.Region(0, 0, b["size"]),)),
                ir.Fill(dst=b["id"], offset=0, size=b["size"]))))
        threads = list(main.thread_index)
        return [(threads[0], ir.Submit(q, (ir.Batch(command_buffers=(PROBE,)),)), [cb]) for q in main.schedule.queues] + \
            [(t, ir.HostAccess(kind, b["id"], 0, b["size"]), []) for t in threads for kind in ("host_read", "host_write")
             for b in buffers if b.get("memory") in HOST_VISIBLE] + \
            [(threads[0], ir.Destroy(buffer=b), []) for b in main.schedule.uses]

    def _submit_candidates(self, thread: str, position: int, op: ir.Submit) -> list:
        """The mutants of the barriers `op` records for the first time and of its semaphore waits, where
        they alone order an access of the stream so far or of the probe after `op`: a later submit on the
        same queue that reads and writes every buffer those command buffers access (a dispatch of the
        abstract shader PROBE binding each)."""
        from ..model.accesses import command_accesses
        from ..mutations.generate import barrier_edits, semaphore_edits
        from ..mutations.operators import _positions

        op, cbs = self._loaded(thread, op)
        fresh = [cb for cb in cbs if not any(key[0] == cb.id for key in self.rt.recorded)]
        touched = sorted({a[3] for cb in fresh for cmd in cb.commands for a in command_accesses(cmd)})
        probe = ir.CommandBuffer(PROBE, (ir.Dispatch(PROBE, tuple(ir.Binding(b, 0, self._size(b), "read_write")
                                                                 for b in touched)),))
        later = [(thread, ir.Submit(op.queue, (ir.Batch(command_buffers=(PROBE,)),)), [probe])] if touched else []
        original = [(thread, op, cbs)]
        # (op reference, its family, per operator the alternatives: (operator, description, what it records
        # instead, the ops to feed, how their references map back))
        edits = []
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
        for bi, batch in enumerate(op.batches):
            for k in range(len(batch.waits)):
                rest = f".batches[{bi}].wait[{k}]"
                edits.append((format_ref(thread, position) + rest, "semaphore", [
                    [(operator, description, new, [(thread, new, cbs)], {}) for operator, description, new in group]
                    for group in semaphore_edits(op, format_ref(thread, position), rest)]))
        main = self.rt.happens_before() if edits else None
        found = [m for name, family, groups in edits
                 for m in self._mutants(name, family, groups, main, original, later, {(thread, position)})]
        return sorted(found, key=lambda m: (m.operator, m.op))

    def _wait_candidates(self, thread: str, position: int, ops: list[ir.HostOp]) -> list:
        """Dropping the wait that ends `ops` (at `position`), where it alone orders device work
        before the probe: any host access to host-visible memory."""
        from ..mutations.generate import drop_wait_description
        from ..mutations.operators import _positions

        original = [(thread, *self._loaded(thread, o)) for o in ops]
        probe = [(thread, ir.HostAccess(kind, b["id"], 0, b["size"]), []) for kind in ("host_read", "host_write")
                 for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE]
        ref = format_ref(thread, position)
        dropped = [[("drop_host_wait", drop_wait_description(ops[-1], ref), None, original[:-1],
                     lambda state: {thread: _positions(state.thread_length(thread) + 1, drop=position)})]]
        return self._mutants(ref, "fence", dropped, self.rt.happens_before(), original, probe,
                             {(thread, position - len(ops) + 1 + i) for i in range(len(ops))})

    def _mutants(self, name: str, family: str, groups: list, main, original: list, probe: list, skip: set) -> list:
        """Per operator group, the first alternative whose ops, then the probe, make hazards that the original
        ops then the probe do not; none at all unless the first group (the drop) breaks an access ordering:
        the operation is load-bearing. Every question is asked of a fork of `main`, the recorded stream's
        incremental state (check/incremental.py)."""
        from ..mutations.generate import ACCESS_CLASSES, TARGETS, _translate, mutant_targets

        known = self._baseline(main, original, probe)
        out, classes = [], ()
        for n, group in enumerate(groups):
            for operator, description, change, ops, refmap in group:
                state = self._fork(main)
                mark = state.mark()
                for thread, op, cbs in ops:
                    state.feed(thread, op, cbs)
                shadow = state.fork() if self.chosen.mode == "list" else None
                for thread, op, cbs in probe:
                    state.feed(thread, op, cbs)
                refmap_now = refmap(state) if callable(refmap) else refmap
                predicted = {_translate(h, refmap_now) for h in state.hazards_since(mark)} - known
                if n == 0:
                    classes = {"keepalive" if h[0] == "use_after_destroy" else h[0] for h in predicted
                               if h[0] in (*ACCESS_CLASSES, "use_after_destroy")}
                    if not classes:
                        return []
                if predicted:
                    # A barrier counts for the access classes it breaks; a host wait under war too where it
                    # opens a WAR (a device read, then a host write).
                    targets = tuple(t for t in TARGETS if t in classes) if family == "barrier" else \
                        ("war", family) if family == "fence" and "war" in classes else (family,)
                    m = Found(mutant_targets(operator, targets, predicted), operator, name, description, change,
                              tuple(sorted(predicted, key=str)))
                    if shadow is not None:
                        self._shadows[id(m)] = Shadow(m, main, shadow, mark, refmap, skip)
                    out.append(m)
                    break
        return out

    def _fork(self, main):
        with self.rt._lock:  # another thread may be recording into it
            return main.fork()

    def _baseline(self, main, original: list, probe: list) -> set:
        """The hazards of the original ops then the probe after `main`, once per op analysed."""
        key = (id(main), len(main.fed), tuple(op for _, op, _ in original))
        if self._base is None or self._base[0] != key:
            state = self._fork(main)
            mark = state.mark()
            for thread, op, cbs in original + probe:
                state.feed(thread, op, cbs)
            self._base = (key, state.hazards_since(mark))
        return self._base[1]

    def _loaded(self, thread: str, op: ir.HostOp) -> tuple[ir.HostOp, list[ir.CommandBuffer]]:
        """`op` as the loader reads it back from the stream, and the command buffers it submits."""
        loaded = self.rt._loaded({thread: [host_op_to_dict(op)]})
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
    predicted: tuple[tuple, ...]  # the hazards it makes against the probe


class Shadow:
    """List mode: the recorded stream's state with one candidate's mutation made (its op, or ops, `skip` are
    not fed again), fed what the program records next; `predicted`: what it finds that the stream does not."""

    def __init__(self, mutant: Found, main, state, mark: int, refmap, skip: set) -> None:
        self.mutant, self.main, self.state, self.mark, self.skip = mutant, main, state, mark, skip
        self._refmap = refmap
        self.next = len(main.fed)
        self.predicted: set[tuple] = set()

    def catch_up(self) -> None:
        main, state = self.main, self.state
        if state.resources is not main.resources:
            state.add_resources(main.resources)
        known = state.schedule.index.command_buffers
        for thread, position, op in main.fed[self.next:]:
            if (thread, position) not in self.skip:
                # Its own version of a mutated command buffer stays.
                state.feed(thread, op, [main.schedule.index.command_buffers[c] for c in _submitted(op)
                                        if c not in known])
        self.next = len(main.fed)

    def refmap(self) -> dict:
        return self._refmap(self.state) if callable(self._refmap) else self._refmap


def _probed(state, probe: list) -> bool:
    """Whether `probe` fed after `state` (a fork of it) leaves an access of `state` unordered before it (the
    probe's own accesses race each other, as they may)."""
    state = state.fork(worded=False)
    mark, lengths = state.mark(), {t: state.thread_length(t) for t in state.thread_index}
    for thread, op, cbs in probe:
        state.feed(thread, op, cbs)

    def earlier(ref: str | None) -> bool:
        head = parse_ref(without_submit(ref)) if ref else None
        return head is not None and head.owner != PROBE and head.index < lengths.get(head.owner, head.index + 1)
    return any(len(h) == 3 and earlier(h[1]) for h in state.hazards_since(mark))


def _same_waits(a, b) -> bool:
    """Whether two walks (check/walk.py) have no batch pending and their fences and binary semaphores alike."""
    return not any(a.pending.values()) and not any(b.pending.values()) and \
        {f: x.state for f, x in a.fences.items()} == {f: x.state for f, x in b.fences.items()} and \
        {s: len(x) for s, x in a.binary.items()} == {s: len(x) for s, x in b.binary.items()}


def _submitted(op: ir.HostOp) -> list[str]:
    return [cb for b in op.batches for cb in b.command_buffers] if isinstance(op, ir.Submit) else []


def _with_command(cb: ir.CommandBuffer, i: int, new: ir.Command | None) -> ir.CommandBuffer:
    """`cb` with its i-th command replaced by `new` (None: dropped)."""
    return ir.CommandBuffer(cb.id, cb.commands[:i] + ((new,) if new is not None else ()) + cb.commands[i + 1:])


# ---- the driver: a command, once per candidate ---------------------------------------


@dataclass(frozen=True)
class Candidate:
    k: int
    target: str
    operator: str
    op: str
    where: str
    description: str

    @property
    def name(self) -> str:
        return f"{self.target}:{self.k} {self.operator} {self.op} in {self.where} ({self.description})"


def read_list(path: str) -> list[Candidate]:
    with open(path) as f:
        return [Candidate(int(k), t, o, op, w, d)
                for k, t, o, op, w, d in (line.rstrip("\n").split("\t") for line in f if line.strip())]


def chosen(candidates: list[Candidate], target: str) -> list[Candidate]:
    """`all`: each candidate once, under its first target; else those of `target`."""
    if target != "all":
        return [c for c in candidates if c.target == target]
    seen, out = set(), []
    for c in candidates:
        if (c.where, c.op, c.operator) not in seen:
            seen.add((c.where, c.op, c.operator))
            out.append(c)
    return out


def run_command(argv: list[str], target: str = "all", jobs: int = 1) -> tuple[list[Candidate], list[Candidate]]:
    """(candidates, survivors): `argv` run once listing (must exit 0), then once per candidate.
    RuntimeError when the clean run fails: a red baseline proves nothing."""
    with tempfile.TemporaryDirectory(prefix="vkverify-mutate-") as tmp:
        listing = os.path.join(tmp, "candidates.tsv")
        open(listing, "w").close()
        began = time.monotonic()
        clean = subprocess.run(argv, env={**os.environ, ENV: f"list:{listing}"}, capture_output=True, text=True)
        if clean.returncode != 0:
            tail = "\n  ".join((clean.stdout + clean.stderr).strip().splitlines()[-10:])
            raise RuntimeError(f"the command fails unmutated (exit {clean.returncode}):\n  {tail}")
        timeout = max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * (time.monotonic() - began))
        candidates = chosen(read_list(listing), target)

    def survives(c: Candidate) -> bool:
        try:
            done = subprocess.run(argv, env={**os.environ, ENV: f"{c.target}:{c.k}"}, capture_output=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        alive = list(pool.map(survives, candidates))
    return candidates, [c for c, a in zip(candidates, alive) if a]


def main(args: list[str] | None = None) -> int:
    from ..mutations import TARGETS

    parser = argparse.ArgumentParser(prog="python -m vkverify.runtime.mutate",
                                     description="Run CMD once per runtime mutation candidate; name the survivors.")
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    ns = parser.parse_args(args)
    argv = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not argv:
        parser.error("give the command after --")
    return report_command(argv, ns.target, ns.jobs)


def report_command(argv: list[str], target: str, jobs: int) -> int:
    """`vkverify mutate -- CMD`: run_command, survivors by name; exit 1 with any, 2 when the clean run fails."""
    try:
        candidates, survivors = run_command(argv, target, jobs)
    except RuntimeError as error:
        print(f"vkverify mutate: {error}", file=sys.stderr)
        return 2
    print(f"{len(candidates)} mutants, {len(candidates) - len(survivors)} killed, {len(survivors)} survivors")
    for c in survivors:
        print(f"  survivor {c.name}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
