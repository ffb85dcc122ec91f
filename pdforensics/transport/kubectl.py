"""Kubernetes transport: every command is one `kubectl exec POD -c CONTAINER -- timeout ...`,
run by the operator's own kubectl and kubeconfig (exec auth plugins work), with bounded
concurrency per node and overall."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from pdforensics import linear
from pdforensics.errors import TransportError
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.base import remote_argv
from pdforensics.transport.local import LocalTransport, ThroughLocalClient

SCHEME = "k8s://"
#: concurrent `kubectl exec` streams: per node (the kubelet serves them) and in all (the API server)
PER_NODE_EXECS = 6
TOTAL_EXECS = 24
#: sources that run in the debug container when one was asked for (py-spy needs ptrace)
DEBUG_SOURCES = frozenset({"pyspy"})
_KUBECTL_FAILED = linear.compile(r"^(error: |Error from server|Unable to connect|error dialing)", linear.M)


def kubectl_binary() -> str:
    """The operator's kubectl: $PDFORENSICS_KUBECTL, else `kubectl` on PATH."""
    return os.environ.get("PDFORENSICS_KUBECTL") or "kubectl"


@dataclass(frozen=True)
class PodTarget:
    """Where a pod host's commands go: context, namespace, pod, container, node."""

    namespace: str
    pod: str
    container: str
    context: str | None = None
    node: str | None = None
    debug_container: str | None = None  # an ephemeral container py-spy runs in

    def address(self) -> str:
        """`k8s://[CTX@]NS/POD/CONTAINER[?node=N&debug=D]`, each part percent-quoted."""
        q = [f"node={quote(self.node, safe='')}"] if self.node else []
        if self.debug_container:
            q.append(f"debug={quote(self.debug_container, safe='')}")
        ctx = quote(self.context, safe="") + "@" if self.context else ""
        parts = "/".join(quote(p, safe="") for p in (self.namespace, self.pod, self.container))
        return SCHEME + ctx + parts + ("?" + "&".join(q) if q else "")

    @classmethod
    def parse(cls, address: str) -> PodTarget:
        if not address.startswith(SCHEME):
            raise TransportError(f"{address!r} is not a k8s:// address")
        rest, _, query = address[len(SCHEME):].partition("?")
        ctx, at, path = rest.rpartition("@")
        parts = path.split("/")
        if len(parts) != 3 or not all(parts):
            raise TransportError(f"{address!r}: expected k8s://[CTX@]NAMESPACE/POD/CONTAINER")
        opts = dict(kv.split("=", 1) for kv in query.split("&") if "=" in kv)
        return cls(namespace=unquote(parts[0]), pod=unquote(parts[1]), container=unquote(parts[2]),
                   context=unquote(ctx) if at else None,
                   node=unquote(opts["node"]) if "node" in opts else None,
                   debug_container=unquote(opts["debug"]) if "debug" in opts else None)


def base_argv(context: str | None, namespace: str | None) -> tuple[str, ...]:
    """`kubectl [--context C] [-n NS]`."""
    argv: tuple[str, ...] = (kubectl_binary(),)
    if context:
        argv += ("--context", context)
    if namespace:
        argv += ("-n", namespace)
    return argv


def exec_argv(t: PodTarget, argv: Sequence[str], container: str | None = None) -> tuple[str, ...]:
    """One single-statement command in the pod's container: no shell, argv after `--`."""
    return (*base_argv(t.context, t.namespace), "exec", t.pod, "-c", container or t.container,
            "--", *argv)


def get_pods_argv(context: str | None, namespace: str | None, selector: str | None) -> tuple[str, ...]:
    return (*base_argv(context, namespace), "get", "pods", "-o", "json",
            *(("-l", selector) if selector else ()))


def get_pod_argv(t: PodTarget) -> tuple[str, ...]:
    return (*base_argv(t.context, t.namespace), "get", "pod", t.pod, "-o", "json")


def get_events_argv(t: PodTarget) -> tuple[str, ...]:
    return (*base_argv(t.context, t.namespace), "get", "events", "-o", "json",
            "--field-selector", f"involvedObject.kind=Pod,involvedObject.name={t.pod}")


def logs_argv(t: PodTarget, tail_lines: int, previous: bool = False) -> tuple[str, ...]:
    return (*base_argv(t.context, t.namespace), "logs", t.pod, "-c", t.container,
            f"--tail={tail_lines}", *(("--previous",) if previous else ()))


def debug_argv(t: PodTarget, image: str, name: str, seconds: int) -> tuple[str, ...]:
    """An ephemeral container in the target container's process namespace, with the sysadmin
    profile (privileged: SYS_PTRACE for py-spy); it runs `sleep SECONDS` and then exits."""
    return (*base_argv(t.context, t.namespace), "debug", t.pod, f"--target={t.container}",
            "--profile=sysadmin", f"--image={image}", f"--container={name}", "--quiet",
            "--", "sleep", str(seconds))


class _Gates:
    """The semaphores every kubectl transport shares: one per node and one overall."""

    def __init__(self) -> None:
        self.total = threading.BoundedSemaphore(TOTAL_EXECS)
        self._nodes: dict[str, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()

    def node(self, name: str | None) -> threading.BoundedSemaphore:
        with self._lock:
            return self._nodes.setdefault(name or "?", threading.BoundedSemaphore(PER_NODE_EXECS))


GATES = _Gates()


class KubectlTransport(ThroughLocalClient):
    """A pod as a host: commands through `kubectl exec`, endpoints by curl inside the pod."""


    def __init__(self, host: HostSpec):
        self.host = host
        self.target = PodTarget.parse(host.address)
        self._local = LocalTransport(host)
        self.connect_argv = exec_argv(self.target, remote_argv(("true",), 10.0))
        self.connect_result: CommandResult | None = None

    def connect(self, timeout_s: float) -> None:
        """One `kubectl exec ... -- timeout S true`: a pod that cannot be exec'd into is
        unreachable, with kubectl's own reason."""
        probe = self._exec("connect", remote_argv(("true",), min(timeout_s, 10.0)),
                           min(timeout_s, 10.0), 4096)
        self.connect_result = probe if probe.ok else None  # capture.py keeps it in the manifest
        if not probe.ok:
            why = _reason(probe) or "no reason given"
            raise TransportError(f"{self.host.name}: kubectl exec into pod {self.target.pod} "
                                 f"(container {self.target.container}) failed: {why}")

    def run(self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int) -> CommandResult:
        container = self.target.debug_container if source in DEBUG_SOURCES else None
        return self._exec(source, argv, timeout_s, max_bytes, container)

    def _exec(self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int,
              container: str | None = None) -> CommandResult:
        full = exec_argv(self.target, argv, container)
        with GATES.total, GATES.node(self.target.node):
            result = self._local.run(source, full, timeout_s, max_bytes)
        if result.error is None and result.exit_status not in (0, None) and not result.stdout:
            why = _reason(result)
            if why and _KUBECTL_FAILED.search(result.stderr):
                result = CommandResult(**{**result.__dict__, "error": f"kubectl: {why}"})
        return result


def _reason(result: CommandResult) -> str:
    lines = [ln.strip() for ln in result.stderr.splitlines() if ln.strip()]
    kubectl = [ln for ln in lines if _KUBECTL_FAILED.match(ln)]
    return (kubectl or lines or [result.error or ""])[-1][:300]
