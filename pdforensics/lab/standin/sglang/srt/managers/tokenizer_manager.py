"""Stand-in of sglang's TokenizerManager (lives in the HTTP process, talks to rank 0)."""

from __future__ import annotations

import itertools
import threading
import time

from pdfx_lab_runtime import log, read_state

#: sglang's HEALTH_CHECK_TIMEOUT (SGLANG_HEALTH_CHECK_TIMEOUT, 20 s)
HEALTH_CHECK_TIMEOUT = 20


class TokenizerManager:
    def __init__(self, role: str, tp_size: int, ctrl):
        self.role = role
        self.tp_size = tp_size
        self.ctrl = ctrl
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._replies: dict[int, object] = {}
        self._arrived = threading.Condition()

    def _ask(self, what: str, timeout: float | None) -> object | None:
        """Send one request to scheduler rank 0; its reply, or None after `timeout`."""
        req_id = next(self._ids)
        with self._send_lock:
            self.ctrl.send((req_id, what))
        with self._arrived:
            self._arrived.wait_for(lambda: req_id in self._replies, timeout)
            return self._replies.pop(req_id, None)

    def get_internal_state(self) -> list[dict]:
        """Ask scheduler rank 0; no timeout, as in sglang: a wedged scheduler hangs this."""
        return [self._ask("get_internal_state", None)]  # type: ignore[list-item]

    def health_generate(self) -> bool:
        """One 1-token request through the scheduler, as sglang's /health_generate: polls
        each second up to HEALTH_CHECK_TIMEOUT; False (and sglang's error line) if none came."""
        tic = time.time()
        req_id = next(self._ids)
        with self._send_lock:
            self.ctrl.send((req_id, "health_generate"))
        while time.time() < tic + HEALTH_CHECK_TIMEOUT:
            time.sleep(1)
            with self._arrived:
                if self._replies.pop(req_id, None) is not None:
                    return True
        log("", "Health check failed. Server couldn't get a response from detokenizer for last "
                f"{HEALTH_CHECK_TIMEOUT} seconds. tic start time: {time.strftime('%H:%M:%S', time.localtime(tic))}. "
                f"last_heartbeat time: {time.strftime('%H:%M:%S')}")
        return False

    def rank_states(self) -> list[dict]:
        states = []
        for rank in range(self.tp_size):
            state = read_state(self.role, rank)
            if state is not None:
                states.append(state)
        return states

    def handle_loop(self) -> None:
        """The receive loop: every reply from rank 0 goes to the request that waits on it.
        The lab's fake traffic ticks in a thread of its own (sglang's loop does both)."""
        if getattr(self, "traffic", None) is not None:
            threading.Thread(target=self._traffic_loop, name="traffic", daemon=True).start()
        while True:
            try:
                got_id, reply = self.ctrl.recv()
            except (EOFError, OSError):
                return
            with self._arrived:
                self._replies[got_id] = reply
                self._arrived.notify_all()

    def _traffic_loop(self) -> None:
        while True:
            time.sleep(0.5)
            self.traffic.tick()
