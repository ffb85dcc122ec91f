"""The wedge signature: analysis rules over the last two polls of one server."""

from __future__ import annotations

from pathlib import Path

from pdforensics.prometheus.http_get import HttpGot
from pdforensics.watch.poll import Reading
from pdforensics.watch.signature import judge, service_view
from pdforensics.watch.targets import WatchTarget

DATA = Path(__file__).resolve().parents[1] / "data"
DECODE = WatchTarget("decode-0", "decode", "server", 30001, "127.0.0.1")


def text(gen: float, transfer_q: float = 0, failed: float = 0, running: float = 0) -> str:
    lab = 'engine_type="decode",tp_rank="{r}",dp_rank="0"'
    lines = []
    for r in (0, 1):
        lb = lab.format(r=r)
        lines += [f"sglang:num_running_reqs{{{lb}}} {running}",
                  f"sglang:num_decode_transfer_queue_reqs{{{lb}}} {transfer_q}",
                  f'sglang:realtime_tokens_total{{{lb},mode="decode"}} {gen}',
                  f'sglang:forward_execution_seconds_total{{{lb},category="decode"}} {gen / 1000}',
                  f"sglang:num_transfer_failed_reqs_total{{{lb}}} {failed}"]
    lines.append(f'sglang:generation_tokens_total{{engine_type="decode"}} {gen}')
    return "\n".join(lines) + "\n"


def readings(*bodies: str, status: int = 200, every: float = 10.0) -> list[Reading]:
    ep = DECODE.endpoints()[0]
    return [Reading(ep, HttpGot(ep.url, 1000.0 + i * every, 0.01, status, b.encode(), None))
            for i, b in enumerate(bodies)]


def verdict(rs: list[Reading]) -> tuple[str, ...] | None:
    view = service_view(DECODE, [r.sample(i) for i, r in enumerate(rs)])
    s = judge("lab", view, [])
    return s.keys if s is not None else None


def test_frozen_transfer_queue_is_a_wedge_signature() -> None:
    keys = verdict(readings(text(5e6, transfer_q=14), text(5e6, transfer_q=14)))
    assert keys is not None
    assert "DECODE_TRANSFER_STUCK" in keys and "REQUESTS_FROZEN" in keys


def test_progress_with_a_small_queue_is_not() -> None:
    assert verdict(readings(text(5e6, transfer_q=1, running=20),
                            text(5.1e6, transfer_q=2, running=22))) is None


def test_idle_server_is_not() -> None:
    assert verdict(readings(text(5e6), text(5e6))) is None


def test_rising_transfer_failures_are_a_signature_even_with_progress() -> None:
    keys = verdict(readings(text(5e6, failed=3, running=20), text(5.1e6, failed=9, running=20)))
    assert keys == ("KV_TRANSFER_FAILURES",)


def test_one_poll_is_never_enough() -> None:
    assert verdict(readings(text(5e6, transfer_q=14))) is None


def test_a_failed_scrape_gives_no_sample() -> None:
    rs = readings(text(5e6, transfer_q=14), "", status=503)
    assert rs[1].sample(1).snapshot is None
    assert verdict(rs) is None


def test_real_sglang_exposition_of_a_wedged_decode() -> None:
    body = (DATA / "prom_sglang_decode_wedged.txt").read_text()
    keys = verdict(readings(body, body))
    assert keys is not None and "DECODE_TRANSFER_STUCK" in keys


def test_suspicion_starts_at_the_first_sample_of_the_window() -> None:
    rs = readings(text(5e6, transfer_q=14), text(5e6, transfer_q=14))
    s = judge("lab", service_view(DECODE, [r.sample(i) for i, r in enumerate(rs)]), [])
    assert s is not None and s.since == 1000.0 and s.target == "decode-0 decode:30001"
