"""From `capture`'s options and the cluster file's [k8s] table to a prepared k8s capture."""

from __future__ import annotations

from pdforensics.errors import ConfigError
from pdforensics.model import ClusterSpec

from .settings import merged, settings_from_table
from .setup import K8sCapture, prepare_k8s


def k8s_capture(cluster: ClusterSpec, from_file: bool, use_k8s: bool, namespace: str | None,
                selector: str | None, context: str | None, debug: bool, debug_image: str | None,
                deadline_s: float) -> K8sCapture | None:
    """None when neither --k8s nor a [k8s] table asks for pods. With a cluster file its
    [[hosts]] are captured beside the pods (a router on a bare host, say)."""
    table = cluster.extra.get("k8s") if from_file else None
    if not use_k8s and table is None:
        if namespace or selector or context or debug or debug_image:
            raise ConfigError("-n/-l/--context/--k8s-debug need --k8s (or a [k8s] table in the "
                              "cluster file)")
        return None
    base = settings_from_table(table, "cluster file") if table is not None else None
    settings = merged(base, namespace, selector, context, debug, debug_image)
    return prepare_k8s(settings, cluster.name if from_file else None, deadline_s,
                       cluster.hosts if from_file else ())
