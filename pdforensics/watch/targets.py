"""What watch polls: each server's /metrics, the router's metrics port and its /workers."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.capture.planner import make_job
from pdforensics.collectors import http, proc, sockets
from pdforensics.collectors.base import Target
from pdforensics.errors import PdforensicsError
from pdforensics.model import ClusterSpec, HostSpec
from pdforensics.parsers.proc import parse_ps
from pdforensics.parsers.ss import parse_listening
from pdforensics.sglang.discovery import discover
from pdforensics.transport import open_transport

LOOPBACK = ("127.0.0.1", "::1", "localhost", "")


@dataclass(frozen=True)
class Endpoint:
    """One URL polled once per poll."""

    target: str  # WatchTarget.key
    source: str  # metrics | router_metrics | workers
    url: str
    # a host the watcher cannot reach over HTTP (a pod): the GET runs there as one curl
    # through its transport (kubectl exec), still one request per endpoint per poll
    via: HostSpec | None = None


@dataclass(frozen=True)
class WatchTarget:
    """A server or router as the watcher reaches it (over HTTP, from where it runs)."""

    host: str
    role: str
    kind: str  # server | router
    port: int
    address: str
    metrics_port: int | None = None
    via: HostSpec | None = None  # reached through this host's transport (pods)

    @property
    def key(self) -> str:
        """Same label as the analysis uses for a service: ``decode-0 decode:30001``."""
        return f"{self.host} {self.role}:{self.port}"

    def _url(self, port: int, path: str) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{port}{path}"

    def endpoints(self) -> tuple[Endpoint, ...]:
        if self.kind == "server":
            return (Endpoint(self.key, http.METRICS.name, self._url(self.port, "/metrics"), self.via),)
        out = [Endpoint(self.key, http.WORKERS.name, self._url(self.port, "/workers"), self.via)]
        if self.metrics_port:
            out.insert(0, Endpoint(self.key, http.ROUTER_METRICS.name,
                                   self._url(self.metrics_port, "/metrics"), self.via))
        return tuple(out)


def reach_address(host: HostSpec, bind: str | None = None) -> str:
    """Where the watcher reaches a service: its bind address when that is a specific one,
    else the host's address (HostName from ~/.ssh/config; 127.0.0.1 for "local")."""
    if host.is_local:
        return bind if bind and bind not in LOOPBACK else "127.0.0.1"
    if bind and bind not in LOOPBACK:
        return bind
    try:
        from pdforensics.transport.ssh_params import resolve_ssh_params

        return resolve_ssh_params(host).hostname
    except PdforensicsError:
        return host.address


def through_transport(host: HostSpec) -> bool:
    """A host whose servers the watcher cannot reach over HTTP from here (a pod)."""
    from pdforensics.transport.kubectl import SCHEME

    return host.address.startswith(SCHEME)


def declared_targets(host: HostSpec) -> list[WatchTarget]:
    via = host if through_transport(host) else None
    addr = "127.0.0.1" if via is not None else reach_address(host)
    return [WatchTarget(host.name, s.role, "router" if s.role == "router" else "server", s.port,
                        addr, s.metrics_port, via) for s in host.services]


def discover_targets(host: HostSpec, accept_new_host_keys: bool = False,
                     timeout_s: float = 10.0) -> list[WatchTarget]:
    """Run ``ps`` and ``ss -ltnp`` on a host without declared services (once) and list its
    SGLang servers and routers; raises PdforensicsError when the host cannot be read."""
    transport = open_transport(host, accept_new_host_keys)
    try:
        transport.connect(timeout_s)
        texts = []
        for source in (proc.PS, sockets.SS_LISTEN):
            job = make_job(host, source, Target())
            res = transport.run(source.name, job.argv, source.timeout_s, source.max_bytes)
            if source is proc.PS and not res.ok:
                raise PdforensicsError(f"{host.name}: ps failed: "
                                       f"{res.error or res.stderr.strip()[:200]}")
            texts.append(res.stdout.decode("utf-8", "replace") if res.ok else "")
    finally:
        transport.close()
    listen: dict[int, set[int]] = {}
    bound: dict[int, str] = {}
    for row in parse_listening(texts[1]).rows:
        if row.local.port is not None:
            listen.setdefault(row.local.port, set()).update(p.pid for p in row.processes)
            if row.local.addr not in ("*", "0.0.0.0", "::", "[::]"):
                bound[row.local.port] = row.local.addr  # the router reached where it listens
    found = discover(parse_ps(texts[0]), (), listen, listen_addresses=bound,
                     scope_ports=host.scope_ports, all_users=host.all_users)
    via = host if through_transport(host) else None
    return [WatchTarget(host.name, s.role, s.kind, s.port,
                        s.address if via is not None else reach_address(host, s.address),
                        s.metrics_port, via) for s in found.services]


def cluster_targets(cluster: ClusterSpec) -> tuple[list[WatchTarget], list[HostSpec]]:
    """Targets of every host with declared services, and the hosts left to discover."""
    targets: list[WatchTarget] = []
    undeclared: list[HostSpec] = []
    for host in cluster.hosts:
        if host.services:
            targets.extend(declared_targets(host))
        else:
            undeclared.append(host)
    return targets, undeclared
