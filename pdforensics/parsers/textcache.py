"""Readings of a text kept by the text's digest: a log is read by the triage step, the rules
and the diagnosis, each wanting the same reading of the same text (a 10 MB log, three times).

`by_text` wraps a function of one str whose result is immutable; the last few results are
kept, keyed by a BLAKE2b digest of the text (never by the text itself). The digest of the
last large text digested is kept beside a reference to that text, so the readers asking for
the same text in turn hash it once (one text held, at most).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from pdforensics.parsers.linescan import encoded

T = TypeVar("T")

#: texts remembered per function (a triage reads a few files; a capture a log per service)
KEEP = 16


_LAST: tuple[str, bytes] = ("", b"")


def digest(text: str) -> bytes:
    """The text's BLAKE2b digest (16 bytes); the last one of a large text is remembered."""
    global _LAST
    last = _LAST
    if last[0] is text:
        return last[1]
    # the bytes the line scans read too (parsers/linescan.py): a large text is encoded once
    value = hashlib.blake2b(encoded(text), digest_size=16).digest()
    if len(text) >= 65536:
        _LAST = (text, value)
    return value


class Memo:
    """The last ``keep`` values by key, thread-safe (a capture reads its hosts in threads)."""

    def __init__(self, keep: int = KEEP) -> None:
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value kept for ``key``, else None."""
        with self._lock:
            if key not in self._kept:
                return None
            self._kept.move_to_end(key)
            return self._kept[key]

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._kept[key] = value
            while len(self._kept) > self._keep:
                self._kept.popitem(last=False)


def by_text(fn: Callable[[str], T]) -> Callable[[str], T]:
    """``fn(text)``, remembered for the last KEEP texts by their digest. Short texts are
    read again (the digest would cost more than the reading)."""
    memo = Memo()

    @functools.wraps(fn)
    def wrapper(text: str) -> T:
        if len(text) < 65536:
            return fn(text)
        key = digest(text)
        known = memo.get(key)
        if known is None:
            known = fn(text)
            memo.put(key, known)
        return known  # type: ignore[no-any-return]

    return wrapper
