"""The stream format's JSON Schema (stream.schema.json), read once: the loader validates with it,
`params` finds in it the fields an expression may stand for."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

__all__ = ["schema"]


@cache
def schema() -> dict:
    return json.loads(resources.files(__package__).joinpath("stream.schema.json").read_text())
