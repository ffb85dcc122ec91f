"""Sample target for real py-spy / faulthandler dumps (used to produce tests/data/pyspy_*).

Threads: main thread parked in a class method blocked in socket recv, a named thread in
time.sleep, a busy thread, a thread in queue.get, and one started with _thread (unnamed).
With --children N it forks N multiprocessing children titled sglang::scheduler_TP<i>;
child TP<N-1> blocks in a fake all_reduce instead of recv_requests.
"""

from __future__ import annotations

import _thread
import faulthandler
import multiprocessing
import os
import queue
import socket
import sys
import threading
import time


def sleeper() -> None:
    while True:
        time.sleep(3600)


def busy_worker() -> None:
    x = 0
    while True:
        x = (x * 31 + 7) % 1000003


def queue_waiter(q: queue.Queue[int]) -> None:
    q.get()


def unnamed_worker() -> None:
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


class Scheduler:
    def __init__(self, rank: int, odd: bool) -> None:
        self.rank = rank
        self.odd = odd
        self.a, self.b = socket.socketpair()

    def recv_requests(self) -> bytes:
        return self.a.recv(1024)

    def all_reduce(self) -> bytes:
        return self.a.recv(1024)

    def event_loop_normal(self) -> None:
        while True:
            if self.odd:
                self.all_reduce()
            else:
                self.recv_requests()


def start_threads() -> None:
    q: queue.Queue[int] = queue.Queue()
    threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
    threading.Thread(target=busy_worker, name="busy", daemon=True).start()
    threading.Thread(target=queue_waiter, args=(q,), name="queue-waiter", daemon=True).start()
    _thread.start_new_thread(unnamed_worker, ())


def child_main(rank: int, odd: bool) -> None:
    try:
        import setproctitle

        setproctitle.setproctitle(f"sglang::scheduler_TP{rank}")
    except ImportError:
        pass
    start_threads()
    Scheduler(rank, odd).event_loop_normal()


def main() -> None:
    children = 0
    if "--children" in sys.argv:
        children = int(sys.argv[sys.argv.index("--children") + 1])
    if "--faulthandler" in sys.argv:
        start_threads()
        time.sleep(0.5)
        faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
        return
    procs = []
    for i in range(children):
        p = multiprocessing.Process(target=child_main, args=(i, i == children - 1), daemon=True)
        p.start()
        procs.append(p)
    start_threads()
    print(os.getpid(), flush=True)
    Scheduler(-1, False).event_loop_normal()


if __name__ == "__main__":
    main()
