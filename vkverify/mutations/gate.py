"""`vkverify mutate -- CMD`: the command's own Runtimes mutate themselves (live.py), once per mutant.

CMD runs once listing the candidates (it must pass), then once per mutant, its online check writing
the hazards it finds to a file instead of raising (kills.py: what killed the mutant); a hazard, a
non-zero exit or a timeout kills. Candidates at one call site (the program's file:line) fold into one mutant that
changes every iteration of it, unless `per_iteration`. The cache keeps the listing and each verdict
under a key of vkverify's code, the command, the working directory and a hash of the user files
the command imported (live.user_files): a rerun with nothing changed runs nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, fields

from ..errors import VkverifyError
from .formats import COMMAND
from .kills import kill_detail, killed_by, read_hazards
from .live import Selection, environment, site
from .processes import CLEAN_TIMEOUT_S, Interrupted, Processes
from .readers import CleanRunFailed, MutantVerdict
from .runner import Cache, Outcome, Stats, cache_key, files_hash
from .runner import shard as shard_of

__all__ = ["Candidate", "Listing", "NoMutants", "RuntimeMutant", "chosen", "listing", "no_runtime_reason", "read_list",
           "run_command"]

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
class Listing:
    candidates: list[Candidate]
    runtimes: int  # Runtimes the command opened
    imports: list[str]  # the user files it imported
    seconds: float  # the clean run's duration
    skipped: int = 0  # lines of the candidates file that could not be read (warned of)


def read_list(path: str, warn=None) -> Listing:
    """The candidates file of a list run. A line that is not one of live.py's (torn by a process killed
    while writing it, say) is skipped, with a warning through `warn`."""
    candidates, runtimes, imports, skipped = [], 0, set(), 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if isinstance(entry, dict) and entry.keys() == {"runtime", "where"}:
                    runtimes += 1
                elif isinstance(entry, dict) and entry.keys() == {"imports"} and isinstance(entry["imports"], list) \
                        and all(isinstance(i, str) for i in entry["imports"]):
                    imports.update(entry["imports"])
                else:
                    candidates.append(Candidate.parse(entry))
            except (ValueError, RecursionError):
                skipped += 1
                if warn is not None:
                    warn(f"warning: line {number} of the candidates file is not a candidate (torn?): skipped")
    return Listing(candidates, runtimes, sorted(imports), 0.0, skipped)


def _cached_listing(found) -> tuple[Listing, str]:
    """A listing from its cache entry and the hash of its imports then; ValueError unless it has that shape."""
    try:
        listed = Listing([Candidate.parse(c) for c in found["candidates"]], found["runtimes"], found["imports"],
                         found["seconds"])
        shapes = ((listed.runtimes, int), (listed.seconds, (int, float)), (found["hash"], str))
        if all(isinstance(v, t) for v, t in shapes) and isinstance(listed.imports, list) and \
                all(isinstance(i, str) for i in listed.imports):
            return listed, found["hash"]
    except (KeyError, TypeError):
        pass
    raise ValueError("not a listing")


def chosen(candidates: list[Candidate], target: str, per_iteration: bool = False) -> list[RuntimeMutant]:
    """The mutants of `target` (`all`: each candidate once, under its first target); the candidates
    of one test at one call site fold into one, unless `per_iteration`."""
    seen, lines = set(), []
    for c in candidates:
        if target in ("all", c.target) and (c.where, c.op, c.operator) not in seen:
            seen.add((c.where, c.op, c.operator))
            lines.append(c)
    groups: dict[tuple, list[Candidate]] = {}
    for c in lines:
        groups.setdefault((c.where, c.target, c.k) if per_iteration else (c.where, c.site), []).append(c)
    return [_mutant(cs, per_iteration) for cs in groups.values()]


def _mutant(cs: list[Candidate], per_iteration: bool) -> RuntimeMutant:
    first = cs[0]
    where = first.source or first.op
    if per_iteration:
        selection = Selection(first.target, first.where, k=first.k)
        name = f"{first.target}:{first.k} {first.operator} {first.op} at {where}"
    else:
        selection = Selection(first.target, first.where, site=first.site)
        name = f"{first.target} {first.operator}{first.site[3]} at {where}" + \
            (f" ({first.label})" if first.label else "")
    times = f" ({len(cs)} iterations, the first {first.op})" if len(cs) > 1 else ""
    return RuntimeMutant(f"{first.where}::{name}", first.where, (first.target,), first.operator, first.op,
                         first.description + times, first.source, selection)


def _key(*parts: str) -> str:
    """A cache key of `parts` and what every run shares: vkverify's code, the working directory and
    the VKVERIFY_ variables (VKVERIFY_CHECK=0 may let a mutant live that the online check kills)."""
    settings = json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith("VKVERIFY_")))
    return cache_key(os.getcwd(), settings, *parts)


def listing(argv: list[str], cache: Cache | None, log, timeout: float = CLEAN_TIMEOUT_S,
            processes: Processes | None = None) -> tuple[Listing, bool]:
    """(the candidates, whether the cache gave them): the clean run, or the cache's record of it where
    the files it imported are unchanged. CleanRunFailed when the clean run fails or outlasts `timeout`,
    CannotStart when it cannot start."""
    key = "listing-" + _key(json.dumps(argv))
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
            clean = (processes or Processes()).run(argv, environment(Selection("list", file=path)), timeout)
        except subprocess.TimeoutExpired:
            raise CleanRunFailed(f"the command did not finish unmutated within {timeout:g} s (--timeout): "
                                 "no mutant was run") from None
        if clean.returncode != 0:
            tail = "\n  ".join((clean.stdout + clean.stderr).strip().splitlines()[-10:])
            raise CleanRunFailed(f"the command fails unmutated (exit {clean.returncode}):\n  {tail}")
        found = read_list(path, lambda line: print(f"vkverify mutate: {line}", file=sys.stderr))  # -q or not
    result = Listing(found.candidates, found.runtimes, found.imports, time.monotonic() - began, found.skipped)
    if cache is not None and not result.skipped:  # a listing that lost lines is not kept: the next run lists again
        cache.write(key, {"candidates": [asdict(c) for c in result.candidates], "runtimes": result.runtimes,
                          "imports": result.imports, "hash": files_hash(result.imports), "seconds": result.seconds})
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
                quiet: bool = False, timeout: float = CLEAN_TIMEOUT_S) -> tuple[list[Outcome], Stats]:
    """Each mutant of the command's runtimes and its verdict. NoMutants (with the reason) when there
    is none; CleanRunFailed when the command fails unmutated or outlasts `timeout` (its clean run's
    limit), CannotStart when it cannot start; Interrupted on SIGINT or SIGTERM, with the verdicts so far
    (every run killed, those done kept in the cache)."""
    def log(line: str) -> None:
        if not quiet:
            print(f"vkverify mutate: {line}", file=sys.stderr, flush=True)

    processes = Processes()
    with processes.stopped_by_signals():
        try:
            found, _ = listing(argv, cache, log, timeout, processes)
        except Interrupted as e:
            raise Interrupted(f"{e.why} during the unmutated run: no mutant was run") from None
        if not found.runtimes:
            raise NoMutants(no_runtime_reason())
        mutants = chosen(found.candidates, target, per_iteration)
        if not mutants:
            raise NoMutants(f"nothing load-bearing for target {target} in the {found.runtimes} Runtime(s) the "
                            "command opened: no synchronization whose removal the model sees as a new hazard")
        if shard is not None:
            mutants = shard_of(mutants, *shard)
        outcomes = {m.id: Outcome(m) for m in mutants}
        stats = Stats()
        try:
            _judge(argv, mutants, outcomes, stats, jobs, max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * found.seconds),
                   files_hash(found.imports), cache, processes, log)
        except Interrupted as e:
            done = sum(o.judged for o in outcomes.values())
            for o in outcomes.values():
                o.verdicts.setdefault(COMMAND, MutantVerdict(None, "not run: the gate stopped"))
            raise Interrupted(f"{e.why} after {done} of {len(mutants)} mutants: the report is partial",
                              ([outcomes[m.id] for m in mutants], stats)) from None
    return [outcomes[m.id] for m in mutants], stats


def _judge(argv: list[str], mutants: list[RuntimeMutant], outcomes: dict[str, Outcome], stats: Stats, jobs: int,
           timeout: float, imports: str, cache: Cache | None, processes: Processes, log) -> None:
    """Each mutant's verdict into `outcomes`, from the cache or a run of its own (cached as it comes)."""
    keys = {m.id: _key(json.dumps(argv), imports, json.dumps(asdict(m.selection))) for m in mutants}
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
                done = processes.run(argv, environment(m.selection, hazards=path), timeout)
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
