"""Hostile values (spaces, quotes, `;`, `$()`, backticks, newlines) reach remote commands as
exactly one argv element each: through the planner and collectors' build functions, the
local transport (a recording `timeout` on PATH) and real sshd (a recorder, real tail, a
recorder installed under a hostile path as nvidia-smi)."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pdforensics.capture.planner import HostPlanner, PlanOptions, make_job
from pdforensics.collectors import REGISTRY, gpu, logs
from pdforensics.collectors.base import Job, Target
from pdforensics.config.cluster import cluster_from_dict, load_cluster_file
from pdforensics.errors import ConfigError, TransportError
from pdforensics.model import CommandResult, HostSpec, ServiceSpec
from pdforensics.sglang.discovery import Service
from pdforensics.transport.local import LocalTransport
from pdforensics.transport.ssh import SshTransport

CANARY = f"pdfx-canary-{uuid.uuid4().hex[:8]}"
# each would run `touch CANARY...` if any layer handed it to a shell unquoted
HOSTILE = (
    "a b.service",
    "q'uo\"te.service",
    f"x; touch {CANARY}-semi; y.service",
    f"$(touch {CANARY}-subst).service",
    f"`touch {CANARY}-tick`.service",
    f"nl\ntouch {CANARY}-newline\n.service",
    "--all",
    "glob*[0-9]{a,b}.service",
)
# ids without the canary, which differs per process (pytest-xdist's workers must agree)
HOSTILE_IDS = ("space", "quotes", "semicolon", "subst", "backtick", "newline", "option", "glob")
RECORDER = f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n"


def _canaries(*dirs: Path) -> list[Path]:
    return [p for d in dirs if d.is_dir() for p in d.iterdir() if p.name.startswith(CANARY)]


def _recorder(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RECORDER)
    path.chmod(0o755)
    return path


def _hostile_dir(root: Path) -> Path:
    """A directory whose path holds every kind of shell metacharacter."""
    return root / f"sp ace;touch {CANARY}-dir" / f"$(touch {CANARY}-dsub)" / f"q'\"`touch {CANARY}-dtick`\nnl"


def _ps(pid: int, args: str) -> CommandResult:
    """One `ps -eww` row; ps shows a newline inside args as `?`."""
    line = f"{pid:>7} {1:>5} S {100:>10} {4:>3} {1000:>8} {args.replace(chr(10), '?')}\n"
    return CommandResult(host="h", source="ps", argv=("ps",), exit_status=0, stdout=line.encode(),
                         stderr="", duration_s=0.1, started_at=0.0)


def _ok(source: str, out: str) -> CommandResult:
    return CommandResult(host="h", source=source, argv=(source,), exit_status=0, stdout=out.encode(),
                         stderr="", duration_s=0.1, started_at=0.0)


def _jobs_for(host: HostSpec, unit: str, python: str, address: str) -> list[Job]:
    """Every job the planner makes for a server whose python path and --host are hostile,
    declared with a hostile unit and log file, then a hostile unit read from its cgroup."""
    planner = HostPlanner(host, PlanOptions(samples=1))
    jobs = planner.initial_jobs()
    args = f"{python} -m sglang.launch_server --port 30001 --host {address} --enable-metrics"
    follow = planner.on_result(jobs[0], _ps(4242, args)) + planner.on_result(jobs[1], _ok("ss_listen", ""))
    jobs += follow
    cgroups = [j for j in follow if j.source.name == "cgroup"]
    for job in cgroups:
        jobs += planner.on_result(job, _ok("cgroup", f"0::/system.slice/{unit}\n"))
    return jobs


@pytest.fixture()
def hostile_host(tmp_path: Path) -> HostSpec:
    d = _hostile_dir(tmp_path)
    return HostSpec(name="h", address="local", nvidia_smi=str(_recorder(d / "nvidia smi")),
                    py_spy=str(_recorder(d / "py-spy")),
                    services=(ServiceSpec(role="decode", port=30001, unit=HOSTILE[3],
                                          log_file=str(d / "decode.log")),))


def test_build_functions_keep_each_hostile_value_one_element(hostile_host: HostSpec) -> None:
    python = f"/opt/x;$(touch${{IFS}}{CANARY})/bin/python"
    jobs = _jobs_for(hostile_host, "we$(id)ird`x`;y.service", python, "h;$(id)")
    by_source = {j.source.name: j for j in jobs}
    # every family of the capture got planned, with the hostile inputs
    assert {"systemctl_show", "unit_file", "log_file", "pip_freeze", "pyspy", "metrics",
            "nvidia_smi_query", "cmdline", "environ"} <= set(by_source), sorted(by_source)
    show = [j.argv for j in jobs if j.source.name == "systemctl_show"]
    assert show and all(a[-2] == "--" for a in show)
    assert {a[-1] for a in show} == {HOSTILE[3]}
    assert by_source["log_file"].argv[-2:] == ("--", hostile_host.services[0].log_file)
    assert by_source["pip_freeze"].argv[-2:] == (python, "4242")
    assert by_source["pip_freeze"].argv[4:6] == ("python3", "-I")  # the remote's binary never runs
    assert by_source["nvidia_smi_query"].argv[4] == hostile_host.nvidia_smi
    url = by_source["metrics"].argv[-1]
    assert url == "http://127.0.0.1:30001/metrics" and "--globoff" in by_source["metrics"].argv
    for job in jobs:
        assert job.argv[:2] == ("timeout", "-k"), job.argv  # wrapped, never `sh -c`
        assert "sh" not in job.argv and "-c" not in job.argv[:5]


def test_undeclared_unit_from_cgroup_output_is_one_element(tmp_path: Path) -> None:
    unit = f"a b;touch {CANARY}$(id)`x`.service"
    host = HostSpec(name="h", address="local")
    jobs = _jobs_for(host, unit, "/usr/bin/python3", "127.0.0.1")
    units = [j for j in jobs if j.source.scope == "unit"]
    assert {j.source.name for j in units} == {"systemctl_show", "unit_file", "journal"}
    for j in units:
        assert unit in j.argv or f"--unit={unit}" in j.argv, j.argv


@pytest.mark.parametrize("value", HOSTILE, ids=HOSTILE_IDS)
def test_local_transport_runs_exactly_the_planned_argv(value: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fake_bin = tmp_path / "bin"
    _recorder(fake_bin / "timeout")  # records what would have run, runs nothing
    monkeypatch.setenv("PATH", f"{fake_bin}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    d = _hostile_dir(tmp_path)
    host = HostSpec(name="h", address="local", nvidia_smi=str(d / value.replace("/", "_")),
                    services=(ServiceSpec(role="decode", port=30001, unit=value, log_file=str(d / "x.log")),))
    jobs = _jobs_for(host, value, f"/opt/{value.replace('/', '_')}/python", value)
    transport = LocalTransport(host)
    ran = 0
    for job in jobs:
        res = transport.run(job.source.name, job.argv, 5, 1 << 20)
        assert res.exit_status == 0, (job.argv, res.stderr)
        assert json.loads(res.stdout) == list(job.argv[1:]), job.key
        ran += 1
    assert ran >= 15 and {j.source.name for j in jobs} >= {"systemctl_show", "log_file", "pip_freeze"}
    assert not _canaries(tmp_path, Path.cwd(), Path.home())


def test_every_registered_source_builds_a_plain_argv() -> None:
    """No source builds a shell string: each argv element is used as is."""
    svc = Service(role="decode", kind="server", port=1, address="127.0.0.1", root_pid=1, pids=(1,),
                  metrics_port=2, unit=HOSTILE[2], log_file=HOSTILE[4], declared=True)
    from pdforensics.model import ProcessInfo

    proc = ProcessInfo(pid=1, ppid=0, state="S", start_epoch=0.0, threads=1, rss_kb=1,
                       args=f"{HOSTILE[5]}/python -m x", kind="server")
    host = HostSpec(name="h", address="127.0.0.2", nvidia_smi=HOSTILE[3], py_spy=HOSTILE[4])
    for source in REGISTRY.values():
        argv = source.build(host, Target(process=proc, service=svc, unit=HOSTILE[1], sample=1))
        assert argv and all(isinstance(a, str) for a in argv)
        assert argv[0] not in ("sh", "bash", "/bin/sh") and "-c" not in argv[:1]


def test_hostile_port_and_address_in_a_cluster_file_are_refused_or_inert(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="port"):
        cluster_from_dict({"cluster": {"name": "c"},
                           "hosts": [{"name": "h", "address": "127.0.0.2", "port": "22; touch x"}]}, tmp_path)
    for address in ("127.0.0.2 -oProxyCommand=touch", f"h;touch {CANARY}", "$(touch x)", "a\nb"):
        with pytest.raises(TransportError, match="cannot connect"):
            SshTransport(HostSpec(name="h", address=address, port=1)).connect(3)
    assert not _canaries(tmp_path, Path.cwd(), Path.home())


# -- real sshd ----------------------------------------------------------------------------------
@pytest.fixture()
def ssh_host(security_lab: Path) -> Iterator[tuple[HostSpec, SshTransport]]:
    host = load_cluster_file(security_lab).hosts[0]
    transport = SshTransport(host)
    transport.connect(10)
    try:
        yield host, transport
    finally:
        transport.close()



@pytest.mark.e2e
@pytest.mark.lab
def test_over_sshd_the_remote_sees_exactly_the_planned_argv(ssh_host: tuple[HostSpec, SshTransport],
                                                           tmp_path: Path) -> None:
    host, transport = ssh_host
    recorder = _recorder(tmp_path / "recorder")
    checked = 0
    for value in HOSTILE:
        spec = HostSpec(name=host.name, address=host.address,
                        services=(ServiceSpec(role="decode", port=30001, unit=value, log_file=f"/x/{value}"),),
                        nvidia_smi=f"/opt/{value}/nvidia-smi", py_spy=value)
        for job in _jobs_for(spec, value, f"/opt/{value}/python", value):
            res = transport.run(job.source.name, (str(recorder), *job.argv), 10, 1 << 20)
            assert res.exit_status == 0, (job.argv, res.stderr, res.error)
            assert json.loads(res.stdout) == list(job.argv), job.key
            checked += 1
    assert checked >= 8 * 15
    assert not _canaries(tmp_path, Path.home(), Path("/root"))


@pytest.mark.e2e
@pytest.mark.lab
def test_over_sshd_real_commands_get_hostile_paths_intact(ssh_host: tuple[HostSpec, SshTransport],
                                                          tmp_path: Path) -> None:
    host, transport = ssh_host
    d = _hostile_dir(tmp_path)
    nvsmi = _recorder(d / "nvidia smi;$(id)")
    log = d / "decode;`id`.log"
    log.write_bytes(b"line one\nline two $(not run)\n")
    spec = HostSpec(name=host.name, address=host.address, nvidia_smi=str(nvsmi))
    job = make_job(spec, gpu.NVIDIA_SMI_QUERY, Target())
    res = transport.run(job.source.name, job.argv, 10, 1 << 20)
    assert res.exit_status == 0, (res.stderr, res.error)
    assert json.loads(res.stdout) == list(job.argv[5:])  # after `timeout -k 2 S <nvidia-smi>`
    svc = Service(role="decode", kind="server", port=30001, address="127.0.0.1", root_pid=None, pids=(),
                  metrics_port=None, unit=None, log_file=str(log), declared=True)
    job = make_job(spec, logs.LOG_FILE, Target(service=svc))
    res = transport.run(job.source.name, job.argv, 10, 1 << 20)
    assert res.exit_status == 0, (res.stderr, res.error)
    assert res.stdout == log.read_bytes()
    assert not _canaries(tmp_path, Path.home(), Path("/root"))
