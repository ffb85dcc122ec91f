"""The lab's request traffic, logged in SGLang's formats so request tracking has lines to read:
one request a second that finishes, or, in a request fault, a burst of requests at the fault's
start that stop where the fault strands them. Prefill and decode derive the same rid and
bootstrap room from the request's key (as a router passing rid would). A fault change ends the open requests (the
wedge cleared: they are aborted), as a restarted or unwedged server would."""

from __future__ import annotations

import hashlib
import math
import os
import time

from pdfx_lab_runtime import current_fault, lab_dir, log

# fault -> how many requests it strands (matching the stand-in's frozen queue gauges)
STRANDED = {"transfer-stuck": 14, "forgotten-requests": 23, "stranded-bootstrap": 6,
            "prealloc-leak": 9}
ABORTED = "Aborted by AbortReq."


def request_ids(key: str) -> tuple[str, int]:
    """rid and bootstrap room of the request ``key`` (the same on every server)."""
    digest = hashlib.sha256(f"{lab_dir()}:{key}".encode()).hexdigest()
    return digest[:32], int(digest[32:47], 16)


def fault_since() -> float:
    try:
        return os.stat(os.path.join(lab_dir(), "fault")).st_mtime
    except OSError:
        return 0.0


class Traffic:
    def __init__(self, role: str, logger, bootstrap_host: str, bootstrap_port: int):
        self.role = role
        self.logger = logger
        self.where = (bootstrap_host, bootstrap_port)
        self.last_slot = int(time.time())
        self.open: dict[str, tuple[str, int]] = {}
        self.episode: tuple[str, float] | None = None

    def tick(self) -> None:
        fault, since = current_fault(), fault_since()
        if (fault, since) != self.episode:
            self._abort_open()
            self.episode = (fault, since)
            for i in range(STRANDED.get(fault, 0)):  # the wedge's requests, all at once
                self._stranded(f"{math.ceil(since)}:{i}", fault)
            if fault == "prealloc-leak" and self.role == "decode":
                log("TP0", "torch.OutOfMemoryError: CUDA out of memory. "
                    "Tried to allocate 1.53 GiB. GPU 0 has a total capacity of 79.11 GiB of "
                    "which 212.44 MiB is free.")
        now = int(time.time())
        if fault not in STRANDED:  # one request a second, each finishing
            for slot in range(max(self.last_slot + 1, now - 5), now + 1):
                rid, room = request_ids(str(slot))
                self.logger.log_received_request(rid, room, *self.where)
                self.logger.log_finished_request(rid, room, *self.where)
        self.last_slot = now

    def _abort_open(self) -> None:
        for rid, room in self.open.values():
            self.logger.log_finished_request(rid, room, *self.where, abort=ABORTED)
        self.open.clear()

    def _stranded(self, key: str, fault: str) -> None:
        rid, room = request_ids(key)
        self.logger.log_received_request(rid, room, *self.where)
        if self.role == "prefill" and fault == "forgotten-requests":
            self.logger.log_finished_request(rid, room, *self.where, completion_tokens=1)
        elif self.role == "decode" and fault == "stranded-bootstrap":
            log("TP0", f"Decode handshake failed for request rank=0 decode_req.req.rid='{rid}' "
                f"decode_req.req.bootstrap_room={room} with exception "
                f"KVTransferError(bootstrap_room={room}): Failed to get kvcache from prefill "
                f"instance, it might be dead")
            self.logger.log_finished_request(rid, room, *self.where,
                                             abort="Failed to get kvcache from prefill instance")
        else:
            self.open[key] = (rid, room)
