"""The rules' conclusions as clues: a critical finding (or one resting on evidence across time)
is placed on the path by what its rule measures; its first evidence file is where it points.

Which stage and side each key means (the rule docs, docs/rules.md):
- a frozen PD queue: decode's transfer queue waits for KV prefill never sends (look at
  prefill), decode's prealloc queue for KV slots (decode), prefill's bootstrap queue for
  decode's handshake (decode), prefill's inflight queue for the transfer to finish (the
  transfer engine);
- frozen progress, a hung /server_info or /health_generate: that server's forward;
- one rank out of step (RANK_OUTLIER): that rank; every rank stuck: the collective;
- the router: breakers open, requests sent to decode only;
- Xid errors: the GPU (never a wedge by themselves: the GPU failed, requests got errors).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pdforensics import linear
from pdforensics.analysis.findings import Evidence, Finding
from pdforensics.analysis.pdpath.model import Clue

#: key -> (stage or "forward" for the subject's own forward, side or "role", strength)
FINDING_PLACE: dict[str, tuple[str | None, str | None, int]] = {
    "DECODE_TRANSFER_STUCK": ("decode_transfer_wait", "prefill", 3),
    "DECODE_PREALLOC_STUCK": ("decode_prealloc", "decode", 2),
    "PREFILL_BOOTSTRAP_STUCK": ("prefill_bootstrap", "decode", 2),
    "PREFILL_INFLIGHT_STUCK": ("kv_send", "transfer_engine", 2),
    "REQUESTS_FROZEN": ("forward", "role", 2),
    "SCHEDULER_ENDPOINT_HANG": ("forward", "role", 2),
    "SCHEDULER_PROBE_HANG": ("forward", "role", 2),
    "RANK_OUTLIER": ("forward", "role", 3),
    "ALL_RANKS_STUCK": ("forward", "collective", 2),
    "PROCESS_STATE": (None, "role", 2),
    # decode failed first and prefill kept the room: decode's side unless decode's own failure
    # line says why (a KV waiting timeout points at prefill, strength 2): weaker than that
    "STRANDED_BOOTSTRAP": ("prefill_bootstrap", "decode", 1),
    "PREALLOC_LEAK": ("decode_prealloc", "decode", 3),
    "FORGOTTEN_REQUESTS": (None, None, 1),
    "ROUTER_BREAKER_OPEN": ("router_dispatch", "router", 2),
    "DECODE_ONLY_DISPATCH": ("router_dispatch", "router", 3),
    "GPU_XID": (None, "gpu", 2),  # the kernel-log reader places each Xid itself (strength 3)
    # beneath SGLang (rules/collective.py): read across ranks and files, the suspect named
    "NCCL_COLLECTIVE_TIMEOUT": (None, "collective", 2),
    "NCCL_WATCHDOG_STUCK": (None, "collective", 2),
    "RANK_MISSING_FROM_COLLECTIVE": (None, "collective", 3),
    "KERNEL_WAITS_ON_PEERS": (None, "collective", 2),
    "GPU_IDLE_WITH_WORK": (None, "role", 1),
}
_ROLES = ("prefill", "decode", "router")
_RANK = linear.compile(r"rank (\S{1,40}) sits in|scheduler ((?:DP\d{1,4}_)?(?:PP\d{1,4}_)?TP\d{1,4}) pid \d{1,10} is ")


def _role(f: Finding) -> str | None:
    return next((r for r in _ROLES if f.subject and f" {r}:" in f" {f.subject}"), None)


def _source(f: Finding) -> str:
    return next((e.path for e in f.evidence if isinstance(e, Evidence) and e.path), "analysis")


def finding_clues(findings: Sequence[Finding]) -> Iterator[Clue]:
    """Critical or wedge findings as causes placed on the path."""
    for f in findings:
        if not (f.wedge or f.severity == "critical") or f.key not in FINDING_PLACE:
            continue
        where, side, strength = FINDING_PLACE[f.key]
        role = _role(f)
        stage: str | None = where
        if where == "forward":
            stage = f"{role}_forward" if role in ("prefill", "decode") else None
        if side == "role":
            side = role
        m = _RANK.search(f.title) if f.key in ("RANK_OUTLIER", "PROCESS_STATE") else None
        suspect = f.suspect or ((m.group(1) or m.group(2)) if m else None)
        yield Clue(key=f.key, label="cause", text=f.title, source=_source(f), role=role,
                   stage=stage, side=f.side or side,  # type: ignore[arg-type]
                   suspect=suspect, wedge=True if f.wedge else None,
                   strength=max(strength, 3) if f.suspect else strength,
                   why=f"the rule {f.key}: {f.next_step[:160]}")

