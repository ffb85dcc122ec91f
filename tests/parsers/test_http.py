"""curl -i output parser on real curl captures (tests/data/http_COMMANDS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdforensics.errors import ParseError
from pdforensics.parsers.http import parse_http_response

DATA = Path(__file__).resolve().parent.parent / "data"


def _load(name: str) -> bytes:
    return (DATA / name).read_bytes()


def test_plain_200_json() -> None:
    r = parse_http_response(_load("http_model_info.txt"))
    assert (r.status, r.reason, r.http_version) == (200, "OK", "HTTP/1.1")
    assert r.header("content-type") == "application/json" and r.header("Content-Length") == "89"
    assert r.json() == {"model_path": "Qwen/Qwen3-8B", "is_generation": True,
                        "tokenizer_path": "Qwen/Qwen3-8B"}
    assert not r.body_truncated and r.interim == () and r.headers_complete


def test_100_continue_preamble() -> None:
    r = parse_http_response(_load("http_100_continue_503.txt"))
    assert r.interim == (100,) and r.status == 503 and r.reason == "Service Unavailable"
    assert r.body == b'{"error": {"message": "Request timed out"}}'


def test_body_cut_by_timeout() -> None:
    r = parse_http_response(_load("http_server_info_timeout.txt"))
    assert r.status == 200 and r.body_truncated and len(r.body) == 68
    assert r.text().startswith('{"version": "0.5.4"')
    with pytest.raises(ParseError, match="body is not JSON"):
        r.json()


def test_http2() -> None:
    r = parse_http_response(_load("http_h2_health.txt"))
    assert (r.status, r.reason, r.http_version) == (200, "", "HTTP/2")
    assert r.json() == {"status": "ok", "workers": 2}


def test_edge_cases() -> None:
    assert parse_http_response(b"").status is None
    cut = parse_http_response(b"HTTP/1.1 200 OK\r\nContent-Ty")
    assert cut.status == 200 and not cut.headers_complete and cut.headers == ()
    lf = parse_http_response(b"HTTP/1.0 404 Not Found\nServer: x\n\nnope")
    assert lf.status == 404 and lf.header("server") == "x" and lf.body == b"nope"
    proxy = parse_http_response(
        b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/2 504 \r\n\r\ngateway timeout")
    assert proxy.interim == (200,) and proxy.status == 504
    with pytest.raises(ParseError, match="not an HTTP status line"):
        parse_http_response(b"curl: (7) Failed to connect to 127.0.0.1 port 30000")
    with pytest.raises(ParseError, match="malformed header"):
        parse_http_response(b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n")
