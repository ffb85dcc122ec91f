"""The terminal summary of a capture opens with the first screen: verdict, since, mitigate
now, diagnose, then the findings; the capture's status after; colour only on a terminal
that wants it (never NO_COLOR, never a pipe), and never carried by host text."""

from __future__ import annotations

import io
from typing import Any, TextIO, cast

import pytest

from pdforensics.cli.summary import summary_lines
from pdforensics.terminal import SafeStream, plain, print_lines

DOC: dict[str, Any] = {
    "status": "complete", "partial_reasons": [], "collected": True, "gaps": [], "hung": [],
    "verdict": "WEDGED", "bundle": "b/x", "archive": "b/x.tar.gz", "report": "b/x/report.html",
    "since": {"at": 1.0, "utc": "2026-12-04T16:47:49Z", "evidence": "KV_WAITING_TIMEOUT in \x1b[31mlog"},
    "mitigate": "restart prefill-0 (prefill:30000) and decode-0 (decode:30001) together",
    "diagnose": "DECODE_TRANSFER_STUCK: KV never arrives",
    "findings": [{"key": "DECODE_TRANSFER_STUCK", "severity": "critical", "title": "KV hop frozen"},
                 {"key": "LOG_SIGNATURE", "severity": "warning", "title": "x"}],
    "window": {"how": "server start", "history": ["old line"]}, "samples": 3,
}


def test_order_of_the_first_screen() -> None:
    text = plain(summary_lines(DOC)).splitlines()
    heads = [ln.split(":")[0] for ln in text[:5]]
    assert heads == ["VERDICT", "since", "mitigate now", "diagnose", "findings"], text
    assert text[0] == "VERDICT: WEDGED"
    assert "\\x1b[31m" in text[1] and "\x1b" not in text[1]  # host text: the ESC shown, not sent
    assert text.index("status: complete") > text.index("findings:")
    assert "archive: b/x.tar.gz" in text


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("env", "tty", "coloured"), [({}, True, True), ({"NO_COLOR": "1"}, True, False),
                                                      ({}, False, False), ({"TERM": "dumb"}, True, False)])
def test_colour_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], tty: bool,
                                   coloured: bool) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    raw = Tty() if tty else io.StringIO()
    print_lines(summary_lines(DOC), cast(TextIO, SafeStream(raw)))
    out = raw.getvalue()
    assert ("\x1b[31;1mWEDGED" in out) is coloured  # the verdict in bold red
    assert "\x1b[31mlog" not in out  # never the host's own sequence
    assert plain(summary_lines(DOC)) == __import__("re").sub(r"\x1b\[[0-9;]*m", "", out)
