"""Merges for the sources beneath SGLang: the kernel log (dmesg or journald, whichever read
more), Flight Recorder dumps (one per rank file), the NCCL RAS report, cuda-gdb listings."""

from __future__ import annotations

import dataclasses
from typing import Any

from pdforensics.collectors.feeds import Reading, why_failed
from pdforensics.parsers.flight_recorder import FrDump, rank_from_name
from pdforensics.parsers.kernel_log import KernelLog


def kernel_events(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The kernel log that holds the most events (dmesg's ring buffer may have wrapped,
    journald may be off): ``kernel`` and its source, and the Xid list of the older record."""
    if not r.entry.ok:
        return
    value = r.value()
    if not isinstance(value, KernelLog):
        return
    old = acc.get(field)
    if isinstance(old, KernelLog) and len(old.events) >= len(value.events):
        return
    acc[field] = value
    acc["kernel_source"] = r.entry.source
    acc["xids"] = value.xids


def fr_dump(acc: dict[str, Any], field: str, r: Reading) -> None:
    """Each Flight Recorder file read: (its raw path, the dump); an unreadable one is a parse
    error, the others still count. A dump that does not name its rank takes it from the file
    it was read from (``<prefix><rank>``, as PyTorch's analyzer reads it): the file read
    without a shell, else the command's last argument."""
    if not r.entry.ok or not r.entry.path:
        return
    value = r.value()
    if isinstance(value, FrDump):
        if value.rank is None:
            read = r.entry.read or (r.entry.argv[-1] if r.entry.argv else "")
            value = dataclasses.replace(value, rank=rank_from_name(read.rpartition("/")[2]))
        acc[field] = (*acc.get(field, ()), (r.entry.path, value))


def ras_report(acc: dict[str, Any], field: str, r: Reading) -> None:
    """The first RAS report, or why there is none."""
    if field in acc:
        return
    value = r.value() if r.entry.ok else None
    if value is not None:
        acc[field] = value
    else:
        acc["nccl_ras_error"] = why_failed(r.entry) if not r.entry.ok else "no RAS report in the output"


def cuda_listing(acc: dict[str, Any], field: str, r: Reading) -> None:
    """A rank's cuda-gdb kernel listing, or why it is missing."""
    if field in acc:
        return
    value = r.value() if r.entry.ok else None
    if value:
        acc[field] = tuple(value)
    else:
        acc["cuda_error"] = why_failed(r.entry) if not r.entry.ok else (
            r.text().strip().splitlines()[-1][:200] if r.text().strip() else "empty listing")
