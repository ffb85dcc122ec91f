"""nvidia-smi outputs -> frozen dataclasses.

Commands (the collector runs exactly these; samples in tests/data/nvsmi_*):

- ``nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,utilization.memory,memory.used,
  memory.total,temperature.gpu,power.draw,clocks.sm,clocks.mem,clocks_throttle_reasons.active,
  pstate,ecc.errors.uncorrected.volatile.total --format=csv`` (or ``csv,noheader,nounits``
  with the field list passed in)
- ``nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv``
- ``nvidia-smi nvlink -e``
- ``nvidia-smi -q -d ROW_REMAPPER``
- kernel log (``dmesg``, ``journalctl -k``) lines with ``NVRM: Xid``

CSV and block formats are strict: a line that is not part of the format raises ParseError
(the GPU state is small and a misread is worse than none). nvidia-smi's own per-GPU error
rows ("Unable to determine the device handle for GPU ...") are kept as a GpuInfo with
``error`` set, since a GPU that fell off the bus is the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.errors import ParseError
from pdforensics.hostnum import to_int
from pdforensics.parsers.journal import parse_log_timestamp

QUERY_GPU_FIELDS: tuple[str, ...] = (
    "index", "uuid", "name", "utilization.gpu", "utilization.memory", "memory.used",
    "memory.total", "temperature.gpu", "power.draw", "clocks.sm", "clocks.mem",
    "clocks_throttle_reasons.active", "pstate", "ecc.errors.uncorrected.volatile.total",
)
COMPUTE_APPS_FIELDS: tuple[str, ...] = ("pid", "process_name", "gpu_uuid", "used_memory")

# Header names nvidia-smi prints -> the query names above (old and new spellings).
_FIELD_ALIASES = {
    "clocks.current.sm": "clocks.sm",
    "clocks.current.memory": "clocks.mem",
    "clocks.memory": "clocks.mem",
    "clocks_event_reasons.active": "clocks_throttle_reasons.active",
    "clocks_throttle_reasons.active": "clocks_throttle_reasons.active",
    "gpu_uuid": "gpu_uuid",
    "used_gpu_memory": "used_memory",
    "gpu_name": "name",
}
_MISSING = {"[n/a]", "n/a", "[not supported]", "[unknown error]", "[insufficient permissions]",
            "[gpu is lost]", "[gpu requires reset]", "[not available]", ""}
_UNIT_RE = linear.compile(r"^(.*?)\s*(?:%|MiB|GiB|KiB|W|MHz|C)$")
_HEADER_UNIT_RE = linear.compile(r"\s*\[[^\]]*\]$")
_BUS_RE = linear.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]")
_FATAL = ("NVIDIA-SMI has failed", "Failed to initialize NVML", "couldn't communicate with the",
          "Field \"", "is not a valid field", "Invalid combination")


@dataclass(frozen=True)
class GpuInfo:
    """One row of --query-gpu. None means absent, [N/A] or [Not Supported]."""

    index: int | None
    uuid: str | None = None
    name: str | None = None
    utilization_gpu_pct: float | None = None
    utilization_memory_pct: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    temperature_c: float | None = None
    power_draw_w: float | None = None
    clocks_sm_mhz: float | None = None
    clocks_mem_mhz: float | None = None
    throttle_reasons: int | None = None
    pstate: str | None = None
    ecc_uncorrected_volatile: int | None = None
    error: str | None = None  # nvidia-smi's message when it could not read this GPU
    bus_id: str | None = None  # from the error message when there is one
    raw: tuple[tuple[str, str], ...] = ()  # field -> value exactly as printed


@dataclass(frozen=True)
class ComputeApp:
    """One row of --query-compute-apps."""

    pid: int | None
    process_name: str | None
    gpu_uuid: str | None
    used_memory_mib: float | None


@dataclass(frozen=True)
class NvlinkLink:
    """Error counters of one NVLink link (counter name -> value, None for N/A)."""

    link: int
    counters: tuple[tuple[str, int | None], ...]

    def counter(self, name: str) -> int | None:
        """The value of counter ``name`` (e.g. "Replay Errors") or None."""
        return dict(self.counters).get(name)


@dataclass(frozen=True)
class NvlinkGpu:
    """``nvidia-smi nvlink -e`` block of one GPU."""

    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...]

    def total(self, counter: str) -> int:
        """Sum of ``counter`` over all links (N/A counts as 0)."""
        return sum(link.counter(counter) or 0 for link in self.links)


@dataclass(frozen=True)
class RowRemap:
    """``Remapped Rows`` section of one GPU from ``nvidia-smi -q -d ROW_REMAPPER``."""

    bus_id: str
    supported: bool
    correctable: int | None = None
    uncorrectable: int | None = None
    pending: bool | None = None
    failure_occurred: bool | None = None
    histogram: tuple[tuple[str, int], ...] = ()  # "Max" -> banks, ...


@dataclass(frozen=True)
class XidEvent:
    """One ``NVRM: Xid`` kernel log line."""

    pci: str
    xid: int
    pid: int | None
    process: str | None
    message: str
    epoch: float | None
    uptime_s: float | None
    line: str


def _missing(v: str) -> bool:
    return v.strip().lower() in _MISSING


def _num(v: str) -> float | None:
    v = v.strip()
    if _missing(v):
        return None
    m = _UNIT_RE.match(v)
    if m:
        v = m.group(1)
    try:
        return float(v)
    except ValueError:
        return None


def _int(v: str) -> int | None:
    v = v.strip()
    if _missing(v):
        return None
    n = to_int(v, 16) if v.lower().startswith("0x") else to_int(v)
    if n is not None:
        return n
    f = _num(v)  # "12.0"
    return int(f) if f is not None and f.is_integer() and abs(f) < 1e18 else None


def _str(v: str) -> str | None:
    return None if _missing(v) else v.strip()


def _field(name: str) -> str:
    name = _HEADER_UNIT_RE.sub("", name.strip())
    return _FIELD_ALIASES.get(name, name)


def _check_fatal(line: str, lineno: int) -> None:
    if any(f in line for f in _FATAL):
        raise ParseError("nvidia-smi failed", line=line, lineno=lineno)


def _rows(
    text: str, fields: Sequence[str] | None
) -> tuple[list[str], list[tuple[int, str, list[str] | None]]]:
    """Header field names and (lineno, line, values or None for an error row)."""
    lines = [(i, ln.rstrip("\r")) for i, ln in enumerate(text.split("\n"), 1) if ln.strip()]
    if not lines:
        return [], []
    if fields is None:
        lineno, head = lines[0]
        _check_fatal(head, lineno)
        names = [_field(n) for n in head.split(",")]
        body = lines[1:]
    else:
        names = [_field(n) for n in fields]
        body = lines
    rows: list[tuple[int, str, list[str] | None]] = []
    for lineno, line in body:
        _check_fatal(line, lineno)
        values = [v.strip() for v in line.split(",")]
        if len(values) != len(names):
            if line.startswith(("Unable to determine", "Unknown Error", "GPU is lost")):
                rows.append((lineno, line, None))
                continue
            if line.strip() in ("No devices were found", "No running processes found"):
                continue
            raise ParseError(
                f"expected {len(names)} comma-separated values, got {len(values)}",
                line=line, lineno=lineno,
            )
        rows.append((lineno, line, values))
    return names, rows


def parse_query_gpu(text: str, fields: Sequence[str] | None = None) -> tuple[GpuInfo, ...]:
    """Parse ``--query-gpu ... --format=csv``; pass ``fields`` for ``noheader`` output."""
    names, rows = _rows(text, fields)
    out: list[GpuInfo] = []
    for lineno, line, values in rows:
        if values is None:
            bus = _BUS_RE.search(line)
            out.append(GpuInfo(
                index=None, error=line.strip(), bus_id=bus.group(0) if bus else None))
            continue
        v = dict(zip(names, values, strict=True))
        index = _int(v.get("index", ""))
        if "index" in v and index is None:
            raise ParseError("GPU index is not a number", line=line, lineno=lineno)
        out.append(GpuInfo(
            index=index,
            uuid=_str(v.get("uuid", "")),
            name=_str(v.get("name", "")),
            utilization_gpu_pct=_num(v.get("utilization.gpu", "")),
            utilization_memory_pct=_num(v.get("utilization.memory", "")),
            memory_used_mib=_num(v.get("memory.used", "")),
            memory_total_mib=_num(v.get("memory.total", "")),
            temperature_c=_num(v.get("temperature.gpu", "")),
            power_draw_w=_num(v.get("power.draw", "")),
            clocks_sm_mhz=_num(v.get("clocks.sm", "")),
            clocks_mem_mhz=_num(v.get("clocks.mem", "")),
            throttle_reasons=_int(v.get("clocks_throttle_reasons.active", "")),
            pstate=_str(v.get("pstate", "")),
            ecc_uncorrected_volatile=_int(v.get("ecc.errors.uncorrected.volatile.total", "")),
            raw=tuple(zip(names, values, strict=True)),
        ))
    return tuple(out)


def parse_compute_apps(text: str, fields: Sequence[str] | None = None) -> tuple[ComputeApp, ...]:
    """Parse ``--query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv``."""
    names, rows = _rows(text, fields)
    out: list[ComputeApp] = []
    for lineno, line, values in rows:
        if values is None:
            raise ParseError("nvidia-smi could not list compute apps", line=line, lineno=lineno)
        v = dict(zip(names, values, strict=True))
        out.append(ComputeApp(
            pid=_int(v.get("pid", "")),
            process_name=_str(v.get("process_name", "")),
            gpu_uuid=_str(v.get("gpu_uuid", "")),
            used_memory_mib=_num(v.get("used_memory", "")),
        ))
    return tuple(out)


_NVL_GPU_RE = linear.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$")
_NVL_LINK_RE = linear.compile(r"^\s*Link (\d+): ([^:]+?):\s*(\S.*?)\s*$")


def parse_nvlink_errors(text: str) -> tuple[NvlinkGpu, ...]:
    """Parse ``nvidia-smi nvlink -e``: per GPU, per link, counter name -> value."""
    gpus: list[NvlinkGpu] = []
    cur: tuple[int, str, str | None] | None = None
    links: dict[int, list[tuple[str, int | None]]] = {}

    def flush() -> None:
        if cur is not None:
            gpus.append(NvlinkGpu(cur[0], cur[1], cur[2], tuple(
                NvlinkLink(n, tuple(c)) for n, c in sorted(links.items()))))

    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        _check_fatal(line, lineno)
        m = _NVL_GPU_RE.match(line)
        if m:
            flush()
            cur = (to_int(m.group(1)) or 0, m.group(2).strip(), m.group(3))
            links = {}
            continue
        m = _NVL_LINK_RE.match(line)
        if m and cur is not None:
            value = _int(m.group(3))
            if value is None and not _missing(m.group(3)):
                raise ParseError("NVLink counter is not a number", line=line, lineno=lineno)
            links.setdefault(to_int(m.group(1)) or 0, []).append((m.group(2).strip(), value))
            continue
        raise ParseError("not an nvidia-smi nvlink -e line", line=line, lineno=lineno)
    flush()
    return tuple(gpus)


_Q_LINE_RE = linear.compile(r"^(\s*)(\S.*?)\s*(?::\s*(.*?))?\s*$")
_Q_GPU_RE = linear.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")


def _yes_no(v: str) -> bool | None:
    low = v.strip().lower()
    return True if low == "yes" else False if low == "no" else None


def parse_row_remapper(text: str) -> tuple[RowRemap, ...]:
    """Parse ``nvidia-smi -q -d ROW_REMAPPER``: one RowRemap per GPU section."""
    out: list[RowRemap] = []
    bus: str | None = None
    vals: dict[str, str] = {}
    hist: list[tuple[str, int]] = []
    supported = True
    section = ""

    def flush() -> None:
        if bus is not None:
            out.append(RowRemap(
                bus_id=bus, supported=supported,
                correctable=_int(vals.get("Correctable Error", "")),
                uncorrectable=_int(vals.get("Uncorrectable Error", "")),
                pending=_yes_no(vals.get("Pending", "")),
                failure_occurred=_yes_no(vals.get("Remapping Failure Occurred", "")),
                histogram=tuple(hist),
            ))

    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip() or set(line.strip()) <= {"="} or "NVSMI LOG" in line:
            continue
        _check_fatal(line, lineno)
        m = _Q_GPU_RE.match(line)
        if m:
            flush()
            bus, vals, hist, supported, section = m.group(1), {}, [], True, ""
            continue
        m = _Q_LINE_RE.match(line)
        if m is None:  # pragma: no cover - the regex matches any non-blank line
            raise ParseError("unreadable line", line=line, lineno=lineno)
        indent, key, value = len(m.group(1)), m.group(2), m.group(3)
        if bus is None:
            if indent == 0 and value is not None:
                continue  # Timestamp, Driver Version, CUDA Version, Attached GPUs
            raise ParseError("line outside a GPU section", line=line, lineno=lineno)
        if value is None:
            section = key
            continue
        if key == "Remapped Rows":
            supported = not _missing(value)
        elif section == "Bank Remap Availability Histogram" and indent >= 12:
            n = _int(value.split()[0]) if value.split() else None
            if n is not None:
                hist.append((key, n))
        else:
            vals[key] = value
    flush()
    return tuple(out)


_XID_RE = linear.compile(
    r"NVRM: Xid \((?:PCI:)?([^)\s]+)(?: [^)]*)?\): (\d+), (?:pid=('?[^,]*?'?), )?"
    r"(?:name=([^,]*?), )?(.*)$"
)
_UPTIME_RE = linear.compile(r"\[\s*(\d+\.\d+)\]")


def parse_xid_lines(text: str) -> tuple[XidEvent, ...]:
    """Every ``NVRM: Xid`` line of a kernel log (dmesg, dmesg -T, journalctl -k)."""
    out: list[XidEvent] = []
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if "NVRM: Xid" not in line:
            continue
        m = _XID_RE.search(line)
        if m is None:
            continue
        pid_text = (m.group(3) or "").strip("'")
        up = _UPTIME_RE.search(line[: m.start()])
        proc = m.group(4)
        out.append(XidEvent(
            pci=m.group(1),
            xid=to_int(m.group(2)) or 0,
            pid=to_int(pid_text) if pid_text.isdigit() else None,
            process=None if proc is None or proc.strip("<>") == "unknown" else proc,
            message=m.group(5).strip(),
            epoch=parse_log_timestamp(line),
            uptime_s=float(up.group(1)) if up else None,
            line=line,
        ))
    return tuple(out)


#: nvidia-smi's default table: a GPU's row ("|   1  Tesla V100-PCIE...  On   | 00008ED0:00:00.0 Off |")
#: and `nvidia-smi -L`'s listing ("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5135...)")
_TABLE_ROW = linear.compile(r"^\|\s{1,6}\d{1,3}\s{1,4}\S.{0,60}\|\s{0,4}[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:"
                            r"[0-9A-Fa-f]{2}\.\d ", linear.M)
_LISTED = linear.compile(r"^GPU \d{1,3}: [^\n]{1,120}\(UUID: GPU-[0-9a-fA-F-]{8,48}\)", linear.M)


def looks_like_nvidia_smi(text: str) -> bool:
    """The text is nvidia-smi's own output (its table, or the -L listing) as pasted."""
    head = text[:200_000]
    return (("+---" in head or "NVIDIA-SMI" in head) and _TABLE_ROW.search(head) is not None) \
        or _LISTED.search(head) is not None
