"""Fault points, each one injectable: VKVERIFY_FAULT=<point>[:n]
fails the n-th hit of `point`."""

from __future__ import annotations

__all__ = ["FAULT_POINTS", "Faults"]

# stage: no staging slot; block: a destination block; record: a copy; submit; wait: a fence wait
# (the device is lost); commit: a group after its first tensor; read: a file read of upload_file().
FAULT_POINTS = ("stage", "block", "record", "submit", "wait", "commit", "read")


class Faults:
    """The hits of each point so far, and the ones that fired."""

    def __init__(self, spec: str | None) -> None:
        self.point, self.nth, self.hits, self.fired = None, 1, dict.fromkeys(FAULT_POINTS, 0), []
        if spec:
            point, _, nth = spec.partition(":")
            if point not in FAULT_POINTS or (nth and not nth.isdigit()):
                raise ValueError(f"VKVERIFY_FAULT={spec!r} must be <point>[:n] with point one of {FAULT_POINTS}")
            self.point, self.nth = point, int(nth or 1)

    def hit(self, point: str) -> bool:
        """Count a hit of `point`; True when it is the one that fails."""
        self.hits[point] += 1
        if point == self.point and self.hits[point] == self.nth:
            self.fired.append(f"{point}:{self.nth}")
            return True
        return False
