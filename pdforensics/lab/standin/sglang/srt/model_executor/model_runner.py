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

    def forward_tp(self, group, fault: str, seconds: float) -> float:
        """A saturated forward pass: the ranks spend it in the tp all-reduce, as busy ranks do."""
        group.all_reduce(fault, seconds)
        return seconds
