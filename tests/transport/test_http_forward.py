"""build_request and ResponseReader on byte strings: when a response is whole, and what curl -i
would have printed for it (read back by the same parser as curl's own output)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdforensics.parsers.http import parse_http_response
from pdforensics.transport.http_forward import ResponseReader, build_request


def reader(*pieces: bytes) -> ResponseReader:
    r = ResponseReader()
    for p in pieces:
        r.feed(p)
    return r


def chunked(body: bytes, sizes: list[int], ext: bytes = b"", trailer: bytes = b"") -> bytes:
    """body in chunked transfer coding, cut at the given sizes (the rest in one last chunk)."""
    out, pos = bytearray(), 0
    for n in [*sizes, len(body)]:
        part = body[pos:pos + n]
        pos += len(part)
        if part:
            out += b"%x%s\r\n%s\r\n" % (len(part), ext, part)
    return bytes(out + b"0\r\n" + trailer + b"\r\n")


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"


# -- build_request ---------------------------------------------------------------------------
def test_request_for_a_plain_url() -> None:
    req = build_request("http://127.0.0.1:30000/health")
    assert req is not None
    assert (req.host, req.port) == ("127.0.0.1", 30000)
    lines = req.data.decode("ascii").split("\r\n")
    assert lines[0] == "GET /health HTTP/1.1"
    assert "Host: 127.0.0.1:30000" in lines and "Connection: close" in lines
    assert req.data.endswith(b"\r\n\r\n") and req.data.count(b"\r\n\r\n") == 1


def test_query_string_is_kept_and_fragment_dropped() -> None:
    req = build_request("http://10.0.0.5:8000/v1/loads?include=all&x=%2F#frag")
    assert req is not None
    assert req.data.startswith(b"GET /v1/loads?include=all&x=%2F HTTP/1.1\r\n")
    assert b"frag" not in req.data


def test_default_port_empty_path_and_ipv6() -> None:
    req = build_request("http://example.internal")
    assert req is not None and (req.host, req.port) == ("example.internal", 80)
    assert req.data.startswith(b"GET / HTTP/1.1\r\nHost: example.internal\r\n")
    v6 = build_request("http://[::1]:30001/metrics")
    assert v6 is not None and (v6.host, v6.port) == ("::1", 30001)
    assert b"Host: [::1]:30001\r\n" in v6.data


@pytest.mark.parametrize("url", [
    "https://127.0.0.1:30000/health",  # TLS: curl's job
    "ftp://127.0.0.1/x",
    "127.0.0.1:30000/health",  # no scheme
    "http:///health",  # no host
    "http://:30000/health",
    "http://127.0.0.1:99999/health",  # port out of range
    "http://127.0.0.1:http/health",  # port not a number
    "http://127.0.0.1:0/health",  # port 0 is no port (was sent to 80)
    "http://user:pw@127.0.0.1:30000/health",  # credentials: not ours to send
    "http://127.0.0.1:30000/a b",  # a space would end the request target
    "http://127.0.0.1:30000/a\x00b",  # control byte
    "http://127.0.0.1:30000/mod\u00e8le",  # non-ASCII path (raised UnicodeEncodeError)
    "http://h\u00f6st.example/health",  # non-ASCII host name
])
def test_urls_this_does_not_speak_give_none(url: str) -> None:
    assert build_request(url) is None


def test_no_header_can_be_smuggled_through_the_url() -> None:
    req = build_request("http://127.0.0.1:30000/x\r\nX-Evil: 1")
    # urlsplit drops CR/LF (WHATWG); what is left holds a space: refused, not sent as a header
    assert req is None


# -- ResponseReader: Content-Length ----------------------------------------------------------
def test_content_length_complete_only_when_all_bytes_are_in() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\n"
    r = reader(head, b"hello")
    assert not r.complete() and r.cut_short()
    r.feed(b" world")
    assert r.complete() and not r.cut_short()
    resp = parse_http_response(r.curl_form())
    assert (resp.status, resp.reason, resp.body) == (200, "OK", b"hello world")
    assert resp.header("content-type") == "text/plain" and not resp.body_truncated


def test_headers_split_anywhere_are_not_complete() -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    for i in range(len(data)):
        r = reader(data[:i])
        assert not r.complete(), i
        r.feed(data[i:])
        assert r.complete(), i
        assert r.curl_form() == data


def test_zero_length_body_is_complete_at_the_blank_line() -> None:
    r = reader(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r")
    assert not r.complete()
    r.feed(b"\n")
    assert r.complete()
    assert parse_http_response(r.curl_form()).body == b""


def test_no_length_and_not_chunked_waits_for_eof() -> None:
    r = reader(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome body")
    assert not r.complete()  # the body ends when the server closes (Connection: close)
    assert not r.cut_short()  # ...so EOF here is no error
    assert parse_http_response(r.curl_form()).body == b"some body"


def test_response_cut_short_keeps_what_came() -> None:
    r = reader(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
    assert not r.complete() and r.cut_short()
    resp = parse_http_response(r.curl_form())
    assert resp.status == 200 and resp.body == b"partial" and resp.body_truncated


def test_headers_cut_short_are_kept_as_they_came() -> None:
    r = reader(b"HTTP/1.1 200 OK\r\nContent-Le")
    assert not r.complete() and not r.cut_short()  # as curl: exit 0 with the partial head
    assert r.curl_form() == b"HTTP/1.1 200 OK\r\nContent-Le"
    resp = parse_http_response(r.curl_form())
    assert resp.status == 200 and not resp.headers_complete


def test_nothing_yet() -> None:
    r = ResponseReader()
    assert not r.complete() and not r.cut_short() and r.curl_form() == b""


# -- status codes and interim responses ------------------------------------------------------
@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses_are_complete_at_the_head(status: int) -> None:
    r = reader(b"HTTP/1.1 %d X\r\nServer: t\r\n\r\n" % status)
    assert r.complete()
    assert parse_http_response(r.curl_form()).status == status


def test_100_continue_then_the_final_response() -> None:
    final = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"
    r = reader(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert not r.complete() and not r.cut_short()  # an interim response is not the answer
    r.feed(final[:20])
    assert not r.complete()
    r.feed(final[20:])
    assert r.complete()
    out = r.curl_form()
    assert out == b"HTTP/1.1 100 Continue\r\n\r\n" + final  # every head as received, like curl -i
    resp = parse_http_response(out)
    assert (resp.status, resp.interim, resp.body) == (200, (100,), b"body")


def test_several_interim_responses_then_204() -> None:
    r = reader(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n")
    assert not r.complete()
    r.feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert r.complete()
    resp = parse_http_response(r.curl_form())
    assert (resp.status, resp.interim) == (204, (100, 103))


def test_error_status_is_a_complete_response_too() -> None:
    r = reader(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 9\r\n\r\nnot ready")
    assert r.complete()
    resp = parse_http_response(r.curl_form())
    assert (resp.status, resp.reason, resp.text()) == (503, "Service Unavailable", "not ready")


# -- chunked transfer coding -----------------------------------------------------------------
def test_chunked_several_chunks() -> None:
    body = b"line one\nline two\nthe third and last line\n"
    wire = CHUNKED_HEAD + chunked(body, [3, 10, 1])
    r = reader(wire[:-5])
    assert not r.complete() and r.cut_short()
    r.feed(wire[-5:])
    assert r.complete()
    out = r.curl_form()
    assert out == CHUNKED_HEAD + body  # head as received, body de-chunked
    resp = parse_http_response(out)
    assert resp.status == 200 and resp.body == body
    assert resp.header("transfer-encoding") == "chunked"


def test_chunk_extensions_are_ignored() -> None:
    body = b"0123456789abcdefghij"
    wire = CHUNKED_HEAD + chunked(body, [7, 7], ext=b";name=value;x")
    r = reader(wire)
    assert r.complete()
    assert parse_http_response(r.curl_form()).body == body


def test_chunk_size_in_upper_case_hex_with_padding() -> None:
    body = b"z" * 0x1AB
    r = reader(CHUNKED_HEAD, b"01AB \r\n" + body + b"\r\n0\r\n\r\n")
    assert r.complete()
    assert parse_http_response(r.curl_form()).body == body


def test_trailer_headers_are_not_part_of_the_body() -> None:
    body = b"metrics go here\n"
    wire = CHUNKED_HEAD + chunked(body, [5], trailer=b"X-Checksum: abc\r\nX-Other: 1\r\n")
    r = reader(wire)
    assert r.complete()
    assert r.curl_form() == CHUNKED_HEAD + body
    assert parse_http_response(r.curl_form()).body == body


def test_chunked_complete_at_the_last_chunk_before_trailers_arrive() -> None:
    r = reader(CHUNKED_HEAD, b"3\r\nabc\r\n0\r\n")
    assert r.complete()  # nothing after the last chunk is kept, so nothing to wait for
    assert parse_http_response(r.curl_form()).body == b"abc"


def test_chunked_split_at_every_byte() -> None:
    body = b"first-chunk|second|3rd"
    wire = CHUNKED_HEAD + chunked(body, [12, 6], ext=b";e=1")
    end = wire.rindex(b"0\r\n") + 3  # the last chunk: complete from here on
    for i in range(len(CHUNKED_HEAD), len(wire)):
        r = reader(wire[:i])
        if i >= end:
            assert r.complete(), i
            continue
        assert not r.complete(), (i, wire[:i])
        r.feed(wire[i:])
        assert r.complete(), i
        assert parse_http_response(r.curl_form()).body == body, i


def test_chunk_data_that_looks_like_a_size_line_is_data() -> None:
    body = b"0\r\n\r\n"  # the last-chunk marker, inside a chunk
    r = reader(CHUNKED_HEAD, b"5\r\n" + body)
    assert not r.complete()  # the chunk's own CRLF and the last chunk are still to come
    r.feed(b"\r\n0\r\n\r\n")
    assert r.complete() and parse_http_response(r.curl_form()).body == body


def test_chunked_cut_short_keeps_the_decoded_part() -> None:
    r = reader(CHUNKED_HEAD, b"5\r\nhello\r\n5\r\nwor")
    assert not r.complete() and r.cut_short()
    assert parse_http_response(r.curl_form()).body == b"hellowor"


@pytest.mark.parametrize("size_line", [b"-6", b"-5", b"-10", b"0x5", b"+5", b"1_0", b"zz", b""])
def test_bad_chunk_size_ends_the_decoding_at_once(size_line: bytes) -> None:
    """Not hex digits: the rest is kept as it came. A negative size used to move the read
    position backwards ("-6" read its own size line again for ever)."""
    rest = size_line + b"\r\nhello\r\n0\r\n\r\n"
    r = reader(CHUNKED_HEAD, b"2\r\nok\r\n" + rest)
    assert r.complete()
    assert parse_http_response(r.curl_form()).body == b"ok" + rest


def test_transfer_encoding_list_ending_in_chunked() -> None:
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\n\r\n"
    r = reader(head, b"2\r\n\x1f\x8b\r\n0\r\n\r\n")
    assert r.complete()
    assert r.curl_form() == head + b"\x1f\x8b"


# -- property: any body, any chunking, any way the bytes arrive ------------------------------
@st.composite
def chunked_wire(draw: st.DrawFn) -> tuple[bytes, bytes, list[bytes]]:
    body = draw(st.binary(max_size=400))
    sizes = draw(st.lists(st.integers(1, 64), max_size=12))
    ext = draw(st.sampled_from([b"", b";a=b", b";x"]))
    trailer = draw(st.sampled_from([b"", b"X-T: 1\r\n"]))
    wire = CHUNKED_HEAD + chunked(body, sizes, ext, trailer)
    cuts = sorted(draw(st.sets(st.integers(1, len(wire) - 1), max_size=20)))
    pieces = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    return body, wire, pieces


@pytest.mark.property
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked_wire())
def test_chunked_in_random_pieces_completes_only_at_the_end(
        case: tuple[bytes, bytes, list[bytes]]) -> None:
    body, wire, pieces = case
    r = ResponseReader()
    fed = 0
    # the last chunk ends at its "0\r\n": complete from there on (trailers are not kept)
    end = wire.rindex(b"0\r\n") + 3
    for piece in pieces:
        r.feed(piece)
        fed += len(piece)
        assert r.complete() == (fed >= end), (fed, end)
        # EOF here would be curl's exit 18 once the head is in (before it, curl prints it, exit 0)
        assert r.cut_short() == (len(CHUNKED_HEAD) <= fed < end)
    assert r.complete()
    assert r.curl_form() == CHUNKED_HEAD + body
    assert parse_http_response(r.curl_form()).body == body
