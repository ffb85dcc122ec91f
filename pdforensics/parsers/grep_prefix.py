"""The file-name prefix ``grep`` puts on each line it prints from several files
(``vllm_p3.log:(EngineCore pid=546) INFO ...``, ``logs/LOG1.0.txt:host:1:2 [0] NCCL INFO
...``, with ``-n`` its line number too: ``prefill.log:1234:``): a log pasted that way is read
without it (the lines after it are the log's own); line numbers stay."""

from __future__ import annotations

from pdforensics import linear
from pdforensics.parsers.linescan import strip_line_prefix

#: a log file's name (a path, a log/text extension, a rotated log's number), grep -n's number
PREFIX = r"^([\w./-]{0,200}[\w-]\.(?:log|txt|out|err)(?:\.\d{1,3})?)(?::\d{1,9})?:"
_PREFIX = linear.compile(PREFIX)
_PREFIX_B = linear.compile(PREFIX.encode(), linear.M)
_SAMPLE = 200


def grep_prefixed(text: str) -> bool:
    """At least half of the first non-blank lines open with a log file's name and a colon."""
    head = text[:50000]
    if ".log:" not in head and ".txt:" not in head and ".out:" not in head and ".err:" not in head:
        return False
    lines = [ln for ln in head.split("\n")[:_SAMPLE] if ln.strip()]
    hits = sum(1 for ln in lines if _PREFIX.match(ln) is not None)
    return bool(lines) and hits * 2 >= len(lines)


def strip_grep_prefix(text: str) -> str:
    """The text with the file-name prefix removed from every line that has one."""
    lines, found = strip_line_prefix(text, _PREFIX_B, _PREFIX)
    return "\n".join(lines) if found else text
