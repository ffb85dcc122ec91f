"""Host clocks: an offset over a second makes the order of events across hosts unreliable."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context

#: seconds of offset from the capturing machine's clock that make a finding
SKEW_S = 1.0


@rule("CLOCK_SKEW", needs=(Need.CLOCK,), rank=78)
def clock_skew(ctx: Context) -> Iterator[Finding]:
    """A host's clock is more than SKEW_S off ours (measured at the midpoint of a round trip):
    beyond doubt, so the offset minus half the round trip (the measurement's error bound) must
    exceed SKEW_S -- a loaded host whose `date` took seconds to start is no skew."""
    for h in ctx.capture.hosts:
        off = h.clock_offset_s
        entry = next((e for e in ctx.capture.results if e.host == h.name and e.source == "clock"
                      and e.ok), None)
        bound = entry.duration_s / 2 if entry is not None else 0.0
        if off is None or abs(off) - bound <= SKEW_S:
            continue
        trip = (f"the midpoint of a {entry.duration_s * 1000:.0f} ms round trip, "
                f"±{entry.duration_s * 500:.0f} ms" if entry is not None else "the round trip")
        yield Finding(
            "CLOCK_SKEW", "warning",
            f"{h.name}: clock {'ahead' if off > 0 else 'behind'} by {abs(off):.1f} s",
            (Evidence(h.name, "date +%s.%N", f"offset {off:+.3f} s from the capturing machine "
                      f"(the host's time minus {trip})",
                      ctx.path_of(h.name, entry.key if entry is not None else "clock")),),
            "Cross-host order of log lines and samples is unreliable on this host: the report "
            "shows its times corrected by this offset. Fix time sync (chronyc tracking / "
            "timedatectl timesync-status) on the host.",
            section="hosts", subject=h.name,
        )
