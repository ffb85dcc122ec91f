"""Stand-in of sglang's TokenizerManager (lives in the HTTP process, talks to rank 0)."""

from __future__ import annotations

import itertools
import threading
import time

from pdfx_lab_runtime import read_state


class TokenizerManager:
    def __init__(self, role: str, tp_size: int, ctrl):
        self.role = role
        self.tp_size = tp_size
        self.ctrl = ctrl
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def get_internal_state(self) -> list[dict]:
        """Ask scheduler rank 0; no timeout, as in sglang: a wedged scheduler hangs this."""
        req_id = next(self._ids)
        with self._lock:
            self.ctrl.send((req_id, "get_internal_state"))
            while True:
                got_id, state = self.ctrl.recv()
                if got_id == req_id:
                    return [state]

    def rank_states(self) -> list[dict]:
        states = []
        for rank in range(self.tp_size):
            state = read_state(self.role, rank)
            if state is not None:
                states.append(state)
        return states

    def handle_loop(self) -> None:
        traffic = getattr(self, "traffic", None)
        while True:
            time.sleep(0.5)
            if traffic is not None:
                traffic.tick()
