"""How the lab's stand-in servers are launched: their command lines and environments."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pdforensics.lab.layout import NVIDIA_SMI_SRC, STANDIN_DIR, LabHost, Ports
from pdforensics.lab.procs import LAB_DIR_ENV

MODEL_PATH = "/models/DeepSeek-V3"
MODEL_NAME = "deepseek-v3"


def server_env(lab_dir: Path, host: LabHost, secret_env: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PDFX_"))}
    env.update(
        {
            "PYTHONPATH": str(STANDIN_DIR),
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            LAB_DIR_ENV: str(lab_dir),
            "PDFX_LAB_HOST": host.name,
        }
    )
    if host.role in ("prefill", "decode"):
        env.update(
            {
                "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT": "300",
                "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "300",
                "SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL": "5",
                "NCCL_DEBUG": "WARN",
                "NCCL_IB_DISABLE": "0",
                "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in host.gpus),
                "HF_HOME": str(lab_dir / "hf"),
            }
        )
    env.update(secret_env or {})
    return env


def server_argv(host: LabHost, ports: Ports, drop: Sequence[str] = ()) -> list[str]:
    port = ports.prefill if host.role == "prefill" else ports.decode
    argv = [
        sys.executable,
        "-m",
        "sglang.launch_server",
        "--model-path",
        MODEL_PATH,
        "--served-model-name",
        MODEL_NAME,
        "--disaggregation-mode",
        host.role,
    ]
    if host.role == "prefill":
        argv += ["--disaggregation-bootstrap-port", str(ports.bootstrap)]
    argv += [
        "--disaggregation-transfer-backend",
        "mooncake",
        "--tp-size",
        "2",
        "--dp-size",
        "1",
        "--host",
        host.bind,
        "--port",
        str(port),
        "--enable-metrics",
        "--mem-fraction-static",
        "0.85",
        "--chunked-prefill-size",
        "8192",
        "--page-size",
        "64",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--watchdog-timeout",
        "300",
        "--trust-remote-code",
    ]
    if host.role == "decode":
        argv += ["--cuda-graph-max-bs-decode", "128"]
    return [a for a in argv if a not in drop]


def stdlib_python() -> str:
    """The interpreter for the lab's stand-in tools: the system python3 when there is one.

    The fake nvidia-smi needs only the standard library; run with -I -S it starts in ~25 ms of
    CPU instead of ~45 ms for a venv interpreter with site-packages, which matters when 32
    simulated hosts share one machine's cores with the tool under test."""
    system = Path("/usr/bin/python3")
    return str(system) if system.exists() else sys.executable


def install_nvidia_smi(lab_dir: Path, host: LabHost) -> Path:
    dest = lab_dir / "hosts" / host.name / "bin" / "nvidia-smi"
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = NVIDIA_SMI_SRC.read_text()
    text = text.replace("#!/usr/bin/env python3", f"#!{stdlib_python()} -IS", 1)
    text = text.replace("@@LAB_DIR@@", str(lab_dir)).replace("@@LAB_HOST@@", host.name)
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, dest)
    dest.chmod(0o755)
    return dest
