"""`python -m pdfx_lab_runtime.load URL SECONDS CONCURRENCY MAX_NEW WORDS TIMEOUT`: bounded
/generate load on a loopback router, for the real engine lab's faults. Each worker sends one
request at a time until SECONDS have passed; a worker backs off 0.5 s after a failure (a router
answering 503 at once is not hammered). One line per request: start, status, seconds, tokens."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request

WORDS = "hello world the prefill server sends its cache to the decode server".split()


def body(words: int, max_new: int, salt: int) -> bytes:
    text = " ".join(WORDS[i % len(WORDS)] for i in range(words)) + f" {salt}"
    return json.dumps({"text": text, "sampling_params": {"max_new_tokens": max_new, "temperature": 0,
                                                          "ignore_eos": True}}).encode()


def one(url: str, data: bytes, timeout: float) -> tuple[object, object]:
    req = urllib.request.Request(url + "/generate", data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            out = json.loads(resp.read())
            return resp.status, len(out.get("output_ids", []))
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()[:160].decode(errors="replace")
    except (OSError, ValueError) as exc:
        return "ERR", repr(exc)[:160]


def main(argv: list[str]) -> None:
    url, seconds, conc, max_new, words, timeout = (argv[0], float(argv[1]), int(argv[2]), int(argv[3]),
                                                   int(argv[4]), float(argv[5]))
    if not url.startswith("http://127."):
        raise SystemExit("load: loopback routers only")
    t0 = time.monotonic()
    lock = threading.Lock()

    def worker(k: int) -> None:
        i = k
        while time.monotonic() - t0 < seconds:
            start = time.monotonic()
            status, what = one(url, body(words, max_new, i), timeout)
            with lock:
                print(f"{start - t0:7.2f}\t{status}\t{time.monotonic() - start:6.2f}\t{what}", flush=True)
            if status != 200:
                time.sleep(0.5)
            i += conc

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(sys.argv[1:])
