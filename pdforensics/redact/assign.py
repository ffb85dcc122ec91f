"""Credentials by assignment: a credential-named key followed by its value, in any common syntax.

One pass over the text. A linear pattern finds every run of name characters holding a
credential word (`api_key`, `--hf-token`, `fs.s3a.secret.key`, `"db password"`); a name that
is_secret_name accepts is then read like a tokenizer would, at most a few characters ahead:

    api_key=V   api_key = "V"   api_key: V   "api_key": "V"   {'api_key': 'V'}   api_key -> V
    api_key => V   api_key := V   ('api_key', 'V')   ["--api-key", "V"]   <password>V</password>
    --api-key V   --api-key=V   --api-key\\0V (argv)   --api-key \\<newline> V   Environment="K=a b"
    api_key:<newline>  V (YAML, the value on the next line; `|`/`>` blocks too)
    {"name": "HF_TOKEN", "value": "V"}   - name: HF_TOKEN / value: V   <name>k</name><value>V</value>
    machine h login u password V (netrc)   ALTER USER u PASSWORD 'V' (SQL)

Names inside a value already taken are not read again, so the pass stays linear.
Each hit is (kind, start, end) of the value only: the name and the syntax stay readable.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.redact.names import MAX_NAME, NAME_WORDS, is_secret_name

Span = tuple[str, int, int]
_MARKER_HEAD = b"<redacted:"
_MARKER_LEN = len(b"<redacted:0123456789>")
_CANDIDATE = linear.compile(
    rb"[A-Za-z0-9_.\-]*(?:" + b"|".join(NAME_WORDS) + rb")[A-Za-z0-9_.\-]*", linear.I)
_PAIR_VALUE = linear.compile(  # the value half of a name/value pair, right after the name
    rb"[\"']?[ \t]{0,8}(?:</name>[ \t\r\n]{0,80}<value>|"
    rb",?[ \t\r\n]{0,80}-?[ \t]{0,8}[\"']?value[\"']?[ \t]{0,8}[:=][ \t]{0,8})",
    linear.I)
_SCHEME = linear.compile(rb"(?:bearer|basic|token|digest|negotiate)[ \t]+", linear.I)
_CODE = linear.compile(  # `api_key = args.api_key`, `token = get_token()`: code, not a value
    rb"^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+[\[(]?|[A-Za-z_][A-Za-z0-9_]*[\[(]|None|True|False|null|nil)$")
_SPACES = b" \t"
_VERSION = linear.compile(rb"\d{1,6}(?:\.\d{1,6}){2,3}(?:(?:a|b|rc|\.post|\.dev)\d{1,4})?")
_MAPPING_LINE = linear.compile(rb"(?:-[ \t]+)?(?:-[ \t]*$|[\"']?[A-Za-z0-9_.\- ]{1,128}[\"']?[ \t]*:(?:[ \t]|\r?$))")
# value runs, each bounded: a longer value is cut there (and its name's neighbours are not re-read)
_BARE = linear.compile(rb"[^ \t\r\n\x00\"'&,;)}\]\\<>]*")
_PAIR_RUN = linear.compile(rb"[^\t\r\n\x00\"'&,;)}\]<>]*")
_INLINE = linear.compile(rb"[^\r\n\x00,;)}\]\"']*")  # an inline value inside a quoted string ends at its quote
_NETRC = linear.compile(rb"[^ \t\r\n\x00\"']*")
_WORDS = linear.compile(rb"[^ \t\r\n\x00\"']+(?:[ \t]+[^\- \t\r\n\x00\"'][^ \t\r\n\x00\"']*)*")
_DQ = linear.compile(rb"\"((?:[^\"\\\r\n]|\\[^\r\n])*)")
_SQ = linear.compile(rb"'([^'\r\n]*)")
_BQ = linear.compile(rb"`([^`\r\n]*)")
_ESC_DQ = linear.compile(rb"\\\"((?:[^\"\\\r\n]|\\[^\"\r\n])*)")


def _skip(data: bytes, pos: int, chars: bytes, limit: int = 64) -> int:
    end = min(len(data), pos + limit)
    while pos < end and data[pos] in chars:
        pos += 1
    return pos


def _line_end(data: bytes, pos: int) -> int:
    nl = data.find(b"\n", pos)
    return len(data) if nl < 0 else nl


MAX_VALUE = 4096  # a longer unquoted value is cut here (and the rest is not read as names)
MAX_QUOTED = 65536


def _run(pattern: linear.Pattern[bytes], data: bytes, pos: int) -> int:
    m = pattern.match(data, pos, pos + MAX_VALUE)
    return pos if m is None else m.end()


def _quoted(data: bytes, pos: int) -> tuple[int, int] | None:
    """(start, end) inside the quotes of a quoted value at pos: `"..."`, `'...'`, `b'...'`, `\\"...\\"`
    (without a closing quote on its line: to where the run stops)."""
    if data[pos:pos + 2] in (b"b'", b'b"'):
        pos += 1
    head = data[pos:pos + 1]
    pattern = {b'"': _DQ, b"'": _SQ, b"`": _BQ, b"\\": _ESC_DQ}.get(head)
    if pattern is None:
        return None
    m = pattern.match(data, pos, pos + MAX_QUOTED)
    return None if m is None else m.span(1)


def _words(data: bytes, pos: int) -> int:
    """A flag's unquoted value in ps-style text: words up to the next flag or the line's end."""
    return _run(_WORDS, data, pos)


class _Lines:
    """The start of the line holding a position, for positions that only grow (linear)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.start = data, 0, 0

    def start_of(self, pos: int) -> int:
        if pos < self.pos:
            return self.data.rfind(b"\n", 0, pos) + 1
        nl = self.data.rfind(b"\n", self.pos, pos)
        if nl >= 0:
            self.start = nl + 1
        self.pos = pos
        return self.start


def _indent(data: bytes, line_start: int) -> int:
    return _skip(data, line_start, _SPACES, 256) - line_start


def _next_line_value(data: bytes, pos: int, key_line: int) -> tuple[int, int] | None:
    """YAML `key:` (or `key: |`) with its value on the next, more indented line(s)."""
    p = _skip(data, pos, _SPACES, 16)
    block = data[p:p + 1] in (b"|", b">")
    p = _skip(data, p, b" \t|>-+0123456789", 16)
    if data[p:p + 1] == b"\r":
        p += 1
    if data[p:p + 1] != b"\n":
        return None
    first = p + 1
    indent = _indent(data, key_line)
    start = end = -1
    line = first
    for _ in range(200):  # a block scalar (a PEM key in YAML) is a few dozen lines
        if line >= len(data):
            break
        le = _line_end(data, line)
        body = _skip(data, line, _SPACES, 256)
        if body < le and data[body] != 0x0D:
            if body - line <= indent:
                break
            if start < 0:
                if not block and _MAPPING_LINE.match(data, body, le) is not None:
                    return None  # a nested mapping or list: its own names are read in turn
                start = body
            end = le
        elif start >= 0:
            break
        line = le + 1
    if start < 0:
        return None
    while end > start and data[end - 1] in b" \t\r":
        end -= 1
    return start, end


def _element_or_pair(data: bytes, pos: int, before: int) -> tuple[str, int, int] | None:
    """`<password>V</password>` (`<secret.key type="x">V</...>`), or the value half of a
    name/value pair right after the name (`"name": "K", "value": "V"`, `<name>k</name><value>V`)."""
    if before == 0x3C and pos < len(data) and data[pos] in b"> \t":  # `<`
        gt = data.find(b">", pos, pos + 256)
        if gt >= 0:
            lt = data.find(b"<", gt + 1, gt + 1 + MAX_QUOTED)
            return "xml-element", gt + 1, lt if lt >= 0 else _line_end(data, gt + 1)
    pair = _PAIR_VALUE.match(data, pos)
    if pair is None:
        return None
    q = _quoted(data, pair.end())
    return ("name-value-pair", *q) if q else ("name-value-pair", pair.end(), _run(_PAIR_RUN, data, pair.end()))


def _value(data: bytes, name: bytes, s: int, e: int, line_start: int) -> tuple[str, int, int] | None:
    """(kind, start, end) of the value after the name data[s:e], or None."""
    before = data[s - 1] if s else 0x0A
    flag = name[:1] == b"-"
    pos, quoted_key = e, False
    if data[pos:pos + 2] == b'\\"':
        pos, quoted_key = pos + 2, True
    elif pos < len(data) and data[pos] in b"\"'" and before in b"\"' \t":
        pos, quoted_key = pos + 1, True
    structured = _element_or_pair(data, pos, before)
    if structured is not None:
        return structured
    p = _skip(data, pos, _SPACES, 16)
    spaced = p > pos
    two = data[p:p + 2]
    if two in (b"=>", b"->", b":="):
        kind, p = "arrow", p + 2
    elif two == b"==":
        return None  # a comparison in code
    elif two[:1] == b"=":
        kind, p = ("flag" if flag else "quoted-assignment" if before in b"\"'" else "assignment"), p + 1
    elif two[:1] == b":" and before in b" \t\n{,(\"'[":  # not host:port, not a log's `#token: 1024`
        kind, p = "colon", p + 1
    elif two[:1] == b"," and quoted_key:
        kind, p = ("flag" if flag else "tuple"), p + 1
    elif two[:1] == b"\x00" and flag:
        q0 = p + 1
        if data[q0:q0 + 2] == b"--" or data[q0:q0 + 1] == b"\x00":
            return None
        end = data.find(b"\x00", q0)
        return "flag", q0, len(data) if end < 0 else end
    elif flag and (spaced or two == b"\\\n"):
        if data[p:p + 2] == b"\\\n":  # --api-key \<newline>   V
            p = _skip(data, p + 2, _SPACES)
        if data[p:p + 1] in (b"", b"-", b"\r", b"\n", b"\x00"):
            return None
        q = _quoted(data, p)
        return ("flag", *q) if q else ("flag", p, _words(data, p))
    elif spaced and name.lower() in (b"password", b"passwd"):
        return _netrc_or_sql(data, p, s, line_start)
    else:
        return None
    value_start = _skip(data, p, _SPACES)
    if kind == "colon":
        nxt = _next_line_value(data, p, line_start)
        if nxt is not None:
            return "next-line", nxt[0], nxt[1]
        if value_start == p and not quoted_key:  # `password:x` without a space: not YAML, maybe a URL
            return None
    p = value_start
    if kind == "colon" and (m := _SCHEME.match(data, p)) is not None:
        p = m.end()  # Authorization: Bearer V -> V
    q = _quoted(data, p)
    if q is not None and two[:1] == b"," and not _list_item(data, q, kind):
        return None  # `"..--flag", "key": ...`: the next string is a mapping's key, not this name's value
    if q is not None:
        if kind == "colon":
            kind = "colon-field" if not quoted_key else "json-field" if data[q[0] - 1] == 0x22 else "dict-field"
        return kind, q[0], q[1]
    if two[:1] == b",":
        return None  # a list's next item that is not a string
    if kind == "quoted-assignment":  # Environment="HF_TOKEN=a b": to the closing quote
        end = data.find(bytes([before]), p, _line_end(data, p))
        return kind, p, end if end >= 0 else _run(_BARE, data, p)
    if kind in ("assignment", "flag") and not spaced:
        nul = data.find(b"\x00", p, p + 4097)
        if nul >= 0 and data.find(b"\n", p, nul) < 0:  # an environ/argv entry: to its NUL
            return kind, p, nul
    if kind == "colon":
        if data[line_start:s].strip(b" \t-") == b"" and s - line_start < 256:
            end = _line_end(data, p)
            end = min(end, p + MAX_VALUE)
            return "yaml-field", p, end
        return "colon-field", p, _run(_INLINE, data, p)
    end = _run(_BARE, data, p)
    if spaced and _CODE.fullmatch(data, p, end) is not None:
        return None
    return kind, p, end


def _list_item(data: bytes, q: tuple[int, int], kind: str) -> bool:
    """The quoted string at q is a list's next item (`"name", "V"]`), not a mapping's key
    (`"name", "key": ...`) nor, in a pair, a package's version (`["secretstorage", "3.5.0"]`)."""
    after = _skip(data, q[1] + 1, b" \t\r\n", 16)
    if data[after:after + 1] == b":":
        return False
    return kind != "tuple" or _VERSION.fullmatch(data, q[0], q[1]) is None


def _netrc_or_sql(data: bytes, p: int, s: int, line_start: int) -> tuple[str, int, int] | None:
    """`login u password V` / a line starting `password V` (.netrc); `PASSWORD 'V'` (SQL)."""
    q = _quoted(data, p)
    if q is not None:
        return "sql-password", q[0], q[1]
    words = data[max(line_start, s - 256):s].split()
    if words and not (len(words) >= 2 and words[-2] == b"login"):
        return None
    if data[p:p + 1] in b"=:":
        return None
    return "netrc-password", p, _run(_NETRC, data, p)


def assignment_spans(data: bytes) -> Iterator[Span]:
    """Every credential value after a credential-named key in data."""
    taken = 0  # values end here: a name inside a value already taken is not read again
    lines = _Lines(data)
    for m in _CANDIDATE.finditer(data):
        s, e = m.span()
        if s < taken or e - s > MAX_NAME + 2:
            continue
        name = data[s:e]
        if not is_secret_name(name.decode("ascii", "replace")):
            continue
        found = _value(data, name, s, e, lines.start_of(s))
        if found is None:
            continue
        kind, start, end = found
        taken = max(taken, end)
        while end > start and data[end - 1] in b" \t\r":
            end -= 1
        if end > start:
            yield kind, start, end
