"""The kernel log (dmesg, dmesg -T / --time-format=iso, journalctl -k, syslog): GPU and host
events beneath SGLang.

- ``NVRM: Xid (PCI:0000:a1:00): 79, pid=..., name=..., <message>``: one Xid event, classed by
  `xid_table` (Xid 45 names the earlier Xid it follows: ``caused by previous Xid 149``;
  Xid 154 the recovery the driver now needs);
- ``GPU has fallen off the bus`` with or without an Xid line, ``RmInitAdapter failed``: the
  GPU is gone;
- ``PCIe Bus Error: severity=..., type=...`` with its detail lines (``[ 5] Surprise Down
  Error``): a PCIe AER event on a port or device;
- ``Out of memory: Killed process 123 (python3)`` (also in a memory cgroup): the OOM killer's
  victim; ``X invoked oom-killer`` names the allocator, not the victim;
- an RDMA NIC's driver failing on its device (``mlx5_core 0000:03:00.0: handle_hca_cap
  failed``, then ``probe of 0000:03:00.0 failed``): the first failure of a device is what
  failed, the later ones its consequences;
- GSP RPC timeouts and RPC history dumps (``NVRM: GPU6 RPC event history``): the GPU's
  system processor stopped answering;
- ``Unable to determine the device handle for GPU0000:03:00.0`` (nvidia-smi, often pasted
  beside the log): the GPU no longer answers the driver;
- ``INFO: task X:123 blocked for more than 120 seconds.`` (the hung-task detector): a task
  stuck in uninterruptible sleep, in the kernel (a driver, a disk, a mount);
- NVRM's checks that a GPU needs a reset (``NV_ERR_RESET_REQUIRED``) and those that fail while
  the chip is being reset (``NV_ERR_GPU_IN_FULLCHIP_RESET``);
- AMD's GPU driver (``amdgpu 0000:1c:00.0: ...``): an uncorrectable hardware (RAS) error or a
  ring that timed out, and its "[Hardware Error]: ... events logged" reports.

Every line is read on its own (no regex spans lines) and nothing here raises on arbitrary text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pdforensics import linear
from pdforensics.parsers.journal import parse_log_timestamp
from pdforensics.parsers.linescan import has_any, line_numbers, marks, split_lines
from pdforensics.parsers.nvidia_smi import XidEvent

XID = "xid"
GPU_LOST = "gpu_lost"
AER = "aer"
OOM_KILL = "oom_kill"
OOM_REAPED = "oom_reaped"  # the kernel freed the killed process's memory (after OOM_KILL)
OOM_UNIT_FAILED = "oom_unit_failed"  # systemd marked the unit failed for the kill (after OOM_KILL)
OOM_INVOKED = "oom_invoked"  # "X invoked oom-killer": an allocation found no memory left
DRIVER_FAILED = "driver_failed"  # a NIC driver failing on its device ("mlx5_core ...: ... failed")
GSP = "gsp"
GPU_INIT_REPORT = "gpu_init_report"  # "rm_init_adapter failed, device minor number N": the report
SMI_UNREACHABLE = "smi_unreachable"
HUNG_TASK = "hung_task"  # "INFO: task X:123 blocked for more than 120 seconds." (khungtaskd)
GPU_RESET_REQUIRED = "gpu_reset_required"  # NVRM: "Check failed: Reset required [NV_ERR_RESET_REQUIRED]"
GPU_IN_RESET = "gpu_in_reset"  # NVRM's checks that fail while the chip is reset (NV_ERR_GPU_IN_FULLCHIP_RESET)
AMD_GPU_FAULT = "amd_gpu_fault"  # amdgpu: an uncorrectable (RAS) error, a ring that timed out
AMD_GPU_REPORT = "amd_gpu_report"  # amdgpu: "[Hardware Error]: ... events logged" (its report)

_PCI = linear.compile(r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?")
_UPTIME = linear.compile(r"\[\s{0,12}(\d{1,10}\.\d{1,9})\]")
_AER = linear.compile(r"(?:^|\s)(\S{1,40} )?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): "
                  r"PCIe Bus Error: severity=([^,]{1,40}), type=([^,]{1,60})")
_AER_DETAIL = linear.compile(r"([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d):\s{1,12}"
                         r"(?:device \[|\[\s{0,2}\d{1,2}\] )")
_OOM = linear.compile(r"(?:Memory cgroup out of memory|Out of memory)(?: \(oom_kill_allocating_task\))?: "
                  r"Kill(?:ed)? process (\d{1,10}) \(([^)\n]{0,64})\)")
#: systemd's words for the kernel's OOM kill in one of its units, and the unit's end
_UNIT_OOM = linear.compile(r"(\S{1,200}\.(?:service|scope|slice)): A process of this unit has been "
                           r"killed by the OOM killer")
_UNIT_FAILED = linear.compile(r"(\S{1,200}\.(?:service|scope|slice)): Failed with result 'oom-kill'")
#: Ray's memory monitor ("2 Workers (tasks / actors) killed due to memory pressure (OOM), ...
#: at node (ID: ..., IP: 10.0.167.26)"); a paste may wrap the record over a few lines
_RAY_OOM = "killed due to memory pressure (OOM)"
_RAY_NODE = linear.compile(r"\bIP: ([0-9a-fA-F.:]{3,45}[0-9a-fA-F])")
_GSP_GPU = linear.compile(r"\bGPU(\d{1,3})\b")
_SMI = linear.compile(r"Unable to determine the device handle for GPU ?([0-9a-fA-F:.]{7,16})")
#: AMD's GPU driver: "amdgpu 0000:1c:00.0: {1}uncorrectable hardware error(...) detected!",
#: "amdgpu 0000:c3:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=..."
_AMDGPU = linear.compile(r"\bamdgpu ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d): (.{1,400})$")
#: the kernel's hung-task detector: a task in uninterruptible sleep (D) that long
_HUNG = linear.compile(r"\btask ([^\s:]{1,64}):(\d{1,10}) blocked for more than (\d{1,7}) seconds")
#: the process whose allocation found no memory left (the trigger, not the victim)
_INVOKED = linear.compile(r"(?:^|[\s\]])(\S{1,64}) invoked oom-killer: ")
_REAPED = linear.compile(r"oom_reaper: reaped process (\d{1,10}) \((.{1,64}?)\)(?:, |\s*$)")
_CAUSED_BY = linear.compile(r"caused by previous Xid (\d{1,4})")
_RECOVERY = linear.compile(r"recovery action changed from \S{1,10} \(([^)]{1,40})\) to \S{1,10} "
                       r"\(([^)]{1,40})\)")


@dataclass(frozen=True)
class KernelEvent:
    """One event of the kernel log."""

    lineno: int
    kind: str  # XID | GPU_LOST | AER | OOM_KILL | GSP | SMI_UNREACHABLE
    text: str  # the line as found (AER: the severity line and its detail lines)
    device: str | None = None  # "0000:a1:00" (PCI) or "GPU6"
    xid: int | None = None
    pid: int | None = None
    process: str | None = None
    severity: str | None = None  # AER: Corrected / Uncorrected (Fatal) / ...
    caused_by: int | None = None  # Xid 45: the Xid it follows
    recovery: str | None = None  # Xid 154: the recovery the driver now requires
    epoch: float | None = None
    uptime_s: float | None = None

    @property
    def suspect(self) -> str | None:
        """What to look at, in the words the log uses (``PCI:0000:a1:00``, ``GPU6``, a pid)."""
        if self.kind in (OOM_KILL, OOM_REAPED, OOM_UNIT_FAILED, OOM_INVOKED):
            if self.pid is not None:
                return f"{self.pid} ({self.process})" if self.process else str(self.pid)
            return self.process
        if self.kind in (DRIVER_FAILED, AMD_GPU_FAULT, AMD_GPU_REPORT):
            return self.device  # (the PCI address as the driver prints it)
        if self.device is None or self.kind == AER:
            return None
        if self.kind in (GPU_LOST, GPU_INIT_REPORT) and "PCI:" not in self.text:
            m = _PCI.search(self.text)  # "NVRM: GPU 0000:01:00.0: ...": the bus id as printed
            return m.group(0) if m is not None else self.device
        return self.device if self.device.startswith("GPU") else f"PCI:{self.device}"


@dataclass(frozen=True)
class KernelLog:
    events: tuple[KernelEvent, ...]
    driver: str | None = None  # "535.161.07" from the module's load line

    @property
    def xids(self) -> tuple[XidEvent, ...]:
        """The Xid events in the older record (HostView.xids, the report's GPU section)."""
        return tuple(XidEvent(pci=e.device or "?", xid=e.xid, pid=e.pid, process=e.process,
                              message=_xid_message(e.text), epoch=e.epoch, uptime_s=e.uptime_s,
                              line=e.text)
                     for e in self.events if e.kind == XID and e.xid is not None)


def _xid_message(line: str) -> str:
    i = line.find("): ")
    return line[i + 3:].strip() if i >= 0 else line


def _pci(text: str) -> str | None:
    m = _PCI.search(text)
    return m.group(1).lower() if m else None


def _comm(line: str, start: int) -> str:
    """The victim's name: from its "(" to the ")" before " total-vm" (a name may hold
    parentheses: "(resolved)")."""
    end = line.find(") total-vm", start)
    if end < 0:
        end = line.rfind(")")
    return line[start:end][:64] if end >= start else line[start:start + 64]


def _times(line: str) -> tuple[float | None, float | None]:
    up = _UPTIME.search(line[:80])
    return parse_log_timestamp(line), float(up.group(1)) if up else None


def _xid(no: int, line: str) -> KernelEvent | None:
    i = line.find("NVRM: Xid (")
    j = line.find("): ", i)
    if i < 0 or j < 0 or j - i > 80:
        return None
    rest = line[j + 3:]
    digits = rest.split(",", 1)[0].strip()
    if not digits.isdigit() or len(digits) > 4:
        return None
    tail = rest.split(",", 1)[1].strip() if "," in rest else ""
    pid: int | None = None
    proc: str | None = None
    if tail.startswith("pid="):
        value, _, tail = tail[4:].partition(", ")
        pid = int(value.strip("'")) if value.strip("'").isdigit() else None
    if tail.startswith("name="):
        value, _, tail = tail[5:].partition(", ")
        proc = None if value.strip("<>'") in ("unknown", "") else value
    inside = line[i + len("NVRM: Xid ("):j]
    dev = _pci(inside)
    caused = _CAUSED_BY.search(rest)
    rec = _RECOVERY.search(rest)
    epoch, up = _times(line)
    return KernelEvent(no, XID, line.strip(), dev, int(digits), pid, proc,
                       caused_by=int(caused.group(1)) if caused else None,
                       recovery=rec.group(2) if rec else None, epoch=epoch, uptime_s=up)


def _other(no: int, line: str) -> KernelEvent | None:
    epoch, up = _times(line)
    if "failed" in line and (m := _DRIVER_FAILED.search(line)) is not None:
        return KernelEvent(no, DRIVER_FAILED, line.strip(), m.group(2) or m.group(3),
                           process=m.group(1), epoch=epoch, uptime_s=up)
    if "rm_init_adapter failed" in line:  # the module's report after RmInitAdapter failed
        return KernelEvent(no, GPU_INIT_REPORT, line.strip(), _pci(line), epoch=epoch, uptime_s=up)
    if "fallen off the bus" in line or "RmInitAdapter failed" in line:
        return KernelEvent(no, GPU_LOST, line.strip(), _pci(line), epoch=epoch, uptime_s=up)
    if (m := _OOM.search(line)) is not None:
        return KernelEvent(no, OOM_KILL, line.strip(), pid=int(m.group(1)),
                           process=_comm(line, m.start(2)), epoch=epoch, uptime_s=up)
    if (m := _INVOKED.search(line)) is not None:
        return KernelEvent(no, OOM_INVOKED, line.strip(), process=m.group(1), epoch=epoch,
                           uptime_s=up)
    if (m := _REAPED.search(line)) is not None:
        return KernelEvent(no, OOM_REAPED, line.strip(), pid=int(m.group(1)),
                           process=m.group(2), epoch=epoch, uptime_s=up)
    if "OOM killer" in line and (m := _UNIT_OOM.search(line)) is not None:
        return KernelEvent(no, OOM_KILL, line.strip(), process=m.group(1), epoch=epoch, uptime_s=up)
    if "oom-kill" in line and (m := _UNIT_FAILED.search(line)) is not None:
        return KernelEvent(no, OOM_UNIT_FAILED, line.strip(), process=m.group(1), epoch=epoch,
                           uptime_s=up)
    if "NVRM" in line and ("RPC event history" in line or "RPC history" in line
                           or "waiting for RPC response" in line or "PMU has halted" in line
                           or any(t in line for t in _GSP_TIMEOUTS)):
        g = _GSP_GPU.search(line)
        return KernelEvent(no, GSP, line.strip(), f"GPU{g.group(1)}" if g else None,
                           epoch=epoch, uptime_s=up)
    if (m := _SMI.search(line)) is not None:
        return KernelEvent(no, SMI_UNREACHABLE, line.strip(), _pci(m.group(1)))
    if "NVRM" in line and ("NV_ERR_RESET_REQUIRED" in line or "NV_ERR_GPU_IN_FULLCHIP_RESET" in line):
        g = _GSP_GPU.search(line)
        return KernelEvent(no, GPU_RESET_REQUIRED if "NV_ERR_RESET_REQUIRED" in line
                           else GPU_IN_RESET, line.strip(), f"GPU{g.group(1)}" if g else None,
                           epoch=epoch, uptime_s=up)
    if "amdgpu " in line and (m := _AMDGPU.search(line)) is not None:
        msg = m.group(2)
        fault = "uncorrectable" in msg or ("ring " in msg and " timeout" in msg)
        if fault or "events logged" in msg:
            return KernelEvent(no, AMD_GPU_FAULT if fault else AMD_GPU_REPORT, line.strip(),
                               m.group(1).lower(), epoch=epoch, uptime_s=up)
    if (m := _HUNG.search(line)) is not None:
        return KernelEvent(no, HUNG_TASK, line.strip(), pid=int(m.group(2)), process=m.group(1),
                           epoch=epoch, uptime_s=up)
    return None


#: the driver's words for the GSP firmware not answering an RPC in time (Xid 119 family;
#: "Back to back GSP RPC timeout detected! GPU marked for reset", "rpcRecvPoll timedout")
_GSP_TIMEOUTS = ("GSP RPC timeout", "rpcRecvPoll timedout", "Timeout waiting for RPC")
_GSP_NEAR = 10  # GSP timeout lines this close report one stall of the firmware


def _gsp_timeout(text: str) -> bool:
    return any(t in text for t in _GSP_TIMEOUTS)


def parse_kernel_log(text: str) -> KernelLog:
    """Every GPU, PCIe, OOM and GSP event of a kernel log, in line order (see the module
    docstring); GSP history rows after their title are one event, not one per row."""
    events: list[KernelEvent] = []
    driver = None
    gsp_seen: set[str | None] = set()
    lines = split_lines(text)
    skip_to = 0  # AER detail lines already taken with their severity line
    for no in line_numbers(text, _LINE_MARKS):  # only the lines that can be an event
        if no <= skip_to:
            continue
        line = lines[no - 1].rstrip("\r")
        if "PCIe Bus Error" in line and (m := _AER.search(line)) is not None:
            detail = [line.strip()]
            for k in range(no, min(len(lines), no + _AER_LINES)):  # its detail lines follow
                dm = _AER_DETAIL.search(lines[k])
                if dm is None or dm.group(1) != m.group(2):
                    break
                detail.append(lines[k].rstrip("\r").strip())
                skip_to = k + 1
            events.append(_aer(no, detail, m))
            continue
        if driver is None and "NVRM: loading NVIDIA" in line:
            driver = next((w for w in line.split() if w[:1].isdigit() and w.count(".") >= 1
                           and w.replace(".", "").isdigit()), None)
        ev = _xid(no, line) if "NVRM: Xid" in line else _other(no, line)
        if ev is None and _RAY_OOM in line:
            node = _RAY_NODE.search(" ".join(lines[no - 1:no + 2]))
            ev = KernelEvent(no, OOM_KILL, line.strip(), epoch=_times(line)[0],
                             process=f"node {node.group(1)}" if node else None)
        if ev is None:
            continue
        if ev.kind == GSP:  # one event per GPU per history dump
            prev = events[-1] if events else None
            if (prev is not None and prev.kind == GSP and no - prev.lineno <= _GSP_NEAR
                    and _gsp_timeout(prev.text) and _gsp_timeout(ev.text)):
                events[-1] = replace(prev, text=f"{prev.text} | {ev.text}")  # one stall
                continue
            if ev.device in gsp_seen and "waiting for RPC response" not in ev.text \
                    and not _gsp_timeout(ev.text):
                continue
            gsp_seen.add(ev.device)
        events.append(ev)
    return KernelLog(tuple(events), driver)


#: a line that can be an event holds one of these (the rest of a log is never looked at)
_LINE_MARKS = linear.compile(
    rb"NVRM|PCIe Bus Error|[Oo]ut of memory|oom_reaper|OOM killer|oom-kill|memory pressure \(OOM\)"
    rb"|fallen off the bus|RmInitAdapter|rm_init_adapter|Unable to determine the device handle"
    rb"|mlx5_core|mlx4_core|bnxt_en|bnxt_re|irdma|mlx5_ib|blocked for more than|amdgpu ")
#: an RDMA NIC's driver reporting a failure on its device, with the device's PCI address
#: ("mlx5_core 0000:03:00.0: handle_hca_cap failed", "mlx5_core: probe of 0000:03:00.0 failed")
_DRIVER_FAILED = linear.compile(
    r"\b(mlx5_core|mlx4_core|bnxt_en|bnxt_re|irdma|mlx5_ib)(?: ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:"
    r"[0-9a-fA-F]{2}\.\d))?:? (?:[^\n]{0,200}?probe of ([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
    r"\.\d) failed|[^\n]{0,200}?\bfailed\b)")
_AER_LINES = 40  # an AER report's detail lines follow its severity line within this many


def _aer(no: int, lines: list[str], m: linear.Match[str]) -> KernelEvent:
    epoch, up = _times(lines[0])
    return KernelEvent(no, AER, " | ".join(lines), m.group(2).lower()[:10], severity=m.group(3),
                       epoch=epoch, uptime_s=up)


def looks_like_kernel_log(text: str) -> bool:
    return has_any(text, _KERNEL_MARKS)


_KERNEL_MARKS = marks("NVRM: ", "PCIe Bus Error", "Out of memory: Kill", "out of memory: Kill",
                      "killed by the OOM killer", "result 'oom-kill'", _RAY_OOM,
                      "invoked oom-killer", "pcieport ", "oom_reaper: ", "mlx5_core",
                      "mlx4_core", "bnxt_en", "bnxt_re", "irdma", "mlx5_ib",
                      "blocked for more than", "amdgpu ")
