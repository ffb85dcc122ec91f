"""`capture` of every lab fault writes report.html; real headless Chromium reads it.

One lab (ports 46000-46005) and one browser for the module. Per fault: the verdict is
visible in the first screen at 1280x800, nothing goes to the console, nothing is fetched,
and a screenshot is kept as a test artifact.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.bundle.ondisk import verify_bundle
from pdforensics.cli import main
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from tests.report.report_cdp import Browser, Page
from tests.support import ports

pytestmark = [pytest.mark.lab, pytest.mark.slow]

BASE_PORT = ports.block()  # found free at run time
# process-dead cannot be undone, so it runs last
FAULTS = (("healthy", "HEALTHY"), ("transfer-stuck", "WEDGED"), ("kv-full", "DEGRADED"),
          ("forgotten-requests", "WEDGED"), ("rank-stuck", "WEDGED"), ("hung-endpoint", "WEDGED"),
          ("process-dead", "WEDGED"))

FIRST_SCREEN = """(() => {
  const e = document.getElementById("verdict-word");
  const r = e.getBoundingClientRect();
  const s = getComputedStyle(e);
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  const f = document.querySelector("#verdict .finding .f-title");
  const g = document.querySelector("#verdict #diagnosis .d-facts");
  return {text: e.innerText, top: r.top, bottom: r.bottom, right: r.right,
          visible: s.visibility === "visible" && s.display !== "none" && Number(s.opacity) > 0,
          on_top: hit === e || e.contains(hit), size: parseFloat(s.fontSize),
          finding_bottom: f ? f.getBoundingClientRect().bottom : null,
          facts_bottom: g ? g.getBoundingClientRect().bottom : null,
          facts_top: g ? g.getBoundingClientRect().top : null,
          width: innerWidth, height: innerHeight, resources: performance.getEntriesByType("resource").length,
          scripts: document.scripts.length, title: document.title};
})()"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabInfo, Path]]:
    d = tmp_path_factory.mktemp("reportlab")
    try:
        info = lab_up(d / "lab", fault="healthy", ssh=False, base_port=BASE_PORT)
        yield info, d
    finally:
        lab_down(d / "lab")


def capture(cluster: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, ["capture", "-c", str(cluster), "-o", str(out), "--json",
                                    "--samples", "3", "--interval", "2", "--deadline", "30", *extra])
    doc = json.loads(res.stdout) if res.stdout.strip().startswith("{") else {}
    assert doc, res.output
    return res.exit_code, doc


def open_report(browser: Browser, report: Path, **kw: Any) -> Page:
    page = browser.open(report.resolve().as_uri(), **kw)
    return page


def check_page(page: Page, report: Path, verdict: str) -> dict[str, Any]:
    screen = page.eval(FIRST_SCREEN)
    assert (screen["width"], screen["height"]) == (1280, 800)
    assert screen["text"] == verdict
    assert screen["visible"] and screen["on_top"] and screen["size"] >= 30
    assert 0 <= screen["top"] and screen["bottom"] <= 800 and screen["right"] <= 1280
    if verdict != "HEALTHY":
        assert screen["finding_bottom"] is not None and screen["finding_bottom"] <= 800
        # the diagnosis (stage, side, suspect, ...) sits between the verdict and the first
        # finding: the three of them on the first screen, read without scrolling
        assert screen["facts_bottom"] is not None and screen["facts_bottom"] <= screen["finding_bottom"]
        assert screen["facts_top"] >= screen["bottom"]
    assert page.log.errors() == []
    assert page.log.console == []
    assert page.log.requests == [report.resolve().as_uri()]  # the page itself, nothing else
    assert screen["resources"] == 0 and screen["scripts"] == 1
    return screen


def test_partial_capture_report_in_chromium(lab: tuple[LabInfo, Path], browser: Browser,
                                            artifacts: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that cannot be reached: exit 3, the report says what is missing and why."""
    monkeypatch.delenv("PDFORENSICS_STORE", raising=False)
    info, _d = lab
    cluster = tmp_path / "down.toml"
    cluster.write_text(info.cluster_file.read_text() + (
        '\n[[hosts]]\nname = "decode-1"\naddress = "127.0.0.9"\nport = 46999\n'
        '[[hosts.services]]\nrole = "decode"\nport = 46001\n'))
    set_fault(info.dir, "healthy")
    time.sleep(1.0)
    code, doc = capture(cluster, tmp_path / "out", "--no-stacks")
    assert code == 3 and doc["status"] == "partial"
    assert doc["verdict"] == "HEALTHY"  # the reachable hosts are fine; the banner says partial
    report = Path(doc["report"])
    html = report.read_text()
    assert "decode-1: not reachable" in html and "UNREACHABLE" in html
    assert "decode-1: host not reachable, no GPU data" in html
    page = open_report(browser, report)
    try:
        screen = page.eval(FIRST_SCREEN)
        assert screen["text"] == "HEALTHY"
        status = page.eval("document.querySelector('.capture-status').innerText")
        assert status.startswith("capture PARTIAL") and "decode-1" in status
        assert page.log.errors() == [] and page.log.requests == [report.resolve().as_uri()]
        page.screenshot(artifacts / "report-partial.png")
    finally:
        page.close()


@pytest.mark.parametrize(("fault", "verdict"), FAULTS, ids=[f for f, _v in FAULTS])
def test_fault_report_in_chromium(lab: tuple[LabInfo, Path], browser: Browser, artifacts: Path,
                                  fault: str, verdict: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PDFORENSICS_STORE", raising=False)
    info, d = lab
    set_fault(info.dir, "healthy")  # reset queues a previous fault froze
    time.sleep(1.0)
    set_fault(info.dir, fault)
    time.sleep(2.5)
    code, doc = capture(info.cluster_file, d / fault)
    # a scheduler that cannot answer leaves /server_info hanging: that source timing out is
    # the fault's own evidence (and makes the capture partial); nothing else may be missing
    hang = [r for r in doc["partial_reasons"] if "server_info" in r and "timed out" in r]
    assert code == (3 if hang else 0) and doc["status"] == ("partial" if hang else "complete")
    assert all(r in hang for r in doc["partial_reasons"]), doc["partial_reasons"]
    assert not hang or fault in ("rank-stuck", "hung-endpoint", "transfer-stuck", "forgotten-requests"), hang
    bundle = Path(doc["bundle"])
    report = bundle / "report.html"
    assert doc["report"] == str(report) and report.is_file()
    assert verify_bundle(bundle) == []
    if fault == "healthy" and doc["verdict"] == "DEGRADED":
        # the lab's first requests through smg ramp the prefill transfer queue in its log
        # (LOG_SIGNATURE TRANSFER_QUEUE_RISING): a warning, never a critical finding
        found = doc["findings"]
        assert not [f for f in found if f.get("severity") == "critical"], found
        assert {f["key"] for f in found if f.get("severity") == "warning"} <= {"LOG_SIGNATURE"}, found
        verdict = "DEGRADED"
    assert doc["verdict"] == verdict
    page = open_report(browser, report)
    try:
        check_page(page, report, verdict)
        shot = page.screenshot(artifacts / f"report-{fault}.png")
        assert shot.stat().st_size > 20_000
        if fault == "healthy":
            _sorting(page)
            _print_view(page, artifacts)
        if fault == "transfer-stuck":
            _triage_above_the_fold(page)
    finally:
        page.close()


def _triage_above_the_fold(page: Page) -> None:
    """The frozen hop is one finding and the KV-receiver stacks sit beside it in the first
    screen; the collection log is folded, so the page is short (issue 18)."""
    state = page.eval("""(() => {
      const seen = [...document.querySelectorAll("#verdict .finding .f-title")]
        .filter(e => e.checkVisibility() && !e.closest("details:not([open])")
                     && e.getBoundingClientRect().bottom <= innerHeight)
        .map(e => e.parentElement.querySelector(".key").innerText);
      return {seen, open_logs: document.querySelectorAll("details.host-log[open]").length,
              height: document.documentElement.scrollHeight};
    })()""")
    assert state["seen"][:2] == ["DECODE_TRANSFER_STUCK", "ALL_RANKS_STUCK"], state
    assert "DECODE_PREALLOC_STUCK" not in state["seen"] and state["open_logs"] == 0
    assert state["height"] < 12_000, state  # 15,580 px before the folding


def _sorting(page: Page) -> None:
    """The inline script sorts a collection table by bytes when its header is clicked (the
    host's log unfolded first, as a reader would)."""
    order = page.eval("""(() => {
      const t = document.querySelector("table.collection");
      t.closest("details").open = true;  // the collection log is folded by default
      const th = [...t.tHead.rows[0].cells].find(c => c.innerText.trim() === "bytes");
      const col = th.cellIndex, read = () => [...t.tBodies[0].rows].map(r => Number(r.cells[col].dataset.sort));
      th.click(); const up = read(); th.click(); const down = read();
      return {up, down, state: th.getAttribute("aria-sort")};
    })()""")
    assert len(order["up"]) > 5
    assert order["up"] == sorted(order["up"]) and order["down"] == sorted(order["down"], reverse=True)
    assert order["state"] == "descending"


def _print_view(page: Page, artifacts: Path) -> None:
    """The print stylesheet: no navigation bar, folded sections printed open, a PDF comes out."""
    page.browser.call("Emulation.setEmulatedMedia", {"media": "print"}, session=page.session)
    state = page.eval("""(() => {
      const closed = [...document.querySelectorAll("details:not([open])")];
      const inner = closed.map(d => [...d.children].find(c => c.tagName !== "SUMMARY")).filter(Boolean);
      return {toc: getComputedStyle(document.querySelector(".toc")).display, closed: closed.length,
              shown: inner.filter(c => c.getBoundingClientRect().height > 0).length, inner: inner.length};
    })()""")
    assert state["toc"] == "none"
    assert state["closed"] > 0 and state["shown"] == state["inner"], state
    page.browser.call("Emulation.setEmulatedMedia", {"media": ""}, session=page.session)
    pdf = page.pdf(artifacts / "report-healthy.pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 20_000


def test_report_reads_without_javascript(lab: tuple[LabInfo, Path], browser: Browser) -> None:
    """Scripts off: every section and the verdict are still there (collapsing is <details>)."""
    info, d = lab
    report = next((d / "transfer-stuck").glob("*/report.html"), None)
    if report is None:  # run alone
        set_fault(info.dir, "transfer-stuck")
        time.sleep(2.5)
        report = Path(capture(info.cluster_file, d / "nojs")[1]["report"])
    page = open_report(browser, report, scripts=False)
    try:
        check_page(page, report, "WEDGED")
        sections = page.eval("[...document.querySelectorAll('section')].map(s => s.id + ':' + "
                             "Math.round(s.getBoundingClientRect().height))")
        ids = [s.split(":")[0] for s in sections]
        # the diagnosis opens the banner, then the report's sections in their order
        assert ids == ["diagnosis", "topology", "timeline", "changes", "metrics", "requests", "history", "gpus",
                       "stacks", "config", "collection"]
        assert all(int(s.split(":")[1]) > 50 for s in sections), sections
        diag = page.eval("document.getElementById('diagnosis').innerText")
        assert diag.startswith("Diagnosis") and all(w in diag for w in ("stage", "side", "wedge")), diag
        assert page.eval("!!document.querySelector('#verdict #diagnosis')")  # inside the banner
        clicked = page.eval("(() => { const d = document.querySelector('details:not([open])');"
                            " d.querySelector('summary').click(); return d.open; })()")
        assert clicked is True  # <details> opens without any page script
    finally:
        page.close()
