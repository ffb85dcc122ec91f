"""`capture --k8s`: pods found, debug containers added when asked, and the cluster, sidecar
and manifest section the capture runs with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pdforensics.capture.run import Sidecar
from pdforensics.collectors.k8s import K8S_DEBUG
from pdforensics.model import ClusterSpec, CommandResult, HostSpec
from pdforensics.transport.kubectl import PER_NODE_EXECS, TOTAL_EXECS, kubectl_binary

from .debug import add_debug_containers
from .discover import PodHost, discover_pods
from .settings import K8sSettings
from .sidecar import pod_facts_sidecar


@dataclass(frozen=True)
class K8sCapture:
    cluster: ClusterSpec
    sidecar: Sidecar
    manifest: dict[str, Any]  # the manifest's "k8s" section
    pods: tuple[PodHost, ...]


def prepare_k8s(settings: K8sSettings, name: str | None, deadline_s: float,
                other_hosts: tuple[HostSpec, ...] = ()) -> K8sCapture:
    """Discover the pods (one `kubectl get pods`), add debug containers when asked for, and
    describe it all for the manifest."""
    found = discover_pods(settings)
    pods = found.hosts
    recorded: list[CommandResult] = [found.result]
    notes = list(found.skipped)
    if settings.debug:
        dbg = add_debug_containers(pods, settings.debug_image, deadline_s)
        pods, notes = dbg.hosts, notes + list(dbg.notes)
        recorded += dbg.results
    cluster_name = name or _safe("k8s-" + (settings.namespace or settings.context or "default"))
    cluster = ClusterSpec(name=cluster_name, hosts=other_hosts + tuple(p.host for p in pods))
    manifest = {
        "kubectl": kubectl_binary(), "context": settings.context, "namespace": settings.namespace,
        "selector": settings.label_selector,
        "concurrency": {"per_node": PER_NODE_EXECS, "total": TOTAL_EXECS},
        "pods": [{"host": p.host.name, "pod": p.pod.name, "namespace": p.pod.namespace,
                  "container": p.target.container, "node": p.pod.node, "role": p.pod.role,
                  "pattern": p.pod.pattern, "group": p.pod.group.kind if p.pod.group else None,
                  "debug_container": p.target.debug_container} for p in pods],
        "debug": {"asked": settings.debug, "image": settings.debug_image if settings.debug else None,
                  "argv": [list(r.argv) for r in recorded if r.source == K8S_DEBUG.name],
                  "removable": False,
                  "note": "ephemeral containers cannot be removed from a pod; each runs sleep "
                          "for the deadline and then exits" if settings.debug else None},
        "notes": notes,
    }
    return K8sCapture(cluster, pod_facts_sidecar(pods, recorded), manifest, pods)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
