"""The live progress names the phase a host is in, by what it runs, and never goes back: a
/metrics sample (planned at discovery's priority, for its spacing) taken while the host dumps
stacks does not show "discovery"."""

from __future__ import annotations

import io

from pdforensics.capture.progress import LiveProgress, phase_name
from pdforensics.collectors.base import CHEAP, DISCOVERY, SLOW, STACKS


def test_phase_is_named_by_the_source_family() -> None:
    assert phase_name(DISCOVERY, "ps") == "discovery"
    assert phase_name(DISCOVERY, "metrics") == "metrics"  # samples run at discovery's priority
    assert phase_name(STACKS, "pyspy") == "stacks"
    assert phase_name(SLOW, "nvidia_smi_query") == "GPUs"
    assert phase_name(CHEAP, "log_file") == "logs"


def test_a_late_sample_does_not_send_the_host_back_to_discovery() -> None:
    out = io.StringIO()
    live = LiveProgress(out, ["decode-0"], 30.0)
    try:
        live.tick("decode-0", "ps", DISCOVERY, 1, 9)
        live.tick("decode-0", "pyspy", STACKS, 5, 20)
        live.tick("decode-0", "metrics", DISCOVERY, 6, 20)  # sample 3, due late
        row = live.render()[1]
    finally:
        live.close()
    assert "stacks" in row and "discovery" not in row and "metrics" not in row, row
