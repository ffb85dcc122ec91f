"""`timeline`: the changes between the last HEALTHY snapshot (or the baseline) and the first
not-healthy one, ranked as suspects, each with the snapshot where it first appeared."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdforensics.bundle.ondisk import iso
from pdforensics.catalog.model import Catalog
from pdforensics.diff.compare import Change, diff_states, shipped_catalog
from pdforensics.diff.state import ConfigState, load_state
from pdforensics.errors import PdforensicsError
from pdforensics.store.incident import Incident, find_incident
from pdforensics.store.index import Index, Snapshot

PIN_REASON = "timeline"


@dataclass(frozen=True)
class Suspect:
    change: Change
    first_seen: Snapshot
    seen_healthy: bool  # already there in a HEALTHY snapshot: less likely the cause


@dataclass(frozen=True)
class Timeline:
    cluster: str
    incident: Incident
    suspects: tuple[Suspect, ...]
    snapshots: int
    notes: tuple[str, ...] = ()


def build_timeline(index: Index, cluster: str, catalog: Catalog | None = None,
                   pin: bool = True) -> Timeline:
    """Find the latest incident, diff its window, date each change; pin what it references."""
    cat = catalog if catalog is not None else shipped_catalog()
    snaps = index.snapshots(cluster)
    incident = find_incident(snaps, index.explicit_baseline(cluster))
    notes: list[str] = []
    suspects: list[Suspect] = []
    if incident.first_unhealthy is None:
        notes.append("no HEALTHY -> not-healthy transition among the snapshots"
                     + (": the newest judged snapshot is HEALTHY" if incident.last_healthy else ""))
    elif incident.since is None:
        notes.append("no HEALTHY snapshot before the first not-healthy one: nothing to compare "
                     "with (set one with `pdforensics baseline set BUNDLE`)")
    else:
        dater = _Dater(incident, cat)
        suspects, more = dater.suspects()
        notes += more
        if incident.recovered is not None:
            notes.append(f"HEALTHY again since {incident.recovered.name} "
                         f"({iso(incident.recovered.taken_at)})")
    if pin:
        for name in incident.names | {s.first_seen.name for s in suspects}:
            index.pin(name, PIN_REASON)
    return Timeline(cluster, incident, tuple(suspects), len(snaps), tuple(notes))


class _Dater:
    """Loads only the snapshots where some host's configuration fingerprint changed."""

    def __init__(self, incident: Incident, catalog: Catalog | None):
        self.incident = incident
        self.catalog = catalog
        self.states: dict[str, ConfigState | None] = {}
        self.diffs: dict[str, dict[tuple[str, str, str], Change]] = {}
        self.notes: list[str] = []

    def state(self, snap: Snapshot) -> ConfigState | None:
        if snap.name not in self.states:
            try:
                self.states[snap.name] = load_state(snap.path, self.catalog)
            except PdforensicsError as exc:
                self.notes.append(f"{snap.name}: not readable, skipped: {exc}")
                self.states[snap.name] = None
        return self.states[snap.name]

    def suspects(self) -> tuple[list[Suspect], list[str]]:
        inc = self.incident
        assert inc.since is not None and inc.first_unhealthy is not None
        base, end = self.state(inc.since), self.state(inc.first_unhealthy)
        if base is None or end is None:
            return [], self.notes
        result = diff_states(base, end, self.catalog)
        self.notes += list(result.notes)
        window = list(inc.window)
        # no HEALTHY snapshot in the window (a baseline set by hand on a cluster never judged
        # HEALTHY): no change counts as seen while healthy
        last_h = window.index(inc.last_healthy) if inc.last_healthy in window else -1
        out = []
        for change in result.changes:
            k = self._first_seen(change, base, window)
            out.append(Suspect(change, window[k], seen_healthy=k <= last_h))
        out.sort(key=lambda s: (s.seen_healthy, -s.change.score, -s.first_seen.taken_at,
                                s.change.scope, s.change.kind, s.change.key))
        return out, self.notes

    def _first_seen(self, change: Change, base: ConfigState, window: list[Snapshot]) -> int:
        """Start of the last unbroken run of snapshots that show the change (unknowns skipped)."""
        first = len(window) - 1
        prev: bool | None = True  # the last snapshot of the window shows it
        for k in range(len(window) - 2, 0, -1):
            snap, later = window[k], window[k + 1]
            if snap.fingerprints and snap.fingerprints == later.fingerprints:
                present = prev  # same configuration as the snapshot after it
            else:
                present = self._shows(snap, base, change)
            if present is False:
                break
            if present:
                first = k
            prev = present
        return first


    def _shows(self, snap: Snapshot, base: ConfigState, change: Change) -> bool | None:
        """Whether `snap` has `change` relative to base; None when it cannot tell."""
        state = self.state(snap)
        if state is None or _unknown(state, change):
            return None
        if snap.name not in self.diffs:
            self.diffs[snap.name] = {c.ident: c for c in diff_states(base, state,
                                                                     self.catalog).changes}
        found = self.diffs[snap.name].get(change.ident)
        return found is not None and found.before == change.before and found.after == change.after


def _unknown(state: ConfigState, change: Change) -> bool:
    """The host was unreachable, or the part of it the change is about was not captured."""
    host = state.host(change.scope.split("/", 1)[0])
    if host is None:
        return False
    if not host.reachable:
        return True
    if change.kind == "package":
        return host.packages is None
    svc = next((s for s in host.services if s.scope == change.scope), None)
    attr = {"flag": "flags", "env": "env", "unit": "unit_files"}.get(change.kind)
    return svc is not None and attr is not None and getattr(svc, attr) is None


def suspect_json(s: Suspect) -> dict[str, Any]:
    return {**s.change.to_dict(), "first_seen": s.first_seen.name,
            "first_seen_at": iso(s.first_seen.taken_at), "first_seen_verdict": s.first_seen.verdict,
            "seen_healthy": s.seen_healthy}


def _snap(s: Snapshot | None) -> dict[str, Any] | None:
    return s.to_json() if s is not None else None


def timeline_json(t: Timeline) -> dict[str, Any]:
    """`{"last_healthy", "first_unhealthy", "suspects": [change...]}` plus context."""
    inc = t.incident
    return {"cluster": t.cluster, "last_healthy": _snap(inc.last_healthy),
            "first_unhealthy": _snap(inc.first_unhealthy), "since": _snap(inc.since),
            "recovered": _snap(inc.recovered),
            "suspects": [suspect_json(s) for s in t.suspects],
            "window": [{"name": s.name, "taken_at": iso(s.taken_at), "verdict": s.verdict}
                       for s in inc.window],
            "snapshots": t.snapshots, "notes": list(t.notes)}
