"""Sources beneath SGLang: Flight Recorder dumps harvested from the paths the ranks'
environments name, the NCCL RAS report (opt-in ``--nccl-ras``) and cuda-gdb's kernel listing
per rank (opt-in ``--deep``: it stops each rank while it reads; never on by default). The kernel
log is in collectors/logs.py; the planner's follow-ups for these are capture/beneath_plan.py.
"""

from __future__ import annotations

from pdforensics.collectors.base import MIB, SLOW, STACKS, Runs, Source, Target, register
from pdforensics.collectors.feeds import Feed
from pdforensics.collectors.feeds_beneath import cuda_listing, fr_dump, ras_report
from pdforensics.model import HostSpec

#: what the ranks' environments name: the dump file prefix (torch >= 2.7 first), and the
#: variables that turn the Flight Recorder on (a buffer size > 0)
FR_PREFIX_VARS = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
FR_BUFFER_VARS = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
FR_DEFAULT_PREFIX = "/tmp/nccl_trace_rank_"  # torch's default TORCH_NCCL_DEBUG_INFO_TEMP_FILE
FR_MAX_BYTES = 32 * MIB  # per dump: a 2000-entry dump with frames is a few MB
FR_MAX_FILES = 16  # per host and prefix
DEEP_TIMEOUT_S = 30.0  # per rank: how long cuda-gdb may keep one rank stopped
RAS_TIMEOUT_S = 5  # ncclras -t: how long the NCCL processes may take to answer


def _dir_base(prefix: str) -> tuple[str, str]:
    d, _, base = prefix.rpartition("/")
    return d or ".", base


def _list_fr(host: HostSpec, t: Target) -> tuple[str, ...]:
    directory, base = _dir_base(t.path)
    # regular files only (no symlink out of the directory), the prefix and anything after it
    return ("find", directory, "-maxdepth", "1", "-type", "f", "-name", base + "*")


FLIGHT_RECORDER_LIST = register(Source(
    name="flight_recorder_list", runs=Runs.FOLLOW_UP,  # planned by capture/beneath_plan.py
    description="Flight Recorder dump files under the prefix the ranks' environments name",
    scope="host", build=_list_fr, timeout_s=5, max_bytes=64 * 1024, priority=SLOW,
    parser="flight_recorder:parse_fr_list",
    sample="fr_list.txt", feeds=Feed("capture.discovery"),  # the planner finds the dump files in it
))

FLIGHT_RECORDER = register(Source(
    name="flight_recorder", runs=Runs.FOLLOW_UP,
    description="one rank's Flight Recorder dump (pickle written as redacted JSON, size-capped)",
    scope="host", build=lambda host, t: ("head", "-c", str(FR_MAX_BYTES), "--", t.path),
    reads=lambda host, t: t.path, timeout_s=10, max_bytes=FR_MAX_BYTES, priority=SLOW,
    parser="flight_recorder:parse_fr_bytes", sample="field/flight_recorder/"
    "gen-torch213-gloo-fr-rank0-pickle.pkl", privileged=True, extension="fr", redaction="pickle",
    feeds=Feed("host.flight_recorder", fr_dump),
))


def _ras(host: HostSpec, t: Target) -> tuple[str, ...]:
    argv = ["ncclras", "-t", str(RAS_TIMEOUT_S)]
    if t.path:  # NCCL_RAS_ADDR of the ranks: host:port
        addr, _, port = t.path.rpartition(":")
        argv += ["-h", addr or "localhost", "-p", port]
    return tuple(argv)


def _pid(t: Target) -> str:
    assert t.process is not None
    return str(t.process.pid)


NCCL_RAS = register(Source(
    runs=Runs.FOLLOW_UP, name="nccl_ras", description="NCCL RAS report of the job (ncclras; capture --nccl-ras)",
    scope="host", build=_ras, timeout_s=RAS_TIMEOUT_S + 15, max_bytes=4 * MIB, priority=SLOW,
    parser="nccl_ras:parse_ras", sample="field/nccl/nccl-1911-ras-mismatch-two-ranks-ahead.txt",
    feeds=Feed("host.nccl_ras", ras_report),
))

CUDA_GDB = register(Source(
    runs=Runs.FOLLOW_UP, name="cuda_gdb", description="cuda-gdb `info cuda kernels` of one rank (capture --deep: the "
                                 "rank is stopped while cuda-gdb reads it)",
    scope="process", build=lambda host, t: ("cuda-gdb", "--batch", "-nx", "-p", _pid(t),
                                            "-ex", "info cuda kernels"),
    timeout_s=DEEP_TIMEOUT_S, max_bytes=1 * MIB, priority=STACKS,
    parser="cuda_gdb:parse_cuda_kernels", sample="cuda_gdb_info_cuda_kernels.txt",
    privileged=True, feeds=Feed("process.cuda_kernels", cuda_listing),
))
