"""Kubernetes: kubectl argv building, pod addresses, discovery and the debug container against
the stand-in kubectl (no cluster), the [k8s] table, and the K8S_* rules on pod facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdforensics.analysis.engine import analyze
from pdforensics.config.cluster import cluster_from_dict
from pdforensics.errors import ConfigError, PdforensicsError
from pdforensics.k8s.debug import add_debug_containers
from pdforensics.k8s.discover import discover_pods
from pdforensics.k8s.settings import K8sSettings, settings_from_table
from pdforensics.model import HostSpec
from pdforensics.transport import open_transport
from pdforensics.transport.base import remote_argv
from pdforensics.transport.kubectl import (
    KubectlTransport,
    PodTarget,
    debug_argv,
    exec_argv,
    get_events_argv,
    get_pods_argv,
    logs_argv,
)
from pdforensics.views.loaded import load_capture
from tests.support.builder import BundleBuilder
from tests.support.k8s_lab import STANDIN_DIR, recorded_argvs

DATA = Path(__file__).parent.parent / "data"
EKS = "arn:aws:eks:us-west-2:123456789012:cluster/gpu-prod"


def test_address_round_trip_with_an_awkward_context() -> None:
    t = PodTarget(namespace="inference", pod="p-0", container="c", context=EKS, node="n 1",
                  debug_container="pdforensics-debug-abc")
    assert PodTarget.parse(t.address()) == t
    assert PodTarget.parse("k8s://ns/pod/c") == PodTarget("ns", "pod", "c")
    with pytest.raises(PdforensicsError):
        PodTarget.parse("k8s://ns/pod")


def test_argv_building() -> None:
    t = PodTarget(namespace="inference", pod="sglang-0", container="sglang-leader", context="prod")
    wrapped = remote_argv(("py-spy", "dump", "--pid", "42"), 20)
    assert exec_argv(t, wrapped) == ("kubectl", "--context", "prod", "-n", "inference", "exec",
                                     "sglang-0", "-c", "sglang-leader", "--", "timeout", "-k", "2",
                                     "20", "py-spy", "dump", "--pid", "42")
    assert get_pods_argv(None, None, "leaderworkerset.sigs.k8s.io/name") == \
        ("kubectl", "get", "pods", "-o", "json", "-l", "leaderworkerset.sigs.k8s.io/name")
    assert get_events_argv(t)[-2:] == ("--field-selector",
                                       "involvedObject.kind=Pod,involvedObject.name=sglang-0")
    assert logs_argv(t, 100) == ("kubectl", "--context", "prod", "-n", "inference", "logs",
                                 "sglang-0", "-c", "sglang-leader", "--tail=100")
    assert debug_argv(t, "python:3.12-slim", "pdforensics-debug-1", 90) == (
        "kubectl", "--context", "prod", "-n", "inference", "debug", "sglang-0",
        "--target=sglang-leader", "--profile=sysadmin", "--image=python:3.12-slim",
        "--container=pdforensics-debug-1", "--quiet", "--", "sleep", "90")


def test_open_transport_picks_kubectl_for_a_pod_address() -> None:
    host = HostSpec(name="p", address=PodTarget("ns", "p", "c").address())
    assert isinstance(open_transport(host), KubectlTransport)


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in kubectl on PATH, answering from the PD pod list sample."""
    pods = json.loads((DATA / "k8s_pods_pd_list.json").read_text())["items"]
    fixture = tmp_path / "fx.json"
    fixture.write_text(json.dumps({"pods": pods, "events": [], "record": str(fixture) + ".argv.jsonl",
                                   "standin": {"inference/sglang-router-6d9f8c-2xk":
                                               {"debug_fails": "error: ephemeral containers are disabled"}}}))
    monkeypatch.setenv("PATH", f"{STANDIN_DIR}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("KUBECTL_STANDIN_FIXTURE", str(fixture))
    return fixture


def test_discovery_keeps_running_sglang_pods(standin: Path) -> None:
    found = discover_pods(K8sSettings(namespace="inference"))
    hosts = {ph.host.name: ph for ph in found.hosts}
    assert set(hosts) == {"sglang-pd-prefill-0", "llama-70b-decoder-5c7cbd94ff-crxrp",
                          "sglang-router-6d9f8c-2xk"}
    assert any("redis-0: no container runs SGLang" == s for s in found.skipped)
    assert any(s.startswith("sglang-pd-decode-1: phase Pending") for s in found.skipped)
    router = hosts["sglang-router-6d9f8c-2xk"].host
    assert [(s.role, s.port, s.metrics_port) for s in router.services] == [("router", 30000, 29000)]
    decode = hosts["llama-70b-decoder-5c7cbd94ff-crxrp"]
    assert decode.target.container == "ome-container" and decode.target.node == "gpu-node-2"
    assert found.result.argv[1:] == ("-n", "inference", "get", "pods", "-o", "json")


def test_discovery_with_a_preset_selector(standin: Path) -> None:
    found = discover_pods(K8sSettings(namespace="inference", selector="rbg"))
    assert [ph.host.name for ph in found.hosts] == ["sglang-pd-prefill-0"]
    assert found.result.argv[-2:] == ("-l", "rolebasedgroup.workloads.x-k8s.io/name")
    with pytest.raises(PdforensicsError, match="no SGLang pod found"):
        discover_pods(K8sSettings(namespace="inference", selector="app=nothing"))


def test_debug_container_added_and_py_spy_routed_to_it(standin: Path) -> None:
    found = discover_pods(K8sSettings(namespace="inference"))
    out = add_debug_containers(found.hosts, "python:3.12-slim", deadline_s=30, wait_s=2)
    by = {ph.host.name: ph for ph in out.hosts}
    prefill = by["sglang-pd-prefill-0"]
    assert prefill.target.debug_container and prefill.target.debug_container.startswith("pdforensics-debug-")
    assert by["sglang-router-6d9f8c-2xk"].target.debug_container is None
    assert any("ephemeral containers are disabled" in n for n in out.notes)
    assert all(r.argv[3] == "debug" and "--profile=sysadmin" in r.argv for r in out.results)
    assert ["sleep", "60"] == list(out.results[0].argv[-2:])
    t = KubectlTransport(prefill.host)
    spy = t.run("pyspy", remote_argv(("echo", "dump"), 5), 5, 1024)
    ps = t.run("ps", remote_argv(("echo", "ps"), 5), 5, 1024)
    assert spy.ok and spy.argv[spy.argv.index("-c") + 1] == prefill.target.debug_container
    assert ps.ok and ps.argv[ps.argv.index("-c") + 1] == "prefill"
    called = [a for a in recorded_argvs(standin) if "debug" in a]
    assert len(called) == 3


def test_exec_failure_is_an_error_with_kubectl_reason(standin: Path) -> None:
    t = KubectlTransport(HostSpec(name="x", address=PodTarget("inference", "gone-0", "c").address()))
    r = t.run("ps", remote_argv(("true",), 5), 5, 1024)
    assert r.error is not None and 'pods "gone-0" not found' in r.error
    with pytest.raises(PdforensicsError, match="kubectl exec into pod gone-0"):
        t.connect(5)


def test_cluster_file_k8s_table() -> None:
    spec = cluster_from_dict({"cluster": {"name": "c"}, "k8s": {"namespace": "inference",
                              "selector": "lws", "debug": True}}, base=Path("."))
    assert spec.hosts == () and isinstance(spec.extra["k8s"], dict)
    s = settings_from_table(spec.extra["k8s"], "f")
    assert (s.namespace, s.label_selector, s.debug) == ("inference", "leaderworkerset.sigs.k8s.io/name", True)
    with pytest.raises(ConfigError, match="did you mean 'namespace'"):
        settings_from_table({"namespce": "x"}, "f")
    with pytest.raises(ConfigError, match="at least one"):
        cluster_from_dict({"cluster": {"name": "c"}}, base=Path("."))


def test_rules_on_pod_facts(tmp_path: Path) -> None:
    b = BundleBuilder(tmp_path)
    b.add(host="sglang-0", role="decode", port=8000)
    b.host_outputs[("sglang-0", "k8s_pod")] = ((DATA / "k8s_pod_lws_sglang.json").read_text(), "json")
    b.host_outputs[("sglang-0", "k8s_events")] = ((DATA / "k8s_events_probe_failures.json").read_text(), "json")
    cap = load_capture(b.write())
    found = {f.key: f for f in analyze(cap).findings}
    blind = found["K8S_LIVENESS_BLIND"]
    assert blind.severity == "warning" and "200 failures x 30 s = 6000 s" in blind.title
    restarted = found["K8S_CONTAINER_RESTARTED"]
    assert "restarted 3 time(s)" in restarted.title and "Error (exit 1)" in restarted.title
    assert "failed liveness probe" in found["K8S_POD_EVENTS"].title
    assert "LeaderWorkerSet sglang" in found["K8S_GROUP_RECREATE_RISK"].title


def test_exec_streams_are_bounded_per_node(standin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from pdforensics.transport import kubectl

    monkeypatch.setattr(kubectl, "PER_NODE_EXECS", 1)
    monkeypatch.setattr(kubectl, "GATES", kubectl._Gates())
    pods = [PodTarget("inference", "sglang-pd-prefill-0", "prefill", node="gpu-node-1"),
            PodTarget("inference", "llama-70b-decoder-5c7cbd94ff-crxrp", "ome-container", node="gpu-node-2")]
    transports = [KubectlTransport(HostSpec(name=f"h{i}", address=t.address())) for i, t in enumerate(pods)]
    spans: dict[str, list[tuple[float, float]]] = {"gpu-node-1": [], "gpu-node-2": []}

    def one(t: KubectlTransport) -> None:
        t0 = time.monotonic()
        assert t.run("ps", remote_argv(("sleep", "0.4"), 5), 5, 64).ok
        spans[t.target.node or "?"].append((t0, time.monotonic()))

    threads = [threading.Thread(target=one, args=(t,)) for t in transports for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for node, got in spans.items():
        (_, end_a), (_, end_b) = sorted(got, key=lambda s: s[1])
        assert end_b - end_a >= 0.35, f"{node}: two execs overlapped"  # one at a time per node


def test_report_shows_the_pods(tmp_path: Path) -> None:
    from pdforensics.report.page import render

    b = BundleBuilder(tmp_path)
    b.add(host="sglang-0", role="decode", port=8000)
    b.host_outputs[("sglang-0", "k8s_pod")] = ((DATA / "k8s_pod_lws_sglang.json").read_text(), "json")
    b.host_outputs[("sglang-0", "k8s_events")] = ((DATA / "k8s_events_probe_failures.json").read_text(), "json")
    cap = load_capture(b.write())
    html = render(cap, analyze(cap))
    row = html.split("<h3>Pods</h3>", 1)[1].split("</table>", 1)[0]
    for text in ("default/sglang-0", "gpu-node-7", "LeaderWorkerSet sglang [0]", "Error exit 1",
                 "liveness http /health (200x30s)", '<td class="num">3</td>'):
        assert text in row, text


def test_cli_k8s_options_need_k8s_and_a_failed_listing_is_one_error_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from pdforensics.cli import main

    monkeypatch.delenv("PDFORENSICS_CLUSTER", raising=False)
    res = CliRunner().invoke(main, ["capture", "--local", "-n", "inference", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "need --k8s" in res.output
    monkeypatch.setenv("PDFORENSICS_KUBECTL", "/bin/false")
    res = CliRunner().invoke(main, ["capture", "--k8s", "-n", "inference", "-o", str(tmp_path)])
    assert res.exit_code == 1 and "kubectl could not list pods" in res.output
    assert "Traceback" not in res.output
