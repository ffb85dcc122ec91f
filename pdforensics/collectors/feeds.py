"""How a source's reading feeds the loaded capture: the view it fills and the merge that does it.

Each ``Source`` in ``collectors/`` names a ``Feed``: a view key ``"<level>.<field>"`` (level
``host``, ``service`` or ``process``: a field of ``HostView``, ``ServiceView`` or
``ProcessView`` in ``loaded.py``) and a merge function. ``loaded.py`` walks the registry: for
each result it finds the view at the feed's level and calls the merge with that view's
keyword arguments (a dict), the field name and a ``Reading`` of the result. Feeds at level
``capture`` are read while capturing (discovery) or by another command (catalog), not by
the loader; they carry no merge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.errors import ParseError
from pdforensics.parsers.beneath import read_beneath
from pdforensics.parsers.frames import ProcessDump, PyspyFailure
from pdforensics.parsers.http import HttpResponse
from pdforensics.parsers.logstacks import harvest_log_stacks
from pdforensics.parsers.prometheus import MetricsSnapshot, parse_metrics
from pdforensics.parsers.pyspy import classify_pyspy_error

LOADED_LEVELS = ("host", "service", "process")
CAPTURE_LEVEL = "capture"  # read during the capture or by another command, not loaded


class Reading:
    """One result as a merge sees it: its manifest row, its parsed value, its raw text."""

    def __init__(self, entry: ResultEntry, parse: Callable[[ResultEntry], Any],
                 raw: Callable[[ResultEntry], bytes], errors: list[str]):
        self.entry = entry
        self._parse = parse
        self._raw = raw
        self._errors = errors

    def value(self) -> Any:
        """The parser's value (from parsed/ or the raw file); None after a parse error."""
        return self._parse(self.entry)

    def text(self) -> str:
        return self._raw(self.entry).decode("utf-8", "replace")

    def error(self, message: str) -> None:
        """Record a parse problem found while merging (it shows as a parse error)."""
        self._errors.append(f"{self.entry.host} {self.entry.key}: {message}")


Merge = Callable[[dict[str, Any], str, Reading], None]


@dataclass(frozen=True)
class Feed:
    """The view a source fills: ``view`` = "<level>.<field>", ``merge`` fills it."""

    view: str
    merge: Merge | None = None

    @property
    def level(self) -> str:
        return self.view.split(".", 1)[0]

    @property
    def field(self) -> str:
        return self.view.split(".", 1)[1]


# -- evidence records built by the merges -------------------------------------------------
@dataclass(frozen=True)
class Fetch:
    """One HTTP fetch as evidence: how it ended and what came back."""

    key: str
    source: str
    url: str | None
    started_at: float
    duration_s: float
    timed_out: bool
    error: str | None
    exit_status: int | None
    response: HttpResponse | None
    stderr: str = ""

    @property
    def status(self) -> int | None:
        return self.response.status if self.response is not None else None

    @property
    def answered(self) -> bool:
        return self.status is not None and not self.timed_out

    def json(self) -> Any:
        if self.response is None or not self.response.body:
            return None
        try:
            return json.loads(self.response.body)
        except (ValueError, RecursionError):  # a host's body, even one nested to crash a reader
            return None


@dataclass(frozen=True)
class MetricSample:
    """One /metrics scrape: when it was taken and what it said."""

    key: str
    taken_at: float
    fetch: Fetch
    snapshot: MetricsSnapshot | None  # None when the scrape failed


@dataclass(frozen=True)
class StackDump:
    """One py-spy run against one process: a parsed dump or the failure and its fix."""

    key: str
    taken_at: float
    duration_s: float
    dumps: tuple[ProcessDump, ...]
    failure: PyspyFailure | None
    timed_out: bool
    error: str | None


# -- merges ---------------------------------------------------------------------------------
def first_ok(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The first result that ran cleanly and parsed sets the field."""
    if field not in acc and r.entry.ok:
        value = r.value()
        if value is not None:
            acc[field] = value


def first_ok_dict(acc: dict[str, Any], field: str, r: Reading) -> None:
    """As first_ok, kept as a plain dict (a Mapping reading such as Packages)."""
    if field not in acc and r.entry.ok:
        value = r.value()
        if value is not None:
            acc[field] = dict(value)


def first_ok_text(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The raw text of the first clean result (unit files: shown as they are)."""
    if field not in acc and r.entry.ok:
        acc[field] = r.text()


def first_ok_line(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The stripped raw text of the first clean result (uname)."""
    if field not in acc and r.entry.ok:
        acc[field] = r.text().strip()


def gpu_table(acc: dict[str, Any], field: str, r: Reading) -> None:
    """nvidia-smi's GPU table, or why it is missing (``gpu_error``), from the first run."""
    if "gpu_error" in acc:
        return
    e = r.entry
    acc["gpu_error"] = None if e.ok else why_failed(e)
    if e.ok:
        acc[field] = r.value() or ()


def fetch_of(r: Reading) -> Fetch:
    e = r.entry
    resp = r.value() if e.path else None
    return Fetch(key=e.key, source=e.source, url=e.url, started_at=e.started_at,
                 duration_s=e.duration_s, timed_out=e.timed_out, error=e.error,
                 exit_status=e.exit_status, response=resp, stderr=e.stderr)


def fetch(acc: dict[str, Any], field: str, r: Reading) -> None:
    """An HTTP endpoint: fetches[source] (health, server_info, ...)."""
    if r.entry.url is not None:
        acc[field] = {**acc.get(field, {}), r.entry.source: fetch_of(r)}


def metric_sample(acc: dict[str, Any], field: str, r: Reading) -> None:
    """A /metrics scrape, kept in time order; the body is read as Prometheus text."""
    f = fetch_of(r)
    snap = None
    if f.answered and f.status == 200 and f.response is not None:
        try:
            snap = parse_metrics(f.response.body.decode("utf-8", "replace"))
        except ParseError as exc:
            r.error(str(exc))
    sample = MetricSample(r.entry.key, r.entry.started_at, f, snap)
    acc[field] = tuple(sorted((*acc.get(field, ()), sample), key=lambda m: m.taken_at))


def stack_dump(acc: dict[str, Any], field: str, r: Reading) -> None:
    """A py-spy run: its dumps, or the classified failure and its fix; in time order."""
    e = r.entry
    dumps: tuple[ProcessDump, ...] = ()
    if e.exit_status == 0:
        dumps = r.value() or ()
    failure = None
    if e.exit_status != 0 or e.timed_out or e.error:
        failure = classify_pyspy_error(e.stderr or r.text(), e.exit_status)
    sd = StackDump(key=e.key, taken_at=e.started_at, duration_s=e.duration_s, dumps=dumps,
                   failure=failure, timed_out=e.timed_out, error=e.error)
    acc[field] = tuple(sorted((*acc.get(field, ()), sd), key=lambda s: s.taken_at))


def log_hits(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The first log read (journal or file): its signature hits and where they came from."""
    if "log_source" in acc or not r.entry.path:
        return
    acc[field] = tuple(r.value() or ())
    acc["log_source"] = r.entry.source
    acc["log_entry"] = r.entry
    # the same text holds SGLang's own stack dumps (watchdog, faulthandler): harvested here,
    # so a wedge that happened an hour ago still has stacks (analysis/log_stacks.py)
    text = r.text()
    acc["log_stacks"] = harvest_log_stacks(text)
    # and what lies beneath SGLang: torch's NCCL watchdog, NCCL's lines, Mooncake / NIXL
    acc["beneath"] = read_beneath(text) or None


def clock_offset(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The host's clock minus ours: what it printed minus the midpoint of the round trip."""
    if field in acc or not r.entry.ok:
        return
    value = r.value()
    if isinstance(value, float):
        acc[field] = value - (r.entry.started_at + r.entry.duration_s / 2)


def why_failed(e: ResultEntry) -> str:
    """One line on why a command gave no usable output."""
    if e.error:
        return e.error
    if e.timed_out:
        return f"timed out after {e.duration_s:.1f}s"
    tail = e.stderr.strip().splitlines()[-1] if e.stderr.strip() else ""
    return f"exit status {e.exit_status}" + (f": {tail[:200]}" if tail else "")
