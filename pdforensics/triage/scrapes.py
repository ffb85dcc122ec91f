"""/metrics scrapes as pasted: one or several in one text, each with the time it was taken."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.prometheus import MetricsSnapshot, parse_metrics
from pdforensics.triage.unwrap import unwrap, wrapper_line

_META = linear.compile(r"^# (?:HELP|TYPE|UNIT) ([a-zA-Z_:][a-zA-Z0-9_:]*)")
_SAMPLE = linear.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[ \t]*(\{[^\n]*\})?[ \t]+"
                     r"([-+]?(?:[0-9][0-9_.eE+-]*|\.[0-9]+|[Nn]a[Nn]|[Ii]nf)|[-+][Ii]nf)"
                     r"(?:[ \t]+[-+]?[0-9.eE+-]+)?[ \t]*(?:#.*)?$")


@dataclass(frozen=True)
class Scrape:
    """One /metrics scrape: its samples, when it was taken (None: unknown), its HTTP status."""

    snapshot: MetricsSnapshot
    taken_at: float | None
    status: int | None = None


def metric_line(line: str) -> bool:
    """A ``# HELP/TYPE/UNIT/EOF`` line or a sample line."""
    s = line.strip()
    return bool(s == "# EOF" or _META.match(s) or _SAMPLE.match(s))


def looks_like_metrics(text: str) -> bool:
    """Mostly exposition lines (HTTP heads, prompts and date lines aside), with a sample."""
    total = metric = samples = 0
    lines = text.split("\n", 20000)[:20000]
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s or wrapper_line(s):
            continue
        total += 1
        if metric_line(s):
            metric += 1
            samples += not s.startswith("#")
        elif i % 512 == 0:  # even were every line left a metric line, too few: not a scrape
            left = len(lines) - i - 1
            if metric + left < 0.6 * (total + left):
                return False
    return samples > 0 and metric >= 0.6 * total


def split_scrapes(text: str) -> list[str]:
    """Cut a text holding several scrapes into one text per scrape.

    A new scrape starts at a response head, a prompt or a date line that follows samples,
    after ``# EOF``, or where a family's ``# HELP``/``# TYPE`` or a series repeats.
    """
    parts: list[list[str]] = [[]]
    meta: set[tuple[str, str]] = set()
    series: set[str] = set()
    has_samples = eof = False
    for raw in text.split("\n"):
        s = raw.strip()
        cut = False
        if s:
            if eof or (has_samples and wrapper_line(s)):
                cut = True
            elif (m := _META.match(s)) is not None:
                cut = (s[2:6], m.group(1)) in meta
            elif _SAMPLE.match(s):
                key = s.rsplit(None, 1)[0] if "}" not in s else s[:s.rindex("}") + 1]
                cut = key in series
        if cut and has_samples:
            parts.append([])
            meta, series, has_samples, eof = set(), set(), False, False
        parts[-1].append(raw)
        if not s:
            continue
        if s == "# EOF":
            eof = True
        elif (m := _META.match(s)) is not None:
            meta.add((s[2:6], m.group(1)))
        elif _SAMPLE.match(s):
            has_samples = True
            series.add(s.rsplit(None, 1)[0] if "}" not in s else s[:s.rindex("}") + 1])
    return ["\n".join(p) for p in parts if any(metric_line(x) for x in p)]


def _sample_time(snap: MetricsSnapshot) -> float | None:
    """The newest sample timestamp as epoch seconds (ms in Prometheus text, s in OpenMetrics)."""
    stamps = [s.timestamp for s in snap.samples if s.timestamp is not None
              and math.isfinite(s.timestamp)]
    if not stamps:
        return None
    t = max(stamps)
    return t / 1000.0 if t > 1e11 else t


def read_scrapes(text: str) -> tuple[Scrape, ...]:
    """Every scrape in ``text`` with its time (Date header, date line, sample timestamps)."""
    out = []
    for part in split_scrapes(text):
        u = unwrap(part)
        snap = parse_metrics(u.text)
        if not len(snap):
            continue
        taken = u.taken_at if u.taken_at is not None else _sample_time(snap)
        out.append(Scrape(snap, taken, u.status))
    return tuple(out)
