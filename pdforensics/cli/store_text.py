"""Terminal text for timeline, baseline and snapshot results."""

from __future__ import annotations

from pdforensics.app.snapshot import SnapshotOutcome
from pdforensics.bundle.ondisk import iso
from pdforensics.diff.output import format_change
from pdforensics.store.index import Snapshot
from pdforensics.store.refs import Baseline
from pdforensics.store.timeline import Timeline


def snap_line(s: Snapshot) -> str:
    return f"{s.name} ({iso(s.taken_at)}) {s.verdict or 'no verdict'}"


def format_timeline_text(t: Timeline) -> str:
    inc = t.incident
    out = [f"cluster {t.cluster}: {t.snapshots} snapshot(s) in the store"]
    out.append("last healthy:    " + (snap_line(inc.last_healthy) if inc.last_healthy else "none"))
    out.append("first unhealthy: " + (snap_line(inc.first_unhealthy) if inc.first_unhealthy
                                      else "none"))
    if inc.since is not None and inc.since != inc.last_healthy:
        out.append("changes counted since: " + snap_line(inc.since))
    if inc.window:
        out.append("")
        out.append("snapshots in the window:")
        out.extend(f"  {iso(s.taken_at)}  {s.verdict or '-':9} {s.name}" for s in inc.window)
    if inc.first_unhealthy is not None and inc.since is not None:
        out.append("")
        if not t.suspects:
            out.append("no configuration changes between them: look at load, hardware and logs")
        else:
            out.append(f"suspects, most likely first ({len(t.suspects)}):")
        for n, s in enumerate(t.suspects, 1):
            c = s.change
            when = f"first seen {iso(s.first_seen.taken_at)} in {s.first_seen.name}"
            when += (" (already there while HEALTHY)" if s.seen_healthy
                     else f" ({s.first_seen.verdict or 'no verdict'})")
            lines = format_change(c, indent="    ")
            out.append(f"{n:>2}. {c.scope}: " + lines[0].strip())
            out.extend(lines[1:])
            out.append(f"      {when}")
    if t.notes:
        out.append("")
        out.extend(f"note: {n}" for n in t.notes)
    return "\n".join(out) + "\n"


def format_baseline_text(cluster: str, base: Baseline | None) -> str:
    if base is None:
        return (f"cluster {cluster}: no baseline (no HEALTHY snapshot yet; set one with "
                "`pdforensics baseline set BUNDLE`)\n")
    how = "set explicitly" if base.explicit else "the newest HEALTHY snapshot (none set)"
    s = base.snapshot
    return (f"cluster {cluster}: baseline {s.name}, {how}\n  taken {iso(s.taken_at)}, "
            f"verdict {s.verdict or 'none'}\n  {s.path}\n")


def format_snapshot_text(o: SnapshotOutcome, verbose: bool) -> str:
    """One line when not healthy; the details with -v; nothing when healthy and quiet."""
    s, v = o.snapshot, o.verdict
    lines: list[str] = []
    if not o.healthy:
        what = v.verdict or "NO VERDICT"
        lines.append(f"pdforensics snapshot: {s.cluster}: {what}: {_why(o)}".rstrip())
        lines.append(f"  bundle: {s.path}")
    if verbose:
        if o.healthy:
            lines.append(f"pdforensics snapshot: {s.cluster}: HEALTHY: {_why(o)}".rstrip())
            lines.append(f"  bundle: {s.path}")
        lines.append(f"  capture {o.capture_status} in {o.duration_s:.1f} s")
        lines.extend(f"  partial: {r}" for r in o.partial_reasons)
        if o.pruned:
            lines.append(f"  retention removed {len(o.pruned)}: {', '.join(o.pruned)}")
    if o.readiness and (verbose or o.ready is False):
        lines.append(f"pdforensics snapshot: {s.cluster}: doctor: {o.readiness}")
    return "\n".join(lines) + ("\n" if lines else "")


def _why(o: SnapshotOutcome) -> str:
    """The analysis summary without its leading "VERDICT: "."""
    v = o.verdict
    text = v.summary or v.why or ""
    prefix = f"{v.verdict}: "
    return text[len(prefix):] if v.verdict and text.startswith(prefix) else text


def snapshot_json(o: SnapshotOutcome) -> dict[str, object]:
    """`snapshot --json`: the filed snapshot, its verdict and how the capture went."""
    s, v = o.snapshot, o.verdict
    return {"name": s.name, "cluster": s.cluster, "path": str(s.path), "taken_at": iso(s.taken_at),
            "verdict": v.verdict, "summary": v.summary, "why": v.why, "healthy": o.healthy,
            "status": o.capture_status, "partial_reasons": list(o.partial_reasons),
            "pruned": list(o.pruned), "duration_s": round(o.duration_s, 2),
            "readiness": o.readiness, "ready": o.ready}
