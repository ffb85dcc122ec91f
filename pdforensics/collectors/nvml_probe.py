"""Child-process NVML probe: prints one JSON object; a missing library is data, not a crash."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def probe() -> dict[str, Any]:
    try:
        import pynvml
    except ImportError as exc:
        return {"available": False, "error": f"pynvml not importable: {exc}"}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return {"available": False, "error": f"NVML init failed: {exc}"}
    out: dict[str, Any] = {"available": True, "gpus": []}
    try:
        out["driver_version"] = _s(pynvml.nvmlSystemGetDriverVersion())
        out["cuda_driver_version"] = pynvml.nvmlSystemGetCudaDriverVersion()
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            gpu: dict[str, Any] = {"index": i, "name": _s(pynvml.nvmlDeviceGetName(h)),
                                   "uuid": _s(pynvml.nvmlDeviceGetUUID(h))}
            _read_device(pynvml, h, gpu)
            out["gpus"].append(gpu)
    finally:
        pynvml.nvmlShutdown()
    return out


def _read_device(nvml: Any, h: Any, gpu: dict[str, Any]) -> None:
    """Each reading on its own: one unsupported query must not lose the others."""
    readers: dict[str, Callable[[], Any]] = {
        "utilization": lambda: nvml.nvmlDeviceGetUtilizationRates(h).gpu,
        "memory_used": lambda: nvml.nvmlDeviceGetMemoryInfo(h).used,
        "memory_total": lambda: nvml.nvmlDeviceGetMemoryInfo(h).total,
        "temperature": lambda: nvml.nvmlDeviceGetTemperature(h, 0),
        "power_mw": lambda: nvml.nvmlDeviceGetPowerUsage(h),
        "throttle_reasons": lambda: nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h),
        "pids": lambda: [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(h)],
    }
    for key, fn in readers.items():
        try:
            gpu[key] = fn()
        except Exception as exc:
            gpu[key + "_error"] = str(exc)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


if __name__ == "__main__":
    json.dump(probe(), sys.stdout)
    sys.stdout.write("\n")
