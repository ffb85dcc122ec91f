"""One secret of every kind planted in the SSH lab (env, cmdline, log lines, metric labels):
a capture over real sshd leaves none of them in the bundle, its report or the tool's output,
by the tool's own scanner and by a plain byte search; `--no-redact` keeps them and says so."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import tests.security.planted_secrets as ps
from pdforensics.bundle.secrets_scan import scan_bundle
from pdforensics.cli import main
from pdforensics.lab import lab_status
from pdforensics.views.loaded import load_capture

pytestmark = [pytest.mark.e2e, pytest.mark.lab]


def _capture(cluster: Path, out: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, ["capture", "-c", str(cluster), "-o", str(out), "--json",
                                       "--deadline", "45", *extra])
    assert result.stdout.strip(), result.output
    return result, json.loads(result.stdout)


def _grep(needles: list[str], *paths: Path) -> str:
    """`grep -r -a -F -l` of every needle: the files that hold any of them ("" when none)."""
    pattern_file = paths[0].parent / "needles.txt"
    pattern_file.write_text("\n".join(needles) + "\n")
    res = subprocess.run(["grep", "-r", "-a", "-F", "-l", "-f", str(pattern_file), *map(str, paths)],
                         capture_output=True, text=True)
    pattern_file.unlink()
    assert res.returncode in (0, 1), res.stderr
    return res.stdout


def _lines_with(path: Path, needle: str) -> set[int]:
    data = path.read_bytes()
    if path.suffix == ".html":
        import html
        data = html.unescape(data.decode("utf-8", "replace")).encode()
    return {i + 1 for i, line in enumerate(data.split(b"\n")) if needle.encode() in line}


def _assert_planted_at_the_source(lab_dir: Path) -> None:
    """The lab really exposes every planted value (else the test proves nothing)."""
    pids = {p.name: p.pid for p in lab_status(lab_dir).processes if p.alive}
    environ = Path(f"/proc/{pids['prefill']}/environ").read_bytes()
    cmdline = Path(f"/proc/{pids['router']}/cmdline").read_bytes()
    for k, v in {**ps.ENV_BY_NAME, **ps.ENV_BY_SHAPE, **ps.ENV_PLAIN, **ps.ENV_KEPT}.items():
        assert f"{k}={v}".encode() in environ, k
    assert "\0".join(ps.FLAGS).encode() in cmdline
    log = (lab_dir / "logs" / "decode.log").read_text()
    assert all(line in log for line in ps.LOG_LINES)
    info = json.loads((lab_dir / "lab.json").read_text())
    prefill = next(h for h in info["hosts"] if h["role"] == "prefill")
    with urllib.request.urlopen(f"http://{prefill['bind']}:{info['ports']['prefill']}/metrics", timeout=5) as r:
        metrics = r.read().decode()
    assert 'api_key="SecTestLabelKey20"' in metrics and ps.HF in metrics
    with urllib.request.urlopen(f"http://{prefill['bind']}:{info['ports']['prefill']}/server_info", timeout=5) as r:
        assert json.loads(r.read())["api_key"] == "SecTestFlagApiKey11"


def test_no_planted_secret_reaches_bundle_report_or_output(security_lab: Path, tmp_path: Path) -> None:
    _assert_planted_at_the_source(security_lab.parent)
    result, doc = _capture(security_lab, tmp_path / "out")
    assert result.exit_code in (0, 3), result.output
    bundle = Path(doc["bundle"])
    cap = load_capture(bundle)
    assert {h.name for h in cap.hosts if h.reachable and h.discovered} == {"router-0", "prefill-0", "decode-0"}
    assert (bundle / "report.html").is_file(), doc.get("report")
    # evidence is kept, values are not: names with markers, equal secrets with equal markers
    markers = {}
    for host in cap.hosts:
        for svc in host.services:
            env = svc.environ
            for name in ps.ENV_BY_NAME:
                assert env[name].startswith("<redacted:"), (host.name, name, env[name])
            markers[host.name] = env["HF_TOKEN"]
            assert svc.environ.get("SGLANG_DISAGGREGATION_WAITING_TIMEOUT") in ("300", None)
            # allowlist: SGLang/NCCL values readable, an innocent-looking unknown name hashed
            for name, value in ps.ENV_KEPT.items():
                assert env[name] == value, (host.name, name, env[name])
            assert env["APP_SETTINGS"].startswith("<redacted:"), env["APP_SETTINGS"]
            assert env["PATH"] and not env["PATH"].startswith("<redacted:")
    assert len(set(markers.values())) == 1, markers
    raw_logs = b"".join(p.read_bytes() for p in bundle.glob("raw/*/log_file*"))
    assert b"Authorization: Bearer <redacted:" in raw_logs and b"api_key='<redacted:" in raw_logs
    raw_metrics = b"".join(p.read_bytes() for p in bundle.glob("raw/prefill-0/metrics*"))
    assert b'api_key="<redacted:' in raw_metrics and b"sglang:num_running_reqs" in raw_metrics
    # the tool's own scanner: every file of the bundle, report.html included
    hits, scanned = scan_bundle(bundle)
    assert scanned > 50 and hits == [], [str(h) for h in hits[:20]]
    verify = CliRunner().invoke(main, ["verify", "--secrets", str(bundle)])
    assert verify.exit_code == 0, verify.output
    # a plain byte search of every planted value: bundle, report, a re-rendered report, output
    rendered = tmp_path / "rendered" / "report.html"
    rep = CliRunner().invoke(main, ["report", str(bundle), "-o", str(rendered)])
    assert rep.exit_code == 0 and rendered.is_file(), rep.output
    (tmp_path / "tool-output.txt").write_text(result.stdout + result.stderr + verify.output + rep.output)
    found = _grep(ps.NEEDLES, bundle, rendered, tmp_path / "tool-output.txt")
    assert found == "", f"planted secrets found in: {found}"


def test_no_redact_keeps_the_secrets_and_warns(security_lab: Path, tmp_path: Path) -> None:
    result, doc = _capture(security_lab, tmp_path / "out", "--no-redact", "--no-stacks", "--samples", "1")
    bundle = Path(doc["bundle"])
    try:
        assert result.stderr.count("WARNING: --no-redact") == 2, result.stderr
        manifest = json.loads((bundle / "manifest.json").read_text())
        assert manifest["redaction"]["enabled"] is False and "--no-redact" in manifest["redaction"]["warning"]
        assert _grep([ps.HF, "SecTestFlagApiKey11", "SecTestLabelKey20", "SecTestLogRepr18"], bundle)
        hits, _ = scan_bundle(bundle)
        kinds = {h.kind for h in hits}
        assert kinds >= {"pem-private-key", "huggingface-token", "openai-key", "aws-access-key-id",
                         "aws-secret-access-key", "github-token", "github-pat", "slack-token", "jwt",
                         "url-password", "http-header", "flag", "json-field", "assignment",
                         "dict-field", "colon-field", "basic-auth-option", "webhook-url", "google-api-key",
                         "url-query", "stripe-key", "gitlab-token", "docker-config", "quoted-assignment",
                         "npm-token", "vault-token", "netrc-password", "bearer"}, kinds
        # every planted value sits in some hit's line: the scanner misses none of them
        hit_lines = {(h.path, h.line) for h in hits}
        for needle in ps.NEEDLES:
            if needle == ps.PLAIN_ENV:
                continue  # no shape and an innocent name: only the allowlist at capture hides it
            where = _grep([needle], bundle).split()
            assert where, needle
            assert any(_lines_with(bundle / Path(w).relative_to(bundle), needle) & {ln for p, ln in hit_lines
                       if bundle / p == Path(w)} for w in where), f"verify --secrets misses {needle}"
        verify = CliRunner().invoke(main, ["verify", "--secrets", str(bundle)])
        assert verify.exit_code == 1 and ": unredacted secret: " in verify.stdout
        assert not any(n in verify.output for n in ps.NEEDLES), "the scanner printed a secret"
    finally:
        shutil.rmtree(bundle, ignore_errors=True)


@pytest.mark.parametrize("redact", [True, False], ids=["redacted", "control-no-redact"])
def test_sigkill_mid_capture_leaves_no_planted_secret(security_lab: Path, tmp_path: Path,
                                                      redact: bool) -> None:
    """A capture killed with SIGKILL while it writes leaves its staging directory behind: no
    byte of it, nor of $TMPDIR, holds a planted value (redaction happens before each write).
    The control run with --no-redact finds them, so the search itself can fail."""
    import os
    import signal
    import sys
    import time

    out, tmpdir = tmp_path / "out", tmp_path / "tmp"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    proc = subprocess.Popen([sys.executable, "-m", "pdforensics.cli", "capture", "-c", str(security_lab),
                             "-o", str(out), "--deadline", "45", *([] if redact else ["--no-redact"])],
                            env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    written: list[Path] = []
    end = time.monotonic() + 40
    while time.monotonic() < end and proc.poll() is None:
        written = [p for p in out.glob(".*.tmp/raw/*/*") if p.is_file()]
        if len(written) >= 40:  # mid-way: environ, cmdline, logs and metrics are being written
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the capture ended before it could be killed mid-way"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    staging = list(out.glob(".*.tmp"))
    assert len(staging) == 1 and not list(out.glob("lab-*")), (staging, list(out.iterdir()))
    kinds = {p.name.split(".")[0] for p in staging[0].glob("raw/*/*")}
    assert {"environ", "cmdline"} <= kinds, kinds  # the killed capture had written host text
    found = _grep(ps.NEEDLES, staging[0], tmpdir)
    if redact:
        assert found == "", f"planted secrets found after SIGKILL in: {found}"
    else:
        assert "/raw/" in found, "the control run should have written the planted values"
