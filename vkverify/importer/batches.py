"""A submit host op's batches as tuples, not as the dicts of their JSON: a long run submits hundreds of
thousands of times, and each batch's dict, its lists and its semaphore ops' dicts were 0.4 KB of the
submit's 1.2 KB (a third of a 10^6-call import's memory). The walks read them by field; the writer
(model.dump.document_chunks) and the stream's loading (`as_json`) read their JSON.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ImportedBatch", "ImportedSemaphoreOp"]


class ImportedSemaphoreOp(NamedTuple):
    """A batch's wait or signal of a semaphore (the stream's semaphore op)."""

    semaphore: str
    stage: list[str]
    value: int | None  # None: none given (a binary semaphore's, or a timeline's the program left out)
    timeline: bool  # a timeline semaphore's: its `value` is in the stream, null included

    def as_json(self) -> dict:
        if self.timeline:
            return {"semaphore": self.semaphore, "stage": self.stage, "value": self.value}
        return {"semaphore": self.semaphore, "stage": self.stage}


class ImportedBatch(NamedTuple):
    """One VkSubmitInfo of a submit: its waits, command buffers (stream ids) and signals."""

    wait: tuple[ImportedSemaphoreOp, ...]
    command_buffers: tuple[str, ...]
    signal: tuple[ImportedSemaphoreOp, ...]

    def as_json(self) -> dict:
        return {"wait": [s.as_json() for s in self.wait], "command_buffers": list(self.command_buffers),
                "signal": [s.as_json() for s in self.signal]}
