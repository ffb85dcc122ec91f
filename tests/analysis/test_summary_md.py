"""`analyze --format markdown` / `capture --markdown`: content, and host text that cannot
become markup, checked with GitHub's own renderer (cmarkgfm, raw HTML allowed so that only
our escaping stands between the text and the page)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import cmarkgfm
from click.testing import CliRunner
from cmarkgfm.cmark import Options
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.analysis.findings import Analysis, Evidence, Finding, Since
from pdforensics.analysis.summary_md import (
    BundleFacts,
    code,
    escape,
    markdown_summary,
    one_line,
    write_markdown,
)
from pdforensics.cli import main
from tests.analysis.test_merge import frozen_hop

PAYLOAD = ("x](http://evil.example/a) [click](javascript:alert(1)) <img src=x onerror=alert(1)> "
           "<script>alert(2)</script> ``` `tick` www.evil.example https://evil.example/p "
           "ops@evil.example *em* _u_ ~~s~~ &amp; ![i](http://evil.example/i.png)\n# HEADING\n- item")
EXTENSIONS = ["autolink", "strikethrough", "table", "tagfilter"]


def render(md: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(md, options=Options.CMARK_OPT_UNSAFE)


def no_markup_from_host(page: str) -> None:
    assert "<a " not in page and "<img" not in page and "<script" not in page
    assert "<h1" not in page and "<em>" not in page and "<del>" not in page


def planted() -> Analysis:
    ev = Evidence(f"host-{PAYLOAD}", "log", PAYLOAD, None)
    f = Finding("LOG_SIGNATURE", "warning", f"title {PAYLOAD}", (ev, f"plain {PAYLOAD}"),
                f"next step {PAYLOAD}", merged=("KV_TRANSFER_ERROR",))
    return Analysis("DEGRADED", (f,), (), f"DEGRADED: {PAYLOAD}", (f"missing {PAYLOAD}",),
                    since=Since(1_800_000_000.0, f"evidence {PAYLOAD}"),
                    mitigate=f"restart {PAYLOAD}", diagnose=f"look at {PAYLOAD}")


def test_host_text_cannot_become_a_link_html_or_a_heading() -> None:
    md = markdown_summary(planted(), BundleFacts(name=f"b-{PAYLOAD}", cluster=PAYLOAD,
                                                  report=PAYLOAD, status=PAYLOAD))
    page = render(md)
    no_markup_from_host(page)
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page  # shown as text
    # since, mitigate, diagnose, bundle and summary lines, the finding, its 2 evidence lines
    # and next step, 1 missing
    assert page.count("<li>") == 3 + 2 + 1 + 3 + 1
    # the planted line breaks made no line of their own
    assert not [ln for ln in md.splitlines() if ln.startswith(("# HEADING", "- item"))]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=80))
def test_a_code_span_shows_any_text_literally(text: str) -> None:
    page = render(code(text))
    m = re.fullmatch(r"<p><code>(.*)</code></p>\n", page, re.S)
    assert m, page
    assert html.unescape(m.group(1)) in (one_line(text), " ")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]()<>!*_`~&|\\@:/.wht mailo#-x1")), max_size=60))
def test_escaped_prose_never_renders_markup(text: str) -> None:
    page = render("- " + escape(text))
    no_markup_from_host(page)
    assert "<code>" not in page


def test_the_summary_of_a_wedge(builder: Any) -> None:
    a = frozen_hop(builder)
    md = markdown_summary(a, BundleFacts(name="bundle", cluster="lab", started_at=1_800_000_000,
                                         status="complete", report="/b/report.html"))
    lines = md.splitlines()
    assert lines[0] == "### pdforensics: **WEDGED** on `lab`"
    assert "- bundle: `bundle`, captured 2027-01-15 08:00:00 UTC, capture complete" in lines
    first = next(ln for ln in lines if ln.startswith("1. "))
    assert first.startswith("1. **critical** `DECODE_TRANSFER_STUCK` (merged: "
                            "`DECODE_PREALLOC_STUCK`, `PREFILL_INFLIGHT_STUCK`): `KV hop frozen")
    assert "   - `d decode:2 /metrics: num_decode_transfer_queue_reqs 14 → 14 → 14 over 4.0 s`" in lines
    assert any(ln.startswith("   - **Next:** Requests wait for KV cache") for ln in lines)
    assert sum(1 for ln in lines if re.match(r"\d\. \*\*", ln)) == 3
    assert re.search(r"^\d+ more findings? \(", md, re.M)
    assert lines[-1] == "Full report: `/b/report.html`; re-run offline: `pdforensics analyze bundle`"
    page = render(md)
    assert page.count("<ol>") == 1 and "<strong>WEDGED</strong>" in page


def test_analyze_format_markdown_and_the_capture_writer(builder: Any, tmp_path: Path) -> None:
    frozen_hop(builder)
    bundle = builder.root / "bundle"
    res = CliRunner().invoke(main, ["analyze", str(bundle), "--format", "markdown"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("### pdforensics: **WEDGED** on `synth`\n")
    assert "- bundle: `bundle`" in res.output and "`DECODE_TRANSFER_STUCK`" in res.output
    out = tmp_path / "summary.md"
    from pdforensics.analysis.engine import analyze
    from pdforensics.views.loaded import load_capture

    write_markdown(str(out), analyze(load_capture(bundle)), bundle, bundle / "report.html")
    text = out.read_text()
    assert text.splitlines()[0] == res.output.splitlines()[0]
    assert f"Full report: `{bundle / 'report.html'}`" in text
