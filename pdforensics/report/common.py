"""Shared helpers of the report: time and size formatting, the section guard."""

from __future__ import annotations

import traceback
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from pdforensics import linear
from pdforensics.views.loaded import Fetch, ServiceView

_UNSAFE_NAME = linear.compile(r"[^A-Za-z0-9_.-]")

#: Section ids, in page order (anchors of the links in findings).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("verdict", "Verdict"),
    ("topology", "Topology"),
    ("timeline", "Timeline"),
    ("changes", "Changes since baseline"),
    ("metrics", "Metrics"),
    ("requests", "Requests"),
    ("history", "Prometheus history"),
    ("gpus", "GPUs"),
    ("stacks", "Stacks"),
    ("config", "Configuration"),
    ("collection", "Collection log"),
)


@dataclass(frozen=True)
class Section:
    """One report section: its data for the template, or what is missing and why."""

    id: str
    title: str
    data: Any
    missing: tuple[str, ...] = ()
    failed: str | None = None  # the section's builder raised: say so, render the rest


def guarded(sid: str, title: str, build: Callable[[], tuple[Any, list[str]]]) -> Section:
    """Run one section builder; an exception becomes a visible note, never a lost report."""
    try:
        data, missing = build()
    except Exception as exc:  # a report must render whatever one section does
        last = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        return Section(sid, title, None, (), f"{type(exc).__name__}: {exc}{where}")
    return Section(sid, title, data, tuple(missing))


def utc(t: float | None, seconds: bool = True) -> str:
    if not t:
        return "—"
    fmt = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return datetime.fromtimestamp(t, timezone.utc).strftime(fmt) + " UTC"


def hms(t: float | None) -> str:
    if not t:
        return "—"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")


def dur(s: float | None) -> str:
    if s is None:
        return "—"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def size(n: int | None) -> str:
    if n is None:
        return "—"
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"


def num(v: float | None) -> str:
    if v is None:
        return "—"
    if v != v:  # NaN
        return "NaN"
    if abs(v) >= 1e15 or v in (float("inf"), float("-inf")):
        return f"{v:.3g}"
    if float(v).is_integer():
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.1f}"
    return f"{v:.3g}"


def fetch_state(f: Fetch | None) -> tuple[str, str]:
    """(css class, words) for one HTTP fetch: ok / bad / hung / missing."""
    if f is None:
        return "missing", "not collected"
    if f.timed_out:
        return "hung", f"no answer in {f.duration_s:.1f} s"
    if f.error and f.status is None:
        return "bad", f.error[:120]
    if f.status is None:
        tail = f.stderr.strip().splitlines()[-1][:120] if f.stderr.strip() else ""
        return "bad", f"no HTTP response (exit {f.exit_status}){': ' + tail if tail else ''}"
    if 200 <= f.status < 300:
        return "ok", f"HTTP {f.status} in {f.duration_s:.2f} s"
    return "bad", f"HTTP {f.status}"


def anchor(text: str) -> str:
    """An element id from arbitrary text (host names come from config files)."""
    return _UNSAFE_NAME.sub("_", text)


def service_id(s: ServiceView) -> str:
    """A stable anchor for one service (its block in the Metrics section)."""
    return anchor(f"svc-{s.host}-{s.role}-{s.port}")


def host_id(name: str) -> str:
    """A stable anchor for one host (its block in the Collection log)."""
    return anchor(f"host-{name}")


def href(prefix: str, path: str | None) -> str | None:
    """A relative link to a bundle file, or None for anything that is not a plain relative path.

    Paths come from the manifest or analysis.json, so a scheme (``javascript:``), an absolute
    path or ``..`` never becomes a link; each segment is percent-encoded.
    """
    if not path or path.startswith(("/", "\\")) or ":" in path.split("/", 1)[0]:
        return None
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return prefix + "/".join(urllib.parse.quote(p, safe="") for p in parts)
