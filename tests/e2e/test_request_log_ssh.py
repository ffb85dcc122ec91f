"""capture --request-log over real sshd on the session's lab, whose servers do not log
requests: request logging goes on for the window through /configure_logging, the logs read
after it carry request lines the tracker follows, and the setting is back afterwards; a
restore the server refuses is an error the user sees (stderr, exit 1, the bundle says so)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pdforensics.analysis.requests_track import track_requests
from pdforensics.errors import ExitStatus
from pdforensics.lab import set_fault
from pdforensics.lab.hooks import CONFIGURE_LOGGING_ONCE, request_logging, set_hook
from pdforensics.views.loaded import load_capture
from tests.e2e import faultkit as fk

pytestmark = [pytest.mark.e2e, pytest.mark.lab]

FAST = ["--deadline", "30s", "--samples", "1", "--stack-dumps", "1", "--json"]
SERVERS = (("prefill-0", "prefill"), ("decode-0", "decode"))


@pytest.fixture
def lab(ssh_lab: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    lab_dir = ssh_lab.parent
    set_fault(lab_dir, "healthy")
    for _host, role in SERVERS:
        assert request_logging(lab_dir, role) == {"log_requests": False, "log_requests_level": 2}
    cluster = fk.read_cluster(ssh_lab)
    yield lab_dir, cluster
    set_hook(lab_dir, CONFIGURE_LOGGING_ONCE, False)
    for host, role in SERVERS:  # whatever a test left, the shared lab logs no requests again
        if request_logging(lab_dir, role) != {"log_requests": False, "log_requests_level": 2}:
            _post(cluster, host, {"log_requests": False, "log_requests_level": 2})


def _post(cluster: dict[str, Any], host: str, body: dict[str, Any]) -> None:
    h = fk.host(cluster, host)
    url = f"http://{h['address']}:{h['services'][0]['port']}/configure_logging"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.status == 200


def test_request_log_window_leaves_request_lines_and_puts_the_setting_back(
        lab: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    lab_dir, cluster = lab
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST,
                     "--request-log", "3")
    fk.no_traceback(run)
    assert run.rc == ExitStatus.OK, (run.rc, run.stderr[-2000:])
    for host, role in SERVERS:
        assert request_logging(lab_dir, role) == {"log_requests": False, "log_requests_level": 2}
        [on] = run.results(host=host, source="request_log_on")
        [back] = run.results(host=host, source="request_log_restore")
        assert on["exit_status"] == back["exit_status"] == 0 and not on["error"] and not back["error"]
        assert on["url"].endswith("/configure_logging") and back["url"] == on["url"]
        assert json.loads(on["target"]["sent"]) == {"log_requests": True, "log_requests_level": 1}
        assert json.loads(back["target"]["sent"]) == {"log_requests": False, "log_requests_level": 2}
        assert back["started_at"] - on["started_at"] >= 3.0  # the window
        [log] = run.results(host=host, source="log_file")
        assert log["started_at"] >= back["started_at"]  # the log is read after the window
    rl = run.manifest()["request_log"]
    assert {(s["host"], s["state"]) for s in rl["servers"]} == {("prefill-0", "restored"),
                                                                 ("decode-0", "restored")}
    assert rl["left_on"] == [] and run.manifest()["options"]["request_log_s"] == 3.0
    assert run.bundle is not None, run.output
    track = track_requests(load_capture(run.bundle))
    assert not track.silent, track.silent
    assert len([r for r in track.requests if r.stage == "finished"]) >= 2


def test_a_restore_the_server_refuses_is_an_error_the_user_sees(
        lab: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    lab_dir, cluster = lab
    set_hook(lab_dir, CONFIGURE_LOGGING_ONCE, True)  # the switch-on works, the restore fails
    run = fk.capture(fk.write_cluster(cluster, tmp_path / "c.toml"), tmp_path / "out", *FAST,
                     "--request-log", "1")
    fk.no_traceback(run)
    assert run.rc == ExitStatus.ERROR, (run.rc, run.stderr[-2000:])
    said = [ln for ln in run.stderr.splitlines() if ln.startswith("pdforensics: error: request logging left ON")]
    assert len(said) == 2, run.stderr[-2000:]
    assert any("at prefill-0 prefill:" in ln and "(restore failed: HTTP 500)" in ln for ln in said), said
    assert all("/configure_logging" in ln for ln in said)
    for host, role in SERVERS:
        assert request_logging(lab_dir, role) == {"log_requests": True, "log_requests_level": 1}
        [back] = run.results(host=host, source="request_log_restore")
        assert (run.bundle / back["path"]).read_bytes().startswith(b"HTTP/1.1 500")
    doc = json.loads(run.stdout)
    assert len(doc["request_log_left_on"]) == 2 and doc["status"] == "partial"
    assert any("request logging left ON at decode-0" in r for r in doc["partial_reasons"])
    assert {s["state"] for s in run.manifest()["request_log"]["servers"]} == {"restore_failed"}


def test_ctrl_c_in_the_window_still_puts_the_setting_back(
        lab: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    lab_dir, cluster = lab
    out = tmp_path / "out"
    proc = subprocess.Popen([*fk.CLI, "capture", "-c", str(fk.write_cluster(cluster, tmp_path / "c.toml")),
                             "-o", str(out), *FAST, "--request-log", "20", "--deadline", "45s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        end = time.monotonic() + 25
        while time.monotonic() < end and not all(
                (request_logging(lab_dir, role) or {}).get("log_requests") for _h, role in SERVERS):
            time.sleep(0.1)
        assert all(request_logging(lab_dir, role)["log_requests"] for _h, role in SERVERS)  # type: ignore[index]
        proc.send_signal(signal.SIGINT)  # Ctrl-C inside the 20 s window
        _stdout, stderr = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == ExitStatus.INTERRUPTED, stderr[-2000:]
    assert "Traceback" not in stderr, stderr
    for _host, role in SERVERS:
        assert request_logging(lab_dir, role) == {"log_requests": False, "log_requests_level": 2}
    bundle = fk.newest_bundle(out)
    assert bundle is not None
    manifest = json.loads((bundle / "manifest.json").read_text())
    backs = [r for r in manifest["results"] if r["source"] == "request_log_restore"]
    assert len(backs) == 2 and all(r["exit_status"] == 0 and not r["error"] for r in backs), backs
    assert {s["state"] for s in manifest["request_log"]["servers"]} == {"restored"}
    assert manifest["interrupted"] is True
