"""SshTransport.fetch over a real sshd: endpoints fetched through a direct-tcpip channel (as
`ssh -L` does), answered in curl -i form; and the fall-back to curl on the host when sshd
refuses forwarding (`AllowTcpForwarding no`), down to a whole capture.

The HTTP servers run in this test process. The one a capture asks listens on 127.0.0.1: a
declared service whose process is not found on the host is asked at 127.0.0.1:<port>.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import cast

import pytest

from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.lab import sshd
from pdforensics.lab.layout import LabHost
from pdforensics.lab.procs import kill_all, spawn
from pdforensics.model import ClusterSpec, CommandResult, HostSpec, ServiceSpec
from pdforensics.parsers.http import parse_http_response
from pdforensics.transport.ssh import SshTransport
from tests.support import ports

pytestmark = [pytest.mark.e2e, pytest.mark.lab]

ADDRESS = "127.0.1.210"  # sshd that forwards (stock settings)
REFUSING = "127.0.1.211"  # sshd with AllowTcpForwarding no
_P = ports.block(10, (ADDRESS, REFUSING, "127.0.0.1"))  # found free at run time
PORT, REFUSING_PORT = _P, _P + 1
HTTP_PORT = _P + 2  # the test's HTTP server, on ADDRESS
CLOSED_PORT = _P + 8  # nothing listens there
SERVICE_PORT = _P + 9  # the declared service of the captures, on 127.0.0.1
BASE = f"http://{ADDRESS}:{HTTP_PORT}"

FIXED = b"fixed body\n"
CHUNKS = (b"first ", b"second, a little longer ", b"third\n")
LARGE = bytes(range(256)) * 1200  # 307,200 bytes
HANG_S = 10.0


class Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64  # 12 connects at once: no SYN dropped (a 1 s retransmit)

    def __init__(self, address: tuple[str, int]) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []  # (path, headers) of each request
        self.stop = threading.Event()
        super().__init__(address, Handler)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return None

    def _send(self, status: int, body: bytes, ctype: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        server = cast(Server, self.server)
        server.seen.append((self.path, dict(self.headers.items())))
        path = self.path.split("?", 1)[0]
        if path == "/fixed":
            self._send(200, FIXED)
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in CHUNKS:  # flushed one by one: several reads on our side
                self.wfile.write(b"%x;n=1\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
        elif path == "/large":
            self._send(200, LARGE, "application/octet-stream")
        elif path == "/continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.wfile.flush()
            time.sleep(0.05)
            self._send(200, b"after continue")
        elif path == "/nocontent":
            self.send_response(204)
            self.end_headers()
        elif path == "/hang":  # the head and a part of the body, then nothing
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
            self.wfile.flush()
            server.stop.wait(HANG_S)
            self.close_connection = True
        elif path == "/cut":  # promises 100 bytes, sends 10, closes
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
            self.close_connection = True
        elif path == "/empty":
            self.close_connection = True
        elif path == "/metrics":
            self._send(200, b"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 3\n")
        else:  # what the request looked like from the server's side
            doc = {"path": self.path, "headers": dict(self.headers.items())}
            self._send(200, json.dumps(doc).encode(), "application/json")


@contextmanager
def http_server(address: str, port: int) -> Iterator[Server]:
    server = Server((address, port))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def running_sshd(lab_dir: Path, name: str, address: str, port: int,
                 extra_conf: str = "") -> Iterator[HostSpec]:
    """One stock sshd on address:port (plus extra_conf), logged in to as the lab's ops user."""
    host = LabHost(name, "decode", address, address, ())
    sshd.prepare(lab_dir, (host,), port)
    sshd.ensure_sudo_user("pdfx", lab_dir)  # root's shell start-up is slow here
    conf = lab_dir / "sshd" / f"{name}.conf"
    conf.write_text(conf.read_text() + extra_conf)
    proc = spawn(sshd.sshd_argv(lab_dir, host), dict(os.environ), lab_dir / "sshd.log", lab_dir)
    try:
        end = time.monotonic() + 20
        while not sshd.banner_ready(address, port):
            assert proc.is_running(), (lab_dir / "sshd.log").read_text()
            assert time.monotonic() < end, (lab_dir / "sshd.log").read_text()
            time.sleep(0.1)
        yield HostSpec(name=name, address=address, port=port, user="pdfx",
                       identity=str(lab_dir / "keys" / "id_ed25519"),
                       known_hosts=str(lab_dir / "keys" / "known_hosts"))
    finally:
        left = kill_all([proc])
        sshd.revoke_sudo_user(lab_dir)  # the ops user and its sudoers drop-in
        assert not left


@pytest.fixture(scope="module")
def web() -> Iterator[Server]:
    with http_server(ADDRESS, HTTP_PORT) as server:
        yield server


@pytest.fixture(scope="module")
def service() -> Iterator[Server]:
    with http_server("127.0.0.1", SERVICE_PORT) as server:
        yield server


@pytest.fixture(scope="module")
def forwarding_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSpec]:
    with running_sshd(tmp_path_factory.mktemp("fwd-sshd"), "fwd", ADDRESS, PORT) as host:
        yield host


@pytest.fixture(scope="module")
def refusing_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostSpec]:
    with running_sshd(tmp_path_factory.mktemp("nofwd-sshd"), "nofwd", REFUSING, REFUSING_PORT,
                      "AllowTcpForwarding no\n") as host:
        yield host


@contextmanager
def connected(host: HostSpec) -> Iterator[SshTransport]:
    t = SshTransport(host)
    t.connect(10.0)
    try:
        yield t
    finally:
        t.close()


@pytest.fixture(scope="module")
def transport(forwarding_host: HostSpec) -> Iterator[SshTransport]:
    with connected(forwarding_host) as t:
        yield t


def fetch(t: SshTransport, path: str, timeout_s: float = 5.0, max_bytes: int = 1 << 20,
          base: str = BASE) -> CommandResult:
    r = t.fetch("endpoint", base + path, timeout_s, max_bytes)
    assert r is not None, "forwarding is allowed on this sshd"
    return r


# -- fetch through a forwarding sshd ---------------------------------------------------------
def test_fixed_body_in_curl_form(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/fixed")
    assert (r.exit_status, r.error, r.timed_out, r.truncated) == (0, None, False, False)
    assert r.ok and r.host == "fwd" and r.argv == ("GET", BASE + "/fixed")
    resp = parse_http_response(r.stdout)
    assert (resp.status, resp.body) == (200, FIXED)
    assert resp.header("content-type") == "text/plain"
    assert resp.header("content-length") == str(len(FIXED)) and not resp.body_truncated


def test_the_request_as_the_server_saw_it(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/v1/loads?include=all&x=%2F")
    assert r.ok
    doc = parse_http_response(r.stdout).json()
    assert isinstance(doc, dict)
    assert doc["path"] == "/v1/loads?include=all&x=%2F"  # the query string went through
    headers = {k.lower(): v for k, v in doc["headers"].items()}
    assert headers["host"] == f"{ADDRESS}:{HTTP_PORT}"
    assert headers["connection"] == "close"
    assert headers["user-agent"].startswith("pdforensics/")


def test_chunked_body_arrives_de_chunked(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/chunked")
    assert r.ok, r
    resp = parse_http_response(r.stdout)
    assert resp.status == 200 and resp.header("transfer-encoding") == "chunked"
    assert resp.body == b"".join(CHUNKS)  # no chunk sizes, extensions or trailers in it
    assert b"X-Trailer" not in r.stdout


def test_interim_response_and_no_content(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/continue")
    assert r.ok, r
    resp = parse_http_response(r.stdout)
    assert (resp.status, resp.interim, resp.body) == (200, (100,), b"after continue")
    r = fetch(transport, "/nocontent")
    assert r.ok and parse_http_response(r.stdout).status == 204


def test_body_over_the_cap_is_cut_and_marked(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/large", max_bytes=50_000)
    assert r.truncated and r.exit_status is None and not r.ok
    assert len(r.stdout) == 50_000
    resp = parse_http_response(r.stdout)
    assert resp.status == 200 and resp.body_truncated
    assert LARGE.startswith(resp.body) and len(resp.body) > 40_000


def test_large_body_under_the_cap_arrives_whole(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/large", max_bytes=1 << 20)
    assert r.ok, r
    assert parse_http_response(r.stdout).body == LARGE


def test_hanging_endpoint_times_out_on_time_with_what_came(transport: SshTransport,
                                                           web: Server) -> None:
    t0 = time.monotonic()
    r = fetch(transport, "/hang", timeout_s=1.0)
    elapsed = time.monotonic() - t0
    assert r.timed_out and r.exit_status is None and not r.ok
    assert 1.0 <= elapsed < 2.0, elapsed
    resp = parse_http_response(r.stdout)
    assert (resp.status, resp.body) == (200, b"partial")  # what arrived is kept


def test_response_cut_short_is_curls_exit_18(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/cut")
    assert r.exit_status == 18 and r.error is None and not r.ok and not r.timed_out
    assert "outstanding read data" in r.stderr
    assert parse_http_response(r.stdout).body == b"only ten b"


def test_server_closing_without_a_response(transport: SshTransport, web: Server) -> None:
    r = fetch(transport, "/empty")
    assert r.exit_status is None and r.stdout == b""
    assert r.error is not None and "without a response" in r.error


def test_closed_port_is_an_error_naming_the_address(transport: SshTransport, web: Server) -> None:
    t0 = time.monotonic()
    r = fetch(transport, "/health", base=f"http://{ADDRESS}:{CLOSED_PORT}")
    assert r.exit_status is None and not r.ok and not r.timed_out
    assert r.error is not None and f"{ADDRESS}:{CLOSED_PORT}" in r.error, r.error
    assert time.monotonic() - t0 < 3.0
    assert not transport.forwarding_refused  # a refused connection is not refused forwarding
    assert fetch(transport, "/fixed").ok  # and the connection still works


def test_urls_fetch_does_not_speak_go_to_curl(transport: SshTransport) -> None:
    assert transport.fetch("endpoint", f"https://{ADDRESS}:{HTTP_PORT}/x", 5.0, 1000) is None
    assert not transport.forwarding_refused


def test_concurrent_fetches_all_complete(transport: SshTransport, web: Server) -> None:
    results: list[CommandResult] = []
    lock = threading.Lock()

    def worker(path: str) -> None:
        r = fetch(transport, path)
        with lock:
            results.append(r)

    paths = ["/fixed", "/chunked", "/large", "/continue"] * 3
    threads = [threading.Thread(target=worker, args=(p,)) for p in paths]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert len(results) == len(paths)
    assert all(r.ok for r in results), [(r.argv, r.error) for r in results if not r.ok]
    bodies = {r.argv[1]: parse_http_response(r.stdout).body for r in results}
    assert bodies[BASE + "/large"] == LARGE and bodies[BASE + "/chunked"] == b"".join(CHUNKS)


# -- sshd refuses forwarding -----------------------------------------------------------------
def test_refused_forwarding_gives_none_and_is_remembered(refusing_host: HostSpec,
                                                         web: Server) -> None:
    with connected(refusing_host) as t:
        assert not t.forwarding_refused
        assert t.fetch("endpoint", BASE + "/fixed", 5.0, 1000) is None
        assert t.forwarding_refused
        seen = len(web.seen)
        t0 = time.monotonic()
        assert t.fetch("endpoint", BASE + "/fixed", 5.0, 1000) is None
        assert time.monotonic() - t0 < 0.05  # no channel asked for again
        assert len(web.seen) == seen
        r = t.run("echo", ["echo", "still fine"], 10.0, 1000)  # exec channels still work
        assert (r.exit_status, r.stdout) == (0, b"still fine\n")


def test_refused_forwarding_under_concurrent_fetches(refusing_host: HostSpec,
                                                     web: Server) -> None:
    """Refusals of channels opened at once: paramiko hands the ChannelException to one waiting
    thread, the others see a bare "Unable to open channel." -- every fetch must still say None
    (curl then runs), none may come back as a failed result."""
    got: list[CommandResult | None] = []
    lock = threading.Lock()
    for _ in range(3):  # a fresh connection each round: nothing known about forwarding yet
        with connected(refusing_host) as t:
            start = threading.Barrier(8)

            def worker(t: SshTransport = t, start: threading.Barrier = start) -> None:
                start.wait()
                r = t.fetch("endpoint", BASE + "/fixed", 5.0, 1000)
                with lock:
                    got.append(r)

            threads = [threading.Thread(target=worker) for _ in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=30)
            assert t.forwarding_refused
    assert len(got) == 24
    assert all(r is None for r in got), [r.error for r in got if r is not None]


# -- whole captures --------------------------------------------------------------------------
ENDPOINTS = {"health", "model_info", "loads", "server_info", "metrics", "health_generate", "ready"}


@pytest.mark.parametrize("refused", [False, True], ids=["forwarding", "refused"])
def test_capture_endpoints_by_forwarding_or_by_curl(
        refused: bool, forwarding_host: HostSpec, refusing_host: HostSpec, service: Server,
        tmp_path: Path) -> None:
    host = refusing_host if refused else forwarding_host
    host = dataclasses.replace(host, services=(ServiceSpec(role="unified", port=SERVICE_PORT),))
    service.seen.clear()
    options = CaptureOptions(
        out_dir=tmp_path, deadline_s=40.0, channels=4,
        plan=PlanOptions(samples=1, stacks=False, gpu=False, versions=False, logs=False))
    outcome = run_capture(ClusterSpec(name="fwd", hosts=(host,)), options)

    assert outcome.status == "complete", outcome.partial_reasons
    disc = json.loads((outcome.bundle / "parsed" / host.name / "discovery.json").read_text())
    notes = [n for n in disc["notes"] if "sshd refused port forwarding" in n]
    assert len(notes) == (1 if refused else 0), disc["notes"]
    endpoints = [e for e in outcome.entries if e.source in ENDPOINTS]
    assert {e.source for e in endpoints} == ENDPOINTS
    assert all(e.ok for e in endpoints), [(e.source, e.error, e.stderr) for e in endpoints if not e.ok]
    # curl on the host, or this process through the SSH connection: the server tells them apart
    agents = {h.get("User-Agent", "").split("/")[0] for _, h in service.seen}
    assert agents == ({"curl"} if refused else {"pdforensics"}), service.seen
    assert len(service.seen) == len(endpoints), ([p for p, _ in service.seen], [e.source for e in endpoints])
    health = next(e for e in endpoints if e.source == "health")
    assert health.path is not None
    resp = parse_http_response((outcome.bundle / health.path).read_bytes())
    doc = resp.json()
    assert resp.status == 200 and isinstance(doc, dict) and doc["path"] == "/health"
