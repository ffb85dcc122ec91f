"""Peel what operators wrap around pasted evidence: curl -i / curl -v, shell prompts, `date`.

A pasted /metrics scrape or /server_info answer often carries the command that fetched it
(`$ curl ...`), curl's verbose chatter (`* Trying`, `> GET`, `< HTTP/1.1 200`), a response
head, or a `date` line the operator ran just before. This module strips those and keeps
what they say about time (the HTTP ``Date`` header, a `date` line) and the HTTP status.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from pdforensics import linear
from pdforensics.parsers.linescan import SMALL, lines_with, split_lines
from pdforensics.parsers.logtime import epoch, month, read_stamp
from pdforensics.parsers.textcache import by_text

#: a text this long takes its payload in runs (`unwrap`)
LARGE = SMALL

_CURL_V = linear.compile(r"^(?:\*\s|\*$|> |>$|< |<$|\{ \[|\} \[)")
_CURL_METER = linear.compile(r"^\s*(?:% Total\s|Dload\s|\d+\s+[\d.]+[kMG]?\s+\d+\s+[\d.]+[kMG]?\s)")
_PROMPT = linear.compile(r"^(?:\S*[$#]|>>>) (?:curl|wget|http|date|sleep|echo|cat|kubectl|docker)\b")
_STATUS = linear.compile(r"^(?:< )?HTTP/\d(?:\.\d)? ([1-9]\d\d)\b")
_HEADER = linear.compile(r"^(?:< )?([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$")
# `date`: "Thu Dec  3 08:55:55 UTC 2026"; ISO 8601; `date +%s`
_DATE_CMD = linear.compile(r"^[A-Z][a-z]{2},? +([A-Z][a-z]{2}) +(\d{1,2}),? +(\d\d):(\d\d):(\d\d)"
                       r"(?: +([A-Z]{2,5}|[+-]\d{4}))? +(\d{4})$")
_DATE_ISO = linear.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?"
                       r"(Z|[+-]\d\d:?\d\d| ?UTC)?$")
_DATE_EPOCH = linear.compile(r"^(1\d{9})(?:\.\d+)?$")


@dataclass(frozen=True)
class Unwrapped:
    """The payload text with its wrapping removed, and what the wrapping said."""

    text: str
    status: int | None = None  # the final HTTP status, when a response head was there
    taken_at: float | None = None  # epoch from a Date header or a `date` line
    wrapped: tuple[str, ...] = ()  # what was peeled: "curl -v", "http head", "prompt", "date"


def date_line(line: str) -> float | None:
    """Epoch of a line that is only a date (`date`, ISO 8601 or `date +%s`), else None."""
    s = line.strip()
    if not s or len(s) > 40:
        return None
    m = _DATE_EPOCH.match(s)
    if m:
        return float(s)
    if _DATE_ISO.match(s):
        return read_stamp(s)
    m = _DATE_CMD.match(s)
    if m:
        mon = month(m.group(1))
        zone = m.group(6) if (m.group(6) or "")[:1] in ("+", "-") else None
        if mon is None:
            return None
        # a zone name other than UTC is read as UTC: better than no time at all
        return epoch((m.group(7), mon, m.group(2), m.group(3), m.group(4), m.group(5), None, zone))
    return None


def wrapper_line(line: str) -> bool:
    """A line that wraps pasted evidence: a status line, a prompt, a date, curl -v chatter."""
    return bool(_STATUS.match(line) or _PROMPT.match(line) or date_line(line) is not None
                or _CURL_V.match(line) or _CURL_METER.match(line))


def http_date(value: str) -> float | None:
    """Epoch of an HTTP ``Date`` header value, or None."""
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


#: a line _PROMPT matches holds one of these (the whole text is scanned for them once)
_PROMPT_MARKS = tuple(f"{p} {w}" for w in ("curl", "wget", "http", "date", "sleep", "echo", "cat",
                                            "kubectl", "docker") for p in ("$", "#", ">>>"))


@by_text  # triage asks for the kind, then the payload's time: one reading of a large text
def unwrap(text: str) -> Unwrapped:
    """Strip prompts, curl -v chatter and an HTTP response head; keep status and time.

    In a large text without curl -v chatter, once the payload has begun, only a prompt or a
    ``< `` line can be anything but payload: those lines are found by one scan of the text and
    the runs between them are taken whole."""
    lines = split_lines(text)
    verbose = any(ln.startswith(("< HTTP/", "> GET ", "> POST ")) for ln in lines[:200])
    # the lines that may be a prompt or a response line: in a large text, found by one scan
    special = (None if len(text) < LARGE or verbose
               else sorted(no - 1 for no, _ in lines_with(text, (*_PROMPT_MARKS, "< "))))
    cr = "\r" in text
    out: list[str] = []
    wrapped: list[str] = []
    status: int | None = None
    taken: float | None = None
    in_head = False
    i, k = 0, 0
    while i < len(lines):
        if special is not None and out and not in_head:
            while k < len(special) and special[k] < i:
                k += 1
            stop = special[k] if k < len(special) else len(lines)
            if stop > i:  # payload up to the next line that may be something else
                run = lines[i:stop]
                out.extend([x.rstrip("\r") for x in run] if cr else run)
                i = stop
                continue
        ln = lines[i].rstrip("\r")
        i += 1
        st = _STATUS.match(ln) if (not out or in_head or ln.startswith("< ")) else None
        if st is not None:
            status, in_head = int(st.group(1)), True
            wrapped.append("http head")
            continue
        if in_head:
            if not ln.strip() or ln.strip() == "<":
                in_head = False
                continue
            h = _HEADER.match(ln)
            if h is not None:
                if h.group(1).lower() == "date":
                    taken = http_date(h.group(2)) or taken
                continue
            in_head = False
        if verbose and (_CURL_V.match(ln) or _CURL_METER.match(ln)):
            wrapped.append("curl -v")
            continue
        if _PROMPT.match(ln):
            wrapped.append("prompt")
            continue
        t = date_line(ln) if not out else None  # only a date before the payload is its time
        if t is not None:
            taken = t
            wrapped.append("date")
            continue
        out.append(ln)
    return Unwrapped("\n".join(out).strip("\n") + ("\n" if out else ""), status, taken,
                     tuple(dict.fromkeys(wrapped)))
