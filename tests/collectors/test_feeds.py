"""The registry feeds the loaded capture: every source feeds a view, every view is read, and
a parsed/ reading decodes back to exactly what the parser returned."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path

import pytest

from pdforensics.bundle.ondisk import Bundle, ResultEntry
from pdforensics.collectors import REGISTRY
from pdforensics.collectors.feeds import CAPTURE_LEVEL, LOADED_LEVELS
from pdforensics.views.codec import to_jsonable
from pdforensics.views.loaded import HostView, ProcessView, ServiceView
from pdforensics.views.readings import PARSED_FORMAT, parse_output, read_parsed

DATA = Path(__file__).parent.parent / "data"
PKG = Path(__file__).parent.parent.parent / "pdforensics"
VIEWS = {"host": HostView, "service": ServiceView, "process": ProcessView}
# read while capturing (discovery.json) or by another command than analyze/report
CAPTURE_VIEWS = {"discovery", "sglang_source", "nvidia_versions"}
# where a view counts as read: rules, report sections, the diff (fixture writers excluded)
READERS = [p for d in ("analysis", "report", "diff") for p in (PKG / d).rglob("*.py")
           if p.name != "synthetic.py"]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_source_feeds_a_view(name: str) -> None:
    feed = REGISTRY[name].feeds
    assert feed is not None, f"{name} feeds no view: give it a Feed (see docs/architecture.md)"
    if feed.level == CAPTURE_LEVEL:
        assert feed.merge is None and feed.field in CAPTURE_VIEWS, feed
        return
    assert feed.level in LOADED_LEVELS and feed.merge is not None, feed
    fields = {f.name for f in dataclasses.fields(VIEWS[feed.level])}
    assert feed.field in fields, f"{name} feeds {feed.view}, not a field of the view"


def _loaded_views() -> set[tuple[str, str]]:
    return {(s.feeds.level, s.feeds.field) for s in REGISTRY.values()
            if s.feeds is not None and s.feeds.level in LOADED_LEVELS}


@pytest.mark.parametrize("view", sorted(_loaded_views()))
def test_every_view_is_read_by_a_rule_or_report(view: tuple[str, str]) -> None:
    attr = re.compile(rf"\.{view[1]}\b")
    readers = [p.relative_to(PKG).as_posix() for p in READERS if attr.search(p.read_text())]
    assert readers, f"{view[0]}.{view[1]} is collected and loaded but no rule or report reads it"


@pytest.mark.parametrize("name", sorted(n for n, s in REGISTRY.items() if s.parser))
def test_parsed_reading_round_trips(name: str, tmp_path: Path) -> None:
    src = REGISTRY[name]
    assert src.sample is not None
    data = (DATA / src.sample).read_bytes()
    want = parse_output(name, data)
    bundle, entry = _bundle(tmp_path, name, data, {
        "format": PARSED_FORMAT, "parser": src.parser,
        "raw_sha256": hashlib.sha256(data).hexdigest(), "parsed": to_jsonable(want)})
    got = read_parsed(bundle, entry, _no_raw)
    assert got.cached and got.error is None
    assert got.value == want


def _no_raw(entry: ResultEntry) -> bytes:
    raise AssertionError("a current parsed/ file must not be re-parsed from raw/")


def _bundle(tmp: Path, source: str, data: bytes, doc: object) -> tuple[Bundle, ResultEntry]:
    (tmp / "raw" / "h").mkdir(parents=True)
    (tmp / "parsed" / "h").mkdir(parents=True)
    (tmp / "raw" / "h" / f"{source}.txt").write_bytes(data)
    (tmp / "parsed" / "h" / f"{source}.json").write_text(json.dumps(doc))
    entry = ResultEntry(host="h", source=source, key=source, argv=("x",), url=None,
                        exit_status=0, duration_s=0.1, started_at=0.0, timed_out=False,
                        truncated=False, bytes=len(data),
                        sha256=hashlib.sha256(data).hexdigest(), path=f"raw/h/{source}.txt",
                        error=None)
    return Bundle(tmp, {}, (entry,)), entry


NVLINK = (DATA / "nvsmi_nvlink_errors.txt").read_bytes()


def _doc(**over: object) -> dict[str, object]:
    doc: dict[str, object] = {"format": PARSED_FORMAT, "parser": "nvidia_smi:parse_nvlink_errors",
                              "raw_sha256": hashlib.sha256(NVLINK).hexdigest(), "parsed": []}
    doc.update(over)
    return doc


@pytest.mark.parametrize("doc", [
    {"parsed": []},  # written by the previous version: no digest
    _doc(raw_sha256="0" * 64),  # stale: the raw file changed after it was parsed
    _doc(parser="nvidia_smi:parse_row_remapper"),  # another parser
    _doc(parsed=[{"index": "zero"}]),  # malformed: does not decode to the return type
    _doc(parsed={"not": "a list"}),
    "not an object",
])
def test_unusable_parsed_file_is_parsed_again_from_raw(doc: object, tmp_path: Path) -> None:
    bundle, entry = _bundle(tmp_path, "nvidia_smi_nvlink", NVLINK, doc)
    got = read_parsed(bundle, entry, bundle.read)
    assert not got.cached and got.value == parse_output("nvidia_smi_nvlink", NVLINK)
    assert got.value and got.value[0].links[5].counter("Replay Errors") == 1204


def test_current_parsed_file_is_used(tmp_path: Path) -> None:
    bundle, entry = _bundle(tmp_path, "nvidia_smi_nvlink", NVLINK, _doc())
    got = read_parsed(bundle, entry, _no_raw)
    assert got.cached and got.value == ()


def test_parse_error_kept_in_parsed_is_reported(tmp_path: Path) -> None:
    doc = _doc(error="not an nvidia-smi nvlink -e line: 'x'")
    del doc["parsed"]
    bundle, entry = _bundle(tmp_path, "nvidia_smi_nvlink", NVLINK, doc)
    got = read_parsed(bundle, entry, _no_raw)
    assert got.cached and got.value is None and got.error == doc["error"]
