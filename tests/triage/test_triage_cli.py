"""`pdforensics triage FILE...` through click's CliRunner: kinds, JSON shape, exit codes,
mixed good and bad files, stdin, a client dump beside /metrics, several scrapes of a server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.analysis.findings import Analysis, Finding
from pdforensics.analysis.result_json import analysis_json
from pdforensics.cli import main

DATA = Path(__file__).resolve().parent.parent / "data"

KINDS = {
    "pyspy_basic.txt": "stacks", "pyspy_locals.txt": "stacks", "pyspy_native.txt": "stacks",
    "pyspy_subprocesses.txt": "stacks", "pyspy_subprocesses_later.txt": "stacks",
    "pyspy_dump.json": "stacks", "pyspy_subprocesses.json": "stacks",
    "faulthandler_threads.txt": "stacks",
    "watchdog_sglang.log": "stacks", "watchdog_dp.log": "stacks", "watchdog_compose.log": "stacks",
    "pyspy_err_nopid.txt": "pyspy_error", "pyspy_err_notpython.txt": "pyspy_error",
    "pyspy_err_permission.txt": "pyspy_error",
    "go_sigquit.txt": "goroutines", "go_pprof_debug1.txt": "goroutines",
    "go_pprof_debug2.txt": "goroutines", "go_pprof_debug2_ancestors.txt": "goroutines",
    "prom_sglang_decode_wedged.txt": "metrics", "prom_sglang_prefill_healthy.txt": "metrics",
    "prom_sglang_openmetrics.txt": "metrics", "prom_router_gateway.txt": "metrics",
    "prom_malformed_mix.txt": "metrics", "http_metrics_response.txt": "metrics",
    "log_compose_sglang.txt": "log",
}
#: answers that are none of the kinds triage reads: reported with a reason, never analysed
NOT_EVIDENCE = ("http_health_response.txt", "http_h2_health.txt", "http_100_continue_503.txt")
# the shape `analyze --json` gives a finding, taken from the one JSON writer both use
FINDING_KEYS = set(analysis_json(Analysis("HEALTHY", (Finding("K", "info", "t", (), "n"),), (), "", ()))
                   ["findings"][0])


def triage(*args: str, stdin: str | None = None) -> tuple[int, dict[str, Any], str]:
    res = CliRunner().invoke(main, ["triage", "--json", *args], input=stdin)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    out = res.stdout if hasattr(res, "stdout") else res.output
    return res.exit_code, json.loads(out), res.stderr if hasattr(res, "stderr") else ""


@pytest.mark.parametrize("name,kind", sorted(KINDS.items()))
def test_each_sample_is_detected_by_its_content(name: str, kind: str) -> None:
    code, doc, _ = triage(str(DATA / name))
    f = doc["files"][0]
    assert (f["kind"], f["error"]) == (kind, None), f
    assert code == 0 and doc["verdict"] in ("WEDGED", "DEGRADED", "HEALTHY", "UNKNOWN")


def test_detection_does_not_rely_on_the_file_name(tmp_path: Path) -> None:
    for src, kind in (("go_sigquit.txt", "goroutines"), ("pyspy_basic.txt", "stacks"),
                      ("prom_sglang_decode_wedged.txt", "metrics"), ("log_compose_sglang.txt", "log")):
        renamed = tmp_path / f"attachment-{kind}.json"
        renamed.write_bytes((DATA / src).read_bytes())
        assert triage(str(renamed))[1]["files"][0]["kind"] == kind


def test_a_journal_log_with_an_embedded_dump_is_read_with_its_signatures() -> None:
    code, doc, _ = triage(str(DATA / "log_journal_pd_wedge.txt"))
    assert code == 0 and doc["files"][0]["kind"] in ("log", "stacks")
    sigs = [f for f in doc["findings"] if f["key"] == "LOG_SIGNATURE"]
    assert sigs and any("KV_BOOTSTRAP_TIMEOUT" in e["text"] for f in sigs for e in f["evidence"])


def test_a_cut_short_server_info_is_recognised_and_skipped() -> None:
    code, doc, _ = triage(str(DATA / "http_server_info_timeout.txt"))
    f = doc["files"][0]
    assert f["kind"] == "server_info" and "cut short" in f["error"]
    assert code == 1 and doc["verdict"] is None


@pytest.mark.parametrize("name", NOT_EVIDENCE)
def test_answers_that_are_not_evidence_are_reported_not_analysed(name: str) -> None:
    code, doc, _ = triage(str(DATA / name))
    assert code == 1 and doc["files"][0]["kind"] is None and doc["files"][0]["error"]


def test_model_info_is_a_load_document_that_proves_nothing_about_the_scheduler() -> None:
    code, doc, _ = triage(str(DATA / "http_model_info.txt"))
    f = doc["files"][0]
    assert code == 0 and f["kind"] == "load" and f["read"] == "model_info document"
    note = next(x for x in doc["findings"] if x["key"] == "LOAD_SNAPSHOT")
    assert note["severity"] == "info" and "without the scheduler" in json.dumps(note["evidence"])


def test_json_shape_matches_analyze() -> None:
    code, doc, _ = triage(str(DATA / "prom_sglang_decode_wedged.txt"), str(DATA / "watchdog_sglang.log"))
    assert code == 0
    assert {"files", "verdict", "findings"} <= set(doc)
    assert all(set(f) >= {"path", "kind", "error"} for f in doc["files"])
    assert doc["findings"] and all(set(f) == FINDING_KEYS for f in doc["findings"])
    assert {s["rule"] for s in doc["skipped"]} >= {"GPU_XID", "GPU_IDLE_WITH_WORK"}


def test_mixed_good_and_bad_files_exit_3_and_the_good_ones_are_analysed(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("the cluster was slow again, see attached\n")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    code, doc, _ = triage(str(junk), str(DATA / "go_sigquit.txt"), str(empty),
                          str(tmp_path / "missing.txt"))
    assert code == 3
    errors = {Path(f["path"]).name: f["error"] for f in doc["files"]}
    assert "not a format" in errors["notes.txt"] and errors["empty.log"] == "empty file"
    assert "cannot read" in errors["missing.txt"] and errors["go_sigquit.txt"] is None
    assert any(f["key"] == "CLIENT_BLOCKED" for f in doc["findings"])


def test_nothing_readable_exits_1_and_text_names_each_file(tmp_path: Path) -> None:
    junk = tmp_path / "a.txt"
    junk.write_text("hello\n")
    res = CliRunner().invoke(main, ["triage", str(junk)])
    assert res.exit_code == 1 and "a.txt" in res.output and "No file could be read" in res.output


def test_stdin_dash_is_read() -> None:
    code, doc, _ = triage("-", stdin=(DATA / "prom_sglang_decode_wedged.txt").read_text())
    assert code == 0 and doc["files"][0] == {"path": "-", "kind": "metrics", "error": None,
                                             "read": "1 scrape(s), 58 samples"}


def test_a_client_dump_is_set_beside_the_servers_in_flight_counts() -> None:
    code, doc, _ = triage(str(DATA / "prom_sglang_decode_wedged.txt"), str(DATA / "go_sigquit.txt"))
    assert code == 0
    client = next(f for f in doc["findings"] if f["key"] == "CLIENT_BLOCKED")
    texts = [e["text"] for e in client["evidence"]]
    assert any("net/http roundTrip" in t for t in texts)
    assert any("decode transfer queue" in t for t in texts)  # the server's in-flight count


def test_two_scrapes_in_two_files_are_two_samples_in_file_order() -> None:
    wedged = str(DATA / "prom_sglang_decode_wedged.txt")
    code, doc, _ = triage(wedged, wedged)
    keys = {f["key"] for f in doc["findings"]}
    assert code == 0 and doc["verdict"] == "WEDGED" and "DECODE_TRANSFER_STUCK" in keys
    assert any("without a time" in n for n in doc["notes"])


def test_two_scrapes_in_one_file_are_ordered_by_their_date_headers(tmp_path: Path) -> None:
    one = (DATA / "http_metrics_response.txt").read_text()
    later = one.replace("10:45:02", "10:45:07")
    pasted = tmp_path / "scrapes.txt"
    pasted.write_text(later + "\n" + one)  # pasted newest first
    code, doc, _ = triage(str(pasted))
    assert doc["files"][0]["read"].startswith("2 scrape(s)") and not doc["notes"]
    ev = [e["text"] for f in doc["findings"] for e in f["evidence"]]
    assert any("over 5.0 s" in t for t in ev), ev


def test_curl_verbose_and_date_lines_are_peeled(tmp_path: Path) -> None:
    body = (DATA / "prom_sglang_decode_wedged.txt").read_text()
    verbose = ("*   Trying 127.0.0.1:30001...\n> GET /metrics HTTP/1.1\n> Host: x\n>\n"
               "< HTTP/1.1 200 OK\n< date: Wed, 02 Dec 2026 10:45:02 GMT\n<\n{ [58 bytes data]\n")
    f = tmp_path / "v.txt"
    f.write_text(f"$ date\nWed Dec  2 10:44:50 UTC 2026\n$ curl -s localhost:30001/metrics\n{body}"
                 f"$ sleep 10; curl -v localhost:30001/metrics\n{verbose}{body}"
                 "* Connection #0 to host 127.0.0.1 left intact\n")
    code, doc, _ = triage(str(f))
    assert code == 0 and doc["files"][0]["read"] == "2 scrape(s), 116 samples"
    ev = [e["text"] for x in doc["findings"] for e in x["evidence"]]
    assert any("over 12.0 s" in t for t in ev), ev


def test_capture_help_lists_client_dump() -> None:
    res = CliRunner().invoke(main, ["capture", "--help"])
    assert res.exit_code == 0 and "--client-dump" in res.output


def test_a_pyspy_failure_pasted_under_its_command_line_is_a_pyspy_error(tmp_path: Path) -> None:
    f = tmp_path / "ticket.txt"
    f.write_text("$ sudo py-spy dump --pid 4242\n" + (DATA / "pyspy_err_permission.txt").read_text())
    code, doc, _ = triage(str(f))
    assert code == 0 and doc["files"][0]["kind"] == "pyspy_error"
    finding = next(x for x in doc["findings"] if x["key"] == "PYSPY_UNAVAILABLE")
    assert "permission" in finding["title"] and "CAP_SYS_PTRACE" in finding["next_step"]


def test_a_log_saying_timed_out_is_a_log_not_a_pyspy_failure(tmp_path: Path) -> None:
    f = tmp_path / "app.log"
    f.write_text("2026-12-02T10:20:28+0000 gpu-a app[1]: request timed out after 30s\n"
                 "2026-12-02T10:20:29+0000 gpu-a app[1]: Error: upstream closed\n")
    assert triage(str(f))[1]["files"][0]["kind"] == "log"


def test_a_log_starting_with_a_bracketed_rank_is_not_pyspy_json(tmp_path: Path) -> None:
    f = tmp_path / "decode.log"
    f.write_text("[ TP0] Decode transfer failed for request rank=0 decode_req.req.rid='ab' "
                 "with exception KVTransferError(bootstrap_room=1): Request 1 timed out after "
                 "300.0s in KVPoll.WaitingForInput\n")
    code, doc, _ = triage(str(f))
    assert code == 0 and doc["files"][0]["kind"] == "log"
    assert any(x["key"] == "LOG_SIGNATURE" for x in doc["findings"])


def test_a_watchdog_log_whose_dumps_all_failed_is_a_pyspy_error_with_its_signatures(
        tmp_path: Path) -> None:
    f = tmp_path / "decode.log"
    f.write_text("[2026-12-02 10:20:20 TP0] Watchdog timeout (self.watchdog_timeout=300)\n"
                 "[2026-12-02 10:20:24 TP0] Pyspy failed to dump PID 7298. Error: "
                 "/bin/sh: 1: py-spy: not found\n")
    code, doc, _ = triage(str(f))
    assert code == 0 and doc["files"][0]["kind"] == "pyspy_error"
    keys = {x["key"] for x in doc["findings"]}
    assert keys >= {"PYSPY_UNAVAILABLE", "LOG_SIGNATURE"}
    py = next(x for x in doc["findings"] if x["key"] == "PYSPY_UNAVAILABLE")
    assert "7298" in py["evidence"][0]["text"]


def test_a_directory_is_reported_and_the_rest_analysed(tmp_path: Path) -> None:
    code, doc, _ = triage(str(tmp_path), str(DATA / "pyspy_basic.txt"))
    assert code == 3 and "cannot read" in doc["files"][0]["error"]
    assert doc["files"][1]["kind"] == "stacks"


def test_as_its_own_process_triage_ends_at_once_with_its_output_whole_and_its_code(
        tmp_path: Path) -> None:
    """The command line leaves without tearing its heap down (cli/exiting.py): stdout and
    stderr still arrive whole, through a pipe and into a file, and the exit code is kept."""
    import subprocess
    import sys

    junk = tmp_path / "notes.txt"
    junk.write_text("the cluster was slow again\n")
    args = [sys.executable, "-m", "pdforensics", "triage", "--json", str(junk),
            str(DATA / "go_sigquit.txt")]
    piped = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert piped.returncode == 3, piped.stderr
    doc = json.loads(piped.stdout)  # the whole document: a cut one would not parse
    assert any(f["key"] == "CLIENT_BLOCKED" for f in doc["findings"])
    assert "skipped" in piped.stderr and "notes.txt" in piped.stderr
    out = tmp_path / "out.json"
    with out.open("w") as fh:
        into_file = subprocess.run(args, stdout=fh, stderr=subprocess.PIPE, timeout=120)
    assert into_file.returncode == 3 and json.loads(out.read_text()) == doc


def test_under_a_test_runner_triage_exits_by_system_exit() -> None:
    """CliRunner replaces the streams: the process must not end there (this test would die
    with it); the exit code still reaches the runner."""
    res = CliRunner().invoke(main, ["triage", str(DATA / "go_sigquit.txt")])
    assert res.exit_code == 0 and "VERDICT" in res.output
