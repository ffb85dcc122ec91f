"""Semantic diff of two captures: per host, service and setting, ranked by relevance."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pdforensics.catalog.model import Catalog
from pdforensics.diff import relevance as rel
from pdforensics.diff.state import ConfigState, HostConfig, ServiceConfig, extract_state, load_state
from pdforensics.diff.units import UnitFile
from pdforensics.views.loaded import LoadedCapture


@dataclass(frozen=True)
class Change:
    """One semantic difference. `before`/`after` None means absent (or a switch's default)."""

    scope: str  # "decode-0/decode" for a service, "decode-0" for a host, "cluster"
    kind: str  # flag env package sglang_version driver cuda kernel unit layout service host
    key: str
    before: Any
    after: Any
    change: str  # added | removed | changed
    score: int
    role: str | None = None
    default: Any = None  # sglang's default (catalog), for flags and env vars it knows
    help: str | None = None
    note: str | None = None  # "unknown to sglang 0.5.23", "same as sglang's default"

    @property
    def relevance(self) -> str:
        return rel.label(self.score)

    @property
    def ident(self) -> tuple[str, str, str]:
        return (self.scope, self.kind, self.key)

    def to_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, "kind": self.kind, "key": self.key, "before": self.before,
                "after": self.after, "relevance": self.relevance, "change": self.change,
                "score": self.score, "role": self.role, "default": self.default,
                "help": self.help, "note": self.note}


@dataclass(frozen=True)
class DiffResult:
    a: str
    b: str
    a_taken_at: float
    b_taken_at: float
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()
    catalog_version: str | None = None
    unchanged_hosts: tuple[str, ...] = field(default=())


def shipped_catalog() -> Catalog | None:
    """The shipped catalog, or None when it cannot be read (a diff still works without)."""
    try:
        from pdforensics.catalog import load_shipped_catalog

        return load_shipped_catalog()
    except Exception:  # a broken catalog must not stop a diff
        return None


def diff_bundles(a: str | Path | LoadedCapture, b: str | Path | LoadedCapture,
                 catalog: Catalog | None = None) -> DiffResult:
    """Diff two bundles (paths or loaded captures): what changed from A to B."""
    cat = catalog if catalog is not None else shipped_catalog()
    sa = extract_state(a, cat) if isinstance(a, LoadedCapture) else load_state(a, cat)
    sb = extract_state(b, cat) if isinstance(b, LoadedCapture) else load_state(b, cat)
    result = diff_states(sa, sb, cat)
    from pdforensics.diff.readiness import readiness_rows  # doctor.json of --doctor snapshots

    ready = [Change(**row) for row in readiness_rows(  # type: ignore[arg-type]
        a.path if isinstance(a, LoadedCapture) else Path(a),
        b.path if isinstance(b, LoadedCapture) else Path(b))]
    if ready:
        merged = sorted((*result.changes, *ready), key=lambda c: (-c.score, c.scope, c.kind, c.key))
        moved = {c.scope for c in ready}
        result = DiffResult(**{**result.__dict__, "changes": tuple(merged), "unchanged_hosts":
                               tuple(h for h in result.unchanged_hosts if h not in moved)})
    notes = version_notes(sb, cat)
    if notes:
        result = DiffResult(**{**result.__dict__, "notes": tuple(result.notes) + tuple(notes)})
    return result


def version_notes(state: ConfigState, catalog: Catalog | None) -> list[str]:
    """A note per sglang version the servers run that the catalog is not for."""
    if catalog is None:
        return []
    from pdforensics.catalog import version_note

    versions: list[str | None] = [*sorted({v for h in state.hosts for s in h.services
                                           if (v := s.sglang_version)})]
    servers = [s for h in state.hosts for s in h.services if s.kind == "server"]
    if not servers:
        return []
    return [n for v in (versions or [None]) if (n := version_note(v, catalog)) is not None]


def diff_states(a: ConfigState, b: ConfigState, catalog: Catalog | None = None) -> DiffResult:
    """Diff two extracted configurations."""
    d = _Differ(catalog)
    unchanged = []
    names = [h.name for h in a.hosts] + [h.name for h in b.hosts if a.host(h.name) is None]
    for name in names:
        ha, hb = a.host(name), b.host(name)
        before = len(d.changes)
        d.host(name, ha, hb)
        if len(d.changes) == before and ha is not None and hb is not None:
            unchanged.append(name)
    changes = sorted(d.changes, key=lambda c: (-c.score, c.scope, c.kind, c.key))
    return DiffResult(a=a.bundle, b=b.bundle, a_taken_at=a.taken_at, b_taken_at=b.taken_at,
                      changes=tuple(changes), notes=tuple(d.notes),
                      catalog_version=catalog.version if catalog is not None else None,
                      unchanged_hosts=tuple(unchanged))


class _Differ:
    def __init__(self, catalog: Catalog | None):
        self.catalog = catalog
        self.changes: list[Change] = []
        self.notes: list[str] = []

    def add(self, scope: str, kind: str, key: str, before: Any, after: Any, score: int,
            **extra: Any) -> None:
        change = "added" if before is None else "removed" if after is None else "changed"
        self.changes.append(Change(scope, kind, key, before, after, change, score, **extra))

    # -- hosts --------------------------------------------------------------------------
    def host(self, name: str, a: HostConfig | None, b: HostConfig | None) -> None:
        if a is None or b is None:
            self.add(name, "host", name, "present" if a else None, "present" if b else None,
                     rel.KIND_SCORES["host"])
            return
        if not a.reachable or not b.reachable:
            side = "A" if not a.reachable else "B"
            self.notes.append(f"{name}: unreachable in {side}; not compared")
            return
        for kind in ("kernel", "driver", "cuda"):
            va, vb = getattr(a, kind), getattr(b, kind)
            if va is not None and vb is not None and va != vb:
                self.add(name, kind, kind, va, vb, rel.KIND_SCORES[kind])
        self.packages(name, a.packages, b.packages)
        scopes = [s.scope for s in a.services] + [s.scope for s in b.services
                                                   if s.scope not in {x.scope for x in a.services}]
        for scope in scopes:
            sa = next((s for s in a.services if s.scope == scope), None)
            sb = next((s for s in b.services if s.scope == scope), None)
            self.service(scope, sa, sb)

    def packages(self, host: str, a: dict[str, str] | None, b: dict[str, str] | None) -> None:
        if a is None or b is None:
            if a != b:
                self.notes.append(f"{host}: packages not captured in {'A' if a is None else 'B'}")
            return
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                self.add(host, "package", name, a.get(name), b.get(name), rel.package_score(name))

    # -- services -----------------------------------------------------------------------
    def service(self, scope: str, a: ServiceConfig | None, b: ServiceConfig | None) -> None:
        if a is None or b is None:
            s = a or b
            assert s is not None
            where = f"{s.role}:{s.port}"
            self.add(scope, "service", s.role, where if a else None, where if b else None,
                     rel.KIND_SCORES["service"], role=s.role)
            return
        role = a.role
        lay = rel.KIND_SCORES["layout"]
        for key in ("port", "metrics_port", "tp_size", "dp_size"):
            va, vb = getattr(a, key), getattr(b, key)
            if va != vb:
                self.add(scope, "layout", key, va, vb, lay, role=role)
        if a.ranks != b.ranks and (a.ranks or b.ranks):
            note = None
            want = b.tp_size * b.dp_size
            if len(b.ranks) < want:
                note = f"{len(b.ranks)} scheduler rank(s) for tp {b.tp_size} x dp {b.dp_size}"
            self.add(scope, "layout", "ranks", ",".join(a.ranks) or None,
                     ",".join(b.ranks) or None, 75, role=role, note=note)
        if a.sglang_version and b.sglang_version and a.sglang_version != b.sglang_version:
            self.add(scope, "sglang_version", "sglang", a.sglang_version, b.sglang_version,
                     rel.KIND_SCORES["sglang_version"], role=role)
        server = a.kind == "server"
        if a.flags is not None and b.flags is not None:
            self.flags(scope, role, a.flags, b.flags, server)
        elif a.flags != b.flags:
            self.notes.append(f"{scope}: command line not captured in "
                              f"{'A' if a.flags is None else 'B'}")
        if a.env is not None and b.env is not None:
            self.env(scope, role, a.env, b.env)
        elif a.env != b.env:
            self.notes.append(f"{scope}: environment not captured in "
                              f"{'A' if a.env is None else 'B'} (needs the same user or root)")
        if a.unit != b.unit:
            self.add(scope, "unit", "unit", a.unit, b.unit, rel.KIND_SCORES["unit"], role=role)
        elif a.unit_files is not None and b.unit_files is not None:
            self.units(scope, role, a.unit_files, b.unit_files)

    def flags(self, scope: str, role: str, a: dict[str, str | None], b: dict[str, str | None],
              server: bool) -> None:
        cat = self.catalog if server else None
        for name in sorted(set(a) | set(b)):
            in_a, in_b = name in a, name in b
            va, vb = _flag_value(a, name), _flag_value(b, name)
            if in_a and in_b and va == vb:
                continue
            info = cat.flag(name) if cat is not None else None
            extra: dict[str, Any] = {"role": role}
            known = info is not None
            if info is not None:
                extra["default"] = info.default if info.default is not None else info.default_expr
                extra["help"] = info.help
            elif cat is not None:
                extra["note"] = f"unknown to sglang {cat.version}"
            score = rel.flag_score(name, known)
            if info is not None and (not in_a or not in_b):
                present = vb if in_b else va
                if _same(present, info.default, info.action):
                    extra["note"] = "same as sglang's default"
                    score = rel.SAME_AS_DEFAULT
            self.add(scope, "flag", name, va if in_a else None, vb if in_b else None, score,
                     **extra)

    def env(self, scope: str, role: str, a: dict[str, str], b: dict[str, str]) -> None:
        cat = self.catalog
        for name in sorted(set(a) | set(b)):
            if a.get(name) == b.get(name):
                continue
            extra: dict[str, Any] = {"role": role}
            score = rel.env_score(name)
            if cat is not None and name.startswith("SGLANG_"):
                info = cat.env(name)
                if info is not None:
                    extra["default"] = info.default if info.default is not None \
                        else info.default_expr
                    extra["help"] = info.help
                    one = b.get(name) if name not in a else a.get(name) if name not in b else None
                    if one is not None and _same(one, info.default, None):
                        extra["note"] = "same as sglang's default"
                        score = rel.SAME_AS_DEFAULT
                else:
                    extra["note"] = f"unknown to sglang {cat.version}"
            self.add(scope, "env", name, a.get(name), b.get(name), score, **extra)

    def units(self, scope: str, role: str, a: tuple[UnitFile, ...],
              b: tuple[UnitFile, ...]) -> None:
        fa, fb = {f.path: f for f in a}, {f.path: f for f in b}
        for path in sorted(set(fa) | set(fb)):
            da = fa[path].directives if path in fa else None
            db = fb[path].directives if path in fb else None
            if da == db:
                continue
            if da is None or db is None:
                self.add(scope, "unit", path, "\n".join(da) if da else None,
                         "\n".join(db) if db else None, rel.KIND_SCORES["unit"], role=role)
                continue
            removed = [x for x in da if x not in db]
            added = [x for x in db if x not in da]
            score = rel.KIND_SCORES["unit"]
            if any("Environment" in x and any(p in x for p in rel.HOT_ENV_PREFIXES)
                   for x in removed + added):
                score = 90
            self.add(scope, "unit", path, "\n".join(removed) or "(same lines, new order)",
                     "\n".join(added) or "(same lines, new order)", score, role=role)


def _flag_value(flags: dict[str, str | None], name: str) -> str | bool | None:
    """A switch present without a value reads as True."""
    if name not in flags:
        return None
    v = flags[name]
    return True if v is None else v


def _same(value: Any, default: Any, action: str | None) -> bool:
    """Whether an explicit value equals sglang's default (so it changes nothing)."""
    if value is True or action in ("store_true", "store_false"):
        return False  # a bare switch is never its own default
    if default is None or isinstance(default, (dict, list)):
        return False
    if isinstance(default, bool):
        return str(value).lower() in (("true", "1") if default else ("false", "0"))
    if isinstance(default, (int, float)):
        try:
            return float(str(value)) == float(default)
        except ValueError:
            return False
    return str(value) == str(default)
