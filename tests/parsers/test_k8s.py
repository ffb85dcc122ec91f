"""kubectl JSON parsers on the real-format samples (tests/data/k8s_COMMANDS.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pdforensics.errors import ParseError
from pdforensics.parsers.k8s import parse_events, parse_pod, parse_pod_list
from pdforensics.parsers.k8s_labels import command_line, pod_role, port_of

DATA = Path(__file__).parent.parent / "data"


def test_lws_pod_facts() -> None:
    pod = parse_pod((DATA / "k8s_pod_lws_sglang.json").read_text())
    assert pod is not None and pod.name == "sglang-0" and pod.node == "gpu-node-7"
    assert pod.pattern == "lws" and pod.group is not None
    assert (pod.group.kind, pod.group.name, pod.group.index, pod.group.size) == \
        ("LeaderWorkerSet", "sglang", "0", 2)
    c = pod.server
    assert c is not None and c.name == "sglang-leader" and pod.server_container == c.name
    assert (c.restart_count, c.last_reason, c.last_exit_code, c.state) == (3, "Error", 1, "running")
    assert c.cmdline.startswith("cd /sgl-workspace && python3 -m sglang.launch_server")
    assert pod.role == "unified" and pod.port == 8000  # no --disaggregation-mode: not PD
    live = next(p for p in c.probes if p.kind == "liveness")
    assert (live.handler, live.path, live.period_s, live.failure_threshold) == ("http", "/health", 30, 200)
    assert live.tolerated_s == 6000
    ready = next(p for p in c.probes if p.kind == "readiness")
    assert (ready.handler, ready.port) == ("tcp", "8000")
    assert pod.owner == "StatefulSet/sglang"


def test_pd_pod_list_roles_ports_and_bootstrap_annotation() -> None:
    pods = {p.name: p for p in parse_pod_list((DATA / "k8s_pods_pd_list.json").read_text())}
    prefill = pods["sglang-pd-prefill-0"]
    assert (prefill.role, prefill.port, prefill.bootstrap_port, prefill.pattern) == ("prefill", 8000, 34000, "rbg")
    decode = pods["llama-70b-decoder-5c7cbd94ff-crxrp"]
    assert (decode.role, decode.port, decode.pattern, decode.server_container) == \
        ("decode", 8080, "ome", "ome-container")
    assert decode.server is not None and decode.server.last_reason == "OOMKilled"
    router = pods["sglang-router-6d9f8c-2xk"]
    assert (router.role, router.port) == ("router", 30000)
    assert pods["redis-0"].server_container is None and pods["redis-0"].role is None
    assert pods["sglang-pd-decode-1"].phase == "Pending" and pods["sglang-pd-decode-1"].node is None


def test_events() -> None:
    evs = parse_events((DATA / "k8s_events_probe_failures.json").read_text())
    assert [e.reason for e in evs][0] == "Unhealthy" and evs[-1].reason == "Started"  # by last seen
    kill = next(e for e in evs if e.reason == "Killing")
    assert kill.object == "Pod/sglang-0" and "failed liveness probe" in kill.message
    assert sum(e.count for e in evs if e.reason == "Unhealthy") == 10


def test_role_from_labels_when_the_command_line_says_nothing() -> None:
    labels = {"ome.io/inferenceservice": "x", "component": "decoder"}
    assert pod_role(labels, "python3 -m sglang.launch_server --port 8080") == "decode"
    assert pod_role({"rolebasedgroup.workloads.x-k8s.io/role": "prefill"}, "") == "prefill"
    # the server's own flag wins over a label
    assert pod_role({"role": "decode"}, "python3 -m sglang.launch_server --disaggregation-mode prefill") == "prefill"
    assert port_of("python3 -m sglang.launch_server --port $PORT", "decode") is None
    assert command_line(["/bin/bash", "-c", "exec python3 -m sglang.launch_server"], []) == \
        "exec python3 -m sglang.launch_server"


def test_empty_and_bad_input() -> None:
    assert parse_pod_list("") == () and parse_pod("  \n") is None and parse_events("") == ()
    with pytest.raises(ParseError, match="not JSON"):
        parse_pod_list('{"items": [\n  {"kind": "Pod",,}\n]}')
    with pytest.raises(ParseError):
        parse_events("[1, 2]")
    with pytest.raises(ParseError):
        parse_pod_list('{"items": 3}')


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=10), kids, max_size=4),
                     max_leaves=30)
_KEYS = st.sampled_from(["metadata", "spec", "status", "items", "kind", "containers", "labels",
                         "containerStatuses", "lastState", "terminated", "livenessProbe", "httpGet",
                         "involvedObject", "count", "restartCount", "command", "args"])
_PODISH = st.recursive(st.none() | st.integers() | st.text(max_size=6),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_KEYS, kids, max_size=5),
                       max_leaves=40)


@given(st.one_of(st.text(max_size=200), _JSON.map(json.dumps), _PODISH.map(json.dumps)))
def test_parsers_never_crash(text: str) -> None:
    for parse in (parse_pod_list, parse_events):
        try:
            parse(text)
        except ParseError:
            pass
