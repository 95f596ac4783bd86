"""Run every reader on every mutant: in parallel, sharded, cached."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..model import dumps, ir
from ..model.errors import OutputError
from ..model.files import write_atomic
from .generate import Mutant
from .kills import KILLERS
from .readers import Reader, MutantVerdict

__all__ = ["Cache", "Outcome", "Stats", "cache_key", "code_hash", "files_hash", "run", "shard"]

CACHE_DIR = "mutate"  # under the cache directory: an entry per file


@dataclass
class Outcome:
    mutant: Mutant
    verdicts: dict[str, MutantVerdict] = field(default_factory=dict)  # reader name -> verdict

    @property
    def judged(self) -> bool:
        return any(v.killed is not None for v in self.verdicts.values())

    @property
    def killed(self) -> bool:
        return any(v.killed for v in self.verdicts.values())

    @property
    def killed_by(self) -> str | None:
        """What killed it: for a command's runtime mutant, kills.KILLERS; else the first reader that did."""
        return next((v.killed_by or reader for reader, v in self.verdicts.items() if v.killed), None)


@dataclass
class Stats:
    executed: int = 0  # reader tasks run
    cached: int = 0  # reader tasks answered by the cache


def shard(mutants: list[Mutant], k: int, n: int) -> list[Mutant]:
    """The k-th of n shards (1-based): every n-th mutant by sorted id, so shards never overlap."""
    return [m for i, m in enumerate(sorted(mutants, key=lambda m: m.id)) if i % n == k - 1]


def files_hash(paths: Iterable[str | Path], root: Path | None = None) -> str:
    """A digest of each file's path (relative to `root` where given) and contents, a missing file's as such."""
    h = hashlib.sha256()
    for path in map(Path, paths):
        h.update(str(path.relative_to(root) if root is not None else path).encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


@cache
def code_hash() -> str:
    """Every source file of vkverify: a verdict is reused only while the code that gave it is unchanged."""
    package = Path(__file__).resolve().parent.parent
    return files_hash(sorted(package.rglob("*.py")), package)


def cache_key(*parts: str) -> str:
    """A digest of vkverify's code (code_hash) and `parts`, each ended by a NUL."""
    h = hashlib.sha256()
    for part in (code_hash(), *parts):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


class Cache:
    """Entries by key under `directory`/mutate, one JSON file each, written whole by a rename: gates sharing
    the directory at once (the shards of a CI run) never lose each other's entries, and an interrupted gate
    keeps what it judged. An entry that cannot be read as what it should be (a torn or hand-edited file)
    is warned of and treated as missing: its mutant is judged again and the entry rewritten."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.path = self.directory / CACHE_DIR
        self.unwritable = False  # said once, not per entry

    def file(self, key: str) -> Path:
        return self.path / f"{key}.json"

    def read(self, key: str):
        """The JSON value stored under `key`; None where there is none or it is not JSON (warned)."""
        try:
            found = json.loads(self.file(key).read_bytes())
        except (FileNotFoundError, NotADirectoryError):  # none; a file where the folder is: said when written
            return None
        except (OSError, ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError; nesting too deep
            self.warn(key, f"cannot be read ({getattr(e, 'strerror', None) or e})")
            return None
        if found is None:  # no entry is written so
            self.warn(key, "holds null")
        return found

    def write(self, key: str, value) -> None:
        """Store `value`; a cache that cannot be written is warned of, not fatal (the verdicts are reported)."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():  # a cache is never committed, wherever it is made
                write_atomic(ignore, "*\n")
            write_atomic(self.file(key), json.dumps(value, sort_keys=True))
        except (OSError, OutputError) as e:
            if not self.unwritable:
                self.unwritable = True
                print(f"vkverify mutate: warning: cache {self.path} cannot be written ({e.strerror or e}); not kept",
                      file=sys.stderr, flush=True)

    def warn(self, key: str, what: str) -> None:
        print(f"vkverify mutate: warning: cache entry {self.file(key)} {what}", file=sys.stderr, flush=True)

    @staticmethod
    def key(reader_key: str, original: ir.Stream, mutant: Mutant) -> str:
        return cache_key(reader_key, dumps(original, indent=None), dumps(mutant.stream, indent=None))

    def get(self, key: str) -> MutantVerdict | None:
        found = self.read(key)
        if found is None:
            return None
        if isinstance(found, list) and len(found) == 4 and (found[0] is None or isinstance(found[0], bool)) and \
                isinstance(found[1], str) and isinstance(found[2], bool) and found[3] in (None, *KILLERS):
            return MutantVerdict(*found)
        self.warn(key, "is not a verdict; the mutant is judged again")
        return None

    def put(self, key: str, verdict: MutantVerdict) -> None:
        self.write(key, [verdict.killed, verdict.detail, verdict.coinciding, verdict.killed_by])


def run(mutants: list[Mutant], readers: list[Reader], originals: dict[str, ir.Stream], jobs: int,
        cache: Cache | None) -> tuple[list[Outcome], Stats]:
    """Each reader's verdict on each mutant; `originals`: file -> the stream mutated."""
    outcomes = [Outcome(m) for m in mutants]
    stats = Stats()
    todo = []  # (outcome, reader name, cache key or None, task)
    for outcome in outcomes:
        for reader in readers:
            reader_key = reader.cache_key()
            key = None
            if cache is not None and reader_key is not None:
                key = Cache.key(reader_key, originals[outcome.mutant.file], outcome.mutant)
                found = cache.get(key)
                if found is not None:
                    outcome.verdicts[reader.name] = found
                    stats.cached += 1
                    continue
            todo.append((outcome, reader.name, key, reader.task(outcome.mutant)))
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            verdicts = list(pool.map(_call, [t for *_, t in todo], chunksize=max(1, len(todo) // (4 * jobs))))
    else:
        verdicts = [t() for *_, t in todo]
    for (outcome, name, key, _), verdict in zip(todo, verdicts):
        outcome.verdicts[name] = verdict
        stats.executed += 1
        if key is not None:
            cache.put(key, verdict)
    return outcomes, stats


def _call(task) -> MutantVerdict:
    return task()
