"""The report rendered from synthetic bundles (real BundleWriter, real parsers, real rules)."""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.bundle.ondisk import verify_bundle
from pdforensics.diff.compare import Change
from pdforensics.report import REPORT_FILE, Baseline, render, write_report
from pdforensics.report.common import SECTIONS, href
from pdforensics.report.config_section import HIDDEN, flags_of
from pdforensics.report.write import raw_prefix
from pdforensics.views.loaded import load_capture
from tests.report.report_payload import PAYLOAD

SECTION_IDS = [sid for sid, _t in SECTIONS]


class Page(HTMLParser):
    """Ids, links, scripts, sources and visible text of one page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.links: list[str] = []
        self.sources: list[str] = []
        self.tags: list[str] = []
        self.scripts = 0
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
        for k in ("src", "srcset", "data", "poster", "action", "formaction"):
            if a.get(k):
                self.sources.append(f"{tag} {k}={a[k]}")
        if tag == "link":
            self.sources.append(f"link {a.get('href')}")
        if tag == "script":
            self.scripts += 1
        for k, v in a.items():
            if k.startswith("on"):
                self.sources.append(f"{tag} {k}={v}")

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def body(self) -> str:
        return " ".join(" ".join(self.text).split())


def section_html(page: str, sid: str) -> str:
    m = re.search(rf'<(section|header) id="{sid}".*?</\1>', page, re.S)
    assert m, f"no section {sid}"
    return m.group(0)


def text_of(fragment: str) -> str:
    return Page(fragment).body


# -- a complete wedged capture -----------------------------------------------------------------

def test_every_section_renders_in_order_self_contained(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=4, gpus=4, processes=8)
    out = write_report(bundle)
    assert out == bundle / REPORT_FILE
    text = out.read_text()
    page = Page(text)
    positions = [page.ids.index(sid) for sid in SECTION_IDS]
    assert positions == sorted(positions), "sections out of order"
    assert 'class="failed"' not in text, "a section builder crashed"
    assert page.scripts == 1 and page.sources == [], page.sources  # no src=, no <link>, no on*=
    assert not [link for link in page.links if re.match(r"[a-z]+:", link)]  # no http:, file:, data:
    css = re.search(r"<style>(.*?)</style>", text, re.S)
    assert css and "url(" not in css.group(1) and "@import" not in css.group(1)
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text)
    assert csp and html.unescape(csp.group(1)).startswith("default-src 'none'; style-src 'sha256-")
    assert "<style>" in text and "@media print" in text
    assert len(set(page.ids)) == len(page.ids), "duplicate element ids"
    for link in page.links:
        if link.startswith("#"):
            assert link[1:] in page.ids, f"dangling anchor {link}"
        else:
            assert (bundle / link).is_file(), f"raw link to a missing file: {link}"


def test_banner_has_verdict_capture_facts_and_linked_findings(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    text = write_report(bundle).read_text()
    banner = section_html(text, "verdict")
    words = text_of(banner)
    assert re.search(r'<div id="verdict-word" class="verdict-word">WEDGED</div>', banner)
    assert "synth" in words and "capture COMPLETE" in words and "2 hosts, 2 services" in words
    assert "captured 2027-01-15 07:59:59 UTC" in words
    first = re.search(r'<li class="finding sev-critical">.*?</li>\s*</ul>', banner, re.S)
    assert first, "no critical finding in the banner"
    assert "DECODE_TRANSFER_STUCK" in banner
    assert 'href="#metrics"' in banner  # the queue finding links to the section holding it
    assert re.search(r'href="raw/decode-0/metrics\.decode\.30001\.s\d\.http"', banner)
    assert "Next:" in words
    assert "14 → 14 → 14" in words


def test_topology_metrics_gpus_stacks_config_show_the_wedge(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=4, processes=6)  # tp 4: one decode rank leaves the other three
    text = write_report(bundle).read_text()
    topo = section_html(text, "topology")
    # /server_info hung while /health answered: the node is drawn hung, with the frozen progress
    assert "<svg" in topo and ">HUNG</text>" in topo and "no progress for 4.0 s" in topo
    metrics = section_html(text, "metrics")
    frozen_row = re.search(r'<tr class="frozen">\s*<td><code>sglang:generation_tokens_total</code>', metrics)
    assert frozen_row, "frozen progress counter not highlighted"
    assert re.search(r'<tr class=" rising">\s*<td><code>sglang:num_transfer_failed_reqs_total', metrics)
    assert metrics.count('<svg xmlns="http://www.w3.org/2000/svg" class="spark') >= 10
    gpus = section_html(text, "gpus")
    assert "Xid events" in gpus and "GPU has fallen off the bus" in gpus
    assert "IDLE, MEMORY HELD".lower() in text_of(gpus).lower()
    stacks = section_html(text, "stacks")
    assert "Outlier ranks" in stacks and "_wait_for_peers" in stacks
    assert re.search(r'<details class="bucket outlier[^"]*" open>', stacks)
    config = section_html(text, "config")
    assert re.search(r'<tr class="cfg-differs"><td><code>--chunked-prefill-size</code>', config) is None
    assert re.search(r'<tr class="cfg-differs"><td><code>SGLANG_DISAGGREGATION_WAITING_TIMEOUT</code>', config)
    assert re.search(r'<tr class="cfg-expected"><td><code>--disaggregation-mode</code>', config)


def test_collection_log_lists_every_manifest_row_with_raw_links(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    text = write_report(bundle).read_text()
    coll = section_html(text, "collection")
    rows = re.findall(r'<tr class="run-(\w+)">', coll)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert len(rows) == len(manifest["results"])
    assert rows.count("timeout") == 2  # /server_info hung on both servers
    for r in manifest["results"]:
        if r["path"] is not None:
            assert f'href="{r["path"]}"' in coll
    assert "timed out" in coll


# -- partial captures ---------------------------------------------------------------------------

def test_partial_capture_says_what_is_missing_and_why(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=3, gpus=2, processes=4, unreachable=1, cut=True)
    text = write_report(bundle).read_text()
    words = text_of(text)
    assert "capture PARTIAL" in words
    assert "prefill-1: unreachable" in words
    topo = text_of(section_html(text, "topology"))
    assert "prefill-1: not reachable ([Errno 111] Connection refused (port 22))" in topo
    assert "UNREACHABLE" in topo
    assert "not run: deadline reached" in topo  # /server_info never ran
    gpus = text_of(section_html(text, "gpus"))
    assert "prefill-1: host not reachable, no GPU data" in gpus
    stacks = text_of(section_html(text, "stacks"))
    assert "py-spy runs failed" in stacks or "no stack dumps" in stacks
    assert "not run: deadline reached" in stacks
    coll = section_html(text, "collection")
    assert coll.count("not run: deadline reached") == 2 * (1 + 2 * 2)
    assert "collector(s) not run before the deadline" in text_of(coll)
    changes = text_of(section_html(text, "changes"))
    assert "no baseline configured" in changes


def test_capture_without_services_or_logs_renders_every_section(tmp_path: Path,
                                                                synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=1, unreachable=1)
    text = write_report(bundle).read_text()
    assert 'class="failed"' not in text
    for sid in SECTION_IDS:
        section_html(text, sid)
    assert "UNKNOWN" in text_of(section_html(text, "verdict"))
    assert "no services captured" in text_of(section_html(text, "metrics"))
    assert "no stack dumps in this capture" in text_of(section_html(text, "stacks"))
    assert "no prefill or decode server captured" in text_of(section_html(text, "config"))


def test_a_crashing_section_is_reported_and_the_rest_renders(synth: Callable[..., Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import pdforensics.report.page as r

    def boom(_capture: object) -> None:
        raise ValueError("synthetic failure")

    monkeypatch.setattr(r, "build_gpus", boom)
    text = write_report(synth(hosts=2, gpus=4, processes=6)).read_text()
    gpus = text_of(section_html(text, "gpus"))
    assert "could not be built (ValueError: synthetic failure" in gpus
    assert "Outlier ranks" in section_html(text, "stacks")


def test_no_analysis_says_why(synth: Callable[..., Path]) -> None:
    cap = load_capture(synth(hosts=2, gpus=2, processes=4))
    text = render(cap, None, analysis_note="the analysis failed (KeyError: 'x')")
    banner = text_of(section_html(text, "verdict"))
    assert banner.startswith("UNKNOWN") and "No analysis: the analysis failed (KeyError: 'x')" in banner


def test_an_analysis_object_and_its_json_render_the_same(synth: Callable[..., Path]) -> None:
    from pdforensics.analysis.result_json import analysis_from_json, analysis_json

    cap = load_capture(synth(hosts=2, gpus=2, processes=4))
    a = analyze(cap)
    assert render(cap, a) == render(cap, analysis_from_json(analysis_json(a)))


# -- changes since baseline ---------------------------------------------------------------------

def _change(**kw: object) -> Change:
    base: dict[str, object] = {"scope": "decode-0/decode", "kind": "flag", "key": "--cuda-graph-max-bs",
                               "before": "160", "after": "256", "change": "changed", "score": 100,
                               "role": "decode"}
    base.update(kw)
    return Change(**base)  # type: ignore[arg-type]


def test_changes_since_baseline_table_and_timeline_lane(synth: Callable[..., Path]) -> None:
    cap = load_capture(synth(hosts=2, gpus=2, processes=4))
    changes = [_change(), _change(kind="env", key="NCCL_IB_HCA", before=None, after="<b>mlx5</b>",
                                  change="added", score=30, scope="prefill-0/prefill"),
               _change(scope="decode-0", kind="package", key="sglang", before="0.5.22",
                       after="0.5.23", score=90)]
    text = render(cap, analyze(cap), changes, Baseline("synth-20270114T000000Z", 1_799_900_000.0))
    sec = section_html(text, "changes")
    words = text_of(sec)
    assert "Baseline: synth-20270114T000000Z, taken 2027-01-14" in words
    assert "3 changes" in words and "no baseline configured" not in words
    rels = re.findall(r'<tr class="rel-(\w+)">', sec)
    assert rels == ["high", "high", "low"]  # most relevant first
    assert "&lt;b&gt;mlx5&lt;/b&gt;" in sec and "<b>mlx5" not in text
    assert "(absent)" in words
    timeline = section_html(text, "timeline")
    assert "changes since baseline" in timeline and 'class="mark change"' in timeline
    assert 'class="mark baseline"' in timeline
    # the decode flag took effect when decode-0's server started (after the baseline)
    assert re.search(r"1 change\(s\), took effect at the restart: decode-0/decode flag --cuda-graph-max-bs", timeline)


def test_no_changes_since_baseline_is_said(synth: Callable[..., Path]) -> None:
    cap = load_capture(synth(hosts=2, gpus=2, processes=4))
    sec = text_of(section_html(render(cap, None, [], Baseline("b0")), "changes"))
    assert "Baseline: b0. 0 changes" in sec and "Missing" not in sec


# -- escaping and secrets -----------------------------------------------------------------------

def test_planted_markup_is_escaped_everywhere(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4, payload=PAYLOAD)
    text = write_report(bundle).read_text()
    page = Page(text)
    assert page.scripts == 1 and "img" not in page.tags and page.sources == []
    assert "PWNED" not in re.sub(r"&#34;PWNED&#34;|&#39;PWNED&#39;", "", text)
    body = page.body
    for where in ("config", "metrics", "timeline"):
        assert PAYLOAD[:40] in text_of(section_html(text, where)), f"payload not shown as text in {where}"
    assert "{{7*7}}" in body and ">49<" not in text
    # where it came from: the flag, the env var, the log line, the metric label
    config = text_of(section_html(text, "config"))
    assert "--served-model-name" in config and "SGLANG_PLANTED" in config
    assert "model_name=" + PAYLOAD in text_of(section_html(text, "metrics"))
    assert "Decode transfer failed" in text_of(section_html(text, "timeline"))


def test_secrets_appear_only_as_markers(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    text = write_report(bundle).read_text()
    assert "hf_SyntheticSecretValue" not in text
    config = section_html(text, "config")
    assert re.search(r'<code>HF_TOKEN</code>.*?<code class="val secret">&lt;redacted:[0-9a-f]{10}&gt;</code>',
                     config, re.S)


def test_unredacted_secret_in_a_foreign_bundle_is_hidden(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    for env in bundle.glob("raw/*/environ.pid*.bin"):
        env.write_bytes(re.sub(rb"HF_TOKEN=[^\0]*", b"HF_TOKEN=plain-secret-value", env.read_bytes()))
    text = write_report(bundle).read_text()
    assert "plain-secret-value" not in text
    assert html.escape(HIDDEN) in text
    assert flags_of(["python", "-m", "sglang.launch_server", "--api-key", "abc123"], None) == {
        "--api-key": HIDDEN}
    assert flags_of(["python", "-m", "sglang.launch_server", "--api-key", "<redacted:0123456789>",
                     "--enable-metrics"], None) == {"--api-key": "<redacted:0123456789>",
                                                    "--enable-metrics": "(set)"}


def test_links_into_the_bundle_are_plain_relative_paths() -> None:
    assert href("", "raw/decode-0/ps.txt") == "raw/decode-0/ps.txt"
    assert href("../b/", "raw/a b/x#1.txt") == "../b/raw/a%20b/x%231.txt"
    for bad in ("javascript:alert(1)", "/etc/passwd", "raw/../../etc/passwd", "https://x/y", "", None,
                "raw//x", "\\\\host\\share"):
        assert href("", bad) is None, bad


# -- files and commands -------------------------------------------------------------------------

def test_report_inside_bundle_keeps_verify_passing(synth: Callable[..., Path]) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    assert verify_bundle(bundle) == []
    write_report(bundle)
    write_report(bundle)  # re-rendering replaces it atomically
    assert verify_bundle(bundle) == []
    assert sorted(p.name for p in bundle.iterdir() if p.name.startswith(".")) == []


def test_report_elsewhere_links_back_into_the_bundle(synth: Callable[..., Path], tmp_path: Path) -> None:
    bundle = synth(hosts=2, gpus=2, processes=4)
    out = write_report(bundle, tmp_path / "tickets" / "INC-1" / "report.html")
    assert raw_prefix(bundle, out).startswith("../../")
    page = Page(out.read_text())
    raw = [link for link in page.links if not link.startswith("#")]
    assert raw and all((out.parent / link).resolve().is_file() for link in raw)


def test_report_command(synth: Callable[..., Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pdforensics.cli import main

    bundle = synth(hosts=2, gpus=2, processes=4)
    base = synth(hosts=2, gpus=2, processes=4, wedged=False)
    runner = CliRunner()
    res = runner.invoke(main, ["report", str(bundle)])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == str(bundle / REPORT_FILE)
    out = tmp_path / "r.html"
    res = runner.invoke(main, ["report", str(bundle), "-o", str(out), "--baseline", str(base)])
    assert res.exit_code == 0, res.output
    sec = text_of(section_html(out.read_text(), "changes"))
    assert f"Baseline: {base.name}" in sec
    res = runner.invoke(main, ["report", str(tmp_path)])
    assert res.exit_code == 1
    assert res.output.count("\n") == 1 and "not a pdforensics bundle" in res.output


def test_capture_report_failure_is_one_warning(synth: Callable[..., Path],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import pdforensics.app.finish as finish

    def broken(*_a: object, **_k: object) -> Path:
        raise KeyError("template")

    monkeypatch.setattr(finish, "write_report", broken)
    bundle = synth(hosts=1, gpus=2, processes=4)
    done = finish.finish_bundle(bundle)
    assert done.report is None and done.analysis is not None  # the bundle and verdict are kept
    assert len(done.warnings) == 1 and done.warnings[0].startswith("report not written")
    assert "\n" not in done.warnings[0]


def test_templates_ship_as_package_data() -> None:
    """The templates live inside the package, and pyproject's package-data globs cover each of
    them (scripts/test_wheel.sh checks the built wheel itself)."""
    from importlib import resources

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # the project runs on 3.10 too (pyproject's tomli)
        import tomli as tomllib

    root = resources.files("pdforensics.templates")
    names = {p.name for p in root.iterdir()}
    assert {"report.html.j2", "macros.j2", "report.css", "report.js"} <= names
    cfg = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    setup = cfg["tool"]["setuptools"]
    assert setup["packages"]["find"]["include"] == ["pdforensics*"]
    globs = setup["package-data"]["*"]
    for name in names - {"__init__.py", "__pycache__"}:
        assert any(Path(name).match(g) for g in globs), f"{name} would not ship"


def test_report_takes_the_store_baseline(synth: Callable[..., Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from pdforensics.analysis.engine import analyze_path
    from pdforensics.cli import main
    from pdforensics.store import file_capture

    good = synth(hosts=2, gpus=2, processes=4, wedged=False)
    assert analyze_path(good).verdict == "HEALTHY"
    store = tmp_path / "store"
    file_capture(store, good)
    monkeypatch.setenv("PDFORENSICS_STORE", str(store))
    bad = synth(hosts=2, gpus=2, processes=4, payload="v2-model")
    res = CliRunner().invoke(main, ["report", str(bad)])
    assert res.exit_code == 0, res.output
    sec = section_html((bad / REPORT_FILE).read_text(), "changes")
    assert f"Baseline: {good.name} (the newest HEALTHY snapshot in the store)" in text_of(sec)
    keys = re.findall(r"<td><code>([^<]+)</code></td>", sec)
    assert "--served-model-name" in keys and "SGLANG_PLANTED" in keys


def test_config_says_when_the_servers_run_another_sglang_than_the_catalog(synth: Callable[..., Path]) -> None:
    same = text_of(section_html(write_report(synth(hosts=1, gpus=2, processes=4, wedged=False)).read_text(),
                                "config"))
    assert "catalog is for sglang" not in same
    other = synth(hosts=1, gpus=2, processes=4, wedged=False, sglang_version="0.5.9")
    sec = text_of(section_html(write_report(other).read_text(), "config"))
    assert "server runs sglang 0.5.9 but the catalog is for sglang 0.5.23" in sec
    assert "catalog build --from" in sec


def test_report_file_is_private_even_when_rendered_again(synth: Callable[..., Path]) -> None:
    out = write_report(synth(hosts=1, gpus=2, processes=4, wedged=False))
    assert out.stat().st_mode & 0o777 == 0o600


# -- a report that triages (issue 18) -----------------------------------------------------------

def test_the_frozen_hop_is_one_finding_in_the_banner(synth: Callable[..., Path]) -> None:
    banner = section_html(write_report(synth(hosts=2, gpus=2, processes=4)).read_text(), "verdict")
    keys = re.findall(r'<code class="key">(\w+)</code>', banner)
    assert keys.count("DECODE_TRANSFER_STUCK") == 1, keys
    assert "DECODE_PREALLOC_STUCK" not in keys and "PREFILL_INFLIGHT_STUCK" not in keys
    hop = re.search(r'<code class="key">DECODE_TRANSFER_STUCK</code>(.*?)<p class="next">', banner, re.S)
    assert hop, "no hop finding"
    words = text_of(hop.group(1))
    assert words.startswith("+ DECODE_PREALLOC_STUCK, PREFILL_INFLIGHT_STUCK KV hop frozen"), words
    assert "num_prefill_inflight_queue_reqs 9 → 9 → 9" in words  # the prefill side's evidence too


def test_in_flight_counts_the_pd_queues(synth: Callable[..., Path]) -> None:
    """running 12 + waiting 3 + transfer 14 + prealloc 2 on decode; 12 + 3 + inflight 9 on prefill."""
    topo = section_html(write_report(synth(hosts=2, gpus=2, processes=4)).read_text(), "topology")
    cells = dict(re.findall(r'<td>(\w+-\d)</td><td>\w+:\d+</td>.*?<td class="num">([^<]*)</td>', topo, re.S))
    assert cells == {"prefill-0": "24", "decode-0": "31"}, cells
    assert "in-flight 31" in topo and "in-flight 0" not in topo


def test_collection_log_folded_zero_series_folded_stuck_stacks_first(synth: Callable[..., Path]) -> None:
    text = write_report(synth(hosts=2, gpus=2, processes=4)).read_text()
    coll = section_html(text, "collection")
    assert coll.count('<details class="host-log"') == 2 and "open>" not in coll
    metrics = section_html(text, "metrics")
    folded = re.search(r'<details class="zero-series"><summary>1 series all zero in every sample</summary>'
                       r'(.*?)</details>', metrics, re.S)
    assert folded and "sglang:num_prefill_bootstrap_queue_reqs" in folded.group(1)
    assert metrics.count("sglang:num_prefill_bootstrap_queue_reqs") == 1  # not in the open table
    stacks = section_html(text, "stacks")
    classes = re.findall(r'<details class="bucket[^"]*"[^>]*>\s*<summary>.*?\[(\w+)', stacks, re.S)
    idle = {"queue_wait", "idle_loop", "sleep"}
    assert classes and classes[0] not in idle, classes
    first_idle = next(i for i, c in enumerate(classes) if c in idle)
    assert all(c in idle for c in classes[first_idle:]), classes


def test_a_host_without_gpus_is_not_a_failure(tmp_path: Path) -> None:
    from tests.support.builder import BundleBuilder

    b = BundleBuilder(tmp_path)
    b.add(host="d", role="decode", port=2, samples=[{"sglang:generation_tokens_total": i} for i in range(3)])
    b.no_gpu_hosts.append("router-0")
    text = write_report(b.write()).read_text()
    coll = section_html(text, "collection")
    assert len(re.findall(r'<tr class="run-absent">', coll)) == 3
    assert '<span class="pill run-absent">no GPU</span>' in coll
    assert "router-0</b> local · 3 runs</summary>" in coll  # no "not ok" in red
    gpus = section_html(text, "gpus")
    assert "No GPU on this host" in gpus and "router-0: no GPU data" not in text
