"""Stand-in of sglang's ServerArgs: the flags the lab's servers are started with."""

from __future__ import annotations

import argparse


def parse_server_args(argv: list[str]) -> dict:
    p = argparse.ArgumentParser(prog="sglang.launch_server")
    p.add_argument("--model-path", default="/models/DeepSeek-V3")
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--disaggregation-mode", default="null")
    p.add_argument("--disaggregation-bootstrap-port", type=int, default=8998)
    p.add_argument("--disaggregation-transfer-backend", default="mooncake")
    p.add_argument("--tp-size", type=int, default=1)
    p.add_argument("--dp-size", type=int, default=1)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--mem-fraction-static", type=float, default=0.85)
    p.add_argument("--chunked-prefill-size", type=int, default=8192)
    p.add_argument("--page-size", type=int, default=1)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--watchdog-timeout", type=float, default=300)
    p.add_argument("--cuda-graph-max-bs-decode", type=int, default=None)
    p.add_argument("--cuda-graph-max-bs-prefill", type=int, default=None)
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--log-requests", action="store_true")
    p.add_argument("--log-requests-level", type=int, default=2)
    p.add_argument("--api-key", default=None)
    p.add_argument("--admin-api-key", default=None)
    args, _unknown = p.parse_known_args(argv)
    out = {k: v for k, v in vars(args).items() if v is not None or k not in ("api_key", "admin_api_key")}
    out["served_model_name"] = out["served_model_name"] or out["model_path"]
    out["tokenizer_path"] = out["model_path"]
    out["pp_size"] = 1
    out["ep_size"] = 1
    out["schedule_policy"] = "fcfs"
    out["max_running_requests"] = out["cuda_graph_max_bs_decode"] or 128
    return out
