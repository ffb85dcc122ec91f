"""Stand-in of sglang's HTTP server process: forks schedulers + detokenizer, serves HTTP."""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from pdfx_lab_runtime import current_fault, log, log_planted, titles_enabled
from pdfx_lab_runtime.gateway import GENERATE_PATHS, generate_reply, listen_bootstrap
from pdfx_lab_runtime.hooks import configure_logging_refused, publish_logging
from pdfx_lab_runtime.traffic import STRANDED, Traffic

import sglang
from sglang.srt.managers.detokenizer_manager import run_detokenizer_process
from sglang.srt.managers.scheduler import run_scheduler_process
from sglang.srt.managers.tokenizer_manager import TokenizerManager
from sglang.srt.metrics.collector import render
from sglang.srt.utils.request_logger import RequestLogger

JSON = "application/json"
PROM = "text/plain; version=0.0.4; charset=utf-8"


HELD_AT_DECODE = ("transfer-stuck", "forgotten-requests", "prealloc-leak")


def _model_info(args: dict) -> dict:
    return {
        "model_path": args["model_path"],
        "tokenizer_path": args["tokenizer_path"],
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "deepseek_v3",
        "architectures": ["DeepseekV3ForCausalLM"],
    }


def _loads(args: dict, states: list[dict]) -> dict:
    loads = []
    for s in states[:1]:
        loads.append(
            {
                "dp_rank": 0,
                "num_running_reqs": int(s["running"]),
                "num_waiting_reqs": int(s["queue"]),
                "num_total_reqs": int(s["running"] + s["queue"]),
                "num_used_tokens": int(s["used_tokens"]),
                "max_total_num_tokens": int(s["max_total_num_tokens"]),
                "token_usage": s["token_usage"],
                "gen_throughput": s["gen_throughput"],
                "cache_hit_rate": s["cache_hit_rate"],
                "utilization": s["utilization"],
                "max_running_requests": args["max_running_requests"],
                "disaggregation": {
                    "mode": args["disaggregation_mode"],
                    "prefill_prealloc_queue_reqs": int(s["prefill_bootstrap_q"]),
                    "prefill_inflight_queue_reqs": int(s["prefill_inflight_q"]),
                    "decode_prealloc_queue_reqs": int(s["decode_prealloc_q"]),
                    "decode_transfer_queue_reqs": int(s["decode_transfer_q"]),
                    "kv_transfer_speed_gb_s": s["kv_speed"],
                    "kv_transfer_latency_ms": s["kv_latency"],
                },
            }
        )
    return {"timestamp": time.time(), "version": sglang.__version__, "dp_rank_count": 1, "loads": loads}


def make_handler(args: dict, tm: TokenizerManager) -> type[BaseHTTPRequestHandler]:
    role = args["disaggregation_mode"]

    class Handler(BaseHTTPRequestHandler):
        server_version = "uvicorn"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *a: object) -> None:  # noqa: A002
            return

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            try:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a probe's timeout): uvicorn says nothing either

        def _json(self, obj: object, code: int = 200) -> None:
            self._send(code, json.dumps(obj).encode(), JSON)

        def do_GET(self) -> None:
            path = urlsplit(self.path).path
            if path == "/metrics" and args["enable_metrics"]:
                fault = current_fault()  # requests a fault strands inside decode keep their HTTP call open
                held = STRANDED[fault] if role == "decode" and fault in HELD_AT_DECODE else 0
                self._send(200, render(role, args["served_model_name"], tm.rank_states(), held).encode(), PROM)
            elif path == "/health":
                self._send(200, b"", "text/plain; charset=utf-8")
            elif path == "/health_generate":  # through the scheduler: hangs when it is stuck
                self._send(200 if tm.health_generate() else 503, b"", "text/plain; charset=utf-8")
            elif path in ("/model_info", "/get_model_info"):
                self._json(_model_info(args))
            elif path in ("/server_info", "/get_server_info"):
                internal = tm.get_internal_state()
                self._json({**args, "version": sglang.__version__, "internal_states": internal})
            elif path == "/v1/loads":  # /get_load: 404 in the real 0.5.23 (smg asks /loads too: 404)
                self._json(_loads(args, tm.rank_states()))
            elif path == "/v1/models":
                self._json(
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": args["served_model_name"],
                                "object": "model",
                                "created": int(time.time()),
                                "owned_by": "sglang",
                                "root": args["model_path"],
                                "max_model_len": 163840,
                            }
                        ],
                    }
                )
            else:
                self._json({"detail": "Not Found"}, 404)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            path = urlsplit(self.path).path
            if path == "/configure_logging":
                if configure_logging_refused(role):  # a lab hook: the restore fails
                    self._json({"detail": "lab hook: configure_logging refused"}, 500)
                    return
                _configure_logging(tm, body)
                publish_logging(role, tm.request_logger)
                self._send(200, b"", "text/plain; charset=utf-8")
                return
            if path not in GENERATE_PATHS:
                self._json({"detail": "Not Found"}, 404)
                return
            code, ctype, payload = generate_reply(role, current_fault(), body)
            self._send(code, payload, ctype)

    return Handler


def _configure_logging(tm: TokenizerManager, body: bytes) -> None:
    """As sglang's /configure_logging: set what the request logger logs, then say so."""
    try:
        obj = json.loads(body or b"{}")
    except ValueError:
        obj = {}
    obj = obj if isinstance(obj, dict) else {}
    tm.request_logger.configure(obj.get("log_requests"), obj.get("log_requests_level"))
    fields = ", ".join(f"{k}={obj.get(k)!r}" for k in (
        "log_requests", "log_requests_level", "log_requests_format", "dump_requests_folder",
        "dump_requests_threshold", "crash_dump_folder"))
    log("", f"Config logging: obj=ConfigureLoggingReq({fields})")


def _reap(children: list) -> None:
    """Join exited children so a dead rank is gone, not a zombie."""
    while True:
        for child in children:
            child.is_alive()
        time.sleep(0.5)


def launch_server(args: dict) -> None:
    # SGLang spawns its ranks; the lab forks them (faster) unless titles are off, when the
    # command lines must look like SGLang's without setproctitle (multiprocessing.spawn)
    ctx = mp.get_context("fork" if titles_enabled() else "spawn")
    role = args["disaggregation_mode"]
    tp_size = int(args["tp_size"])
    parent_end, child_end = ctx.Pipe()
    children = []
    for rank in range(tp_size):
        ctrl = child_end if rank == 0 else None
        p = ctx.Process(
            target=run_scheduler_process,
            args=(role, rank, tp_size, ctrl, args),
            name=f"scheduler_TP{rank}",
            daemon=False,
        )
        p.start()
        children.append(p)
    detok = ctx.Process(target=run_detokenizer_process, name="detokenizer", daemon=False)
    detok.start()
    children.append(detok)
    tm = TokenizerManager(role, tp_size, parent_end)
    tm.request_logger = RequestLogger(bool(args["log_requests"]), int(args["log_requests_level"]))
    publish_logging(role, tm.request_logger)
    tm.traffic = Traffic(role, tm.request_logger, args["host"],
                         int(args["disaggregation_bootstrap_port"]))
    threading.Thread(target=tm.handle_loop, name="tokenizer_manager", daemon=True).start()
    threading.Thread(target=_reap, args=(children,), name="reaper", daemon=True).start()
    if role == "prefill" and args.get("disaggregation_bootstrap_port"):
        listen_bootstrap(args["host"], int(args["disaggregation_bootstrap_port"]))
    httpd = ThreadingHTTPServer((args["host"], int(args["port"])), make_handler(args, tm))
    httpd.daemon_threads = True
    log("", f"Uvicorn running on http://{args['host']}:{args['port']} (Press CTRL+C to quit)")
    log("", "The server is fired up and ready to roll!")
    log_planted("")
    httpd.serve_forever()
