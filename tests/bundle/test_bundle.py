"""Bundle writing: atomic finalise, never overwrite, verify, crash recovery, redaction."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pdforensics.bundle.ondisk import BundleWriter, load_bundle, verify_bundle
from pdforensics.errors import BundleError
from pdforensics.model import CommandResult
from pdforensics.redact.redactor import Redactor


def result(source: str, out: bytes, status: int | None = 0, **kw: object) -> CommandResult:
    return CommandResult(host="h1", source=source, argv=("cat", "x"), exit_status=status,
                         stdout=out, stderr="", duration_s=0.1, started_at=time.time(), **kw)  # type: ignore[arg-type]


def test_write_finalise_verify(tmp_path: Path) -> None:
    w = BundleWriter(tmp_path, "c", Redactor(b"k"), time.time())
    w.add(result("ps", b"1 0 S 1 1 1 init\n"), key="ps")
    w.add(result("environ", b"HF_TOKEN=hf_abcdefghijklmnopqrstuv\0"), key="environ.pid1",
          extension="bin", redaction="environ")
    w.add(result("health", b"", status=None, timed_out=True), key="health")
    assert not list(tmp_path.glob("c-*"))  # nothing under the final name yet
    final = w.finalise({"status": "complete", "partial_reasons": []})
    assert final.name.startswith("c-") and not list(tmp_path.glob(".c-*"))
    m = json.loads((final / "manifest.json").read_text())
    assert m["status"] == "complete" and m["tool_version"] and len(m["results"]) == 3
    env = (final / "raw/h1/environ.pid1.bin").read_bytes()
    assert b"hf_abc" not in env and b"<redacted:" in env
    assert verify_bundle(final) == []
    (final / "raw/h1/ps.txt").write_bytes(b"tampered")
    assert any("sha256 mismatch" in p for p in verify_bundle(final))


def test_never_overwrites_an_earlier_bundle(tmp_path: Path) -> None:
    t = time.time()
    a = BundleWriter(tmp_path, "c", Redactor(b"k"), t).finalise({"status": "complete"})
    b = BundleWriter(tmp_path, "c", Redactor(b"k"), t).finalise({"status": "complete"})
    assert a != b and a.exists() and b.exists()


def test_crashed_capture_is_readable_as_partial(tmp_path: Path) -> None:
    w = BundleWriter(tmp_path, "c", Redactor(b"k"), time.time())
    w.add(result("ps", b"data"), key="ps")
    b = load_bundle(w.tmp)  # no manifest: read from results.jsonl
    assert b.status == "partial" and [r.key for r in b.results] == ["ps"]
    assert b.read(b.results[0]) == b"data"


def test_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError):
        load_bundle(tmp_path)


def test_unwritable_out_dir_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(BundleError, match="cannot create bundle"):
        BundleWriter(f / "sub", "c", Redactor(b"k"), time.time())
