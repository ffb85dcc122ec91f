"""`kubectl get pod(s)/events -o json` -> the pod facts a wedge needs (restarts, last
termination, probes, node, LWS/RBG/OME group, role) and the pod's events."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pdforensics.errors import ParseError
from pdforensics.parsers import k8s_labels as kl


@dataclass(frozen=True)
class Probe:
    kind: str  # liveness | readiness | startup
    handler: str  # http | tcp | exec | grpc | unknown
    path: str | None
    port: str | None
    command: tuple[str, ...]
    period_s: int
    failure_threshold: int
    timeout_s: int
    initial_delay_s: int

    @property
    def tolerated_s(self) -> int:
        """How long the probe may fail before the kubelet acts (period x threshold)."""
        return self.period_s * self.failure_threshold


@dataclass(frozen=True)
class ContainerFacts:
    name: str
    image: str
    cmdline: str
    ready: bool | None
    restart_count: int
    state: str  # running | waiting | terminated | unknown
    state_reason: str | None
    started_at: str | None
    last_reason: str | None  # lastState.terminated.reason (Error, OOMKilled, ...)
    last_exit_code: int | None
    last_finished_at: str | None
    probes: tuple[Probe, ...] = ()
    ephemeral: bool = False


@dataclass(frozen=True)
class PodGroup:
    kind: str  # LeaderWorkerSet | RoleBasedGroup | OME
    name: str
    index: str | None  # LWS group index / RBG or OME role
    size: int | None


@dataclass(frozen=True)
class PodFacts:
    name: str
    namespace: str
    node: str | None
    phase: str
    created_at: str | None
    labels: dict[str, str]
    annotations: dict[str, str]
    owner: str | None  # "StatefulSet/name"
    containers: tuple[ContainerFacts, ...]
    server_container: str | None  # the container that runs SGLang
    role: str | None
    port: int | None
    bootstrap_port: int | None
    group: PodGroup | None
    pattern: str | None  # lws | rbg | ome | gateway-pd

    @property
    def server(self) -> ContainerFacts | None:
        return next((c for c in self.containers if c.name == self.server_container), None)


@dataclass(frozen=True)
class PodEvent:
    type: str  # Normal | Warning
    reason: str
    message: str
    object: str  # Pod/name
    count: int
    first_seen: str | None
    last_seen: str | None


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        lineno = getattr(exc, "lineno", 1)
        lines = text.splitlines() or [""]
        line = lines[min(max(lineno, 1), len(lines)) - 1]
        raise ParseError(f"kubectl output is not JSON ({exc})", line=line, lineno=lineno) from None


def _items(doc: Any, text: str) -> list[Mapping[str, Any]]:
    if not isinstance(doc, dict):
        raise ParseError("kubectl output is not a JSON object", line=text.strip().splitlines()[0])
    items = doc.get("items") if "items" in doc else [doc]
    if not isinstance(items, list):
        raise ParseError("kubectl 'items' is not a list", line=text.strip().splitlines()[0])
    return [i for i in items if isinstance(i, dict)]


def parse_pod_list(text: str) -> tuple[PodFacts, ...]:
    """`kubectl get pods -o json` (a List) or one Pod object; () for empty text."""
    if not text.strip():
        return ()
    doc = _load(text)
    return tuple(_pod(i) for i in _items(doc, text) if i.get("kind", "Pod") == "Pod")


def parse_pod(text: str) -> PodFacts | None:
    """`kubectl get pod NAME -o json`: the pod's facts; None for empty text."""
    pods = parse_pod_list(text)
    return pods[0] if pods else None


def parse_events(text: str) -> tuple[PodEvent, ...]:
    """`kubectl get events -o json` (core/v1 EventList), oldest first; () for empty text."""
    if not text.strip():
        return ()
    out = []
    for e in _items(_load(text), text):
        obj = _map(e.get("involvedObject"))
        out.append(PodEvent(
            type=_str(e.get("type")) or "Normal", reason=_str(e.get("reason")) or "",
            message=_str(e.get("message")) or _str(e.get("note")) or "",
            object=f"{_str(obj.get('kind')) or '?'}/{_str(obj.get('name')) or '?'}",
            count=_int(e.get("count")) or _int(_map(e.get("series")).get("count")) or 1,
            first_seen=_str(e.get("firstTimestamp")) or _str(e.get("eventTime")),
            last_seen=_str(e.get("lastTimestamp")) or _str(e.get("eventTime"))))
    return tuple(sorted(out, key=lambda ev: ev.last_seen or ""))


def _pod(item: Mapping[str, Any]) -> PodFacts:
    meta, spec, status = _map(item.get("metadata")), _map(item.get("spec")), _map(item.get("status"))
    labels = _strmap(meta.get("labels"))
    annotations = _strmap(meta.get("annotations"))
    statuses = {_str(s.get("name")): s for s in _list(status.get("containerStatuses"))
                + _list(status.get("ephemeralContainerStatuses"))}
    containers = [_container(c, statuses.get(_str(c.get("name"))), False)
                  for c in _list(spec.get("containers"))]
    containers += [_container(c, statuses.get(_str(c.get("name"))), True)
                   for c in _list(spec.get("ephemeralContainers"))]
    server = next((c for c in containers if not c.ephemeral and kl.runs_sglang(c.cmdline)), None)
    role = kl.pod_role(labels, server.cmdline if server else "") if server or labels else None
    owners = [o for o in _list(meta.get("ownerReferences")) if o.get("controller")] \
        or _list(meta.get("ownerReferences"))
    boot = annotations.get(kl.BOOTSTRAP_PORT, "")
    return PodFacts(
        name=_str(meta.get("name")) or "?", namespace=_str(meta.get("namespace")) or "default",
        node=_str(spec.get("nodeName")), phase=_str(status.get("phase")) or "Unknown",
        created_at=_str(meta.get("creationTimestamp")), labels=labels, annotations=annotations,
        owner=f"{_str(owners[0].get('kind'))}/{_str(owners[0].get('name'))}" if owners else None,
        containers=tuple(containers), server_container=server.name if server else None,
        role=role, port=kl.port_of(server.cmdline, role) if server else None,
        bootstrap_port=int(boot) if boot.isdigit() else None,
        group=_group(labels, annotations), pattern=kl.pattern_of(labels, annotations))


def _group(labels: Mapping[str, str], annotations: Mapping[str, str]) -> PodGroup | None:
    if kl.LWS_NAME in labels:
        size = annotations.get(kl.LWS_SIZE, "")
        return PodGroup("LeaderWorkerSet", labels[kl.LWS_NAME], labels.get(kl.LWS_GROUP_INDEX),
                        int(size) if size.isdigit() else None)
    if kl.RBG_NAME in labels:
        return PodGroup("RoleBasedGroup", labels[kl.RBG_NAME], labels.get(kl.RBG_ROLE), None)
    if kl.OME_SERVICE in labels:
        return PodGroup("OME", labels[kl.OME_SERVICE], labels.get(kl.OME_COMPONENT), None)
    return None


def _container(spec: Mapping[str, Any], st: Mapping[str, Any] | None, ephemeral: bool) -> ContainerFacts:
    st = st or {}
    state, last = _map(st.get("state")), _map(_map(st.get("lastState")).get("terminated"))
    kind = next((k for k in ("running", "waiting", "terminated") if k in state), "unknown")
    now = _map(state.get(kind))
    probes = tuple(p for k in ("liveness", "readiness", "startup")
                   if (p := _probe(k, spec.get(f"{k}Probe"))) is not None)
    return ContainerFacts(
        name=_str(spec.get("name")) or "?", image=_str(spec.get("image")) or "",
        cmdline=kl.command_line([str(x) for x in _list_any(spec.get("command"))],
                                [str(x) for x in _list_any(spec.get("args"))]),
        ready=st.get("ready") if isinstance(st.get("ready"), bool) else None,
        restart_count=_int(st.get("restartCount")) or 0, state=kind,
        state_reason=_str(now.get("reason")), started_at=_str(now.get("startedAt")),
        last_reason=_str(last.get("reason")), last_exit_code=_int(last.get("exitCode")),
        last_finished_at=_str(last.get("finishedAt")), probes=probes, ephemeral=ephemeral)


def _probe(kind: str, raw: Any) -> Probe | None:
    if not isinstance(raw, dict):
        return None
    handler, path, port = "unknown", None, None
    command: tuple[str, ...] = ()
    if isinstance(raw.get("httpGet"), dict):
        handler, path = "http", _str(raw["httpGet"].get("path")) or "/"
        port = _str(raw["httpGet"].get("port"))
    elif isinstance(raw.get("tcpSocket"), dict):
        handler, port = "tcp", _str(raw["tcpSocket"].get("port"))
    elif isinstance(raw.get("exec"), dict):
        handler = "exec"
        command = tuple(str(x) for x in _list_any(raw["exec"].get("command")))
    elif isinstance(raw.get("grpc"), dict):
        handler, port = "grpc", _str(raw["grpc"].get("port"))
    # the API's defaults: period 10 s, failure threshold 3, timeout 1 s, no initial delay
    return Probe(kind=kind, handler=handler, path=path, port=port, command=command,
                 period_s=_int(raw.get("periodSeconds")) or 10,
                 failure_threshold=_int(raw.get("failureThreshold")) or 3,
                 timeout_s=_int(raw.get("timeoutSeconds")) or 1,
                 initial_delay_s=_int(raw.get("initialDelaySeconds")) or 0)


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Mapping[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _list_any(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _strmap(v: Any) -> dict[str, str]:
    return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    if isinstance(v, bool) or v is None or isinstance(v, (dict, list)):
        return None
    return str(v)


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    return int(v) if isinstance(v, str) and v.isdigit() else None


def parse_debug_output(text: str) -> str:
    """What `kubectl debug` printed (a "Defaulting debug container name" line, or nothing
    with --quiet): kept as one stripped string."""
    return text.strip()
