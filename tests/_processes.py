"""Processes the gate's tests start, and whether any outlives it."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie not yet reaped does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def sleeper(pids: Path) -> list[str]:
    """A command that records its pid and its child's, then waits for the child, which sleeps for ten minutes."""
    return ["sh", "-c", f"echo $$ >> {pids}; sleep 600 & echo $! >> {pids}; wait"]
