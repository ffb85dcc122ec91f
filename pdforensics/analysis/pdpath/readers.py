"""Every reader module, imported once so its `@reader` functions register (explicit list:
add one import per module)."""

from pdforensics.analysis.pdpath import (  # noqa: F401
    read_collective,
    read_engine,
    read_errors,
    read_go,
    read_host,
    read_host_faults,
    read_http,
    read_k8s_events,
    read_nccl_coll,
    read_proxy,
    read_python,
    read_ray,
    read_router,
    read_rust,
    read_scrapes,
    read_sglang,
    read_signals,
    read_stacks,
    read_startup,
    read_vllm_engine,
    read_vllm_kv,
    read_vllm_stats,
)
