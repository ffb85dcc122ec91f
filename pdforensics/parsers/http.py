"""Output of ``curl -sS -i --max-time T URL`` -> HttpResponse.

Interim responses (``HTTP/1.1 100 Continue``, a proxy's ``200 Connection established``)
are skipped and recorded in ``interim``. A body cut short (timeout, byte cap) is kept as
is; headers cut short give ``headers_complete=False``. Empty input gives status None.
Text that does not start with a status line raises ParseError.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.hostnum import to_int

_STATUS_RE = linear.compile(rb"^(HTTP/\d(?:\.\d)?) ([1-9]\d{2})(?: (.*))?$")  # RFC 9110: 100-999
_HEADER_RE = linear.compile(rb"^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$")


@dataclass(frozen=True)
class HttpResponse:
    """The final response: status, headers (in order), body bytes."""

    status: int | None
    reason: str = ""
    http_version: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    interim: tuple[int, ...] = ()  # statuses of skipped 1xx / CONNECT responses
    headers_complete: bool = True

    def header(self, name: str) -> str | None:
        """First header called ``name`` (case-insensitive), or None."""
        low = name.lower()
        for k, v in self.headers:
            if k.lower() == low:
                return v
        return None

    @property
    def body_truncated(self) -> bool:
        """True when Content-Length promises more bytes than arrived."""
        length = self.header("content-length")
        promised = to_int(length) if length is not None and length.strip().isdigit() else None
        if promised is None:
            return not self.headers_complete
        return len(self.body) < promised

    def text(self) -> str:
        """The body decoded as UTF-8 with replacement."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> object:
        """The body as JSON; ParseError when it is not JSON."""
        try:
            return json.loads(self.text())
        except (ValueError, RecursionError) as exc:
            first = self.text().split("\n", 1)[0]
            raise ParseError(f"body is not JSON ({exc.__class__.__name__})", line=first) from None


def _split_head(data: bytes) -> tuple[bytes, bytes, bool]:
    """(head, rest, complete) split at the first blank line (CRLF or LF)."""
    best: tuple[int, int] | None = None
    for sep in (b"\r\n\r\n", b"\n\n"):
        i = data.find(sep)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, len(sep))
    if best is None:
        return data, b"", False
    return data[:best[0]], data[best[0] + best[1]:], True


def parse_http_response(data: bytes) -> HttpResponse:
    """Parse curl -i output (HTTP/1.x or HTTP/2, 1xx preambles, partial bodies)."""
    if not data.strip():
        return HttpResponse(status=None)
    interim: list[int] = []
    rest = data.lstrip(b"\r\n")
    while True:
        head, body, complete = _split_head(rest)
        lines = head.replace(b"\r\n", b"\n").split(b"\n")
        m = _STATUS_RE.match(lines[0].rstrip(b"\r"))
        if m is None:
            raise ParseError("not an HTTP status line",
                             line=lines[0].decode("utf-8", "replace"), lineno=1)
        status = int(m.group(2))
        headers: list[tuple[str, str]] = []
        for n, raw in enumerate(lines[1:], 2):
            raw = raw.rstrip(b"\r")
            if not raw:
                continue
            h = _HEADER_RE.match(raw)
            if h is None:
                if raw[:1] in (b" ", b"\t") and headers:  # obsolete line folding
                    k, v = headers[-1]
                    headers[-1] = (k, f"{v} {raw.strip().decode('latin-1')}")
                    continue
                if not complete and n == len(lines):
                    break  # the last header line was cut short
                raise ParseError("malformed header", line=raw.decode("utf-8", "replace"),
                                 lineno=n)
            headers.append((h.group(1).decode("ascii"), h.group(2).decode("latin-1")))
        reason = (m.group(3) or b"").decode("latin-1").strip()
        next_is_status = _STATUS_RE.match(body.split(b"\n", 1)[0].rstrip(b"\r")) is not None
        if complete and next_is_status and (
            100 <= status < 200 or (status == 200 and reason.lower() == "connection established")
        ):
            interim.append(status)
            rest = body
            continue
        return HttpResponse(status, reason, m.group(1).decode("ascii"), tuple(headers), body,
                            tuple(interim), complete)
