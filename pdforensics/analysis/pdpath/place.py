"""Where each known message sits on the request path, from what SGLang's code that prints it
does (sglang 0.5.23 source; the table's ``where`` names file, line and sink of each pattern).

- ``KVPoll.Bootstrapping`` timeouts are raised by the KV *sender* (prefill,
  disaggregation/common/conn.py CommonKVSender.poll): prefill waited for decode to bootstrap
  the room, so the side to look at is decode.
- ``KVPoll.WaitingForInput`` timeouts and the missing done signal are raised by the KV
  *receiver* (decode, CommonKVReceiver.poll): decode waited for KV that prefill never sent,
  so the side to look at is prefill, for those rooms.
- "Lost connection with prefill instance" is decode's heartbeat to the prefill bootstrap
  server failing (CommonKVManager heartbeat checker).
- "Error fetching prefill parallel info from bootstrap" is decode's HTTP GET of prefill's
  bootstrap server (/route) failing: the bootstrap address named in the line is the suspect.
- "Decode handshake failed" (decode.py DecodePreallocQueue) and "Decode transfer failed"
  (DecodeTransferQueue) are decode's reports of a KVTransferError whose reason is quoted;
  "Prefill bootstrap failed" / "Prefill transfer failed" (prefill.py) are prefill's.
- "Watchdog timeout" (scheduler watchdog) fires when one forward batch runs past
  --watchdog-timeout: requests are stuck in that server's forward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Side, Stage


@dataclass(frozen=True)
class Place:
    stage: Stage | None
    side: Side | None
    wedge: bool | None
    strength: int
    why: str


_SRC = "sglang 0.5.23 "
KEY_PLACE: dict[str, Place] = {
    "KV_BOOTSTRAP_TIMEOUT": Place("prefill_bootstrap", "decode", True, 2, _SRC +
                                  "CommonKVSender.poll: prefill waited for decode to bootstrap"),
    "KV_WAITING_TIMEOUT": Place("decode_transfer_wait", "prefill", True, 2, _SRC +
                                "CommonKVReceiver.poll: decode waited for KV prefill never sent"),
    "KV_DONE_SIGNAL_MISSING": Place("decode_transfer_wait", "prefill", True, 2, _SRC +
                                    "decode got no transfer-done signal after bootstrapping"),
    "DECODE_TRANSFER_FAILED": Place("decode_transfer_wait", None, False, 1, _SRC +
                                    "decode.py DecodeTransferQueue: reports a KVTransferError"),
    "PREFILL_TRANSFER_FAILED": Place("kv_send", "prefill", False, 1, _SRC +
                                     "prefill.py: the KV sender failed; its reason is quoted"),
    "PREFILL_BOOTSTRAP_FAILED": Place("prefill_bootstrap", "prefill", False, 1, _SRC +
                                      "prefill.py: bootstrap with decode failed"),
    "DECODE_HANDSHAKE_FAILED": Place("prefill_bootstrap", "prefill", False, 1, _SRC +
                                     "decode.py DecodePreallocQueue: handshake with prefill "
                                     "failed; its reason is quoted"),
    "KV_TRANSFER_ERROR": Place(None, None, None, 1, _SRC + "KVTransferError, quoted"),
    "LOST_PREFILL_CONNECTION": Place("decode_transfer_wait", "prefill", None, 3, _SRC +
                                     "CommonKVManager heartbeat: a prefill instance is down"),
    "BOOTSTRAP_INFO_FAILED": Place("prefill_bootstrap", "prefill", False, 3, _SRC +
                                   "decode's GET of prefill's bootstrap server failed"),
    "BOOTSTRAP_REGISTER_FAILED": Place("startup", "prefill", False, 3, _SRC +
                                       "prefill could not register with its bootstrap server"),
    "PREFILL_TRANSFER_THREAD_DEAD": Place("kv_send", "prefill", False, 3, _SRC +
                                          "the prefill transfer thread died"),
    "WATCHDOG_TIMEOUT": Place(None, None, True, 2, _SRC +
                              "scheduler watchdog: one forward batch ran past --watchdog-timeout"),
    "SCHEDULER_DEBUG_DUMP": Place(None, None, None, 1, _SRC + "the watchdog's state dump"),
    "PYSPY_DUMP": Place(None, None, None, 1, _SRC + "the watchdog's embedded py-spy dump"),
    "SCHEDULER_EXCEPTION": Place(None, None, False, 2, _SRC +
                                 "run_scheduler_process: the scheduler died of an exception"),
    "KV_POOL_FULL": Place("decode_forward", None, False, 2, _SRC + "managers/scheduler.py "
                          "update_running_batch: check_decode_mem failed, requests retracted "
                          "(the pool of the server that printed it is full)"),
    "SUBPROCESS_CRASHED": Place(None, None, False, 3, _SRC + "utils/watchdog.py "
                                "SubprocessWatchdog: a child process exited (a negative code is "
                                "the signal that ended it: -9 SIGKILL, the OOM killer or a kill); "
                                "the launcher then kills the server"),
    "HEALTH_CHECK_FAILED": Place(None, None, None, 1, _SRC + "/health got no answer"),
    "ABORTED_BY_ABORTREQ": Place(None, None, None, 1, _SRC +
                                 "the abort path (prepare_abort / KVSender.abort)"),
    "FROM_ANOTHER_RANK": Place(None, None, None, 2, _SRC + "failure_exception: this rank "
                               "recorded no failure of its own"),
    "OTHER_RANK_LOAD_FAILED": Place("startup", None, False, 2, _SRC + "model_runner "
                                    "load_model: this rank loaded; another did not finish"),
    "COLLECTIVE_RECV_TIMEOUT": Place(None, "collective", True, 2,
                                     "gloo: a peer never sent its part of a collective"),
    "MOONCAKE_METADATA_NOT_FOUND": Place("kv_send", "transfer_engine", False, 2,
                                         "Mooncake: the peer's segment is not registered"),
    "DECODE_STREAM_ERROR": Place("stream_back", "decode", False, 2,
                                 "the router's stream from decode broke"),
    "PYTHON_TRACEBACK": Place(None, None, None, 1, "a traceback header; its exception line "
                                                   "says what failed"),
    "CUDA_ERROR": Place(None, "gpu", False, 2, "CUDA runtime error"),
    "NCCL_ERROR": Place(None, "collective", None, 2, "NCCL error"),
    "OUT_OF_MEMORY": Place(None, None, False, 2, "out of memory"),
    "PREALLOC_QUEUE_RISING": Place("decode_prealloc", None, True, 2,
                                   "a prealloc/bootstrap queue count rises to the end"),
    "TRANSFER_QUEUE_RISING": Place("decode_transfer_wait", None, True, 2,
                                   "a transfer/inflight queue count rises to the end"),
}
#: messages that are labelled as noise wherever they are (the header of a traceback: its
#: exception line, read by the exception reader, carries the meaning)
NOISE_KEYS = frozenset({"PYTHON_TRACEBACK"})

# batch-line queue fields that only one role prints (catalog/data/log_signatures.json,
# queue_fields of 0.4.6 - 0.5.23)
_DECODE_FIELDS = ("#transfer-req", "#host-receive-req")
_PREFILL_FIELDS = ("#bootstrap-req", "#inflight-req", "#optimistic-req", "#transferring-req",
                   "#unbootstrapped-req")
_MODE = linear.compile(r"""disaggregation[-_]mode['"]?\s*[=:]?\s*['"]?(prefill|decode)\b""")


def role_of_line(line: str) -> str | None:
    """The PD role a line itself shows: a batch line's role-only queue fields, or the
    decode/prefill message families; None when the line does not say."""
    low = line.lower()
    if "batch" in low and "-req" in low:
        if any(f in low for f in _DECODE_FIELDS) or ("decode batch" in low and "#prealloc-req" in low):
            return "decode"
        if any(f in low for f in _PREFILL_FIELDS) or ("prefill batch" in low and "#prealloc-req" in low):
            return "prefill"
        return None
    if "decode transfer failed" in low or "decode handshake failed" in low \
            or "kvpoll.waitingforinput" in low or "lost connection with prefill" in low \
            or "from bootstrap" in low:
        return "decode"
    if "prefill transfer failed" in low or "prefill bootstrap failed" in low \
            or "kvpoll.bootstrapping" in low:
        return "prefill"
    return None


def batch_role(line: str) -> str | None:
    """The role a batch line's role-only queue fields give (None: a unified server prints the
    same line)."""
    return role_of_line(line) if "batch" in line.lower() else None


_ADDR = linear.compile(r"host='([^']{1,200})', port=(\d{1,5})|bootstrap_addr[:=]\s*'?([\w.\-\[\]:]{1,200}:\d{1,5})")


def bootstrap_suspect(line: str) -> str | None:
    """The prefill bootstrap address a failed bootstrap query names (``10.0.0.1:8998``)."""
    m = _ADDR.search(line[:4000])
    if m is None:
        return None
    return f"{m.group(1)}:{m.group(2)}" if m.group(1) else m.group(3)


#: SGLang functions (sglang 0.4-0.5 source) -> the stage a stack or traceback through them is
#: in, innermost match first; and the role the event loops belong to.
FRAME_STAGES: tuple[tuple[str, Stage | Literal["forward"]], ...] = (
    ("init_torch_distributed", "startup"), ("initialize_model_parallel", "startup"),
    ("init_distributed_environment", "startup"), ("ncclCommInitRank", "startup"),
    ("load_model", "startup"), ("init_memory_pool", "startup"),
    ("init_model_worker", "startup"), ("init_tp_model_worker", "startup"),
    ("_init_model_runner", "startup"), ("init_cuda_graphs", "startup"),
    ("init_prefill_cuda_graph", "startup"), ("capture_one_batch_size", "startup"),
    ("capture_model", "startup"), ("_launch_subprocesses", "startup"),
    ("launch_server", "startup"), ("_wait_and_warmup", "startup"),
    # the PD queues built with the scheduler: their KV manager made, its buffers registered
    # with the transfer engine (0.4-0.5.23 scheduler.init_disaggregation, prefill/decode
    # _init_kv_manager, <backend>/conn.register_buffer_to_engine)
    ("init_disaggregation", "startup"), ("_init_kv_manager", "startup"),
    ("register_buffer_to_engine", "startup"),
    ("get_new_batch_prefill", "prefill_forward"), ("prepare_for_extend", "prefill_forward"),
    ("_get_prefill_parallel_info_from_server", "prefill_bootstrap"),
    ("_get_bootstrap_info_from_server", "prefill_bootstrap"),
    ("PrefillBootstrapQueue", "prefill_bootstrap"), ("bootstrap_thread", "prefill_bootstrap"),
    # the PD queues' own steps (sglang 0.5.23 disaggregation/decode.py, prefill.py)
    ("pop_bootstrapped", "prefill_bootstrap"), ("pop_preallocated", "decode_prealloc"),
    ("_pre_alloc", "decode_prealloc"), ("pop_transferred", "decode_transfer_wait"),
    ("process_disagg_prefill_inflight_queue", "kv_send"),
    ("handle_inflight_transfer_failure", "kv_send"),
    ("DecodePreallocQueue", "decode_prealloc"), ("DecodeTransferQueue", "decode_transfer_wait"),
    ("KVSender.send", "kv_send"), ("transfer_worker", "kv_send"), ("send_kvcache", "kv_send"),
    # vLLM's KV connector API (KVConnectorBase_V1, every connector: NIXL, LMCache, Mooncake):
    # the consumer loads the remote KV before its forward
    ("start_load_kv", "decode_transfer_wait"), ("wait_for_layer_load", "decode_transfer_wait"),
    # the model runner's mode: extend is a prefill (chunk), decode a decode step, whatever
    # the server's role (0.4-0.5.23 model_runner.forward_extend / forward_decode, eager_runner)
    ("forward_extend", "prefill_forward"), ("_execute_extend", "prefill_forward"),
    ("forward_decode", "decode_forward"), ("_execute_decode", "decode_forward"),
    # EAGLE speculative decoding's steps (0.4-0.5.2 speculative/eagle_worker.py): the target
    # model's extend of a new batch is a prefill; the draft's extend after a decode step, the
    # draft and the verify are the decode
    ("forward_target_extend", "prefill_forward"),
    ("forward_draft_extend_after_decode", "decode_forward"),
    ("forward_draft_extend", "prefill_forward"),
    ("forward_batch_generation", "forward"), ("run_batch", "forward"),
    ("ModelRunner.forward", "forward"),
    # the way back: the detokenizer turning token ids into text, the tokenizer manager
    # handing each output to its request (0.4-0.5.23 detokenizer_manager, tokenizer_manager)
    ("_decode_batch_token_id_output", "stream_back"), ("handle_batch_token_id_out", "stream_back"),
    ("_grouped_batch_decode", "stream_back"), ("run_detokenizer_process", "stream_back"),
    ("_handle_batch_output", "stream_back"),
)
#: code a traceback shows on the failing line that says which stage it is in
CODE_STAGES: tuple[tuple[str, Stage], ...] = (
    ("prefill_tp_size", "prefill_bootstrap"), ("prefill_dp_size", "prefill_bootstrap"),
    ("bootstrap_info", "prefill_bootstrap"), ("ncclCommInitRank", "startup"),
    # the scheduler and its model worker being built: the server is starting
    ("= Scheduler(", "startup"), ("TpModelWorker(", "startup"), ("TpWorkerClass(", "startup"),
    ("= ModelRunner(", "startup"),
    # the CUDA graphs captured while the model runner starts (cuda_graph_runner.__init__)
    ("self.capture()", "startup"), ("capture_one_batch_size(", "startup"),
    ("forward_extend(", "prefill_forward"), ("_execute_extend(", "prefill_forward"),
    ("forward_decode(", "decode_forward"), ("_execute_decode(", "decode_forward"),
    # a KV transfer backend created or its memory registered: before any request
    ("createBackend(", "startup"), ("registerMem(", "startup"), ("register_memory(", "startup"),
    ("register_kv_caches(", "startup"),
    # vLLM's KV connector loading the remote KV (FRAME_STAGES)
    ("start_load_kv(", "decode_transfer_wait"), ("wait_for_layer_load(", "decode_transfer_wait"),
    # an engine or runtime being built in-process (sgl.Runtime / sgl.Engine launch the server)
    ("Runtime(", "startup"), ("sgl.Engine(", "startup"), ("launch_server(", "startup"),
    # vLLM V1's engine core process being built (v1/engine/core.py run_engine_core)
    ("EngineCoreProc(", "startup"),
)


#: words that say whose code a failure line (or a crash's native stack) runs, first match wins:
#: a collective's (NCCL, gloo, torch.distributed, custom all-reduce), the KV transfer
#: engine's (Mooncake, NIXL, UCX, verbs), the GPU's
WORD_SIDES: tuple[tuple[tuple[str, ...], Side], ...] = (
    (("nccl", "gloo", "c10d", "all_reduce", "allreduce", "all_gather", "custom_ar"), "collective"),
    (("mooncake", "nixl", "ucx", "ucp_", "uct_", "ucs_", "ibv_", "rdma", "transfer engine",
      "transfer_engine"), "transfer_engine"),
    (("cuda error", "xid", "ecc error"), "gpu"),
    # the operating system refusing the host's resources (errno ENOMEM, ENOSPC, EMFILE)
    (("cannot allocate memory", "no space left on device", "too many open files"), "host"),
)


def side_of_words(text: str) -> Side | None:
    """The side WORD_SIDES names for ``text`` (any case), or None."""
    low = text.lower()
    return next((side for words, side in WORD_SIDES if any(w in low for w in words)), None)


_DECODE_STEPS = ("pop_preallocated", "_pre_alloc", "pop_transferred", "process_decode_queue")


def frames_role(funcs: list[str]) -> str | None:
    """decode / prefill from the PD event loop a stack runs under."""
    joined = " ".join(funcs)
    if "disagg_decode" in joined or "DecodePreallocQueue" in joined or "decode_thread" in joined \
            or any(w in joined for w in _DECODE_STEPS):
        return "decode"
    if "disagg_prefill" in joined or "PrefillBootstrapQueue" in joined or "pop_bootstrapped" in joined:
        return "prefill"
    return None


def frames_stage(funcs: list[str], code: list[str], role: str | None) -> Stage | None:
    """The stage of the innermost SGLang function (or failing code line) a stack names."""
    for text in code:
        for token, stage in CODE_STAGES:
            if token in text:
                return stage
    for fn in funcs:  # innermost first
        for token, where in FRAME_STAGES:
            if token not in fn:
                continue
            if where != "forward":
                return where
            return "decode_forward" if role == "decode" else (
                "prefill_forward" if role == "prefill" else None)
    if funcs and funcs[0] in _PROCESS_ENTRIES:
        return "startup"  # raised in the entry's own body: before the loop it ends in
    return None


#: SGLang's process entry points (0.4-0.5.23): each sets its process up, then runs its event
#: loop (a deeper frame); an exception raised in the entry's own frame is a set-up failure
_PROCESS_ENTRIES = frozenset({"run_scheduler_process", "run_data_parallel_controller_process"})


def sglang_role(line: str) -> str | None:
    """The role a server-args line or command line gives (``disaggregation_mode='decode'``)."""
    if "disaggregation" not in line:
        return None
    m = _MODE.search(line)
    return m.group(1) if m else None
