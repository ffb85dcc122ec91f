"""Strip log-line prefixes (docker compose, kubectl, journald, Ray, timestamps, SGLang, a
Cloud Logging severity and time) line by line.

A stack dump pasted from a log carries whatever each log layer put in front of every line.
``unwrap_log`` removes those layers so the stack parsers see the lines as the dumping tool
printed them, and splits interleaved streams (one per compose service, pod or journald
identifier) so two services' lines never mix inside one dump.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.logtime import SEVERITIES
from pdforensics.parsers.ray_prefix import DEDUP as RAY_DEDUP
from pdforensics.parsers.ray_prefix import PREFIX as RAY_PREFIX

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
_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|TRACE|SUCCESS)"
# vLLM's logger: "ERROR 05-01 15:00:23 [nixl_connector.py:1263] " (level, month-day time, file:line;
# before 0.8 without the opening bracket: "ERROR 03-21 05:31:41 multiproc_worker_utils.py:242] ")
_VLLM = linear.compile(r"^" + _LEVEL + r" \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[^\]\s]{1,80}:\d+\] ")
# a severity, then an RFC 3339 time: Google Cloud Logging's lines as the console or
# `gcloud logging read` copy them ("ERROR 2026-06-15T14:10:59.392125190Z ")
_SEVERITY_ISO = linear.compile(
    r"^(?:" + "|".join(sorted(SEVERITIES)) + r") "
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)? ")
# after a leading time: pipe-separated loggers (FastChat "| ERROR | stderr | ", loguru
# "| ERROR    | module:func:12 - ") and Python's "- name - LEVEL - " format
_PIPES = linear.compile(r"^\| ?" + _LEVEL + r" *\| (?:[^|]{1,80} \| |[\w.<>]{1,80}:[\w.<>]{1,80}:\d+ - )?")
_DASHES = linear.compile(r"^- [\w.<>-]{1,80} - " + _LEVEL + r" - ")
# Ray's worker-log prefix: "(RolloutRayActor pid=3549160) ", "(pid=42, ip=10.0.0.2) "
_RAY = linear.compile(RAY_PREFIX)

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


def _layer(line: str) -> tuple[linear.Match[str] | None, str]:
    """The outermost prefix layer of the line and its kind (stream | sglang | other), the
    patterns above tried in their order among those the first character allows (one or two
    calls a line rather than eight)."""
    first = line[:1]
    if first == "[":
        if line.startswith("[pod/"):
            return _KUBECTL.match(line), "stream"
        m = _SGLANG.match(line)
        if m is not None:
            return m, "sglang"
        return _BRACKETS.match(line), "other"
    if first.isascii() and first.isalnum():
        if "|" in line and (m := _COMPOSE.match(line)) is not None:
            return m, "stream"
        if first.isdigit():
            m = _JOURNAL_ISO.match(line)
            return (m, "stream") if m is not None else (_ISO.match(line), "other")
        if line[3:4] == " ":
            return _JOURNAL.match(line), "stream"
        if first in "DIWECTSNA" and line[1:2].isupper():  # (a level word: all capitals)
            m = _VLLM.match(line) if first in "DIWECTS" else None
            return (m, "other") if m is not None else (_SEVERITY_ISO.match(line), "other")
        return None, ""
    if first == "|":
        return _PIPES.match(line), "other"
    if first == "-" and line[1:2] == " ":
        return _DASHES.match(line), "other"
    if first == ">":
        return _QUOTE.match(line), "other"
    if first == "(" and "pid=" in line[:100]:
        return _RAY.match(line), "ray"
    return None, ""


def strip_prefixes(line: str, lineno: int = 0) -> LogLine:
    """Remove every known prefix layer from one line (outermost first)."""
    stream, ts, rank = "", None, None
    for _ in range(_MAX_LAYERS):
        m, kind = _layer(line)
        if m is None:
            if line.startswith("`"):
                rest = line.lstrip("`")
                line = rest if rest.strip() else ""
                if line:
                    continue
            break
        # groups by number: every stream pattern's first group is its stream, the SGLang
        # prefix's are the time and the ranks (a name costs a lookup in google-re2)
        if kind == "stream":
            stream = stream or m.group(1)
        elif kind == "ray":  # Ray's prefix, and the dedup note Ray may end the line with
            stream = stream or m.group(1)
            if line.endswith("across cluster]") and (d := RAY_DEDUP.search(line)) is not None:
                line = line[:d.start()]
        elif kind == "sglang":
            ts, rank = m.group(1), _rank(m.group(2))
        line = line[m.end():]
    return LogLine(line, stream, ts, rank, lineno)


def unwrap_log(text: str) -> dict[str, list[LogLine]]:
    """Prefix-free lines grouped by stream, in file order (``""`` holds unprefixed lines)."""
    streams: dict[str, list[LogLine]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        ll = strip_prefixes(raw.rstrip("\r"), n)
        streams.setdefault(ll.stream, []).append(ll)
    return streams
