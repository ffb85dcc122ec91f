"""Metrics and logs per server: --enable-metrics, the router's metrics port, where the log
goes and how far back it reaches, request-level logging."""

from __future__ import annotations

import time
from collections.abc import Iterator

from pdforensics.catalog.cmdline import flag_value, has_flag
from pdforensics.doctor.inputs import DoctorInput
from pdforensics.doctor.model import Check, fail, ok, warn
from pdforensics.parsers.logtime import find_stamp
from pdforensics.views.loaded import ServiceView

#: a log that starts after its server did (rotated) and reaches back less than this warns
SHORT_REACH_S = 3600.0


def server_checks(d: DoctorInput) -> Iterator[Check]:
    for h in d.hosts:
        for s in h.services:
            if s.kind == "router":
                yield _router_metrics(s)
            else:
                yield _metrics(s)
                yield _request_logging(s)
            yield _log(d, s)


def _sub(s: ServiceView) -> str:
    return f"{s.role}:{s.port}"


def _metrics(s: ServiceView) -> Check:
    if s.cmdline and not has_flag(s.cmdline, "--enable-metrics"):
        return fail("metrics_enabled", s.host, "started without --enable-metrics: /metrics is "
                    "empty, so no queue, progress or counter evidence", "add --enable-metrics to "
                    "the server's command line (and restart it)", subject=_sub(s))
    if not s.good_samples:
        return fail("metrics_enabled", s.host, f"/metrics on port {s.port} gave no samples",
                    "check that the server answers /metrics from this host's loopback",
                    subject=_sub(s))
    return ok("metrics_enabled", s.host, f"--enable-metrics; /metrics answered "
              f"({len(s.good_samples[0].snapshot or ())} series)", subject=_sub(s))


def _router_metrics(s: ServiceView) -> Check:
    if s.metrics_port is None:
        return fail("router_metrics", s.host, "no router metrics port known",
                    "start the router with --prometheus-port and set metrics_port for it "
                    "in the cluster file", subject=_sub(s))
    if not s.good_samples:
        return fail("router_metrics", s.host, f"router metrics port {s.metrics_port} gave no "
                    "samples", "check --prometheus-host/--prometheus-port of the router",
                    subject=_sub(s))
    return ok("router_metrics", s.host, f"router metrics on port {s.metrics_port} answered",
              subject=_sub(s))


def _request_logging(s: ServiceView) -> Check:
    if s.cmdline and has_flag(s.cmdline, "--log-requests"):
        level = flag_value(s.cmdline, "--log-requests-level") or "default"
        return ok("request_logging", s.host, f"--log-requests on (level {level})", subject=_sub(s))
    return warn("request_logging", s.host, "request-level logging off: a stuck request's rid "
                "cannot be followed through prefill and decode",
                "add --log-requests --log-requests-level 0 (metadata only) to the server",
                subject=_sub(s))


def _log(d: DoctorInput, s: ServiceView) -> Check:
    where = (f"file {s.log_file}" if s.log_file else f"journald unit {s.unit}" if s.unit else None)
    if where is None:
        return fail("log_source", s.host, "no log file or systemd unit known for this server: "
                    "the next capture reads no log", "set log_file for the service in the "
                    "cluster file, or run it as a systemd unit (journald)", subject=_sub(s))
    e = s.log_entry
    if e is None or not e.ok:
        why = (e.error or e.stderr.strip()[-200:] or f"exit {e.exit_status}") if e else "not read"
        return fail("log_source", s.host, f"{where} could not be read: {why}",
                    "make the log readable by the capture user (or use sudo = true)",
                    subject=_sub(s))
    text = d.capture.bundle.text(e) if e.path else ""
    start = _first_stamp(text)
    root = s.root
    began = root.info.start_epoch if root is not None else None
    if start is None:
        return ok("log_source", s.host, f"{where}: {e.bytes} bytes read, no dated line",
                  subject=_sub(s))
    reach = time.time() - start
    covers = began is not None and start <= began + 60 and not e.truncated
    extra = " (journald retention: SystemMaxUse/MaxRetentionSec)" if s.unit and not s.log_file else ""
    evidence = f"{where}: reaches back {reach / 3600:.1f} h" + (
        ", to the server's start" if covers else "") + extra
    if not covers and reach < SHORT_REACH_S:
        return warn("log_source", s.host, evidence + ": rotated or cut recently",
                    "keep more log: larger logrotate size/rotate count, or journald "
                    "SystemMaxUse / MaxRetentionSec", subject=_sub(s))
    return ok("log_source", s.host, evidence, subject=_sub(s))


def _first_stamp(text: str) -> float | None:
    """The first log time in the text (parsers/logtime.py: zone-less is UTC)."""
    for line in text.splitlines()[:200]:
        t = find_stamp(line)
        if t is not None:
            return t
    return None
