"""A tool's listing (a Markdown results table, ``ibv_devinfo -v``'s ``name: value`` fields) is
read as a log with no failure in it; a note in prose is still not a format triage reads."""

from __future__ import annotations

import json
from pathlib import Path

from pdforensics.triage.logs import tool_listing
from pdforensics.triage.read import detect_kind, read_text
from tests.support.diagnosis import diagnose_text

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"


def _lines(text: str) -> list[str]:
    return [ln for ln in text.split("\n") if ln.strip()]


def test_a_markdown_results_table_is_read_as_a_log() -> None:
    path = FIELD / "transfer_engine" / "uccl265-mooncake-bw-sweep.txt"  # Mooncake bandwidth sweep
    art = read_text(str(path), path.read_text(), path.stat().st_size)
    assert art.kind == "log" and art.error is None


def test_a_benchmark_s_settings_are_not_read_as_a_server_warming_up(tmp_path: Path) -> None:
    path = FIELD / "transfer_engine" / "nixl1695-nixlbench-vram-bw.log"  # nixlbench's settings
    d = diagnose_text(tmp_path, path.read_text(), "bench.log")
    assert d.stage == "not_applicable" and not any(c.key == "WARMUP" for c in d.clues)
    # the same word in an event a server reports still is one
    d = diagnose_text(tmp_path, "[2025-06-01 10:00:00] Start of prefill warmup ...\n", "p.log")
    assert any(c.key == "WARMUP" for c in d.clues)


def test_ibv_devinfo_fields_are_read_as_a_log() -> None:
    path = FIELD / "log" / "nccl769-roce-gid-table-linklocal.txt"  # tab-aligned GID table
    assert detect_kind(path.read_text()) == "log"


def test_the_shapes_it_takes_and_the_ones_it_does_not() -> None:
    table = "| size | GBps |\n| --- | ---: |\n| 256 | 0.1 |\n| 1024 | 0.4 |\n"
    assert tool_listing(_lines(table))
    nixlbench = ("Num iter (--num_iter=N)                     : 1008\n"
                 "Warmup iter (--warmup_iter=N)               : 112\n" + "-" * 60 + "\n\n"
                 "Block Size (B)      Batch Size     B/W (GB/Sec)   Avg Lat. (us)\n" + "-" * 60 +
                 "\n4096                1              0.195834       20.9\n"
                 "8192                1              0.293560       27.9\n")
    assert tool_listing(_lines(nixlbench))  # settings, rules, an aligned table of numbers
    limits = "core file size (blocks, -c) 0\nopen files: 1024\nmax locked memory: 64\nstack: 8192\n"
    assert tool_listing(_lines(limits))
    prose = ("the cluster was slow again: see attached\nwe restarted the decode pods and it came "
             "back for an hour or so before it stalled again\nany idea?\n")
    assert not tool_listing(_lines(prose))
    assert not tool_listing(_lines("a: 1\nb: 2\n"))  # two lines: too few to tell
    sentences = "\n".join(f"Note {i}: this is a long sentence with many words in it for sure ok"
                          for i in range(5))
    assert not tool_listing(_lines(sentences))  # a colon after a name, then prose
    http = "HTTP/1.1 200 OK\nServer: uvicorn\nDate: Wed, 02 Dec 2026\ncontent-length: 0\n"
    assert not tool_listing(_lines(http))  # an answer's headers are not a tool's listing
    assert detect_kind("the cluster was slow again, see attached\n") is None


def test_a_signature_s_words_in_a_setting_s_name_are_no_event(tmp_path: Path) -> None:
    """A settings listing or a results table naming "watchdog timeout" or "out of memory" read
    WEDGED with a critical SCHEDULER_WATCHDOG (found in session 5): a word in a setting's name
    is no event; the same words in a log line still are."""
    from click.testing import CliRunner

    from pdforensics.cli import main
    from pdforensics.parsers.journal import match_log_signatures

    settings = ("Num iter (--num_iter=N)                   : 1008\n"
                "Watchdog timeout (--timeout=N)            : 600\n"
                "Retries on failure (--retries=N)          : 3\n")
    table = ("| metric | value |\n| --- | --- |\n| requests failed | 0 |\n"
             "| watchdog timeout | 600 |\n| out of memory events | 0 |\n")
    for text in (settings, table):
        assert match_log_signatures(text) == ()
    (tmp_path / "settings.txt").write_text(settings)
    res = CliRunner().invoke(main, ["triage", "--json", str(tmp_path / "settings.txt")])
    doc = json.loads(res.output)
    assert doc["verdict"] != "WEDGED", doc["verdict"]
    assert not [f for f in doc["findings"] if f["severity"] == "critical"]
    line = "[2025-01-01 10:00:00] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)\n"
    assert [h.key for h in match_log_signatures(line)] == ["WATCHDOG_TIMEOUT"]
    header = "Exception in ModelTpServer:\n"  # a header ending in its colon is no setting
    assert match_log_signatures(header) != ()
