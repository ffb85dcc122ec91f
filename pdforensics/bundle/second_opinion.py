"""A second opinion for `verify --secrets`: Yelp's detect-secrets rule set, run line by line.

Why detect-secrets: a maintained, widely used scanner whose plugins were written by other people
from other leaks (AWS, Azure storage, Artifactory, Cloudant, Discord, GitHub, GitLab, IBM, JWT,
Mailchimp, npm, OpenAI, PyPI, SendGrid, Slack, Softlayer, Square, Stripe, Telegram, Twilio,
private keys, URL credentials, and its keyword detector for `password = "..."` in many
languages). Its two entropy plugins and the public-IP one are left out (pdforensics has its own
entropy check; an IP address is evidence, not a secret).

Its patterns run on Python's `re`, so they are fed bounded chunks (CHUNK bytes of a line, with
an overlap), and the whole opinion has a CPU budget: a crafted bundle cannot make `verify`
run for hours; when the budget runs out the result says so (`complete=False`). It does not run
in the capture path: at ~0.7 MB/s it would add seconds per log (benchmarks/bench_redact.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from pdforensics.redact.detectors import MARKER

CHUNK = 2048
OVERLAP = 256
BUDGET_S = 120.0
LEFT_OUT = ("Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector")


@dataclass(frozen=True)
class Opinion:
    line: int  # 1-based
    kind: str  # detect-secrets' own secret type, e.g. "Secret Keyword"
    start: int  # byte offsets of the value in the file (best effort: its first occurrence on the line)
    end: int


@dataclass
class Budget:
    """CPU seconds left for the second opinion of one verify run."""

    left: float = BUDGET_S
    complete: bool = True

    def spend(self, since: float) -> bool:
        self.left -= time.process_time() - since
        if self.left <= 0:
            self.complete = False
        return self.complete


def available() -> bool:
    try:
        import detect_secrets  # noqa: F401
    except ImportError:
        return False
    return True


def _plugins() -> list[dict[str, str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = sorted({c.__name__ for c in classes})
    return [{"name": n} for n in names if n not in LEFT_OUT]


def _chunks(line: str) -> Iterator[tuple[int, str]]:
    if len(line) <= CHUNK:
        yield 0, line
        return
    for at in range(0, len(line), CHUNK - OVERLAP):
        yield at, line[at:at + CHUNK]


def opinions(data: bytes, budget: Budget) -> list[Opinion]:
    """What detect-secrets finds in one file's bytes (markers and values inside markers are no
    findings), within the budget."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import transient_settings

    out: list[Opinion] = []
    text = data.decode("utf-8", "replace")
    offset = 0
    with transient_settings({"plugins_used": _plugins()}):
        for lineno, line in enumerate(text.split("\n"), 1):
            t0 = time.process_time()
            seen: set[str] = set()
            for at, chunk in _chunks(line):
                for s in scan_line(chunk):
                    value = s.secret_value or ""
                    if not value or value in seen or MARKER.search(value.encode()) or _in_marker(line, value):
                        continue
                    seen.add(value)
                    pos = line.find(value, at)
                    start = offset + len(line[:pos].encode()) if pos >= 0 else offset
                    out.append(Opinion(lineno, s.type, start, start + len(value.encode())))
            offset += len(line.encode()) + 1
            if not budget.spend(t0):
                break
    return out


def _in_marker(line: str, value: str) -> bool:
    """The value is only ever seen as part of a `<redacted:...>` marker on the line."""
    stripped = MARKER.sub(b"", line.encode()).decode("utf-8", "replace")
    return value not in stripped
