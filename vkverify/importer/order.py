"""Capture order is the order calls return: another thread's host wait can be written before the submit or
signal that ended it. `Satisfied` finds, for each host wait, the call that satisfies it in capture order."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

__all__ = ["WAITS", "Satisfied", "semaphore_waits"]

# The host waits `Satisfied.after` finds a call for.
WAITS = ("wait_semaphores", "get_semaphore_counter_value", "wait_fences")


def semaphore_waits(op: dict) -> list[dict]:
    """The `{"semaphore", "value"}` a host op waits for: a counter read waits for the value it read."""
    return op["waits"] if op["op"] == "wait_semaphores" else [op] if op["op"] == "get_semaphore_counter_value" else []


class Satisfied:
    def __init__(self, ops: Iterable[tuple[int, int, dict]], initial: dict[str, int], signaled: set[str]) -> None:
        """ops: (call index, thread, host op) of every thread, in capture order; initial: timeline semaphore id ->
        initial value; signaled: the fences created signaled."""
        self.initial = initial
        self.signals: dict[str, tuple[list[int], list[int]]] = {}  # semaphore -> (indices, highest value so far)
        self.fence_events: dict[str, tuple[list[int], list[bool]]] = {}  # fence -> (indices, signals or resets)
        for fence in signaled:
            self._fence(fence, -1, True)
        for index, _, op in ops:
            kind = op["op"]
            if kind == "submit":
                for batch in op["batches"]:
                    for s in batch.signal:
                        if s.timeline:
                            self._signal(s.semaphore, index, s.value)
                if "fence" in op:
                    self._fence(op["fence"], index, True)
            elif kind == "signal_semaphore":
                self._signal(op["semaphore"], index, op["value"])
            elif kind == "reset_fences":
                for fence in op["fences"]:
                    self._fence(fence, index, False)

    def _signal(self, semaphore: str, index: int, value: int) -> None:
        found = self.signals.get(semaphore)  # not setdefault: that makes two lists at each of a run's signals
        if found is None:
            found = self.signals[semaphore] = ([], [])
        indices, highest = found
        indices.append(index)
        highest.append(max(value, highest[-1]) if highest else value)

    def _fence(self, fence: str, index: int, signal: bool) -> None:
        indices, signals = self.fence_events.setdefault(fence, ([], []))
        indices.append(index)
        signals.append(signal)

    def after(self, index: int, op: dict) -> int:
        """The index of the call after which the host wait `op` (at `index`) can return: `index` itself
        where a call before it satisfies it, or where none in the whole capture does."""
        found = [index]
        for w in semaphore_waits(op):
            if self.initial.get(w["semaphore"], 0) >= w["value"]:
                continue
            indices, highest = self.signals.get(w["semaphore"], ([], []))
            at = bisect_left(highest, w["value"])  # the first signal of a high enough value
            if at < len(indices):
                found.append(indices[at])
        if op["op"] == "wait_fences":
            for fence in op["fences"]:
                indices, signals = self.fence_events.get(fence, ([], []))
                at = bisect_left(indices, index)
                if at and signals[at - 1]:  # signaled, not reset since
                    continue
                signal = next((i for i in range(at, len(indices)) if signals[i]), None)  # the first after
                if signal is not None:
                    found.append(indices[signal])
        return max(found)
