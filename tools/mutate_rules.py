"""A mutation run over the checker's rule code (issue 26): one-line bugs planted one at a time.

    python tools/mutate_rules.py [--jobs 2] [--only SUBSTRING] [--ids 3,17] [--tests "tests/test_rules.py ..."]

Each mutant replaces one exact line fragment in scopes, barriers, rules, the stage table, the access state
(access_state.py's detection), the walk, the range map or the reference's own scope reading with a realistic slip
(a comparison off by one, an operand dropped, a scope widened). It is applied to a copy of the package, the
tests and the examples in a temporary directory, where the fast checker tests then run (pytest puts that
directory first on sys.path, ahead of the editable install). The run prints each mutant killed or SURVIVED
and the share killed; the exit status is 1 below 98%. A fragment that no longer matches its file is reported
as stale, not run: keep the list in step with the code.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The fast part of the checker's tests, the quickest killers first (pytest -x stops at the first failure).
TESTS = ["tests/test_rules.py", "tests/test_finding_kinds.py", "tests/test_corpus.py::test_stream_agrees_with_expect",
         "tests/test_explain.py", "tests/test_reference.py", "tests/test_semaphores.py", "tests/test_readings.py"]
ENV = {"VKVERIFY_DIFFERENTIAL_EXAMPLES": "120"}

# (file under vkverify/, the fragment, its mutation[, why the mutant is equivalent: no test can kill it])
MUTANTS = [
    # scopes: stage expansion and access scopes (7.6.1, 7.1.2)
    ("check/scopes.py", "for s in explicit_stages(stage) for a", ("for s in explicit_stages(stage) | "
     "second_execution_scope(stage) for a")),
    ("check/scopes.py", "for s in explicit_stages(stage) for a", "for s in first_execution_scope(stage) for a"),
    ("check/scopes.py", "_EARLIER = {s: earlier & EXECUTING_STAGES", "_EARLIER = {s: earlier"),
    ("check/scopes.py", "{t for t, earlier in _ORDERED.items() if s in earlier}", ("{t for t, earlier in "
     "_ORDERED.items() if s in earlier or t in earlier}")),
    ("check/scopes.py", "return frozenset().union(*(_EARLIER[s] for s in explicit_stages(src_stage)))",
     "return frozenset().union(*(_LATER[s] for s in explicit_stages(src_stage)))"),
    ("check/scopes.py", "return frozenset().union(*(_LATER[s] for s in explicit_stages(dst_stage)))",
     "return frozenset().union(*(_EARLIER[s] for s in explicit_stages(dst_stage)))"),
    ("check/scopes.py", "return scope | HOST if all_commands_includes_host and scope >= COMMAND_STAGES else scope",
     "return scope | HOST if scope >= COMMAND_STAGES else scope"),
    ("check/scopes.py", "return scope | HOST if all_commands_includes_host and scope >= COMMAND_STAGES else scope",
     "return scope"),
    ("check/scopes.py", "return frozenset().union(*(ACCESS_SETS[n] for n in names))",
     "return frozenset(names)"),
    # rules
    ("check/rules.py", "return bool(earlier_second_scope & later_first_scope)", "return bool(earlier_second_scope)"),
    ("check/rules.py", "return bool(earlier_second_scope & later_first_scope)",
     "return bool(earlier_second_scope | later_first_scope)"),
    ("check/rules.py", "if write not in src_access:", "if write in src_access:"),
    ("check/rules.py", "return None if stage in src_stages else \"src_stage\"", "return None"),
    ("check/rules.py", "return in_first_access_scope(\"host\", \"host_write\", src_stages, src_access)",
     "return \"host\" in src_stages", ("a filter only: the engine's host-write proxies and hb.Model's host-domain "
     "path are then made available by apply_barrier's in_first_access_scope(host, host_write) alone")),
    ("check/rules.py", "return same_queue and stage in first_scope", "return same_queue"),
    ("check/rules.py", "return same_queue and stage in first_scope", "return stage in first_scope"),
    ("check/rules.py", "return src_family is not None and src_family != dst_family", "return src_family is not None"),
    # barriers: coverage and apply_barrier (7.1, 7.7.2)
    ("check/barriers.py", "entry.hi < hi:", "entry.hi < hi - 1:"),
    ("check/barriers.py", "if entry.lo > lo or", "if entry.lo > lo + 1 or"),
    ("check/barriers.py", "entry.hi <= lo or entry.lo >= hi", "entry.hi < lo or entry.lo >= hi"),
    ("check/barriers.py", "entry.hi <= lo or entry.lo >= hi", "entry.hi <= lo or entry.lo > hi"),
    ("check/barriers.py", "if entry.root != root or", "if"),
    ("check/barriers.py", "return FULL if buffer is None else OWN if entry.buffer == buffer else ALIAS",
     "return FULL if buffer is None else OWN"),
    ("check/barriers.py", "chained = chains(state.chain, e.src_exec)", "chained = bool(state.chain)"),
    ("check/barriers.py", "if stage not in e.src_exec and not chained:", "if not chained:"),
    ("check/barriers.py", "chain = chain | e.dst_exec", "chain = e.dst_exec"),
    ("check/barriers.py", "if write is None or cover in (NONE, PARTIAL):", "if write is None or cover == NONE:",
     ("no caller passes PARTIAL: BarrierLog._step splits the range at the entry's ends first, hb.Model cuts its "
     "segments at every barrier's")),
    ("check/barriers.py", "if chains(state.released, e.src_exec) or (", "if state.available or ("),
    ("check/barriers.py", "cover != ALIAS and in_first_access_scope(", "in_first_access_scope("),
    ("check/barriers.py", "released = released | e.dst_exec", "released = released"),
    ("check/barriers.py", "if chains(state.released, e.src_exec):", ("if cover not in (NONE, PARTIAL) and "
     "chains(state.released, e.src_exec):")),
    ("check/barriers.py", "return (stage, access) in state.visible or (stage, access, buffer) in state.visible",
     "return (stage, access) in state.visible"),
    ("check/barriers.py", "through = None if cover == FULL else e.buffer", "through = None"),
    ("check/barriers.py", "found = not isinstance(after, list) and later_stage in after.chain and",
     "found = not isinstance(after, list) and"),
    ("check/barriers.py", "for x in (e.lo, e.hi) if lo < x < hi})", "for x in (e.lo, e.hi) if lo <= x < hi})"),
    ("check/barriers.py", "i = bisect_right(positions, pos)", "i = bisect_right(positions, pos) + 1"),
    # the stage table (7.6.1)
    ("model/stages.py", "_stage(\"compute_shader\", 0x800, 0x800, earlier={TOP_OF_PIPE, \"draw_indirect\"}),",
     "_stage(\"compute_shader\", 0x800, 0x800, earlier={TOP_OF_PIPE}),"),
    ("model/stages.py", "_stage(\"clear\", 0x8_0000_0000, None, earlier={TOP_OF_PIPE}),",
     "_stage(\"clear\", 0x8_0000_0000, None, earlier={TOP_OF_PIPE, \"copy\"}),"),
    ("model/stages.py", "_stage(BOTTOM_OF_PIPE, 0x2000, 0x2000, earlier={TOP_OF_PIPE, *_COMMAND}),",
     "_stage(BOTTOM_OF_PIPE, 0x2000, 0x2000, earlier={TOP_OF_PIPE}),"),
    ("model/stages.py", "frozenset({TOP_OF_PIPE, *_COMMAND, BOTTOM_OF_PIPE})),",
     "frozenset({TOP_OF_PIPE, *_COMMAND, BOTTOM_OF_PIPE, \"host\"})),"),
    # the access state (access_state.py: detection; rangemap.py: update) and the walk's hazard naming
    ("check/access_state.py", "if w is not None and w.uid != x.uid:\n                self._waw",
     "if w is not None:\n                self._waw",
     ("a command's accesses to one memory are all compared before any is recorded (_run_accesses, sharing), others "
     "touch distinct memories: seg.write is never the command's own while it is compared")),
    ("check/access_state.py", "if r.uid == x.uid:\n                continue",
     "if r.uid == x.uid:\n                break",
     "a command's own reads are appended last to seg.reads, before its write is compared: nothing follows them"),
    ("check/access_state.py", "if x.stage not in s.chain or (need and not all(", "if (need and not all("),
    ("check/access_state.py", "if clock[lane] >= least:\n                return []", ("if clock[lane] > least:\n"
     "                return []")),
    ("check/access_state.py", "if reached is not None and clock[self.agents[w.agent].memory_lane] > reached:",
     "if reached is not None and clock[self.agents[w.agent].memory_lane] >= reached:"),
    ("check/engine.py", "return clock[destroyed.agent] > destroyed.pos + 1",
     "return clock[destroyed.agent] > destroyed.pos", ("a clock entry of the destroying thread reads pos + 1 only "
     "after an acquire of its op at pos, the destroy itself, which releases nothing")),
    ("check/rangemap.py", "self.reads = (*(r for r in reads if r.agent != x.agent or r.stage != x.stage), x)",
     "self.reads = (*(r for r in reads if r.agent != x.agent), x)"),
    ("check/rangemap.py",
     "if not reads or len(reads) == 1 and reads[0].agent == x.agent and reads[0].stage == x.stage:",
     "if not reads or len(reads) == 1 and reads[0].agent == x.agent:"),
    ("check/access_state.py", "self.host_visibility(w, x, root, seg.lo, seg.hi, every=True)[1]",
     "self.covering_release(w)"),
    ("check/access_state.py", "return all(x.stage in s.chain for _, _, s in states)", "return True"),
    ("check/agents.py", "        if host_ops:\n", "        if True:\n"),
    ("check/reference.py", "(\"wait\", \"submission\") if readings.host_barrier_after_wait else (\"submission\",)",
     "(\"wait\", \"submission\")"),
    ("model/stages.py", "AccessType(\"shader_read\", 0x20, 0x20, frozenset({\"shader_storage_read\"})),",
     "AccessType(\"shader_read\", 0x20, 0x20, frozenset({\"shader_storage_read\", \"uniform_read\"})),"),
    ("check/access_state.py", "if seg.invalidated.get(x.agent, -1) < waited else []",
     "if seg.invalidated.get(x.agent, -1) < waited - 1 else []"),
    ("check/access_state.py", ("if x.family is not None and buf.sharing == \"exclusive\" and seg.owner not in (None, "
     "x.family):"), "if x.family is not None and seg.owner not in (None, x.family):"),
    ("check/engine.py", "racing = e.agent != x.agent and self.state.racing(e, x)", "racing = self.state.racing(e, x)"),
    # the range map
    ("check/rangemap.py", "if seg.lo == at or at >= seg.hi:", "if seg.lo == at or at > seg.hi:",
     ("at == seg.hi happens only at the memory's end (elsewhere the next segment starts there): the split adds an "
     "empty segment that span() never returns")),
    ("check/rangemap.py", "j = bisect_right(self.starts, hi - 1)", "j = bisect_right(self.starts, hi)"),
    ("check/rangemap.py", ("i = bisect_right(self.starts, lo) - 1\n        if self.segments[i].lo == lo and "
     "self.segments[i].hi == hi:"), "i = bisect_right(self.starts, lo) - 1\n        if self.segments[i].lo == lo:"),
    ("check/rangemap.py", "if fresh and fresh[-1].owner == kept:", "if fresh:"),
    ("check/rangemap.py", ("self.write, self.reads, self.initialized, self.flushed, self.released_to, self.atomics = "
                           "\\\n            write, (), True, None, None, ()"),
     ("self.write, self.initialized, self.flushed, self.released_to, self.atomics = \\\n"
      "            write, True, None, None, ()")),
    # the walk
    ("check/walk.py", "i = bisect_left(values, value)\n            if i == len(values):",
     "i = bisect_left(values, value + 1)\n            if i == len(values):"),
    ("check/walk.py", "if value <= self.index.semaphores[semaphore].initial:",
     "if value < self.index.semaphores[semaphore].initial:"),
    ("check/walk.py", "i = bisect_left(history, value, key=lambda s: s[0])",
     "i = bisect_left(history, value + 1, key=lambda s: s[0])"),
    ("check/walk.py", "if value <= current:", "if value < current:"),
    # the agents' clocks and the schedule's host waits (7.4.1 signal order, 5.3.4 idle waits, 7.1.3 host threads)
    ("check/agents.py", "clock = list(map(max, clock, earlier))", "clock = list(clock)"),
    ("check/schedule.py", "if (at < pc if agent == t.index else t.clock[agent] > at)",
     "if (at < pc if agent == t.index else t.clock[agent] >= at)"),
    ("check/rules.py", "return not same_thread and memory == \"host_cached\" and not host_threads_coherent",
     "return memory == \"host_cached\" and not host_threads_coherent"),
    # the reference's own reading of the scopes (the oracle)
    ("check/reference.py", "if any(s == t or s in STAGE[t].earlier for t in named))",
     "if any(s in STAGE[t].earlier for t in named))"),
    ("check/reference.py", "return frozenset((s, a) for s in _named(stage, STAGE) for a in _named(access, ACCESS))",
     "return frozenset((s, a) for s in first_scope(stage) for a in _named(access, ACCESS))"),
]


def run(index: int, where: str, old: str, new: str, tests: list[str]) -> tuple[int, str]:
    """0 killed, 1 survived, 2 stale (the fragment is not in the file once)."""
    with tempfile.TemporaryDirectory() as tmp:
        for part in ("vkverify", "tests", "examples"):
            shutil.copytree(ROOT / part, Path(tmp) / part, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(ROOT / "pyproject.toml", tmp)
        path = Path(tmp) / "vkverify" / where
        text = path.read_text()
        if old and text.count(old) != 1:
            return 2, ""
        path.write_text(text.replace(old, new))
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                              cwd=tmp, capture_output=True, text=True, check=False, env={**os.environ, **ENV})
        last = done.stdout.strip().splitlines()[-1:] or [""]
        return (0 if done.returncode else 1), last[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", default="", help="only mutants whose file or fragment holds this")
    parser.add_argument("--ids", default="", help="only these mutants (their numbers, comma-separated)")
    parser.add_argument("--tests", default=" ".join(TESTS))
    args = parser.parse_args()
    ids = {int(i) for i in args.ids.split(",") if i}
    chosen = [(i, m) for i, m in enumerate(MUTANTS) if (args.only in m[0] or args.only in m[1])
              and (not ids or i in ids)]
    status, last = run(-1, "check/rules.py", "", "", args.tests.split())  # no mutation: the copy must pass
    if status != 1:
        print(f"the unmutated copy fails its tests ({last}): no mutant run")
        return 2
    counts = [0, 0, 0, 0, 0]
    with ThreadPoolExecutor(args.jobs) as pool:
        for (i, (where, old, new, *why)), (status, last) in zip(chosen, pool.map(
                lambda im: run(im[0], *im[1][:3], args.tests.split()), chosen)):
            # A survivor judged equivalent counts apart; an "equivalent" mutant killed means the judgement is wrong.
            why = why[0] if why else ""
            status = 3 if status == 1 and why else 4 if status == 0 and why else status
            counts[status] += 1
            verdict = ("killed", "SURVIVED", "stale", "equivalent", "KILLED-EQ")[status]
            print(f"{i:3} {verdict:10} {where}: {old.splitlines()[0][:60]!r} -> {new.splitlines()[0][:60]!r}  {last}"
                  + (f"\n               ({why})" if status in (3, 4) else ""), flush=True)
    ran = counts[0] + counts[1]
    share = counts[0] / ran if ran else 0.0
    print(f"{ran + counts[3] + counts[4]} mutants run: {counts[0]} killed, {counts[1]} survived, {counts[3]} "
          f"equivalent (survived, with the reason above): {share:.1%} of the non-equivalent killed; "
          f"{counts[4]} judged equivalent but killed; {counts[2]} stale")
    return 0 if share >= 0.98 and not counts[2] and not counts[4] else 1


if __name__ == "__main__":
    sys.exit(main())
