"""A killed capture's temporary directory: found, refused by analyze/report, recovered or discarded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from pdforensics.bundle.ondisk import BundleWriter, verify_bundle
from pdforensics.capture.recover import find_unfinished, recover, unfinished_notice
from pdforensics.cli import main
from pdforensics.model import CommandResult
from pdforensics.redact.redactor import NoRedactor, Redactor

TOKEN = "hf_RecoverPlanted0123456789abcdefXYZ"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def killed_capture(out: Path) -> Path:
    """What a SIGKILLed capture leaves: results written (here unredacted), no manifest, dead pid."""
    w = BundleWriter(out, "lab", NoRedactor(), time.time())
    t = time.time()
    w.add(CommandResult("decode-0", "environ", ("cat", "/proc/1/environ"), 0,
                        f"PATH=/usr/bin\0HF_TOKEN={TOKEN}\0".encode(), "", 0.1, t), key="environ.pid1",
          extension="bin", redaction="environ")
    w.add(CommandResult("decode-0", "ps", ("ps", "-eo", "pid,args"), 0,
                        f"  PID ARGS\n    1 python3 -m sglang.launch_server --token {TOKEN}\n".encode(),
                        "", 0.1, t), key="ps")
    w.add(CommandResult("router-0", "nvidia_smi_query", ("nvidia-smi",), None, b"", "", 5.0, t,
                        timed_out=True), key="nvidia_smi_query")
    w._log.close()
    left = out / w.tmp.name.replace(f".{os.getpid()}.tmp", f".{_dead_pid()}.tmp")
    os.rename(w.tmp, left)
    (left / "manifest.json.tmp").write_text("{\"half")  # the kill came during finalise
    return left


def test_found_by_the_next_capture_in_the_same_directory(tmp_path: Path) -> None:
    left = killed_capture(tmp_path)
    running = BundleWriter(tmp_path, "lab", Redactor(b"k"), time.time())  # a live capture is not stale
    assert find_unfinished(tmp_path) == [left]
    notice = unfinished_notice(tmp_path)
    assert notice is not None and "\n" not in notice
    assert f"pdforensics recover {left}" in notice and "--discard" in notice
    running._log.close()


def test_recover_finalises_a_partial_verifiable_redacted_bundle(tmp_path: Path) -> None:
    left = killed_capture(tmp_path)
    bundle = recover(left, Redactor(b"k"))
    assert not left.exists() and bundle.name.startswith("lab-")
    assert verify_bundle(bundle) == []
    m = json.loads((bundle / "manifest.json").read_text())
    assert m["status"] == "partial" and m["recovered"] and m["interrupted"]
    assert "killed" in m["partial_reasons"][0]
    assert {r["key"] for r in m["results"]} == {"environ.pid1", "ps", "nvidia_smi_query"}
    leaks = [p for p in bundle.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert leaks == []
    assert b"PATH=/usr/bin" in (bundle / "raw/decode-0/environ.pid1.bin").read_bytes()
    assert find_unfinished(tmp_path) == []


def test_analyze_and_report_send_the_user_to_recover(tmp_path: Path) -> None:
    left = killed_capture(tmp_path)
    for args in (["analyze", str(left)], ["report", str(left)]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 1, res.output
        assert "unfinished capture" in res.output and f"pdforensics recover {left}" in res.output
        assert "no SGLang server" not in res.output


def test_cli_recover_and_discard(tmp_path: Path) -> None:
    left = killed_capture(tmp_path / "a")
    res = CliRunner().invoke(main, ["recover", str(left)])
    assert res.exit_code == 0 and "recovered:" in res.output, res.output
    assert CliRunner().invoke(main, ["verify", res.output.split()[1]]).exit_code == 0
    other = killed_capture(tmp_path / "b")
    res = CliRunner().invoke(main, ["recover", "--discard", str(other)])
    assert res.exit_code == 0 and not other.exists(), res.output
    res = CliRunner().invoke(main, ["recover", str(tmp_path / "a")])
    assert res.exit_code == 1 and "not a capture's temporary directory" in res.output
