"""Stand-in of sglang's prefill-side PD queues."""

from __future__ import annotations

import time


class PrefillBootstrapQueue:
    def pop_bootstrapped(self) -> list:
        time.sleep(0.001)
        return []


def process_disagg_prefill_inflight_queue(seconds: float) -> list:
    """Poll the senders of requests whose KV is being sent to decode."""
    time.sleep(seconds)
    return []
