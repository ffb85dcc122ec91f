"""The GPU and the host beneath SGLang, from the kernel log: Xid events by class, a GPU that
is gone, PCIe AER errors, the OOM killer. Events before the evidence window (the host's
history) or the look-back are reported, not counted as current (``LOOKBACK_S``)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from pdforensics.analysis.beneath_view import kernel_logs
from pdforensics.analysis.findings import Evidence, Finding, Need, Severity, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.kernel_log import AER, GPU_LOST, OOM_KILL, SMI_UNREACHABLE, XID, KernelEvent
from pdforensics.parsers.xid_table import classify
from pdforensics.views.loaded import HostView

#: the kernel log look-back window (the capture's: collectors/logs.py reads journald for it)
LOOKBACK_S = 6 * 3600.0
_LOST_SMI = ("Unable to determine the device handle", "GPU is lost", "No devices were found")


def _current(ctx: Context, h: HostView, e: KernelEvent) -> bool:
    """Inside the evidence window (not the host's history); without a window, inside the
    look-back before the capture. Events without a date count."""
    if h.window_start is not None:
        return e.epoch is None or e.epoch >= h.window_start
    start = ctx.capture.started_at or time.time()
    return e.epoch is None or e.epoch >= start - LOOKBACK_S


def _ev(h: HostView, e: KernelEvent, path: str | None) -> Evidence:
    where = f"{path}:{e.lineno}" if path else f"line {e.lineno}"
    return Evidence(h.name, "kernel log", f"{where} {e.text[:300]}", path)


@rule("GPU_XID", needs=(Need.KERNEL_LOG,), rank=11)
def gpu_xid(ctx: Context) -> Iterator[Finding]:
    """NVIDIA Xid events, one finding per Xid code per host, with what the code means and
    what to do (NVIDIA's Xid catalog; parsers/xid_table.py)."""
    for h, klog, path in kernel_logs(ctx.capture):
        by: dict[int, list[KernelEvent]] = {}
        for e in klog.events:
            if e.kind == XID and e.xid is not None:
                by.setdefault(e.xid, []).append(e)
        recovery = [e.recovery for e in klog.events if e.recovery]
        for xid, events in sorted(by.items()):
            c = classify(xid)
            if xid == 154:
                continue  # the recovery it states goes with the Xid it follows
            current = [e for e in events if _current(ctx, h, e)]
            devices = sorted({f"PCI:{e.device}" for e in events if e.device})
            sev: Severity = c.severity if current else "info"
            after = sorted({e.caused_by for e in events if e.caused_by})
            title = (f"{h.name}: Xid {xid} ({c.klass}: {c.meaning}) x{len(events)}"
                     + (f" on {', '.join(devices[:4])}" if devices else "")
                     + (f", caused by previous Xid {', '.join(map(str, after))}" if after else "")
                     + ("" if current else " (before the evidence window)"))
            ev: list[Evidence | str] = [_ev(h, e, path) for e in events[-6:]]
            if recovery and c.severity == "critical":
                ev.append(f"the driver states the recovery needed: {recovery[-1]}")
            procs = sorted({f"{e.pid} {e.process or ''}".strip() for e in events if e.pid})
            if procs:
                ev.append(f"process(es) on the GPU: {', '.join(procs[:6])}")
            yield Finding("GPU_XID", sev, title, tuple(ev),
                          f"{c.action} (NVIDIA catalog: {c.mnemonic}, immediate action {c.bucket}).",
                          section="gpu", subject=f"{h.name} Xid {xid}")


def _lost_devices(h: HostView, events: Sequence[KernelEvent]) -> list[str]:
    devs = {e.device for e in events if e.device and (
        e.kind in (GPU_LOST, SMI_UNREACHABLE) or (e.kind == XID and e.xid == 79))}
    return sorted(d for d in devs if d)


@rule("GPU_LOST", needs=(Need.KERNEL_LOG,), rank=4)
def gpu_lost(ctx: Context) -> Iterator[Finding]:
    """A GPU gone from the host: it fell off the bus (with or without an Xid 79 line), the
    driver could not initialise it, or nvidia-smi no longer finds it."""
    for h, klog, path in kernel_logs(ctx.capture):
        lost = [e for e in klog.events if e.kind in (GPU_LOST, SMI_UNREACHABLE)
                or (e.kind == XID and e.xid == 79)]
        smi = h.gpu_error if h.gpu_error and any(s in h.gpu_error for s in _LOST_SMI) else None
        if not lost and smi is None:
            continue
        current = any(_current(ctx, h, e) for e in lost) or smi is not None
        devs = _lost_devices(h, lost)
        ev: list[Evidence | str] = [_ev(h, e, path) for e in lost[:8]]
        if smi:
            ev.append(Evidence(h.name, "nvidia-smi", smi[:300]))
        aer = [e for e in klog.events if e.kind == AER and e.severity and "Fatal" in e.severity]
        ev += [_ev(h, e, path) for e in aer[:2]]
        yield Finding(
            "GPU_LOST", "critical" if current else "info",
            f"{h.name}: GPU {', '.join('PCI:' + d for d in devs) or '?'} is gone (fallen off "
            "the bus / not answering)" + ("" if current else " (before the evidence window)"),
            tuple(ev),
            "All work on that GPU is lost and every collective with its rank hangs: drain the "
            "node and cold-reboot it; check the PCIe AER lines before it, power, cooling and "
            "seating; RMA if it repeats.", section="gpu", subject=h.name)


@rule("PCIE_AER", needs=(Need.KERNEL_LOG,), rank=12)
def pcie_aer(ctx: Context) -> Iterator[Finding]:
    """PCIe Advanced Error Reporting: uncorrected (fatal) errors take a device off the bus;
    corrected ones repeating mean a degrading link."""
    for h, klog, path in kernel_logs(ctx.capture):
        aer = [e for e in klog.events if e.kind == AER and _current(ctx, h, e)]
        if not aer:
            continue
        fatal = [e for e in aer if e.severity and not e.severity.startswith("Corrected")]
        ports = sorted({e.device or "?" for e in aer})
        yield Finding(
            "PCIE_AER", "critical" if fatal else "warning",
            f"{h.name}: {len(aer)} PCIe AER error(s) on {', '.join(ports[:4])}"
            + (f", {len(fatal)} uncorrected" if fatal else ", all corrected"),
            tuple(_ev(h, e, path) for e in (fatal or aer)[:6]),
            "An uncorrected error (Surprise Down) drops the GPU behind that port; corrected "
            "errors that keep coming are a link to reseat or replace (lspci -vvv: LnkSta).",
            section="gpu", subject=h.name)


def _sglang_pids(h: HostView) -> set[int]:
    return {p.info.pid for p in h.processes}


@rule("HOST_OOM_KILL", needs=(Need.KERNEL_LOG,), rank=9)
def host_oom_kill(ctx: Context) -> Iterator[Finding]:
    """The kernel's OOM killer killed a process: critical when it is an SGLang process (a pid
    the capture found, or a ``sglang::`` title)."""
    for h, klog, path in kernel_logs(ctx.capture):
        kills = [e for e in klog.events if e.kind == OOM_KILL and _current(ctx, h, e)]
        if not kills:
            continue
        ours = _sglang_pids(h)
        sglang = [e for e in kills if e.pid in ours or (e.process or "").startswith("sglang")]
        python = [e for e in kills if (e.process or "").startswith("python")]
        victims = ", ".join(f"{e.pid} ({e.process})" for e in kills[:6])
        yield Finding(
            "HOST_OOM_KILL", "critical" if sglang else "warning",
            f"{h.name}: the OOM killer killed {victims}"
            + (" -- an SGLang process" if sglang else
               " (python: possibly an SGLang rank)" if python else ""),
            tuple(_ev(h, e, path) for e in kills[:6]),
            "A killed rank leaves its peers waiting in their next collective: restart the "
            "server; find what grew (host memory of the scheduler, pinned KV buffers, the "
            "container's memory limit) before raising limits.", section="gpu", subject=h.name)
