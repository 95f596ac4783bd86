"""`vkverify mutate -- CMD`: the command's own Runtimes mutate themselves (live.py), once per mutant.

CMD runs once listing the candidates (it must pass), then once per mutant, its online check writing
the hazards it finds to a file instead of raising (kills.py: what killed the mutant); a hazard, a
non-zero exit or a timeout kills. Candidates at one call site (the program's file:line, operator and
label) fold into one mutant that changes every iteration of it in every test, unless `per_iteration`
(one mutant per candidate of one test).

Forks (forks.py): where the listing run loaded the pytest plugin and opened every Runtime in a test,
each mutant's run is forked from one pytest process of the command that collected the tests once,
started while the listing run runs; else (or with `fork` off) each is a fresh process.

Test selection: where the listing run loaded the pytest plugin, it names the tests it collected, and
each Runtime the tests whose ops it ran (live.py); a mutant's run then keeps only the tests that
reached its call site, with every test that shares a Runtime with one of them (what ran before in a
Runtime shapes what the site's op sees), the plugin deselecting the others (Coverage.selected). A
site reached outside any test (a Runtime opened at import), or a command whose listing run did not
load the plugin, runs the whole command (said once).

The cache keeps the listing under a key of vkverify's code, the command, the working directory and
a hash of the user files the command imported (live.user_files), and each verdict under the same
first three, the mutant's selection and a hash of the files that reach its call site
(Coverage.files): the files of the tests it runs, the user files on the call stack of any op those
tests ran, and every conftest.py imported. An edit elsewhere lists again (one run) but keeps the
verdict; a rerun with nothing changed runs nothing. Code a test reaches only as data (a module whose
constants it reads, no op issued from it) is outside the key: clear the cache after such an edit.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields, replace

from ..errors import VkverifyError
from .formats import COMMAND
from .kills import kill_detail, killed_by, read_hazards
from .live import Selection, environment, site
from .forks import Runs
from .processes import CLEAN_TIMEOUT_S, Interrupted, Processes
from .readers import CleanRunFailed, MutantVerdict
from .runner import Cache, Outcome, Stats, cache_key, files_hash
from .runner import shard as shard_of

__all__ = ["Candidate", "Coverage", "Listing", "NoMutants", "RuntimeMutant", "chosen", "listing", "no_runtime_reason",
           "read_list", "run_command"]

TIMEOUT_FACTOR, TIMEOUT_FLOOR_S = 10.0, 30.0  # a mutant that hangs is killed; start-up noise needs a floor


class NoMutants(VkverifyError):
    """The command gave nothing to mutate; the message says why. Seen by the user of
    `vkverify mutate -- CMD` (exit 2) and of run_command()."""


@dataclass(frozen=True)
class Candidate:
    """One line of a list run (live.Mutator.close)."""
    k: int
    target: str
    operator: str
    op: str
    where: str
    source: str | None
    label: str | None
    description: str

    @property
    def site(self) -> tuple[str, str, str, str]:
        return site(self.operator, self.op, self.source, self.label)

    @classmethod
    def parse(cls, entry) -> Candidate:
        """A candidate from its JSON object; ValueError unless it has every field, each of its type."""
        if not isinstance(entry, dict) or entry.keys() != _FIELDS.keys() or \
                not all(isinstance(entry[name], types) for name, types in _FIELDS.items()):
            raise ValueError("not a candidate")
        return cls(**entry)


_FIELDS = {f.name: (int,) if f.name == "k" else (str, type(None)) if f.name in ("source", "label") else (str,)
           for f in fields(Candidate)}


@dataclass(frozen=True)
class RuntimeMutant:
    """What one mutated run changes; read by formats.py as a stream Mutant is (`file` is the test)."""
    id: str
    file: str
    targets: tuple[str, ...]
    operator: str
    op: str
    description: str
    source: str | None
    selection: Selection
    predicted: tuple = ()


@dataclass(frozen=True)
class Coverage:
    """What a listing run tells of the tests: each test the pytest plugin collected and its file (none: the
    command's tests cannot be selected), and per Runtime, by each test it served, the user files on the call
    stacks of the ops it ran (live.stack_files)."""
    tests: dict[str, str] = field(default_factory=dict)
    reached: list[dict[str, list[str]]] = field(default_factory=list)

    def selected(self, wheres: set[str]) -> tuple[str, ...]:
        """The tests a mutant reached in `wheres` runs: those and every test that shares a Runtime with one, in
        the order collected; () (the whole command) where one is no test the plugin collected."""
        keep, grown = set(wheres), True
        while grown:
            more = keep.union(*(r.keys() for r in self.reached if keep & r.keys()))
            grown, keep = more != keep, more
        return tuple(t for t in self.tests if t in keep) if self.tests and keep <= self.tests.keys() else ()

    def files(self, tests: tuple[str, ...], imports: list[str]) -> list[str]:
        """The files that reach a mutant run on `tests` (its cache key): each test's file, the files on the call
        stacks of its ops and every conftest.py imported (its fixtures and hooks shape each test); with no tests
        (the whole command), every user file the command imported."""
        if not tests:
            return imports
        found = {self.tests[t] for t in tests} | {f for r in self.reached for t in tests for f in r.get(t, ())}
        return sorted(found | {f for f in imports if os.path.basename(f) == "conftest.py"})


@dataclass(frozen=True)
class Listing:
    candidates: list[Candidate]
    runtimes: int  # Runtimes the command opened
    imports: list[str]  # the user files it imported
    seconds: float  # the clean run's duration
    skipped: int = 0  # lines of the candidates file that could not be read (warned of)
    coverage: Coverage = field(default_factory=Coverage)
    modules: list[str] = field(default_factory=list)  # the test runner's modules it imported (forks.py warms them)
    outside: list[str] = field(default_factory=list)  # the Runtimes it opened outside any test the plugin collected
    sync_sites: list[list[str]] = field(default_factory=list)  # [kind, file:line] of each synchronization it ran

    @property
    def unneeded(self) -> list[list[str]]:
        """The synchronization call sites no candidate of any target came from: in no run of any test did
        dropping or weakening what they record open a hazard in what the program did next."""
        needed = {c.source for c in self.candidates}
        return [site for site in self.sync_sites if site[1] not in needed]

    @property
    def forkable(self) -> bool:
        """Whether a mutant's run can be forked after collection: the pytest plugin collected the tests and
        every Runtime was opened in one (one opened at collection would be the server's, unmutated)."""
        return bool(self.coverage.tests) and not self.outside


def _strings(value, nested: bool = False) -> bool:
    """Whether `value` is a dict of strings (`nested`: of lists of strings)."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and (isinstance(v, list) and all(isinstance(f, str) for f in v) if nested else
                                isinstance(v, str)) for k, v in value.items())


def read_list(path: str, warn=None) -> Listing:
    """The candidates file of a list run. A line that is not one of live.py's (torn by a process killed
    while writing it, say) is skipped, with a warning through `warn`."""
    candidates, opened, imports, skipped, tests, reached, modules, sites = [], [], set(), 0, {}, [], [], set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                keys = entry.keys() if isinstance(entry, dict) else None
                if keys == {"runtime", "where"} and isinstance(entry["where"], str):
                    opened.append(entry["where"])
                elif keys == {"imports"} and isinstance(entry["imports"], list) \
                        and all(isinstance(i, str) for i in entry["imports"]):
                    imports.update(entry["imports"])
                elif keys == {"tests"} and _strings(entry["tests"]):
                    tests.update(entry["tests"])
                elif keys == {"reached"} and _strings(entry["reached"], nested=True):
                    reached.append(entry["reached"])
                elif keys == {"modules"} and isinstance(entry["modules"], list) \
                        and all(isinstance(m, str) for m in entry["modules"]):
                    modules = entry["modules"]
                elif keys == {"sync_sites"} and _sites(entry["sync_sites"]):
                    sites.update(map(tuple, entry["sync_sites"]))
                else:
                    candidates.append(Candidate.parse(entry))
            except (ValueError, RecursionError):
                skipped += 1
                if warn is not None:
                    warn(f"warning: line {number} of the candidates file is not a candidate (torn?): skipped")
    return Listing(candidates, len(opened), sorted(imports), 0.0, skipped, Coverage(tests, reached), modules,
                   [where for where in opened if where not in tests], [list(site) for site in sorted(sites)])


def _sites(value) -> bool:
    return isinstance(value, list) and all(isinstance(site, list) and len(site) == 2 and
                                           all(isinstance(x, str) for x in site) for site in value)


def _cached_listing(found) -> tuple[Listing, str]:
    """A listing from its cache entry and the hash of its imports then; ValueError unless it has that shape."""
    try:
        listed = Listing([Candidate.parse(c) for c in found["candidates"]], found["runtimes"], found["imports"],
                         found["seconds"], coverage=Coverage(found["tests"], found["reached"]),
                         modules=found["modules"], outside=found["outside"], sync_sites=found["sync_sites"])
        shapes = ((listed.runtimes, int), (listed.seconds, (int, float)), (found["hash"], str))
        names = (listed.imports, listed.modules, listed.outside)
        if all(isinstance(v, t) for v, t in shapes) and _strings(listed.coverage.tests) and \
                all(isinstance(n, list) and all(isinstance(i, str) for i in n) for n in names) and \
                isinstance(listed.coverage.reached, list) and \
                all(_strings(r, nested=True) for r in listed.coverage.reached) and _sites(listed.sync_sites):
            return listed, found["hash"]
    except (KeyError, TypeError):
        pass
    raise ValueError("not a listing")


def chosen(candidates: list[Candidate], target: str, per_iteration: bool = False,
           coverage: Coverage | None = None) -> list[RuntimeMutant]:
    """The mutants of `target` (`all`: each candidate once, under its first target); the candidates at one
    call site fold into one across iterations and tests, unless `per_iteration` (one per candidate of one
    test). Each runs the tests `coverage` says reach it."""
    seen, lines = set(), []
    for c in candidates:
        if target in ("all", c.target) and (c.where, c.op, c.operator) not in seen:
            seen.add((c.where, c.op, c.operator))
            lines.append(c)
    groups: dict[tuple, list[Candidate]] = {}
    for c in lines:
        groups.setdefault((c.where, c.target, c.k) if per_iteration else c.site, []).append(c)
    return [_mutant(cs, per_iteration, coverage or Coverage()) for cs in groups.values()]


def _mutant(cs: list[Candidate], per_iteration: bool, coverage: Coverage) -> RuntimeMutant:
    first = cs[0]
    where = first.source or first.op
    tests = list(dict.fromkeys(c.where for c in cs))  # where the site was reached, in order
    if per_iteration:
        selection = Selection(first.target, first.where, k=first.k, tests=coverage.selected({first.where}))
        name = f"{first.where}::{first.target}:{first.k} {first.operator} {first.op} at {where}"
    else:
        selection = Selection(first.target, site=first.site, tests=coverage.selected(set(tests)))
        name = f"{first.target} {first.operator}{first.site[3]} at {where}" + \
            (f" ({first.label})" if first.label else "")
    times = f" ({len(cs)} iterations listed, the first {first.op})" if len(cs) > 1 else ""
    return RuntimeMutant(name, ", ".join(tests), (first.target,), first.operator, first.op,
                         first.description + times, first.source, selection)


def _key(*parts: str) -> str:
    """A cache key of `parts` and what every run shares: vkverify's code, the working directory and
    the VKVERIFY_ variables (VKVERIFY_CHECK=0 may let a mutant live that the online check kills)."""
    settings = json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith("VKVERIFY_")))
    return cache_key(os.getcwd(), settings, *parts)


def listing(argv: list[str], cache: Cache | None, log, timeout: float = CLEAN_TIMEOUT_S,
            processes: Processes | None = None, alongside=None, fold: str = "") -> tuple[Listing, bool]:
    """(the candidates, whether the cache gave them): the clean run, or the cache's record of it where
    the files it imported are unchanged; `alongside`, given the candidates file, a context the clean run
    runs in (forks.Runs.alongside); `fold`: the target whose call sites are listed once per test
    (Selection.fold), "" for every iteration. CleanRunFailed when the clean run fails or outlasts `timeout`,
    CannotStart when it cannot start."""
    key = "listing-" + _key(json.dumps(argv), fold)
    found = cache.read(key) if cache is not None else None
    if found is not None:
        try:
            cached, imports_hash = _cached_listing(found)
        except ValueError:
            cache.warn(key, "is not a listing; the command lists its candidates again")
        else:
            if files_hash(cached.imports) == imports_hash:
                log(f"listing from the cache ({len(cached.candidates)} candidates)")
                return cached, True
    log(f"listing candidates (unmutated; --timeout {timeout:g} s): {' '.join(argv)}")
    with tempfile.TemporaryDirectory(prefix="vkverify-mutate-") as tmp:
        path = os.path.join(tmp, "candidates.jsonl")
        open(path, "w").close()
        began = time.monotonic()
        try:
            with alongside(path) if alongside is not None else contextlib.nullcontext():
                clean = (processes or Processes()).run(argv, environment(Selection("list", file=path, fold=fold)),
                                                         timeout)
        except subprocess.TimeoutExpired:
            raise CleanRunFailed(f"the command did not finish unmutated within {timeout:g} s (--timeout): "
                                 "no mutant was run") from None
        if clean.returncode != 0:
            tail = "\n  ".join((clean.stdout + clean.stderr).strip().splitlines()[-10:])
            raise CleanRunFailed(f"the command fails unmutated (exit {clean.returncode}):\n  {tail}")
        found = read_list(path, lambda line: print(f"vkverify mutate: {line}", file=sys.stderr))  # -q or not
    result = replace(found, seconds=time.monotonic() - began)
    if cache is not None and not result.skipped:  # a listing that lost lines is not kept: the next run lists again
        cache.write(key, {"candidates": [asdict(c) for c in result.candidates], "runtimes": result.runtimes,
                          "imports": result.imports, "hash": files_hash(result.imports), "seconds": result.seconds,
                          "tests": result.coverage.tests, "reached": result.coverage.reached,
                          "modules": result.modules, "outside": result.outside, "sync_sites": result.sync_sites})
    return result, False


def no_runtime_reason() -> str:
    """Why a command opened no Runtime: no device here, or it never made one."""
    from ..runtime import NoDevice, Runtime

    try:
        Runtime(hooks=()).close()
    except NoDevice as error:
        return f"no Vulkan device: {error}"
    return "the command never opened a vkverify Runtime (nothing to mutate)"


def run_command(argv: list[str], target: str = "all", jobs: int = 1, per_iteration: bool = False,
                cache: Cache | None = None, shard: tuple[int, int] | None = None,
                quiet: bool = False, timeout: float = CLEAN_TIMEOUT_S,
                fork: bool = True) -> tuple[list[Outcome], Stats, list[list[str]]]:
    """Each mutant of the command's runtimes and its verdict, and the synchronization call sites no test needed
    (Listing.unneeded). NoMutants (with the reason) when there
    is none; CleanRunFailed when the command fails unmutated or outlasts `timeout` (its clean run's
    limit), CannotStart when it cannot start; Interrupted on SIGINT or SIGTERM, with the verdicts so far
    (every run killed, those done kept in the cache). With `fork`, the mutants' runs are forked where the
    listing run allows (forks.py)."""
    def log(line: str) -> None:
        if not quiet:
            print(f"vkverify mutate: {line}", file=sys.stderr, flush=True)

    processes = Processes()
    runs = Runs(argv, processes, log)
    with processes.stopped_by_signals():
        try:
            return _run_command(argv, target, jobs, per_iteration, cache, shard, timeout, fork, processes, runs, log)
        finally:
            runs.close()


def _run_command(argv: list[str], target: str, jobs: int, per_iteration: bool, cache: Cache | None,
                 shard: tuple[int, int] | None, timeout: float, fork: bool, processes: Processes, runs: Runs,
                 log) -> tuple[list[Outcome], Stats, list[list[str]]]:
    try:
        found, _ = listing(argv, cache, log, timeout, processes, runs.alongside if fork else None,
                           "" if per_iteration else target)
    except Interrupted as e:
        raise Interrupted(f"{e.why} during the unmutated run: no mutant was run") from None
    runs.serve(found.modules if fork and found.forkable else None)
    if fork and found.coverage.tests and found.outside:
        log(f"each mutant runs in a fresh process of the command: {', '.join(found.outside)} opened outside its tests "
            "(at collection) would be the forking process's, unmutated")
    if not found.runtimes:
        raise NoMutants(no_runtime_reason())
    if not found.coverage.tests:
        log("no test selection: the listing run loaded no vkverify pytest plugin, so each mutant runs the "
            "whole command")
    mutants = chosen(found.candidates, target, per_iteration, found.coverage)
    if not mutants:
        raise NoMutants(f"nothing load-bearing for target {target} in the {found.runtimes} Runtime(s) the "
                        "command opened: no synchronization whose removal the model sees as a new hazard")
    if shard is not None:
        mutants = shard_of(mutants, *shard)
    outcomes = {m.id: Outcome(m) for m in mutants}
    stats = Stats()
    try:
        _judge(argv, mutants, outcomes, stats, jobs, max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * found.seconds),
               found, cache, runs, log)
    except Interrupted as e:
        done = sum(o.judged for o in outcomes.values())
        for o in outcomes.values():
            o.verdicts.setdefault(COMMAND, MutantVerdict(None, "not run: the gate stopped"))
        raise Interrupted(f"{e.why} after {done} of {len(mutants)} mutants: the report is partial",
                          ([outcomes[m.id] for m in mutants], stats)) from None
    return [outcomes[m.id] for m in mutants], stats, found.unneeded


def _judge(argv: list[str], mutants: list[RuntimeMutant], outcomes: dict[str, Outcome], stats: Stats, jobs: int,
           timeout: float, found: Listing, cache: Cache | None, runs: Runs, log) -> None:
    """Each mutant's verdict into `outcomes`, from the cache or a run of its own (cached as it comes)."""
    keys = {m.id: _key(json.dumps(argv), files_hash(found.coverage.files(m.selection.tests, found.imports)),
                       json.dumps(asdict(m.selection))) for m in mutants}
    todo = []
    for m in mutants:
        verdict = cache.get(keys[m.id]) if cache is not None else None
        if verdict is not None:
            outcomes[m.id].verdicts[COMMAND] = verdict
            stats.cached += 1
        else:
            todo.append(m)
    if stats.cached:
        log(f"{stats.cached} of {len(mutants)} verdicts from the cache")

    def one(m: RuntimeMutant) -> tuple[RuntimeMutant, MutantVerdict, float]:
        began = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="vkverify-mutant-") as tmp:
            path = os.path.join(tmp, "hazards.jsonl")
            try:
                done = runs.run(environment(m.selection, hazards=path), timeout)
            except subprocess.TimeoutExpired:
                return m, MutantVerdict(True, f"timed out after {timeout:.0f} s", killed_by="hang"), \
                    time.monotonic() - began
            hazards = read_hazards(path)
        killer = killed_by(done.returncode, hazards)
        verdict = MutantVerdict(killer is not None, kill_detail(killer, done.returncode, done.stdout + done.stderr,
                                                                hazards), killed_by=killer)
        return m, verdict, time.monotonic() - began

    # On a signal the pool's exit waits for its threads, which stop at once: stop() killed their runs.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for i, future in enumerate(as_completed([pool.submit(one, m) for m in todo]), 1):
            m, verdict, seconds = future.result()
            outcomes[m.id].verdicts[COMMAND] = verdict
            stats.executed += 1
            if cache is not None:
                cache.put(keys[m.id], verdict)
            log(f"[{i}/{len(todo)}] {m.targets[0]} {m.source or m.op} {m.operator} "
                f"{f'killed by {verdict.killed_by}' if verdict.killed else 'survived'} {seconds:.1f} s")
