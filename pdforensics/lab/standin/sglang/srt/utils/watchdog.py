"""Stand-in of sglang's scheduler watchdog thread."""

from __future__ import annotations

import time


class Watchdog:
    def __init__(self, timeout: float):
        self.timeout = timeout

    def _watchdog_thread(self) -> None:
        while True:
            time.sleep(self.timeout / 60.0)
