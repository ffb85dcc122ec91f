"""One reader of log times: the same capture, analysed on a machine in UTC and on one in Tokyo,
gives the same times (a time without a zone is read as UTC everywhere, parsers/logtime.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pdforensics.parsers.logtime import find_stamp, parse_log_timestamp, read_stamp

# SGLang's own log: its prefix carries no zone; the watchdog embeds a py-spy dump
LOG = """\
[2026-01-29 13:12:30 TP0] Decode batch. #running-req: 5, #token: 9000, token usage: 0.40, #queue-req: 3
[2026-01-29 13:12:37 TP1] Pyspy dump for PID 1003:
Process 1003: sglang::scheduler_TP1
Python v3.12.3 (/usr/bin/python3.12)

Thread 1003 (idle): "MainThread"
    all_reduce (parallel_state.py:120)
    event_loop_normal (scheduler.py:900)

[2026-01-29 13:12:40 TP0] Decode transfer failed for request rank=0 rid='r1' with exception KVTransferError
[2026-01-29 13:12:41 TP0] Watchdog timeout (self.watchdog_timeout=300)
"""

SCRIPT = """
import json, sys
from pdforensics.analysis.engine import analyze
from pdforensics.analysis.log_stacks import log_dumps
from pdforensics.analysis.result_json import analysis_json
from pdforensics.views.loaded import load_capture
cap = load_capture(sys.argv[1])
doc = {"hits": sorted((h.key, h.first_epoch, h.last_epoch) for s in cap.services() for h in s.log_hits),
       "log_dumps": sorted(d.taken_at for d in log_dumps(cap)),
       "analysis": analysis_json(analyze(cap))}
print(json.dumps(doc, default=str))
"""


def _times_under(tz: str, bundle: Path) -> dict[str, Any]:
    env = {**os.environ, "TZ": tz}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(bundle)], capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_the_same_capture_gives_the_same_times_in_utc_and_in_tokyo(builder: Any) -> None:
    builder.add(host="d", role="decode", port=2, samples=[{"sglang:generation_tokens_total": 100}] * 2,
                log=LOG)
    bundle = builder.write()
    utc, tokyo = _times_under("UTC", bundle), _times_under("Asia/Tokyo", bundle)
    assert utc["log_dumps"] and utc["hits"], utc
    assert utc == tokyo
    stamp = 1769692357.0  # 2026-01-29 13:12:37 read as UTC
    assert utc["log_dumps"] == [stamp]


def test_the_zone_rule() -> None:
    """A time with a zone is read in it; a time without one is UTC."""
    t = 1769692357.0
    assert read_stamp("2026-01-29 13:12:37") == t
    assert read_stamp("2026-01-29T13:12:37Z") == t
    assert read_stamp("2026-01-29T22:12:37+09:00") == t
    assert read_stamp("2026-01-29 13:12:37,250") == t + 0.25
    assert read_stamp("not a time") is None and read_stamp(None) is None
    assert parse_log_timestamp("[2026-01-29 13:12:37 TP1] x") == t
    assert parse_log_timestamp("2026-01-29T14:12:37+0100 host sglang[1]: x") == t
    assert find_stamp("I1229 launch at 2026-01-29 13:12:37 on node") == t
