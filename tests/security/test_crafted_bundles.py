"""A bundle is untrusted input: every path trick is refused by analyze, report, verify, diff
and timeline with one line naming the entry, nothing from outside reaches the output or
report.html, and nothing hangs (a FIFO, a device)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pdforensics.cli import main
from pdforensics.store.index import open_index
from pdforensics.views.loaded import load_capture
from tests.security.crafted import MARKER, TARGET, TRICKS, crafted, make_bundle, outside_file

NEEDS_ROOT = {"char-device"}
ENTRY_NAMES = ("cmdline.pid", "results[", "raw/h1", "outside")


def _own_environ() -> list[bytes]:
    """Entries of this process's /proc/self/environ that would give a leak away."""
    data = Path("/proc/self/environ").read_bytes()
    return [e for e in data.split(b"\0") if len(e) >= 12 and b"=" in e]


def _skip_unless_possible(trick: str) -> None:
    if trick in NEEDS_ROOT and os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _assert_refused(res: Result, bundle: Path, expect_exit: tuple[int, ...] = (1,)) -> None:
    out = res.output
    assert res.exit_code in expect_exit, out
    assert "Traceback" not in out
    assert MARKER not in out
    for entry in _own_environ():
        assert entry.decode(errors="replace") not in out, "the reader's own environment leaked"
    refusals = [ln for ln in out.splitlines() if "refused" in ln]
    assert refusals, out
    assert any(name in ln for ln in refusals for name in ENTRY_NAMES), refusals
    html = bundle / "report.html"
    if html.exists():
        assert MARKER not in html.read_text(errors="replace")


def test_clean_bundle_reads(tmp_path: Path) -> None:
    """The builder's bundle is sound: every command reads it, and its cmdline comes through."""
    b = make_bundle(tmp_path / "bundles")
    assert load_capture(b).hosts[0].processes[0].cmdline[-1] == "30001"
    assert _run("verify", str(b)).exit_code == 0
    assert _run("analyze", str(b)).exit_code == 0
    assert _run("report", str(b)).exit_code == 0
    assert "/models/m" in (b / "report.html").read_text()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trick", sorted(TRICKS))
@pytest.mark.parametrize("command", ["analyze", "report", "verify"])
def test_trick_is_refused(tmp_path: Path, trick: str, command: str) -> None:
    _skip_unless_possible(trick)
    bundle, _outside = crafted(tmp_path, trick)
    _assert_refused(_run(command, str(bundle)), bundle)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_diff_refuses_either_side(tmp_path: Path, trick: str) -> None:
    _skip_unless_possible(trick)
    bundle, _outside = crafted(tmp_path, trick)
    clean = make_bundle(tmp_path / "clean", port_flag="30002")
    _assert_refused(_run("diff", str(clean), str(bundle)), bundle)
    _assert_refused(_run("diff", str(bundle), str(clean)), bundle)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_timeline_skips_crafted_snapshot(tmp_path: Path, trick: str) -> None:
    """The store's timeline loads the incident's snapshots: the crafted one is named, refused."""
    _skip_unless_possible(trick)
    store = tmp_path / "store"
    healthy = make_bundle(store / "bundles", cluster="c", at=1_760_000_000.0)
    sick = make_bundle(store / "bundles", cluster="c", at=1_760_000_600.0, port_flag="30009")
    outside = outside_file(tmp_path)
    TRICKS[trick](sick, outside)
    with open_index(store) as index:
        for snap, verdict in ((healthy, "HEALTHY"), (sick, "WEDGED")):
            index.add(snap.name, "c", 1_760_000_000.0 + (600 if snap == sick else 0), verdict,
                      "complete", "snapshot", ["h1"], {})
    _assert_refused(_run("timeline", "--store", str(store)), sick, expect_exit=(0,))


@pytest.mark.parametrize("rel", ["manifest.json", "parsed/h1/discovery.json"])
@pytest.mark.parametrize("command", ["analyze", "report"])
def test_symlinked_json_documents_are_refused(tmp_path: Path, rel: str, command: str) -> None:
    bundle = make_bundle(tmp_path / "bundles")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"cluster": MARKER, "notes": [MARKER], "format": 1}))
    (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
    (bundle / rel).unlink(missing_ok=True)
    (bundle / rel).symlink_to(outside)
    res = _run(command, str(bundle))
    assert res.exit_code == 1, res.output
    assert MARKER not in res.output and "Traceback" not in res.output
    assert "refused" in res.output and rel.split("/")[-1] in res.output


def test_symlinked_history_costs_only_its_section(tmp_path: Path) -> None:
    """The Prometheus history is one report section: a link in its place is refused there,
    said in the page, and the rest of the report renders."""
    bundle = make_bundle(tmp_path / "bundles")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"format": 1, "prometheus": MARKER}))
    (bundle / "parsed" / "prometheus").mkdir()
    (bundle / "parsed" / "prometheus" / "history.json").symlink_to(outside)
    res = _run("report", str(bundle))
    assert res.exit_code == 0, res.output
    page = (bundle / "report.html").read_text()
    assert MARKER not in page and "history.json" in page and "refused" in page
    assert "/models/m" in page


def test_symlinked_analysis_json_is_refused_by_the_store(tmp_path: Path) -> None:
    """`baseline set` files a bundle and reads its analysis.json: a link is refused."""
    bundle = make_bundle(tmp_path / "bundles")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"verdict": "HEALTHY", "summary": MARKER}))
    (bundle / "analysis.json").symlink_to(outside)
    res = _run("baseline", "set", str(bundle), "--store", str(tmp_path / "store"))
    assert res.exit_code == 1 and "refused" in res.output and MARKER not in res.output, res.output


def test_store_import_never_copies_what_a_link_points_at(tmp_path: Path) -> None:
    bundle, _outside = crafted(tmp_path, "symlink-to-proc-environ")
    res = _run("baseline", "set", str(bundle), "--store", str(tmp_path / "store"))
    assert res.exit_code == 1 and TARGET in res.output and "symlink" in res.output, res.output
    copied = list((tmp_path / "store" / "bundles").rglob("*"))
    assert copied == [], copied


def test_report_never_embeds_the_responders_environment(tmp_path: Path) -> None:
    """The case that was found: a manifest path /proc/self/environ copied it into report.html."""
    bundle, _outside = crafted(tmp_path, "absolute-proc-environ")
    res = _run("report", str(bundle), "-o", str(tmp_path / "r.html"))
    assert res.exit_code == 1
    assert not (tmp_path / "r.html").exists()
    assert "/proc/self/environ" in res.output and "absolute" in res.output
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1, res.output


@pytest.mark.parametrize("command", ["analyze", "report", "diff"])
def test_a_host_body_nested_to_crash_the_reader(tmp_path: Path, command: str) -> None:
    """A raw /server_info body is host text, not a bundle document: JSON nested 100,000 deep
    is read as "not JSON", never a RecursionError traceback."""
    body = b"[" * 100_000 + b"]" * 100_000
    b = make_bundle(tmp_path / "b", server_info=body)
    clean = make_bundle(tmp_path / "clean", port_flag="30002", server_info=b'{"version": "0.5.9"}')
    args = [command, str(b)] if command != "diff" else ["diff", str(clean), str(b)]
    res = CliRunner().invoke(main, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trick", ["symlink", "fifo"])
def test_catalog_build_from_a_crafted_bundle(tmp_path: Path, trick: str) -> None:
    """`catalog build --from BUNDLE` reads the sglang source copy through the same reader."""
    bundle = make_bundle(tmp_path / "bundles")
    copy = bundle / "raw" / "h1" / "sglang_source.decode.30001.jsonl"
    if trick == "symlink":
        copy.symlink_to(outside_file(tmp_path))
    else:
        os.mkfifo(copy)
    res = _run("catalog", "build", "--from", str(bundle), "-o", str(tmp_path / "cat.json"))
    assert res.exit_code == 1, res.output
    assert "refused" in res.output and copy.name in res.output and MARKER not in res.output
    assert not (tmp_path / "cat.json").exists()
