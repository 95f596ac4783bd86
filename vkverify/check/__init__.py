"""The happens-before checker: `check(stream)` returns every finding."""

from .findings import KINDS, Finding
from .schedule import check

__all__ = ["KINDS", "Finding", "check"]
