"""Kubernetes pod facts: a liveness probe that never restarts a wedged server, container
restarts and their last termination, probe and back-off events, the LWS/RBG group whose
recreation destroys evidence, and debug containers pdforensics added."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.findings import Evidence, Finding, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.k8s import PodFacts, Probe

#: a liveness probe that tolerates failures longer than this cannot catch a wedge in time
LIVENESS_TOLERANCE_S = 300
HEALTH_PATHS = ("/health", "/healthz", "/v1/models", "/model_info", "/get_model_info")
EVENT_REASONS = ("Unhealthy", "Killing", "BackOff", "OOMKilling", "Evicted", "FailedScheduling")


def _pods(ctx: Context) -> Iterator[tuple[str, PodFacts]]:
    for h in ctx.capture.hosts:
        if h.k8s_pod is not None:
            yield h.name, h.k8s_pod


def _src(pod: PodFacts) -> str:
    return f"kubectl get pod {pod.name} -n {pod.namespace}"


def _blind(p: Probe) -> str | None:
    """Why a liveness probe cannot see a wedge (None when it can)."""
    if p.handler == "tcp":
        return "a TCP connect (the HTTP server accepts while the scheduler is stuck)"
    if p.handler == "http" and (p.path or "/").split("?")[0] in HEALTH_PATHS:
        return (f"GET {p.path} (answered without a forward pass; /health_generate runs one)"
                if p.tolerated_s <= LIVENESS_TOLERANCE_S else
                f"GET {p.path} tolerating {p.failure_threshold} failures x {p.period_s} s = "
                f"{p.tolerated_s} s")
    return None


@rule("K8S_LIVENESS_BLIND", rank=40)
def liveness_blind(ctx: Context) -> Iterator[Finding]:
    """A server's liveness probe that only checks /health (or TCP), or waits so long that a
    wedged pod is never restarted."""
    for host, pod in _pods(ctx):
        c = pod.server
        if c is None:
            continue
        live = [p for p in c.probes if p.kind == "liveness"]
        if not live:
            yield Finding("K8S_LIVENESS_BLIND", "info",
                          f"{host}: container {c.name} has no liveness probe",
                          (Evidence(host, _src(pod), "no livenessProbe in the pod spec"),),
                          "Nothing restarts this server when it wedges; that keeps the evidence, "
                          "but a watcher (`pdforensics watch`) must then catch the wedge.",
                          section="restarts", subject=host)
            continue
        for p in live:
            why = _blind(p)
            if why is None:
                continue
            huge = p.tolerated_s > LIVENESS_TOLERANCE_S
            yield Finding(
                "K8S_LIVENESS_BLIND", "warning" if huge else "info",
                f"{host}: liveness probe of {c.name} is {why}: a wedged server is never restarted"
                if huge else f"{host}: liveness probe of {c.name} only checks {why}",
                (Evidence(host, _src(pod), f"livenessProbe {p.handler} {p.path or p.port or ''} "
                          f"period {p.period_s}s failureThreshold {p.failure_threshold} "
                          f"timeout {p.timeout_s}s"),),
                "/health answers from the HTTP process while the scheduler is stuck. Probe "
                "/health_generate (a 1-token forward; in PD mode it does not prove KV transfer) "
                "with a failure budget under the watchdog timeout, and capture before any restart.",
                section="restarts", subject=host)


@rule("K8S_CONTAINER_RESTARTED", rank=41)
def container_restarted(ctx: Context) -> Iterator[Finding]:
    """A pod container that restarted, with its last termination reason and exit code."""
    for host, pod in _pods(ctx):
        for c in pod.containers:
            if c.restart_count <= 0 or c.ephemeral:
                continue
            last = (f"last terminated {c.last_reason or '?'} (exit {c.last_exit_code}) at "
                    f"{c.last_finished_at or '?'}") if c.last_reason or c.last_exit_code is not None \
                else "no last termination recorded"
            oom = c.last_reason == "OOMKilled"
            yield Finding(
                "K8S_CONTAINER_RESTARTED", "warning",
                f"{host}: container {c.name} restarted {c.restart_count} time(s); {last}",
                (Evidence(host, _src(pod), f"restartCount {c.restart_count}, state {c.state}"
                          f"{' (' + c.state_reason + ')' if c.state_reason else ''}, {last}"),),
                ("OOMKilled: the container's memory limit was hit (host RAM, not GPU memory): "
                 "raise the limit or lower --mem-fraction-static / cuda-graph sizes. "
                 if oom else "") +
                "The previous run's log is in `kubectl logs --previous`; a restart loses the "
                "wedged process's stacks, so capture first next time.",
                section="restarts", subject=host)


@rule("K8S_POD_EVENTS", rank=42)
def pod_events(ctx: Context) -> Iterator[Finding]:
    """Warning events of a pod: failed probes, kills, back-offs, evictions."""
    for h in ctx.capture.hosts:
        bad = [e for e in h.k8s_events if e.type == "Warning" or e.reason in EVENT_REASONS]
        if not bad:
            continue
        killed = any(e.reason == "Killing" and "liveness" in e.message for e in bad)
        yield Finding(
            "K8S_POD_EVENTS", "warning",
            f"{h.name}: {len(bad)} warning event(s)"
            + (" (the kubelet killed the container for a failed liveness probe)" if killed else ""),
            tuple(Evidence(h.name, "kubectl get events", f"{e.last_seen or '?'} {e.reason} "
                           f"x{e.count}: {e.message[:200]}") for e in bad[-12:]),
            "Events expire (one hour by default): they are kept in the bundle. A liveness kill "
            "during a wedge destroyed the stacks of that run.",
            section="restarts", subject=h.name)


@rule("K8S_GROUP_RECREATE_RISK", rank=43)
def group_recreate(ctx: Context) -> Iterator[Finding]:
    """Pods of a LeaderWorkerSet or RoleBasedGroup: one pod's restart can recreate the group,
    destroying every member's evidence."""
    groups: dict[tuple[str, str], list[str]] = {}
    for host, pod in _pods(ctx):
        if pod.group is not None and pod.group.kind in ("LeaderWorkerSet", "RoleBasedGroup"):
            groups.setdefault((pod.group.kind, pod.group.name), []).append(host)
    for (kind, name), hosts in sorted(groups.items()):
        yield Finding(
            "K8S_GROUP_RECREATE_RISK", "info",
            f"{len(hosts)} pod(s) belong to {kind} {name}: a restart of one can recreate the group",
            tuple(Evidence(h, "pod labels", f"{kind} {name}") for h in hosts),
            "LeaderWorkerSet's RecreateGroupOnPodRestart policy and RoleBasedGroup's group "
            "recovery delete and recreate every pod of the group when one restarts: the evidence "
            "of the healthy-looking members goes too. Capture before deleting or restarting any "
            "pod, and keep liveness probes from firing during a wedge.",
            section="restarts")


@rule("K8S_DEBUG_CONTAINER_ADDED", rank=90)
def debug_container(ctx: Context) -> Iterator[Finding]:
    """pdforensics added an ephemeral debug container (--k8s-debug): it stays in the pod spec."""
    for h in ctx.capture.hosts:
        if h.k8s_debug:
            yield Finding(
                "K8S_DEBUG_CONTAINER_ADDED", "info",
                f"{h.name}: an ephemeral debug container was requested for py-spy",
                tuple(Evidence(h.name, "kubectl debug", argv) for argv in h.k8s_debug),
                "Ephemeral containers cannot be removed: it exits when its sleep ends (the "
                "deadline + 30 s) and stays listed in the pod spec until the pod is deleted.",
                section="restarts", subject=h.name)
