"""The checker's state over a runtime's recorded stream, kept between ops, and the online check: a
hook (the runtime's hooks protocol: `before(thread, op)`, `close()`) that checks each submit, host
read and host write with everything recorded before it and raises HazardError before it runs.

Where a hazards file is named (VKVERIFY_HAZARDS, which the mutation gate sets for each mutant's run)
the check writes each HazardError to it as a JSON line and lets the op run: the program's own
assertions then decide whether it fails, and the gate reads from the file whether the check saw the
mutant. A HazardError raised all the same (a mutant's dropped signal leaves a wait blocked) is
written too, marked raised.
"""

from __future__ import annotations

import json

from ..check.expect import suppress
from ..model import from_dict, ir
from ..model.dump import host_op_to_dict
from ..model.files import append_line
from .errors import HazardError
from .stream_record import StreamRecord

__all__ = ["HAZARDS", "ONLINE_KINDS", "OnlineCheck"]

HAZARDS = "VKVERIFY_HAZARDS"  # the file the check writes its hazards to, going on (vkverify mutate sets it)

# Findings that a partial stream cannot produce by being partial.
ONLINE_KINDS = frozenset({"raw", "war", "waw", "use_after_destroy", "uninitialized_read", "ownership_missing",
                          "binary_semaphore_misuse", "timeline_not_increasing", "fence_misuse", "event_race"})


class OnlineCheck:
    """check.incremental.Incremental over `record`, fed the ops recorded since it was last asked
    (happens_before); as a hook, the online check. It costs the op, not the stream recorded so far."""

    def __init__(self, record: StreamRecord, hazards: str | None = None) -> None:
        self.record = record
        self.hazards = hazards  # a file: each hazard is written to it, not raised
        self._hb = None  # check.incremental.Incremental over the recorded stream
        self._fed: dict[str, int] = {}  # thread -> how many of its recorded ops it was fed
        self._resources: tuple = ()  # how many buffers, semaphores, fences and shaders it knows
        self._reported = 0  # a mark of its findings: those before it were raised already

    def before(self, thread: str, op: ir.HostOp) -> ir.HostOp:
        """Check a submit, host read or host write before it is recorded and run."""
        if isinstance(op, ir.Submit) or isinstance(op, ir.HostAccess) and op.op in ("host_read", "host_write"):
            with self.record.lock:
                self._check(self.record.next_ref(thread), thread, host_op_to_dict(op))
        return op

    def close(self) -> None:
        """Nothing to release: the state is rebuilt from the record when next asked."""

    def _check(self, ref: str, thread: str, entry: dict) -> None:
        """Check this op after the stream recorded so far, on the incremental state of it; raise on a
        finding not raised before."""
        from ..check import exact

        hb = self.happens_before()
        loaded = self.record.loaded({thread: [entry]})
        hb.feed(thread, loaded.threads[0].ops[0], loaded.command_buffers)
        self._fed[thread] = len(self.record.threads.get(thread, ())) + 1
        new = [f for f in hb.findings_since(self._reported) if f.kind in ONLINE_KINDS]
        self._reported = hb.mark()
        if new:
            stream = from_dict(self.record.document({thread: self.record.threads.get(thread, []) + [entry]}),
                               "<runtime>")
            new = list(suppress(stream, exact.refine(stream, new, hb.walk.shared)).kept)
        if new:
            error = HazardError(ref, new, {r: line for r in (new[0].first, new[0].second, ref)
                                           if r and (line := stream.index.source(r))})
            if self.hazards is not None:  # the op runs and is recorded: the state holds it rightly
                self.noted(error, raised=False)
                return
            # It holds the op, which is not recorded: built again from the stream when next asked, with what it
            # finds then taken as raised.
            self._hb, self._reported = None, None
            raise error

    def noted(self, error: HazardError, raised: bool) -> HazardError:
        """`error`, written first to the hazards file where one is named; `raised`: the program sees it."""
        if self.hazards is not None:
            append_line(self.hazards, json.dumps({"hazard": str(error), "raised": raised}))
        return error

    def happens_before(self):
        """The checker's state over everything recorded so far (check/incremental.py), fed the ops recorded
        since the last call. Ops recorded by several threads between two calls are fed thread by thread."""
        from ..check.incremental import Incremental

        record = self.record
        with record.lock:
            resources = (len(record.doc["buffers"]), len(record.doc["semaphores"]), len(record.doc["fences"]),
                         len(record.doc["shaders"]))
            rebuilt = self._hb is None
            if rebuilt:
                self._hb, self._fed = Incremental(record.loaded({})), {}
            elif resources != self._resources:
                self._hb.add_resources(record.loaded({}))
            self._resources = resources
            new = {t: ops[self._fed.get(t, 0):] for t, ops in record.threads.items()
                   if len(ops) > self._fed.get(t, 0)}
            if new:
                loaded = record.loaded(new)
                for t in loaded.threads:
                    for op in t.ops:
                        self._hb.feed(t.id, op, [loaded.index.command_buffers[cb] for cb in ir.submitted(op)])
                    self._fed[t.id] = len(record.threads[t.id])
            if rebuilt:
                self._reported = self._hb.mark() if self._reported is None else 0
            return self._hb

    def findings(self) -> list:
        """What `check(record.stream())` finds, from the incremental state, less what a `# vkverify: ignore[kind]`
        comment on a recording line accepts (check/expect.py)."""
        from ..check import exact

        hb = self.happens_before()
        findings = hb.findings_at_end()
        if not findings and not hb.walk.shared:
            return findings
        stream = self.record.stream()  # exact.refine reads the whole stream, where it has anything to decide
        return list(suppress(stream, exact.refine(stream, findings, hb.walk.shared)).kept)
