"""Small helpers for the lab tests: scrape, find ranks, py-spy."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
from prometheus_client.parser import text_string_to_metric_families

PY_SPY = str(Path(sys.executable).with_name("py-spy"))


def fetch(url: str, timeout: float = 5.0) -> tuple[int, str, bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.headers.get("content-type", ""), resp.read()


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Sample name + sorted labels -> value, parsed with prometheus_client's parser."""
    _status, _ctype, body = fetch(url + "/metrics")
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def values(samples: dict, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def total(samples: dict, name: str) -> float:
    return sum(values(samples, name).values())


def rank_pid(server_pid: int, title: str) -> int:
    for child in psutil.Process(server_pid).children():
        if " ".join(child.cmdline()).strip() == title:
            return child.pid
    raise AssertionError(f"no child titled {title!r} under {server_pid}")


def py_spy(pid: int) -> str:
    res = subprocess.run([PY_SPY, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return res.stdout


def main_thread(dump: str) -> str:
    """The MainThread block of a py-spy dump."""
    block = dump.split('"MainThread"', 1)[1]
    return block.split("\nThread ", 1)[0]


def wait_for(check, timeout: float = 5.0, interval: float = 0.1) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(interval)
    return bool(check())
