"""The reading does not depend on the order reader modules were imported in: readers run in
one fixed order (module, then place in the module), so which of two equally strong causes of
one line comes first is the same in every process (a test importing read_python first once
turned a collective-side reading into 'not established')."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LOG = Path(__file__).resolve().parent.parent / "data" / "field" / "log" / \
    "vllmomni6425-tcpstore-eaddrinuse-port-race.log"

_PROBE = """
import importlib, sys
for name in sys.argv[2:]:
    importlib.import_module("pdforensics.analysis.pdpath." + name)
from pdforensics.analysis.pdpath.sources import READERS
from tests.support.diagnosis import diagnose_text
import pathlib, tempfile
d = diagnose_text(pathlib.Path(tempfile.mkdtemp()), pathlib.Path(sys.argv[1]).read_text(), "x.log")
print(list(READERS)[0], d.stage, d.side, [c.key for c in d.labelled("cause")])
"""


def _reading(*first: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, str(LOG), *first], capture_output=True,
                         text=True, timeout=120, check=True,
                         cwd=Path(__file__).resolve().parent.parent.parent).stdout.split(" ", 1)
    return out


def test_the_same_reading_whatever_was_imported_first() -> None:
    plain = _reading()
    odd = _reading("read_stacks", "read_python", "read_sglang")
    assert plain[0] != odd[0]  # the registration order did differ
    assert plain[1] == odd[1] and "startup collective" in plain[1]
