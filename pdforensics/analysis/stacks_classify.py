"""What a stack is doing (leaf classification) and which threads are noise."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from pdforensics import linear
from pdforensics.parsers.frames import Frame, ThreadStack

COLLECTIVE = "collective"
QUEUE_WAIT = "queue_wait"
CUDA_SYNC = "cuda_sync"
KV_TRANSFER = "kv_transfer"
SHUTDOWN = "shutdown"
IDLE_LOOP = "idle_loop"
SLEEP = "sleep"
IO_WAIT = "io_wait"
LOCK_WAIT = "lock_wait"
BUSY = "busy"
OTHER = "other"

#: Classes that mean "waiting for work": never an all-stuck verdict on their own.
IDLE_CLASSES = frozenset({QUEUE_WAIT, IDLE_LOOP, SLEEP})
#: Classes that make a thread a suspect even when py-spy calls it idle.
SUSPECT_CLASSES = frozenset({COLLECTIVE, CUDA_SYNC, KV_TRANSFER, SHUTDOWN})
#: a rank waiting for one peer's message (a pipeline stage's recv/send, the request broadcast
#: from rank 0): the peer it waits for is the one to read, not this rank
PEER_WAIT = "peer_wait"
_PEER_FN = linear.compile(r"RecvWork|SendWork|waitRecv|waitSend|recv_object_list|"
                          r"send_object_list|broadcast_pyobj|point_to_point_pyobj|"
                          r"_recv_requests_from|recv_tensor_dict|send_tensor_dict|\birecv\b|"
                          r"\bisend\b|^(?:.*\.)?recv_pyobj_from")
#: a Go HTTP client waiting for a connection from its pool (net/http Transport.getConn): every
#: connection to that host is busy (MaxConnsPerHost), the request is not sent yet
POOL_WAIT = "pool_wait"
#: what a class means, for the terminal (the Go wait classes people confuse)
CLASS_MEANING = {
    POOL_WAIT: "waits for a pooled connection: every connection to the host is busy, the "
               "request is not sent yet",
    IO_WAIT: "waits on I/O (a reply to a request sent, a socket, a file)",
    PEER_WAIT: "waits for one peer rank's message (pipeline recv/send, request broadcast): "
               "read the peer",
}

_COLLECTIVE_FN = linear.compile(
    r"all_?reduce|all_?gather|reduce_scatter|broadcast|barrier|all_?to_?all|nccl|gloo|"
    r"GroupCoordinator|ProcessGroup|c10d|_coalescing_manager|custom_all_reduce|"
    r"pynccl|\bsend_object|recv_object",
    linear.I,
)
_COLLECTIVE_FILE = linear.compile(r"torch/distributed/|distributed/parallel_state|nccl|gloo", linear.I)
_CUDA_FN = linear.compile(
    r"synchronize$|Synchronize$|^item$|\.item$|^tolist$|\.tolist$|cudaMemcpy|cuMemcpyDtoH|"
    r"cudaEventSynchronize|cudaStreamSynchronize|cudaDeviceSynchronize|cuStreamSynchronize"
)
_KV_FILE = linear.compile(r"disaggregation/.*(conn|transfer|mooncake|nixl)|mooncake|nixl", linear.I)
_KV_FN = linear.compile(r"pop_transferred|transfer_worker|KVPoll|mooncake|nixl|TransferEngine|"
                    r"^(?:.*\.)?poll$|bootstrap_thread|kv_transfer", linear.I)
_QUEUE_FN = linear.compile(
    r"recv_requests|recv_pyobj|recv_multipart|Queue\.get|SimpleQueue\.get|^get$|"
    r"Poller\.poll|zmq_poll|Socket\.recv|_recv_requests|process_input_requests", linear.I
)
_QUEUE_FILE = linear.compile(r"zmq/|/queue\.py$|^queue\.py$|multiprocessing/queues\.py")
_SHUTDOWN_FN = linear.compile(r"^(?:threading\.)?_shutdown$|Py_Finalize|_python_exit|atexit|"
                          r"_run_finalizers|_exit_function|wait_for_thread_shutdown")
_IDLE_LOOP = linear.compile(r"_run_once|run_forever|EpollSelector\.select|BaseSelector\.select|"
                        r"select\.epoll|uv_run|Selector\.select|epoll_wait$")
_SLEEP_FN = linear.compile(r"^(?:time\.)?sleep$|time_sleep|clock_nanosleep|^nanosleep|"
                       r"^time\.Sleep$|runtime\.timeSleep")
_IO_FN = linear.compile(r"sock_recv|sock_accept|^recv$|^recvfrom$|^accept4?$|^read$|"
                    r"socket\.recv|SocketIO\.readinto|readinto|_ssl__SSLSocket_read|"
                    r"persistConn\)\.roundTrip|runtime_pollWait|netpollblock|"
                    r"http\.\(\*Client\)\.Do|getresponse|_read_status")
_LOCK_FN = linear.compile(r"acquire_lock|lock_PyThread|Condition\.wait|Event\.wait|"
                      r"_wait_for_tstate_lock|Thread\.join|sync\.\(\*Mutex\)\.Lock|"
                      r"sync\.runtime_Semacquire|semacquire|futex", linear.I)
_GO_IDLE_STATES = {"select", "chan receive", "chan send", "select (no cases)"}
_GO_IO_STATES = {"IO wait"}
_GO_SLEEP_STATES = {"sleep"}
_GO_LOCK_STATES = {"semacquire", "sync.Mutex.Lock", "sync.RWMutex.Lock", "sync.RWMutex.RLock",
                   "sync.Cond.Wait", "sync.WaitGroup.Wait"}


def _frame_class(f: Frame) -> str | None:
    fn, file = f.function, f.file
    if _KV_FILE.search(file) or _KV_FN.search(fn) and "disaggregation" in file:
        return KV_TRANSFER
    if _PEER_FN.search(fn):
        return PEER_WAIT
    if _COLLECTIVE_FN.search(fn) or _COLLECTIVE_FILE.search(file):
        return COLLECTIVE
    if _CUDA_FN.search(fn):
        return CUDA_SYNC
    if _SHUTDOWN_FN.search(fn):
        return SHUTDOWN
    if _QUEUE_FN.search(fn) and (fn != "get" or _QUEUE_FILE.search(file)) or (
        "zmq" in file.lower()
    ):
        return QUEUE_WAIT
    if _IDLE_LOOP.search(fn):
        return IDLE_LOOP
    if _SLEEP_FN.search(fn):
        return SLEEP
    return None


def classify_stack(thread: ThreadStack) -> tuple[str, Frame | None]:
    """(class, the frame that decided it) scanning from the leaf; generic waits last."""
    frames = thread.frames
    for f in frames:
        c = _frame_class(f)
        if c is not None:
            return c, f
    if thread.goroutine:
        for f in frames:
            if "Transport).getConn" in f.function or "Transport).queueForIdleConn" in f.function:
                return POOL_WAIT, f
        # A client blocked in an HTTP round trip parks in "select": it waits on a server, not for work.
        for f in frames:
            if _IO_FN.search(f.function):
                return IO_WAIT, f
        st = thread.state
        if st in _GO_IDLE_STATES:
            return QUEUE_WAIT, thread.leaf
        if st in _GO_SLEEP_STATES:
            return SLEEP, thread.leaf
    for f in frames:
        if _IO_FN.search(f.function):
            return IO_WAIT, f
        if _LOCK_FN.search(f.function):
            return LOCK_WAIT, f
    if thread.goroutine:
        if thread.state in _GO_IO_STATES:
            return IO_WAIT, thread.leaf
        if thread.state in _GO_LOCK_STATES:
            return LOCK_WAIT, thread.leaf
        if thread.state == "running" or thread.state == "runnable":
            return BUSY, thread.leaf
    elif thread.state.startswith("active") or thread.state == "gil":
        return BUSY, thread.leaf
    return OTHER, thread.leaf


_NOISE_RULES: tuple[tuple[str, linear.Pattern[str], linear.Pattern[str] | None], ...] = (
    # (reason, function pattern, file pattern or None): any frame matching both
    ("watchdog", linear.compile(r"watchdog|pyspy_dump", linear.I), None),
    ("tqdm monitor", linear.compile(r"TMonitor"), None),
    ("tqdm monitor", linear.compile(r"."), linear.compile(r"tqdm/_monitor\.py")),
    ("pydevd", linear.compile(r"."), linear.compile(r"pydevd|_pydev_")),
    ("go keep-alive loop", linear.compile(r"persistConn\)\.(?:readLoop|writeLoop)$"), None),
    ("threading Timer", linear.compile(r"^Timer\.run$|^run$"), linear.compile(r"threading\.py$")),
)


@lru_cache(maxsize=1 << 16)
def _frame_noise(function: str, file: str) -> str | None:
    """The first name-independent noise rule one frame matches."""
    for reason, fn_pat, file_pat in _NOISE_RULES:
        if reason != "threading Timer" and fn_pat.search(function) and (
            file_pat is None or file_pat.search(file)
        ):
            return reason
    return None


_TIMER_FILE = _NOISE_RULES[-1][2]


def noise_reason(thread: ThreadStack) -> str | None:
    """Why a thread is noise (the watchdog running py-spy, tqdm, pydevd, the Go runtime's own
    goroutines, ...), else None."""
    if thread.goroutine and (thread.thread_id == "0" or (thread.frames and all(
            f.function.startswith(("runtime.", "?")) for f in thread.frames))):
        return "go runtime"  # goroutine 0 (the scheduler's g0), GC, finalizers, scavenger
    timer_named = thread.name is not None and thread.name.startswith("Timer")
    for f in thread.frames:
        reason = _frame_noise(f.function, f.file)
        if reason is not None:
            return reason
        if f.function == "Timer.run" or (
            timer_named and f.function == "run" and _TIMER_FILE is not None
            and _TIMER_FILE.search(f.file)
        ):
            return "threading Timer"
    return None


_PLUMBING_FILE = linear.compile(r"^(?:.*/)?(?:libc|libpthread|ld-linux|libstdc\+\+)[.-]|libpython"
                            r"|^(?:.*/)?python\d+(?:\.\d+)?$")


def blocked_frame(thread: ThreadStack) -> Frame | None:
    """The innermost frame that says where a thread waits: bare addresses, libc/pthread
    primitives and interpreter internals (``--native`` dumps) are skipped."""
    return blocked_in(thread.frames) or thread.leaf


def blocked_in(frames: Sequence[Frame]) -> Frame | None:
    """blocked_frame over a bucket's frames (innermost first); the innermost when every
    frame is plumbing, None for no frames."""
    for f in frames:
        if not (f.function.startswith("0x") or _PLUMBING_FILE.search(f.file) or _go_park(f)):
            return f
    return frames[0] if frames else None


def _go_park(f: Frame) -> bool:
    """The Go runtime's own parking frames (gopark, selectgo, ...) or an unnamed one: where
    every goroutine waits, never what it waits for."""
    return f.file.endswith((".go", ".s")) and (f.function.startswith("runtime.")
                                               or f.function == "?")
