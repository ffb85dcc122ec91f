"""High-entropy tokens: a secret of a shape no detector knows still looks random.

Used by `verify --secrets` (a token of 24+ characters from the base64/url-safe alphabet that
mixes upper case, lower case and digits and carries more than 4.2 bits per character) and
by the redactor to decide which hashed env values to hunt in other output. Hex strings
(digests, ids), identifiers and paths are not random-looking by these rules.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

from pdforensics import linear

MIN_LEN = 24
MIN_BITS = 4.2
# a maximal run of token characters; the token is its head up to a `.`, with `=` only at its end
_RUN = linear.compile(rb"[A-Za-z0-9+/_\-.=]{%d,}" % MIN_LEN)
_TOKEN = linear.compile(rb"[A-Za-z0-9+/_\-]{%d,}={0,2}" % MIN_LEN)
_HEX = linear.compile(rb"[0-9a-fA-F\-]+")


def entropy(value: bytes) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def looks_random(value: bytes) -> bool:
    """Whether value (one token) reads like a key rather than a word, path, id or digest."""
    v = value.rstrip(b"=")
    if len(v) < MIN_LEN or _HEX.fullmatch(v) or v.startswith(b"/"):
        return False
    if not (any(65 <= c <= 90 for c in v) and any(97 <= c <= 122 for c in v) and any(48 <= c <= 57 for c in v)):
        return False
    if any(len(seg) >= 3 and seg.isalpha() and seg.islower() for seg in v.split(b"/")[:-1]):
        return False  # a relative path (`models/Qwen2-7B-Instruct-AWQ`)
    return entropy(v) >= MIN_BITS


# request and trace ids are random by design and no secret: an OpenAI-style id (`chatcmpl-...`),
# or a token right after an id's name (`request_id="..."`, `rid=`, `X-Request-Id: `, `"id": "`)
ID_PREFIXES = (b"chatcmpl-", b"cmpl-", b"req-", b"req_", b"resp_", b"resp-", b"msg_", b"run_", b"call_",
               b"toolu_", b"file-", b"batch_", b"gen-", b"trace-", b"span-")
_ID_NAME = linear.compile(
    rb"(?:^|[^A-Za-z0-9])(?:request|req|trace|span|correlation|x-request)?[_\-]?(?:id|rid)"
    rb"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?$",  # quotes JSON-escaped too: `request_id=\\"...`
    linear.I)


# a terminal colour code (smg colours its log fields), raw or JSON-escaped (a line quoted in
# analysis.json: "\u001b[3m")
_SGR = linear.compile(rb"(?:\x1b|\\u001b)\[[0-9;]{0,16}m")


def is_id(data: bytes, start: int, token: bytes) -> bool:
    """The token is a request/trace id (by its prefix, or by the name just before it, colour
    codes aside: `\\x1b[3mrequest_id\\x1b[0m\\x1b[2m=\\x1b[0m"gnt-..."`)."""
    if token.startswith(ID_PREFIXES):
        return True
    before = data[max(0, start - 160):start]
    if b"\x1b" in before or b"\\u001b" in before:
        before = _SGR.sub(b"", before)
    return _ID_NAME.search(before[-32:]) is not None


def random_tokens(data: bytes) -> Iterator[tuple[int, int]]:
    """Spans of random-looking tokens in data (not a `base64,` data URI, not a CSP/SRI hash,
    not a request id)."""
    for m in _RUN.finditer(data):
        head = m.group().split(b".", 1)[0]
        if (_TOKEN.fullmatch(head) is not None and looks_random(head)
                and data[max(0, m.start() - 7):m.start()] != b"base64,"
                and not head.startswith((b"sha256-", b"sha384-", b"sha512-"))
                and not is_id(data, m.start(), head)):
            yield m.start(), m.start() + len(head)
