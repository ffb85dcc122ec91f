"""What to do about each rule's finding: the static part of its next step (a finding's own
next step adds the names and numbers of the capture). One entry per rule key; the explain
test walks RULES and fails on a key without one."""

from __future__ import annotations

from pdforensics.analysis.findings import Need

#: rule key -> what to do when it fires
ACTIONS: dict[str, str] = {
    "CLIENT_BLOCKED": "Match the blocked client calls with the servers' in-flight counts: calls "
                      "waiting on a server with frozen counters wait on the wedge; restart that PD pair.",
    "CLOCK_SKEW": "Put the host's clock in step (chronyc tracking, timedatectl set-ntp true); the "
                  "report already corrects that host's times by the measured offset.",
    "GPU_ROW_REMAP_PENDING": "Drain the host and reset the GPU (a pending remap needs a reset); a "
                             "failed remap needs the GPU serviced.",
    "NVLINK_ERRORS": "Check the links with nvidia-smi nvlink -e over time; rising recovery or CRC "
                     "counts mean a failing link: drain the node and call the vendor.",
    "K8S_LIVENESS_BLIND": "Point the liveness probe at /health_generate with a timeout under the "
                          "PD timeouts, so a wedged pod is restarted.",
    "K8S_CONTAINER_RESTARTED": "Read the last termination reason and exit code; the previous "
                               "container's log (kubectl logs --previous) holds the crash.",
    "K8S_POD_EVENTS": "Read the warning events in order: failed probes, kills and evictions say "
                      "who restarted the pod and why.",
    "K8S_GROUP_RECREATE_RISK": "Capture before restarting any pod of the group: one pod's restart "
                               "recreates every member and destroys their evidence.",
    "K8S_DEBUG_CONTAINER_ADDED": "Nothing to undo now: the ephemeral container exited after the "
                                 "deadline; it stays listed in the pod spec until the pod goes.",
    "LOG_SIGNATURE": "Read the first cause line in context (the log in the bundle): aborts and "
                     "health-check failures that follow it are consequences.",
    "XID_ERRORS": "Xid 79, 48/94/95, 74 and 119/120 need the GPU drained and reset or the node "
                  "rebooted; other Xids are application faults: match the pid to a rank.",
    "PD_CONFIG_MISMATCH": "Give prefill and decode the same page size, KV dtype, transfer backend "
                          "and bootstrap port at the next restart of the mismatched server.",
    "REQUESTS_FROZEN": "Capture (stacks of every rank), then restart prefill and decode together: "
                       "a frozen server does not recover by itself.",
    "SCHEDULER_ENDPOINT_HANG": "Scheduler rank 0 is blocked: take py-spy dumps of every rank (look "
                               "for a collective or a CUDA sync), then restart the server and its "
                               "PD partner.",
    "GPU_IDLE_WITH_WORK": "Idle GPUs with queued work: the scheduler launches no batch; follow the "
                          "queue, stack and progress findings to where requests are held.",
    "DECODE_TRANSFER_STUCK": "KV never arrives from prefill: check the transfer backend between the "
                             "hosts (RDMA/IB, MC_*/NCCL_IB_* env) and 'Decode transfer failed'; "
                             "restart prefill and decode together.",
    "DECODE_PREALLOC_STUCK": "Decode cannot preallocate KV memory or never bootstraps: check decode "
                             "token usage and the bootstrap with prefill; restart the pair.",
    "PREFILL_BOOTSTRAP_STUCK": "Decode never pairs with prefill: check the bootstrap port and "
                               "address decode uses and the router's pairing; restart the pair.",
    "PREFILL_INFLIGHT_STUCK": "KV transfers sent by prefill never complete: check the transfer "
                              "backend and the decode side; restart prefill and decode together.",
    "KV_TRANSFER_FAILURES": "Match the failures with 'Decode transfer failed' / 'Prefill bootstrap "
                            "failed' log lines; rising failures with frozen queues are a wedge.",
    "KV_CACHE_PRESSURE": "Overload, not a wedge: shed load or lower --max-running-requests and "
                         "--mem-fraction-static; no restart needed.",
    "SCHEDULER_PROBE_HANG": "Take py-spy dumps of every scheduler rank and the detokenizer; point "
                            "liveness probes at /health_generate, not /health.",
    "ENDPOINT_HANG": "The server's HTTP process is stuck or starved: dump its main process and "
                     "tokenizer manager with py-spy, check the host's load and memory.",
    "SERVER_NOT_READY": "Find who paused it (POST /pause_generation, an RL weight update) or why a "
                        "health check failed in its log; POST /continue_generation resumes a pause.",
    "NCCL_COLLECTIVE_TIMEOUT": "Look at the rank behind (lowest last completed SeqNum): its stack, GPU and host; turn"
                               " on Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE, "
                               "TORCH_NCCL_DUMP_ON_TIMEOUT=1) and capture with --nccl-ras; restart the server.",
    "NCCL_WATCHDOG_STUCK": "A CUDA or NCCL call hung inside that rank: take its native stacks (py-spy --native, gdb),"
                           " check its GPU (Xids), then restart the server.",
    "RANK_MISSING_FROM_COLLECTIVE": "Read that rank's Python stack: where it went instead of the collective; check "
                                    "its host and GPU, then restart the server.",
    "NCCL_RAS_REPORT": "Ranks RAS reports missing, dead or behind are the suspects; RUNNING/OK during a timeout means"
                       " every rank is inside NCCL, waiting on the collective.",
    "NCCL_NETWORK_ERROR": "Check the link and the peer NCCL names (ibstat, the switch port; RDMA device limits for "
                          "set-up failures); drain the host if the link is failing.",
    "KERNEL_WAITS_ON_PEERS": "The ranks without the collective kernel never launched it: read their Python stacks to "
                             "see where they are instead.",
    "GPU_XID": "Follow the Xid's action: 79, 48/94/95, 74 and 119/120 need the GPU drained and reset or the node "
               "rebooted; application Xids (13, 31, 43): match the pid to a rank.",
    "GPU_LOST": "Drain the host: a GPU off the bus needs a reset or a reboot (the vendor if it comes back); restart "
                "the server elsewhere.",
    "PCIE_AER": "Uncorrected errors: drain the host and reseat or replace the device; corrected errors that repeat: "
                "schedule the link for service.",
    "HOST_OOM_KILL": "Find what used the host's memory (the killed process, its RSS); lower the server's memory use "
                     "or move other work off the host, then restart the killed server and its partner.",
    "LOAD_SNAPSHOT": "A stale load snapshot that still shows work means the scheduler stopped iterating: take py-spy "
                     "dumps of its ranks; do not route by that load.",
    "SCHEDULER_WATCHDOG": "Read the stack the watchdog dumped (a collective: find the rank behind; a CUDA sync: check"
                          " the GPU); restart prefill and decode together.",
    "TRANSFER_ENGINE_ERROR": "Check the transfer backend between the hosts (RDMA/IB devices, MC_*/NIXL/UCX env, the "
                             "peer's address) at the stage named; restart prefill and decode together.",
    "PROCESS_STATE": "A dead rank leaves its peers waiting forever: read its last log lines "
                     "(exception, CUDA/NCCL error, OOM), check Xids, restart the server and partner.",
    "RESTART_ORDER": "A server restarted alone re-pairs badly: restart router, prefill and decode "
                     "in the documented order (prefill and decode first, router last).",
    "RANK_OUTLIER": "The odd rank out is the suspect: read its stack where it diverges (a "
                    "collective, a CUDA sync, I/O), check its GPU and host, restart the server.",
    "ALL_RANKS_STUCK": "Every rank waits in the same frame: look at what they wait for (KV "
                       "transfer, a collective peer, the other role), then restart the PD pair.",
    "PYSPY_UNAVAILABLE": "Fix py-spy access for the next capture: install it, capture as root or "
                         "with sudo, or grant CAP_SYS_PTRACE (pdforensics doctor checks this).",
    "STRANDED_BOOTSTRAP": "Find why decode's leg failed (the cited decode lines); lower "
                          "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT so prefill frees the room sooner.",
    "PREALLOC_LEAK": "Check decode memory (--mem-fraction-static, --max-running-requests, CUDA "
                     "graph sizes); restart the decode server to free the queue.",
    "FORGOTTEN_REQUESTS": "Look at the stage the requests stopped in; abort them (/abort_request) "
                          "or restart that server; check the PD timeouts are set.",
    "ROUTER_NO_WORKERS": "Give the router a working worker of the role it lacks: restart the "
                         "failing server (capture first) or register a healthy one (POST /workers).",
    "ROUTER_BREAKER_OPEN": "Read the failing worker's log around its first error and its "
                           "/health_generate; the breaker closes once it answers again.",
    "DECODE_ONLY_DISPATCH": "Check the router's /workers (prefill registered, healthy, breaker "
                            "closed) and its --prefill URLs and bootstrap ports.",
    "SAFEGUARDS_DISABLED": "Restore the PD timeouts and --watchdog-timeout (300 s defaults) at the "
                           "next restart, so a wedge ends in an error instead of forever.",
}

#: each need -> the evidence it means, in an operator's words
NEED_EVIDENCE: dict[Need, str] = {
    Need.SERVERS: "an SGLang server found on a host",
    Need.METRICS: "/metrics from a server",
    Need.SAMPLES2: "two /metrics samples >= 1 s apart (counters that move or not)",
    Need.PD: "both a prefill and a decode server",
    Need.PROCESSES: "the SGLang process table (ps)",
    Need.STACKS: "py-spy stack dumps of the scheduler ranks",
    Need.GPUS: "GPU state (nvidia-smi)",
    Need.LOGS: "a server log (journald or a log file)",
    Need.SERVER_INFO: "/server_info of a server",
    Need.PROBES: "the /health_generate probe",
    Need.CLOCK: "each host's clock (date +%s.%N)",
    Need.CLIENT_DUMPS: "a client's goroutine dump (--client-dump)",
    Need.ROUTER: "the router's /metrics or its log",
    Need.ROW_REMAP: "nvidia-smi -q -d ROW_REMAPPER",
    Need.NVLINK: "nvidia-smi nvlink -e",
    Need.KERNEL_LOG: "the kernel log (dmesg)",
    Need.BENEATH: "a server log, a Flight Recorder dump or an NCCL RAS report (NCCL, transfer engine)",
    Need.CUDA: "a cuda-gdb listing of the ranks' kernels (capture --deep)",
}
#: rules with no declared needs read these
EXTRA_EVIDENCE = {
    "K8S": "the pod objects and events (capture --k8s)",
}
