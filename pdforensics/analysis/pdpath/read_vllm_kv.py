"""vLLM's KV connector lines in a disaggregated deployment: the V1 scheduler and its NIXL and
Mooncake connectors (vllm v1/core/sched/scheduler.py, kv_connector/v1/nixl_connector.py,
vllm-ascend's mooncake_connector.py).

- "<rid> is still in WAITING_FOR_REMOTE_KVS state." (the scheduler, at debug level): the
  request's KV was to come from the remote (prefill) instance and has not arrived. The
  scheduler prints it again on every step it waits, so the line says where requests stop
  (decode's transfer wait) but not why: a consequence. Printed again and again for one
  request, that request is held: it is the one to follow on both sides.
- A connector reporting it completed no transfer at all ("Number of completed KV cache send
  requests: 0, receive requests: 0") while requests wait: the transfer engine carried nothing,
  so it is the side to look at before prefill.
- "Releasing expired KV blocks for request X which were retrieved by 0 decode worker(s) within
  120 seconds" (the NIXL connector on prefill; vllm-ascend's Mooncake connector: "Force freed
  expired request X"): the KV waited at prefill and no decode read it: a consequence at the
  KV send, on prefill; whether decode never asked or the transfer failed is not said. When a
  decode worker then read the freed blocks ("Potentially invalid KV blocks for unrecognized
  request X were retrieved by a decode worker"), prefill freed them too early (its lease ran
  out first): the release is the cause, the stale read its consequence.
- "Handshake failed for request X" (the NIXL connector on decode): the metadata handshake
  with the prefill instance failed, before any transfer: a consequence at prefill's
  bootstrap (the exception printed before it is the cause).
- "NIXL transfer failure: <reason>" (the NIXL connector, decode's side, which reads the KV
  from prefill) and "Skipping KV post-processing for failed request": a transfer or handshake
  that failed, reported after its cause (the exception printed near it): consequences at
  decode's transfer wait.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Side, Stage
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.journal import parse_rank
from pdforensics.parsers.linescan import first_lines_with, has_any, marks
from pdforensics.parsers.logtime import parse_log_timestamp

_WAITING = linear.compile(r"(\S{1,200}) is still in WAITING_FOR_REMOTE_KVS state")
_NOTHING_DONE = linear.compile(r"completed KV cache send requests: 0, receive requests: 0\b")
#: the layerwise connector: no receive completed of the N a worker waits for
_RECV_PENDING = linear.compile(r"completed KV cache recv requests: 0, receive requests: [1-9]")
_FAILED = ("NIXL transfer failure", "Skipping KV post-processing for failed request")
#: the connector on prefill freeing KV blocks no decode worker read in time (NIXL's,
#: vllm-ascend's Mooncake connector's)
_EXPIRED = ("Releasing expired KV blocks for request", "Force freed expired request")
#: a decode worker reading blocks prefill had already freed
_STALE = "were retrieved by a decode worker"
#: the NIXL connector on decode: its metadata handshake with the prefill instance failed
_HANDSHAKE = "Handshake failed for request"
_WORDS = ("WAITING_FOR_REMOTE_KVS", "completed KV cache send requests",
          "completed KV cache recv requests", *_EXPIRED, _STALE, *_FAILED, _HANDSHAKE)
_MARKS = marks(*_WORDS)
_HELD = 2  # the same request reported waiting this many times: it is held
_MAX_LINES = 200
_MAX_TEXT = 500
_SKIP_KINDS = ("metrics", "server_info", "load", "goroutines")


@reader("vllm_kv_connector")
def vllm_kv_clues(src: Source) -> Iterator[Clue]:
    """Requests waiting for remote KV, connectors that moved none, NIXL transfer failures
    (consequences at decode's transfer wait; see the module docstring)."""
    if not src.text or src.kind in _SKIP_KINDS or not has_any(src.text, _MARKS):
        return
    found = first_lines_with(src.text, _WORDS, _MAX_LINES)
    waits = Counter(m.group(1) for _, line in found if (m := _WAITING.search(line)))
    idle_engine = any(_NOTHING_DONE.search(line) for _, line in found)
    stale = any(_STALE in line for _, line in found)
    held = [rid for rid, n in waits.items() if n >= _HELD]
    side: Side = "transfer_engine" if idle_engine else "prefill"
    for no, line in found:
        m = _WAITING.search(line)
        if m is not None:
            rid = m.group(1)
            yield _clue(src, "VLLM_WAITING_FOR_REMOTE_KVS", no, line, side=side, rids=(rid,),
                        suspect=rid if len(held) == 1 and rid in held else None,
                        wedge=True if rid in held else None,
                        why="vLLM's scheduler: the request's KV from the remote instance has "
                            "not arrived" + (" (no transfer completed at all: the transfer "
                                             "engine carried nothing)" if idle_engine else ""))
        elif _NOTHING_DONE.search(line) and waits:
            yield _clue(src, "KV_CONNECTOR_IDLE", no, line, side="transfer_engine", wedge=True,
                        why="the KV connector completed no send and no receive while requests "
                            "wait for KV")
        elif _RECV_PENDING.search(line):
            yield _clue(src, "KV_RECV_PENDING", no, line, strength=1, side=NOT_ESTABLISHED,
                        why="the KV connector completed none of the receives it waits for: "
                            "decode waits for KV (whether prefill sent it is not said)")
        elif any(w in line for w in _EXPIRED):
            yield Clue(key="NIXL_KV_EXPIRED", label="cause" if stale else "consequence",
                       text=line.strip()[:_MAX_TEXT], source=src.path, line=no,
                       time=parse_log_timestamp(line), role=src.role, host=src.host,
                       rank=parse_rank(line), stage="kv_send", side="prefill", wedge=False,
                       strength=2 if stale else 1,
                       why="the KV connector on prefill freed KV blocks no decode worker read "
                           "in time: " + ("a decode worker read them afterwards, so prefill "
                                          "freed them too early (its lease ran out first)"
                                          if stale else "decode never fetched them, or the "
                                          "transfer never completed"))
        elif _STALE in line:
            yield _clue(src, "KV_READ_AFTER_FREE", no, line, strength=1, side="prefill",
                        stage="kv_send", wedge=False,
                        why="a decode worker read KV blocks prefill had already freed: the "
                            "request was served on blocks that may have been reused")
        elif _HANDSHAKE in line:
            yield _clue(src, "NIXL_HANDSHAKE_FAILED", no, line, side="prefill", wedge=False,
                        stage="prefill_bootstrap",
                        why="vLLM's NIXL connector on decode could not get the prefill "
                            "instance's metadata (its side-channel handshake): the request "
                            "stops before its KV transfer; the exception printed before it "
                            "says why")
        elif any(w in line for w in _FAILED):
            yield _clue(src, "NIXL_TRANSFER_FAILED", no, line, side="decode", wedge=False,
                        why="vLLM's NIXL connector reports a failed transfer or handshake; "
                            "what failed is the error printed near it")


def _clue(src: Source, key: str, no: int, line: str, strength: int = 2,
          stage: Stage = "decode_transfer_wait", **kw: object) -> Clue:
    return Clue(key=key, label="consequence", text=line.strip()[:_MAX_TEXT], source=src.path,
                line=no, time=parse_log_timestamp(line), role=src.role, host=src.host,
                rank=parse_rank(line), stage=stage, strength=strength,
                **kw)  # type: ignore[arg-type]
