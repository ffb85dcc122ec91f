"""GPU: nvidia-smi (an NVML client) answers, its driver version, persistence mode."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.doctor.inputs import DoctorInput
from pdforensics.doctor.model import Check, fail, ok, warn
from pdforensics.doctor.probes import DOCTOR_GPU
from pdforensics.views.loaded import HostView

GPU_ROLES = ("prefill", "decode", "unified")


def gpu_rows(text: str) -> list[tuple[str, str, str]]:
    """(index, driver, persistence) rows of `--query-gpu=...,--format=csv,noheader`."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[0].isdigit():
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def serves_gpu(h: HostView) -> bool:
    return any(s.role in GPU_ROLES for s in h.services)


def gpu_checks(d: DoctorInput) -> Iterator[Check]:
    for h in d.hosts:
        if not h.reachable or not serves_gpu(h):
            continue
        probe = d.probe(h.name, DOCTOR_GPU.name)
        rows = gpu_rows(probe.text) if probe is not None and probe.entry.ok else []
        if not rows:
            why = probe.failure if probe is not None and not probe.entry.ok else "no GPU rows"
            yield fail("gpu_readable", h.name, f"nvidia-smi/NVML gave no GPU state: {why}",
                       "install the NVIDIA driver utilities on the host (or set nvidia_smi = PATH "
                       "in the cluster file); inside a container mount the driver "
                       "(NVIDIA_DRIVER_CAPABILITIES=utility)")
            continue
        drivers = sorted({r[1] for r in rows})
        yield ok("gpu_readable", h.name, f"{len(rows)} GPU(s) through nvidia-smi/NVML, "
                 f"driver {', '.join(drivers)}")
        off = [r[0] for r in rows if r[2].lower() not in ("enabled", "on")]
        if off:
            yield warn("gpu_persistence", h.name, f"persistence mode off on GPU {', '.join(off)}: "
                       "nvidia-smi may stall seconds per call and the driver state resets when idle",
                       "enable it: `nvidia-smi -pm 1`, or run nvidia-persistenced")
        else:
            yield ok("gpu_persistence", h.name, "persistence mode on for every GPU")


def host_driver(d: DoctorInput, host: str) -> str | None:
    """The host's driver version from the probe (one value, or several joined)."""
    probe = d.probe(host, DOCTOR_GPU.name)
    if probe is None or not probe.entry.ok:
        return None
    drivers = sorted({r[1] for r in gpu_rows(probe.text)})
    return "/".join(drivers) or None
