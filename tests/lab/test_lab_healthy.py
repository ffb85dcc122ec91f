"""A healthy lab (no ssh): endpoints, metrics, processes, env, py-spy, lab_down."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pdforensics.errors import PdforensicsError
from pdforensics.lab import FAULTS, lab_down, lab_status, lab_up
from tests.lab.helpers import fetch, py_spy, rank_pid, scrape, total, values
from tests.support import ports

if sys.version_info >= (3, 11):
    import tomllib
else:  # the project runs on 3.10 too (pyproject's tomli)
    import tomli as tomllib

pytestmark = pytest.mark.lab

BASE = ports.block()  # found free at run time
OTHER = ports.block()  # a second lab's block


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab_dir = tmp_path_factory.mktemp("lab-healthy")
    info = lab_up(lab_dir, base_port=BASE, secret_env={"HF_TOKEN": "hf_labsecret123"})
    yield info
    lab_down(lab_dir)


def test_faults_tuple():
    assert FAULTS[:7] == ("healthy", "transfer-stuck", "kv-full", "forgotten-requests", "rank-stuck",
                          "hung-endpoint", "process-dead")


@pytest.mark.parametrize("role", ["prefill", "decode"])
def test_server_endpoints(lab, role):
    url = lab.url(role)
    status, ctype, _ = fetch(url + "/metrics")
    assert status == 200 and ctype.startswith("text/plain") and "version=0.0.4" in ctype
    for path in ("/model_info", "/get_model_info", "/server_info", "/get_server_info", "/v1/loads"):
        status, ctype, body = fetch(url + path)
        assert status == 200 and ctype == "application/json", path
        json.loads(body)
    info = json.loads(fetch(url + "/server_info")[2])
    assert info["version"].startswith("0.5.")
    assert info["disaggregation_mode"] == role and info["tp_size"] == 2
    assert info["internal_states"][0]["tp_rank"] == 0
    assert json.loads(fetch(url + "/model_info")[2])["model_path"] == "/models/DeepSeek-V3"
    loads = json.loads(fetch(url + "/v1/loads")[2])
    assert loads["loads"][0]["disaggregation"]["mode"] == role
    assert fetch(url + "/health")[0] == 200 and fetch(url + "/health_generate")[0] == 200


def test_router_endpoints(lab):
    url = lab.url("router")
    workers = json.loads(fetch(url + "/workers")[2])["workers"]
    assert {w["worker_type"] for w in workers} == {"prefill", "decode"}
    assert fetch(url + "/health")[0] == 200
    assert json.loads(fetch(url + "/v1/models")[2])["data"][0]["id"] == "deepseek-v3"
    h = lab.host("router")
    samples = scrape(f"http://{h.bind}:{h.metrics_port}")
    names = {n for n, _ in samples}
    assert "smg_http_requests_total" in names and "smg_worker_health" in names
    assert "smg_worker_cb_state" in names and "smg_worker_requests_active" in names
    # the real gateway re-exports its workers' engine metrics on /engine_metrics, labelled by worker
    engine = fetch(url + "/engine_metrics")[2].decode()
    assert "sglang:num_running_reqs{" in engine and f'worker_addr="{lab.url("decode")}"' in engine
    assert {w["url"] for w in workers} == {lab.url("prefill"), lab.url("decode")}


def test_metrics_names_and_labels(lab):
    samples = scrape(lab.url("decode"))
    for name in ("sglang:num_running_reqs", "sglang:token_usage", "sglang:num_decode_transfer_queue_reqs",
                 "sglang:num_decode_prealloc_queue_reqs", "sglang:generation_tokens_total",
                 "sglang:realtime_tokens_total", "sglang:time_to_first_token_seconds_bucket"):
        assert values(samples, name), name
    # as the real SGLang 0.5.23 (issue 34): no forward_execution_seconds_total; the failure counters
    # have no series before their first failure; the HTTP gauge counts the scrape itself
    for name in ("sglang:forward_execution_seconds_total", "sglang:num_transfer_failed_reqs_total",
                 "sglang:num_bootstrap_failed_reqs_total"):
        assert not values(samples, name), name
    active = {dict(labels)["endpoint"]: v for labels, v in values(samples, "sglang:http_requests_active").items()}
    assert active["/metrics"] == 1 and active["/generate"] == 0, active
    running = values(samples, "sglang:num_running_reqs")
    ranks = {dict(labels)["tp_rank"] for labels in running}
    assert ranks == {"0", "1"}
    assert all(dict(labels)["engine_type"] == "decode" for labels in running)
    prefill = scrape(lab.url("prefill"))
    assert values(prefill, "sglang:num_prefill_bootstrap_queue_reqs")
    assert values(prefill, "sglang:num_prefill_inflight_queue_reqs")


def test_counters_rise(lab):
    first = {r: scrape(lab.url(r)) for r in ("prefill", "decode")}
    time.sleep(1.5)
    second = {r: scrape(lab.url(r)) for r in ("prefill", "decode")}
    for name in ("sglang:generation_tokens_total", "sglang:realtime_tokens_total"):
        assert total(second["decode"], name) > total(first["decode"], name), name
    assert total(second["prefill"], "sglang:prompt_tokens_total") > total(first["prefill"],
                                                                            "sglang:prompt_tokens_total")


def test_processes_and_env(lab):
    args = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    ours = {c.pid for p in lab.pids.values() for c in [psutil.Process(p), *psutil.Process(p).children()]}
    mine = [line for line in args.splitlines()[1:] if int(line.split()[0]) in ours]
    text = "\n".join(mine)
    for title in ("sglang::scheduler_TP0", "sglang::scheduler_TP1", "sglang::detokenizer"):
        assert text.count(title) == 2, title
    assert "-m sglang.launch_server" in text and "--disaggregation-mode prefill" in text
    # the real gateway sets its title, which replaces its command line
    assert "--disaggregation-mode decode" in text and "smg::router" in text
    environ = Path(f"/proc/{lab.pids['decode']}/environ").read_bytes().split(b"\0")
    assert b"SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT=300" in environ
    assert b"HF_TOKEN=hf_labsecret123" in environ
    assert b"CUDA_VISIBLE_DEVICES=2,3" in environ


def test_py_spy_scheduler(lab):
    dump = py_spy(rank_pid(lab.pids["decode"], "sglang::scheduler_TP0"))
    assert "sglang/srt/managers/scheduler.py" in dump
    assert "Scheduler.event_loop_normal_disagg_decode" in dump
    assert "watchdog" in dump


def test_nvidia_smi(lab):
    smi = str(Path(lab.dir) / "hosts" / "decode-0" / "bin" / "nvidia-smi")
    out = subprocess.run([smi, "--query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total,"
                          "temperature.gpu,power.draw,clocks.sm,clocks_throttle_reasons.active,pstate,"
                          "ecc.errors.uncorrected.volatile.total", "--format=csv"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("index, uuid, name, utilization.gpu [%], memory.used [MiB]")
    assert len(out) == 5
    busy = [line for line in out[1:] if not line.split(", ")[3].startswith("0 ")]
    assert len(busy) == 2
    apps = subprocess.run([smi, "--query-compute-apps=pid,process_name,gpu_uuid,used_memory",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    pids = {int(line.split(", ")[0]) for line in apps}
    assert pids == {rank_pid(lab.pids["decode"], f"sglang::scheduler_TP{r}") for r in (0, 1)}
    for argv in ([smi], [smi, "-L"], [smi, "nvlink", "-e"], [smi, "-q", "-d", "ROW_REMAPPER"]):
        assert subprocess.run(argv, capture_output=True).returncode == 0, argv


def test_cluster_file(lab):
    data = tomllib.loads(Path(lab.cluster_file).read_text())
    assert data["cluster"]["name"] == "lab"
    roles = {h["services"][0]["role"]: h for h in data["hosts"]}
    assert set(roles) == {"router", "prefill", "decode"}
    assert all(h["address"] == "local" and h["simulated_gpu"] for h in data["hosts"])
    assert roles["router"]["services"][0]["metrics_port"] == BASE + 4
    assert roles["decode"]["services"][0]["port"] == BASE + 1


def test_status_and_port_in_use(lab, tmp_path):
    status = lab_status(lab.dir)
    assert status.running and status.fault == "healthy"
    assert sum(p.alive for p in status.processes) >= 9
    with pytest.raises(PdforensicsError, match="in use"):
        lab_up(tmp_path / "other", base_port=BASE)


def test_lab_down_leaves_nothing(tmp_path):
    info = lab_up(tmp_path / "short", base_port=OTHER, router="standin")  # the older command line
    pids = [p for root in info.pids.values() for p in [root, *[c.pid for c in psutil.Process(root).children()]]]
    assert "sglang_router.launch_router" in psutil.Process(info.pids["router"]).cmdline()
    assert len(json.loads(fetch(info.url("router") + "/workers")[2])["workers"]) == 2
    assert len(pids) == 10  # router, client, 2 servers x (root + 2 ranks + detokenizer)
    lab_down(info.dir)
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert not lab_status(info.dir).running
    lab_down(info.dir)  # idempotent
