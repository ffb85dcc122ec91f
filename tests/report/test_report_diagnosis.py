"""The diagnosis opens the report's banner, `analyze`'s text and the Markdown summary; its
evidence links into the bundle; host text in it stays text; analysis.json round-trips it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze, format_analysis_text
from pdforensics.analysis.pdpath.codec import diagnosis_from_json, diagnosis_json
from pdforensics.analysis.result_json import analysis_from_json, analysis_json
from pdforensics.analysis.summary_md import BundleFacts, markdown_summary
from pdforensics.errors import BundleError
from pdforensics.report import write_report
from pdforensics.views.loaded import load_capture
from tests.report.report_payload import PAYLOAD
from tests.report.test_report_render import Page, section_html, text_of


def test_the_banner_opens_with_the_diagnosis_and_links_its_evidence(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    text = write_report(bundle).read_text()
    banner = section_html(text, "verdict")
    diag = section_html(banner, "diagnosis")
    assert banner.index('id="diagnosis"') < banner.index('class="findings top"')
    words = text_of(diag)
    assert "Diagnosis" in words and "stage" in words and "side" in words and "wedge" in words
    links = Page(diag).links
    assert links and all(re.match(r"raw/[\w.-]+/", link) for link in links), links
    for link in links:
        assert (bundle / link).is_file()


def test_host_text_in_the_diagnosis_is_text(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4, payload=PAYLOAD)
    text = write_report(bundle).read_text()
    page = Page(text)
    assert page.scripts == 1 and "img" not in page.tags and page.sources == []
    diag = section_html(section_html(text, "verdict"), "diagnosis")
    assert "<img" not in diag and "PWNED" not in re.sub(r"&#34;PWNED&#34;|&#39;PWNED&#39;", "", diag)


def test_analyze_text_and_markdown_put_the_diagnosis_first(synth: Callable[..., Path]) -> None:
    a = analyze(load_capture(synth(hosts=2, gpus=2, processes=4, payload=PAYLOAD)))
    assert a.diagnosis is not None
    out = format_analysis_text(a)
    assert out.index("DIAGNOSIS") < out.index("[CRITICAL]")
    assert "\x1b" not in out and "stage:" in out and "check next:" in out
    md = markdown_summary(a, BundleFacts("b0"))
    assert md.index("**Diagnosis**") < md.index("**Top findings**")
    assert "<img" not in md.replace("`", "") or all(  # host text only inside code spans
        "<img" not in line or "`" in line for line in md.splitlines())


def test_analysis_json_round_trips_the_diagnosis(synth: Callable[..., Path]) -> None:
    a = analyze(load_capture(synth(hosts=2, gpus=2, processes=4)))
    doc = json.loads(json.dumps(analysis_json(a)))
    assert doc["diagnosis"]["stage"] == a.diagnosis.stage  # type: ignore[union-attr]
    assert analysis_from_json(doc) == a


@pytest.mark.parametrize("edit, why", [
    ({"stage": "anywhere"}, "unknown stage"),
    ({"chain": [{"cause": 0, "consequence": 999, "why": "x"}]}, "points nowhere"),
])
def test_a_crafted_diagnosis_is_one_error_line(synth: Callable[..., Path], edit: dict[str, object],
                                               why: str) -> None:
    a = analyze(load_capture(synth(hosts=2, gpus=2, processes=4)))
    assert a.diagnosis is not None
    doc = diagnosis_json(a.diagnosis) | edit
    with pytest.raises(BundleError, match=why):
        diagnosis_from_json(doc, "analysis.json diagnosis")


def test_bootstrap_rooms_beyond_2_53_round_trip_and_longer_numbers_are_not_rooms() -> None:
    """Mooncake's bootstrap rooms are random uint64s (571372754643025550 was seen in the lab):
    analysis.json keeps them exactly; a number past 64 bits in a log line is not a room."""
    from pdforensics.analysis.pdpath.read_sglang import ids
    from pdforensics.bundle.schema import validate_analysis

    big = 571372754643025550
    _rids, rooms = ids(f"Request {big} timed out; bootstrap_room={2**64 - 1} bootstrap_room={10**25}")
    assert rooms == (big, 2**64 - 1)
    clue = {"key": "K", "label": "cause", "text": "t", "rooms": list(rooms)}
    doc = {"diagnosis": {"stage": "transfer", "side": "decode", "root_cause": "x", "confidence": "low",
                         "headline": "h", "clues": [clue]}}
    assert json.loads(json.dumps(validate_analysis(doc)))["diagnosis"]["clues"][0]["rooms"] == [big, 2**64 - 1]
    clue["rooms"] = [2**64]
    with pytest.raises(BundleError, match="64-bit bootstrap room"):
        validate_analysis(doc)
