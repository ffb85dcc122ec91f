"""HTTP/1.1 GET (or a small JSON POST) over a byte stream (an SSH direct-tcpip channel), answered in curl -i form.

Fetching a host's endpoints through its sshd (the way `ssh -L` does) runs no process on the
host: no shell, no timeout, no curl. What is kept is what `curl -sS -i` prints: the status
line and headers as received, then the body with any chunked transfer coding removed, so the
same parser reads both.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from pdforensics import __version__


@dataclass(frozen=True)
class Request:
    host: str  # the address sshd connects to, as the URL names it
    port: int
    data: bytes  # the request bytes


def build_request(url: str, body: bytes | None = None) -> Request | None:
    """GET request for an http:// URL (a JSON POST when a body is given); None for anything
    this does not speak (https, odd)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    if port == 0:
        return None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    # printable ASCII only: a space, a control byte or a non-ASCII letter would break (or
    # smuggle into) the request line; curl, which encodes them its own way, gets those URLs
    if not all("!" <= c <= "~" for c in path + parts.netloc) or "@" in parts.netloc:
        return None
    method, sent = ("GET", "") if body is None else (
        "POST", f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n")
    head = (f"{method} {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"User-Agent: pdforensics/{__version__}\r\nAccept: */*\r\n{sent}Connection: close\r\n\r\n")
    return Request(parts.hostname, port or 80, head.encode("ascii") + (body or b""))


class ResponseReader:
    """Accumulates a response; knows when it is complete (length, last chunk or EOF).

    complete() is called after every read: it looks only at bytes it has not seen, so a
    16 MiB body costs linear time, not a rescan of the whole buffer per read."""

    def __init__(self) -> None:
        self.raw = bytearray()
        self._head: bytes | None = None  # the final response's head, once it is in
        self._body_at = 0  # where its body starts in raw
        self._chunk_at = 0  # chunked: where the next chunk-size line starts in raw

    def feed(self, chunk: bytes) -> None:
        self.raw += chunk

    def complete(self) -> bool:
        """A whole final response is in: Content-Length bytes, or the last chunk."""
        if self._head is None:
            head, body = self._split()
            if head is None:
                return False
            self._head, self._body_at = head, len(self.raw) - len(body)
            self._chunk_at = self._body_at
        head = self._head
        status = _status(head)
        if status is not None and 100 <= status < 200:  # interim: a final response follows
            return False
        if status in (204, 304):
            return True
        if _chunked(head):
            return self._last_chunk_in()
        length = _content_length(head)
        return length is not None and len(self.raw) - self._body_at >= length

    def _last_chunk_in(self) -> bool:
        """_dechunk's "last chunk arrived", walking only the chunks not yet walked."""
        raw = self.raw
        while True:
            eol = raw.find(b"\r\n", self._chunk_at)
            if eol < 0:
                return False
            size_text = bytes(raw[self._chunk_at:eol]).split(b";", 1)[0].strip()
            if not size_text or size_text.strip(b"0123456789abcdefABCDEF"):
                return True  # not chunked after all (as _dechunk reads it)
            size = int(size_text, 16)
            if size == 0:
                return True
            if len(raw) < eol + 2 + size:
                return False
            self._chunk_at = eol + 2 + size + 2

    def cut_short(self) -> bool:
        """The final head says how long the body is (length or chunked) and not all of it is
        in: at EOF, curl's exit 18 ("transfer closed with outstanding read data remaining")."""
        head, _ = self._split()
        if head is None or self.complete():
            return False
        status = _status(head)
        if status is not None and 100 <= status < 200:
            return False
        return _chunked(head) or _content_length(head) is not None

    def _split(self) -> tuple[bytes | None, bytes]:
        data = bytes(self.raw)
        while True:
            i = data.find(b"\r\n\r\n")
            if i < 0:
                return None, b""
            head, rest = data[:i], data[i + 4:]
            status = _status(head)
            if status is not None and 100 <= status < 200 and status != 101:
                data = rest  # skip 1xx, as curl does when it prints them
                continue
            return head, rest

    def curl_form(self) -> bytes:
        """What curl -i would have printed: every head as received, the body de-chunked."""
        data = bytes(self.raw)
        out = bytearray()
        while True:
            i = data.find(b"\r\n\r\n")
            if i < 0:
                return bytes(out + data)  # headers cut short: keep them as they are
            head, rest = data[:i], data[i + 4:]
            out += head + b"\r\n\r\n"
            status = _status(head)
            if status is not None and 100 <= status < 200 and status != 101:
                data = rest
                continue
            if _chunked(head):
                rest = _dechunk(rest)[0]
            return bytes(out + rest)


def _status(head: bytes) -> int | None:
    first = head.split(b"\r\n", 1)[0].split()
    if len(first) >= 2 and first[0].startswith(b"HTTP/") and first[1].isdigit():
        return int(first[1])
    return None


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        k, sep, v = line.partition(b":")
        if sep and k.strip().lower() == name:
            return v.strip()
    return None


def _chunked(head: bytes) -> bool:
    te = _header(head, b"transfer-encoding")
    return te is not None and b"chunked" in te.lower()


def _content_length(head: bytes) -> int | None:
    v = _header(head, b"content-length")
    return int(v) if v is not None and v.isdigit() else None


def _dechunk(body: bytes) -> tuple[bytes, bool]:
    """(decoded body so far, whether the last chunk arrived)."""
    out = bytearray()
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return bytes(out), False
        size_text = body[pos:eol].split(b";", 1)[0].strip()
        # hex digits only: int() would also take "-6", "0x5" or "1_0", and a negative size
        # moved pos backwards (a size line "-6" read itself again, for ever)
        if not size_text or size_text.strip(b"0123456789abcdefABCDEF"):
            return bytes(out + body[pos:]), True  # not chunked after all: the rest as it came
        size = int(size_text, 16)
        if size == 0:
            return bytes(out), True
        start = eol + 2
        chunk = body[start:start + size]
        out += chunk
        if len(chunk) < size:
            return bytes(out), False
        pos = start + size + 2
