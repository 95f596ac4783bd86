"""What an import did, for the people reading `vkverify import`'s stderr."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["ImportSummary"]


@dataclass
class ImportSummary:
    """Counts, skipped calls, assumptions and warnings of one import.

    `assumed` lists what the stream holds that the capture did not record
    (host writes in a capture without fill-memory records, host reads at
    invalidates); `warnings` name
    calls the mapping could not express faithfully; `unresolved` counts the
    dispatches whose accesses the stream lacks in part, by reason; `unmodelled`
    the calls whose ordering the stream cannot hold (vkGetEventStatus), by name;
    `left_out` the commands on images the stream does not hold (or in ways it cannot), by call and reason;
    `unknown` the commands this importer does not read, by name; `cut` says
    how a capture ends without the program's teardown. With any of these, a
    verdict on the stream is partial.
    """

    calls: int = 0
    commands: Counter = field(default_factory=Counter)  # stream cmd kind -> count
    host_ops: Counter = field(default_factory=Counter)  # stream op kind -> count
    skipped: Counter = field(default_factory=Counter)  # Vulkan call name -> count, outside compute/transfer
    assumed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unresolved: Counter = field(default_factory=Counter)  # reason -> dispatches
    unmodelled: Counter = field(default_factory=Counter)  # Vulkan call name -> count
    first_unmodelled: dict[str, int] = field(default_factory=dict)  # Vulkan call name -> its first call index
    left_out: Counter = field(default_factory=Counter)  # (vkCmd name, why) -> count, of commands on images not held
    first_left_out: dict[tuple[str, str], int] = field(default_factory=dict)  # that key -> its first call index
    unknown: Counter = field(default_factory=Counter)  # vkCmd name -> count, of commands not read
    first_unknown: dict[str, int] = field(default_factory=dict)  # vkCmd name -> its first call index
    cut: str | None = None  # how the capture ends without the program's teardown

    @property
    def partial(self) -> bool:
        return bool(self.unresolved or self.left_out or self.unmodelled or self.unknown or self.cut)

    @property
    def submits(self) -> int:
        return self.host_ops["submit"]

    def lines(self) -> list[str]:
        cmds = ", ".join(f"{n} {k}" for k, n in sorted(self.commands.items())) or "none"
        ops = ", ".join(f"{n} {k}" for k, n in sorted(self.host_ops.items())) or "none"
        out = [f"imported {self.calls} calls: commands: {cmds}; host ops: {ops}"]
        if self.skipped:
            top = ", ".join(f"{name} {n}" for name, n in self.skipped.most_common())
            out.append(f"skipped {sum(self.skipped.values())} calls outside compute/transfer scope: {top}")
        out += [f"assumed: {a}" for a in self.assumed]
        out += [f"warning: {w}" for w in self.warnings]
        return out + self.partial_lines()

    def partial_lines(self) -> list[str]:
        """Why a verdict on the stream covers only part of the program, a line per reason."""
        out = [f"unresolved: {n} dispatch{'es' if n > 1 else ''}: {why}" for why, n in self.unresolved.items()]
        out += [f"left out: {n} {name} call{'s' if n > 1 else ''} (first #{self.first_left_out[name, why]}): {why}; "
                "what it accesses is missing from the stream" for (name, why), n in self.left_out.items()]
        out += [f"unmodelled: {n} {name} call{'s' if n > 1 else ''} (first #{self.first_unmodelled[name]}): the "
                "stream format cannot hold the ordering they make: it is missing from the stream" for name, n in
                self.unmodelled.items()]
        out += [f"unknown: {n} {name} call{'s' if n > 1 else ''} (first #{self.first_unknown[name]}): a command this "
                "importer does not read: what it accesses and orders is missing from the stream" for name, n in
                self.unknown.items()]
        return out + ([f"cut short: {self.cut}"] if self.cut else [])
