"""The lab's processes described as pods, for the stand-in kubectl (tests/support/kubectl_standin)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil

from pdforensics.lab.core import LabInfo

STANDIN_DIR = Path(__file__).parent / "kubectl_standin"
NAMESPACE = "sglang-lab"
LABELS = {  # one pod per role, labelled the way RBG does (the router is the RBG "router" role)
    "router": {"rolebasedgroup.workloads.x-k8s.io/name": "lab", "rolebasedgroup.workloads.x-k8s.io/role": "router"},
    "prefill": {"rolebasedgroup.workloads.x-k8s.io/name": "lab", "rolebasedgroup.workloads.x-k8s.io/role": "prefill"},
    "decode": {"rolebasedgroup.workloads.x-k8s.io/name": "lab", "rolebasedgroup.workloads.x-k8s.io/role": "decode"},
}


def lab_pod(info: LabInfo, role: str, host: str) -> dict[str, Any]:
    """A Pod object whose container command line is the lab process's own (from /proc)."""
    cmd = psutil.Process(info.pids[role]).cmdline()
    annotations = {"sglang.ai/bootstrap-port": str(info.ports.bootstrap)} if role == "prefill" else {}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": host, "namespace": NAMESPACE, "labels": LABELS[role],
                     "annotations": annotations, "creationTimestamp": "2026-01-01T00:00:00Z",
                     "uid": f"00000000-0000-4000-8000-00000000000{len(role)}",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                          "name": f"lab-{role}", "controller": True}]},
        "spec": {"nodeName": "lab-node", "containers": [{
            "name": role, "image": "pdforensics-lab:standin", "command": cmd[:1], "args": cmd[1:],
            "readinessProbe": {"httpGet": {"path": "/health", "port": info.host(role).http_port},
                               "periodSeconds": 10, "failureThreshold": 3}}]},
        "status": {"phase": "Running", "containerStatuses": [{
            "name": role, "image": "pdforensics-lab:standin", "imageID": "", "ready": True,
            "restartCount": 0, "started": True, "lastState": {},
            "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}}]},
    }


def write_fixture(info: LabInfo, path: Path, behaviour: Mapping[str, Mapping[str, Any]] | None = None,
                  events: list[dict[str, Any]] | None = None) -> Path:
    """The stand-in's fixture: a pod per lab role, each exec'ing with the lab host's fake
    nvidia-smi and this interpreter's py-spy first on PATH, and logs from the lab's log files."""
    hosts = {h.role: h.name for h in info.hosts}
    standin: dict[str, Any] = {}
    for role, host in hosts.items():
        standin[f"{NAMESPACE}/{host}"] = {
            "path_prepend": [str(info.dir / "hosts" / host / "bin"), str(Path(sys.executable).parent)],
            "log_file": str(info.dir / "logs" / f"{role}.log"),
            **(behaviour or {}).get(host, {})}
    doc = {"pods": [lab_pod(info, role, host) for role, host in hosts.items()],
           "events": events or [], "standin": standin, "record": str(path) + ".argv.jsonl"}
    path.write_text(json.dumps(doc, indent=1))
    Path(str(path) + ".state.json").unlink(missing_ok=True)
    Path(str(path) + ".argv.jsonl").unlink(missing_ok=True)
    return path


def standin_env(fixture: Path) -> dict[str, str]:
    """The environment that puts the stand-in first on PATH and points it at the fixture."""
    return {"PATH": f"{STANDIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECTL_STANDIN_FIXTURE": str(fixture)}


def recorded_argvs(fixture: Path) -> list[list[str]]:
    p = Path(str(fixture) + ".argv.jsonl")
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []
