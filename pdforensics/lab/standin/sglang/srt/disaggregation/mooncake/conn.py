"""Stand-in of sglang's Mooncake KV transfer connection (receiver polls, transfer thread)."""

from __future__ import annotations

import queue
import time

from pdfx_lab_runtime import current_fault


class KVPoll:
    Failed = 0
    Bootstrapping = 1
    WaitingForInput = 2
    Transferring = 3
    Success = 4


class KVTransferError(Exception):
    def __init__(self, bootstrap_room: int, failure_reason: str):
        super().__init__(failure_reason)
        self.bootstrap_room = bootstrap_room
        self.failure_reason = failure_reason

    def __str__(self) -> str:
        return f"KVTransferError(bootstrap_room={self.bootstrap_room}): {self.failure_reason}"


class MooncakeKVReceiver:
    """Decode side of one request's KV transfer."""

    def __init__(self, bootstrap_room: int):
        self.bootstrap_room = bootstrap_room

    def poll(self, fault: str, seconds: float) -> int:
        """Wait for KV chunks from prefill; in transfer-stuck they never arrive."""
        # a stuck receiver sits in sleep: it reads the fault file (a frame py-spy could catch
        # on a CPU-starved host) once every 0.25 s
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.25)
            if current_fault() != fault:
                return KVPoll.Success
        return KVPoll.WaitingForInput if fault == "transfer-stuck" else KVPoll.Success


class MooncakeKVManager:
    """Owns the transfer worker thread of a rank."""

    def __init__(self) -> None:
        self.transfer_queue: queue.Queue = queue.Queue()

    def transfer_worker(self) -> None:
        while True:
            try:
                self.transfer_queue.get(timeout=1.0)
            except queue.Empty:
                continue
