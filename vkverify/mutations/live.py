"""Runtime mutation: a Runtime hook (VKVERIFY_HOOKS=vkverify.mutations.live:mutator) that, under
VKVERIFY_RUNTIME_MUTATE (a Selection as JSON, see environment()), drops or weakens load-bearing
synchronizations of one target as the program records and executes them: the k-th candidate of a
test, or every candidate of one call site (the program's file:line, `source`); in list mode it
appends every candidate to a file and mutates nothing. Stream mutants (VKVERIFY_MUTATE, for a
command given with streams) are another variable: the command's own Runtime does not obey them.

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
- a barrier into the host stage that a submit records for the first time (target raw): the probe
  is the device idle, then a host_read of every host-visible buffer its command buffers access.
- a flush (target host; probe: a later submit that reads and writes the flushed bytes), an
  invalidate (host; a host_read of its bytes) and a host semaphore signal (semaphore; a later
  submit that waits for it and reads and writes every host-visible buffer): dropping each.
Not mutated here: fence resets (reset_fence_before_wait would run two ops for one), keepalive
moves (they move an op before one already run), and the uploader's other waits (finish, failures).

The probe only numbers candidates. A list run keeps, when the Runtime closes, those whose
mutation still makes the model find a new hazard of their target in the whole recorded stream:
load-bearing for what the program did next, not for the probe. A landing barrier that the next
slot's barrier, a fence wait or a semaphore makes redundant, or a wait that protects nothing
the program then touches, is therefore never a candidate (never a survivor either).

The mutation is recorded as well as executed, so the runtime's stream (and online checking)
shows the mutant. Candidates are numbered per target and per `where` (the pytest test id, or the
runtime's name outside pytest) in the order they are found: the same in the list run and in each
mutated run because both run the same test up to the mutated operation, whichever process (a
pytest-xdist worker) runs it; a mutated run analyses nothing outside its own test (for a call site,
only the ops of that line). A list line is a JSON object: a candidate (k, target, operator, op,
where, source, label, description; one line per target of a candidate of several), a runtime that
opened ({"runtime", "where"}), or the user files the process imported ({"imports"}, at each
Runtime's close: the cache's key, gate.py).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, replace

from ..model import from_dict, ir
from ..model.dump import host_op_to_dict
from ..model.refs import format_ref, owner_of, split_ref, without_submit

ENV = "VKVERIFY_RUNTIME_MUTATE"
HOOK = "vkverify.mutations.live:mutator"
HOST_WAITS = (ir.WaitFences, ir.WaitSemaphores, ir.QueueWaitIdle, ir.DeviceWaitIdle)
DROPPED = ("drop_host_wait", "drop_flush", "drop_invalidate", "drop_signal")  # the operators that drop a host op
HOST_VISIBLE = ("host_coherent", "host_cached", "device_host_visible")
PROBE = "vkverify.probe"  # the probe's command buffer and abstract shader (one read_write binding)

_counts: dict[tuple[str, str], int] = {}  # (where, target) -> candidates found so far in this process


@dataclass(frozen=True)
class Selection:
    """Which mutant a process runs: `target` "list" (write candidates to `file`), or a target with
    `where` and either `k` (one candidate) or `site` (every candidate of one call site, site())."""
    target: str
    where: str = ""
    k: int | None = None
    site: tuple[str, str, str, str] | None = None
    file: str = ""


def environment(chosen: Selection) -> dict[str, str]:
    """The variables that make a command's Runtimes run `chosen`."""
    return {ENV: json.dumps(asdict(chosen)), "VKVERIFY_HOOKS": HOOK}


def selection() -> Selection | None:
    """VKVERIFY_RUNTIME_MUTATE parsed; None when unset. ValueError names a malformed value."""
    spec = os.environ.get(ENV)
    if not spec:
        return None
    from . import TARGETS
    try:
        fields = json.loads(spec)
        chosen = Selection(**{**fields, "site": tuple(fields["site"]) if fields.get("site") else None})
    except (ValueError, TypeError, KeyError):
        chosen = None
    if chosen is None or not (bool(chosen.file) if chosen.target == "list" else chosen.target in TARGETS and
                              bool(chosen.where) and (chosen.k is None) != (chosen.site is None)):
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
        if chosen.target == "list":
            _append(chosen.file, {"runtime": rt.name, "where": self.where})

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
        if chosen.where != self.where:
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
        """The op to record and run instead of `op` (None: drop it)."""
        if os.environ.get("PYTEST_XDIST_WORKER") and self.where != self._first:
            raise RuntimeError(f"runtime mutation: a Runtime opened in {self._first} serves {self.where} under "
                               "pytest-xdist, where which tests ran before in the worker changes what it records: "
                               "give each test its own Runtime, or run the command without -n")
        if self._skips(op):
            return op
        # Waits give only fence (and war) candidates and submits none: the numbering of the other targets
        # does not need what it does not count.
        waits = self.chosen.target in ("list", "fence", "war")
        position = len(self.rt.threads.get(thread, []))
        if isinstance(op, ir.Submit):
            found = self._submit_candidates(thread, position, op) if self.chosen.target != "fence" else []
        elif isinstance(op, ir.SignalSemaphore) and self.chosen.target in ("list", "semaphore") or \
                isinstance(op, ir.HostAccess) and op.op in ("flush", "invalidate") and self.chosen.target in ("list", "host"):
            found = self._host_op_candidates(thread, position, op)
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
                elif target == self.chosen.target and (k == self.chosen.k or
                                                       site(m.operator, m.op, source, label) == self.chosen.site):
                    return self._apply(thread, position, m)
        return op

    def close(self) -> None:
        """List mode, at the Runtime's close: write the candidates the whole recorded stream bears out,
        and the user files imported so far."""
        listed, self._listed = self._listed, []
        if self.chosen.target != "list":
            return
        _append(self.chosen.file, {"imports": user_files()})
        if not listed:
            return
        from .generate import borne_out, hazards, new_hazards

        whole = self.rt.stream()
        known = hazards(whole)
        targets = {}  # id(mutant) -> its targets in the whole stream
        for k, target, m, thread, position, source, label, where in listed:
            if id(m) not in targets:
                targets[id(m)] = borne_out(m, new_hazards(*_transplant(whole, m, thread, position), known))
            if target in targets[id(m)]:
                _append(self.chosen.file, {"k": k, "target": target, "operator": m.operator, "op": m.op,
                                           "where": where, "source": source, "label": label,
                                           "description": m.description})

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
        found = [m for m in found if owner_of(m.op) in fresh or m.op.startswith(format_ref(thread, position) + ".")]
        return found + self._host_barrier_candidates(thread, op, fresh, touched, found)

    def _host_barrier_candidates(self, thread: str, op: ir.Submit, fresh: set[str], touched: list[str],
                                 found: list) -> list:
        """The mutants of the barriers into the host stage that `op` records for the first time, where
        they alone make a device write available to a host read once the device is idle (the probe:
        the submit's probe stands for device work, which such a barrier does not order)."""
        from . import mutants

        barriers = {format_ref(c, i) for c in fresh for i, cmd in enumerate(self.rt._commands(c))
                    if isinstance(cmd, ir.Barrier) and "host" in cmd.dst_stage}
        visible = {b["id"]: b["size"] for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE}
        reads = [ir.HostAccess("host_read", b, 0, visible[b]) for b in touched if b in visible]
        if not barriers or not reads:
            return []
        idle = ir.DeviceWaitIdle(self.rt.doc["devices"][0]["id"])
        more, _ = mutants(self._prefix(thread, [op, idle, *reads]), "runtime")
        known = {(m.op, m.operator) for m in found}
        return [m for m in more if str(split_ref(m.op)[0]) in barriers and (m.op, m.operator) not in known]

    def _wait_candidates(self, thread: str, position: int, ops: list[ir.HostOp]) -> list:
        """Dropping the wait that ends `ops` (at `position`), where it alone orders device work
        before the probe: any host access to host-visible memory."""
        from . import mutants

        probe = [ir.HostAccess(kind, b["id"], 0, b["size"]) for kind in ("host_read", "host_write")
                 for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE]
        found, _ = mutants(self._prefix(thread, [*ops, *probe]), "runtime")
        return [replace(m, targets=("war", *m.targets)) if any(h[0] == "war" for h in m.predicted) else m
                for m in found if m.op == format_ref(thread, position) and m.operator == "drop_host_wait"]

    def _host_op_candidates(self, thread: str, position: int, op: ir.HostAccess | ir.SignalSemaphore) -> list:
        """Dropping a flush, an invalidate or a host semaphore signal, where it alone orders the probe
        after it: a device access of the flushed bytes; a host read of the invalidated ones; a submit
        that waits for the signal and accesses every host-visible buffer."""
        from . import mutants

        queue = self.rt.doc["devices"][0]["queues"][0]["id"]
        if isinstance(op, ir.HostAccess) and op.op == "invalidate":
            later, probe = [ir.HostAccess("host_read", op.buffer, op.offset, op.size)], None
        else:
            ranges = [(op.buffer, op.offset, op.size)] if isinstance(op, ir.HostAccess) else \
                [(b["id"], 0, b["size"]) for b in self.rt.doc["buffers"] if b.get("memory") in HOST_VISIBLE]
            probe = [{"cmd": "dispatch", "shader": PROBE,
                      "bindings": [{"buffer": b, "offset": offset, "size": size, "access": "read_write"}]}
                     for b, offset, size in ranges]
            waits = (ir.SemaphoreOp(op.semaphore, op.value, frozenset({"all_commands"})),) \
                if isinstance(op, ir.SignalSemaphore) else ()
            later = [ir.Submit(queue, (ir.Batch(waits, (PROBE,) if probe else ()),))]
        found, _ = mutants(self._prefix(thread, [op, *later], probe), "runtime")
        return [m for m in found if m.op == format_ref(thread, position) and m.operator in DROPPED]

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
    return None if m.operator in DROPPED else m.stream.index.threads[thread].ops[position]


def _transplant(whole: ir.Stream, m, thread: str, position: int) -> tuple[ir.Stream, dict]:
    """The whole recorded stream with the mutant's change (found on a prefix) made, and its RefMap."""
    from . import operators as o

    changed = _changed(m, thread, position)
    if isinstance(changed, ir.CommandBuffer):
        return o.with_command_buffer(whole, changed), m.refmap
    if changed is None:
        return o.drop_host_op(whole, thread, position)
    return o.replace_host_op(whole, thread, position, changed)


def _append(path: str, line: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


def user_files() -> list[str]:
    """The Python files this process imported that are the user's: outside the interpreter's
    prefixes (the standard library, installed packages) and outside vkverify."""
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, own})
    found = {os.path.abspath(f) for f in (getattr(m, "__file__", None) for m in list(sys.modules.values())) if f}
    return sorted(f for f in found if not f.startswith(prefixes) and os.path.isfile(f))
