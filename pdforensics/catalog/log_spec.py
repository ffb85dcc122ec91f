"""Which sglang messages make a log signature, and whether each is a cause, a consequence
or noise. The patterns themselves come from sglang's source (`log_table.build_table`);
`external` holds lines printed by other software that runs inside a PD server (gloo,
Mooncake, NCCL, CUDA, Python itself, the Rust router)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Label = Literal["cause", "consequence", "noise"]


@dataclass(frozen=True)
class SigSpec:
    """One signature: stable key, label, meaning, which source messages feed it."""

    key: str
    label: Label
    description: str
    select: str = ""  # regex (case-insensitive) over a message's template, "" for none
    paths: tuple[str, ...] = ("srt/",)  # only messages in files under these prefixes
    external: tuple[tuple[str, str, str], ...] = ()  # (regex, prefilter, who prints it)
    masks_causes: bool = False  # a line with this key is no cause for any other key


def _short(regex: str, literal: str) -> tuple[tuple[str, str, str], ...]:
    """The message's fixed words alone: what the DESIGN's grep list names, any release."""
    return ((regex, literal, "sglang, any release (the fixed words of the message)"),)


SPECS: tuple[SigSpec, ...] = (
    SigSpec("KV_BOOTSTRAP_TIMEOUT", "cause",
            "a request waited too long for the KV bootstrap handshake",
            r"timed out after \{\}s in KVPoll\.Bootstrapping", ("srt/disaggregation/",),
            external=_short(r"timed out after.*KVPoll\.Bootstrapping", "timed out after")),
    SigSpec("KV_WAITING_TIMEOUT", "cause",
            "a request waited too long for KV cache transfer input",
            r"^Request \{\} timed out after \{\}s in KVPoll\.WaitingForInput$",
            ("srt/disaggregation/",),
            external=_short(r"timed out after.*KVPoll\.WaitingForInput", "timed out after")),
    SigSpec("KV_DONE_SIGNAL_MISSING", "cause",
            "decode never got the KV-transfer-done signal after bootstrapping (waiting timeout)",
            r"fail to receive KV Cache transfer done signal", ("srt/disaggregation/",)),
    SigSpec("DECODE_TRANSFER_FAILED", "cause", "the decode side saw a KV transfer fail",
            r"^Decode transfer failed", ("srt/disaggregation/",),
            external=_short(r"Decode transfer failed", "decode transfer failed")),
    SigSpec("PREFILL_TRANSFER_FAILED", "cause", "the prefill side saw a KV transfer fail",
            r"^Prefill transfer failed", ("srt/disaggregation/",),
            # (later releases' words: "... rank=0 req.rid='..' with exception ...")
            external=_short(r"Prefill transfer failed", "prefill transfer failed")),
    SigSpec("PREFILL_BOOTSTRAP_FAILED", "cause",
            "the prefill side could not bootstrap a request with decode",
            r"^Prefill bootstrap failed", ("srt/disaggregation/",),
            external=_short(r"Prefill bootstrap failed", "prefill bootstrap failed")),
    SigSpec("DECODE_HANDSHAKE_FAILED", "cause",
            "the decode side could not finish the handshake with prefill",
            r"^Decode handshake failed", ("srt/disaggregation/",)),
    SigSpec("KV_TRANSFER_ERROR", "cause", "the KV transfer engine raised an error",
            external=((r"KVTransferError", "kvtransfererror",
                       "sglang KVTransferError.__str__ (quoted by the failure lines)"),)),
    SigSpec("LOST_PREFILL_CONNECTION", "cause",
            "decode lost its heartbeat with a prefill instance",
            r"Lost connection with prefill instance|"
            r"is healthy before, but now it is down", ("srt/disaggregation/",),
            external=_short(r"Lost connection with prefill instance", "lost connection with prefill")),
    SigSpec("BOOTSTRAP_INFO_FAILED", "cause",
            "decode could not read prefill's bootstrap server (wrong address, prefill down)",
            r"^(Error fetching prefill (parallel |server )?info from bootstrap|"
            r"Could not fetch (prefill parallel info|bootstrap info|prefill dp_size))",
            ("srt/disaggregation/",)),
    SigSpec("BOOTSTRAP_REGISTER_FAILED", "cause",
            "prefill could not register with its bootstrap server",
            r"^Prefill (instance )?[Ff]ailed to (connect|register) to bootstrap server",
            ("srt/disaggregation/",)),
    SigSpec("PREFILL_TRANSFER_THREAD_DEAD", "cause",
            "the KV transfer thread died: a prefill instance is gone",
            r"^Transfer thread failed because of", ("srt/disaggregation/",)),
    SigSpec("WATCHDOG_TIMEOUT", "cause", "a forward batch ran past --watchdog-timeout",
            r"[Ww]atchdog timeout \(", ("srt/managers/", "srt/utils"),
            external=((r"Watchdog timeout", "watchdog timeout",
                       "sglang, any release (the words without the values after them)"),)),
    SigSpec("SCHEDULER_DEBUG_DUMP", "consequence",
            "the scheduler dumped its state (watchdog debug info or requests before a crash)",
            r"^\{\} debug info:|^self\.cur_batch\.batch_size\(\)=|^Dumping requests before "
            r"crash|^Dumped \{\} finished and \{\} unfinished requests before crash",
            ("srt/managers/", "srt/utils")),
    SigSpec("PYSPY_DUMP", "consequence", "the watchdog embedded a py-spy dump in the log",
            r"^Pyspy dump for PID", ("srt/utils",),
            external=_short(r"Pyspy dump for PID", "pyspy dump for pid")),
    SigSpec("SCHEDULER_EXCEPTION", "cause", "a scheduler (or its peer process) crashed",
            r"^(Scheduler|DataParallelController|DetokenizerManager|TokenizerManager|"
            r"TpModelWorkerClient) hit an exception", ("srt/managers/",),
            external=(*_short(r"Scheduler hit an exception", "scheduler hit an exception"),
                      (r"Exception in run_tp_server:", "exception in run_tp_server",
                       "sglang 0.2-0.3 managers/controller/tp_worker.py run_tp_server (the same "
                       "crash report of a TP rank, in older words)"),
                      (r"Exception in ModelTpServer:", "exception in modeltpserver",
                       "sglang 0.2 managers/controller/tp_worker.py ModelTpServer.exposed_step "
                       "(a forward step's exception, logged before it is raised)"))),
    SigSpec("KV_POOL_FULL", "cause",
            "the scheduler's KV cache pool filled: it retracted running requests (they wait in "
            "the retracted queue and are recomputed): overload, not a hang",
            external=((r"KV cache pool is full\. Retract requests", "kv cache pool is full",
                       "sglang scheduler.py update_running_batch (logger.warning of a "
                       "concatenated message: its fixed words)"),
                      (r"Decode out of memory happened\. #retracted_reqs",
                       "decode out of memory happened",
                       "sglang 0.4 scheduler.py update_running_batch (logger.info: the same "
                       "retraction in older words; the KV pool, not a GPU out-of-memory)"))),
    SigSpec("SUBPROCESS_CRASHED", "cause",
            "a child process of the server (a scheduler rank, the detokenizer) died; SGLang's "
            "launcher then sends itself SIGQUIT and tears the whole server down",
            r"^Subprocess \{\} \(pid=\{\}\) crashed with exit code", ("srt/utils",),
            external=_short(r"Subprocess \S+ \(pid=\d+\) crashed with exit code", "crashed with exit code")),
    SigSpec("FROM_ANOTHER_RANK", "consequence",
            "a KV transfer failed on another rank: this rank has no failure of its own",
            r"from another rank", ("srt/disaggregation/",)),
    SigSpec("OTHER_RANK_LOAD_FAILED", "consequence",
            "this rank loaded its weights but other ranks did not finish loading (a failure, "
            "often an OOM, or a slow node there): this rank has no failure of its own",
            external=((r"could finish the model loading, but there are other ranks",
                       "could finish the model loading",
                       "sglang 0.5 model_runner load_model (raised after the load; its fixed "
                       "words)"),)),
    SigSpec("HEALTH_CHECK_FAILED", "consequence", "a /health probe failed",
            r"^Health check failed\. Server couldn't get a response",
            ("srt/entrypoints/http_server.py",),
            external=_short(r"Health check failed", "health check failed")),
    SigSpec("ABORTED_BY_ABORTREQ", "consequence",
            "requests were aborted (a consequence of timeouts or client disconnects)",
            r"^Aborted by AbortReq\.$", ("srt/",), masks_causes=True,
            external=_short(r"Aborted by AbortReq\.", "aborted by abortreq")),
    SigSpec("BATCH_STATS", "noise",
            "the periodic Prefill/Decode batch line (queue counts; see *_QUEUE_RISING)",
            r"^(Prefill|Decode) batch[. {]", ("srt/managers/",),
            external=((r"(?:Prefill|Decode) batch[.,] #(?:new-seq|running-req)", "batch",
                       "sglang, any release (the line's first fields, when a terminal cut it)"),)),
    SigSpec("COLLECTIVE_RECV_TIMEOUT", "consequence",
            "a gloo/torch collective waited for a peer that never sent (the peer is the cause, "
            "as for NCCL's watchdog timeout)",
            external=((r"Timed out waiting \d+ ?ms for (?:recv|send)", "timed out waiting",
                       "gloo (torch.distributed)"),)),
    SigSpec("MOONCAKE_METADATA_NOT_FOUND", "cause",
            "Mooncake could not find the peer's segment metadata (peer gone or not registered)",
            external=((r"metadata not found|(?:Failed to|Cannot|Unable to) (?:get|find|open) "
                       r"segment(?: descriptor)?|getSegmentDescByName|SEGMENT_NOT_FOUND",
                       "segment", "Mooncake transfer engine"),
                      (r"metadata not found", "metadata not found",
                       "Mooncake metadata server"))),
    SigSpec("DECODE_STREAM_ERROR", "consequence",
            "the router relays a decode server's failure (its stream broke, its error status)",
            external=((r"(?:Stream|stream) error from decode|decode (?:server )?stream error|"
                       r"Error (?:reading|in) (?:decode )?stream",
                       "stream", "sgl-router / sgl-model-gateway"),
                      (r"Decode server returned error status", "decode server returned",
                       "smg pd_router (seen in a field log, 0.5.9 era)"))),
    SigSpec("PYTHON_TRACEBACK", "cause", "a Python exception traceback",
            external=((r"Traceback \(most recent call last\)", "traceback (most recent call last)",
                       "Python"),)),
    SigSpec("CUDA_ERROR", "cause", "a CUDA runtime error",
            external=((r"(?-i:CUDA error|Cuda error|CUDA Error)", "cuda error",
                       "CUDA (vLLM's and SGLang's custom all-reduce print \"Cuda error\", "
                       "FlashInfer \"CUDA Error:\")"),)),
    SigSpec("NCCL_ERROR", "cause", "a NCCL collective error",
            external=((r"NCCL (?:error|WARN)|ncclSystemError|ncclInternalError|"
                       r"ncclUnhandledCudaError|ncclRemoteError", "nccl", "NCCL"),)),
    # (not a hint's "If you are running out of memory, consider ...": vLLM's INFO line)
    SigSpec("OUT_OF_MEMORY", "cause", "a (GPU or host) out-of-memory error",
            external=((r"(?:^|[^g] |[^ ])out of memory|OutOfMemoryError", "memory",
                       "CUDA / torch / sglang"),)),
)

#: Sequence signatures: a disaggregation queue count in the batch lines that keeps rising.
#: field in the batch line -> signature key.
QUEUE_FIELDS = {
    "#prealloc-req": "PREALLOC_QUEUE_RISING",
    "#bootstrap-req": "PREALLOC_QUEUE_RISING",
    "#unbootstrapped-req": "PREALLOC_QUEUE_RISING",
    "#transferring-req": "TRANSFER_QUEUE_RISING",
    "#transfer-req": "TRANSFER_QUEUE_RISING",
    "#inflight-req": "TRANSFER_QUEUE_RISING",
}
QUEUE_DESCRIPTIONS = {
    "PREALLOC_QUEUE_RISING": "a prealloc/bootstrap queue count keeps rising across batch lines "
                             "(requests enter the PD handshake and do not leave it)",
    "TRANSFER_QUEUE_RISING": "a transfer/inflight queue count keeps rising across batch lines "
                             "(KV transfers start and do not finish)",
}
