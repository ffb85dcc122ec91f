"""KV transfer engine errors: Mooncake (glog lines of its C++ transfer engine) and NIXL / UCX.

Each error is placed on the PD stage it breaks. Prefill pushes KV to decode through the
transfer engine: a failed write, an RDMA work completion with an error, a failed handshake or
segment (metadata) lookup break ``kv_send``; seen in a decode server's log the same failure
is decode waiting for KV (``decode_transfer_wait``); memory registration and transport
installation happen at start-up. A read that hits ``End of file`` / ``Connection reset`` is
the peer going away (a consequence of the failure on the other side), and a flushed work
request follows the error that moved its queue pair to the error state (a consequence when
that error is in the same text). NIXL's agent reporting a failure after one of its backends
reported it, and a call timing out after an RDMA queue pair could not be set up, follow from
those. Never raises on arbitrary text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pdforensics import linear
from pdforensics.parsers.linescan import first_line_with, has_any, lines_with, marks, split_lines

# glog: E0708 09:26:26.525108   368 file.cpp:136] msg  (also E20260530 ... with the year; absl
# before its logging is set up: E0000 00:00:1762238119.118504 with the epoch as seconds)
_GLOG = linear.compile(r"(?:^|\s)([IEWF])(\d{4}|\d{8}) (\d\d:\d\d:\d{2,10}\.\d{1,9}) {1,10}(\d{1,10}) "
                   r"([\w.-]{1,80}\.(?:cpp|cc|h|hpp|c)):(\d{1,7})\] (.*)$")
_BARE_GLOG = linear.compile(r"^\s{0,8}(?:([IEWF]) )?([\w.-]{1,80}\.(?:cpp|cc|h|hpp|c)):(\d{1,7})\] (.*)$")
_UCX = linear.compile(r"\s(\w{1,60}\.c):(\d{1,6}) {1,4}UCX {1,3}(ERROR|FATAL|WARN) (.*)$")
UCX_SIGNAL = linear.compile(r"\] Caught signal (\d{1,3}) \(([^)\n]{0,200})")
#: UCX's prefix of its signal handler's report, "[host:pid:thread:tid]" (a space may follow the
#: pid), at a line's start or after another thread's half-written line
UCX_PREFIX = linear.compile(r"(?:^|\S)\[[^\]\s:]{1,100}:\d{1,10} ?:\d{1,10}:\d{1,10}\] Caught signal")
#: a frame of the backtrace UCX prints after it: " 3  /path/libx.so(func+0x1f) [0x7f..]", or
#: a process's own name ("sglang::scheduler_TP1(PyCode_Addr2Line+0x4) [0x54f3a4]")
_UCX_FRAME = linear.compile(r"^\s{0,8}\d{1,3}\s{1,8}([^\s(]{1,300})\(([^)+\s]{0,200})(?:\+0x[0-9a-fA-F]{1,16})?\)"
                            r"\s{1,8}\[0x[0-9a-fA-F]{1,16}\]")
#: the libraries of the transfer engines and their transports: a crash in one is theirs
TRANSFER_LIBS = ("libuc", "libnixl", "libtransfer_engine", "libmooncake", "libmlx5",
                  "libibverbs", "librdmacm", "libefa", "libfabric")
_HANDLER_LIBS = ("libucs", "libc.so", "libpthread")  # UCX's handler, the signal trampoline
_ERRNO = linear.compile(r"Error: ([A-Za-z][\w ]{0,60}) \(value: (\d{1,5})\)")
_SLICE = linear.compile(r"Process failed for slice \(.{0,600}\): (.{1,120})$")
_PEER_NIC = linear.compile(r"peer_nic: ([\w.:@-]{1,80})")
#: the address a connection that failed was made to ("SocketHandShakePlugin:
#: connect()10.0.0.30:15041: Connection refused [111]", "Failed to connect to 10.0.0.2:1234")
_CONNECT_TO = linear.compile(r"(?:connect\(\) ?|[Cc]onnect(?:ing| timeout)? to:? ?)([\w.-]{1,100}:\d{1,5})")
#: error lines Mooncake prints on a healthy start (seen on every start of SGLang 0.5.23 here),
#: and its store refusing a put of a key it already holds (several requests store one prefix's
#: pages: the first put wins, the others are told so; Mooncake's maintainers: expected)
BENIGN_ERRORS = ("Local segment descriptor not found", "OBJECT_ALREADY_EXISTS")
_NIXL = linear.compile(r"NIXL_ERR_\w{1,40}")
#: a glog line pasted without its level is an error only if it says so
_FAILURE_WORDS = linear.compile(r"(?i)fail|error|invalid|timeout|timed out|mismatch|refused|"
                                r"unreachable|abort|cannot|unable")
#: Mooncake's RDMA context when ibv_reg_mr fails ("Failed to register memory 0x7fa3ce000000:
#: Input/output error [5]"), printed without glog's prefix
_REG_FAILED = linear.compile(r"^\s*Failed to register memory 0x[0-9a-fA-F]{1,16}: (.{1,120})$")
#: an RDMA queue pair that could not be created or brought up (Mooncake's RPC "ibverbs init qp
#: failed", DLSlime's "Failed to create QP", verbs' "Failed to modify QP to RTR")
_QP_FAILED = linear.compile(r"(?i:init qp failed|failed to create qp|failed to modify qp\b[^:\n]{0,40})")
#: libibverbs' words for a failed work completion (ibv_wc_status_str), as SPDK, UCX and others
#: log them ("status: (10): remote access error")
_WC_STATUS = linear.compile(r"(?i:\b(remote access error|remote operation error|remote invalid "
                            r"request error|local protection error|local length error|transport "
                            r"retry counter exceeded|RNR retry counter exceeded|work request "
                            r"flushed error|bad response error|local QP operation error))")
_WC_MARKS = ("access error", "operation error", "request error", "protection error",
             "length error", "counter exceeded", "flushed error", "response error")
#: infiniband-diags' failure to read a device ("ibpanic: [1323906] main: stat of IB device
#: 'mlx5_8' failed: No such file or directory")
_IB_STAT = linear.compile(r"stat of IB device '([\w.-]{1,40})' failed: (.{1,120})")
#: what a connection whose queue pair never came up reports next: a call timing out or aborted
_AFTER_QP = ("timed out", "Timed out", "aborted", "Operation aborted", "Connection refused")
_RETRIES = linear.compile(r"after \d+ retries|retry \d+/\d+|retries exhausted")
#: a transfer engine warning within this many lines before an error says why it failed
#: (Mooncake: "No suitable GID found on mlx5_bond_1", then "Failed to open device")
_WARNED_LINES = 3
#: RDMA device names (Mellanox, Broadcom, Intel, AWS EFA, Alibaba eRDMA, HiSilicon, soft RoCE)
_DEVICE = linear.compile(r"\b((?:mlx5_|mlx4_|bnxt_re|irdma|efa_|erdma_|hns_|rxe|rocep)\w{0,20}|rdma\d{1,3})\b")


def device_of(text: str) -> str | None:
    """The RDMA device a transfer engine line names (``mlx5_bond_1``), if any."""
    m = _DEVICE.search(text)
    return m.group(1) if m else None


def only_device(text: str) -> str | None:
    """The one RDMA device a text names (Mooncake's "RDMA device: mlx5_0, LID: ..." at start),
    None when it names none or several."""
    found = {m.group(1) for m in _DEVICE.finditer(text[:2_000_000])}
    return found.pop() if len(found) == 1 else None

#: a text that can hold a transfer error holds one of these
_TEXT_MARKS = marks(".cpp:", "UCX", "NIXL_ERR_", "Caught signal", "Failed to register memory",
                    "init qp failed", "Failed to create QP", "Failed to modify QP",
                    "stat of IB device", *_WC_MARKS)
#: a line that can be a transfer error holds one of these (most lines of a log hold none)
_LINE_MARKS = (".cpp:", ".cc:", ".c:", "NIXL_ERR_", "Caught signal", "Failed to register memory",
               "init qp failed", "Failed to create QP", "Failed to modify QP",
               "stat of IB device", *_WC_MARKS)
#: Mooncake source files whose error lines are the transfer engine's (not its store's I/O)
_TE_FILES = ("tcp_transport", "rdma_transport", "rdma_endpoint", "rdma_context", "worker_pool",
             "transfer_engine", "transfer_metadata", "nvlink_transport", "nvmeof_transport",
             "multi_transport", "endpoint_store", "cxl_transport", "ascend_transport",
             "hccl_transport", "efa_transport", "rpc_communicator",
             "nixl_agent", "ucx_utils", "ucx_backend", "ucx_enums", "client_service",
             "real_client", "transfer_task", "store_py", "master_client", "client.",
             "gpunetio_backend", "libfabric_backend", "gds_backend", "mooncake_backend",
             "posix_backend", "obj_backend")
#: Mooncake's source files (transfer engine, store client, master, its storage and HA): an
#: error line of one (glog's "file.cpp:N]") is Mooncake's
MOONCAKE_FILES = (*_TE_FILES, "file_storage", "storage_backend", "master_service",
                  "master_metric", "etcd_helper", "ha_helper", "segment_manager", "rpc_service",
                  "data_manager", "client_buffer", "offset_allocator", "eviction_strategy")
def mooncake_glog(line: str) -> bool:
    """The line is a glog line of one of Mooncake's source files (MOONCAKE_FILES)."""
    g = _GLOG.search(line) if "] " in line else None
    return g is not None and g.group(5).startswith(MOONCAKE_FILES)


#: Mooncake Store's client files: a text holding them is a KV cache store's (SGLang HiCache,
#: LMCache) putting and getting KV, not prefill sending it to decode: its transfer failures
#: are not at the PD path's kv_send (start-up ones stay at start-up)
_STORE_FILES = ("store_py.cpp", "] Put operation failed", "transfer_task.cpp", "pybind_client.cpp",
                "real_client.cpp", "master_client.cpp", "client_service.cpp")
_PEER_GONE = ("End of file", "Connection reset by peer", "Broken pipe")
_STARTUP = ("register memory", "registerLocalMemory", "registerMem", "register_local_memory", "mount segment",
            "install transport", "installTransport",
            "Failed to open device", "ibv_reg_mr", "ibv_open_device", "no RDMA device",
            "Failed to init", "Failed to initialize", "createBackend")
_HANDSHAKE = ("handshake", "Handshake")
_METADATA = ("metadata not found", "segment", "Segment", "getSegmentDesc", "metadata server",
             "Failed to get description")


@dataclass(frozen=True)
class TransferError:
    """One transfer-engine error line."""

    lineno: int
    text: str  # the line as found
    engine: str  # mooncake | ucx | nixl | rdma (a queue pair, in another program's words)
    kind: str  # write | read_eof | rdma_completion | handshake | metadata | register | crash |
    # qp_setup | version | device | error
    stage: str | None  # kv_send | startup | None (decode: the caller maps to decode_transfer_wait)
    label: str  # cause | consequence | noise (the program finished its run after it)
    detail: str  # errno text, the work completion status, the signal
    peer: str | None = None
    level: str = "E"


def _mooncake_kind(src: str, msg: str) -> tuple[str, str | None, str]:
    """(kind, stage, detail) of one Mooncake error message."""
    errno = _ERRNO.search(msg)
    detail = errno.group(1) if errno else ""
    if any(w in msg for w in _STARTUP):
        return "register", "startup", detail or msg[:80]
    if "readBody" in msg or "readHeader" in msg or (errno and errno.group(1) in _PEER_GONE):
        return ("read_eof" if errno and errno.group(1) in _PEER_GONE else "read"), "kv_send", detail
    if "writeBody" in msg or "writeHeader" in msg:
        return "write", "kv_send", detail
    if (sl := _SLICE.search(msg)) is not None:
        return "rdma_completion", "kv_send", sl.group(1).strip()
    if any(w in msg for w in _HANDSHAKE):
        return "handshake", "kv_send", msg[:80]
    if any(w in msg for w in _METADATA):
        return "metadata", "kv_send", msg[:80]
    transport = src.startswith(("tcp_", "rdma_", "worker_pool")) or "_transport." in src
    return "error", ("kv_send" if transport else None), msg[:80]


def _line(no: int, line: str) -> TransferError | None:
    g = _GLOG.search(line)
    if g is not None:
        src, msg = g.group(5), g.group(7)
        if g.group(1) == "I" or not (src.startswith(_TE_FILES) or "_transport." in src) \
                or msg.startswith(BENIGN_ERRORS):  # (any *_transport.cpp is one of its transports)
            return None
        kind, stage, detail = _mooncake_kind(src, msg)
        peer = _PEER_NIC.search(msg) or _CONNECT_TO.search(msg)
        # the peer gone, or a retry loop giving up: what an earlier failure led to
        follows = kind == "read_eof" or _RETRIES.search(msg) is not None
        # an RDMA async event reporting an error is a fault whatever glog level carries it
        # ("W ... worker_pool.cpp:368] Worker: Received context async event local access
        # violation work queue error for context mlx5_0")
        level = "E" if "async event" in msg and "error" in msg else g.group(1)
        return TransferError(no, line.strip(), "mooncake", kind, stage,
                             "consequence" if follows else "cause", detail,
                             peer.group(1) if peer else None, level)
    b = _BARE_GLOG.search(line) if g is None else None
    if b is not None and b.group(2).startswith(_TE_FILES) and b.group(1) != "I" and (
            b.group(1) or _FAILURE_WORDS.search(b.group(4))):  # (no level: its words say)
        # a glog line pasted without its time and thread ("worker_pool.cpp:294] ...",
        # "E ucx_utils.cpp:585] ..."): the transfer engine's file says whose
        kind, stage, detail = _mooncake_kind(b.group(2), b.group(4))
        return TransferError(no, line.strip(), "mooncake", kind, stage, "cause", detail,
                             level=b.group(1) or "E")
    u = _UCX.search(line)
    if u is not None and u.group(3) == "WARN" and "version is incompatible" in u.group(4):
        # UCX loaded at a version other than the one its user was built for ("UCP version is
        # incompatible, required: 1.18, actual: 1.12"): a failure waiting to happen
        return TransferError(no, line.strip(), "ucx", "version", None, "cause",
                             u.group(4).strip()[:80])
    if u is not None and u.group(3) != "WARN":
        msg = u.group(4)
        flushed = "Flushed" in msg
        return TransferError(no, line.strip(), "ucx", "rdma_completion" if "completion" in msg
                             else "error", "kv_send", "cause",
                             "Work Request Flushed" if flushed else msg.strip()[:80],
                             level=u.group(3)[0])
    s = UCX_SIGNAL.search(line)
    if s is not None and UCX_PREFIX.search(line) is not None:
        return TransferError(no, line.strip(), "ucx", "crash", "kv_send", "cause",
                             f"signal {s.group(1)}: {s.group(2)[:80]}")
    r = _REG_FAILED.match(line)
    if r is not None:  # the RDMA memory registration itself (ibv_reg_mr), printed bare
        return TransferError(no, line.strip(), "mooncake", "register", "startup", "cause",
                             r.group(1).strip()[:80])
    wc = _WC_STATUS.search(line)
    if wc is not None:  # a verbs work completion's status, in any program's log
        return TransferError(no, line.strip(), "rdma", "rdma_completion", None, "cause",
                             wc.group(1))
    st = _IB_STAT.search(line)
    if st is not None:  # infiniband-diags (ibstat, ibv_devinfo) cannot open the device
        return TransferError(no, line.strip(), "rdma", "device", None, "cause",
                             f"{st.group(1)}: {st.group(2).strip()[:60]}")
    q = _QP_FAILED.search(line)
    if q is not None:  # an RDMA queue pair that could not be set up, in any program's words
        return TransferError(no, line.strip(), "rdma", "qp_setup", None, "cause", q.group(0))
    n = _NIXL.search(line)
    if n is not None:  # a code alone does not say when (start-up, a transfer): the stage is open
        return TransferError(no, line.strip(), "nixl", "error", None, "cause", n.group(0))
    return None


def read_transfer_errors(text: str) -> tuple[TransferError, ...]:
    """Every transfer-engine error of ``text``; a flushed work request after another error of
    the same text is that error's consequence."""
    if not has_any(text, _TEXT_MARKS):
        return ()
    out: list[TransferError] = []
    warned: list[TransferError] = []  # warnings not yet followed by an error
    for no, raw in lines_with(text, _LINE_MARKS):
        e = _line(no, raw[:20000].rstrip("\r"))
        if e is None:
            continue
        if e.level == "W":  # a warning counts only when an error follows it closely
            warned = [w for w in warned if no - w.lineno <= _WARNED_LINES] + [e]
            continue
        out.extend(w for w in warned if e.lineno - w.lineno <= _WARNED_LINES)
        warned = []
        out.append(e)
    if any(e.kind == "crash" for e in out):
        every = split_lines(text)
        out = [e for e in out if e.kind != "crash" or _in_transfer(crash_frame(every, e.lineno))]
    if any(f in text for f in _STORE_FILES):
        out = _store_stages(text, out)
    done = _results_at(text) if out else None
    if done is not None:  # the program went on to finish its run: what it met, it got past
        out = [replace(e, label="noise", detail=f"{e.detail} (the run finished after it: "
                       f"results at line {done})") if e.lineno < done else e for e in out]
    first_real = next((e.lineno for e in out if "Flushed" not in e.detail
                       and e.label == "cause"), None)
    qp = next((e.lineno for e in out if e.kind == "qp_setup"), None)
    backend = next((e.lineno for e in out if "_backend." in e.text and e.label == "cause"), None)
    return tuple(
        TransferError(e.lineno, e.text, e.engine, e.kind, e.stage, "consequence", e.detail,
                      e.peer, e.level)
        if ("Flushed" in e.detail and first_real is not None and first_real < e.lineno)
        or (qp is not None and qp < e.lineno and e.kind != "qp_setup"  # (another QP: again)
            and any(w in e.text for w in _AFTER_QP))
        or (backend is not None and backend < e.lineno and "nixl_agent." in e.text)
        else e for e in out)


#: the store client starting: mounting its segment, its setup and warm-up put (SGLang HiCache)
_STORE_STARTING = ("Mounting segment", "store setup successfully", "store warmup")
_SERVING = ("ready to roll", "Uvicorn running", "Application startup complete")


def _store_stages(text: str, errors: list[TransferError]) -> list[TransferError]:
    """A KV cache store's transfers (Mooncake Store under SGLang HiCache or LMCache) are not
    prefill sending KV to decode: a failure there is at start-up while the store is starting
    (its segment mounted or set up, the server not yet ready), else at a stage not established."""
    starting = first_line_with(text, _STORE_STARTING)
    ready = first_line_with(text, _SERVING)
    begun = starting[0] if starting is not None else None
    out = []
    for e in errors:
        if e.stage != "kv_send":
            out.append(e)
            continue
        up = begun is not None and begun < e.lineno and (ready is None or ready[0] > e.lineno)
        out.append(replace(e, stage="startup" if up else "not_established"))
    return out


def transfer_context(text: str) -> str | None:
    """What a text without transfer errors shows of the transfer engine, when anything:
    ``startup`` (Mooncake's own start-up lines), ``metadata_ok`` (its HTTP metadata server
    answering 200), ``ucx_info`` (UCX's transport selection lines)."""
    if "UCX  INFO" in text or "UCX INFO" in text:
        return "ucx_info"
    if "/metadata" in text and '" 200 ' in text:
        return "metadata_ok"
    for line in text.split("\n")[:20000]:
        g = _GLOG.search(line) if ".cpp:" in line else None
        if g is not None and g.group(1) == "I" and g.group(5).startswith(_TE_FILES) and (
                "listen" in g.group(7) or "starting" in g.group(7)):
            return "startup"
    return None


def crash_frame(lines: Sequence[str], lineno: int) -> tuple[str, str] | None:
    """(owner, function) of the faulting frame of the backtrace UCX printed after its "Caught
    signal" line ``lineno`` (1-based): the first frame past its own handler and the signal
    trampoline; None when no backtrace follows."""
    for raw in lines[lineno:lineno + 60]:
        m = _UCX_FRAME.match(raw)
        if m is None:
            continue
        owner, func = m.group(1), m.group(2)
        base = owner.rsplit("/", 1)[-1]
        if base.startswith(_HANDLER_LIBS) and (base.startswith("libucs") or not func
                                              or func in ("__restore_rt", "killpg")):
            continue
        return owner, func
    return None


def _in_transfer(frame: tuple[str, str] | None) -> bool:
    """The crash is the transfer engine's: its faulting frame is in one of their libraries
    (with no backtrace, UCX's handler only says the process crashed)."""
    return frame is not None and frame[0].rsplit("/", 1)[-1].startswith(TRANSFER_LIBS)


#: a benchmark's results table: its header ("# OSU MPI Broadcast Latency Test v5.8", "# Size
#: Avg Latency(us)", nccl-tests' "#  size  count  type ...") and a row of numbers under it
_RESULTS_HEAD = linear.compile(r"^#\s{0,4}(?:OSU .{0,80}Test|[Ss]ize\s)", linear.M)
_RESULT_ROW = linear.compile(r"^\s{0,16}\d{1,12}\s{1,40}\d[\d.]{0,20}(?:\s|$)")


def _results_at(text: str) -> int | None:
    """The line (1-based) of a results table's first row, when a benchmark printed one: the
    run finished."""
    if "# " not in text:
        return None
    m = _RESULTS_HEAD.search(text)
    if m is None:
        return None
    no = text.count("\n", 0, m.start()) + 1
    end = m.start()
    for k in range(no + 1, no + 12):  # the rows just under the header (no copy of the rest)
        start = text.find("\n", end) + 1
        if start == 0:
            return None
        end = text.find("\n", start)
        if _RESULT_ROW.match(text[start:end if end >= 0 else len(text)]):
            return k
        if end < 0:
            return None
    return None
