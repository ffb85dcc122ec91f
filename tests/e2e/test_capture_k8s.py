"""`capture --k8s` end to end against the stand-in kubectl over the lab: the same evidence
families and verdict as the local capture of the same lab, every kubectl argv in the
manifest, and a pod whose exec fails is a gap with kubectl's reason. No real cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.lab import lab_down, lab_up
from pdforensics.lab.core import LabInfo
from tests.support import ports
from tests.support.k8s_lab import NAMESPACE, recorded_argvs, standin_env, write_fixture

pytestmark = pytest.mark.lab

BASE = ports.block()
# two /metrics samples: the lab's client keeps requests flowing, so one scrape may catch work
# in flight, whose progress one scrape cannot judge (UNKNOWN), and the other capture not
FAST = ["--samples", "2", "--interval", "1.5s", "--stack-dumps", "1", "--deadline", "30", "--json", "-q"]
# evidence families: a source and its k8s counterpart count as one
# a pod's log comes whole from `kubectl logs`; the router's is not parsed for its breaker
# transitions there (docs/kubernetes.md: its breaker state comes from its metrics)
FAMILY = {"log_file": "logs", "journal": "logs", "k8s_logs": "logs", "router_log": "logs"}
K8S_ONLY = {"k8s_pod", "k8s_events", "k8s_pods", "k8s_debug", "connect"}
LOCAL_ONLY = {"nvml"}  # the in-process NVML probe runs only on the local host (as over SSH)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabInfo]:
    d = tmp_path_factory.mktemp("k8slab")
    try:
        # the stand-in router: the stand-in kubectl makes pods of command lines, and smg's
        # title hides its own
        yield lab_up(d / "lab", fault="healthy", ssh=False, base_port=BASE, router="standin")
    finally:
        lab_down(d / "lab")


def _capture(args: list[str], env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(main, ["capture", *args, *FAST], env=env)
    assert res.stdout.strip().startswith("{"), res.output
    return res.exit_code, json.loads(res.stdout)


def _manifest(doc: dict[str, Any]) -> dict[str, Any]:
    return json.loads((Path(doc["bundle"]) / "manifest.json").read_text())


def _families(manifest: dict[str, Any]) -> set[str]:
    return {FAMILY.get(r["source"], r["source"]) for r in manifest["results"]
            if r["source"] not in K8S_ONLY | LOCAL_ONLY and r.get("exit_status") == 0}


@pytest.fixture(scope="module")
def captures(lab: LabInfo, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("k8sout")
    _, local = _capture(["-c", str(lab.cluster_file), "-o", str(out / "local")])
    fixture = write_fixture(lab, out / "pods.json")
    code, k8s = _capture(["--k8s", "-n", NAMESPACE, "-l", "rbg", "-o", str(out / "k8s")],
                         env=standin_env(fixture))
    return {"local": local, "k8s": k8s, "k8s_code": code, "fixture": fixture}


def test_same_families_and_verdict_as_local_capture(captures: dict[str, Any]) -> None:
    local, k8s = captures["local"], captures["k8s"]
    assert k8s["verdict"] == local["verdict"], (k8s["findings"], local["findings"])
    missing = _families(_manifest(local)) - _families(_manifest(k8s))
    assert not missing, f"evidence families the k8s capture lacks: {sorted(missing)}"
    assert {h["name"] for h in k8s["hosts"]} == {h["name"] for h in local["hosts"]}
    assert all(h["reachable"] for h in k8s["hosts"])


def test_manifest_records_every_kubectl_argv(captures: dict[str, Any]) -> None:
    manifest = _manifest(captures["k8s"])
    in_manifest = {tuple(r["argv"][1:]) for r in manifest["results"] if r["argv"]
                   and Path(r["argv"][0]).name == "kubectl"}
    called = {tuple(a[1:]) for a in recorded_argvs(captures["fixture"])}
    assert called and called <= in_manifest, sorted(called - in_manifest)[:5]
    execs = [r for r in manifest["results"] if r["argv"][1:4] == ["-n", NAMESPACE, "exec"]]
    assert execs and all(r["argv"][r["argv"].index("--") + 1] == "timeout" for r in execs)
    assert manifest["k8s"]["selector"] == "rolebasedgroup.workloads.x-k8s.io/name"
    assert {p["role"] for p in manifest["k8s"]["pods"]} == {"router", "prefill", "decode"}


def test_pod_facts_are_read(captures: dict[str, Any]) -> None:
    from pdforensics.views.loaded import load_capture

    cap = load_capture(Path(captures["k8s"]["bundle"]))
    pods = {h.name: h.k8s_pod for h in cap.hosts}
    assert all(p is not None and p.node == "lab-node" for p in pods.values()), pods
    assert any(f["key"] == "K8S_GROUP_RECREATE_RISK" for f in captures["k8s"]["findings"])
    assert any(s.log_source == "k8s_logs" for s in cap.services())


def test_exec_failure_is_a_gap_with_the_reason(lab: LabInfo, tmp_path: Path) -> None:
    why = "error: unable to upgrade connection: container not running"
    fixture = write_fixture(lab, tmp_path / "pods.json",
                            behaviour={lab.host("decode").name: {"exec_fails": why}})
    code, doc = _capture(["--k8s", "-n", NAMESPACE, "-o", str(tmp_path / "out")],
                         env=standin_env(fixture))
    assert code == 3 and doc["status"] == "partial"
    decode = next(h for h in doc["hosts"] if h["name"] == lab.host("decode").name)
    assert not decode["reachable"] and why in decode["error"]
    assert any(r.endswith("unreachable") for r in doc["partial_reasons"])


def test_debug_container_runs_py_spy_and_is_recorded(lab: LabInfo, tmp_path: Path) -> None:
    fixture = write_fixture(lab, tmp_path / "pods.json")
    code, doc = _capture(["--k8s", "-n", NAMESPACE, "--k8s-debug", "--k8s-debug-image", "pyspy:test",
                          "-o", str(tmp_path / "out")], env=standin_env(fixture))
    manifest = _manifest(doc)
    debug = manifest["k8s"]["debug"]
    assert debug["asked"] and not debug["removable"] and len(debug["argv"]) == 3
    assert all("--profile=sysadmin" in a and "--image=pyspy:test" in a for a in debug["argv"])
    names = {p["debug_container"] for p in manifest["k8s"]["pods"]}
    assert len(names) == 1 and None not in names
    spies = [r for r in manifest["results"] if r["source"] == "pyspy"]
    assert spies and all(r["argv"][r["argv"].index("-c") + 1] in names for r in spies)
    assert any(r["exit_status"] == 0 for r in spies)
    assert any(f["key"] == "K8S_DEBUG_CONTAINER_ADDED" for f in doc["findings"])
