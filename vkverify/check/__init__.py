"""The happens-before checker: `check(stream)` returns every finding."""

from ..model import ir
from ..model.loader import validate
from . import schedule
from .findings import KINDS, Finding
from .readings import DEFAULT, Readings

__all__ = ["KINDS", "Finding", "check"]


def check(stream: ir.Stream, readings: Readings = DEFAULT, witness: str = "slice",
          witnesses: int | None = None) -> list[Finding]:
    """Every synchronization finding of `stream` (schedule.check); a stream the loader did not make is
    first validated as a file would be (InvalidStream naming each error)."""
    return schedule.check(validate(stream), readings, witness, witnesses)
