"""Pod facts beside the capture: the pod object, its events and its server's log, read by
kubectl on this machine (never inside the pod), each result with its kubectl argv."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pdforensics.bundle.ondisk import BundleWriter
from pdforensics.capture.deadline import Deadline
from pdforensics.capture.planner import target_json
from pdforensics.capture.run import Sidecar
from pdforensics.collectors import REGISTRY
from pdforensics.collectors.base import Runs, Source, Target
from pdforensics.collectors.k8s import K8S_POD
from pdforensics.model import CommandResult, HostSpec
from pdforensics.sglang.discovery import Service

from .discover import PodHost, run_kubectl
from .podjson import scrub_pod_json

WORKERS = 4


def pod_facts_sidecar(hosts: Sequence[PodHost], recorded: Sequence[CommandResult] = ()) -> Sidecar:
    """A sidecar that writes the kubectl results taken before the capture (discovery, debug
    containers) and then reads each pod's facts, events and log within the deadline."""

    def run(writer: BundleWriter, deadline: Deadline) -> None:
        for i, result in enumerate(recorded):
            data = scrub_pod_json(result.stdout, writer.redactor) if result.source == "k8s_pods" \
                else result.stdout
            ext = "json" if result.source == "k8s_pods" else "txt"
            writer.add(_with_stdout(result, data), key=f"{result.source}.{i}", extension=ext)
        jobs = [(ph, src, tgt) for ph in hosts for src, tgt in pod_sources(ph.host)]
        with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="k8s-facts") as pool:
            for _ in pool.map(lambda j: _one(writer, deadline, *j), jobs):
                pass

    return run


def pod_sources(host: HostSpec) -> list[tuple[Source, Target]]:
    """The registry's per-pod sources, bound to the pod (host scope) or to each service it
    declares (endpoint scope)."""
    services = [Service(role=spec.role, kind="router" if spec.role == "router" else "server",
                        port=spec.port, address="127.0.0.1", root_pid=None, pids=(),
                        metrics_port=spec.metrics_port, unit=None, log_file=None, declared=True)
                for spec in host.services]
    out: list[tuple[Source, Target]] = []
    for src in REGISTRY.values():
        if src.runs is Runs.PER_POD:
            out += [(src, Target())] if src.scope == "host" else [(src, Target(service=s)) for s in services]
    return out


def _one(writer: BundleWriter, deadline: Deadline, ph: PodHost, src: Source, target: Target) -> None:
    left = deadline.sidecar_timeout()
    key = f"{src.name}.{target.label}" if target.label else src.name
    argv = src.build(ph.host, target)
    if left < 1.0:
        result = CommandResult(host=ph.host.name, source=src.name, argv=argv, exit_status=None,
                               stdout=b"", stderr="", duration_s=0.0, started_at=time.time(),
                               error="not run: deadline reached")
    else:
        result = run_kubectl(src.name, argv, min(src.timeout_s, left), src.max_bytes,
                             host=ph.host.name)
        if src is K8S_POD:
            result = _with_stdout(result, scrub_pod_json(result.stdout, writer.redactor))
    writer.add(result, key=key, extension=src.extension, target=target_json(target) or None)


def _with_stdout(result: CommandResult, data: bytes) -> CommandResult:
    return CommandResult(**{**result.__dict__, "stdout": data})
