"""Strip log-line prefixes (docker compose, kubectl, journald, timestamps, SGLang) line by line.

A stack dump pasted from a log carries whatever each log layer put in front of every line.
``unwrap_log`` removes those layers so the stack parsers see the lines as the dumping tool
printed them, and splits interleaved streams (one per compose service, pod or journald
identifier) so two services' lines never mix inside one dump.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear

# docker compose: "svc-1  | " (v2) or "svc_1      | " (v1); the dump's own indentation follows "| ".
_COMPOSE = linear.compile(r"^(?P<stream>[A-Za-z0-9][\w.-]*)\s+\| ?")
# kubectl logs --prefix: "[pod/name/container] "
_KUBECTL = linear.compile(r"^\[(?P<stream>pod/[^\]\s]+)\] ")
# journald short / syslog: "Dec 28 06:43:00 host ident[pid]: " (any 3-letter month, any locale)
_JOURNAL = linear.compile(
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?:\S+ )?(?P<stream>[^\s:\[]+)(?:\[\d+\])?: ")
# journald short-iso / RFC 3339 host lines: "2025-01-01T10:00:00+0000 host ident[pid]: "
_JOURNAL_ISO = linear.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) \S+ "
    r"(?P<stream>[^\s:\[]+)\[\d+\]: ")
# kubectl --timestamps / docker logs -t / plain ISO time: "2025-06-19T08:18:45.701Z "
_ISO = linear.compile(
    r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? ")
# SGLang: "[2025-08-02 19:24:30 TP3] ", "[2025-06-26 07:25:31 DP4 TP4] ", "[12-16 14:27:08] "
_SGLANG = linear.compile(
    r"^\[(?P<ts>(?:\d{4}-)?\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)"
    r"(?P<ranks>(?: (?:DP|PP|TP|EP|CP|ATTN_DP|MOE_DP)\d+)*)\] ")
# other bracketed time prefixes: Apache "[Mon Mar 05 16:35:24.7 2018] [wsgi:error] [pid 1:tid 2] ",
# RUST_LOG "[2025-04-28T11:19:52.70Z WARN  py_spy] "; only when the first bracket holds a time.
_BRACKETS = linear.compile(r"^\[[^\]]{0,60}\d\d:\d\d:\d\d[^\]]{0,60}\](?: \[[^\]]{1,60}\])* ")
_QUOTE = linear.compile(r"^> ?")  # a log quoted in Markdown

_MAX_LAYERS = 6


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line with its log prefixes removed."""

    text: str
    stream: str = ""  # compose service, kubectl pod, or journald identifier ("" if none)
    timestamp: str | None = None  # SGLang record time, when the line carried one
    rank: str | None = None  # "TP3", "DP1_TP3", "PP2_TP1" from an SGLang prefix
    lineno: int = 0


def _rank(ranks: str) -> str | None:
    parts = ranks.split()
    return "_".join(parts) if parts else None


#: every layer in one pattern, tried in the order above (RE2 takes the first alternative that
#: matches): one call per layer instead of one per pattern
_ANY = linear.compile(linear.union(
    [_COMPOSE, _KUBECTL, _JOURNAL_ISO, _JOURNAL, _SGLANG, _ISO, _BRACKETS, _QUOTE],
    ["stream_compose", "stream_kubectl", "stream_journal_iso", "stream_journal", "sglang", "iso",
     "brackets", "quote"]))
#: a line opening with none of these characters has no prefix layer (a stack frame, a message)
_FIRST = frozenset("[>`0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def strip_prefixes(line: str) -> LogLine:
    """Remove every known prefix layer from one line (outermost first)."""
    stream, ts, rank = "", None, None
    for _ in range(_MAX_LAYERS):
        if line[:1] not in _FIRST:
            break
        m = _ANY.match(line)
        if m is None:
            if line.startswith("`"):
                rest = line.lstrip("`")
                line = rest if rest.strip() else ""
                if line:
                    continue
            break
        kind = m.lastgroup
        if kind is not None and kind.startswith("stream_"):
            stream = stream or _STREAM[kind].match(line).group("stream")  # type: ignore[union-attr]
        elif kind == "sglang":
            sm = _SGLANG.match(line)
            assert sm is not None
            ts, rank = sm.group("ts"), _rank(sm.group("ranks"))
        line = line[m.end():]
    return LogLine(line, stream, ts, rank)


_STREAM = {"stream_compose": _COMPOSE, "stream_kubectl": _KUBECTL,
           "stream_journal_iso": _JOURNAL_ISO, "stream_journal": _JOURNAL}


def unwrap_log(text: str) -> dict[str, list[LogLine]]:
    """Prefix-free lines grouped by stream, in file order (``""`` holds unprefixed lines)."""
    streams: dict[str, list[LogLine]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        ll = strip_prefixes(raw.rstrip("\r"))
        streams.setdefault(ll.stream, []).append(
            LogLine(ll.text, ll.stream, ll.timestamp, ll.rank, n))
    return streams
