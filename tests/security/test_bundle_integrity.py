"""verify catches a changed, missing or extra file; bundles are 0700/0600; manifest rows and
`verify --secrets` never carry a secret; `--no-redact` is recorded."""

from __future__ import annotations

import json
import stat
import tarfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import tests.security.planted_secrets as ps
from pdforensics.bundle.archive import write_archive
from pdforensics.bundle.ondisk import BundleWriter, make_private, verify_bundle
from pdforensics.bundle.secrets_scan import scan_bundle
from pdforensics.cli import main
from pdforensics.model import CommandResult
from pdforensics.redact.redactor import NoRedactor, Redactor


def _result(source: str, out: bytes, **kw: object) -> CommandResult:
    base: dict[str, object] = dict(host="h1", source=source, argv=("cat", "x"), exit_status=0, stdout=out,
                                   stderr="", duration_s=0.1, started_at=time.time())
    return CommandResult(**{**base, **kw})  # type: ignore[arg-type]


def _bundle(tmp_path: Path, redactor: Redactor | None = None, archive: bool = False) -> Path:
    w = BundleWriter(tmp_path / "out", "c", redactor or Redactor(b"k"), time.time())
    w.add(_result("ps", b"1 0 S 1 1 1 init\n"), key="ps")
    w.add(_result("environ", b"HF_TOKEN=" + ps.HF.encode() + b"\0DB_PASSWORD=SecTestIntegrity01\0"),
          key="environ.pid1", extension="bin", redaction="environ")
    w.write_json("parsed/h1/ps.json", {"parsed": {"rows": 1}})
    bundle = w.finalise({"status": "complete", "partial_reasons": []})
    if archive:
        write_archive(bundle)
    return bundle


def test_intact_bundle_verifies(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    assert verify_bundle(b) == []
    m = json.loads((b / "manifest.json").read_text())
    assert set(m["files"]) == {"results.jsonl", "parsed/h1/ps.json"}


@pytest.mark.parametrize("rel", ["raw/h1/ps.txt", "parsed/h1/ps.json", "results.jsonl"])
def test_changed_file_is_reported(tmp_path: Path, rel: str) -> None:
    b = _bundle(tmp_path)
    with (b / rel).open("ab") as f:
        f.write(b" ")
    assert verify_bundle(b) == [next(p for p in verify_bundle(b) if p.startswith(f"{rel}: sha256 mismatch"))]


@pytest.mark.parametrize("rel", ["raw/h1/ps.txt", "parsed/h1/ps.json"])
def test_missing_file_is_reported(tmp_path: Path, rel: str) -> None:
    b = _bundle(tmp_path)
    (b / rel).unlink()
    assert verify_bundle(b) == [f"{rel}: missing"]


@pytest.mark.parametrize("rel", ["raw/h1/planted.txt", "parsed/h1/x.json", "notes.txt", "raw/h2/ps.txt"])
def test_extra_file_is_reported(tmp_path: Path, rel: str) -> None:
    b = _bundle(tmp_path)
    (b / rel).parent.mkdir(parents=True, exist_ok=True)
    (b / rel).write_text("added later")
    assert verify_bundle(b) == [f"{rel}: extra file, not in the manifest"]


def test_derived_files_are_allowed(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    (b / "analysis.json").write_text("{}")
    (b / "report.html").write_text("<html></html>")
    assert verify_bundle(b) == []


def test_verify_cli_exit_codes(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    ok = CliRunner().invoke(main, ["verify", str(b)])
    assert ok.exit_code == 0 and ok.stdout.startswith("ok:"), ok.output
    (b / "raw/h1/extra.txt").write_text("x")
    (b / "raw/h1/ps.txt").write_text("x")
    bad = CliRunner().invoke(main, ["verify", str(b)])
    assert bad.exit_code == 1
    assert "raw/h1/extra.txt: extra file" in bad.stdout and "raw/h1/ps.txt: sha256 mismatch" in bad.stdout


def _modes(root: Path) -> set[tuple[str, int]]:
    return {("d" if p.is_dir() else "f", stat.S_IMODE(p.stat().st_mode)) for p in [root, *root.rglob("*")]}


def test_bundles_are_0700_and_0600_whatever_the_umask(tmp_path: Path) -> None:
    import os

    old = os.umask(0o002)
    try:
        b = _bundle(tmp_path, archive=True)
    finally:
        os.umask(old)
    assert _modes(b) == {("d", 0o700), ("f", 0o600)}, _modes(b)
    archive = Path(f"{b}.tar.gz")
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    with tarfile.open(archive) as tar:
        assert f"{b.name}/manifest.json" in tar.getnames()
    (b / "report.html").write_text("x")
    (b / "report.html").chmod(0o644)
    make_private(b)  # what capture runs after analyze/report wrote into the bundle
    assert _modes(b) == {("d", 0o700), ("f", 0o600)}


def test_manifest_rows_are_redacted_with_values_learned_later(tmp_path: Path) -> None:
    """stderr, error, url and target written before an environ taught the value."""
    w = BundleWriter(tmp_path, "c", Redactor(b"k"), time.time())
    w.add(_result("health", b"", stderr="auth SecTestLate01 rejected", error="curl https://u:SecTestUrl02@h/",
                  argv=("curl", "-H", "Authorization: Bearer SecTestHdr03", "http://h/")),
          key="health", url="https://u:SecTestUrl02@h/", target={"unit": "x", "note": "SecTestLate01"})
    w.add(_result("environ", b"PROXY_AUTH=SecTestLate01\0"), key="environ.pid1", extension="bin", redaction="environ")
    b = w.finalise({"status": "complete", "partial_reasons": [],
                    "hosts": [{"name": "h1", "error": "login with SecTestLate01 failed"}]})
    text = "".join(p.read_text(errors="replace") for p in b.rglob("*") if p.is_file())
    for needle in ("SecTestLate01", "SecTestUrl02", "SecTestHdr03"):
        assert needle not in text, needle
    assert verify_bundle(b) == []
    assert json.loads((b / "manifest.json").read_text())["redaction"]["enabled"] is True


def test_verify_secrets_names_file_and_line_but_not_the_secret(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    clean = CliRunner().invoke(main, ["verify", "--secrets", str(b)])
    assert clean.exit_code == 0 and "no unredacted secret" in clean.stdout, clean.output
    planted = b / "raw" / "h1" / "ps.txt"
    planted.write_text(f"line one\nline two {ps.GHP}\n--api-key SecTestVerify01\n")
    hits, scanned = scan_bundle(b)
    assert scanned >= 5 and [(h.path, h.line, h.kind) for h in hits] == [
        ("raw/h1/ps.txt", 2, "github-token"), ("raw/h1/ps.txt", 3, "flag")]
    dirty = CliRunner().invoke(main, ["verify", "--secrets", str(b)])
    assert dirty.exit_code == 1
    assert "raw/h1/ps.txt:2: unredacted secret: github-token" in dirty.stdout
    assert "raw/h1/ps.txt:3: unredacted secret: flag" in dirty.stdout
    assert ps.GHP not in dirty.output and "SecTestVerify01" not in dirty.output
    assert ps.GHP[4:] not in dirty.output and "Verify01" not in dirty.output


def test_verify_secrets_reads_report_html_as_text(tmp_path: Path) -> None:
    b = _bundle(tmp_path)
    (b / "report.html").write_text('<td>&quot;api_key&quot;: &quot;SecTestHtml01&quot;</td>\n')
    hits, _ = scan_bundle(b)
    assert [(h.path, h.kind) for h in hits] == [("report.html", "json-field")]


def test_no_redact_bundle_keeps_secrets_and_says_so(tmp_path: Path) -> None:
    b = _bundle(tmp_path, redactor=NoRedactor())
    m = json.loads((b / "manifest.json").read_text())
    assert m["redaction"]["enabled"] is False and "no-redact" in m["redaction"]["warning"]
    assert ps.HF.encode() in (b / "raw/h1/environ.pid1.bin").read_bytes()
    hits, _ = scan_bundle(b)
    assert {h.kind for h in hits} >= {"huggingface-token", "assignment"}
