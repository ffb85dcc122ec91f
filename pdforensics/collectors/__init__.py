"""Collectors: declarative sources in one registry, one source family per module."""

from __future__ import annotations

from pdforensics.collectors import (
    beneath,
    clock,
    doctor,
    gpu,
    http,
    k8s,
    logs,
    proc,
    pyspy,
    request_log,
    router,
    sockets,
    systemd,
    versions,
)
from pdforensics.collectors.base import REGISTRY, Job, Source, Target

#: every source a capture may plan: the registry, and doctor's probes (no parser, no view)
SOURCES: tuple[Source, ...] = (*REGISTRY.values(), *doctor.PROBES)

__all__ = ["REGISTRY", "SOURCES", "Job", "Source", "Target", "beneath", "clock", "doctor", "gpu", "http", "k8s", "logs",
           "proc", "pyspy", "request_log", "router", "sockets", "systemd", "versions"]
