"""Load on the target: CPU seconds per host for a full capture and for the snapshot profile, and
how long each py-spy dump stops the process it reads.

Usage: .venv/bin/python benchmarks/bench_target_load.py [--hosts 2] [--tp 2] [--fault healthy] [--rounds 3]

Fleet (benchmarks/fleet.py): `--hosts` loopback sshd hosts, each one lab stand-in server with
`--tp` scheduler ranks (HTTP process + ranks + detokenizer), logged into as the non-root ops user
with sudo. The hosts share this machine, so "on the target" is measured per host:

- SSH side (exact): everything sshd runs for us on that host (its session processes, bash, sudo,
  timeout and every command, py-spy included) ends up in that host's sshd process tree: the sum of
  utime+stime+cutime+cstime over the live processes of the tree (/proc/PID/stat) counts each
  finished process once, in its parent's cutime. Read before and after, once every session closed.
- Server side (estimate): the extra CPU the stand-in server's processes spend while captured
  (answering /metrics, /server_info...): their CPU during the capture minus their idle rate over an
  equal window just before. Noisy on a shared machine; reported separately.
- Baseline in the same run: the sequential ssh loop (one `ssh host 'cmd'` per command of the same
  manifest), measured the same way.
- Per source: one host's commands replayed one at a time over one connection, CPU of each
  (endpoints fetched as the capture does: through the connection, no process on the host).

py-spy pause: `perf record -e sched:sched_switch -a -k CLOCK_MONOTONIC` runs through the capture.
A thread that ptrace stops is switched out in state t and switched in again when py-spy lets go
(where perf lost that switch-in, the thread's next switch-out ends the stop: an upper bound);
a process is paused from the first of its threads stopping to the last one running again (the
union of those intervals, per dump: the dump's own time window from the manifest). Microsecond
timestamps from the kernel, and nothing polls (a /proc poller in a busy loop costs a core and,
descheduled, misses sub-millisecond stops). Needs perf (Debian: apt-get install linux-perf).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_capture import replay_commands, ssh_argv  # noqa: E402
from fleet import Fleet, fleet  # noqa: E402

from pdforensics.app.snapshot import SnapshotOptions, take_snapshot  # noqa: E402
from pdforensics.capture.run import CaptureOptions, run_capture  # noqa: E402
from pdforensics.config.cluster import load_cluster_file  # noqa: E402
from pdforensics.transport import open_transport  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
PAUSE_LIMIT_MS = 100.0
PAUSE_P99_LIMIT_MS = 20.0  # the 99th percentile over 100+ dumps
SNAPSHOT_LIMIT_S = 1.0



def _stat(pid: int) -> tuple[float, float]:
    """(own utime+stime, reaped children's cutime+cstime) of one process, in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK, (int(fields[13]) + int(fields[14])) / TICK


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process tree: every live process's own time plus its reaped children's."""
    total = 0.0
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return 0.0
    for p in procs:
        try:
            own, reaped = _stat(p.pid)
            total += own + reaped
        except (OSError, IndexError):
            pass  # exited between listing and reading: its time is in its parent's cutime now
    return total


def wait_sessions_closed(f: Fleet, timeout_s: float = 10.0) -> None:
    """Until no sshd of the fleet has a session process left (their CPU is then reaped)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if all(not psutil.Process(f.sshd_pid(h)).children() for h in f.hosts):
            return
        time.sleep(0.05)


def server_pids(f: Fleet) -> list[int]:
    out = []
    for h in f.hosts:
        root = psutil.Process(f.server_pid(h))
        out += [root.pid, *(c.pid for c in root.children(recursive=True))]
    return out


def ssh_side(f: Fleet) -> dict[str, float]:
    """Each host's sshd side: its cpuacct cgroup where the fleet made one (exact), else the
    process tree (which misses a long-lived session's children reaped before their parent)."""
    return {h.name: _sshd_cpu(f, h) for h in f.hosts}


def _sshd_cpu(f: Fleet, h: Any) -> float:
    exact = f.sshd_cpu(h)
    return exact if exact is not None else tree_cpu(f.sshd_pid(h))


def server_side(f: Fleet) -> dict[str, float]:
    return {h.name: tree_cpu(f.server_pid(h)) for h in f.hosts}


@dataclass(frozen=True)
class Measured:
    wall_s: float
    result: Any  # CaptureOutcome or SnapshotOutcome
    ssh: dict[str, float]  # host -> CPU-s of its sshd tree
    server_extra: dict[str, float]  # host -> CPU-s its server spent beyond its idle rate
    stops: list[tuple[int, float, float]]  # (pid, stopped, running again) from perf


def measure(f: Fleet, action: Callable[[], Any], perf_data: Path | None) -> Measured:
    """Run action() (a capture) and measure per-host target CPU, and thread stops when perf_data."""
    idle_s = 4.0
    s0 = server_side(f)
    time.sleep(idle_s)
    s1 = server_side(f)
    idle_rate = {k: (s1[k] - s0[k]) / idle_s for k in s1}
    perf = None
    if perf_data is not None:
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "sched:sched_switch", "-a", "-k", "CLOCK_MONOTONIC",
                                 "-o", str(perf_data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # perf is set up and recording
    a, srv_a, t0 = ssh_side(f), server_side(f), time.monotonic()
    result = action()
    wall = time.monotonic() - t0
    wait_sessions_closed(f)
    b, srv_b = ssh_side(f), server_side(f)
    span = time.monotonic() - t0
    stops: list[tuple[int, float, float]] = []
    if perf is not None and perf_data is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=30)
        stops = traced_stops(perf_data, thread_owner(f))
    return Measured(wall, result, {k: b[k] - a[k] for k in b},
                    {k: (srv_b[k] - srv_a[k]) - idle_rate[k] * span for k in b}, stops)


def pyspy_dumps(manifest: dict) -> list[dict]:
    return [r for r in manifest["results"] if r["source"] == "pyspy" and r.get("exit_status") == 0]


def thread_owner(f: Fleet) -> dict[int, int]:
    """tid -> pid for every thread of the fleet's server processes."""
    out = {}
    for pid in server_pids(f):
        for tid in os.listdir(f"/proc/{pid}/task"):
            out[int(tid)] = pid
    return out


def traced_stops(perf_data: Path, owner: dict[int, int]) -> list[tuple[int, float, float]]:
    """(pid, stopped at, running again at) per thread stop (state t) seen by sched_switch."""
    text = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "time,trace"], capture_output=True,
                          text=True, check=True).stdout
    stopped: dict[int, float] = {}
    out = []
    missed = 0
    for line in text.splitlines():
        stamp, _, trace = line.partition(":")
        fields = dict(kv.split("=", 1) for kv in trace.replace("==>", " ").split() if "=" in kv)
        t = float(stamp)
        prev, nxt = int(fields.get("prev_pid", -1)), int(fields.get("next_pid", -1))
        if prev in stopped:  # switched out again, so it ran: perf lost the switch-in. The stop
            out.append((owner[prev], stopped.pop(prev), t))  # ended before t (an upper bound)
            missed += 1
        if prev in owner and fields.get("prev_state", "").startswith("t"):
            stopped[prev] = t
        if nxt in stopped:
            out.append((owner[nxt], stopped.pop(nxt), t))
    if missed:
        print(f"  ({missed} stop(s) ended by the thread's next switch-out: perf lost its switch-in)",
              flush=True)
    return out


def dump_pauses(stops: list[tuple[int, float, float]], manifest: dict) -> list[float]:
    """Pause in ms of every py-spy dump: from the first thread of its process stopping to the last
    one running again, within the dump's time window."""
    offset = time.time() - time.monotonic()  # the manifest has wall-clock times, perf monotonic ones
    out = []
    for d in pyspy_dumps(manifest):
        start = d["started_at"] - offset - 0.05
        end = d["started_at"] - offset + d["duration_s"] + 0.05
        mine = [(a, b) for pid, a, b in stops if pid == d["target"]["pid"] and start <= a <= end]
        if mine:
            out.append(1000 * (max(b for _a, b in mine) - min(a for a, _b in mine)))
    return out


def per_source(f: Fleet, cluster_file: Path, manifest: dict) -> dict[str, list[float]]:
    """One host's commands, one at a time over one connection: target CPU of each, by source."""
    host = f.hosts[0]
    spec = next(h for h in load_cluster_file(cluster_file).hosts if h.name == host.name)
    transport = open_transport(spec, False)
    transport.connect(10.0)
    out: dict[str, list[float]] = defaultdict(list)
    try:
        for h, argv, r in replay_commands(cluster_file, manifest):
            if h.name != host.name:
                continue
            before = _sshd_cpu(f, host)
            # an endpoint goes the way the capture fetched it: through the connection, or curl
            fetched = transport.fetch(r["source"], r["url"], 5.0, 64 << 20) if r.get("url") else None
            if fetched is None:
                transport.run(r["source"], argv, 30.0, 64 << 20)
            out[r["source"]].append(_sshd_cpu(f, host) - before)
    finally:
        transport.close()
    return out


def sequential_load(f: Fleet, cluster_file: Path, manifest: dict) -> dict[str, float]:
    a = ssh_side(f)
    for h, argv, _r in replay_commands(cluster_file, manifest):
        subprocess.run(ssh_argv(h, argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    wait_sessions_closed(f)
    b = ssh_side(f)
    return {k: b[k] - a[k] for k in b}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def fmt(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in values.items())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--fault", default="healthy")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pdfx-load-"))
    ok = True
    with fleet(root, args.hosts, tp=args.tp, fault=args.fault) as f:
        cluster = load_cluster_file(f.cluster_file)
        print(f"fleet: {args.hosts} hosts, each one stand-in server with {args.tp} ranks, fault {args.fault}, "
              f"login {f.user} with sudo; {load()}", flush=True)
        full_cpu: list[float] = []
        snap_cpu: list[float] = []
        extra_full: list[float] = []
        extra_snap: list[float] = []
        pauses: list[float] = []
        dumps = 0
        manifest: dict = {}
        out, store = root / "bundles", root / "store"
        for i in range(args.rounds):
            m = measure(f, lambda: run_capture(cluster, CaptureOptions(out_dir=out)), root / f"perf{i}.data")
            manifest = json.loads((m.result.bundle / "manifest.json").read_text())
            win = dump_pauses(m.stops, manifest)
            pauses += win
            dumps += len(pyspy_dumps(manifest))
            full_cpu += m.ssh.values()
            extra_full += m.server_extra.values()
            print(f"full capture round {i + 1}: {m.wall_s:.2f} s, {m.result.status}; target CPU-s per host, "
                  f"SSH side: {fmt(m.ssh)}; server side extra: {fmt(m.server_extra)}; "
                  f"{len(pyspy_dumps(manifest))} py-spy dumps, longest pause {max(win, default=0):.1f} ms; "
                  f"{load()}", flush=True)
        for i in range(args.rounds):
            m = measure(f, lambda: take_snapshot(cluster, store, SnapshotOptions()), None)
            snap_cpu += m.ssh.values()
            extra_snap += m.server_extra.values()
            print(f"snapshot round {i + 1}: {m.wall_s:.2f} s, {m.result.capture_status}; target CPU-s per host, "
                  f"SSH side: {fmt(m.ssh)}; server side extra: {fmt(m.server_extra)}; {load()}", flush=True)
        seq = sequential_load(f, f.cluster_file, manifest)
        print(f"baseline, sequential ssh loop of the same full-capture commands: target CPU-s per host, "
              f"SSH side: {fmt(seq)}; {load()}", flush=True)
        breakdown = per_source(f, f.cluster_file, manifest)
    print("\ntarget CPU per command, by source (host 1, one command at a time over one connection):")
    for source, values in sorted(breakdown.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {source:24} x{len(values):<2} {sum(values):6.3f} CPU-s total, {statistics.mean(values):.3f} each")
    print(f"  {'all':24} x{sum(len(v) for v in breakdown.values()):<2} "
          f"{sum(sum(v) for v in breakdown.values()):6.3f} CPU-s")
    med = statistics.median
    print(f"\nfull capture: target CPU per host (SSH side) median {med(full_cpu):.2f} s, max {max(full_cpu):.2f} s; "
          f"server side extra median {med(extra_full):.2f} s; sequential ssh loop {med(list(seq.values())):.2f} s "
          f"(ratio loop / capture {med(list(seq.values())) / med(full_cpu):.1f}x)")
    snap_total = [a + max(0.0, b) for a, b in zip(snap_cpu, extra_snap, strict=True)]
    print(f"snapshot profile: target CPU per host (SSH side) median {med(snap_cpu):.2f} s, max {max(snap_cpu):.2f} s; "
          f"server side extra median {med(extra_snap):.2f} s; SSH + server max {max(snap_total):.2f} s "
          f"(target <= {SNAPSHOT_LIMIT_S:g} s: {'met' if max(snap_total) <= SNAPSHOT_LIMIT_S else 'MISSED'})")
    ok &= max(snap_total) <= SNAPSHOT_LIMIT_S
    if pauses:
        print(f"py-spy pause per dump ({len(pauses)} of {dumps} dumps seen stopping their process; "
              f"{args.tp}-rank servers): median {med(pauses):.2f} ms, 90th percentile "
              f"{sorted(pauses)[int(0.9 * (len(pauses) - 1))]:.2f} ms, max {max(pauses):.2f} ms "
              f"(target <= {PAUSE_LIMIT_MS:g} ms: {'met' if max(pauses) <= PAUSE_LIMIT_MS else 'MISSED'})")
        p99 = sorted(pauses)[min(len(pauses) - 1, int(round(0.99 * (len(pauses) - 1))))]
        enough = len(pauses) >= 100
        print(f"py-spy pause 99th percentile: {p99:.2f} ms over {len(pauses)} dumps (target <= "
              f"{PAUSE_P99_LIMIT_MS:g} ms over 100+ dumps: "
              f"{'met' if p99 <= PAUSE_P99_LIMIT_MS and enough else 'MISSED' if enough else 'too few dumps'})")
        ok &= max(pauses) <= PAUSE_LIMIT_MS and len(pauses) == dumps
    else:
        print("py-spy pause: no dump seen stopping its process (py-spy --nonblocking, or perf saw nothing)")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
