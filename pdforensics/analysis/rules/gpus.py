"""GPU health beyond utilisation: pending row remaps and NVLink errors."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context

NVLINK_COUNTERS = ("Replay Errors", "Recovery Errors", "CRC Errors")


@rule("GPU_ROW_REMAP_PENDING", needs=(Need.ROW_REMAP,), rank=13)
def row_remap_pending(ctx: Context) -> Iterator[Finding]:
    """A GPU with a row remap pending (needs a reset) or a failed remap (needs service)."""
    for h in ctx.capture.hosts:
        bad = [r for r in h.row_remap if r.pending or r.failure_occurred]
        if not bad:
            continue
        failed = any(r.failure_occurred for r in bad)
        ev = tuple(Evidence(h.name, "nvidia-smi -q -d ROW_REMAPPER",
                            f"GPU {r.bus_id}: pending {r.pending}, remap failure "
                            f"{r.failure_occurred}, uncorrectable rows {r.uncorrectable}")
                   for r in bad)
        yield Finding(
            "GPU_ROW_REMAP_PENDING", "critical" if failed else "warning",
            f"{h.name}: {len(bad)} GPU(s) with a row remap pending or failed", ev,
            "A pending remap takes effect only after a GPU reset: drain the node and reset "
            "the GPU. A remap failure means the GPU is out of spare rows: replace it.",
            section="gpu")


@rule("NVLINK_ERRORS", needs=(Need.NVLINK,), rank=14)
def nvlink_errors(ctx: Context) -> Iterator[Finding]:
    """NVLink links with replay, recovery or CRC errors (recovery: the link went down)."""
    for h in ctx.capture.hosts:
        ev: list[Evidence | str] = []
        recovered = False
        for g in h.nvlink:
            for link in g.links:
                counts = {c: link.counter(c) or 0 for c in NVLINK_COUNTERS}
                if any(counts.values()):
                    recovered |= counts["Recovery Errors"] > 0
                    ev.append(Evidence(h.name, "nvidia-smi nvlink -e", f"GPU {g.index} link "
                                       f"{link.link}: " + ", ".join(f"{c} {n}" for c, n
                                                                    in counts.items() if n)))
        if ev:
            yield Finding(
                "NVLINK_ERRORS", "critical" if recovered else "warning",
                f"{h.name}: NVLink errors on {len(ev)} link(s)"
                + (" (recovery: a link went down and retrained)" if recovered else ""),
                tuple(ev[:16]),
                "Collectives over a link that drops stall every TP rank: check Xid 74 in the "
                "kernel log, drain the node and run the NVLink diagnostics (dcgmi diag).",
                section="gpu")
