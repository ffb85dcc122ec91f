"""Rule families; importing this package registers every rule in findings.RULES."""

from __future__ import annotations

from pdforensics.analysis.rules import (  # noqa: F401  (imported to register rules)
    client,
    clock,
    collective,
    gpu_host,
    gpus,
    k8s,
    loads,
    logs,
    pd_config,
    pd_queues,
    probes,
    processes,
    progress,
    ranks,
    requests,
    router,
    safeguards,
    transfer,
)
