"""The happens-before checker: `check(stream)` returns every finding."""

from collections.abc import Sequence

from ..model import ir
from ..model.errors import UsageError, choice_argument, integer_argument
from ..model.loader import validate
from . import schedule
from .findings import KINDS, Finding
from .readings import DEFAULT, Readings

__all__ = ["KINDS", "WITNESS_MODES", "Finding", "check"]

WITNESS_MODES = ("slice", "full")  # docs/format.md, Schedules, z3 and witnesses


def check(stream: ir.Stream, readings: Readings = DEFAULT, witness: str = "slice",
          witnesses: int | None = None) -> Sequence[Finding]:
    """Every synchronization finding of `stream` (schedule.check), each worded as it is read; a stream the
    loader did not make is first validated as a file would be (InvalidStream naming each error); a bad
    argument is a UsageError naming it."""
    stream = validate(stream)
    if not isinstance(readings, Readings):
        raise UsageError("readings", f"expected a vkverify.check.readings.Readings, got {type(readings).__name__}")
    choice_argument("witness", witness, WITNESS_MODES)
    integer_argument("witnesses", witnesses, 0, optional=True)
    return schedule.check(stream, readings, witness, witnesses)
