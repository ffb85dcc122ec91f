"""The readings beneath SGLang gathered from a capture (bundle or triage) for the rules:
per server world the torch NCCL watchdog records of all its ranks (across hosts), NCCL and
transfer-engine lines per service log, kernel logs per host, Flight Recorder dumps, RAS
reports and cuda-gdb listings -- each with the file (and line) it came from.

A *world* is one SGLang server: its ranks share process groups, so their SeqNums compare. A
server spread over several hosts (multi-node TP) is one world: services of one role and port;
prefill and decode are separate worlds, never compared.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pdforensics.analysis.findings import Evidence
from pdforensics.parsers.beneath import Beneath
from pdforensics.parsers.cuda_gdb import CudaKernel
from pdforensics.parsers.flight_recorder import FrDump
from pdforensics.parsers.kernel_log import KernelLog
from pdforensics.parsers.nccl_watchdog import WatchdogRecord
from pdforensics.views.loaded import HostView, LoadedCapture, ProcessView, ServiceView


@dataclass(frozen=True)
class LogReading:
    """One service's log as read beneath SGLang."""

    service: ServiceView
    beneath: Beneath
    path: str | None  # the log's raw file (bundle-relative) or the loose file

    def evidence(self, source: str, lineno: int, text: str) -> Evidence:
        """A line of this log as evidence: ``file:line`` and the line in the text, the file
        as the link (as the other log rules write it)."""
        where = f"{self.path}:{lineno}" if self.path else f"line {lineno}"
        return Evidence(self.service.host, source, f"{where} {text[:300]}", self.path)


@dataclass(frozen=True)
class World:
    """One server's ranks: its name and every watchdog record with the log it is in."""

    name: str  # "decode:30001", "triage file x.log"
    role: str | None
    records: tuple[tuple[WatchdogRecord, LogReading], ...]

    def plain(self) -> tuple[WatchdogRecord, ...]:
        return tuple(r for r, _ in self.records)



def log_readings(capture: LoadedCapture) -> list[LogReading]:
    out = []
    for svc in capture.services():
        if svc.beneath:
            path = svc.log_entry.path if svc.log_entry is not None else svc.log_file
            out.append(LogReading(svc, svc.beneath, path))
    return out


def worlds(capture: LoadedCapture) -> list[World]:
    """The watchdog records of each server world (role and port), in file order."""
    by: dict[tuple[str, int], list[tuple[WatchdogRecord, LogReading]]] = {}
    for log in log_readings(capture):
        key = (log.service.role, log.service.port)
        by.setdefault(key, []).extend((r, log) for r in log.beneath.watchdog)
    return [World(f"{role}:{port}" if port else role, role, tuple(recs))
            for (role, port), recs in by.items() if recs]


def kernel_logs(capture: LoadedCapture) -> list[tuple[HostView, KernelLog, str | None]]:
    """(host, kernel log, raw path) of each host that has one."""
    out = []
    for h in capture.hosts:
        if h.kernel is not None and h.kernel.events:
            path = next((e.path for e in capture.results if e.host == h.name
                         and e.source == h.kernel_source), None)
            out.append((h, h.kernel, path))
    return out


def fr_dumps(capture: LoadedCapture) -> list[tuple[str, str, FrDump]]:
    """(host, path, dump) of every Flight Recorder dump."""
    return [(h.name, path, d) for h in capture.hosts for path, d in h.flight_recorder]


def cuda_listings(capture: LoadedCapture) -> Iterator[tuple[HostView, ProcessView,
                                                            tuple[CudaKernel, ...]]]:
    """(host, process, kernels) of every rank with a cuda-gdb listing."""
    from pdforensics.parsers.cuda_gdb import CudaKernel as K

    for h in capture.hosts:
        for p in h.processes:
            kernels: Sequence[CudaKernel] = p.cuda_kernels
            if not kernels:  # triage: a listing read as a dump of kind cuda-gdb
                kernels = tuple(K(0, None, t.state or "active", "", "", t.frames[0].function
                                  if t.frames else "", "", tuple(f.file for f in t.frames),
                                  t.count)
                                for sd in p.stacks for d in sd.dumps if d.kind == "cuda-gdb"
                                for t in d.threads)
            if kernels:
                yield h, p, tuple(kernels)


def rank_label(p: ProcessView) -> str:
    return p.info.rank or f"pid {p.info.pid}"
