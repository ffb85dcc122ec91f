"""The store's SQLite index: one row per filed bundle, the baselines, and pins."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.errors import PdforensicsError
from pdforensics.untrusted.read import check_name

INDEX = "index.sqlite"
BUNDLES = "bundles"
SCHEMA = """
CREATE TABLE IF NOT EXISTS snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    cluster TEXT NOT NULL,
    taken_at REAL NOT NULL,
    verdict TEXT,
    status TEXT NOT NULL,
    origin TEXT NOT NULL,
    hosts TEXT NOT NULL,
    fingerprints TEXT NOT NULL,
    filed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS snapshots_time ON snapshots (cluster, taken_at);
CREATE TABLE IF NOT EXISTS baselines (cluster TEXT PRIMARY KEY, name TEXT NOT NULL, set_at REAL);
CREATE TABLE IF NOT EXISTS pins (name TEXT NOT NULL, reason TEXT NOT NULL,
                                 PRIMARY KEY (name, reason));
"""


class StoreError(PdforensicsError):
    """The store cannot be opened, read or written."""


def rebuild_hint(store: Path) -> str:
    return f"rebuild it from the bundles on disk with `pdforensics store reindex --store {store}`"


@dataclass(frozen=True)
class Snapshot:
    """One filed bundle as the index records it."""

    id: int
    name: str
    path: Path
    cluster: str
    taken_at: float
    verdict: str | None  # HEALTHY | DEGRADED | WEDGED | UNKNOWN | None (no analysis)
    status: str  # complete | partial
    origin: str  # snapshot | capture | import
    hosts: tuple[str, ...]
    fingerprints: dict[str, str]

    @property
    def healthy(self) -> bool:
        return self.verdict == "HEALTHY"

    @property
    def unhealthy(self) -> bool:
        return self.verdict is not None and self.verdict != "HEALTHY"

    def to_json(self) -> dict[str, Any]:
        from pdforensics.bundle.ondisk import iso

        return {"name": self.name, "path": str(self.path), "cluster": self.cluster,
                "taken_at": iso(self.taken_at), "taken_epoch": self.taken_at,
                "verdict": self.verdict, "status": self.status, "origin": self.origin,
                "hosts": list(self.hosts), "fingerprints": self.fingerprints}


class Index:
    """A connection to one store's index; create with `open_index(store)`."""

    def __init__(self, store: Path, conn: sqlite3.Connection):
        self.store = store
        self.conn = conn

    @property
    def bundles(self) -> Path:
        return self.store / BUNDLES

    def _row(self, r: sqlite3.Row) -> Snapshot:
        try:
            name = check_name(r["name"], "index row")
            hosts = json.loads(r["hosts"])
            prints = json.loads(r["fingerprints"])
            if not isinstance(hosts, list) or not isinstance(prints, dict):
                raise ValueError("hosts or fingerprints of the wrong type")
            return Snapshot(id=int(r["id"]), name=name, path=self.bundles / name,
                            cluster=str(r["cluster"]), taken_at=float(r["taken_at"]),
                            verdict=r["verdict"], status=str(r["status"]),
                            origin=str(r["origin"]), hosts=tuple(str(h) for h in hosts),
                            fingerprints={str(k): str(v) for k, v in prints.items()})
        except (ValueError, TypeError, PdforensicsError) as exc:
            raise StoreError(f"index of store {self.store} is corrupt (row {r['id']!r}: "
                             f"{str(exc)[:120]}); {rebuild_hint(self.store)}") from None

    def add(self, name: str, cluster: str, taken_at: float, verdict: str | None, status: str,
            origin: str, hosts: list[str], fingerprints: dict[str, str]) -> Snapshot:
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO snapshots (name, cluster, taken_at, verdict, status, origin,"
                " hosts, fingerprints, filed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, cluster, taken_at, verdict, status, origin, json.dumps(hosts),
                 json.dumps(fingerprints, sort_keys=True), time.time()))
        snap = self.get(name)
        assert snap is not None
        return snap

    def get(self, name: str) -> Snapshot | None:
        r = self.conn.execute("SELECT * FROM snapshots WHERE name = ?", (name,)).fetchone()
        return self._row(r) if r is not None else None

    def set_verdict(self, name: str, verdict: str | None) -> None:
        with self.conn:
            self.conn.execute("UPDATE snapshots SET verdict = ? WHERE name = ?", (verdict, name))

    def snapshots(self, cluster: str | None = None) -> list[Snapshot]:
        """Oldest first."""
        if cluster is None:
            rows = self.conn.execute("SELECT * FROM snapshots ORDER BY taken_at, id")
        else:
            rows = self.conn.execute(
                "SELECT * FROM snapshots WHERE cluster = ? ORDER BY taken_at, id", (cluster,))
        return [self._row(r) for r in rows]

    def newest(self, cluster: str | None = None) -> Snapshot | None:
        snaps = self.snapshots(cluster)
        return snaps[-1] if snaps else None

    def clusters(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT cluster FROM snapshots GROUP BY cluster ORDER BY MAX(taken_at) DESC")]

    def delete(self, name: str) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM snapshots WHERE name = ?", (name,))
            self.conn.execute("DELETE FROM pins WHERE name = ?", (name,))

    # -- baselines and pins ---------------------------------------------------------------
    def set_baseline(self, cluster: str, name: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO baselines (cluster, name, set_at) "
                              "VALUES (?, ?, ?)", (cluster, name, time.time()))

    def clear_baseline(self, cluster: str) -> bool:
        with self.conn:
            cur = self.conn.execute("DELETE FROM baselines WHERE cluster = ?", (cluster,))
        return cur.rowcount > 0

    def explicit_baseline(self, cluster: str) -> Snapshot | None:
        r = self.conn.execute("SELECT name FROM baselines WHERE cluster = ?", (cluster,)).fetchone()
        return self.get(r[0]) if r is not None else None

    def baseline_names(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT name FROM baselines")}

    def pin(self, name: str, reason: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO pins (name, reason) VALUES (?, ?)",
                              (name, reason))

    def pinned(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, reason in self.conn.execute("SELECT name, reason FROM pins ORDER BY reason"):
            out.setdefault(name, []).append(reason)
        return out

    def close(self) -> None:
        self.conn.close()


def _private(store: Path) -> None:
    """The store and its bundles/ directory, owner-only whatever the umask (bundles hold host text)."""
    (store / BUNDLES).mkdir(mode=0o700, parents=True, exist_ok=True)
    for d in (store, store / BUNDLES):
        if d.stat().st_mode & 0o077:
            d.chmod(0o700)


def _private_files(store: Path) -> None:
    """The index and SQLite's journal files, owner-only (they hold hosts, verdicts, titles)."""
    for name in (INDEX, INDEX + "-journal", INDEX + "-wal", INDEX + "-shm"):
        p = store / name
        if p.exists() and p.stat().st_mode & 0o077:
            p.chmod(0o600)


@contextmanager
def open_index(store: str | Path, create: bool = True) -> Iterator[Index]:
    """Open the store directory and its index; create them unless `create` is False."""
    store = Path(store).expanduser()
    if not create and not (store / INDEX).is_file():
        if _has_bundles(store / BUNDLES):
            raise StoreError(f"store {store} has bundles but its index {INDEX} is lost; "
                             f"{rebuild_hint(store)}")
        raise StoreError(f"no store at {store} (take a snapshot first, or give --store DIR)")
    try:
        _private(store)
        conn = sqlite3.connect(str(store / INDEX), timeout=30.0)
        _private_files(store)
        conn.row_factory = sqlite3.Row
        conn.executescript(SCHEMA)
    except (OSError, sqlite3.Error) as exc:
        raise _store_error(store, exc, "cannot open store") from None
    index = Index(store, conn)
    try:
        yield index
    except sqlite3.Error as exc:
        raise _store_error(store, exc, "store") from None
    finally:
        index.close()


def _store_error(store: Path, exc: BaseException, what: str) -> StoreError:
    """A corrupt index (not a database, malformed image) says how to rebuild it."""
    code = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    if code.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "not a database" in text or "malformed" in text:
        return StoreError(f"index of store {store} is corrupt ({text}); {rebuild_hint(store)}")
    return StoreError(f"{what} {store}: {text}")


def _has_bundles(bundles: Path) -> bool:
    try:
        return any((d / "manifest.json").is_file() for d in bundles.iterdir()
                   if not d.name.startswith("."))
    except OSError:
        return False
