"""What killed a runtime mutant (gate.py): the online check, the program's own assertions, a crash or a
hang. Read from one run: its exit status, its output and the hazards file its online check wrote instead
of raising (VKVERIFY_HAZARDS, runtime/online.py), so both scores come from one run per mutant.

- `online_check`: the online check found a hazard, and the program either passed or failed by the
  HazardError raised to it (a dropped signal's blocked wait is raised all the same): the model saw the
  mutant, the program's own checks did not.
- `assertion`: the command failed and no HazardError was raised to it: its own tests caught the
  mutant, as they would on a driver that races (where the online check is off, this is every failure).
- `crash`: the command died by a signal; `hang`: it outlasted the mutant's timeout.
"""

from __future__ import annotations

import json
import re

__all__ = ["BEHAVIOURAL", "KILLERS", "failure", "kill_detail", "killed_by", "read_hazards"]

KILLERS = ("online_check", "assertion", "crash", "hang")
BEHAVIOURAL = "assertion"  # the kills the behavioural score counts

# pytest's short summary line of a failed test; the `file:line: Exception` line that ends a failure's
# traceback (the assertion's line; a pytest.fail without a traceback has none) and the `>` line that
# shows that line's source above it.
_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)
_RAISED_AT = re.compile(r"^(\S+:\d+): [A-Z]\w*(?:Error|Exception|Failed)\b", re.MULTILINE)
_SOURCE = re.compile(r"^>\s+(.*)$", re.MULTILINE)


def read_hazards(path: str) -> list[dict]:
    """The hazards file's lines, each {"hazard": the HazardError's message, "raised": bool}; a line
    that is not one (torn by a process killed while writing it) is left out."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:  # the check found nothing, or never ran
        return []
    found = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("hazard"), str) and isinstance(entry.get("raised"), bool):
            found.append(entry)
    return found


def killed_by(returncode: int, hazards: list[dict]) -> str | None:
    """What killed a run that ended with `returncode` (None: it survived), the online check having written
    `hazards`."""
    if returncode < 0:
        return "crash"
    if returncode != 0 and not any(h["raised"] for h in hazards):
        return BEHAVIOURAL
    return "online_check" if hazards else None


def failure(output: str) -> str:
    """The first failing test and its assertion, from pytest's output: `path::test: message (file:line:
    source)`; else (another command) the output's last line."""
    summary = _SUMMARY.search(output)
    if summary is None:
        return (output.strip().splitlines() or [""])[-1][:200]
    at = _RAISED_AT.search(output)
    source = _SOURCE.findall(output, 0, at.start()) if at else []
    where = f" ({at[1]}{f': {source[-1].strip()}' if source else ''})" if at else ""
    return f"{summary[1]}: {summary[2] or 'failed'}{where}"


def kill_detail(killer: str | None, returncode: int, output: str, hazards: list[dict]) -> str:
    """The verdict's detail: the exit status, then what killed the mutant, or for a survivor the last line."""
    if killer == "crash":
        return f"killed by signal {-returncode}: {failure(output)}"
    status = f"exit {returncode}"
    if killer == "online_check":
        more = f" (and {len(hazards) - 1} more)" if len(hazards) > 1 else ""
        return f"{status}; online check: {hazards[0]['hazard'][:300]}{more}"
    return f"{status}: {failure(output)}"
