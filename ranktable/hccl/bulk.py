"""Building tens of thousands of small objects (a 65,536-rank table) without the cyclic GC in the way."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while building tens of thousands of small objects: with a large
    table alive, each generation-2 pass re-walks it, which otherwise triples the planning time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
