"""GPU state: nvidia-smi (late, under its own timeout: it can hang on a wedged GPU) and NVML.

nvidia-smi runs through sudo on sudo hosts: device nodes and the driver tools are often
restricted to root or a video group the login user is not in.
"""

from __future__ import annotations

import sys

from pdforensics.collectors.base import MIB, SLOW, Absence, Source, Switch, register
from pdforensics.collectors.feeds import CAPTURE_LEVEL, Feed, first_ok, gpu_table
from pdforensics.model import HostSpec

QUERY_GPU_FIELDS = (
    "index,uuid,name,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,"
    "temperature.gpu,power.draw,clocks.sm,clocks.mem,clocks_throttle_reasons.active,pstate,"
    "ecc.errors.uncorrected.volatile.total"
)
COMPUTE_APP_FIELDS = "pid,process_name,gpu_uuid,used_memory"
GPU_TIMEOUT_S = 15
#: nvidia-smi on a host without a GPU: exit 6, "No devices were found"
NO_GPU = Absence(exit_status=6, texts=("No devices were found",))


def _smi(host: HostSpec, *args: str) -> tuple[str, ...]:
    return (host.nvidia_smi, *args)


NVIDIA_SMI_QUERY = register(Source(
    name="nvidia_smi_query", description="per-GPU utilisation, memory, clocks, throttle, ECC",
    scope="host",
    build=lambda host, t: _smi(host, f"--query-gpu={QUERY_GPU_FIELDS}", "--format=csv"),
    timeout_s=GPU_TIMEOUT_S, max_bytes=1 * MIB, priority=SLOW,
    parser="nvidia_smi:parse_query_gpu", sample="nvsmi_query_gpu_h200.csv", privileged=True,
    feeds=Feed("host.gpus", gpu_table), switch=Switch.GPU, absent=NO_GPU,
))
NVIDIA_SMI_APPS = register(Source(
    name="nvidia_smi_apps", description="processes on each GPU",
    scope="host",
    build=lambda host, t: _smi(host, f"--query-compute-apps={COMPUTE_APP_FIELDS}",
                               "--format=csv"),
    timeout_s=GPU_TIMEOUT_S, max_bytes=1 * MIB, priority=SLOW,
    parser="nvidia_smi:parse_compute_apps", sample="nvsmi_compute_apps.csv", privileged=True,
    feeds=Feed("host.gpu_apps", first_ok), switch=Switch.GPU, absent=NO_GPU,
))
NVIDIA_SMI_NVLINK = register(Source(
    name="nvidia_smi_nvlink", description="NVLink error counters (nvidia-smi nvlink -e)",
    scope="host", build=lambda host, t: _smi(host, "nvlink", "-e"),
    timeout_s=GPU_TIMEOUT_S, max_bytes=2 * MIB, priority=SLOW,
    parser="nvidia_smi:parse_nvlink_errors", sample="nvsmi_nvlink_errors.txt", privileged=True,
    feeds=Feed("host.nvlink", first_ok), switch=Switch.GPU, absent=NO_GPU,
))
NVIDIA_SMI_REMAP = register(Source(
    name="nvidia_smi_row_remapper", description="row remapper state (-q -d ROW_REMAPPER)",
    scope="host", build=lambda host, t: _smi(host, "-q", "-d", "ROW_REMAPPER"),
    timeout_s=GPU_TIMEOUT_S, max_bytes=1 * MIB, priority=SLOW,
    parser="nvidia_smi:parse_row_remapper", sample="nvsmi_row_remapper.txt", privileged=True,
    feeds=Feed("host.row_remap", first_ok), switch=Switch.GPU, absent=NO_GPU,
))
NVIDIA_SMI = register(Source(
    name="nvidia_smi", description="plain nvidia-smi: driver and CUDA versions, overview",
    scope="host", build=lambda host, t: _smi(host), timeout_s=GPU_TIMEOUT_S, max_bytes=1 * MIB,
    priority=SLOW, parser="versions:parse_nvidia_smi_version", sample="pip_nvidia_smi_header.txt",
    privileged=True, feeds=Feed(f"{CAPTURE_LEVEL}.nvidia_versions"),  # read by diff
    switch=Switch.GPU, config=True, absent=NO_GPU,
))
NVML = register(Source(
    name="nvml", description="NVML through pynvml (local host only, in a child process)",
    scope="host",
    build=lambda host, t: (sys.executable, "-m", "pdforensics.collectors.nvml_probe"),
    timeout_s=GPU_TIMEOUT_S, max_bytes=1 * MIB, priority=SLOW, parser="nvml:parse_nvml",
    sample="nvml_h200.json", extension="json", feeds=Feed("host.nvml", first_ok),
    switch=Switch.GPU, only=lambda host, d, t: host.is_local,  # NVML of this machine only
))
