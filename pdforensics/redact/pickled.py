"""A pickled dump (a Flight Recorder file) redacted without ever running it: its plain data is
read by parsers.safe_pickle, every string (keys too) scrubbed as text, and the result written as
the dump's JSON form -- so no pickle, and no secret, reaches the bundle. A stream that is not a
readable plain pickle is scrubbed as bytes instead (its secrets still go; the reader then says
it cannot read it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pdforensics.errors import ParseError
from pdforensics.parsers.safe_pickle import load_plain, looks_like_pickle

_MAX_DEPTH = 64


def _scrubbed(value: Any, scrub: Callable[[str], str], depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, bytes | bytearray):
        return scrub(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, dict):
        return {scrub(str(k)): _scrubbed(v, scrub, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_scrubbed(v, scrub, depth + 1) for v in value]
    if isinstance(value, float) and value != value:
        return None  # NaN is no JSON
    return value


def redact_pickled(data: bytes, scrub: Callable[[str], str], scrub_bytes: Callable[[bytes], bytes]
                   ) -> bytes:
    """``data`` as redacted JSON when it is a plain pickle, else as redacted bytes."""
    if not looks_like_pickle(data):
        return scrub_bytes(data)
    try:
        obj = load_plain(data)
    except ParseError:
        return scrub_bytes(data)
    return json.dumps(_scrubbed(obj, scrub), allow_nan=False, default=str).encode("utf-8")
