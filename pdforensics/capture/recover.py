"""Temporary bundle directories left by a capture that was killed (SIGKILL, OOM, power).

A capture writes into `<out>/.<cluster>-<stamp>.<pid>.tmp/` and renames it when it finishes.
When the process dies before that, the directory stays: its results.jsonl lists everything
gathered. `find_unfinished` spots such directories (their pid is gone); `recover` finalises
one as a partial bundle (re-redacted, hashed, verifiable) and `discard` removes it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from pdforensics import __version__, linear
from pdforensics.bundle.ondisk import (
    MANIFEST,
    RESULTS_LOG,
    ResultEntry,
    iso,
    make_private,
    sha256_file,
    write_private,
)
from pdforensics.errors import BundleError
from pdforensics.redact.redactor import Redactor

_TMP_NAME = linear.compile(r"^\.(?P<name>(?P<cluster>.+)-(?P<stamp>\d{8}T\d{6}Z))\.(?P<pid>\d+)\.tmp$")


def parse_tmp_name(path: Path) -> linear.Match[str] | None:
    return _TMP_NAME.match(path.name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_unfinished(path: Path) -> bool:
    """A capture's temporary directory (results.jsonl, no final name) whose process is gone."""
    m = parse_tmp_name(path)
    return (m is not None and path.is_dir() and (path / RESULTS_LOG).exists()
            and not _alive(int(m["pid"])))


def looks_unfinished(path: Path) -> bool:
    """A directory holding a capture's results log but no manifest: a killed capture."""
    return path.is_dir() and (path / RESULTS_LOG).exists() and not (path / MANIFEST).exists()


def find_unfinished(out_dir: Path) -> list[Path]:
    """Temporary directories in OUT_DIR left by captures that are no longer running."""
    if not out_dir.is_dir():
        return []
    return sorted(p for p in out_dir.iterdir() if p.name.startswith(".") and is_unfinished(p))


def unfinished_notice(out_dir: Path) -> str | None:
    """One line for the next capture in the same directory, or None."""
    left = find_unfinished(out_dir)
    if not left:
        return None
    names = ", ".join(p.name for p in left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    return (f"pdforensics: note: {out_dir} holds {len(left)} unfinished capture(s) from a killed "
            f"run ({names}): finalise with `pdforensics recover {left[0]}` "
            f"or remove with `pdforensics recover --discard {left[0]}`")


def refuse_unfinished(path: str | Path) -> None:
    """Raise for a killed capture's directory: it has no verdict to give until recovered."""
    p = Path(path)
    if looks_unfinished(p):
        raise BundleError(f"{p} is an unfinished capture (killed before it wrote {MANIFEST}); "
                          f"finalise it first with `pdforensics recover {p}`")


def discard(path: Path) -> None:
    _check(path)
    shutil.rmtree(path)


def _check(path: Path) -> linear.Match[str]:
    m = parse_tmp_name(path)
    if m is None or not path.is_dir() or not (path / RESULTS_LOG).exists():
        raise BundleError(f"{path}: not a capture's temporary directory (.NAME.PID.tmp with {RESULTS_LOG})")
    if _alive(int(m["pid"])) and int(m["pid"]) != os.getpid():
        raise BundleError(f"{path}: its capture (pid {m['pid']}) is still running")
    return m


def recover(path: Path, redactor: Redactor | None = None) -> Path:
    """Finalise a killed capture's directory as a partial bundle; returns its final path."""
    m = _check(path)
    r = redactor or Redactor()
    rows = _read_rows(path / RESULTS_LOG)
    _redact_files(path, rows, r)
    rows = [_redact_row(e, r) for e in rows]
    for leftover in path.rglob("*.tmp"):  # a manifest half-written when the kill came
        leftover.unlink()
    (path / MANIFEST).unlink(missing_ok=True)
    entries = [_rehash(path, e) for e in rows]
    entries.sort(key=lambda e: (e.host, e.started_at, e.key))
    write_private(path / RESULTS_LOG, b"".join(json.dumps(e.to_json()).encode() + b"\n" for e in entries))
    started = _epoch(m["stamp"])
    hosts = sorted({e.host for e in entries})
    doc: dict[str, Any] = {
        "format": 1, "tool": "pdforensics", "tool_version": __version__, "cluster": m["cluster"],
        "started_at": iso(started), "started_epoch": started,
        "finished_at": iso(max((e.started_at + e.duration_s for e in entries), default=started)),
        "finished_epoch": max((e.started_at + e.duration_s for e in entries), default=started),
        "status": "partial",
        "partial_reasons": [f"capture killed before it finished (pid {m['pid']}); recovered "
                            f"{len(entries)} result(s) at {iso(time.time())}",
                            "no discovery recorded: services and processes are not listed"],
        "interrupted": True, "recovered": True,
        "hosts": [{"name": h, "address": "", "reachable": True} for h in hosts],
        "redaction": r.describe(),
        "files": _other_files(path, {e.path for e in entries if e.path}),
        "results": [e.to_json() for e in entries],
    }
    make_private(path)
    write_private(path / MANIFEST, json.dumps(doc, indent=1, default=str).encode())
    final, n = path.parent / m["name"], 1
    while final.exists():
        n += 1
        final = path.parent / f"{m['name']}-{n}"
    os.rename(path, final)
    return final


def _epoch(stamp: str) -> float:
    from datetime import datetime, timezone

    return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc).timestamp()


def _read_rows(log: Path) -> list[ResultEntry]:
    rows = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            rows.append(ResultEntry.from_json(json.loads(line)))
        except (ValueError, TypeError, AttributeError):
            continue  # the last line may be cut by the kill
    return rows


def _redact_files(root: Path, rows: list[ResultEntry], r: Redactor) -> None:
    """Environ blocks first (they teach the redactor their values), then every other file."""
    from pdforensics.collectors import REGISTRY

    environ = {e.path for e in rows if e.path and _inside(root, e.path)
               and getattr(REGISTRY.get(e.source), "redaction", "text") == "environ"}
    for rel in sorted(environ):
        f = root / rel
        if f.is_file() and not f.is_symlink():
            write_private(f, r.environ(f.read_bytes()))
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.is_file() and not f.is_symlink() and rel not in environ and rel != RESULTS_LOG:
            data = f.read_bytes()
            clean = r.text(data)
            if clean != data:
                write_private(f, clean)


def _redact_row(e: ResultEntry, r: Redactor) -> ResultEntry:
    return ResultEntry(**{**e.__dict__, "argv": r.argv(e.argv) if e.argv is not None else None,
                          "url": r.string(e.url) if e.url else e.url,
                          "error": r.string(e.error) if e.error else e.error,
                          "stderr": r.string(e.stderr), "target": r.json(e.target)})


def _inside(root: Path, rel: str) -> bool:
    return (root / rel).resolve().is_relative_to(root.resolve())


def _rehash(root: Path, e: ResultEntry) -> ResultEntry:
    if e.path is None:
        return e
    f = root / e.path
    if not _inside(root, e.path) or f.is_symlink() or not f.is_file():
        why = f"raw file {e.path} was not written before the kill"
        return ResultEntry(**{**e.__dict__, "path": None, "sha256": None,
                              "error": f"{e.error}; {why}" if e.error else why})
    return ResultEntry(**{**e.__dict__, "sha256": sha256_file(f), "bytes": f.stat().st_size})


def _other_files(root: Path, listed: set[str]) -> dict[str, str]:
    out = {}
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.is_file() and rel not in listed and rel != MANIFEST:
            out[rel] = sha256_file(f)
    return out
