"""One port allocator for the test modules and benchmarks: blocks of consecutive ports found
free at run time (instead of a hard-coded block per module), never handed out twice in one
process. Ports come from below Linux's ephemeral range, so a client socket cannot take one
between the check and the bind (a test that races another program still retries: retry_in_use).
Under pytest-xdist each worker takes its own slice of the range: the workers import every
module (and so ask for every module's block) at the same time, before any of them binds."""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Sequence

LOOPBACKS = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")  # the lab's hosts
LOW, HIGH = 20_000, 32_000  # below net.ipv4.ip_local_port_range (32768-60999)
_given: set[int] = set()
_rng = random.Random(os.getpid())  # sessions side by side start at different places


def _free(port: int, addresses: Sequence[str]) -> bool:
    for address in addresses:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((address, port))
            except OSError:
                return False
    return True


def _slice() -> tuple[int, int]:
    """This process's part of LOW-HIGH: all of it, or its xdist worker's slice."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 1):
        return LOW, HIGH
    size = (HIGH - LOW) // int(count)
    low = LOW + int(worker[2:]) * size
    return low, low + size


def block(span: int = 6, addresses: Sequence[str] = LOOPBACKS) -> int:
    """The first of `span` consecutive ports free on every address (a lab's base_port: 6)."""
    low, high = _slice()
    bases = list(range(low, high - span, span))
    first = _rng.randrange(len(bases))
    for base in bases[first:] + bases[:first]:
        wanted = range(base, base + span)
        if not _given.intersection(wanted) and all(_free(p, addresses) for p in wanted):
            _given.update(wanted)
            return base
    raise RuntimeError(f"no {span} consecutive free ports in {low}-{high}")


def port(addresses: Sequence[str] = ("127.0.0.1",)) -> int:
    """One free port."""
    return block(1, addresses)
