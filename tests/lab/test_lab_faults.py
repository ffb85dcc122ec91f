"""Each fault shows its signature; set_fault switches at run time."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from pdforensics.errors import PdforensicsError
from pdforensics.lab import lab_down, lab_status, lab_up, set_fault
from tests.lab.helpers import main_thread, py_spy, rank_pid, scrape, total, values, wait_for
from tests.support import ports

pytestmark = pytest.mark.lab

BASE = ports.block()  # found free at run time
OTHER = ports.block()  # a second lab's block
PROGRESS = ("sglang:generation_tokens_total", "sglang:realtime_tokens_total")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab_dir = tmp_path_factory.mktemp("lab-faults")
    info = lab_up(lab_dir, base_port=BASE)
    yield info
    lab_down(lab_dir)


def _main_stack(pid: int) -> str:
    """The process's main thread, sampled again (up to three times) when py-spy caught the
    stand-in writing its state file: the lab's own bookkeeping between two waits, not where
    the scheduler is parked."""
    for _ in range(3):
        dump = main_thread(py_spy(pid))
        if "write_state" not in dump:
            break
    return dump


def _settle(lab, fault: str) -> None:
    set_fault(lab.dir, fault)
    time.sleep(1.0)


def _two_scrapes(lab, role: str = "decode") -> tuple[dict, dict]:
    first = scrape(lab.url(role))
    time.sleep(1.5)
    return first, scrape(lab.url(role))


def _gpu_utils(lab, host: str) -> list[int]:
    smi = str(Path(lab.dir) / "hosts" / host / "bin" / "nvidia-smi")
    out = subprocess.run([smi, "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return [int(line.split(", ")[1]) for line in out.splitlines()]


def test_unknown_fault_rejected(lab):
    with pytest.raises(PdforensicsError, match="unknown fault"):
        set_fault(lab.dir, "no-such-fault")


def test_switch_healthy_to_transfer_stuck_promptly(lab):
    """Ranks re-read the fault every loop (about 0.15 s); scraping /metrics under a loaded CI
    box adds to that, so the bound is 3 s (about 0.3-0.6 s on a quiet machine)."""
    _settle(lab, "healthy")
    assert total(scrape(lab.url("decode")), "sglang:num_decode_transfer_queue_reqs") < 10
    set_fault(lab.dir, "transfer-stuck")
    t0 = time.monotonic()
    assert wait_for(lambda: all(v == 14 for v in values(scrape(lab.url("decode")),
                    "sglang:num_decode_transfer_queue_reqs").values()), timeout=3.0, interval=0.05)
    assert time.monotonic() - t0 < 3.0
    assert lab_status(lab.dir).fault == "transfer-stuck"


def test_transfer_stuck(lab):
    _settle(lab, "transfer-stuck")
    a, b = _two_scrapes(lab)
    for name in PROGRESS:
        assert total(a, name) == total(b, name), name
    assert total(b, "sglang:num_transfer_failed_reqs_total") > total(a, "sglang:num_transfer_failed_reqs_total")
    assert min(values(b, "sglang:num_decode_transfer_queue_reqs").values()) > 0
    assert min(values(scrape(lab.url("prefill")), "sglang:num_prefill_inflight_queue_reqs").values()) > 0
    dump = _main_stack(rank_pid(lab.pids["decode"], "sglang::scheduler_TP0"))
    assert "DecodeTransferQueue.pop_transferred" in dump and "MooncakeKVReceiver.poll" in dump
    log = (Path(lab.dir) / "logs" / "decode.log").read_text()
    assert "Decode transfer failed" in log and "KVPoll.WaitingForInput" in log
    utils = _gpu_utils(lab, "decode-0")
    assert utils[2] == 0 and utils[3] == 0


def test_kv_full(lab):
    _settle(lab, "kv-full")
    a, b = _two_scrapes(lab)
    assert min(values(b, "sglang:token_usage").values()) >= 0.98
    assert total(b, "sglang:num_retracted_requests_total") > total(a, "sglang:num_retracted_requests_total")
    assert total(b, "sglang:num_queue_reqs") > total(a, "sglang:num_queue_reqs")
    assert total(b, "sglang:generation_tokens_total") > total(a, "sglang:generation_tokens_total")


def test_busy(lab):
    """Saturated but progressing: queues full and moving, KV nearly full, counters rising,
    GPUs busy, and every rank in the forward's all-reduce."""
    _settle(lab, "busy")
    a, b = _two_scrapes(lab)
    time.sleep(1.5)
    c = scrape(lab.url("decode"))
    assert min(values(b, "sglang:token_usage").values()) > 0.9
    for name in PROGRESS:
        assert total(a, name) < total(b, name) < total(c, name), name
    queues = [total(x, "sglang:num_queue_reqs") for x in (a, b, c)]
    assert min(queues) >= 100 and len(set(queues)) > 1, queues  # full, and moving
    assert min(values(b, "sglang:num_decode_prealloc_queue_reqs").values()) > 0
    pre = scrape(lab.url("prefill"))
    assert min(values(pre, "sglang:token_usage").values()) > 0.9
    assert min(values(pre, "sglang:num_prefill_bootstrap_queue_reqs").values()) > 0
    assert min(_gpu_utils(lab, "decode-0")[2:]) >= 95
    for rank in (0, 1):  # (a sample may catch the loop publishing its metrics between
        pid = rank_pid(lab.pids["decode"], f"sglang::scheduler_TP{rank}")  # batches: one of
        dumps = [main_thread(py_spy(pid)) for _ in range(5)]  # five shows where it is parked)
        assert any("GroupCoordinator.all_reduce" in d and "ModelRunner.forward_tp" in d
                   for d in dumps), dumps


def test_forgotten_requests(lab):
    _settle(lab, "forgotten-requests")
    a, b = _two_scrapes(lab)
    # as the real 0.5.23 with requests waiting at decode: no batch runs, every queue gauge reads 0,
    # the held requests show only as active /generate calls (issue 34)
    assert max(values(b, "sglang:num_running_reqs").values()) == 0
    active = {dict(labels)["endpoint"]: v for labels, v in values(b, "sglang:http_requests_active").items()}
    assert active["/generate"] == 23, active
    for name in PROGRESS:
        assert total(a, name) == total(b, name), name
    for rank in (0, 1):
        dump = _main_stack(rank_pid(lab.pids["decode"], f"sglang::scheduler_TP{rank}"))
        assert "Scheduler.recv_requests" in dump and "ModelRunner.forward" not in dump
    assert _gpu_utils(lab, "decode-0")[2:] == [0, 0]


def test_rank_stuck(lab):
    _settle(lab, "rank-stuck")
    a, b = _two_scrapes(lab)
    for name in PROGRESS:
        assert total(a, name) == total(b, name), name
    tp0 = _main_stack(rank_pid(lab.pids["decode"], "sglang::scheduler_TP0"))
    tp1 = _main_stack(rank_pid(lab.pids["decode"], "sglang::scheduler_TP1"))
    assert "GroupCoordinator.all_reduce" in tp1 and "parallel_state.py" in tp1
    assert "all_reduce" not in tp0 and "broadcast_pyobj" in tp0
    for rank in (0, 1):  # prefill ranks are unaffected
        assert "all_reduce" not in py_spy(rank_pid(lab.pids["prefill"], f"sglang::scheduler_TP{rank}"))


def test_hung_endpoint(lab):
    _settle(lab, "hung-endpoint")
    for path in ("/server_info", "/get_server_info"):
        t0 = time.monotonic()
        with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
            urllib.request.urlopen(lab.url("decode") + path, timeout=3).read()
        assert time.monotonic() - t0 >= 2.9
    a, b = _two_scrapes(lab)  # /metrics still answers, frozen
    for name in PROGRESS:
        assert total(a, name) == total(b, name), name
    with urllib.request.urlopen(lab.url("decode") + "/model_info", timeout=3) as resp:
        assert resp.status == 200
    set_fault(lab.dir, "healthy")  # the scheduler comes back and answers again
    with urllib.request.urlopen(lab.url("decode") + "/server_info", timeout=5) as resp:
        assert resp.status == 200


def test_process_dead(tmp_path):
    info = lab_up(tmp_path / "dead", fault="process-dead", base_port=OTHER)
    try:
        server = psutil.Process(info.pids["decode"])
        titles = lambda: {" ".join(c.cmdline()).strip() for c in server.children()  # noqa: E731
                          if c.status() != psutil.STATUS_ZOMBIE}
        assert wait_for(lambda: "sglang::scheduler_TP1" not in titles(), timeout=5)
        assert "sglang::scheduler_TP0" in titles() and "sglang::detokenizer" in titles()
        prefill = {" ".join(c.cmdline()).strip() for c in psutil.Process(info.pids["prefill"]).children()}
        assert "sglang::scheduler_TP1" in prefill
        log = (info.dir / "logs" / "decode.log").read_text()
        assert "TP1] Scheduler hit an exception" in log and "Traceback (most recent call last)" in log
        with urllib.request.urlopen(info.url("decode") + "/health", timeout=3) as resp:
            assert resp.status == 200
    finally:
        lab_down(info.dir)
