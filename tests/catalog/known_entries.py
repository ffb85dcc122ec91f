"""Assertions on known sglang 0.5.23 entries, shared by the online and offline tests."""

from __future__ import annotations

from pdforensics.catalog.model import Catalog

# The PD names of /work/shared/DESIGN.md, as exposed on /metrics.
PD_GAUGES = (
    "sglang:num_prefill_bootstrap_queue_reqs",
    "sglang:num_prefill_inflight_queue_reqs",
    "sglang:num_decode_prealloc_queue_reqs",
    "sglang:num_decode_transfer_queue_reqs",
    "sglang:token_usage",
    "sglang:num_retracted_reqs",
    "sglang:prealloc_full_token_usage",
)
PD_COUNTERS = (
    "sglang:num_transfer_failed_reqs_total",
    "sglang:num_bootstrap_failed_reqs_total",
    "sglang:generation_tokens_total",
    "sglang:realtime_tokens_total",
    "sglang:forward_execution_seconds_total",
    "sglang:scheduler_idle_seconds_total",
)


def check_known_entries(cat: Catalog) -> None:
    assert cat.version == "0.5.23"
    # --cuda-graph-max-bs was split into -decode / -prefill and the old spelling dropped
    # by 0.5.23 (0.5.15 still had it as a deprecated alias): the catalog must not know it.
    assert not cat.knows_flag("--cuda-graph-max-bs")
    for name in ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill"):
        info = cat.flag(name)
        assert info is not None and info.type == "int" and info.default is None
        assert info.help and "cuda graph" in info.help
    mem = cat.flag("--mem-fraction-static")
    assert mem is not None and mem.type == "float" and mem.default is None
    assert mem.help and "static allocation" in mem.help
    mode = cat.flag("--disaggregation-mode")
    assert mode is not None
    assert mode.choices == ("null", "prefill", "decode") and mode.default == "null"
    assert cat.flag("--disaggregation-mode=decode") == mode
    assert cat.flag("disaggregation_mode") == mode
    wd = cat.flag("--watchdog-timeout")
    assert wd is not None and wd.default == 300
    em = cat.flag("--enable-metrics")
    assert em is not None and em.action == "store_true" and em.default is False
    tp = cat.flag("--tensor-parallel-size")
    assert tp is not None and tp.name == "--tp-size" and tp.default == 1
    env = cat.env("SGLANG_DISAGGREGATION_WAITING_TIMEOUT")
    assert env is not None and env.type == "int" and env.default == 300
    for name, default in (("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", 300),
                          ("SGLANG_DISAGGREGATION_HEARTBEAT_INTERVAL", 5.0),
                          ("SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE", 2)):
        e = cat.env(name)
        assert e is not None and e.default == default, name
    m = cat.metric("sglang:num_decode_transfer_queue_reqs")
    assert m is not None and m.type == "gauge"
    assert m.help == "The number of requests in the decode transfer queue."
    for g in PD_GAUGES:
        assert cat.metrics[g].type == "gauge", g
    for c in PD_COUNTERS:
        assert cat.metrics[c].type == "counter", c
    # renamed metric resolves through the alias table, re-export form too
    old = cat.metric("sglang_num_prefill_prealloc_queue_reqs")
    assert old is not None and old.name == "sglang:num_prefill_bootstrap_queue_reqs"
