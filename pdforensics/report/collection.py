"""Collection log: every collector with status, duration, bytes, timeouts, errors, raw file."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.capture.completeness import server_hung
from pdforensics.report.common import dur, hms, host_id, href, size
from pdforensics.views.loaded import LoadedCapture


@dataclass(frozen=True)
class EntryRow:
    source: str
    key: str
    target: str
    started: str
    state: str  # ok | failed | timeout | error
    status: str
    duration: str
    duration_s: float
    bytes: str
    nbytes: int
    truncated: bool
    detail: str
    href: str | None
    path: str | None


@dataclass(frozen=True)
class HostLog:
    host: str
    anchor: str
    address: str
    reachable: bool
    error: str | None
    rows: tuple[EntryRow, ...]
    failed: int
    open: bool  # shown unfolded: only a host that could not be reached


@dataclass(frozen=True)
class CollectionView:
    hosts: tuple[HostLog, ...]
    total: int
    failed: int
    timed_out: int
    bytes: str
    parse_errors: tuple[str, ...]
    partial_reasons: tuple[str, ...]
    deep: str | None = None  # capture --deep: what it did and the pause it caused


def _target(e: ResultEntry) -> str:
    t = e.target or {}
    bits = [f"{k}={t[k]}" for k in ("role", "port", "pid", "rank", "kind", "unit", "sample")
            if t.get(k) is not None]
    return " ".join(bits)


#: nvidia-smi's exit status when the host has no GPU ("No devices were found", NVML not
#: found) and the shell's when nvidia-smi is not installed: an expected absence, not a failure
NO_GPU_EXITS = frozenset({6, 127})


def no_gpu(e: ResultEntry) -> bool:
    """An nvidia-smi run that says the host has no GPU (the router's host, a CPU node)."""
    return (e.source.startswith("nvidia_smi") and not e.timed_out and not e.error
            and e.exit_status in NO_GPU_EXITS)


def _row(e: ResultEntry, prefix: str) -> EntryRow:
    if no_gpu(e):
        state, status = "absent", "no GPU"
    elif server_hung(e):  # the server took the request and never answered: evidence
        state, status = "hung", "hung (evidence)"
    elif e.timed_out:
        state, status = "timeout", "timed out"
    elif e.error:
        state, status = "error", "error"
    elif e.exit_status == 0:
        state, status = "ok", "ok"
    else:
        state, status = "failed", f"exit {e.exit_status}"
    detail = e.error or ""
    if state not in ("ok", "absent") and e.stderr.strip():
        tail = e.stderr.strip().splitlines()[-1]
        detail = f"{detail}; {tail}" if detail else tail
    what = e.url or " ".join(e.argv or ())
    return EntryRow(source=e.source, key=e.key, target=_target(e), started=hms(e.started_at),
                    state=state, status=status, duration=dur(e.duration_s),
                    duration_s=e.duration_s, bytes=size(e.bytes), nbytes=e.bytes,
                    truncated=e.truncated, detail=(detail[:300] or what[:300]),
                    href=href(prefix, e.path), path=e.path)


def build_collection(capture: LoadedCapture, prefix: str) -> tuple[CollectionView, list[str]]:
    """Every manifest row per host, in start order, with a relative link to its raw file."""
    by_host: dict[str, list[ResultEntry]] = {}
    for e in capture.results:
        by_host.setdefault(e.host, []).append(e)
    hosts = []
    names = [h.name for h in capture.hosts] + [n for n in by_host if n not in
                                               {h.name for h in capture.hosts}]
    meta = {h.name: h for h in capture.hosts}
    for name in names:
        rows = tuple(_row(e, prefix) for e in sorted(by_host.get(name, []),
                                                     key=lambda e: e.started_at))
        h = meta.get(name)
        reachable = h.reachable if h else True
        failed = sum(1 for r in rows if r.state not in ("ok", "absent", "hung"))
        hosts.append(HostLog(host=name, anchor=host_id(name), address=h.address if h else "",
                             reachable=reachable, error=h.error if h else None, rows=rows,
                             failed=failed, open=not reachable))
    all_rows = [r for h in hosts for r in h.rows]
    missing = []
    if not all_rows:
        missing.append("the manifest lists no results")
    return CollectionView(
        hosts=tuple(hosts), total=len(all_rows),
        failed=sum(1 for r in all_rows if r.state not in ("ok", "absent", "hung")),
        timed_out=sum(1 for r in all_rows if r.state == "timeout"),
        bytes=size(sum(r.nbytes for r in all_rows)), parse_errors=capture.parse_errors,
        partial_reasons=capture.partial_reasons,
        deep=deep_statement(capture.bundle.manifest.get("deep"))), missing


def deep_statement(deep: object) -> str | None:
    """One sentence on what --deep did: which tool, how many ranks, the pause each had."""
    if not isinstance(deep, dict) or not deep.get("enabled"):
        return None
    got = deep.get("ranks")
    ranks: list[object] = list(got) if isinstance(got, list) else []
    ok = len([r for r in ranks if isinstance(r, dict) and r.get("ok")])
    longest = deep.get("max_pause_s")
    limit = deep.get("timeout_s_per_rank")
    return (f"--deep: cuda-gdb stopped {len(ranks)} rank(s) to read their GPU kernels ({ok} "
            f"read); each pause at most {limit} s, the longest {longest} s.")
