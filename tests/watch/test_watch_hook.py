"""The --on-capture hook: environment, failures, timeout, the example hooks."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from pdforensics.errors import ConfigError
from pdforensics.watch.hook import hook_argv, run_hook

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "watch"
INFO = {"bundle": "/tmp/b", "verdict": "WEDGED", "status": "complete", "cluster": "lab",
        "summary": "WEDGED: x", "trigger": "DECODE_TRANSFER_STUCK", "suspects": "decode-0 decode:1"}


def test_env_reaches_the_hook(tmp_path: Path) -> None:
    out = tmp_path / "env"
    res = run_hook(hook_argv(f"sh -c 'env > {out}; echo done'"), INFO)
    assert res.ok and res.output == "done"
    env = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert env["PDFX_BUNDLE"] == "/tmp/b" and env["PDFX_VERDICT"] == "WEDGED"
    assert env["PDFX_TRIGGER"] == "DECODE_TRANSFER_STUCK" and env["PDFX_CLUSTER"] == "lab"


def test_failure_timeout_and_missing_command() -> None:
    bad = run_hook(hook_argv("sh -c 'echo oops >&2; exit 3'"), INFO)
    assert not bad.ok and bad.exit_status == 3 and bad.output == "oops"
    slow = run_hook(hook_argv("sleep 30"), INFO, timeout_s=0.5)
    assert slow.error == "killed after 0.5s" and slow.duration_s < 5
    missing = run_hook(hook_argv("/nonexistent/hook"), INFO)
    assert missing.error is not None and missing.error.startswith("cannot run /nonexistent/hook")


def test_argv_is_split_without_a_shell() -> None:
    assert hook_argv("notify --to 'ops team' $HOME") == ("notify", "--to", "ops team", "$HOME")
    with pytest.raises(ConfigError):
        hook_argv("  ")
    with pytest.raises(ConfigError):
        hook_argv("'unterminated")


def test_example_archive_hook(tmp_path: Path) -> None:
    bundle = tmp_path / "bundles" / "lab-20260101T000000Z"
    bundle.mkdir(parents=True)
    (bundle / "manifest.json").write_text("{}")
    info = INFO | {"bundle": str(bundle)}
    env_out = tmp_path / "out"
    proc = subprocess.run([str(EXAMPLES / "on-capture-archive.sh")], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "ARCHIVE_DIR": str(env_out),
                               **{f"PDFX_{k.upper()}": v for k, v in info.items()}}, timeout=30)
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(env_out / "lab-20260101T000000Z.tar.gz") as tar:
        assert "lab-20260101T000000Z/manifest.json" in tar.getnames()
    assert "WEDGED\tDECODE_TRANSFER_STUCK" in (env_out / "incidents.tsv").read_text()


def test_example_ticket_hook_logs_without_a_webhook() -> None:
    proc = subprocess.run(["/bin/sh", str(EXAMPLES / "on-capture-ticket.sh")], capture_output=True,
                          text=True, timeout=30,
                          env={"PATH": "/nonexistent", **{f"PDFX_{k.upper()}": v for k, v in INFO.items()}})
    # no logger on PATH: the text goes to stdout instead
    assert proc.returncode == 0, proc.stderr
    assert "lab is WEDGED (DECODE_TRANSFER_STUCK) on decode-0 decode:1" in proc.stdout
