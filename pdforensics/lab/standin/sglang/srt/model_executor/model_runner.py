"""Stand-in of sglang's ModelRunner: a forward pass is a short busy spin."""

from __future__ import annotations

import time


class ModelRunner:
    def forward(self, seconds: float) -> float:
        end = time.perf_counter() + seconds
        x = 0
        while time.perf_counter() < end:
            x += 1
        return seconds
