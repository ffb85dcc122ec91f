"""The lab's router: the real SGLang model gateway (`smg launch`, PyPI `smg`) by default, or
the stand-in `python -m sglang_router.launch_router` for the older command line; and the
lab's clients that send it traffic."""

from __future__ import annotations

import json
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

from pdforensics.errors import PdforensicsError
from pdforensics.lab.layout import LabHost, Ports

ROUTERS = ("smg", "standin")
SMG_HINT = "pip install smg (the SGLang model gateway), or start the lab with --router standin"


def smg_path() -> str | None:
    """The smg launcher: next to this interpreter, else on PATH."""
    candidate = Path(sys.executable).parent / "smg"
    if candidate.exists():
        return str(candidate)
    return shutil.which("smg")


def check_router(kind: str) -> None:
    """Raise a one-line error for an unknown router kind or a missing smg."""
    if kind not in ROUTERS:
        raise PdforensicsError(f"unknown router {kind!r}; choose one of: {', '.join(ROUTERS)}")
    if kind == "smg" and smg_path() is None:
        raise PdforensicsError(f"the lab's router needs smg, which is not installed: {SMG_HINT}")


def router_argv(kind: str, host: LabHost, prefill: LabHost, decode: LabHost, ports: Ports) -> list[str]:
    """The router's command line: `smg launch ...` or the stand-in's `-m sglang_router...`."""
    if kind == "smg":
        program = [smg_path() or "smg", "launch"]
    else:
        program = [sys.executable, "-m", "sglang_router.launch_router"]
    argv = program + [
        "--pd-disaggregation",
        "--prefill", f"http://{prefill.bind}:{ports.prefill}", str(ports.bootstrap),
        "--decode", f"http://{decode.bind}:{ports.decode}",
        "--host", host.bind,
        "--port", str(ports.router),
        "--prometheus-port", str(ports.router_metrics),
        "--policy", "cache_aware",
    ]
    if kind == "smg":  # metrics on the router's own address; an open breaker retries after 5 s
        # (60 s by default), so the lab heals soon after a fault is switched off
        argv += ["--prometheus-host", host.bind, "--log-level", "info", "--cb-timeout-duration-secs", "5"]
    return argv


def client_argv(router_url: str) -> list[str]:
    """The lab's clients: `python -m pdfx_lab_runtime.client URL` (two requests a second)."""
    return [sys.executable, "-m", "pdfx_lab_runtime.client", router_url]



def registered_workers(base: str) -> int:
    """How many workers the router lists on /workers (0 when it does not answer)."""
    try:
        with urllib.request.urlopen(base + "/workers", timeout=1.0) as resp:
            body = json.loads(resp.read())
    except (OSError, ValueError):
        return 0
    workers = body.get("workers") if isinstance(body, dict) else None
    return len(workers) if isinstance(workers, list) else 0


def routes_a_request(base: str) -> bool:
    """One generate request through the router got an HTTP answer (any status): the router
    has dispatched to its workers at least once, so its per-worker series exist."""
    req = urllib.request.Request(base + "/generate", data=b'{"text": "ping", "sampling_params": '
                                 b'{"max_new_tokens": 1}}', headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=2.0) as resp:
            resp.read()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True
