"""The lab's router: the real SGLang model gateway (`smg launch`, PyPI `smg`) by default, or
the stand-in `python -m sglang_router.launch_router` for the older command line; and the
lab's clients that send it traffic."""

from __future__ import annotations

import json
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
        # (60 s by default), so the lab heals soon after a fault is switched off; `lab down`
        # waits 1 s for in-flight requests, not smg's 180 s (it killed the router after 3 s)
        argv += ["--prometheus-host", host.bind, "--log-level", "info", "--cb-timeout-duration-secs", "5",
                 "--shutdown-grace-period-secs", "1"]
    return argv


def client_argv(router_url: str) -> list[str]:
    """The lab's clients: `python -m pdfx_lab_runtime.client URL` (two requests a second)."""
    return [sys.executable, "-m", "pdfx_lab_runtime.client", router_url]


def _workers(base: str) -> list[object]:
    """The router's /workers list ([] when it does not answer)."""
    try:
        with urllib.request.urlopen(base + "/workers", timeout=1.0) as resp:
            body = json.loads(resp.read())
    except (OSError, ValueError):
        return []
    workers = body.get("workers") if isinstance(body, dict) else None
    return workers if isinstance(workers, list) else []


def registered_workers(base: str) -> int:
    """How many workers the router lists on /workers (0 when it does not answer)."""
    return len(_workers(base))


def healthy_workers(base: str) -> int:
    """How many workers the router's /workers calls healthy (0 when it does not answer)."""
    return sum(1 for w in _workers(base) if isinstance(w, dict) and w.get("is_healthy") is True)


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


# --- decode-only: the prefill worker deregistered from the real gateway at run time ---------

DECODE_ONLY = "decode-only"
SWITCH_TIMEOUT_S = 20.0  # smg drains a removed worker for 5 s before it leaves /workers


def _call(method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=3.0) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def _prefill_ids(base: str) -> list[str]:
    try:
        body = _call("GET", base + "/workers")
    except (OSError, ValueError):
        return []
    rows = body.get("workers") if isinstance(body, dict) else None
    return [str(w["id"]) for w in rows if isinstance(w, dict) and w.get("worker_type") == "prefill"
            and "id" in w] if isinstance(rows, list) else []


def _active(metrics_url: str, worker: str) -> float:
    """smg_worker_requests_active of one worker URL, 0 when the router does not answer."""
    try:
        with urllib.request.urlopen(metrics_url, timeout=2.0) as resp:
            lines = resp.read().decode(errors="replace").splitlines()
    except OSError:
        return 0.0
    return sum(float(ln.rsplit(" ", 1)[1]) for ln in lines
               if ln.startswith("smg_worker_requests_active{") and f'worker="{worker}"' in ln)


def _wait(check: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + SWITCH_TIMEOUT_S
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.25)
    raise PdforensicsError(f"lab router: {what} within {SWITCH_TIMEOUT_S:.0f} s")


def switch_router_fault(record: dict[str, Any], old: str | None, new: str) -> None:
    """The router's side of a fault switch. decode-only: once the decode stand-in holds a
    request (it waits for KV no prefill will send), deregister the prefill worker from smg
    (DELETE /workers/{id}, its real control-plane API); leaving decode-only registers it
    again (POST /workers with its URL and bootstrap port). Other switches touch nothing."""
    if DECODE_ONLY not in (old, new) or old == new:
        return
    if record.get("router", "smg") != "smg":
        raise PdforensicsError("decode-only needs the real gateway: `pdforensics lab up --router smg`")
    ports = record["ports"]
    binds = {h["role"]: h["bind"] for h in record["hosts"]}
    base = f"http://{binds['router']}:{ports['router']}"
    prefill = f"http://{binds['prefill']}:{ports['prefill']}"
    decode = f"http://{binds['decode']}:{ports['decode']}"
    if new == DECODE_ONLY:
        metrics = f"http://{binds['router']}:{ports['router_metrics']}/metrics"
        _wait(lambda: _active(metrics, decode) > 0, "no request reached the decode worker")
        for worker_id in _prefill_ids(base):
            _call("DELETE", f"{base}/workers/{worker_id}")
        _wait(lambda: not _prefill_ids(base), "the prefill worker did not leave /workers")
        return
    if not _prefill_ids(base):
        _call("POST", base + "/workers", {"url": prefill, "worker_type": "prefill",
                                          "bootstrap_port": ports["bootstrap"]})
    _wait(lambda: registered_workers(base) >= 2 and bool(_prefill_ids(base)),
          "the prefill worker did not come back on /workers")
