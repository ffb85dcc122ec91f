"""The one table of renamed SGLang metrics, and name canonicalisation.

Every other module maps metric names through `canonical_metric`; nobody else keeps
its own alias table.
"""

from __future__ import annotations

from collections.abc import Container

# Old exposed name -> new exposed name (what the newest catalog calls it).
METRIC_ALIASES: dict[str, str] = {
    # PD prefill bootstrap queue: "prealloc" on prefill was renamed "bootstrap".
    # (0.5.9 declares the old name, 0.5.15 and later the new one).
    "sglang:num_prefill_prealloc_queue_reqs": "sglang:num_prefill_bootstrap_queue_reqs",
    # GPU busy time became forward-pass time (same `category` labels; 0.5.9 -> 0.5.15).
    "sglang:gpu_execution_seconds_total": "sglang:forward_execution_seconds_total",
    "sglang:dp_cooperation_gpu_execution_seconds_total":
        "sglang:dp_cooperation_forward_execution_seconds_total",
}

_ENGINE_PREFIX = "sglang:"
_REEXPORT_PREFIX = "sglang_"  # router / gateway re-export of engine metrics

# Suffixes prometheus_client adds to samples of a family, longest first.
SAMPLE_SUFFIXES: tuple[str, ...] = ("_bucket", "_created", "_count", "_total", "_sum", "_gsum",
                                    "_gcount")


def canonical_metric(name: str) -> str:
    """Map `sglang_X` (router re-export) to `sglang:X`, then old names to new ones."""
    name = name.strip()
    if name.startswith(_REEXPORT_PREFIX):
        name = _ENGINE_PREFIX + name[len(_REEXPORT_PREFIX):]
    return METRIC_ALIASES.get(name, name)


def metric_family(sample: str, families: Container[str]) -> str | None:
    """The family in `families` a sample name such as `X_bucket` belongs to, or None."""
    if sample in families:
        return sample
    for suffix in SAMPLE_SUFFIXES:
        if sample.endswith(suffix):
            base = sample[: -len(suffix)]
            if base in families:
                return base
            canonical = canonical_metric(base)
            if canonical in families:
                return canonical
            # counters are keyed by their `_total` name; `_created` hangs off the base
            if base + "_total" in families:
                return base + "_total"
    return None
