"""Secret values a store's captures learned, kept as markers (never values) for later captures.

A value redacted in one snapshot (a server's `--api-key`, a token in a log) is scrubbed from later
snapshots of the store too, even from one that does not read the command line again: the store
keeps `(length, marker)` of each learned value, the same keyed hash the bundles already show, and
the next capture's redactor replaces any token of that length whose marker matches
(Redactor.remember). Markers of another key do not match: the file is per key id.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

LEARNED = "learned-markers.json"
MAX_KEPT = 4096


def load_learned(store: Path, key_id: str) -> list[tuple[int, str]]:
    try:
        doc = json.loads((store / LEARNED).read_text())
    except (OSError, ValueError, RecursionError):
        return []
    rows = doc.get(key_id) if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        return []
    return [(r[0], r[1]) for r in rows
            if isinstance(r, list) and len(r) == 2 and isinstance(r[0], int) and isinstance(r[1], str)]


def save_learned(store: Path, key_id: str, markers: list[tuple[int, str]]) -> None:
    """Add markers to the store's file (owner-only), newest kept when over MAX_KEPT."""
    try:
        doc = json.loads((store / LEARNED).read_text())
    except (OSError, ValueError, RecursionError):
        doc = {}
    if not isinstance(doc, dict):
        doc = {}
    old = load_learned(store, key_id)
    merged = list(dict.fromkeys([*old, *markers]))[-MAX_KEPT:]
    doc[key_id] = [list(m) for m in merged]
    tmp = store / (LEARNED + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, store / LEARNED)
