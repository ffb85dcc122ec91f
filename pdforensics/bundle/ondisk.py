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
import stat
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pdforensics import __version__
from pdforensics.bundle.schema import SchemaError, validate_discovery, validate_manifest, validate_row
from pdforensics.errors import BundleError
from pdforensics.model import CommandResult, Redaction
from pdforensics.redact.redactor import Redactor
from pdforensics.untrusted.read import (
    MAX_JSON_BYTES,
    UnsafePath,
    check_name,
    parse_json,
    read_inside,
    read_json_inside,
    read_optional,
    sha256_inside,
    tree_problems,
    walk_inside,
)

MANIFEST = "manifest.json"
RESULTS_LOG = "results.jsonl"
# written into a finished bundle by analyze/report: allowed by verify, not hashed
DERIVED_FILES = ("analysis.json", "report.html", "doctor.json")
DIR_MODE, FILE_MODE = 0o700, 0o600  # bundles hold evidence: owner only


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
    read: str | None = None  # the file read without a shell (then argv is None)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.exit_status == 0

    def to_json(self) -> dict[str, Any]:
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
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


def write_private(path: Path, data: bytes) -> None:
    """Write a file readable by its owner only (0600), whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, FILE_MODE)


def make_private(root: Path) -> None:
    """chmod a bundle tree to 0700 dirs / 0600 files (after others wrote into it)."""
    for dirpath, _dirs, files in os.walk(root):
        os.chmod(dirpath, DIR_MODE)
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                os.chmod(path, FILE_MODE)


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(path, DIR_MODE)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


ADD_DRAIN_S = 10.0  # finalise waits this long at most for results being written


class BundleClosed(BundleError):
    """A result reached a bundle that was already final."""


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
            self.tmp.mkdir(mode=DIR_MODE)
            os.chmod(self.tmp, DIR_MODE)
        except OSError as exc:
            raise BundleError(f"cannot create bundle in {out_dir}: {exc.strerror or exc}"
                              ) from None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # no add() is writing: finalise may close
        self._adding = 0
        self.closed = False  # finalised: a result that comes back later is not written
        self._entries: list[ResultEntry] = []
        self._keys: set[tuple[str, str]] = set()
        log_fd = os.open(self.tmp / RESULTS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        self._log = os.fdopen(log_fd, "a", encoding="utf-8")
        self._scrubbed_with = 0  # learned secret values the last rescrub knew
        self.write_errors: list[str] = []

    def add(self, result: CommandResult, key: str, url: str | None = None,
            extension: str = "txt", redaction: Redaction = "text",
            target: dict[str, Any] | None = None, read: str | None = None) -> ResultEntry:
        """Redact and write one result's output, then log its manifest row. BundleClosed when
        the bundle is already final (a command that came back after the capture ended)."""
        with self._lock:
            if self.closed:
                raise BundleClosed(f"{result.host}: {key} came back after the bundle was final")
            self._adding += 1
        try:
            return self._add(result, key, url, extension, redaction, target, read)
        finally:
            with self._lock:
                self._adding -= 1
                self._idle.notify_all()

    def _add(self, result: CommandResult, key: str, url: str | None, extension: str,
             redaction: Redaction, target: dict[str, Any] | None, read: str | None) -> ResultEntry:
        data = self.redactor.output(result.source, result.stdout, redaction)
        stderr = self.redactor.string(result.stderr)
        argv = self.redactor.argv(result.argv)
        url = self.redactor.string(url) if url else url
        read = self.redactor.string(read) if read else read
        with self._lock:
            key = self._unique(result.host, key)
        rel = f"raw/{result.host}/{key}.{extension}"
        path, digest = None, None
        error = self.redactor.string(result.error) if result.error else result.error
        if data or result.exit_status is not None:
            try:
                _private_dir(self.tmp / "raw" / result.host)
                write_private(self.tmp / rel, data)
                path, digest = rel, hashlib.sha256(data).hexdigest()
            except OSError as exc:
                msg = f"cannot write {rel}: {exc.strerror or exc}"
                error = f"{error}; {msg}" if error else msg
                self.write_errors.append(msg)
        entry = ResultEntry(
            host=result.host, source=result.source, key=key,
            # an endpoint fetched by curl on the host (or through srun) keeps that command
            argv=None if read or (url and argv[:1] == ("GET",)) else argv, url=url, read=read,
            exit_status=result.exit_status,
            duration_s=round(result.duration_s, 4), started_at=result.started_at,
            timed_out=result.timed_out, truncated=result.truncated, bytes=len(data),
            sha256=digest, path=path, error=error, stderr=stderr[-4000:],
            target=self.redactor.json(target or {}),
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

    def write_json(self, rel: str, obj: Any, compact: bool = False) -> None:
        """Write a derived JSON file (parsed/, analysis) into the bundle. compact: one line,
        through json's C encoder (indent makes json fall back to its pure-Python encoder,
        which was half of a 32-host capture's finalise); non-ASCII stays UTF-8, as in raw/."""
        path = self.tmp / rel
        clean = self._redact_strings(json.loads(json.dumps(obj, default=str)))
        text = (json.dumps(clean, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                if compact else json.dumps(clean, indent=1, sort_keys=True))
        data = text.encode("utf-8", "replace")
        try:
            _private_dir(path.parent)
            write_private(path, data)
        except OSError as exc:  # derived data: the raw evidence stays; say what is missing
            path.unlink(missing_ok=True)
            with self._lock:
                self.write_errors.append(f"cannot write {rel}: {exc.strerror or exc}")

    def _redact_strings(self, value: Any) -> Any:
        """Every string of a JSON-able value redacted as the text it is: redacting the JSON
        text instead would see escaped quotes (`api_key=\\"V\\"`) and could cut through them."""
        if isinstance(value, str):
            return self.redactor.text(value.encode("utf-8", "surrogatepass")).decode("utf-8", "replace")
        if isinstance(value, dict):
            return {self._redact_strings(k): self._redact_strings(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            items = [self._redact_strings(v) for v in value]
            if items and all(isinstance(v, str) and "\0" not in v for v in items):
                return list(self.redactor.argv(items))  # an argv too: `--api-key`, `V`
            return items
        return value

    def entries(self) -> list[ResultEntry]:
        with self._lock:
            return list(self._entries)

    def rescrub(self) -> set[str]:
        """Re-redact every written file (and manifest rows) with every secret value learned
        during the capture: a value learned from one host's environ is scrubbed from
        output written before it was learned. Returns the files it rewrote."""
        values = self.redactor.known_values()
        self._scrubbed_with = len(values)
        rewritten: set[str] = set()
        if not values:
            return rewritten
        with self._lock:
            self._entries = [self._rescrub_entry(e) for e in self._entries]
        for dirpath, _dirs, files in os.walk(self.tmp):
            for name in files:
                path = Path(dirpath) / name
                rel = path.relative_to(self.tmp).as_posix()
                try:
                    data = path.read_bytes()
                    if any(v in data for v in values):
                        path.write_bytes(self.redactor.text(data))
                        rewritten.add(rel)
                except OSError as exc:  # never leave a secret behind in a half-written file
                    path.unlink(missing_ok=True)
                    with self._lock:
                        self.write_errors.append(f"cannot rewrite {rel}: {exc.strerror or exc}")
        return rewritten

    def _rescrub_entry(self, e: ResultEntry) -> ResultEntry:
        r = self.redactor
        return ResultEntry(**{**e.__dict__, "argv": r.argv(e.argv) if e.argv is not None else None,
                              "url": r.string(e.url) if e.url else e.url,
                              "error": r.string(e.error) if e.error else e.error,
                              "stderr": r.string(e.stderr), "target": r.json(e.target)})

    def finalise(self, manifest: dict[str, Any]) -> Path:
        """Fix sha256s, write manifest.json atomically and rename to the final name."""
        if len(self.redactor.known_values()) != self._scrubbed_with:
            self.rescrub()
        with self._lock:
            self.closed = True
            self._idle.wait_for(lambda: self._adding == 0, timeout=ADD_DRAIN_S)
            try:
                self._log.close()
            except OSError as exc:  # the rows are all in memory too: the manifest carries them
                self.write_errors.append(f"cannot write {RESULTS_LOG}: {exc.strerror or exc}")
        entries = []
        for e in self.entries():
            if e.path is not None and (self.tmp / e.path).exists():
                digest = sha256_file(self.tmp / e.path)
                size = (self.tmp / e.path).stat().st_size
                if digest != e.sha256 or size != e.bytes:
                    e = ResultEntry(**{**e.__dict__, "sha256": digest, "bytes": size})
            elif e.path is not None:  # removed after a failed rewrite: say so, don't point at it
                why = f"raw file {e.path} could not be kept"
                e = ResultEntry(**{**e.__dict__, "path": None, "sha256": None,
                                   "error": f"{e.error}; {why}" if e.error else why})
            entries.append(e)
        entries.sort(key=lambda e: (e.host, e.started_at, e.key))
        if self.write_errors:
            manifest["status"] = "partial"
            manifest.setdefault("partial_reasons", []).extend(sorted(set(self.write_errors)))
        doc = {
            "format": 1, "tool": "pdforensics", "tool_version": __version__,
            "cluster": self.cluster, "started_at": iso(self.started_at),
            "started_epoch": self.started_at, "finished_at": iso(time.time()),
            "finished_epoch": time.time(), **self.redactor.json(manifest),
            "redaction": self.redactor.describe(),
            "files": self._other_files({e.path for e in entries if e.path is not None}),
            "results": [e.to_json() for e in entries],
        }
        try:
            make_private(self.tmp)
            tmp_manifest = self.tmp / (MANIFEST + ".tmp")
            write_private(tmp_manifest, json.dumps(doc, indent=1, default=str).encode())
            os.replace(tmp_manifest, self.tmp / MANIFEST)
            final = self._final_path()
            os.rename(self.tmp, final)
        except OSError as exc:
            raise BundleError(
                f"cannot finalise bundle (evidence kept in {self.tmp}): {exc.strerror or exc}"
            ) from None
        return final

    def _other_files(self, listed: set[str]) -> dict[str, str]:
        """sha256 of every file that is not a result (parsed/, results.jsonl), for verify."""
        out = {}
        for dirpath, _dirs, files in os.walk(self.tmp):
            for name in files:
                rel = (Path(dirpath) / name).relative_to(self.tmp).as_posix()
                if rel not in listed and rel != MANIFEST and not rel.endswith(".tmp"):
                    out[rel] = sha256_file(Path(dirpath) / name)
        return dict(sorted(out.items()))

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
        """The entry's bytes through the safe reader (b"" when absent); a path that leaves
        the bundle, a link, a special or an oversize file raises BundleError naming it."""
        if entry.path is None:
            return b""
        try:
            return read_inside(self.path, entry.path, f"manifest entry {entry.host}/{entry.key}")
        except UnsafePath:
            raise
        except OSError:
            return b""

    def text(self, entry: ResultEntry) -> str:
        return self.read(entry).decode("utf-8", "replace")

    def find(self, host: str | None = None, source: str | None = None) -> list[ResultEntry]:
        return [r for r in self.results
                if (host is None or r.host == host) and (source is None or r.source == source)]

    def parsed(self, rel: str) -> Any:
        """parsed/REL as JSON, None when absent; refused or malformed raises BundleError."""
        where = f"parsed/{rel[:200]}"
        return read_json_inside(self.path, f"parsed/{rel}", where)

    def discovery(self, host: str) -> dict[str, Any]:
        """parsed/HOST/discovery.json, validated ({} when absent)."""
        where = f"parsed/{host[:200]}/discovery.json"
        doc = self.parsed(f"{check_name(host, 'host name')}/discovery.json")
        return {} if doc is None else validate_discovery(doc, where)


def load_bundle(path: str | Path) -> Bundle:
    """Read and validate a bundle; one without manifest (crashed capture) is read from
    results.jsonl. Every shape or path problem is one BundleError line."""
    path = Path(path)
    if not path.is_dir():
        raise BundleError(f"{path} is not a bundle directory")
    data = read_optional(path, MANIFEST, MANIFEST, MAX_JSON_BYTES)
    if data is not None:
        manifest = validate_manifest(parse_json(data, MANIFEST), MANIFEST)
        rows = manifest.get("results", [])
    else:
        log = read_optional(path, RESULTS_LOG, RESULTS_LOG, MAX_JSON_BYTES)
        if log is None:
            raise BundleError(f"{path}: no {MANIFEST}; not a pdforensics bundle")
        manifest = {"status": "partial", "partial_reasons": ["capture did not finish"]}
        rows = []
        for n, line in enumerate(log.splitlines(), 1):
            try:
                rows.append(validate_row(parse_json(line, RESULTS_LOG), f"{RESULTS_LOG} line {n}"))
            except SchemaError:
                raise
            except BundleError:  # a line cut by the crash: the rows before it stand
                continue
    results = tuple(ResultEntry.from_json(r) for r in rows)
    return Bundle(path, manifest, results)


def verify_bundle(path: str | Path) -> list[str]:
    """Every problem found re-checking the manifest: a changed (sha256), missing or extra
    file, a link or special file; empty means the bundle is intact. analysis.json and
    report.html are derived after the capture and not hashed; older bundles (no "files"
    table) leave parsed/ unchecked."""
    bundle = load_bundle(path)
    problems = tree_problems(bundle.path)
    refused = {p.split(": ", 1)[0] for p in problems}
    others = bundle.manifest.get("files")
    expected: dict[str, str | None] = {r.path: r.sha256 for r in bundle.results if r.path is not None}
    if isinstance(others, dict):
        expected.update({str(k): str(v) for k, v in others.items()})
    for rel, want in sorted(expected.items()):
        if rel in refused:
            continue
        try:
            digest = sha256_inside(bundle.path, rel, rel)
        except UnsafePath as exc:
            problems.append(str(exc))
            continue
        except OSError:
            problems.append(f"{rel}: missing")
            continue
        if digest != want:
            problems.append(f"{rel}: sha256 mismatch (manifest {want}, file {digest})")
    for rel, mode in walk_inside(bundle.path):
        if stat.S_ISDIR(mode) or rel in refused:
            continue
        if rel in expected or rel == MANIFEST or rel in DERIVED_FILES:
            continue
        if not isinstance(others, dict) and (rel == RESULTS_LOG or rel.startswith("parsed/")):
            continue
        problems.append(f"{rel}: extra file, not in the manifest")
    return problems
