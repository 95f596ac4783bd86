"""`vkverify mutate -- CMD`: the command's own Runtimes mutate themselves (live.py), once per mutant.

CMD runs once listing the candidates (it must pass), then once per mutant; a non-zero exit or a
timeout kills. Candidates at one call site (the program's file:line) fold into one mutant that
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
from dataclasses import asdict, dataclass

from ..errors import VkverifyError
from .live import Selection, environment, site
from .readers import CleanRunFailed, MutantVerdict
from .runner import Cache, Outcome, Stats, cache_key, files_hash

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


def read_list(path: str) -> Listing:
    candidates, runtimes, imports = [], 0, set()
    with open(path) as f:
        for line in filter(str.strip, f):
            entry = json.loads(line)
            if "runtime" in entry:
                runtimes += 1
            elif "imports" in entry:
                imports.update(entry["imports"])
            else:
                candidates.append(Candidate(**entry))
    return Listing(candidates, runtimes, sorted(imports), 0.0)


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


def _run(argv: list[str], env: dict[str, str], timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout, check=False)


def _key(*parts: str) -> str:
    """A cache key of `parts` and what every run shares: vkverify's code, the working directory and
    the VKVERIFY_ variables (VKVERIFY_CHECK=0 may let a mutant live that the online check kills)."""
    settings = json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith("VKVERIFY_")))
    return cache_key(os.getcwd(), settings, *parts)


def listing(argv: list[str], cache: Cache | None, log) -> tuple[Listing, bool]:
    """(the candidates, whether the cache gave them): the clean run, or the cache's record of it where
    the files it imported are unchanged. CleanRunFailed when the clean run fails."""
    key = "listing:" + _key(json.dumps(argv))
    found = cache.entries.get(key) if cache is not None else None
    if found is not None and files_hash(found["imports"]) == found["hash"]:
        log(f"listing from the cache ({len(found['candidates'])} candidates)")
        return Listing([Candidate(**c) for c in found["candidates"]], found["runtimes"], found["imports"],
                       found["seconds"]), True
    log(f"listing candidates: {' '.join(argv)}")
    with tempfile.TemporaryDirectory(prefix="vkverify-mutate-") as tmp:
        path = os.path.join(tmp, "candidates.jsonl")
        open(path, "w").close()
        began = time.monotonic()
        clean = _run(argv, environment(Selection("list", file=path)))
        if clean.returncode != 0:
            tail = "\n  ".join((clean.stdout + clean.stderr).strip().splitlines()[-10:])
            raise CleanRunFailed(f"the command fails unmutated (exit {clean.returncode}):\n  {tail}")
        found = read_list(path)
    result = Listing(found.candidates, found.runtimes, found.imports, time.monotonic() - began)
    if cache is not None:
        cache.entries[key] = {"candidates": [asdict(c) for c in result.candidates], "runtimes": result.runtimes,
                              "imports": result.imports, "hash": files_hash(result.imports), "seconds": result.seconds}
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
                quiet: bool = False) -> tuple[list[Outcome], Stats]:
    """Each mutant of the command's runtimes and its verdict. NoMutants (with the reason) when there
    is none, CleanRunFailed when the command fails unmutated."""
    def log(line: str) -> None:
        if not quiet:
            print(f"vkverify mutate: {line}", file=sys.stderr, flush=True)

    found, cached_listing = listing(argv, cache, log)
    if not found.runtimes:
        raise NoMutants(no_runtime_reason())
    mutants = chosen(found.candidates, target, per_iteration)
    if not mutants:
        raise NoMutants(f"nothing load-bearing for target {target} in the {found.runtimes} Runtime(s) the command "
                        "opened: no synchronization whose removal the model sees as a new hazard")
    if shard is not None:
        k, n = shard
        mutants = [m for i, m in enumerate(sorted(mutants, key=lambda m: m.id)) if i % n == k - 1]
    timeout = max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * found.seconds)
    stats = Stats()
    imports = files_hash(found.imports)
    keys = {m.id: _key(json.dumps(argv), imports, json.dumps(asdict(m.selection))) for m in mutants}
    outcomes = {m.id: Outcome(m) for m in mutants}
    todo = []
    for m in mutants:
        verdict = cache.get(keys[m.id]) if cache is not None else None
        if verdict is not None:
            outcomes[m.id].verdicts["command"] = verdict
            stats.cached += 1
        else:
            todo.append(m)
    if stats.cached:
        log(f"{stats.cached} of {len(mutants)} verdicts from the cache")

    def one(m: RuntimeMutant) -> tuple[RuntimeMutant, MutantVerdict, float]:
        began = time.monotonic()
        try:
            done = _run(argv, environment(m.selection), timeout)
        except subprocess.TimeoutExpired:
            return m, MutantVerdict(True, f"timed out after {timeout:.0f} s"), time.monotonic() - began
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
        verdict = MutantVerdict(done.returncode != 0, f"exit {done.returncode}: {tail[0][:200]}")
        return m, verdict, time.monotonic() - began

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for i, future in enumerate(as_completed([pool.submit(one, m) for m in todo]), 1):
            m, verdict, seconds = future.result()
            outcomes[m.id].verdicts["command"] = verdict
            stats.executed += 1
            if cache is not None:
                cache.put(keys[m.id], verdict)
            log(f"[{i}/{len(todo)}] {m.targets[0]} {m.source or m.op} {m.operator} "
                f"{'killed' if verdict.killed else 'survived'} {seconds:.1f} s")
    if cache is not None and (todo or not cached_listing):
        cache.save()
    return [outcomes[m.id] for m in mutants], stats
