"""The summary SGLang's accuracy benchmarks print (benchmark/gsm8k, mmlu, ... bench_sglang.py;
few_shot_gsm8k): ``Accuracy: 0.780``, then ``Invalid:``, ``Latency: 8.718 s`` and ``Output
throughput:``. A text holding one is a finished benchmark run."""

from __future__ import annotations

from pdforensics import linear

EVAL_SUMMARY = linear.compile(r"^Accuracy: \d{1,3}\.\d{1,6}\s*\n(?:Invalid: [\d.]{1,12}\s*\n)?"
                              r"Latency: [\d.]{1,12} s", linear.M)
#: one summary's accuracy line
EVAL_DONE = linear.compile(r"^Accuracy: (\d{1,3}\.\d{1,6})\s*$")
