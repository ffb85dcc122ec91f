"""The KV transfer engine (Mooncake, NIXL / UCX): its errors, placed on the PD stage they
break -- prefill's KV send, or decode waiting for that KV when its own log shows them."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.beneath_view import log_readings
from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.parsers.transfer_engine import TransferError

#: what an operator does about each kind of transfer error
_NEXT = {
    "write": "a failed write on the sender: an errno such as Bad address (EFAULT) means the buffer "
             "is not memory the transport can read (GPU memory over Mooncake's TCP transport: use "
             "RDMA, or a build whose TCP transport stages GPU memory)",
    "read_eof": "the peer closed the connection: the failure is on the other side, read its log",
    "read": "a failed read: read the peer's log at the same second",
    "rdma_completion": "an RDMA work completion failed: 'transport retry counter exceeded' is an "
                       "unreachable peer NIC (link, GID / route, the peer's process gone); a "
                       "flushed request follows an earlier error on the same queue pair",
    "handshake": "the transfer engines could not handshake: check the peer is up and its RPC "
                 "port reachable from this host",
    "metadata": "the peer's segment is unknown to the metadata service: the peer never "
                "registered (or restarted) -- check the metadata server and the peer's start-up",
    "register": "the transfer engine could not register memory or install its transport at "
                "start-up: the RDMA device, ulimit -l, or the protocol setting",
    "crash": "the transfer engine crashed in the transport (a signal in UCX): the backtrace "
             "names the transport; check its version and the transport selection (UCX_TLS)",
    "error": "read the error in context of the transfer engine's log",
}


def stage_of(e: TransferError, role: str | None) -> str:
    """The PD stage an error breaks, seen from the service whose log holds it."""
    if e.stage == "startup":
        return "startup"
    return "decode_transfer_wait" if role == "decode" else "kv_send"


@rule("TRANSFER_ENGINE_ERROR", needs=(Need.BENEATH,), rank=17)
def transfer_engine_error(ctx: Context) -> Iterator[Finding]:
    """Mooncake / NIXL / UCX errors in a server's log: the KV transfer failed; the stage it
    breaks (kv_send, decode_transfer_wait, start-up) and what followed from it."""
    for log in log_readings(ctx.capture):
        errs = log.beneath.transfer
        causes = [e for e in errs if e.label == "cause"]
        if not causes:
            continue
        role = log.service.role if log.service.role in ("prefill", "decode") else None
        stages = sorted({stage_of(e, role) for e in causes})
        kinds = list(dict.fromkeys(e.kind for e in causes))
        details = list(dict.fromkeys(e.detail for e in causes if e.detail))
        engines = sorted({e.engine for e in causes})
        peers = sorted({e.peer for e in causes if e.peer})
        title = (f"{log.service.label}: {'/'.join(engines)} transfer error(s) x{len(causes)}: "
                 f"{'; '.join(details[:3])} -- breaks {', '.join(stages)}")
        ev: list[Evidence | str] = [log.evidence(f"{e.engine} ({e.label})", e.lineno, e.text)
                                    for e in (causes[:5] + [x for x in errs if x.label ==
                                                            "consequence"][:3])]
        if peers:
            ev.append(f"peers named: {', '.join(peers[:6])}")
        yield Finding(
            "TRANSFER_ENGINE_ERROR", "critical", title, tuple(ev),
            "; ".join(_NEXT.get(k, _NEXT["error"]) for k in kinds[:2]) + ".",
            section="logs", rank=17, subject=log.service.label)
