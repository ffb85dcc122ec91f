"""Stand-in of sglang's SchedulerMetricsMixin: moves the rank's numbers, logs batch lines."""

from __future__ import annotations

import os
import random
import time

from pdfx_lab_runtime import log, write_state

MAX_TOTAL_NUM_TOKENS = 812544


def initial_state(role: str, rank: int) -> dict:
    """A rank that has been serving for a while: counters well above zero."""
    rng = random.Random(f"{role}-{rank}")
    base = rng.uniform(0.9, 1.1)
    return {
        "tp_rank": rank,
        "role": role,
        "pid": os.getpid(),
        "updated_at": time.time(),
        "running": 0.0,
        "queue": 0.0,
        "used_tokens": 0.0,
        "token_usage": 0.0,
        "pending_prealloc_token_usage": 0.0,
        "gen_throughput": 0.0,
        "cache_hit_rate": 0.31,
        "max_total_num_tokens": float(MAX_TOTAL_NUM_TOKENS),
        "retracted": 0.0,
        "retracted_total": 3.0,
        "prefill_bootstrap_q": 0.0,
        "prefill_inflight_q": 0.0,
        "decode_prealloc_q": 0.0,
        "decode_transfer_q": 0.0,
        "bootstrap_failed": 0.0,
        "transfer_failed": 0.0,
        "kv_speed": 0.0,
        "kv_latency": 0.0,
        "utilization": 0.0,
        "startup_time": 187.4,
        "cuda_graph": 1.0 if role == "decode" else 0.0,
        "new_token_ratio": 0.7,
        "rt_prefill_compute": round(4.1e8 * base),
        "rt_prefill_cache": round(1.9e8 * base),
        "rt_decode": round(6.2e7 * base),
        "fwd_extend": round(5.1e4 * base, 3),
        "fwd_decode": round(7.7e4 * base, 3),
        "idle_seconds": round(2.2e4 * base, 3),
        "prompt_tokens": round(6.0e8 * base),
        "generation_tokens": round(6.2e7 * base),
        "num_requests": round(3.0e5 * base),
        "aborted": 12.0,
        "gpu_util": 0.0,
    }


class SchedulerMetricsMixin:
    role: str
    rank: int
    state: dict
    rng: random.Random
    _last_tick: float
    _last_write: float
    _last_log: float

    def _tick(self) -> float:
        now = time.monotonic()
        dt = max(0.0, now - self._last_tick)
        self._last_tick = now
        return dt

    def _walk(self, key: str, lo: float, hi: float, step: float) -> None:
        value = self.state[key] + self.rng.uniform(-step, step)
        self.state[key] = round(min(hi, max(lo, value)), 4)

    def publish(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_write >= 0.2:
            self.state["updated_at"] = time.time()
            write_state(self.role, self.rank, self.state)
            self._last_write = now

    def _saturate(self, lo: float, hi: float) -> float:
        """busy fault: queue full and moving, KV cache nearly full, GPUs busy; the throughput."""
        s = self.state
        if s["queue"] < 120:
            s["queue"] = 180.0
        self._walk("queue", 120, 260, 25)
        s["queue"] = float(int(s["queue"]))
        s["token_usage"] = round(self.rng.uniform(lo, hi), 4)
        s["retracted"] = 0.0
        s["gpu_util"] = float(self.rng.randint(95, 100))
        return self.rng.uniform(700, 900)

    def log_decode_stats(self, fault: str, busy: float) -> None:
        dt = self._tick()
        s = self.state
        if fault == "kv-full":
            s["token_usage"] = round(self.rng.uniform(0.981, 0.993), 4)
            s["retracted"] = float(self.rng.randint(2, 6))
            s["retracted_total"] += 1
            s["queue"] = min(400.0, s["queue"] + 1)
            s["decode_prealloc_q"] = min(200.0, s["decode_prealloc_q"] + 1)
            s["pending_prealloc_token_usage"] = round(self.rng.uniform(0.25, 0.4), 4)
            tput = self.rng.uniform(120, 180)
            s["running"] = float(self.rng.randint(118, 128))
            s["gpu_util"] = float(self.rng.randint(96, 100))
        elif fault == "busy":
            tput = self._saturate(0.93, 0.975)
            s["running"] = float(self.rng.randint(124, 128))
            s["decode_prealloc_q"] = float(self.rng.randint(30, 60))
            s["decode_transfer_q"] = float(self.rng.randint(8, 24))
            s["pending_prealloc_token_usage"] = round(self.rng.uniform(0.05, 0.15), 4)
        else:
            self._walk("running", 12, 40, 3)
            self._walk("queue", 0, 3, 1)
            s["queue"] = float(int(s["queue"]))
            s["running"] = float(int(s["running"]))
            self._walk("token_usage", 0.28, 0.52, 0.02)
            s["retracted"] = 0.0
            s["decode_prealloc_q"] = float(self.rng.randint(0, 2))
            s["decode_transfer_q"] = float(self.rng.randint(0, 2))
            s["pending_prealloc_token_usage"] = 0.0
            tput = self.rng.uniform(780, 960)
            s["gpu_util"] = float(self.rng.randint(60, 95))
        s["used_tokens"] = float(int(s["token_usage"] * MAX_TOTAL_NUM_TOKENS))
        s["gen_throughput"] = round(tput, 2)
        s["rt_decode"] += int(tput * dt) + 1
        s["generation_tokens"] += int(tput * dt) + 1
        s["prompt_tokens"] += int(900 * dt) + 1
        s["num_requests"] += 1 if self.rng.random() < dt * 3 else 0
        s["fwd_decode"] = round(s["fwd_decode"] + dt * busy, 4)
        s["idle_seconds"] = round(s["idle_seconds"] + dt * (1 - busy), 4)
        s["kv_speed"] = round(self.rng.uniform(18, 26), 2)
        s["kv_latency"] = round(self.rng.uniform(3, 9), 2)
        s["utilization"] = round(s["gpu_util"] / 100.0, 2)
        self.publish()
        if self.rank == 0 and time.monotonic() - self._last_log >= 2.0:
            self._last_log = time.monotonic()
            log(
                f"TP{self.rank}",
                (
                    f"Decode batch. #running-req: {int(s['running'])}, #token: {int(s['used_tokens'])}, "
                    f"token usage: {s['token_usage']:.2f}, pre-allocated usage: "
                    f"{s['pending_prealloc_token_usage']:.2f}, #prealloc-req: {int(s['decode_prealloc_q'])}, "
                    f"#transfer-req: {int(s['decode_transfer_q'])}, #retracted-req: {int(s['retracted'])}, "
                    f"cuda graph: True, gen throughput (token/s): {tput:.2f}, #queue-req: {int(s['queue'])}"
                ),
            )

    def log_prefill_stats(self, fault: str, busy: float) -> None:
        dt = self._tick()
        s = self.state
        new_tokens = int(self.rng.uniform(7000, 9500) * dt) + 1
        cached = int(new_tokens * 0.3)
        if fault == "kv-full":
            s["queue"] = min(300.0, s["queue"] + 1)
            s["token_usage"] = round(self.rng.uniform(0.7, 0.8), 4)
        elif fault == "busy":
            self._saturate(0.9, 0.95)
        else:
            self._walk("queue", 0, 2, 1)
            s["queue"] = float(int(s["queue"]))
            self._walk("token_usage", 0.05, 0.2, 0.02)
        s["running"] = float(self.rng.randint(0, 4))
        full = fault == "busy"  # saturated: queues full and moving
        s["prefill_bootstrap_q"] = float(self.rng.randint(20, 40) if full else self.rng.randint(0, 2))
        s["prefill_inflight_q"] = float(self.rng.randint(10, 30) if full else self.rng.randint(0, 3))
        s["used_tokens"] = float(int(s["token_usage"] * MAX_TOTAL_NUM_TOKENS))
        s["rt_prefill_compute"] += new_tokens
        s["rt_prefill_cache"] += cached
        s["prompt_tokens"] += new_tokens + cached
        s["generation_tokens"] += 1 if self.rng.random() < dt * 3 else 0
        s["num_requests"] += 1 if self.rng.random() < dt * 3 else 0
        s["fwd_extend"] = round(s["fwd_extend"] + dt * busy, 4)
        s["idle_seconds"] = round(s["idle_seconds"] + dt * (1 - busy), 4)
        s["gpu_util"] = float(self.rng.randint(95, 100) if full else self.rng.randint(60, 92))
        s["utilization"] = round(s["gpu_util"] / 100.0, 2)
        s["kv_speed"] = round(self.rng.uniform(18, 26), 2)
        s["kv_latency"] = round(self.rng.uniform(3, 9), 2)
        self.publish()
        if self.rank == 0 and time.monotonic() - self._last_log >= 2.0:
            self._last_log = time.monotonic()
            log(
                f"TP{self.rank}",
                (
                    f"Prefill batch. #new-seq: {self.rng.randint(1, 4)}, #new-token: {new_tokens}, "
                    f"#cached-token: {cached}, token usage: {s['token_usage']:.2f}, "
                    f"#unbootstrapped-req: {int(s['prefill_bootstrap_q'])}, #queue-req: {int(s['queue'])}, "
                    f"#transferring-req: {int(s['prefill_inflight_q'])}, "
                    f"input throughput (token/s): {new_tokens / max(dt, 1e-3):.2f}"
                ),
            )

    def log_idle(self, frozen_gauges: dict[str, float] | None = None) -> None:
        """Nothing runs: progress counters frozen, GPU at 0 %. scheduler_idle_seconds_total is
        frozen too: the real 0.5.23 writes it with its batch stats, so it stands still whenever no
        batch runs, whether the loop idles or is blocked."""
        self._tick()
        s = self.state
        s["gen_throughput"] = 0.0
        s["gpu_util"] = 0.0
        s["utilization"] = 0.0
        for key, value in (frozen_gauges or {}).items():
            s[key] = value
        self.publish()
