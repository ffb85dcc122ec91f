"""The opt-in ephemeral debug container py-spy runs in when the server's image lacks it or
ptrace is not allowed. It changes the pod: an ephemeral container cannot be removed, so it
runs `sleep` for the capture's deadline and then exits (it stays listed in the pod spec)."""

from __future__ import annotations

import dataclasses
import secrets
import time
from dataclasses import dataclass

from pdforensics.collectors.k8s import K8S_DEBUG
from pdforensics.model import CommandResult
from pdforensics.parsers.k8s import parse_pod
from pdforensics.transport.kubectl import debug_argv, get_pod_argv

from .discover import PodHost, run_kubectl

DEBUG_TIMEOUT_S = 30.0
GRACE_S = 30  # the container outlives the deadline by this much, then exits


@dataclass(frozen=True)
class DebugOutcome:
    hosts: tuple[PodHost, ...]  # with the debug container set where it runs
    results: tuple[CommandResult, ...]  # every kubectl debug (goes into the bundle)
    notes: tuple[str, ...]


def debug_container_name() -> str:
    return "pdforensics-debug-" + secrets.token_hex(3)


def add_debug_containers(hosts: tuple[PodHost, ...], image: str, deadline_s: float,
                         wait_s: float = 20.0) -> DebugOutcome:
    """`kubectl debug POD --target=C --profile=sysadmin` per pod, then wait (bounded) until
    each runs; a pod whose debug container does not run keeps py-spy in its own container."""
    name = debug_container_name()
    seconds = int(deadline_s) + GRACE_S
    out, results, notes = [], [], []
    for ph in hosts:
        argv = debug_argv(ph.target, image, name, seconds)
        result = run_kubectl(K8S_DEBUG.name, argv, DEBUG_TIMEOUT_S, 64 * 1024, host=ph.host.name)
        results.append(result)
        if not result.ok:
            why = (result.stderr.strip().splitlines() or [result.error or "timed out"])[-1]
            notes.append(f"{ph.host.name}: debug container not added: {why[:200]}")
            out.append(ph)
            continue
        out.append(ph)
    started = time.monotonic()
    ready = {ph.host.name for ph in out if _running(ph, name, started + wait_s)} \
        if any(r.ok for r in results) else set()
    final = []
    for ph, result in zip(out, results, strict=True):
        if result.ok and ph.host.name in ready:
            target = dataclasses.replace(ph.target, debug_container=name)
            final.append(dataclasses.replace(
                ph, target=target, host=dataclasses.replace(ph.host, address=target.address())))
        else:
            if result.ok:
                notes.append(f"{ph.host.name}: debug container {name} not running within "
                             f"{wait_s:g}s: py-spy runs in the server's container")
            final.append(ph)
    return DebugOutcome(tuple(final), tuple(results), tuple(notes))


def _running(ph: PodHost, name: str, until: float) -> bool:
    while True:
        got = run_kubectl("k8s_pod", get_pod_argv(ph.target), 10.0, 16 * 1024 * 1024)
        if got.ok:
            try:
                pod = parse_pod(got.stdout.decode("utf-8", "replace"))
            except Exception:
                pod = None
            c = next((c for c in pod.containers if c.name == name), None) if pod else None
            if c is not None and c.state == "running":
                return True
        if time.monotonic() >= until:
            return False
        time.sleep(0.5)
