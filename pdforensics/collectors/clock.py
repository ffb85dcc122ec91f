"""The host's clock, read once through the transport: its offset from ours is the value
minus the midpoint of the round trip (feeds.clock_offset)."""

from __future__ import annotations

from pdforensics.collectors.base import DISCOVERY, KIB, Source, register
from pdforensics.collectors.feeds import Feed, clock_offset

CLOCK = register(Source(
    name="clock", description="the host's clock (date +%s.%N), for its offset from ours",
    scope="host", build=lambda host, t: ("date", "+%s.%N"), timeout_s=3, max_bytes=1 * KIB,
    priority=DISCOVERY, parser="clock:parse_epoch", sample="clock_date_epoch.txt",
    feeds=Feed("host.clock_offset_s", clock_offset),
))
