"""Log text from journald or a log file, bounded; signatures are matched offline."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, NORMAL, SLOW, Source, Target, register
from pdforensics.collectors.feeds import Feed
from pdforensics.collectors.feeds_beneath import kernel_events
from pdforensics.collectors.feeds_requests import log_hits_and_requests

LOG_BYTES = 8 * MIB
#: how far back a capture reads logs (journald's --since; the kernel rules' window too)
LOOKBACK = "-6h"


def log_file_of(t: Target) -> str:
    """The log file a service declares (endpoint-scoped log sources)."""
    assert t.service is not None and t.service.log_file
    return t.service.log_file


def unit_of(t: Target) -> str:
    """The systemd unit a unit-scoped log source reads."""
    assert t.unit is not None
    return t.unit


JOURNAL = register(Source(
    name="journal", description="journald lines of the service's unit (last 6 h, bounded)",
    scope="unit",
    build=lambda host, t: ("journalctl", f"--unit={unit_of(t)}", f"--since={LOOKBACK}", "--no-pager",
                           "-o", "short-iso", "-n", "100000"),
    timeout_s=10, max_bytes=LOG_BYTES, priority=NORMAL, parser="journal:scan_log_signatures",
    sample="log_journal_pd_wedge.txt", privileged=True, feeds=Feed("service.log_hits", log_hits_and_requests),
))

LOG_FILE = register(Source(
    name="log_file", description="tail of the service's log file (bounded)",
    scope="endpoint", build=lambda host, t: ("tail", "-c", str(LOG_BYTES), "--", log_file_of(t)),
    reads=lambda host, t: log_file_of(t), tail=True,
    timeout_s=10, max_bytes=LOG_BYTES, priority=NORMAL, parser="journal:scan_log_signatures",
    sample="log_compose_sglang.txt", privileged=True, feeds=Feed("service.log_hits", log_hits_and_requests),
))

# The kernel log, both ways: dmesg's ring buffer (may have wrapped; dmesg_restrict may refuse a
# non-root user) and journald's kernel lines of the look-back window (absent where journald
# keeps no kernel messages). The loader keeps the reading with the most events.
KERNEL_LOG = register(Source(
    name="kernel_log", description="kernel ring buffer (Xid, fallen off the bus, PCIe AER, OOM killer)",
    scope="host", build=lambda host, t: ("dmesg", "--time-format=iso"),
    timeout_s=8, max_bytes=4 * MIB, priority=SLOW, parser="kernel_log:parse_kernel_log",
    sample="nvsmi_xid_kernel.txt", privileged=True, feeds=Feed("host.kernel", kernel_events),
))

KERNEL_JOURNAL = register(Source(
    name="kernel_journal", description="journald kernel lines of the look-back window (journalctl -k)",
    scope="host", build=lambda host, t: ("journalctl", "-k", f"--since={LOOKBACK}", "--no-pager",
                                         "-o", "short-iso", "-n", "100000"),
    timeout_s=8, max_bytes=4 * MIB, priority=SLOW, parser="kernel_log:parse_kernel_log",
    sample="nvsmi_xid_kernel.txt", privileged=True, feeds=Feed("host.kernel", kernel_events),
))
