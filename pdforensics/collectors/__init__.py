"""Collectors: declarative sources in one registry, one source family per module."""

from __future__ import annotations

from pdforensics.collectors import (
    beneath,
    clock,
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

__all__ = ["REGISTRY", "Job", "Source", "Target", "beneath", "clock", "gpu", "http", "k8s", "logs", "proc", "pyspy",
           "request_log", "router",
           "sockets", "systemd", "versions"]
