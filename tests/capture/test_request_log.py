"""--request-log's plan on real result text: /server_info -> switch-on -> window -> restore,
the log reads held until the switch ends, the gaps and the left-on errors; the POST it sends
through an SSH forward; the window checks of the CLI."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from pdforensics.capture.deadline import Deadline
from pdforensics.capture.planner import make_job
from pdforensics.capture.request_log import RESERVE_S, RequestLogPlan
from pdforensics.cli import main
from pdforensics.collectors import http, logs
from pdforensics.collectors.base import Target
from pdforensics.collectors.request_log import REQUEST_LOG_ON, REQUEST_LOG_RESTORE
from pdforensics.errors import ExitStatus
from pdforensics.model import CommandResult, HostSpec, ProcessInfo
from pdforensics.sglang.discovery import Service
from pdforensics.transport.http_forward import build_request
from pdforensics.transport.local import LocalTransport
from tests.support import ports

HOST = HostSpec(name="prefill-0", address="127.0.0.3")
SVC = Service(role="prefill", kind="server", port=30000, address="127.0.0.3", root_pid=7,
              pids=(7,), metrics_port=None, unit=None, log_file="/var/log/prefill.log",
              declared=True)
ROUTER = Service(role="router", kind="router", port=8000, address="127.0.0.2", root_pid=9,
                 pids=(9,), metrics_port=None, unit=None, log_file="/var/log/router.log",
                 declared=True)


def http_result(source: str, status: int, body: bytes = b"", **kw: object) -> CommandResult:
    text = f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body if status else b""
    return CommandResult(host=HOST.name, source=source, argv=("GET", "u"), exit_status=0,
                         stdout=text, stderr="", duration_s=0.1, started_at=time.time(), **kw)  # type: ignore[arg-type]


def server_info(log_requests: object, level: int = 2) -> CommandResult:
    body = json.dumps({"log_requests": log_requests, "log_requests_level": level, "port": 30000})
    return http_result("server_info", 200, body.encode())


def plan(seconds: float = 3.0, deadline_in: float = 60.0, args: str = "") -> tuple[RequestLogPlan, list]:
    p = RequestLogPlan(HOST, seconds, make_job)
    p.deadline = Deadline.after(deadline_in)
    proc = ProcessInfo(pid=7, ppid=1, state="S", start_epoch=0.0, threads=3, rss_kb=1, kind="server",
                       args=args or "python3 -m sglang.launch_server --port 30000")
    p.discovered([SVC, ROUTER], [proc])
    log_jobs = [make_job(HOST, logs.LOG_FILE, Target(service=SVC)),
                make_job(HOST, logs.LOG_FILE, Target(service=ROUTER))]
    return p, log_jobs


def test_window_then_restore_with_the_previous_setting_and_logs_after() -> None:
    p, log_jobs = plan()
    assert p.hold(log_jobs) == [log_jobs[1]]  # the router's log is not held
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    [on] = p.on_result(info, server_info(False, 2))
    assert on.source.name == "request_log_on"
    assert on.body is not None and json.loads(on.body) == {"log_requests": True, "log_requests_level": 1}
    assert "--data-binary" in on.argv and on.url == "http://127.0.0.3:30000/configure_logging"
    assert p.in_flight({info.key})  # the switch-on is no longer queued: it runs
    answered = http_result("request_log_on", 200)
    [restore] = p.on_result(on, answered)
    assert restore.source.name == "request_log_restore"
    assert json.loads(restore.body or b"") == {"log_requests": False, "log_requests_level": 2}
    assert restore.not_before == pytest.approx(answered.started_at + 0.1 + 3.0)
    assert not p.in_flight({restore.key})
    assert p.on_result(restore, http_result("request_log_restore", 200)) == [log_jobs[0]]
    assert p.left_on() == [] and p.gaps() == []
    [row] = p.rows()
    assert row["state"] == "restored" and row["window_s"] == 3.0
    assert row["previous"] == {"log_requests": False, "log_requests_level": 2, "read_from": "server_info"}


def test_a_failed_restore_is_left_on_with_the_command_that_puts_it_back() -> None:
    p, log_jobs = plan()
    p.hold(log_jobs)
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    [on] = p.on_result(info, server_info(False, 3))
    [restore] = p.on_result(on, http_result("request_log_on", 200))
    assert p.on_result(restore, http_result("request_log_restore", 500)) == [log_jobs[0]]
    [line] = p.left_on()
    assert line.startswith("request logging left ON at prefill-0 prefill:30000 (restore failed: HTTP 500)")
    assert "'{\"log_requests\":false,\"log_requests_level\":3}' http://127.0.0.3:30000/configure_logging" in line


@pytest.mark.parametrize(("answer", "why"), [
    (http_result("server_info", 503, b"{}"), "/server_info HTTP 503"),
    (http_result("server_info", 200, b'{"port": 1}'), "has no log_requests field"),
    (http_result("server_info", 0, timed_out=True), "timed out"),
])
def test_an_unknown_setting_is_a_gap_and_nothing_is_switched(answer: CommandResult, why: str) -> None:
    p, log_jobs = plan(args=CONFIGURED)  # a --config file: the command line cannot tell either
    p.hold(log_jobs)
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    assert p.on_result(info, answer) == [log_jobs[0]]  # the log is read at once
    [gap] = p.gaps()
    assert "request logging not turned on at prefill:30000" in gap and why in gap
    assert p.left_on() == []


CONFIGURED = "python3 -m sglang.launch_server --config /etc/sglang.yaml"


def test_already_on_changes_nothing_and_a_404_waits_for_the_old_name() -> None:
    p, log_jobs = plan()
    p.hold(log_jobs)
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    assert p.on_result(info, http_result("server_info", 404)) == []
    old = make_job(HOST, http.GET_SERVER_INFO, Target(service=SVC))
    assert p.on_result(old, server_info(True)) == [log_jobs[0]]
    assert p.rows()[0]["state"] == "already_on" and not p.gaps()


def test_the_window_is_cut_to_the_deadline_and_skipped_without_time() -> None:
    p, _ = plan(seconds=30, deadline_in=RESERVE_S + 10)
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    [on] = p.on_result(info, server_info(False))
    assert 9 <= (p.rows()[0]["window_s"] or 0) <= 10
    p2, _ = plan(seconds=30, deadline_in=RESERVE_S)
    assert p2.on_result(info, server_info(False)) == []
    assert "no time left" in p2.gaps()[0]
    assert on.source == REQUEST_LOG_ON  # the registered source, sending its body


def test_a_switch_on_that_never_left_the_queue_is_not_on() -> None:
    p, log_jobs = plan()
    p.hold(log_jobs)
    [on] = p.on_result(make_job(HOST, http.SERVER_INFO, Target(service=SVC)), server_info(False))
    assert not p.in_flight({on.key})
    assert p.unsent({on.key}) == [log_jobs[0]]
    assert "ended before the switch-on" in p.gaps()[0] and not p.left_on()


def test_post_request_through_the_forward() -> None:
    req = build_request("http://127.0.0.3:30000/configure_logging", b'{"log_requests":true}')
    assert req is not None
    head, _, body = req.data.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /configure_logging HTTP/1.1\r\n")
    assert b"Content-Type: application/json\r\nContent-Length: 21\r\n" in head
    assert body == b'{"log_requests":true}'
    get = build_request("http://127.0.0.3:30000/health")
    assert get is not None and get.data.startswith(b"GET /health ") and get.data.endswith(b"\r\n\r\n")
    assert REQUEST_LOG_RESTORE.priority == REQUEST_LOG_ON.priority == 0


@pytest.mark.parametrize(("args", "said"), [
    (["--request-log", "200"], "over the cap of 120s"),
    (["--request-log", "50", "--deadline", "60s"], "does not fit in --deadline 60s"),
])
def test_cli_rejects_a_window_that_does_not_fit(args: list[str], said: str, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["capture", "--local", "-o", str(tmp_path), *args])
    assert res.exit_code == ExitStatus.USAGE, res.output
    assert said in res.output and not list(tmp_path.iterdir())


class _Recorder(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append((self.path, self.headers.get("content-type") or "", body))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


def test_the_switch_on_is_one_curl_statement_on_hosts_without_forwarding() -> None:
    server = HTTPServer(("127.0.0.1", ports.port()), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        svc = dataclasses.replace(SVC, address="127.0.0.1", port=server.server_address[1])
        local = HostSpec(name="h", address="local")
        job = make_job(local, REQUEST_LOG_ON, Target(service=svc))
        assert job.argv[:3] == ("timeout", "-k", "2") and job.argv[4] == "curl"
        result = LocalTransport(local).run("request_log_on", job.argv, 7.0, 1 << 16)
    finally:
        server.shutdown()
    assert result.ok and result.stdout.startswith(b"HTTP/1.0 200"), result
    assert _Recorder.seen == [("/configure_logging", "application/json",
                               b'{"log_requests":true,"log_requests_level":1}')]


@pytest.mark.parametrize(("args", "on", "back"), [
    # the level on the command line: switched to 1, put back
    ("python3 -m sglang.launch_server --port 30000 --log-requests-level 3",
     {"log_requests": True, "log_requests_level": 1}, {"log_requests": False, "log_requests_level": 3}),
    # no level given: its default depends on the version, so it is left alone
    ("python3 -m sglang.launch_server --port 30000", {"log_requests": True}, {"log_requests": False}),
])
def test_a_hung_server_info_falls_back_to_the_command_line(args: str, on: dict, back: dict) -> None:
    p, log_jobs = plan(args=args)
    p.hold(log_jobs)
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    [switch] = p.on_result(info, http_result("server_info", 0, timed_out=True))
    assert json.loads(switch.body or b"") == on
    [restore] = p.on_result(switch, http_result("request_log_on", 200))
    assert json.loads(restore.body or b"") == back
    assert p.rows()[0]["previous"]["read_from"] == "cmdline"


@pytest.mark.parametrize("args", [CONFIGURED, "python3 -m sglang.launch_server --log-requests"])
def test_a_config_file_or_logging_already_on_changes_nothing(args: str) -> None:
    p, _ = plan(args=args)
    info = make_job(HOST, http.SERVER_INFO, Target(service=SVC))
    assert p.on_result(info, http_result("server_info", 503)) == []
    assert p.rows()[0]["state"] == ("not_on" if "--config" in args else "already_on")


def test_a_switch_on_without_an_answer_is_put_back_at_once() -> None:
    p, log_jobs = plan()
    p.hold(log_jobs)
    [on] = p.on_result(make_job(HOST, http.SERVER_INFO, Target(service=SVC)), server_info(False, 2))
    lost = http_result("request_log_on", 0, timed_out=True)
    [restore] = p.on_result(on, lost)  # it may have been applied: no window, restored now
    assert restore.not_before == pytest.approx(lost.started_at + lost.duration_s)
    assert json.loads(restore.body or b"") == {"log_requests": False, "log_requests_level": 2}
    assert p.on_result(restore, http_result("request_log_restore", 200)) == [log_jobs[0]]
    assert p.rows()[0]["state"] == "restored" and not p.left_on()
    assert "not confirmed: timed out" in p.gaps()[0]
    refused, _ = plan()
    [on2] = refused.on_result(make_job(HOST, http.SERVER_INFO, Target(service=SVC)), server_info(False))
    assert refused.on_result(on2, http_result("request_log_on", 401)) == []
    assert "the switch-on failed: HTTP 401" in refused.gaps()[0]
