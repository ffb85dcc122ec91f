"""GPU health rows of the report: NVLink error counters, row remapper state, NVML readings."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.views.loaded import HostView

NVLINK_COUNTERS = ("Replay Errors", "Recovery Errors", "CRC Errors")


@dataclass(frozen=True)
class HealthRow:
    gpu: str
    check: str  # "NVLink", "row remapper", "NVML"
    state: str
    bad: bool


def nvlink_rows(h: HostView) -> list[HealthRow]:
    rows = []
    for g in h.nvlink:
        totals = {c: g.total(c) for c in NVLINK_COUNTERS}
        state = ", ".join(f"{c.lower()} {n}" for c, n in totals.items())
        rows.append(HealthRow(f"{g.index} {g.name}", "NVLink", f"{len(g.links)} links: {state}",
                              any(totals.values())))
    return rows


def row_remap_rows(h: HostView) -> list[HealthRow]:
    rows = []
    for r in h.row_remap:
        if not r.supported:
            rows.append(HealthRow(r.bus_id, "row remapper", "not supported", False))
            continue
        state = (f"pending {'yes' if r.pending else 'no'}, failure "
                 f"{'yes' if r.failure_occurred else 'no'}, rows correctable {r.correctable} / "
                 f"uncorrectable {r.uncorrectable}")
        rows.append(HealthRow(r.bus_id, "row remapper", state,
                              bool(r.pending or r.failure_occurred)))
    return rows


def nvml_rows(h: HostView) -> list[HealthRow]:
    n = h.nvml
    if n is None:
        return []
    if not n.available:
        return [HealthRow("—", "NVML", f"unavailable: {n.error or 'no reason given'}", False)]
    rows = []
    for g in n.gpus:
        errs = "; ".join(f"{k}: {v}" for k, v in g.errors)
        state = (f"driver {n.driver_version or '?'}, pids {', '.join(map(str, g.pids)) or '—'}"
                 + (f"; unreadable: {errs}" if errs else ""))
        rows.append(HealthRow(f"{g.index} {g.name}", "NVML", state, False))
    return rows


def health_rows(h: HostView) -> tuple[HealthRow, ...]:
    """Every GPU health reading of one host, bad ones marked."""
    return tuple(nvlink_rows(h) + row_remap_rows(h) + nvml_rows(h))
