"""Readers: who judges a mutant. Each tells a killed mutant from a surviving one.

A reader is started once on the original streams (and may refuse, with the reason, when what it
needs is missing), then hands the runner one picklable task per mutant, so tasks run in worker
processes. `checker`, `sim` and `replay` compare with the original stream; `cmd` runs a user's
command, which must pass on the original first.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from ..errors import VkverifyError
from ..model import dumps, ir
from .generate import Mutant
from .operators import RefMap, translate
from .processes import CLEAN_TIMEOUT_S, Processes

SIM_SCHEDULES = 50  # adversarial schedules per mutant: enough to reorder each pair a mutant un-orders
SIM_SEED = 0
# A mutant's command may run longer than the clean run (a hang is a kill); the floor absorbs
# start-up noise of short commands.
TIMEOUT_FACTOR = 10.0
TIMEOUT_FLOOR_S = 10.0


@dataclass(frozen=True)
class MutantVerdict:
    killed: bool | None  # None: this reader cannot judge this mutant (detail says why)
    detail: str
    coinciding: bool = False  # not judged because the values coincide (the simulator's verdict, detail: why)
    killed_by: str | None = None  # a command's runtime mutant: what killed it (kills.KILLERS)


class CleanRunFailed(VkverifyError):
    """The command fails unmutated, or does not finish within its timeout: a red baseline proves nothing. Seen by
    the user of `vkverify mutate` (exit 2) and of the mutation API."""


class Reader(Protocol):
    name: str

    def start(self, streams: dict[str, ir.Stream]) -> str | None:
        """Prepare on the original streams (file -> plain stream); the reason this reader is skipped, or None."""

    def cache_key(self) -> str | None:
        """What besides the code and the streams its verdicts depend on; None: never cached."""

    def task(self, mutant: Mutant) -> Callable[[], MutantVerdict]:
        """A picklable call that judges the mutant."""


# ---- checker -------------------------------------------------------------------


def finding_keys(stream: ir.Stream, refmap: RefMap) -> set[tuple]:
    """The checker's findings on `stream`, by the original stream's references."""
    from ..check.schedule import check  # a mutant is derived from a validated stream: not validated again

    return {_key(f, refmap) for f in check(stream)}


def _key(f, refmap: RefMap) -> tuple:
    def back(ref):
        return None if ref is None else translate(ref, refmap)
    return f.kind, f.buffer, back(f.first), back(f.second), tuple(map(back, f.ops)) if f.ops else None


def _checker_verdict(stream: ir.Stream, refmap: RefMap, baseline: frozenset) -> MutantVerdict:
    new = sorted(finding_keys(stream, refmap) - baseline, key=str)
    if not new:
        return MutantVerdict(False, "no new finding")
    kind, buffer, first, second, ops = new[0]
    return MutantVerdict(True, f"{kind} " + (", ".join(ops) if ops else f"{first} -> {second} on {buffer}"))


class CheckerReader:
    name = "checker"

    def start(self, streams: dict[str, ir.Stream]) -> str | None:
        self.baseline = {file: frozenset(finding_keys(s, {})) for file, s in streams.items()}
        return None

    def cache_key(self) -> str | None:
        return self.name

    def task(self, mutant: Mutant) -> Callable[[], MutantVerdict]:
        return partial(_checker_verdict, mutant.stream, mutant.refmap, self.baseline[mutant.file])


# ---- simulator -----------------------------------------------------------------


@dataclass(frozen=True)
class Simulated:
    """One stream in the simulator, by the original stream's references."""

    changed: frozenset[str]  # results some adversarial schedule changes: "buffer B", "read main[3]"
    ran: frozenset[str]  # the data operations the reference order runs (a deadlock's blocked ones do not)
    verdicts: tuple  # sim.FindingVerdict per finding


def simulated(stream: ir.Stream, refmap: RefMap) -> Simulated:
    from ..sim import simulate
    from ..sim.order import reference_order

    report = simulate(stream, SIM_SCHEDULES, SIM_SEED)
    changed = frozenset(f"buffer {b}" for s in report.schedules for b in s.changed_buffers) | \
        frozenset(f"read {translate(r, refmap)}" for s in report.schedules for r in s.changed_reads)
    return Simulated(changed, frozenset(translate(s.ref, refmap) for s in reference_order(stream)), report.verdicts)


def _sim_verdict(stream: ir.Stream, refmap: RefMap, original: Simulated, findings: frozenset) -> MutantVerdict:
    mutant = simulated(stream, refmap)
    new = sorted(mutant.changed - original.changed)
    if new:
        return MutantVerdict(True, f"digest of {new[0]} changes under an adversarial schedule")
    # A mutant that blocks (a dropped signal, a fence reset before its wait) never runs some operations,
    # so their results never appear. (Digests are not compared with the original's: an abstract shader's
    # output and a host write's default data hash the operation's reference, which a mutant may shift.)
    blocked = sorted(original.ran - mutant.ran)
    if blocked:
        return MutantVerdict(True, f"{blocked[0]} never runs: the mutant blocks it, so its results never appear")
    # The mutant's new findings, where the simulator says why their values cannot change.
    keys = [(_key(v.finding, refmap), v.reason) for v in mutant.verdicts if v.verdict == "value_coinciding"]
    reasons = [f"{key[0]} {key[3] or ', '.join(key[4])}: {reason}" for key, reason in keys if key not in findings]
    if reasons:
        return MutantVerdict(None, "value-coinciding: " + "; ".join(reasons), coinciding=True)
    return MutantVerdict(False, f"no digest changes in {SIM_SCHEDULES} adversarial schedules")


class SimReader:
    name = "sim"

    def start(self, streams: dict[str, ir.Stream]) -> str | None:
        try:
            import vkverify.sim  # noqa: F401  (only whether it is there)
        except ImportError as error:
            return f"vkverify.sim is not available ({error})"
        self.originals = {file: simulated(s, {}) for file, s in streams.items()}
        self.findings = {file: frozenset(finding_keys(s, {})) for file, s in streams.items()}
        return None

    def cache_key(self) -> str | None:
        return f"{self.name}:{SIM_SCHEDULES}:{SIM_SEED}"

    def task(self, mutant: Mutant) -> Callable[[], MutantVerdict]:
        return partial(_sim_verdict, mutant.stream, mutant.refmap, self.originals[mutant.file],
                       self.findings[mutant.file])


# ---- replay on a device --------------------------------------------------------


def _replay_verdict(stream: ir.Stream, syncval: bool) -> MutantVerdict:
    from ..runtime import RuntimeFault, replay, replayable
    from ..runtime.replay_result import compare_reference

    why = replayable(stream)
    if why is not None:
        return MutantVerdict(None, f"not replayable: {why}")
    try:
        result = replay(stream, syncval=syncval)
    except RuntimeFault as error:  # a device limit (Unsupported) or a failed call: no verdict either way
        return MutantVerdict(None, f"the device cannot run it: {error}")
    mismatches, note = compare_reference(stream, result)
    if mismatches:
        return MutantVerdict(True, f"{min(mismatches)} differs from the simulator's reference")
    if syncval and result.messages:
        return MutantVerdict(True, f"validation layer: {str(result.messages[0])[:200]}")
    return MutantVerdict(False, f"digests agree ({note})")


class ReplayReader:
    def __init__(self, syncval: bool = False) -> None:
        self.syncval = syncval
        self.name = "replay+syncval" if syncval else "replay"

    def start(self, streams: dict[str, ir.Stream]) -> str | None:
        try:
            from ..runtime import NoDevice, replay
        except ImportError as error:
            return f"vkverify.runtime is not available ({error})"
        clean = next((s for s in streams.values() if _replayable(s)), None)
        if clean is None:
            return "no stream can be replayed"
        try:
            replay(clean, syncval=self.syncval)
        except NoDevice as error:
            return f"no Vulkan device ({error})"
        return None

    def cache_key(self) -> str | None:
        return f"{self.name}:{os.environ.get('VKVERIFY_DEVICE', '')}"

    def task(self, mutant: Mutant) -> Callable[[], MutantVerdict]:
        return partial(_replay_verdict, mutant.stream, self.syncval)


def _replayable(stream: ir.Stream) -> bool:
    from ..runtime import replayable
    return replayable(stream) is None


# ---- a user's command ------------------------------------------------------------


def _cmd_verdict(argv: list[str], text: str, mutate: str, timeout: float) -> MutantVerdict:
    with tempfile.TemporaryDirectory(prefix="vkverify-mutant-") as tmp:
        path = os.path.join(tmp, "mutant.json")
        with open(path, "w") as f:
            f.write(text)
        try:
            done = Processes().run(argv, {"VKVERIFY_MUTATE": mutate, "VKVERIFY_MUTANT_STREAM": path}, timeout)
        except subprocess.TimeoutExpired:
            return MutantVerdict(True, f"timed out after {timeout:.0f} s")
    if done.returncode != 0:
        return MutantVerdict(True, f"exit {done.returncode}")
    return MutantVerdict(False, "exit 0")


class CmdReader:
    """Runs `argv` once per mutant with VKVERIFY_MUTATE=<target>:<k> and VKVERIFY_MUTANT_STREAM=<the
    mutated stream's JSON>; killed on a non-zero exit or a timeout. The clean run gets the original
    stream's path in VKVERIFY_MUTANT_STREAM and no VKVERIFY_MUTATE."""

    name = "cmd"

    def __init__(self, argv: list[str], selectors: dict[str, str], timeout: float = CLEAN_TIMEOUT_S) -> None:
        self.argv = argv
        self.selectors = selectors  # mutant id -> "<target>:<k>"
        self.clean_timeout = timeout  # each clean run's (--timeout)

    def start(self, streams: dict[str, ir.Stream]) -> str | None:
        """CleanRunFailed, or CannotStart, where a clean run gives no baseline."""
        slowest = 0.0
        for file in streams:
            began = time.monotonic()
            try:
                done = Processes().run(self.argv, {"VKVERIFY_MUTANT_STREAM": os.path.abspath(file)},
                                       self.clean_timeout)
            except subprocess.TimeoutExpired:
                raise CleanRunFailed(f"the command did not finish on the unmutated {file} within "
                                     f"{self.clean_timeout:g} s (--timeout)") from None
            slowest = max(slowest, time.monotonic() - began)
            if done.returncode != 0:
                tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
                raise CleanRunFailed(f"the command fails on the unmutated {file} (exit {done.returncode}); "
                                     "it must pass before mutants can fail it:\n  " + "\n  ".join(tail))
        self.timeout = max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * slowest)
        return None

    def cache_key(self) -> str | None:
        return None  # the command's own code is outside what vkverify can hash

    def task(self, mutant: Mutant) -> Callable[[], MutantVerdict]:
        return partial(_cmd_verdict, self.argv, dumps(mutant.stream), self.selectors[mutant.id], self.timeout)


READERS: dict[str, Callable[[], Reader]] = {
    "checker": CheckerReader,
    "sim": SimReader,
    "replay": ReplayReader,
    "replay+syncval": partial(ReplayReader, syncval=True),
}

__all__ = [
    "READERS",
    "CheckerReader",
    "CleanRunFailed",
    "CmdReader",
    "MutantVerdict",
    "Reader",
    "ReplayReader",
    "SimReader",
]
