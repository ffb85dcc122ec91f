"""Log text from journald or a log file, bounded; signatures are matched offline. The two
factories also make the router's log sources (collectors/router.py)."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, NORMAL, SLOW, Only, Runs, Source, Switch, Target, register
from pdforensics.collectors.feeds import Feed
from pdforensics.collectors.feeds_beneath import kernel_events
from pdforensics.collectors.feeds_requests import log_hits_and_requests
from pdforensics.model import HostSpec
from pdforensics.sglang.discovery import Discovery

LOG_BYTES = 8 * MIB
#: how far back a capture reads logs (journald's --since; the kernel rules' window too)
LOOKBACK = "-6h"


def no_log_file(host: HostSpec, d: Discovery, t: Target) -> bool:
    """A service that declares no log file logs to journald."""
    return t.service is not None and not t.service.log_file


def has_log_file(host: HostSpec, d: Discovery, t: Target) -> bool:
    return t.service is not None and bool(t.service.log_file)


def journal_source(name: str, description: str, lines: int, max_bytes: int, parser: str, sample: str,
                   feeds: Feed, only: Only = no_log_file) -> Source:
    """The journald lines of a service's unit (last 6 h, at most ``lines``), where the service
    declares no log file."""
    return register(Source(
        name=name, description=description, scope="unit",
        build=lambda host, t: ("journalctl", f"--unit={t.unit_name}", f"--since={LOOKBACK}", "--no-pager",
                               "-o", "short-iso", "-n", str(lines)),
        timeout_s=10, max_bytes=max_bytes, priority=NORMAL, parser=parser, sample=sample,
        privileged=True, feeds=feeds, runs=Runs.PER_UNIT, switch=Switch.LOGS, only=only,
    ))


def log_file_source(name: str, description: str, max_bytes: int, parser: str, sample: str,
                    feeds: Feed, runs: Runs = Runs.PER_SERVICE) -> Source:
    """The tail of the log file a service declares: read without a shell where the transport
    can, else `tail -c`."""
    return register(Source(
        name=name, description=description, scope="endpoint",
        build=lambda host, t: ("tail", "-c", str(max_bytes), "--", t.log_file),
        reads=lambda host, t: t.log_file, tail=True, redaction="log_tail",
        timeout_s=10, max_bytes=max_bytes, priority=NORMAL, parser=parser, sample=sample,
        privileged=True, feeds=feeds, runs=runs, switch=Switch.LOGS, only=has_log_file,
    ))


JOURNAL = journal_source("journal", "journald lines of the service's unit (last 6 h, bounded)", 100000,
                         LOG_BYTES, "journal:scan_log_signatures", "log_journal_pd_wedge.txt",
                         Feed("service.log_hits", log_hits_and_requests))

LOG_FILE = log_file_source("log_file", "tail of the service's log file (bounded)", LOG_BYTES,
                           "journal:scan_log_signatures", "log_compose_sglang.txt",
                           Feed("service.log_hits", log_hits_and_requests))

# The kernel log, both ways: dmesg's ring buffer (may have wrapped; dmesg_restrict may refuse a
# non-root user) and journald's kernel lines of the look-back window (absent where journald
# keeps no kernel messages). The loader keeps the reading with the most events.
KERNEL_LOG = register(Source(
    name="kernel_log", description="kernel ring buffer (Xid, fallen off the bus, PCIe AER, OOM killer)",
    scope="host", build=lambda host, t: ("dmesg", "--time-format=iso"),
    timeout_s=8, max_bytes=4 * MIB, priority=SLOW, parser="kernel_log:parse_kernel_log",
    sample="nvsmi_xid_kernel.txt", privileged=True, feeds=Feed("host.kernel", kernel_events),
    switch=Switch.GPU,
))

KERNEL_JOURNAL = register(Source(
    name="kernel_journal", description="journald kernel lines of the look-back window (journalctl -k)",
    scope="host", build=lambda host, t: ("journalctl", "-k", f"--since={LOOKBACK}", "--no-pager",
                                         "-o", "short-iso", "-n", "100000"),
    timeout_s=8, max_bytes=4 * MIB, priority=SLOW, parser="kernel_log:parse_kernel_log",
    sample="nvsmi_xid_kernel.txt", privileged=True, feeds=Feed("host.kernel", kernel_events),
    switch=Switch.GPU,
))
