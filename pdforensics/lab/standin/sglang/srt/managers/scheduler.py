"""Stand-in of sglang's Scheduler: one process per tp rank, PD event loops, fault behaviour."""

from __future__ import annotations

import os
import random
import threading
import time
import traceback

from pdfx_lab_runtime import current_fault, die_with_parent, log, set_title

from sglang.srt.disaggregation.decode import DecodePreallocQueue, DecodeTransferQueue
from sglang.srt.disaggregation.mooncake.conn import MooncakeKVManager
from sglang.srt.disaggregation.prefill import (
    PrefillBootstrapQueue,
    process_disagg_prefill_inflight_queue,
)
from sglang.srt.distributed.parallel_state import GroupCoordinator
from sglang.srt.managers.scheduler_metrics_mixin import SchedulerMetricsMixin, initial_state
from sglang.srt.model_executor.model_runner import ModelRunner
from sglang.srt.utils import broadcast_pyobj
from sglang.srt.utils.watchdog import Watchdog

FOREVER = 3600.0
# request faults (pdfx_lab_runtime.traffic) -> the queue gauges they freeze, per role
REQUEST_FAULT_GAUGES = {
    ("prefill", "stranded-bootstrap"): {"prefill_bootstrap_q": 6.0, "prefill_inflight_q": 0.0},
    ("prefill", "prealloc-leak"): {"prefill_bootstrap_q": 9.0, "prefill_inflight_q": 0.0},
    ("decode", "prealloc-leak"): {"decode_prealloc_q": 9.0, "decode_transfer_q": 0.0,
                                  "running": 0.0, "queue": 0.0},
}
SATURATED_STEP_S = 0.4  # one busy forward pass (busy fault)


class Scheduler(SchedulerMetricsMixin):
    def __init__(self, role: str, rank: int, tp_size: int, ctrl, server_args: dict):
        self.role = role
        self.rank = rank
        self.ctrl = ctrl
        self.server_args = server_args
        self.rng = random.Random()
        self.state = initial_state(role, rank)
        self.tp_group = GroupCoordinator(rank, tp_size)
        self.model_runner = ModelRunner()
        self.disagg_prealloc_queue = DecodePreallocQueue()
        self.disagg_decode_transfer_queue = DecodeTransferQueue()
        self.disagg_prefill_bootstrap_queue = PrefillBootstrapQueue()
        self._last_tick = time.monotonic()
        self._last_write = 0.0
        self._last_log = 0.0
        self._last_fail = 0.0
        self.watchdog = Watchdog(float(server_args.get("watchdog_timeout", 300)), rank)
        self.publish(force=True)

    # -- input -------------------------------------------------------------------------
    def recv_requests(self, timeout: float) -> list:
        """Poll the tokenizer's socket; rank 0 also answers get_internal_state."""
        if self.ctrl is None:
            time.sleep(timeout)
            return []
        if self.ctrl.poll(timeout):
            req_id, what = self.ctrl.recv()
            if what == "health_generate":
                # probe-hang: the loop runs and answers /server_info, but the 1-token health
                # request is never finished (its output never reaches the detokenizer)
                if current_fault() != "probe-hang":
                    self.ctrl.send((req_id, {"text": " ", "meta_info": {"id": f"HEALTH_CHECK_{req_id}"}}))
            else:
                self.ctrl.send((req_id, self.get_internal_state()))
        return []

    def get_internal_state(self) -> dict:
        s = self.state
        return {
            "last_gen_throughput": s["gen_throughput"],
            "num_running_reqs": int(s["running"]),
            "num_queue_reqs": int(s["queue"]),
            "token_usage": s["token_usage"],
            "memory_usage": {
                "weight": 38.61,
                "kvcache": 29.74,
                "token_capacity": s["max_total_num_tokens"],
                "graph": 1.37,
            },
            "avg_spec_accept_length": None,
            "step_time_dict": {},
            "pid": os.getpid(),
            "tp_rank": self.rank,
        }

    # -- compute -----------------------------------------------------------------------
    def run_batch(self, seconds: float) -> float:
        return self.model_runner.forward(seconds)

    def run_saturated_batch(self, fault: str) -> float:
        """busy: every rank sits in the forward's tp all-reduce nearly all the time, so each
        py-spy dump finds every rank in the same frame while the counters keep rising."""
        return self.model_runner.forward_tp(self.tp_group, fault, SATURATED_STEP_S)

    def run_failing_batch(self) -> None:
        raise RuntimeError(
            "CUDA error: an illegal memory access was encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, "
            "so the stacktrace below might be incorrect."
        )

    def process_decode_queue(self, fault: str) -> list:
        self.disagg_prealloc_queue.pop_preallocated()
        if fault == "transfer-stuck":
            return self.disagg_decode_transfer_queue.pop_transferred(fault, 1.0)
        return []

    # -- fault helpers -----------------------------------------------------------------
    def _transfer_failure_tick(self) -> None:
        now = time.monotonic()
        if now - self._last_fail < 1.0:
            return
        self._last_fail = now
        self.state["transfer_failed"] += 1
        room = self.rng.randint(10**17, 10**18)
        rid = f"{self.rng.getrandbits(128):032x}"
        log(
            f"TP{self.rank}",
            (
                f"Decode transfer failed for request rank={self.rank} req.rid='{rid}' "
                f"req.bootstrap_room={room} with exception KVTransferError(bootstrap_room={room}): "
                f"Request {room} timed out after 300.0s in KVPoll.WaitingForInput"
            ),
        )

    # -- event loops ---------------------------------------------------------------------
    def event_loop_normal_disagg_decode(self) -> None:
        while True:
            self.watchdog.feed()
            fault = current_fault()
            if fault == "process-dead" and self.rank == 1:
                self.run_failing_batch()
            elif ("decode", fault) in REQUEST_FAULT_GAUGES:
                self.recv_requests(0.2)
                self.log_idle(REQUEST_FAULT_GAUGES[("decode", fault)])
            elif fault == "process-dead":
                self.recv_requests(0.2)
                self.log_idle({"running": self.state["running"] or 23.0, "queue": 0.0,
                               "decode_transfer_q": 0.0, "decode_prealloc_q": 0.0})
            elif fault == "forgotten-requests":
                # as the real 0.5.23 shows requests waiting at decode: no batch runs, so no stats
                # are logged and every queue gauge reads 0; only the HTTP server's
                # http_requests_active{endpoint="/generate"} (and smg's active count) hold them
                self.recv_requests(0.2)
                self.log_idle({"running": 0.0, "queue": 0.0, "decode_transfer_q": 0.0,
                               "decode_prealloc_q": 0.0})
            elif fault == "rank-stuck":
                if self.rank == 1:
                    with self.watchdog.batch():  # the forward's collective: the watchdog fires
                        self.tp_group.all_reduce(fault, FOREVER)
                else:
                    broadcast_pyobj(fault, FOREVER)
            elif fault == "hung-endpoint":
                self.tp_group.broadcast_object(fault, FOREVER)
            elif fault == "busy":
                self.recv_requests(0.0)
                self.process_decode_queue(fault)
                self.run_saturated_batch(fault)
                self.log_decode_stats(fault, 0.97)
            elif fault == "transfer-stuck":
                # the socket is only checked between polls, so nearly every py-spy dump finds
                # the rank in the receiver's poll (a 50 ms wait here showed in ~1 dump in 20)
                self.recv_requests(0.0)
                self.process_decode_queue(fault)
                self._transfer_failure_tick()
                self.log_idle({"decode_transfer_q": 14.0, "decode_prealloc_q": 3.0})
            else:
                self.recv_requests(0.12)
                self.process_decode_queue(fault)
                busy = 0.012 if fault != "kv-full" else 0.03
                self.run_batch(busy)
                self.log_decode_stats(fault, 0.75 if fault != "kv-full" else 0.97)

    def event_loop_normal_disagg_prefill(self) -> None:
        while True:
            self.watchdog.feed()
            fault = current_fault()
            if fault == "hung-endpoint":
                self.tp_group.broadcast_object(fault, FOREVER)
            elif fault == "busy":
                self.recv_requests(0.0)
                self.disagg_prefill_bootstrap_queue.pop_bootstrapped()
                self.run_saturated_batch(fault)
                self.log_prefill_stats(fault, 0.95)
            elif ("prefill", fault) in REQUEST_FAULT_GAUGES:
                self.recv_requests(0.2)
                self.log_idle(REQUEST_FAULT_GAUGES[("prefill", fault)])
            elif fault == "transfer-stuck":
                self.recv_requests(0.1)
                process_disagg_prefill_inflight_queue(0.2)
                self.log_idle({"prefill_inflight_q": 14.0, "prefill_bootstrap_q": 0.0})
            else:
                self.recv_requests(0.12)
                self.disagg_prefill_bootstrap_queue.pop_bootstrapped()
                self.run_batch(0.012)
                self.log_prefill_stats(fault, 0.7)


def run_scheduler_process(role: str, rank: int, tp_size: int, ctrl, server_args: dict) -> None:
    die_with_parent()
    set_title(f"sglang::scheduler_TP{rank}")
    watchdog = Watchdog(float(server_args.get("watchdog_timeout", 300)), rank)
    threading.Thread(target=watchdog._watchdog_thread, name="watchdog", daemon=True).start()
    manager = MooncakeKVManager()
    threading.Thread(target=manager.transfer_worker, name="transfer_worker", daemon=True).start()
    scheduler = Scheduler(role, rank, tp_size, ctrl, server_args)
    scheduler.watchdog = watchdog
    log(f"TP{rank}", "Init torch distributed ends. mem usage=0.00 GB")
    log(f"TP{rank}", f"KV Cache is allocated. #tokens: {scheduler.state['max_total_num_tokens']:.0f}")
    try:
        if role == "prefill":
            scheduler.event_loop_normal_disagg_prefill()
        else:
            scheduler.event_loop_normal_disagg_decode()
    except Exception:
        log(f"TP{rank}", "Scheduler hit an exception: " + traceback.format_exc().rstrip())
        os._exit(1)
