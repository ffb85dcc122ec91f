"""SGLang pods by label selector -> the capture's hosts (one per pod, its server container)."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.errors import ParseError, PdforensicsError
from pdforensics.model import CommandResult, HostSpec, ServiceSpec
from pdforensics.parsers.k8s import PodFacts, parse_pod_list
from pdforensics.parsers.k8s_labels import flag
from pdforensics.transport.kubectl import PodTarget, get_pods_argv
from pdforensics.transport.local import LocalTransport

from .settings import K8sSettings

GET_TIMEOUT_S = 20.0
ROUTER_METRICS_PORT = 29000


@dataclass(frozen=True)
class PodHost:
    """One pod the capture reaches, and the host that stands for it."""

    pod: PodFacts
    target: PodTarget
    host: HostSpec


@dataclass(frozen=True)
class PodDiscovery:
    result: CommandResult  # the `kubectl get pods` that found them (goes into the bundle)
    hosts: tuple[PodHost, ...]
    skipped: tuple[str, ...]  # "pod: why" for pods matched but not captured


def run_kubectl(source: str, argv: tuple[str, ...], timeout_s: float, max_bytes: int,
                host: str = "k8s") -> CommandResult:
    """A kubectl command on this machine, killed on time like any local command."""
    return LocalTransport(HostSpec(name=host, address="local")).run(source, argv, timeout_s, max_bytes)


def discover_pods(settings: K8sSettings) -> PodDiscovery:
    """`kubectl get pods -o json [-l SELECTOR]`, then the pods that run SGLang. Without a
    selector, only pods of a known pattern (LWS, RBG, OME, gateway PD labels) or whose
    container runs SGLang are kept."""
    argv = get_pods_argv(settings.context, settings.namespace, settings.label_selector)
    result = run_kubectl("k8s_pods", argv, GET_TIMEOUT_S, 64 * 1024 * 1024)
    if not result.ok:
        why = (result.stderr.strip().splitlines() or [result.error or "timed out"])[-1]
        raise PdforensicsError(f"kubectl could not list pods ({' '.join(argv)}): {why}")
    try:
        pods = parse_pod_list(result.stdout.decode("utf-8", "replace"))
    except ParseError as exc:
        raise PdforensicsError(f"kubectl get pods gave unreadable output: {exc}") from None
    hosts: list[PodHost] = []
    skipped: list[str] = []
    for pod in pods:
        reason = _skip_reason(pod)
        if reason:
            skipped.append(f"{pod.name}: {reason}")
            continue
        hosts.append(pod_host(pod, settings.context))
    if not hosts:
        scope = f"selector {settings.label_selector!r}" if settings.label_selector else "no selector"
        raise PdforensicsError(f"no SGLang pod found ({scope}, namespace "
                               f"{settings.namespace or 'of the context'}); " +
                               ("; ".join(skipped[:5]) or "kubectl listed no pod"))
    return PodDiscovery(result, tuple(hosts), tuple(skipped))


def _skip_reason(pod: PodFacts) -> str | None:
    """Why a listed pod is not captured (a pod of a known pattern or none: what counts is a
    container that runs SGLang, in a running pod)."""
    if pod.server_container is None:
        return "no container runs SGLang"
    if pod.phase != "Running":
        return f"phase {pod.phase}"
    return None


def pod_host(pod: PodFacts, context: str | None) -> PodHost:
    """The host a pod stands for: its server container, its service from the command line."""
    assert pod.server_container is not None
    target = PodTarget(namespace=pod.namespace, pod=pod.name, container=pod.server_container,
                       context=context, node=pod.node)
    services: tuple[ServiceSpec, ...] = ()
    server = pod.server
    if pod.role in ("router", "prefill", "decode", "unified") and pod.port is not None:
        metrics = None
        if pod.role == "router" and server is not None:
            value = flag(server.cmdline, "--prometheus-port")
            metrics = int(value) if value and value.isdigit() else ROUTER_METRICS_PORT
        services = (ServiceSpec(role=pod.role, port=pod.port, metrics_port=metrics),)  # type: ignore[arg-type]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in pod.name)
    return PodHost(pod=pod, target=target,
                   host=HostSpec(name=name, address=target.address(), services=services))
