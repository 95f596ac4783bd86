"""Runtime mutation: VKVERIFY_MUTATE=<target>:<k> drops or weakens the k-th load-bearing
synchronization of class <target> as the program records and executes it;
VKVERIFY_MUTATE=list:<file> appends every candidate to <file> and mutates nothing.

How candidates are found: per operation, from the stream recorded so far plus that operation,
with vkverify.mutations.mutants (the happens-before model's load-bearing analysis and its
equivalence filter), keeping only the mutants of the operation about to run, since what already
ran cannot be changed. What the program does next is not recorded yet, so each operation is
analysed with a probe after it that stands for the accesses that may follow:
- a submit: the barriers (and barrier entries) of its command buffers recorded for the first
  time, and its semaphore waits (targets raw, waw, war, host, semaphore). The probe is a later
  submit on the same queue that reads and writes every buffer those command buffers access (a
  dispatch of the abstract shader PROBE per buffer): a barrier at the end of a command buffer,
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

The probe only numbers candidates. A list run keeps, when the Runtime closes, those whose
mutation still makes the model find a new hazard of their target in the whole recorded stream:
load-bearing for what the program did next, not for the probe. A landing barrier that the next
slot's barrier, a fence wait or a semaphore makes redundant, or a wait that protects nothing
the program then touches, is therefore never a candidate (never a survivor either).

The mutation is recorded as well as executed, so the runtime's stream (and online checking)
shows the mutant. Candidates are numbered per target in the order they are found, across every
Runtime of the process: a pytest run is one numbering, the same in the list run and in each
mutated run because both run the same program up to the mutated operation (not with xdist).
A list line: k, target, operator, op reference, where (the pytest test, or the runtime's name),
description; tab-separated. A candidate of several targets has a line under each.

`python -m vkverify.mutations.live [--target T] [-j N] -- CMD...` runs CMD once with
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
from dataclasses import dataclass, replace

from ..model import from_dict, ir
from ..model.dump import host_op_to_dict
from ..model.refs import format_ref, owner_of

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
    from . import TARGETS
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

    def before(self, thread: str, op: ir.HostOp) -> ir.HostOp | None:
        """The op to record and run instead of `op` (None: drop it)."""
        if self.chosen.mode != "list" and _counts.get(self.chosen.mode, 0) > int(self.chosen.value):
            return op  # the mutant already ran: no more analysis
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
                    return self._apply(thread, position, m)
        return op

    def close(self) -> None:
        """List mode, at the Runtime's close: write the candidates the whole recorded stream bears out."""
        listed, self._listed = self._listed, []
        if not listed:
            return
        from .generate import borne_out, hazards, new_hazards

        whole = self.rt.stream()
        known = hazards(whole)
        targets = {}  # id(mutant) -> its targets in the whole stream
        with open(self.chosen.value, "a") as f:
            for k, target, m, thread, position in listed:
                if id(m) not in targets:
                    targets[id(m)] = borne_out(m, new_hazards(*_transplant(whole, m, thread, position), known))
                if target in targets[id(m)]:
                    f.write(f"{k}\t{target}\t{m.operator}\t{m.op}\t{self.where}\t{m.description}\n")

    def _prefix(self, thread: str, ops: list[ir.HostOp], probe: list[dict] | None = None) -> ir.Stream:
        with self.rt._lock:
            doc = self.rt._document({thread: self.rt.threads.get(thread, []) + [host_op_to_dict(o) for o in ops]})
        if probe:
            doc["command_buffers"][PROBE] = probe
            doc["shaders"] = {**doc["shaders"], PROBE: {"bindings": ["read_write"]}}
        return from_dict(doc, "<runtime mutation>")

    def _submit_candidates(self, thread: str, position: int, op: ir.Submit) -> list:
        """The mutants of the barriers `op` records for the first time and of its semaphore waits,
        where they alone order an access of the stream so far or of the probe after `op`."""
        from ..model.accesses import command_accesses
        from . import mutants

        fresh = {c for b in op.batches for c in b.command_buffers
                 if not any(key[0] == c for key in self.rt.recorded)}
        touched = sorted({a[3] for c in fresh for cmd in self.rt._commands(c) for a in command_accesses(cmd)})
        probe = [{"cmd": "dispatch", "shader": PROBE, "bindings": [{"buffer": b, "access": "read_write"}]}
                 for b in touched]
        later = [ir.Submit(op.queue, (ir.Batch(command_buffers=(PROBE,)),))] if probe else []
        found, _ = mutants(self._prefix(thread, [op, *later], probe), "runtime")
        return [m for m in found if owner_of(m.op) in fresh or m.op.startswith(format_ref(thread, position) + ".")]

    def _wait_candidates(self, thread: str, position: int, ops: list[ir.HostOp]) -> list:
        """Dropping the wait that ends `ops` (at `position`), where it alone orders device work
        before the probe: any host access to host-visible memory."""
        from . import mutants

        probe = [ir.HostAccess(kind, b["id"], 0, b["size"]) for kind in ("host_read", "host_write")
                 for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE]
        found, _ = mutants(self._prefix(thread, [*ops, *probe]), "runtime")
        return [replace(m, targets=("war", *m.targets)) if any(h[0] == "war" for h in m.predicted) else m
                for m in found if m.op == format_ref(thread, position) and m.operator == "drop_host_wait"]

    def _apply(self, thread: str, position: int, m) -> ir.HostOp | None:
        """Run the mutant's version of the op: its command buffer, its submit, or nothing."""
        changed = _changed(m, thread, position)
        if isinstance(changed, ir.CommandBuffer):
            self.rt.load_command_buffer(changed)
            return m.stream.index.threads[thread].ops[position]
        return changed


def _changed(m, thread: str, position: int) -> ir.CommandBuffer | ir.HostOp | None:
    """What the mutant changes: a command buffer, or its version of the op at thread[position] (None: dropped)."""
    owner = owner_of(m.op)
    if owner in m.stream.index.command_buffers:
        return m.stream.index.command_buffers[owner]
    return None if m.operator == "drop_host_wait" else m.stream.index.threads[thread].ops[position]


def _transplant(whole: ir.Stream, m, thread: str, position: int) -> tuple[ir.Stream, dict]:
    """The whole recorded stream with the mutant's change (found on a prefix) made, and its RefMap."""
    from . import operators as o

    changed = _changed(m, thread, position)
    if isinstance(changed, ir.CommandBuffer):
        return o.with_command_buffer(whole, changed), m.refmap
    if changed is None:
        return o.drop_host_op(whole, thread, position)
    return o.replace_host_op(whole, thread, position, changed)


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
    from . import TARGETS

    parser = argparse.ArgumentParser(prog="python -m vkverify.mutations.live",
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
