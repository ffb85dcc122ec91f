"""Loose files -> the Sources the evidence readers read (analysis/pdpath).

Every file given becomes at least one Source, read or not (its text is kept), so a reader of
a format triage does not detect still gets it. A log written by several services (docker
compose, journald) becomes one Source per writer, with the role its name gives; a file's own
name gives the role otherwise (``decode-0.log``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pdforensics.analysis.pdpath.sources import Source
from pdforensics.triage.logs import role_of, split_by_writer
from pdforensics.triage.read import Artifact

_TEXT_KINDS = ("log", "stacks", "pyspy_error", None)


def _role(path: str) -> str | None:
    """The role a file's name gives (``decode-0.log``), only when it names one role."""
    if path == "-":
        return None
    name = Path(path).name.lower()
    named = {r for r in ("prefill", "decode", "router") if r in name}
    return role_of(name) if len(named) == 1 else None


def artifact_sources(art: Artifact) -> Iterator[Source]:
    kind = art.kind if art.usable else None
    role = _role(art.path)
    if art.data:
        yield Source(art.path, kind, role=role, data=art.data, taken_at=art.taken_at)
        return
    if kind == "metrics":
        yield Source(art.path, kind, role=role, text=art.text,
                     metrics=tuple((s.taken_at, s.snapshot) for s in art.scrapes))
        return
    if kind == "goroutines":
        yield Source(art.path, kind, role=role, text=art.text, goroutines=art.goroutines)
        return
    if kind == "server_info":
        yield Source(art.path, kind, role=role, text=art.text, json=art.server_info,
                     taken_at=art.taken_at)
        return
    groups = split_by_writer(art.text) if kind in _TEXT_KINDS and art.text else {}
    if len(groups) > 1:
        for writer, text in groups.items():
            yield Source(f"{art.path}:{writer}" if writer else art.path, kind,
                         role=role_of(writer) if writer else role, text=text,
                         taken_at=art.taken_at)
        if art.dumps:
            yield Source(art.path, "stacks", role=role, dumps=art.dumps, taken_at=art.taken_at)
        return
    yield Source(art.path, kind, role=role, text=art.text, dumps=art.dumps,
                 taken_at=art.taken_at, processes=art.processes)


def triage_sources(artifacts: Sequence[Artifact]) -> list[Source]:
    return [s for a in artifacts for s in artifact_sources(a)]
