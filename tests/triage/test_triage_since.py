"""`triage --since`: the window reaches the diagnosis, not only the rules. A decode log whose
KV transfers failed 40 to 20 minutes before its last line, then served batches: read whole, the
diagnosis names the transfer failure; read with --since 10m, the failure is history for the
rules and for the diagnosis alike (issue 33)."""

from __future__ import annotations

import calendar
import json
import time
from pathlib import Path

from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.triage.run import triage_paths
from pdforensics.views.window import Since

NOW = 1_800_000_000.0
FAILED = ("Decode transfer failed for request rank=0 req.rid='rid-{n}' req.bootstrap_room=77{n} "
          "with exception KVTransferError(bootstrap_room=77{n}): Request 77{n} timed out after "
          "300.0s in KVPoll.WaitingForInput")
BATCH = ("Decode batch, #running-req: 4, #token: 812, token usage: 0.02, cuda graph: True, "
         "gen throughput (token/s): 180.5, #queue-req: 0")


def _log(tmp_path: Path) -> Path:
    rows = [(NOW - 2400 + 10 * i, FAILED.format(n=i)) for i in range(120)]
    rows += [(NOW - 900 + 30 * i, BATCH) for i in range(31)]
    text = "".join(f"[{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(t))} TP0] {x}\n" for t, x in rows)
    path = tmp_path / "decode-0.log"
    path.write_text(text)
    return path


def _cites_failure(result_diagnosis: object) -> bool:
    clues = getattr(result_diagnosis, "clues", ())
    return any("timed out after 300.0s" in c.text or "Decode transfer failed" in c.text for c in clues)


def test_since_reaches_the_diagnosis(tmp_path: Path) -> None:
    path = str(_log(tmp_path))
    whole = triage_paths([path])
    assert whole.diagnosis is not None and _cites_failure(whole.diagnosis), whole.diagnosis
    windowed = triage_paths([path], Since("10m", seconds_before=600))
    assert windowed.diagnosis is not None
    assert not _cites_failure(windowed.diagnosis), windowed.diagnosis.clues
    assert windowed.analysis is not None
    assert "DECODE_TRANSFER_FAILED" not in {f.key for f in windowed.analysis.findings}


def test_since_through_the_cli(tmp_path: Path) -> None:
    path = str(_log(tmp_path))
    out = CliRunner().invoke(main, ["triage", path, "--json", "--since", "10m"])
    doc = json.loads(out.stdout)
    text = json.dumps(doc["diagnosis"])
    assert "timed out after 300.0s" not in text and "rid-1" not in text, text[:2000]
    whole = json.loads(CliRunner().invoke(main, ["triage", path, "--json"]).stdout)
    assert "timed out after 300.0s" in json.dumps(whole["diagnosis"])


def test_a_real_log_states_the_time_of_its_last_stamped_line() -> None:
    """The real SGLang 0.5.23 decode log of the field corpus: its last signature is stamped
    17:39:11, but it went on (a health check) to 17:39:13; --since counts back from there."""
    from pdforensics.triage.read import read_paths
    from pdforensics.triage.view import newest_time

    field = Path(__file__).resolve().parent.parent / "data" / "field" / "log"
    arts = read_paths(str(field / "real-sglang0523-decode-kv-wait-timeout.log"))
    last = calendar.timegm(time.strptime("2026-12-04 17:39:13", "%Y-%m-%d %H:%M:%S"))
    assert max(h.last_epoch or 0.0 for a in arts for h in a.log_hits) < last
    assert newest_time(arts) == last
