"""The one base of every error vkverify raises on purpose, importable by every layer (the
shader library below the model included). Each subclass's docstring says who should see it."""

from __future__ import annotations

__all__ = ["VkverifyError"]


class VkverifyError(Exception):
    """Something vkverify cannot do with what it was given: bad input (a stream, a capture, an
    argument), a device that cannot run it, a tool missing. `except VkverifyError` catches every
    error vkverify means to raise; anything else is a bug. Users of the CLI see `lines()`, one
    line per problem, `WHERE: what is wrong`."""

    def lines(self) -> list[str]:
        return [str(self)]
