"""Operation references (docs/format.md): `cb0[2]` (the third command of cb0), `main[5]` (the
sixth op of thread main), `cb0[2]@main[5]` (that command in the submission main[5], where cb0 is
submitted more than once). The one place that spells them: every layer parses and formats
references through these functions (docs/format.md, findings).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Ref", "batch_ref", "format_ref", "map_positions", "owner_of", "parse_ref", "sort_key", "split_ref",
           "split_submit", "with_submit", "without_submit"]

_OWNER = r"[^\[\]@]+"  # a command buffer or thread id: anything but the reference's own punctuation
_POSITIONAL = re.compile(rf"({_OWNER})\[(\d+)\]")
_WHOLE = re.compile(rf"({_OWNER})\[(\d+)\](?:@({_OWNER})\[(\d+)\])?")
# Inside longer text (`read cb0[1]`, `main[3].batches[0].wait[1]`): no spaces in the owner, and dots only between
# its other characters (the uploader's `upload.cb0[1]`; `.batches[0]` after a reference is no owner's).
_IN_TEXT = re.compile(r"([^\[\]@\s.]+(?:\.[^\[\]@\s.]+)*)\[(\d+)\]")


@dataclass(frozen=True)
class Ref:
    """`owner[index]`, and for a command of a resubmitted command buffer, the submission `@owner[index]`."""

    owner: str
    index: int
    submit: Ref | None = None

    def __str__(self) -> str:
        return format_ref(self.owner, self.index, self.submit)


def format_ref(owner: str, index: int | str, submit: Ref | str | None = None) -> str:
    """`owner[index]`, with `@submit` when a submission is given (the mutations' `main[new]`: an index "new")."""
    return f"{owner}[{index}]@{submit}" if submit else f"{owner}[{index}]"


def batch_ref(submit: str, index: int, count: int) -> str:
    """A batch of a submission: the submit's reference, `main[1].batches[2]` when it has several batches."""
    return submit if count == 1 else f"{submit}.batches[{index}]"


def parse_ref(text: str) -> Ref | None:
    """The positional reference `text` spells (`cb0[2]`, `cb0[2]@main[5]`); None for anything else (an id)."""
    m = _WHOLE.fullmatch(text)
    if m is None:
        return None
    submit = None if m.group(3) is None else Ref(m.group(3), int(m.group(4)))
    return Ref(m.group(1), int(m.group(2)), submit)


def with_submit(command: str, submit: Ref | str | None) -> str:
    """A command's reference (`cb0[2]`) in one submission (`cb0[2]@main[5]`); unchanged without one."""
    return f"{command}@{submit}" if submit else command


def split_ref(text: str) -> tuple[Ref, str] | None:
    """The leading `owner[index]` of `text` and what follows it (`@main[5]`, `.batches[0].wait[1]`)."""
    m = _POSITIONAL.match(text)
    return None if m is None else (Ref(m.group(1), int(m.group(2))), text[m.end():])


def split_submit(text: str) -> tuple[str, str]:
    """(the command's reference, its submission's or "") of `cb0[2]@main[5]`, `cb0[2]` or an id."""
    command, _, submit = text.partition("@")
    return command, submit


def without_submit(text: str) -> str:
    """`cb0[2]@main[5]` -> `cb0[2]`: the command, whichever submission ran it."""
    return text.partition("@")[0]


def owner_of(text: str) -> str:
    """The command buffer or thread a reference names: `cb0` of `cb0[2]@main[5]`."""
    return text.partition("[")[0]


def sort_key(text: str) -> tuple[str, int]:
    """Order references by owner, then by position (`main[10]` after `main[9]`)."""
    owner, _, rest = text.partition("[")
    return owner, int(rest.partition("]")[0])


def map_positions(text: str, change: Callable[[str, int], str | None]) -> str:
    """`text` with each `owner[index]` in it replaced by change(owner, index) (None: kept as it is)."""
    def one(m: re.Match) -> str:
        new = change(m.group(1), int(m.group(2)))
        return m.group(0) if new is None else new
    return _IN_TEXT.sub(one, text)
