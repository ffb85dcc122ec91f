"""Stand-in of sglang's GroupCoordinator: collectives that block like NCCL does."""

from __future__ import annotations

from pdfx_lab_runtime import sleep_until_fault_changes


class GroupCoordinator:
    def __init__(self, rank_in_group: int, world_size: int):
        self.rank_in_group = rank_in_group
        self.world_size = world_size

    def all_reduce(self, fault: str, seconds: float) -> None:
        """A collective: blocks `seconds` (for ever when a peer never joins, rank-stuck), or
        until the fault changes."""
        self._wait_for_peers(fault, seconds)

    def broadcast_object(self, fault: str, seconds: float) -> None:
        self._wait_for_peers(fault, seconds)

    def _wait_for_peers(self, fault: str, seconds: float) -> None:
        sleep_until_fault_changes(fault, seconds)
