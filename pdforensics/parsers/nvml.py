"""The NVML probe's JSON -> typed GPU readings (or the reason NVML was unavailable)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from pdforensics.errors import ParseError


@dataclass(frozen=True)
class NvmlGpu:
    index: int
    name: str
    uuid: str
    utilization_pct: float | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    pids: tuple[int, ...]
    errors: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class NvmlReport:
    available: bool
    error: str | None = None
    driver_version: str | None = None
    gpus: tuple[NvmlGpu, ...] = ()


def _num(v: object) -> float | None:
    """A finite number, else None (JSON's NaN/Infinity are no reading)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except OverflowError:  # an int too large for a float
        return None
    return f if math.isfinite(f) else None


def parse_nvml(text: str) -> NvmlReport:
    """Parse `python -m pdforensics.collectors.nvml_probe` output."""
    if not text.strip():
        return NvmlReport(available=False, error="no output")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ParseError(f"NVML probe output is not JSON ({exc})",
                         line=text.splitlines()[0] if text.splitlines() else text) from None
    if not isinstance(doc, dict):
        raise ParseError("NVML probe output is not a JSON object", line=text[:200])
    gpus: list[NvmlGpu] = []
    raw_gpus = doc.get("gpus")
    for g in raw_gpus if isinstance(raw_gpus, list) else []:
        if not isinstance(g, dict):
            continue
        used, total = _num(g.get("memory_used")), _num(g.get("memory_total"))
        raw_pids = g.get("pids")
        pids = raw_pids if isinstance(raw_pids, list) else []
        gpus.append(NvmlGpu(
            index=int(g.get("index", len(gpus))) if isinstance(g.get("index"), int) else len(gpus),
            name=str(g.get("name", "")), uuid=str(g.get("uuid", "")),
            utilization_pct=_num(g.get("utilization")),
            memory_used_bytes=int(used) if used is not None else None,
            memory_total_bytes=int(total) if total is not None else None,
            pids=tuple(p for p in pids if isinstance(p, int)),
            errors=tuple(sorted((k[:-6], str(v)) for k, v in g.items() if k.endswith("_error"))),
        ))
    return NvmlReport(available=bool(doc.get("available")),
                      error=str(doc["error"]) if doc.get("error") else None,
                      driver_version=str(doc["driver_version"]) if doc.get("driver_version")
                      else None, gpus=tuple(gpus))
