"""Stand-in of sglang's decode-side PD queues."""

from __future__ import annotations

from sglang.srt.disaggregation.mooncake.conn import KVPoll, MooncakeKVReceiver


class DecodePreallocQueue:
    def pop_preallocated(self) -> list:
        return []


class DecodeTransferQueue:
    def __init__(self) -> None:
        self.receivers = [MooncakeKVReceiver(bootstrap_room=7421 + i) for i in range(14)]

    def pop_transferred(self, fault: str, seconds: float) -> list:
        """Poll every in-flight receiver; returns the requests whose KV arrived."""
        done = []
        for receiver in self.receivers[:1]:
            if receiver.poll(fault, seconds) == KVPoll.Success:
                done.append(receiver.bootstrap_room)
        return done
