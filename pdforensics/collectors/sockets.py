"""Sockets: which process listens where, and in-flight connections per service port."""

from __future__ import annotations

from pdforensics.collectors.base import DISCOVERY, MIB, NORMAL, Runs, Source, register
from pdforensics.collectors.feeds import CAPTURE_LEVEL, Feed, first_ok

SS_LISTEN = register(Source(
    name="ss_listen", description="listening TCP sockets with owning processes (ss -ltnp)",
    scope="host", build=lambda host, t: ("ss", "-Hltnp"), timeout_s=5, max_bytes=4 * MIB,
    priority=DISCOVERY, parser="ss:parse_listening", sample="ss_listen_H.txt", privileged=True,
    feeds=Feed(f"{CAPTURE_LEVEL}.discovery"), retried=True,
))

SS_ESTABLISHED = register(Source(
    name="ss_established", description="established TCP connections (in-flight requests)",
    scope="host", build=lambda host, t: ("ss", "-Htn", "state", "established"),
    timeout_s=5, max_bytes=8 * MIB, priority=NORMAL, parser="ss:parse_established",
    sample="ss_established_H.txt", feeds=Feed("host.established", first_ok),
    runs=Runs.PER_HOST_DISCOVERED,
))
