"""Readings of a text kept by the text's digest: a log is read by the triage step, the rules
and the diagnosis, each wanting the same reading of the same text (a 10 MB log, three times).

`by_text` wraps a function of one str whose result is immutable; the last few results are
kept, keyed by a BLAKE2b digest of the text (never by the text itself: no reference to it is
held).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: texts remembered per function (a triage reads a few files; a capture a log per service)
KEEP = 16


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def by_text(fn: Callable[[str], T]) -> Callable[[str], T]:
    """``fn(text)``, remembered for the last KEEP texts by their digest. Short texts are
    read again (the digest would cost more than the reading)."""
    kept: OrderedDict[bytes, T] = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(fn)
    def wrapper(text: str) -> T:
        if len(text) < 65536:
            return fn(text)
        key = digest(text)
        with lock:
            if key in kept:
                kept.move_to_end(key)
                return kept[key]
        value = fn(text)
        with lock:
            kept[key] = value
            while len(kept) > KEEP:
                kept.popitem(last=False)
        return value

    return wrapper
