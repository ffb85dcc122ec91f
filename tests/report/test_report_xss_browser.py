"""Planted markup in cmdline, env vars, log lines and metric labels stays inert in Chromium.

The payload would set document.title to PWNED and log XSS-RAN if any of it ever ran. The
page is checked as shipped and with its Content-Security-Policy removed (escaping alone must
hold); a control page with the payload pasted in raw shows the check can see a script run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pdforensics.report import write_report
from tests.report.report_cdp import Browser
from tests.report.report_payload import PAYLOAD

pytestmark = pytest.mark.lab

PROBE = """({title: document.title, imgs: document.images.length, scripts: document.scripts.length,
  body: document.body.innerText})"""


def _no_csp(text: str) -> str:
    out, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    assert n == 1
    return out


def _open(browser: Browser, path: Path) -> tuple[dict[str, Any], Any]:
    page = browser.open(path.resolve().as_uri())
    try:
        return page.eval(PROBE), page.log
    finally:
        page.close()


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.pd_capture import SynthSpec, write_synthetic

    d = tmp_path_factory.mktemp("xss")
    return write_report(write_synthetic(d, SynthSpec(hosts=2, gpus=2, processes=4, payload=PAYLOAD)))


def _assert_inert(probe: dict[str, Any], log: Any) -> None:
    assert probe["title"].startswith("WEDGED · synth · "), probe["title"]
    assert probe["imgs"] == 0 and probe["scripts"] == 1
    messages = [str(c) for c in log.console] + [str(e) for e in log.exceptions + log.log]
    assert not any("XSS-RAN" in m for m in messages)
    assert log.errors() == [] and log.console == [] and log.dialogs == []
    body = probe["body"]
    assert '<script>document.title="PWNED";console.log("XSS-RAN")</script>' in body
    assert '"><img src=x onerror=' in body and "{{7*7}}" in body


def test_payload_is_inert_as_shipped(browser: Browser, planted: Path) -> None:
    probe, log = _open(browser, planted)
    _assert_inert(probe, log)
    assert log.requests == [planted.resolve().as_uri()]


def test_payload_is_inert_without_the_csp(browser: Browser, planted: Path, tmp_path: Path,
                                          artifacts: Path) -> None:
    bare = tmp_path / "no-csp.html"
    bare.write_text(_no_csp(planted.read_text()))
    probe, log = _open(browser, bare)
    _assert_inert(probe, log)
    page = browser.open(bare.resolve().as_uri())
    try:
        page.eval("document.querySelector('#config').scrollIntoView()")
        page.screenshot(artifacts / "report-xss-config.png")
    finally:
        page.close()


def test_control_a_raw_payload_does_run(browser: Browser, planted: Path, tmp_path: Path) -> None:
    """The same probes see a script that does run (no CSP) and one the CSP stops."""
    raw = _no_csp(planted.read_text()).replace("<main>", "<main>" + PAYLOAD, 1)
    bad = tmp_path / "control.html"
    bad.write_text(raw)
    probe, log = _open(browser, bad)
    assert probe["title"] == "PWNED"
    assert any("XSS-RAN" in str(c) for c in log.console)
    blocked = tmp_path / "control-csp.html"
    blocked.write_text(planted.read_text().replace("<main>", "<main>" + PAYLOAD, 1))
    probe, log = _open(browser, blocked)
    assert probe["title"] != "PWNED"
    assert log.errors(), "the CSP refused the script, and says so"
