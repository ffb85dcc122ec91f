"""Slurm pieces that need no running Slurm: the srun command line, srun's own failures,
worker-log naming, the job -> hosts mapping, the cluster-file keys and the CLI's refusals."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pdforensics.cli import main
from pdforensics.config.cluster import load_cluster_file
from pdforensics.model import CommandResult, HostSpec, SlurmTarget
from pdforensics.sglang.discovery import Discovery, Service
from pdforensics.slurm.cluster import SlurmOptions, manifest_json, slurm_cluster
from pdforensics.slurm.job import parse_job
from pdforensics.slurm.logs import attach_logs, worker_logs
from pdforensics.transport import open_transport
from pdforensics.transport.base import remote_argv
from pdforensics.transport.slurm import SlurmTransport, _classify
from pdforensics.transport.ssh import SshTransport

DATA = Path(__file__).resolve().parent.parent / "data" / "slurm"


def _host(container: str | None = None, via_ssh: bool = False) -> HostSpec:
    return HostSpec(name="gpu07", address="gpu07",
                    slurm=SlurmTarget(job_id="4242", node="gpu07", container=container, via_ssh=via_ssh))


def test_srun_argv_wraps_the_remote_timeout_unchanged() -> None:
    inner = remote_argv(("cat", "/proc/1/cmdline"), 5)
    argv = SlurmTransport(_host()).srun_argv(inner)
    assert argv[:8] == ("srun", "--overlap", "--jobid=4242", "-w", "gpu07", "-N1", "-n1", "--quiet")
    sep = argv.index("--")
    assert argv[sep + 1:] == ("timeout", "-k", "2", "5", "cat", "/proc/1/cmdline")
    assert not any(a.startswith("--container") for a in argv[:sep])
    with_container = SlurmTransport(_host(container="sglang")).srun_argv(inner)
    assert "--container-name=sglang" in with_container[:with_container.index("--")]


def test_transport_choice_follows_the_slurm_target() -> None:
    assert isinstance(open_transport(_host()), SlurmTransport)
    assert isinstance(open_transport(_host(via_ssh=True)), SshTransport)
    t = SlurmTransport(_host())
    assert t.fetch("metrics", "http://127.0.0.1:30000/metrics", 5, 100) is None
    assert t.read_file("log_file", "/var/log/x", 5, 100) is None


def _result(status: int | None, stderr: str, stdout: bytes = b"", timed_out: bool = False) -> CommandResult:
    return CommandResult(host="gpu07", source="ps", argv=("srun",), exit_status=status, stdout=stdout,
                         stderr=stderr, duration_s=0.1, started_at=1.0, timed_out=timed_out)


def test_srun_start_failures_are_gaps_with_srun_reason() -> None:
    # stderr lines as srun 22.05 printed them against the test Slurm
    for line in ("srun: error: Slurm job 1 has expired",
                 "srun: error: Unable to confirm allocation for job 99: Invalid job id specified",
                 "srun: error: Unable to create step for job 1: Requested node configuration is not available"):
        got = _classify(_result(1, line + "\n"))
        assert got.error == f"srun could not start: {line}"
    waiting = _classify(_result(None, "srun: Job 1 step creation temporarily disabled, retrying "
                                      "(Requested nodes are busy)\n", timed_out=True))
    assert waiting.error is not None and "no step started before the timeout" in waiting.error


def test_a_command_failing_on_the_node_stays_the_command_result() -> None:
    got = _classify(_result(3, "srun: error: vm: task 0: Exited with exit code 3\n"))
    assert got.error is None and got.exit_status == 3
    partial = _classify(_result(124, "srun: error: Slurm job 1 has expired\n", stdout=b"some"))
    assert partial.error is None  # output arrived: it is the command's, kept as is


def test_worker_logs_follow_the_recipes_naming() -> None:
    names = ["log.out", "log.err", "node0197_prefill_w0.err", "node0197_prefill_w0.out",
             "node0201_decode_w1.out", "node0201_decode_w0.log", "node0201_agg_w0.out",
             "node0201_nginx.out", "benchmark.out"]
    logs = worker_logs("/logs/3062824", names)
    assert logs == {"node0197": [("prefill", "/logs/3062824/node0197_prefill_w0.err")],
                    "node0201": [("decode", "/logs/3062824/node0201_decode_w0.log"),
                                 ("decode", "/logs/3062824/node0201_decode_w1.out"),
                                 ("unified", "/logs/3062824/node0201_agg_w0.out")]}
    assert worker_logs(None, names) == {}


def _svc(role: str, port: int, log: str | None = None) -> Service:
    return Service(role=role, kind="router" if role == "router" else "server",  # type: ignore[arg-type]
                   port=port, address="127.0.0.1", root_pid=port, pids=(port,), metrics_port=None,
                   unit=None, log_file=log, declared=False)


def test_services_get_their_worker_log_else_the_job_output() -> None:
    host = HostSpec(name="n1", address="n1", slurm=SlurmTarget(
        job_id="9", node="n1", worker_logs=(("decode", "/o/n1_decode_w0.err"), ("decode", "/o/n1_decode_w1.err")),
        job_log="/o/log.out"))
    disc = Discovery(processes=(), services=(_svc("decode", 30002), _svc("decode", 30001),
                                             _svc("router", 8000), _svc("prefill", 30000, "/declared.log")))
    got, notes = attach_logs(host, disc)
    logs = {s.port: s.log_file for s in got.services}
    assert logs == {30001: "/o/n1_decode_w0.err", 30002: "/o/n1_decode_w1.err", 8000: "/o/log.out",
                    30000: "/declared.log"}
    assert [s.port for s in got.services] == [30002, 30001, 8000, 30000]  # discovery's order kept
    assert any("router:8000: log from the job's output file /o/log.out" in n for n in notes)
    plain = HostSpec(name="n1", address="n1")
    assert attach_logs(plain, disc) == (disc, [])


def test_one_host_per_node_with_cluster_file_settings(tmp_path: Path) -> None:
    job = parse_job((DATA / "scontrol_job_d_huji.txt").read_text(), "1")
    (tmp_path / "c.toml").write_text('[cluster]\nname = "pd"\nslurm_job = 1\n'
                                     '[[hosts]]\nname = "node-64"\naddress = "node-64"\npy_spy = "/opt/py-spy"\n')
    base = load_cluster_file(tmp_path / "c.toml")
    listing = {"/location/with": ["node-63_prefill_w0.err", "node-64_decode_w0.err"]}
    cluster = slurm_cluster(job, SlurmOptions(job_id="1", container="sgl"), base, listing=listing)
    assert [h.name for h in cluster.hosts] == ["node-63", "node-64", "node-65"]
    by = {h.name: h for h in cluster.hosts}
    assert by["node-64"].py_spy == "/opt/py-spy" and by["node-63"].py_spy == "py-spy"
    assert by["node-63"].slurm == SlurmTarget(job_id="1", node="node-63", container="sgl",
                                              worker_logs=(("prefill", "/location/with/node-63_prefill_w0.err"),),
                                              job_log="/location/with/out.txt")
    assert cluster.name == "pd"
    doc = manifest_json(job, SlurmOptions(job_id="1"))
    assert doc["nodes"] == ["node-63", "node-64", "node-65"] and doc["via"] == "srun"


def test_cluster_file_keys(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text('[cluster]\nname = "pd"\nslurm_job = "77"\nslurm_container = "sgl"\nslurm_ssh = true\n')
    assert load_cluster_file(f).extra["slurm_job"] == "77"
    f.write_text('[cluster]\nslurm_jobs = "77"\n')
    result = CliRunner().invoke(main, ["capture", "-c", str(f)])
    assert result.exit_code == 2 and "did you mean 'slurm_job'" in result.output


def test_cli_refuses_half_given_slurm_options(tmp_path: Path) -> None:
    runner = CliRunner()
    got = runner.invoke(main, ["capture", "--local", "--slurm-container", "sgl", "-o", str(tmp_path)])
    assert got.exit_code == 2 and "need --slurm-job" in got.output
    got = runner.invoke(main, ["capture", "h1", "--slurm-job", "12", "-o", str(tmp_path)])
    assert got.exit_code == 2 and "either HOST arguments or --slurm-job" in got.output
    got = runner.invoke(main, ["capture", "--slurm-job", "12;rm", "-o", str(tmp_path)])
    assert got.exit_code == 1 and "expected a number" in got.output


def test_launchers_carrying_the_server_command_line_are_not_servers() -> None:
    from pdforensics.sglang.discovery import classify

    server = ("/work/wt/slurm/.venv/bin/python -m sglang.launch_server --model-path /models/DeepSeek-V3 "
              "--disaggregation-mode prefill --port 26444")
    # as ps showed them in a job: the srun client of a worker step, its helper, a bash -c wrapper
    assert classify("srun --overlap -N1 -n1 --job-name=prefill_w0 --output=/o/%N_prefill_w0.log -- env "
                    "CUDA_VISIBLE_DEVICES=0,1 " + server) is None
    assert classify("/usr/bin/srun --container-name=sgl -- " + server) is None
    assert classify("bash -c " + server) is None
    assert classify(server) == ("server", None)
