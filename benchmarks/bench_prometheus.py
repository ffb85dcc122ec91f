"""Parse 50k /metrics samples: our parser vs prometheus_client's, measured in the same run."""

from __future__ import annotations

import time

from prometheus_client.parser import text_string_to_metric_families

from pdforensics.parsers.prometheus import parse_metrics


def main() -> None:
    lines = ["# TYPE sglang:time_to_first_token_seconds histogram"]
    for i in range(50_000):
        lines.append(f'sglang:time_to_first_token_seconds_bucket{{engine_type="decode",'
                     f'tp_rank="{i % 8}",le="{i % 13}.0"}} {i}.0')
    text = "\n".join(lines)

    def best(fn: object) -> float:
        times = []
        for _ in range(3):
            t0 = time.process_time()
            fn()  # type: ignore[operator]
            times.append(time.process_time() - t0)
        return min(times)

    ours = best(lambda: parse_metrics(text))
    base = best(lambda: [s for f in text_string_to_metric_families(text) for s in f.samples])
    print(f"pdforensics parse_metrics: {ours:.3f} s CPU for 50k samples")
    print(f"prometheus_client parser:  {base:.3f} s CPU")
    print(f"ratio (baseline / ours): {base / ours:.1f}x")


if __name__ == "__main__":
    main()
