"""Kubernetes label and annotation names of SGLang's deployment patterns, and the role a pod's
labels or its server's command line give. Names checked against public sources (see
docs/kubernetes.md): LeaderWorkerSet, RoleBasedGroup, OME and the SGLang gateway."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

# LeaderWorkerSet (kubernetes-sigs/lws, docs/reference/labels-annotations-and-environment-variables)
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"  # an annotation
# RoleBasedGroup (sgl-project/rbg, its labels reference)
RBG_NAME = "rolebasedgroup.workloads.x-k8s.io/name"
RBG_ROLE = "rolebasedgroup.workloads.x-k8s.io/role"
# OME (sgl-project/ome): every pod carries the service label; `component` is engine | decoder | router
OME_SERVICE = "ome.io/inferenceservice"
OME_COMPONENT = "component"
# SGLang gateway (sgl-router / smg service discovery): the prefill pod's bootstrap port
BOOTSTRAP_PORT = "sglang.ai/bootstrap-port"

#: ``-l`` presets: a name on the command line stands for this selector (key exists)
BUILTIN_SELECTORS: Mapping[str, str] = {
    "lws": LWS_NAME,
    "rbg": RBG_NAME,
    "ome": OME_SERVICE,
    "gateway-pd": "role in (prefill,decode)",  # smg's documented --prefill/--decode-selector labels
}

_ROLE_WORDS = {"prefill": "prefill", "decode": "decode", "router": "router", "gateway": "router",
               "scheduler": "router", "engine": "prefill", "decoder": "decode"}
ROUTER_MARKS = ("sglang_router", "sgl_model_gateway", "sglang.srt.disaggregation.mini_lb",
                "smg ", "/smg")


def pattern_of(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """Which SGLang deployment pattern a pod belongs to, by its labels; None for none."""
    if LWS_NAME in labels:
        return "lws"
    if RBG_NAME in labels:
        return "rbg"
    if OME_SERVICE in labels:
        return "ome"
    if BOOTSTRAP_PORT in annotations or labels.get("role") in ("prefill", "decode"):
        return "gateway-pd"
    return None


def command_line(command: Sequence[str], args: Sequence[str]) -> str:
    """One container's command line; a `sh -c SCRIPT` gives the script."""
    tokens = [*command, *args]
    if len(tokens) >= 3 and tokens[0].rsplit("/", 1)[-1] in ("sh", "bash") and tokens[1] == "-c":
        return tokens[2].strip()
    return " ".join(tokens)


def runs_sglang(cmdline: str) -> bool:
    return "sglang" in cmdline or any(m in cmdline + " " for m in ROUTER_MARKS)


def flag(cmdline: str, name: str) -> str | None:
    """The value of ``--name V`` or ``--name=V`` in a command line (None when absent)."""
    try:
        tokens = shlex.split(cmdline)
    except ValueError:
        tokens = cmdline.split()
    for i, tok in enumerate(tokens):
        if tok == name and i + 1 < len(tokens):
            return tokens[i + 1]
        if tok.startswith(name + "="):
            return tok.split("=", 1)[1]
    return None


def role_from_cmdline(cmdline: str) -> str | None:
    if any(m in cmdline + " " for m in ROUTER_MARKS):
        return "router"
    mode = flag(cmdline, "--disaggregation-mode")
    if mode in ("prefill", "decode"):
        return mode
    return "unified" if "sglang" in cmdline else None


def role_from_labels(labels: Mapping[str, str]) -> str | None:
    for key in (RBG_ROLE, "role"):
        if key in labels:
            return _ROLE_WORDS.get(labels[key].lower())
    if OME_SERVICE in labels and OME_COMPONENT in labels:
        return _ROLE_WORDS.get(labels[OME_COMPONENT].lower())
    return None


def pod_role(labels: Mapping[str, str], cmdline: str) -> str | None:
    """The server's own `--disaggregation-mode` (or a router command) wins; then the labels."""
    from_cmd = role_from_cmdline(cmdline)
    if from_cmd in ("prefill", "decode", "router"):
        return from_cmd
    return role_from_labels(labels) or from_cmd


def port_of(cmdline: str, role: str | None) -> int | None:
    """The HTTP port the command line names (SGLang's default 30000 when a server names none);
    None when it is not a literal number (an env var, say)."""
    value = flag(cmdline, "--port")
    if value is None:
        return 30000 if role is not None else None
    return int(value) if value.isdigit() and 0 < int(value) < 65536 else None
