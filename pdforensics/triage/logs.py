"""Loose log files: is it a log, and which service wrote which lines (compose, journald)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pdforensics import linear
from pdforensics.parsers.eval_summary import EVAL_SUMMARY
from pdforensics.parsers.journal import parse_log_timestamp
from pdforensics.parsers.linescan import line_numbers, split_lines
from pdforensics.parsers.textcache import by_text

_COMPOSE = linear.compile(r"^([A-Za-z0-9][\w.-]*)\s+\| ?")
# journald short-iso / short: "<time> <host> <identifier>[pid]: "
_JOURNAL = linear.compile(r"^(?:\d{4}-\d\d-\d\dT\S+|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ "
                      r"([^\s:\[]+)(?:\[\d+\])?: ")
_SGLANG = linear.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
# other log line shapes: SGLang's short "[04:40:55 TP0]", glog "E0521 16:22:21.694042",
# a "[Gloo]" or "[Router (Rust)]"-style tag (the old sglang-router launcher), Python logging
# levels (and gdb's, a tool's "warning: ", "Failed: "), a raised exception's last line; torch's
# c10 lines ("[rank8]:[W318 10:00:41.929 ProcessGroupNCCL.cpp:1771] ...", "[rank1]:[W
# CudaIPCTypes.cpp:16] ...") and the C++ stack its exceptions print ("Exception raised
# from ...", "frame #0: ...")
_OTHER = linear.compile(r"^(?:\[\d\d:\d\d:\d\d[\].,\s]|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ |"
                    r"(?:\[rank\d{1,5}\]:)?\[[IWEF]\d{3,4} \d\d:\d\d:\d\d\.\d+ |"
                    r"(?:\[rank\d{1,5}\]:)?\[[IWEF] [\w.-]{1,80}:\d{1,7}\] |"
                    r"(?:warning|error|fatal|Failed|FAILED|Error): |"
                    r"frame #\d{1,4}: |Exception raised from |"
                    r"\[[A-Za-z][\w.-]{1,30}(?: \([\w .-]{1,20}\))?\] |(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)"
                    r"[:\s]|[A-Za-z_][\w.]*(?:Error|Exception): )")
# lines of the layers beneath SGLang: NCCL's "host:pid:tid [dev] NCCL INFO", UCX's
# "[1744331142.02] [host:pid:n]  file.c:1 UCX  INFO", glog with a year "I20260530 21:34:20.6",
# dmesg "[  518.050606]" / "[  +0.000316]", "kernel: " journal lines; NCCL's lines with the
# host:pid:tid cut off by the launcher ("[0] NCCL INFO ..."); Open MPI's "[host:pid] " (its
# signal handler's "*** Process received signal ***" report)
_LOWER = linear.compile(r"^[\w.-]{1,200}:\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL |^\s{0,4}\[\d{1,4}\] NCCL "
                    r"(?:INFO|WARN) |^\[\d{9,11}\.\d{1,9}\] \[|"
                    r"^[IWEF]\d{8} \d\d:\d\d:\d\d\.|^\[ {0,12}\+?\d{1,10}\.\d{1,9}\] |^kernel: |"
                    r"^\[[\w.-]{1,200}:\d{1,10}\] ")
_ROLES = (("prefill", "prefill"), ("decode", "decode"), ("router", "router"),
          ("gateway", "router"), ("lb", "router"), ("unified", "unified"))
_ROLE_WORDS = tuple((linear.compile(rf"(?:^|[^a-z]){word}(?:[^a-z]|$)"), word, role) for word, role in _ROLES)


def _stamped(line: str) -> bool:
    return bool(parse_log_timestamp(line) is not None or _COMPOSE.match(line)
                or _JOURNAL.match(line) or _SGLANG.match(line) or _OTHER.match(line)
                or _LOWER.match(line))


def looks_like_log(text: str, has_hits: bool) -> bool:
    """Some lines carry a log prefix (timestamp, compose service, journald), or a signature hit."""
    lines = [ln for ln in text.split("\n", 5000)[:5000] if ln.strip()]
    if not lines:
        return False
    stamped = sum(1 for ln in lines if _stamped(ln))
    return has_hits or stamped >= max(1, len(lines) // 10)


#: a shell prompt with its command ("root@host:/dir# mpirun ...", "$ nixlbench ..."): what follows
#: is that command's output, read as a log
_PROMPT = linear.compile(r"^(?:[\w.-]{1,64}@[\w.-]{1,64}:\S{0,300}[#$]|(?:\([\w.-]{1,40}\) ?)?\$) \S")


#: the summary nccl-tests prints after its results table (its check of the data, its mean),
#: and its header (its version, the test it starts, its table's column names)
_NCCL_TESTS_SUMMARY = linear.compile(r"^[#\s]*(?:Out of bounds values : \d|Avg bus bandwidth +: )|"
                                     r"^# (?:nccl-tests version \d|Collective test starting: )|"
                                     r"^#\s+size\s+count\s+type\s+redop\s+root\s+time",
                                     linear.M)


def command_output(text: str) -> bool:
    """The text opens with a shell prompt and its command, and goes on for a few lines; or it
    is a test program's output that ends in its summary (nccl-tests' results table, SGLang's
    accuracy benchmark); or it is a tool's listing (`tool_listing`)."""
    lines = [ln for ln in text[:100_000].split("\n", 50)[:50] if ln.strip()]
    head = text[:1_000_000]
    return (len(lines) >= 4 and _PROMPT.match(lines[0]) is not None) or (
        len(lines) >= 2 and (_NCCL_TESTS_SUMMARY.search(head) is not None
                             or EVAL_SUMMARY.search(head) is not None)) or tool_listing(lines)


#: a Markdown table's row and its header's rule (``| --- | :---: |``)
_TABLE_ROW = linear.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = linear.compile(r"^\s*\|(?:\s*:?-{3,}:?\s*\|)+\s*$")
#: a ``name: value`` / ``name = value`` line of a tool's listing (ibv_devinfo, ibstat,
#: nvidia-smi -q, ulimit -a, a benchmark's settings): a short name, no sentence before the colon
_FIELD_LINE = linear.compile(r"^\s*[A-Za-z][\w.()/\[\]# -]{0,48}?\s*(?::|=)\s*\S")
#: a rule under a table's header or between its parts (``------``, ``=====``, ``+---+---+``)
_RULE_LINE = linear.compile(r"^\s*[-=+|:_ ]{8,}\s*$")
#: a row of a column-aligned table: three cells or more, two spaces (or a tab) apart
_ALIGNED = linear.compile(r"\S(?: {2,}|\t)\S")
_NUMBER = linear.compile(r"^[-+]?\d[\d,.]*(?:[eE][-+]?\d+)?[%xX]?$")


def _listing_line(line: str) -> bool:
    """A line a tool's listing is made of: a field, a table's row or rule, a row of numbers."""
    if _TABLE_ROW.match(line) or _RULE_LINE.match(line):
        return True
    words = line.split()
    if _FIELD_LINE.match(line) and len(words) < 12:
        return True
    if len(_ALIGNED.findall(line)) >= 2:  # three aligned cells: a table's header or row
        return True
    numbers = sum(1 for w in words if _NUMBER.match(w))
    return len(words) >= 3 and numbers * 10 >= len(words) * 6


def tool_listing(lines: list[str]) -> bool:
    """The first lines (non-blank) are a tool's listing: a Markdown table (with its rule row),
    or fields, table rows and rules on at least seven lines in ten; at least three lines
    either way. (A note in prose has neither shape: it is still not read; nor is an HTTP
    answer's header block.)"""
    if len(lines) < 3 or lines[0].startswith("HTTP/"):
        return False  # (an HTTP answer's headers: not evidence, and triage says what it is)
    rows = sum(1 for ln in lines if _TABLE_ROW.match(ln))
    if rows * 10 >= len(lines) * 6 and any(_TABLE_RULE.match(ln) for ln in lines):
        return True
    listed = sum(1 for ln in lines if _listing_line(ln))
    return listed * 10 >= len(lines) * 7


def role_of(name: str) -> str | None:
    """``decode-1`` -> decode; ``sglang-router`` -> router; None when the name says nothing."""
    low = name.lower()
    for pattern, word, role in _ROLE_WORDS:
        if pattern.search(low) or (len(word) > 3 and word in low):
            return role
    return None


#: a line _COMPOSE or _JOURNAL matches (the same patterns over the text's bytes: their
#: classes are ASCII, and a non-space character is a run of non-space bytes)
_WRITER_LINE = linear.compile(
    rb"^(?:[A-Za-z0-9][\w.-]*\s+\| ?|(?:\d{4}-\d\d-\d\dT\S+|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ "
    rb"[^\s:\[]+(?:\[\d+\])?: )", linear.M)


def _writer(line: str) -> str | None:
    first = line[:1]  # both prefixes open with an ASCII letter or digit
    m = (_COMPOSE.match(line) or _JOURNAL.match(line)) if first.isascii() and first.isalnum() else None
    return m.group(1) if m is not None else None


@by_text
def split_by_writer(text: str) -> Mapping[str, str]:
    """Lines grouped by the compose service or journald identifier that wrote them.

    Lines without such a prefix (continuations, tracebacks) follow the previous line's
    writer; a log without any prefix is one group named "" (the text itself). The lines that
    name a writer are found by one scan of the text; the others are taken as runs.
    """
    numbers = line_numbers(text, _WRITER_LINE)
    if not numbers:  # no line names a writer: one group, the text itself (nothing split)
        return MappingProxyType({"": text})
    lines = split_lines(text)
    groups: dict[str, list[str]] = {}
    current, start = "", 0
    for no in numbers:
        name = _writer(lines[no - 1])
        if name is None:
            continue
        if no - 1 > start:
            groups.setdefault(current, []).extend(lines[start:no - 1])
        current, start = name, no - 1
    groups.setdefault(current, []).extend(lines[start:])
    if len(groups) == 1:  # one writer: the text itself (its readings are kept by it)
        return MappingProxyType({current: text})
    # (read-only: the same groups are handed to every reader that asks, by_text)
    return MappingProxyType({k: "\n".join(v) for k, v in groups.items()})
