"""A host whose process table could not be read: a gap, never 'no server process found'."""

from __future__ import annotations

import json
from pathlib import Path

from pdforensics.analysis.engine import analyze, format_analysis_text
from pdforensics.views.loaded import load_capture
from tests.support.builder import BundleBuilder
from tests.support.bundles import T0

PS_ERROR = "timeout: failed to run command 'ps': No such file or directory"


def _without_processes(builder: BundleBuilder, ps_exit: int) -> Path:
    """A declared decode service whose process was not found, and the host's ps result; a
    prefill host beside it whose processes were listed (so the rule runs at all)."""
    builder.add(host="prefill-0", role="prefill", port=30000)
    builder.add(host="decode-0", role="decode", port=30001,
                samples=[{"sglang:num_running_reqs": 0}, {"sglang:num_running_reqs": 0}])
    b = builder.write()
    disc_path = b / "parsed" / "decode-0" / "discovery.json"
    disc = json.loads(disc_path.read_text())
    disc["processes"] = []
    for s in disc["services"]:
        s.update(root_pid=None, pids=[])
    disc_path.write_text(json.dumps(disc))
    m = json.loads((b / "manifest.json").read_text())
    (b / "raw" / "decode-0" / "ps.txt").write_bytes(b"" if ps_exit else b"  PID ARGS\n    1 init\n")
    m["results"].append({"host": "decode-0", "source": "ps", "key": "ps", "argv": ["timeout", "ps"],
                         "url": None, "exit_status": ps_exit, "duration_s": 0.01, "started_at": T0,
                         "timed_out": False, "truncated": False, "bytes": 0, "sha256": None,
                         "path": "raw/decode-0/ps.txt", "error": None,
                         "stderr": PS_ERROR + "\n" if ps_exit else "", "target": {}})
    (b / "manifest.json").write_text(json.dumps(m))
    return b


def test_missing_ps_is_a_gap_not_a_critical(builder: BundleBuilder) -> None:
    a = analyze(load_capture(_without_processes(builder, 127)))
    assert not [f for f in a.findings if "no server process found" in f.title], a.findings
    gap = [m for m in a.missing if m.startswith("process table of decode-0")]
    assert gap and PS_ERROR in gap[0], a.missing
    assert "ps failed" in format_analysis_text(a)


def test_with_a_working_ps_the_absent_server_is_still_critical(builder: BundleBuilder) -> None:
    a = analyze(load_capture(_without_processes(builder, 0)))
    found = [f for f in a.findings if "no server process found" in f.title]
    assert found and found[0].severity == "critical", a.findings
    assert not [m for m in a.missing if m.startswith("process table of")]
