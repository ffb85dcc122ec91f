"""Every source carries its own plan, and some profile plans it: the planner is run over a
host with a server of each kind (unit, log file, cgroup-found unit, router with and without a
log file) under each profile, fed answers, and every registered source must turn up. A source
that no profile plans fails here; so does a diff that would lose what it compares when it
skips the sources not declared `config`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import pdforensics.capture.planner as planner_mod
from pdforensics.capture.planner import HostPlanner, PlanOptions
from pdforensics.capture.profiles import PROFILES
from pdforensics.collectors import REGISTRY, SOURCES
from pdforensics.collectors.base import Job, Runs
from pdforensics.model import CommandResult, HostSpec, ServiceSpec
from tests.support import fleet

# what each capturing command's flags can turn on beyond its profile's defaults
OPT_INS: dict[str, dict[str, object]] = {
    "full": {"sglang_source": True, "request_log_s": 30.0, "nccl_ras": True, "deep": True},
    "snapshot": {"stacks": True, "doctor": True},
}

DECODE = "/opt/venv/bin/python3 -m sglang.launch_server --disaggregation-mode decode --port 30001 --enable-metrics"
PREFILL = "/usr/bin/python3 -m sglang.launch_server --disaggregation-mode prefill --port 30002 --enable-metrics"
ROUTER = "/usr/bin/python3 -m sglang_router.launch_router --port 30000"
PS = "\n".join(f"{pid:>7} {1:>5} S {100:>10} {4:>3} {1000:>8} {args}" for pid, args in (
    (4001, DECODE), (4002, "sglang::scheduler_TP0"), (5001, PREFILL), (6001, ROUTER)))
HOSTS = (
    HostSpec(name="a", address="local", services=(
        ServiceSpec(role="decode", port=30001, unit="sglang-decode.service"),
        ServiceSpec(role="prefill", port=30002, log_file="/var/log/sglang/prefill.log"),
        ServiceSpec(role="router", port=30000, metrics_port=29000, unit="smg.service"))),
    HostSpec(name="b", address="10.0.0.2", services=(
        ServiceSpec(role="router", port=30000, log_file="/var/log/smg.log"),)),
)
OK_JSON = ("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n"
           + json.dumps({"log_requests": False, "log_requests_level": 0, "version": "0.5.3"}))


def _answer(job: Job) -> bytes:
    """What the host says: decode's old server answers 404 on the new endpoint names."""
    name, svc = job.source.name, job.target.service
    if name == "ps":
        parent = {4002: 4001}
        return "\n".join(line.replace(f" {1:>5} ", f" {parent.get(int(line.split()[0]), 1):>5} ", 1)
                         for line in PS.splitlines()).encode()
    if name == "flight_recorder_list":  # find under torch's default dump prefix
        return b"/tmp/nccl_trace_rank_0\n/tmp/nccl_trace_rank_notes.txt\n"
    if name == "cgroup":
        return b"0::/system.slice/sglang-prefill.service\n"
    if name in ("server_info", "model_info") and svc is not None and svc.port == 30001:
        return b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
    if job.url is not None:
        return OK_JSON.encode()
    return b""


def planned(host: HostSpec, options: PlanOptions, limit: int = 500) -> set[str]:
    """The sources the planner plans for one host, following every result it asks for."""
    planner = HostPlanner(host, options)
    queue = planner.initial_jobs()
    seen: set[str] = set()
    while queue and limit:
        limit -= 1
        job = queue.pop(0)
        seen.add(job.source.name)
        result = CommandResult(host=host.name, source=job.source.name, argv=job.argv, exit_status=0,
                               stdout=_answer(job), stderr="", duration_s=0.1, started_at=1000.0)
        queue += planner.on_result(job, result)
    return seen


def planned_anywhere() -> set[str]:
    """Every source some profile plans (with the opt-ins its command offers), and the per-pod
    sources the Kubernetes sidecar binds."""
    from pdforensics.collectors.k8s import K8S_DEBUG
    from pdforensics.k8s.sidecar import pod_sources

    out: set[str] = set()
    for name, profile in PROFILES.items():
        options = dataclasses.replace(profile.plan(), **OPT_INS.get(name, {}))  # type: ignore[arg-type]
        for host in HOSTS:
            out |= planned(host, options)
    out |= {src.name for src, _t in pod_sources(HOSTS[0])}
    out |= {K8S_DEBUG.name}  # POD_SETUP: the debug container k8s/debug.py adds before the capture
    return out


def test_every_registered_source_is_planned_by_some_profile() -> None:
    missing = sorted(set(REGISTRY) - planned_anywhere())
    assert not missing, f"registered but planned by no profile: {missing}"


def test_doctors_probes_are_planned_by_the_doctor_profile_only() -> None:
    probes = {s.name for s in SOURCES if s.name not in REGISTRY}
    assert probes and probes <= planned(HOSTS[0], PROFILES["doctor"].plan())
    assert not probes & planned(HOSTS[0], PROFILES["full"].plan())


def test_a_source_no_profile_plans_fails_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = dataclasses.replace(REGISTRY["uname"], name="stray_follow_up", runs=Runs.FOLLOW_UP)
    monkeypatch.setattr(planner_mod, "SOURCES", (*SOURCES, stray))
    monkeypatch.setitem(REGISTRY, stray.name, stray)
    assert "stray_follow_up" not in planned_anywhere()
    assert "stray_follow_up" in set(REGISTRY) - planned_anywhere()


def test_a_plan_that_leaves_out_a_switch_leaves_out_its_sources() -> None:
    full = planned(HOSTS[0], PROFILES["full"].plan())
    bare = planned(HOSTS[0], dataclasses.replace(PROFILES["full"].plan(), stacks=False, gpu=False,
                                                 logs=False, versions=False, probes=False))
    switched = {s.name for s in SOURCES if s.switch is not None}
    assert full & switched and not bare & switched
    assert {"ps", "ss_listen", "clock", "metrics", "health", "cmdline", "environ"} <= bare


def test_the_diff_reads_only_config_sources(tmp_path: Path) -> None:
    """Skipping every source not declared `config` leaves the diff's state as it was."""
    from pdforensics.diff.state import NOT_CONFIG, extract_state
    from pdforensics.views.loaded import load_capture

    hosts = fleet.pd_cluster(3, tp=2, flags=("--watchdog-timeout", "200"), env=(("NCCL_DEBUG", "INFO"),),
                             packages=5, metrics_samples=2, log_lines=20, env_size=3)
    bundle = fleet.write_capture(tmp_path, hosts, taken_at=1_700_000_000.0)
    assert NOT_CONFIG and all(not REGISTRY[n].config for n in NOT_CONFIG)
    assert extract_state(load_capture(bundle, skip_sources=NOT_CONFIG)) == extract_state(load_capture(bundle))
