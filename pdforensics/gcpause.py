"""The cyclic garbage collector paused around a bounded, one-shot reading.

Reading a large log makes hundreds of thousands of small objects that live until the reading
ends (signature lines, clues). Each of the collector's passes walks every young object, so
about a tenth of a 100 MB triage went to passes that freed nothing. Reference counting still
frees everything a reading drops; only garbage held in cycles waits until the pause ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block (as it was after it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
