"""Measure report pages in headless Chromium: page height and findings above the fold.

    python benchmarks/report_fold.py OUT_DIR NAME=REPORT.html [NAME=REPORT.html ...]

For each page at 1280x800: the document's scroll height, the findings in the verdict banner,
and how many of them show their title within the first 800 px (the fold). Writes a
first-screen screenshot OUT_DIR/NAME.png and prints one JSON line per page. Run it under
the e2e lock (`flock /tmp/pdforensics-e2e.lock ...`): it starts chromium.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.report

from tests.report.report_cdp import Browser  # noqa: E402

WIDTH, HEIGHT = 1280, 800
MEASURE = """(() => {
  const fold = innerHeight;
  const titles = [...document.querySelectorAll("#verdict .finding .f-title")]
    .filter(e => e.checkVisibility() && !e.closest("details:not([open])"));
  const above = titles.filter(e => e.getBoundingClientRect().bottom <= fold);
  const all = document.querySelectorAll("#verdict .finding").length;
  return {height: document.documentElement.scrollHeight, findings: all,
          shown_in_banner: titles.length, above_fold: above.length,
          keys_above_fold: above.map(e => e.parentElement.querySelector(".key").innerText)};
})()"""


def measure(browser: Browser, report: Path, shot: Path) -> dict[str, object]:
    page = browser.open(report.resolve().as_uri(), width=WIDTH, height=HEIGHT)
    try:
        result = dict(page.eval(MEASURE))
        page.screenshot(shot)
        return result
    finally:
        page.close()


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    browser = Browser()
    try:
        for item in argv[1:]:
            name, _, path = item.partition("=")
            result = measure(browser, Path(path), out / f"{name}.png")
            print(json.dumps({"name": name, **result}), flush=True)
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
