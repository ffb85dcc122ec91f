"""How much a change matters to a wedge: scheduling- and transfer-relevant first."""

from __future__ import annotations

# Flags named in the issue: the scheduler's and the KV transfer's own knobs.
TOP_FLAGS = frozenset({
    "--cuda-graph-max-bs", "--mem-fraction-static", "--max-running-requests",
    "--chunked-prefill-size", "--schedule-policy", "--schedule-conservativeness",
    "--max-total-tokens", "--disable-overlap-schedule", "--enable-overlap-schedule",
})
# Words that make any other flag scheduling-, memory- or transfer-relevant.
HOT_FLAG_WORDS = ("cuda-graph", "mem-fraction", "max-running", "chunked-prefill", "schedule",
                  "max-total-tokens", "max-prefill-tokens", "overlap", "disaggregation",
                  "transfer", "bootstrap", "kv-cache", "page-size", "tp-size", "dp-size",
                  "ep-size", "pp-size", "policy", "watchdog", "timeout", "attention-backend",
                  "pd-", "prefill", "decode", "nccl", "ib-device")
QUIET_FLAG_WORDS = ("log", "show-time-cost", "enable-metrics", "served-model-name",
                    "crash-dump", "trace", "otlp", "api-key", "file-storage")
HOT_ENV_PREFIXES = ("SGLANG_", "NCCL_", "UCX_", "MC_")
WARM_ENV_PREFIXES = ("CUDA_", "TORCH_", "PYTORCH_", "GLOO_", "MOONCAKE", "NVSHMEM_", "NIXL_",
                     "TRITON_", "FLASHINFER_", "LD_LIBRARY_PATH", "LD_PRELOAD", "OMP_")
HOT_PACKAGES = frozenset({
    "sglang", "sgl-kernel", "sglang-router", "sgl-model-gateway", "torch", "flashinfer-python",
    "flashinfer-cubin", "mooncake-transfer-engine", "nixl", "nvidia-nccl-cu12",
    "nvidia-nccl-cu13", "triton", "deep-ep", "deep-gemm", "cuda-python", "xgrammar",
    "transformers",
})

HIGH = 80
MEDIUM = 40


def label(score: int) -> str:
    """high | medium | low."""
    return "high" if score >= HIGH else "medium" if score >= MEDIUM else "low"


def flag_score(name: str, known: bool) -> int:
    if name in TOP_FLAGS:
        return 100
    if any(w in name for w in QUIET_FLAG_WORDS):
        return 15
    if any(w in name for w in HOT_FLAG_WORDS):
        return 88
    return 50 if known else 45


def env_score(name: str) -> int:
    if name.startswith(HOT_ENV_PREFIXES):
        return 95
    if name.startswith(WARM_ENV_PREFIXES):
        return 60
    return 20


def package_score(name: str) -> int:
    if name in HOT_PACKAGES or name.startswith(("nvidia-", "sgl")):
        return 85 if name in HOT_PACKAGES else 55
    return 30


KIND_SCORES = {
    "sglang_version": 98, "service": 93, "host": 93, "layout": 92, "driver": 70, "cuda": 70,
    "unit": 55, "kernel": 50,
}
# A setting now written out explicitly but equal to sglang's default changes nothing.
SAME_AS_DEFAULT = 10
