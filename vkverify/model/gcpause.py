"""The cyclic garbage collector paused while millions of acyclic objects are made (a loaded stream,
the checker's clocks): CPython would rescan all of them on every full pass."""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["cyclic_gc_paused"]


@contextmanager
def cyclic_gc_paused():
    """Paused inside the block, as it was after (nested blocks leave it to the outermost)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
