"""The on-disk bundle: manifest.json + raw/ + parsed/, written as results arrive.

Layout: `<out>/<cluster>-<UTC stamp>/` — built under a hidden temporary name and renamed
when finalised, so a directory with the final name is always complete or marked partial.
Every result's metadata is appended to `results.jsonl` as it lands, so a crash loses no
gathered evidence; `finalise` turns that into `manifest.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pdforensics import __version__
from pdforensics.errors import BundleError
from pdforensics.model import CommandResult
from pdforensics.redact import Redactor

MANIFEST = "manifest.json"
RESULTS_LOG = "results.jsonl"


@dataclass(frozen=True)
class ResultEntry:
    """One manifest row: where a result came from, how it ended, where its bytes are."""

    host: str
    source: str
    key: str
    argv: tuple[str, ...] | None
    url: str | None
    exit_status: int | None
    duration_s: float
    started_at: float
    timed_out: bool
    truncated: bool
    bytes: int
    sha256: str | None
    path: str | None
    error: str | None
    stderr: str = ""
    target: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_status == 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv) if self.argv is not None else None
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ResultEntry:
        d = dict(d)
        d["argv"] = tuple(d["argv"]) if d.get("argv") is not None else None
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in known})


def utc_stamp(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class BundleWriter:
    """Writes results into a temporary bundle directory; thread-safe."""

    def __init__(self, out_dir: Path, cluster: str, redactor: Redactor, started_at: float):
        self.out_dir = out_dir
        self.cluster = cluster
        self.redactor = redactor
        self.started_at = started_at
        self.name = f"{cluster}-{utc_stamp(started_at)}"
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            self.tmp = out_dir / f".{self.name}.{os.getpid()}.tmp"
            self.tmp.mkdir()
        except OSError as exc:
            raise BundleError(f"cannot create bundle in {out_dir}: {exc.strerror or exc}"
                              ) from None
        self._lock = threading.Lock()
        self._entries: list[ResultEntry] = []
        self._keys: set[tuple[str, str]] = set()
        self._log = (self.tmp / RESULTS_LOG).open("a", encoding="utf-8")
        self.write_errors: list[str] = []

    def add(self, result: CommandResult, key: str, url: str | None = None,
            extension: str = "txt", environ: bool = False,
            target: dict[str, Any] | None = None) -> ResultEntry:
        """Redact and write one result's output, then log its manifest row."""
        data = self.redactor.environ(result.stdout) if environ else self.redactor.text(
            result.stdout)
        stderr = self.redactor.text(result.stderr.encode()).decode("utf-8", "replace")
        argv = tuple(self.redactor.text(a.encode()).decode("utf-8", "replace")
                     for a in result.argv)
        with self._lock:
            key = self._unique(result.host, key)
        rel = f"raw/{result.host}/{key}.{extension}"
        path, digest, error = None, None, result.error
        if data or result.exit_status is not None:
            try:
                (self.tmp / "raw" / result.host).mkdir(parents=True, exist_ok=True)
                (self.tmp / rel).write_bytes(data)
                path, digest = rel, hashlib.sha256(data).hexdigest()
            except OSError as exc:
                msg = f"cannot write {rel}: {exc.strerror or exc}"
                error = f"{error}; {msg}" if error else msg
                self.write_errors.append(msg)
        entry = ResultEntry(
            host=result.host, source=result.source, key=key,
            argv=None if url else argv, url=url, exit_status=result.exit_status,
            duration_s=round(result.duration_s, 4), started_at=result.started_at,
            timed_out=result.timed_out, truncated=result.truncated, bytes=len(data),
            sha256=digest, path=path, error=error, stderr=stderr[-4000:],
            target=target or {},
        )
        with self._lock:
            self._entries.append(entry)
            try:
                self._log.write(json.dumps(entry.to_json()) + "\n")
                self._log.flush()
            except OSError as exc:
                self.write_errors.append(f"cannot write {RESULTS_LOG}: {exc.strerror or exc}")
        return entry

    def _unique(self, host: str, key: str) -> str:
        base, n = key, 1
        while (host, key) in self._keys:
            n += 1
            key = f"{base}.{n}"
        self._keys.add((host, key))
        return key

    def write_json(self, rel: str, obj: Any) -> None:
        """Write a derived JSON file (parsed/, analysis) into the bundle."""
        path = self.tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = self.redactor.text(json.dumps(obj, indent=1, sort_keys=True, default=str).encode())
        path.write_bytes(data)

    def entries(self) -> list[ResultEntry]:
        with self._lock:
            return list(self._entries)

    def rescrub(self) -> None:
        """Re-redact written files with every secret value learned during the capture."""
        values = self.redactor.known_values()
        if not values:
            return
        for entry in self.entries():
            if entry.path is None:
                continue
            path = self.tmp / entry.path
            data = path.read_bytes()
            if any(v in data for v in values):
                path.write_bytes(self.redactor.text(data))

    def finalise(self, manifest: dict[str, Any], archive: bool = False) -> Path:
        """Fix sha256s, write manifest.json atomically and rename to the final name."""
        with self._lock:
            self._log.close()
        entries = []
        for e in self.entries():
            if e.path is not None and (self.tmp / e.path).exists():
                digest = sha256_file(self.tmp / e.path)
                size = (self.tmp / e.path).stat().st_size
                if digest != e.sha256 or size != e.bytes:
                    e = ResultEntry(**{**e.__dict__, "sha256": digest, "bytes": size})
            entries.append(e)
        entries.sort(key=lambda e: (e.host, e.started_at, e.key))
        if self.write_errors:
            manifest["status"] = "partial"
            manifest.setdefault("partial_reasons", []).extend(sorted(set(self.write_errors)))
        doc = {
            "format": 1, "tool": "pdforensics", "tool_version": __version__,
            "cluster": self.cluster, "started_at": iso(self.started_at),
            "started_epoch": self.started_at, "finished_at": iso(time.time()),
            "finished_epoch": time.time(), **manifest,
            "results": [e.to_json() for e in entries],
        }
        try:
            tmp_manifest = self.tmp / (MANIFEST + ".tmp")
            tmp_manifest.write_text(json.dumps(doc, indent=1, default=str))
            os.replace(tmp_manifest, self.tmp / MANIFEST)
            final = self._final_path()
            os.rename(self.tmp, final)
        except OSError as exc:
            raise BundleError(
                f"cannot finalise bundle (evidence kept in {self.tmp}): {exc.strerror or exc}"
            ) from None
        if archive:
            with tarfile.open(f"{final}.tar.gz", "w:gz") as tar:
                tar.add(final, arcname=final.name)
        return final

    def _final_path(self) -> Path:
        final, n = self.out_dir / self.name, 1
        while final.exists():  # never overwrite an earlier bundle
            n += 1
            final = self.out_dir / f"{self.name}-{n}"
        return final


@dataclass(frozen=True)
class Bundle:
    """A finalised bundle read back from disk."""

    path: Path
    manifest: dict[str, Any]
    results: tuple[ResultEntry, ...]

    @property
    def status(self) -> str:
        return str(self.manifest.get("status", "unknown"))

    def read(self, entry: ResultEntry) -> bytes:
        if entry.path is None:
            return b""
        try:
            return (self.path / entry.path).read_bytes()
        except OSError:
            return b""

    def text(self, entry: ResultEntry) -> str:
        return self.read(entry).decode("utf-8", "replace")

    def find(self, host: str | None = None, source: str | None = None) -> list[ResultEntry]:
        return [r for r in self.results
                if (host is None or r.host == host) and (source is None or r.source == source)]

    def parsed(self, rel: str) -> Any:
        path = self.path / "parsed" / rel
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None


def load_bundle(path: str | Path) -> Bundle:
    """Read a bundle; a bundle without manifest (crashed capture) is read from results.jsonl."""
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"{path} is not a bundle directory")
    mpath = path / MANIFEST
    if mpath.exists():
        try:
            manifest = json.loads(mpath.read_text())
        except (OSError, ValueError) as exc:
            raise BundleError(f"{mpath}: unreadable manifest: {exc}") from None
        rows = manifest.get("results", [])
    elif (path / RESULTS_LOG).exists():
        manifest = {"status": "partial", "partial_reasons": ["capture did not finish"]}
        rows = []
        for line in (path / RESULTS_LOG).read_text(errors="replace").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    else:
        raise BundleError(f"{path}: no {MANIFEST}; not a pdforensics bundle")
    try:
        results = tuple(ResultEntry.from_json(r) for r in rows)
    except TypeError as exc:
        raise BundleError(f"{mpath}: malformed result row: {exc}") from None
    return Bundle(path, manifest, results)


def verify_bundle(path: str | Path) -> list[str]:
    """Every problem found re-checking sha256 and sizes; empty means the bundle is intact."""
    bundle = load_bundle(path)
    problems = []
    for r in bundle.results:
        if r.path is None:
            continue
        f = bundle.path / r.path
        if not f.exists():
            problems.append(f"{r.path}: missing")
            continue
        digest = sha256_file(f)
        if digest != r.sha256:
            problems.append(f"{r.path}: sha256 mismatch (manifest {r.sha256}, file {digest})")
    return problems
