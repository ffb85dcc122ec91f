"""GPUs: per host, utilisation and memory bars per GPU, processes on each GPU, Xid events."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from pdforensics.bundle.ondisk import ResultEntry
from pdforensics.parsers.nvidia_smi import GpuInfo
from pdforensics.report import svg
from pdforensics.report.collection import no_gpu
from pdforensics.report.common import num, utc
from pdforensics.report.gpu_health import HealthRow, health_rows
from pdforensics.views.loaded import HostView, LoadedCapture


@dataclass(frozen=True)
class GpuRow:
    index: str
    name: str
    util: str
    mem: str
    temp: str
    power: str
    processes: tuple[str, ...]
    idle_with_work: bool  # memory held by our processes but 0 % busy
    error: str | None


@dataclass(frozen=True)
class XidRow:
    when: str
    pci: str
    xid: int
    process: str
    message: str
    history: bool = False  # before the evidence window: shown, not judged


@dataclass(frozen=True)
class HostGpus:
    host: str
    simulated: bool
    chart: Markup
    rows: tuple[GpuRow, ...]
    xids: tuple[XidRow, ...]
    note: str | None
    xid_note: str | None  # why there are no Xid rows
    health: tuple[HealthRow, ...] = ()  # NVLink, row remapper, NVML
    gpu_less: bool = False  # nvidia-smi says the host has no GPU (a router's host): expected


def _frac(a: float | None, b: float | None) -> float | None:
    if a is None or not b:
        return None
    return a / b


def chart(gpus: tuple[GpuInfo, ...], host: str) -> Markup:
    """Two bars per GPU: utilisation (top) and memory used of total (bottom)."""
    label_w, bar_w, row_h = 46.0, 300.0, 34.0
    parts: list[Markup] = [svg.text(label_w, 12, "utilisation", "axis-label"),
                           svg.text(label_w + bar_w + 20, 12, "memory", "axis-label")]
    for i, g in enumerate(gpus):
        y = 20 + i * row_h
        name = f"GPU {g.index if g.index is not None else i}"
        util = g.utilization_gpu_pct
        parts.append(svg.text(0, y + 17, name, "bar-label"))
        ucls = "bar util" + (" zero" if util == 0 else "")
        parts += svg.bar(label_w, y + 4, bar_w, 16, None if util is None else util / 100, ucls,
                         f"{host} {name}: utilisation {num(util)} %")
        parts.append(svg.text(label_w + bar_w - 4, y + 16, f"{num(util)} %", "bar-value", "end"))
        mf = _frac(g.memory_used_mib, g.memory_total_mib)
        mem_tip = f"{host} {name}: {num(g.memory_used_mib)} of {num(g.memory_total_mib)} MiB"
        parts += svg.bar(label_w + bar_w + 20, y + 4, bar_w, 16, mf, "bar mem", mem_tip)
        parts.append(svg.text(label_w + 2 * bar_w + 16, y + 16,
                              f"{num(g.memory_used_mib)} / {num(g.memory_total_mib)} MiB",
                              "bar-value", "end"))
    height = 24 + len(gpus) * row_h
    return svg.svg(label_w + 2 * bar_w + 24, height, parts,
                   f"GPU utilisation and memory on {host}", cls="chart gpus")


def _xid_note(h: HostView, kernel: ResultEntry | None) -> str | None:
    if h.xids or h.xid_history:
        return None
    if kernel is None:
        return "kernel log not collected: Xid events unknown"
    if not kernel.ok:
        why = kernel.error or ("timed out" if kernel.timed_out else f"exit {kernel.exit_status}")
        tail = kernel.stderr.strip().splitlines()[-1][:160] if kernel.stderr.strip() else ""
        return f"kernel log not read ({why}{': ' + tail if tail else ''}): Xid events unknown"
    return "no Xid events in the kernel log"


def _host(h: HostView, owners: dict[int, str], kernel: ResultEntry | None,
          gpu_less: bool = False) -> HostGpus:
    apps: dict[str, list[str]] = {}
    for a in h.gpu_apps:
        who = owners.get(a.pid or -1, a.process_name or "?")
        apps.setdefault(a.gpu_uuid or "", []).append(
            f"{a.pid} {who} ({num(a.used_memory_mib)} MiB)")
    rows = []
    for i, g in enumerate(h.gpus):
        procs = tuple(apps.get(g.uuid or "", []))
        rows.append(GpuRow(
            index=str(g.index if g.index is not None else i), name=g.name or "?",
            util=f"{num(g.utilization_gpu_pct)} %",
            mem=f"{num(g.memory_used_mib)} / {num(g.memory_total_mib)} MiB",
            temp=f"{num(g.temperature_c)} °C", power=f"{num(g.power_draw_w)} W",
            processes=procs, idle_with_work=bool(procs) and g.utilization_gpu_pct == 0,
            error=g.error))
    xids = tuple(XidRow(when=utc(x.epoch) if x.epoch else (f"uptime {x.uptime_s:.0f}s"
                                                            if x.uptime_s else "—"),
                        pci=x.pci, xid=x.xid, process=f"{x.pid or ''} {x.process or ''}".strip(),
                        message=x.message, history=x in h.xid_history)
                 for x in (*h.xid_history, *h.xids))
    note = None
    if not h.gpus and not gpu_less:
        note = f"no GPU data: {h.gpu_error or 'nvidia-smi returned no GPUs'}"
    return HostGpus(host=h.name, simulated=h.simulated_gpu,
                    chart=chart(h.gpus, h.name) if h.gpus else Markup(""), rows=tuple(rows),
                    xids=xids, note=note, xid_note=_xid_note(h, kernel), health=health_rows(h),
                    gpu_less=gpu_less)


def build_gpus(capture: LoadedCapture) -> tuple[tuple[HostGpus, ...], list[str]]:
    """Per reachable host: GPU bars and table, processes per GPU, Xid events."""
    owners: dict[int, str] = {}
    for s in capture.services():
        for p in s.processes:
            owners[p.info.pid] = f"{s.role} {p.info.rank or p.info.kind}"
    out = []
    missing = []
    for h in capture.hosts:
        if not h.reachable:
            missing.append(f"{h.name}: host not reachable, no GPU data")
            continue
        kernel = next((e for e in capture.results if e.host == h.name
                       and e.source == "kernel_log"), None)
        smi = [e for e in capture.results if e.host == h.name and e.source.startswith("nvidia_smi")]
        view = _host(h, owners, kernel, gpu_less=bool(smi) and all(no_gpu(e) for e in smi))
        if view.note:
            missing.append(f"{h.name}: {view.note}")
        out.append(view)
    return tuple(out), missing
