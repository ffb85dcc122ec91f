"""`python -m pdfx_lab_runtime.client URL [INTERVAL_S]`: the lab's clients, a steady trickle of
small generate requests through the router (two a second by default), so the gateway's per-worker counters,
circuit breakers and request logs move as they do under real traffic."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request

INTERVAL_S = 0.5
TIMEOUT_S = 60  # outlasts a capture while the decode-only fault holds a request
BODY = json.dumps({"text": "The capital of France is", "sampling_params": {"max_new_tokens": 2}}).encode()


def send_one(url: str) -> int:
    req = urllib.request.Request(url + "/generate", data=BODY, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def main(url: str, interval_s: float = INTERVAL_S) -> None:
    while True:
        started = time.monotonic()
        send_one(url)
        time.sleep(max(0.0, interval_s - (time.monotonic() - started)))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else INTERVAL_S)
