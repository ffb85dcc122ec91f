"""The whole story against a real Prometheus scraping the lab and the watcher.

A minute healthy (no capture), then transfer-stuck: watch captures exactly once within
--for + 2 polls, verdict WEDGED, the hook ran, the bundle holds the Prometheus history, and
the alert rule from examples/ fires in that same Prometheus. About 2 minutes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pdforensics.bundle.ondisk import load_bundle, verify_bundle
from pdforensics.cli import main
from pdforensics.lab import lab_down, lab_up, set_fault
from pdforensics.lab.core import LabInfo
from pdforensics.prometheus.history import load_history
from pdforensics.report.history_chart import build_history
from pdforensics.store.index import open_index
from pdforensics.views.loaded import load_capture
from tests.support import ports
from tests.watch.watch_servers import ALERTS, Prometheus, retry_in_use

pytestmark = [pytest.mark.lab, pytest.mark.slow]

BASE = ports.block()  # the lab's block, found free at run time
PROM_PORT = ports.port()
EXPORTER_PORT = ports.port()
EVERY, HOLD = 2.0, 20.0
HEALTHY_S = 60.0  # three --for windows of polls (was 120: a minute of CI it did not need)


class WatchProcess:
    """`pdforensics watch --json` as a real child process; events read as they come."""

    def __init__(self, argv: list[str], log: Path):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.log = log
        self.proc = subprocess.Popen([sys.executable, "-m", "pdforensics.cli", "watch", *argv],
                                     stdout=subprocess.PIPE, stderr=log.open("wb"), env=env)
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def started(self, timeout_s: float) -> WatchProcess:
        """Wait for the `watching` event; OSError when the exporter port was taken."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end and not self.of("watching"):
            if self.proc.poll() is not None:
                err = self.log.read_text()
                raise OSError(err.strip().splitlines()[-1] if err.strip() else "watch exited")
            time.sleep(0.1)
        assert self.of("watching"), "watch did not start"
        return self

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["event"] == kind]

    def wait_for(self, kind: str, timeout_s: float) -> dict[str, Any]:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            found = self.of(kind)
            if found:
                return found[0]
            assert self.proc.poll() is None, f"watch exited with {self.proc.returncode}"
            time.sleep(0.2)
        raise AssertionError(f"no {kind} event within {timeout_s:.0f}s; last: {self.events[-3:]}")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=5)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    d = tmp_path_factory.mktemp("watchlive")
    prom = watch = None
    info: LabInfo | None = None
    try:
        info = retry_in_use(lambda: lab_up(d / "lab", fault="healthy", ssh=False, base_port=BASE))
        prom = Prometheus(d, PROM_PORT, {
            "sglang": [f"127.0.0.1:{BASE}", f"127.0.0.1:{BASE + 1}"],
            "sglang-router": [f"127.0.0.1:{BASE + 4}"],
            "pdforensics-watch": [f"127.0.0.1:{EXPORTER_PORT}"],
        }, [ALERTS])
        retry_in_use(prom.start)
        hook = d / "hook.sh"
        hook.write_text(f'#!/bin/sh\nenv | grep ^PDFX_ >> {d / "hook.env"}\necho "--" >> {d / "hook.env"}\n')
        hook.chmod(0o755)
        argv = ["-c", str(info.cluster_file), "--every", f"{EVERY:g}", "--for", f"{HOLD:g}",
                "--cooldown", "10m", "--store", str(d / "store"), "--on-capture", str(hook),
                "--metrics-port", str(EXPORTER_PORT), "--metrics-addr", "127.0.0.1",
                "--prometheus", prom.url, "--history", "10m", "--deadline", "40", "--json"]
        watch = retry_in_use(lambda: WatchProcess(argv, d / "watch.log").started(30))
        yield {"dir": d, "lab": info, "prom": prom, "watch": watch}
    finally:
        code = watch.stop() if watch is not None else None
        if prom is not None:
            prom.stop()
        lab_down(d / "lab")
        assert code in (None, 0), f"watch exited {code}: {(d / 'watch.log').read_text()[-2000:]}"


def test_healthy_then_wedged(stack: dict[str, Any]) -> None:
    d: Path = stack["dir"]
    prom: Prometheus = stack["prom"]
    watch: WatchProcess = stack["watch"]
    first = watch.wait_for("poll", 30)

    # -- a minute healthy: polls, no capture; Prometheus scrapes the exporter -------------
    while time.time() - first["at"] < HEALTHY_S:
        assert watch.proc.poll() is None
        time.sleep(2)
    polls = watch.of("poll")
    assert len(polls) >= HEALTHY_S / EVERY - 3, len(polls)
    assert not watch.of("capture_start") and not watch.of("captured")
    assert not [p for p in polls if p["suspected"]], [p for p in polls if p["suspected"]][:2]
    assert {(m["host"], v) for m, v in prom.query("pdforensics_wedge_suspected")} == {
        ("prefill-0", 0.0), ("decode-0", 0.0)}

    # -- the wedge ------------------------------------------------------------------------------
    switch = time.time()
    last_before = watch.of("poll")[-1]["poll"]
    set_fault(stack["lab"].dir, "transfer-stuck")
    start = watch.wait_for("capture_start", HOLD + 4 * EVERY + 10)
    captured = watch.wait_for("captured", 60)
    trigger_poll = next(p["poll"] for p in watch.of("poll") if p["state"] == "open")
    # within --for + 2 polls of the switch (+1 s for the lab to pick the fault up)
    assert start["at"] - switch <= HOLD + 2 * EVERY + 1.0, start["at"] - switch
    assert trigger_poll - last_before <= HOLD / EVERY + 2, (trigger_poll, last_before)
    assert captured["verdict"] == "WEDGED", captured
    assert "DECODE_TRANSFER_STUCK" in captured["trigger"]
    bundle = Path(captured["bundle"])
    assert bundle.parent == d / "store" / "bundles" and verify_bundle(bundle) == []
    manifest = load_bundle(bundle).manifest
    assert manifest["trigger"]["by"] == "pdforensics watch"
    assert manifest["started_epoch"] - switch <= HOLD + 2 * EVERY + 2.0

    # the hook ran, once, and was told the bundle and verdict
    env = dict(line.split("=", 1) for line in (d / "hook.env").read_text().splitlines() if "=" in line)
    assert env["PDFX_BUNDLE"] == str(bundle) and env["PDFX_VERDICT"] == "WEDGED"
    assert captured["hook"]["exit_status"] == 0

    # filed in the store with its verdict
    with open_index(d / "store") as index:
        snaps = index.snapshots()
    assert [(s.name, s.verdict, s.origin) for s in snaps] == [(bundle.name, "WEDGED", "watch")]

    # -- the Prometheus history in the bundle -----------------------------------------------
    hist = load_history(bundle)
    assert hist is not None and hist.prometheus == prom.url
    assert [s.key for s in hist.series if s.error] == []
    queue = hist.get("decode_transfer_queue")
    assert queue is not None
    decode_q = next(ln for ln in queue.lines if ln.label("instance") == f"127.0.0.1:{BASE + 1}")
    assert decode_q.points[-1][1] == 14.0 and min(v for _t, v in decode_q.points) <= 2.0
    gen = hist.get("generation_throughput")
    assert gen is not None and any(ln.points for ln in gen.lines)
    onsets = {(e.key, e.line.split()[0]): e.at for e in hist.events}
    q_at = onsets.get(("decode_transfer_queue", f"127.0.0.1:{BASE + 1}"))
    drop_at = onsets.get(("generation_throughput", f"127.0.0.1:{BASE + 1}"))
    assert q_at is not None and switch - 3 <= q_at <= switch + 10, (q_at, switch, hist.events)
    assert drop_at is not None and switch - 3 <= drop_at <= switch + 10, (drop_at, switch, hist.events)
    rows = [r for r in load_bundle(bundle).results if r.host == "prometheus"]
    assert len(rows) == len(hist.series) and all(r.ok and r.sha256 for r in rows)
    view, _missing = build_history(load_capture(bundle))
    assert view is not None
    charted = {c.key: str(c.svg) for c in view.charts}
    assert {"decode_transfer_queue", "generation_throughput", "wedge_suspected"} <= set(charted)
    assert 'class="history-event"' in charted["decode_transfer_queue"]

    # -- `capture --prometheus` from the command line too ------------------------------------
    res = CliRunner().invoke(main, ["capture", "-c", str(stack["lab"].cluster_file), "-o", str(d / "cli"),
                                    "--no-stacks", "--samples", "2", "--interval", "1", "--json",
                                    "--prometheus", prom.url, "--history", "5m"])
    assert res.exit_code in (0, 3), res.output
    cli_bundle = Path(json.loads(res.stdout)["bundle"])  # progress lines go to stderr
    cli_hist = load_history(cli_bundle)
    assert cli_hist is not None and cli_hist.end - cli_hist.start == 300.0
    assert cli_hist.get("decode_transfer_queue") is not None

    # -- the alert rule from examples/ fires in the Prometheus that scrapes the exporter ------
    end = switch + 110
    rule = None
    while time.time() < end:
        rule = prom.rule("SGLangWedgeSuspected")
        if rule is not None and rule["state"] == "firing":
            break
        time.sleep(1)
    assert rule is not None and rule["state"] == "firing", rule
    assert rule["health"] == "ok"
    firing = {a["labels"]["host"] for a in rule["alerts"] if a["state"] == "firing"}
    assert "decode-0" in firing
    assert prom.query('pdforensics_captures_total{verdict="WEDGED"}')[0][1] == 1.0
    captured_rule = prom.rule("SGLangWedgeCaptured")
    assert captured_rule is not None and captured_rule["state"] == "firing"

    # -- still exactly one capture, long after the hold ---------------------------------------
    assert time.time() - captured["at"] > HOLD + 2 * EVERY  # room for a second one: none came
    assert len(watch.of("capture_start")) == 1 and len(watch.of("captured")) == 1
    # the one bundle, and the one file to attach beside it (archived by default)
    assert sorted(p.name for p in (d / "store" / "bundles").iterdir() if not p.name.startswith(".")) == [
        bundle.name, bundle.name + ".tar.gz"]
    assert (d / "hook.env").read_text().count("--") == 1
    assert watch.of("poll")[-1]["state"] == "open"
    print(f"\nswitch->capture_start {start['at'] - switch:.1f}s (poll {trigger_poll - last_before} after), "
          f"capture took {captured['at'] - start['at']:.1f}s, alert firing {time.time() - switch:.1f}s "
          f"after the switch; healthy polls {len(polls)}; history series {len(hist.series)}, "
          f"events {len(hist.events)}")
