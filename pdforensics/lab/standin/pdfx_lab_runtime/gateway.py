"""What a stand-in server answers on the paths the real gateway (smg) calls on a worker.

smg sends each PD request to a prefill and a decode worker at once (POST /generate or the
OpenAI paths), streaming when the client asked for it.
Under the `breaker-open` fault the prefill fails every request with a 503, as a prefill whose
scheduler refuses work does, until the gateway's circuit breaker for it opens.
Under `decode-only` the decode holds each request, waiting for KV from a prefill that never
sends it, while the lab deregisters the prefill from smg."""

from __future__ import annotations

import json
import socket
import threading

from pdfx_lab_runtime import sleep_until_fault_changes

GENERATE_PATHS = ("/generate", "/v1/completions", "/v1/chat/completions")
JSON = "application/json"
SSE = "text/event-stream; charset=utf-8"
HOLD_S = 120.0  # a decode-only request is held until the fault changes, at most this long


def _wants_stream(body: bytes) -> bool:
    try:
        req = json.loads(body or b"{}")
    except ValueError:
        return False
    return isinstance(req, dict) and req.get("stream") is True


def generate_reply(role: str, fault: str, body: bytes) -> tuple[int, str, bytes]:
    """(status, content type, body) for one generate request to a worker of this role."""
    if fault == "breaker-open" and role == "prefill":
        err = {"object": "error", "message": "Prefill scheduler unavailable: request rejected",
               "type": "ServiceUnavailableError", "param": None, "code": 503}
        return 503, JSON, json.dumps(err).encode()
    if fault == "decode-only" and role == "decode":
        sleep_until_fault_changes(fault, HOLD_S)
    out = {"text": " Paris.", "meta_info": {"id": "lab", "finish_reason": {"type": "stop"},
                                             "prompt_tokens": 7, "completion_tokens": 2}}
    if _wants_stream(body):
        return 200, SSE, f"data: {json.dumps(out)}\n\ndata: [DONE]\n\n".encode()
    return 200, JSON, json.dumps(out).encode()


def listen_bootstrap(host: str, port: int) -> None:
    """Accept (and close) connections on the prefill's bootstrap port, as a live prefill's
    bootstrap server does: the gateway probes it when it registers the worker."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _addr = sock.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=serve, name="bootstrap_server", daemon=True).start()
