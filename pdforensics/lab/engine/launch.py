"""How the real engine lab's processes are launched: SGLang's prefill and decode servers on the
CPU, and smg in front of them. Only flags, env vars and our PYTHONPATH folder (the kernel
stand-in and the two-setting hook): nothing of SGLang on disk is changed."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pdforensics.lab.engine.env import PYLIB, EngineEnv
from pdforensics.lab.layout import LabHost, Ports
from pdforensics.lab.procs import LAB_DIR_ENV

MAX_TOTAL_TOKENS = 4096
# Rehearsal settings, so SGLang's own safeguards act within a capture (defaults: 300 s each):
# the PD bootstrap / waiting timeouts, the heartbeat, and the scheduler watchdog.
PD_TIMEOUT_S = 45
WATCHDOG_S = 30
CB_TIMEOUT_S = 5  # smg's open breaker retries after 5 s (60 by default): the lab heals soon

COMMON_ARGS = (
    "--load-format", "dummy", "--device", "cpu", "--attention-backend", "torch_native",
    "--disable-cuda-graph", "--max-total-tokens", str(MAX_TOTAL_TOKENS), "--mem-fraction-static", "0.05",
    "--sleep-on-idle", "--enable-metrics", "--disaggregation-transfer-backend", "mooncake_tcp",
    "--log-requests", "--watchdog-timeout", str(WATCHDOG_S),
)


def engine_env(env: EngineEnv, lab_dir: Path, host: LabHost, tp: int) -> dict[str, str]:
    """A server's environment: SGLang's CPU engine, offline, our PYTHONPATH folder, loopback only."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PDFX_", "VIRTUAL_ENV"))}
    out.update({
        "SGLANG_USE_CPU_ENGINE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(lab_dir / "hf"),
        "PYTHONPATH": str(PYLIB),
        "PYTHONUNBUFFERED": "1",
        # our PYTHONPATH folder lives in the installed package: the servers never write
        # into it (their site-packages were compiled when the environment was built)
        "PYTHONDONTWRITEBYTECODE": "1",
        "SGLANG_DISAGG_PREFILL_EARLY_SEND_CACHED_PREFIX": "false",
        # the KV manager and Mooncake advertise this address (unset: the NIC's)
        "SGLANG_HOST_IP": host.bind,
        # SGLang's watchdog and crash handler run `py-spy dump` by name through /bin/sh
        "PATH": f"{env.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": str(PD_TIMEOUT_S),
        "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": str(PD_TIMEOUT_S),
        "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL": "2",
        "SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE": "2",
        LAB_DIR_ENV: str(lab_dir),
        "PDFX_LAB_HOST": host.name,
    })
    if tp > 1:  # one NUMA node here: SGLang asserts ranks <= NUMA nodes unless told the cores
        out["SGLANG_CPU_OMP_THREADS_BIND"] = "|".join(str(i % (os.cpu_count() or 1)) for i in range(tp))
    return out


def engine_server_argv(env: EngineEnv, host: LabHost, ports: Ports, tp: int) -> list[str]:
    port = ports.prefill if host.role == "prefill" else ports.decode
    argv = [str(env.python), "-m", "sglang.launch_server", "--model-path", str(env.model), *COMMON_ARGS,
            "--host", host.bind, "--port", str(port), "--tp-size", str(tp),
            "--disaggregation-mode", host.role]
    if host.role == "prefill":
        argv += ["--disaggregation-bootstrap-port", str(ports.bootstrap)]
    else:
        argv += ["--disaggregation-decode-retraction-backup", "cpu_tensor"]
    return argv


def engine_router_argv(env: EngineEnv, host: LabHost, prefill: LabHost, decode: LabHost,
                       ports: Ports) -> list[str]:
    return [str(env.smg), "launch", "--pd-disaggregation",
            "--prefill", f"http://{prefill.bind}:{ports.prefill}", str(ports.bootstrap),
            "--decode", f"http://{decode.bind}:{ports.decode}",
            "--host", host.bind, "--port", str(ports.router),
            "--prometheus-host", host.bind, "--prometheus-port", str(ports.router_metrics),
            "--log-level", "info", "--cb-timeout-duration-secs", str(CB_TIMEOUT_S)]


def router_env(lab_dir: Path, host: LabHost) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PDFX_"))}
    out.update({LAB_DIR_ENV: str(lab_dir), "PDFX_LAB_HOST": host.name})
    return out


def tool_argv(python: str, module: str, args: Sequence[str]) -> list[str]:
    """A lab tool of pdfx_lab_runtime (clients, load), run by the given interpreter."""
    return [python, "-m", f"pdfx_lab_runtime.{module}", *args]
