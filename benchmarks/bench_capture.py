"""Capture wall time of the 3-host SSH lab vs. the same commands run one `ssh` each, in sequence.

Usage: .venv/bin/python benchmarks/bench_capture.py [--login root|ops|both] [--rounds N]

Starts an SSH lab, captures it with pdforensics, then replays every distinct command from the
capture's manifest through the OpenSSH client one at a time (what people script by hand), and
prints both wall times and the ratio. Both sides run in the same round against the same lab.

`--login ops` logs in as the lab's non-root user with `sudo = true`; `root` as root. The login
matters on a machine whose root ~/.bashrc is heavy (this one runs `pyenv init`, about 40
processes and 0.2 CPU-s per SSH command): sshd has bash source it for every command, ours and
the loop's alike, and the shell start-up then dominates both sides.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pdforensics.capture.planner import PlanOptions
from pdforensics.capture.run import CaptureOptions, run_capture
from pdforensics.collectors.base import REGISTRY
from pdforensics.collectors.http import HTTP_TIMEOUT_S, curl
from pdforensics.config.cluster import load_cluster_file
from pdforensics.lab import lab_down, lab_up
from pdforensics.model import HostSpec
from pdforensics.transport.base import remote_argv

BASE_PORT = 45600
OPS_USER = "pdfx"


def replay_commands(cluster_file: Path, manifest: dict) -> list[tuple[HostSpec, tuple[str, ...], dict]]:
    """Every remote command of the capture (repeated samples included), in the order the
    capture started them: (host, remote argv, manifest result)."""
    cluster = {h.name: h for h in load_cluster_file(cluster_file).hosts}
    out = []
    for r in sorted(manifest["results"], key=lambda r: r["started_at"]):
        argv = r.get("argv")
        if not argv and r.get("url"):  # the bundle keeps an endpoint's URL, not its curl argv
            argv = remote_argv(curl(r["url"], HTTP_TIMEOUT_S), HTTP_TIMEOUT_S + 2)
        if not argv and r.get("read"):  # a file read over SFTP: its command (cat / tail -c)
            argv = read_command(r["source"], r["read"])
        if not argv or r["source"] == "connect" or (r.get("error") or "").startswith("not run"):
            continue
        host = cluster[r["host"]]
        out.append((host, with_own_sudo(host, r["source"], tuple(argv)), r))
    return out


def with_own_sudo(host: HostSpec, source: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    """A privileged command as one `ssh` runs it: its own `sudo -n` (a sudo host's runner runs
    as root, so the manifest's row shows the argv without it)."""
    src = REGISTRY.get(source)
    if host.sudo and src is not None and src.privileged and argv[:2] != ("sudo", "-n"):
        return ("sudo", "-n", *argv)
    return argv


def read_command(source: str, path: str) -> tuple[str, ...]:
    """The command a file-read row stands for, as the source would have run it."""
    src = REGISTRY[source]
    cmd = ("tail", "-c", str(src.max_bytes), "--", path) if src.tail else ("cat", path)
    return remote_argv(cmd, src.timeout_s)


def ssh_argv(h: HostSpec, remote: Sequence[str]) -> list[str]:
    """One OpenSSH client run of a remote command, as people script it by hand."""
    return ["ssh", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={h.known_hosts}",
            "-i", str(h.identity), "-p", str(h.port), f"{h.user}@{h.address}", shlex.join(remote)]


def sequential_ssh(cluster_file: Path, manifest: dict) -> tuple[float, int]:
    """Replay every remote command of the capture, one `ssh` process per command, in sequence."""
    commands = replay_commands(cluster_file, manifest)
    t0 = time.monotonic()
    for h, argv, _r in commands:
        subprocess.run(ssh_argv(h, argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    return time.monotonic() - t0, len(commands)


def ops_cluster_file(lab_dir: Path, login: str) -> Path:
    """The lab's cluster file logs in as the ops user with sudo; rewrite it for root."""
    path = lab_dir / "cluster.toml"
    if login == "ops":
        return path
    text = path.read_text().replace(f'user = "{OPS_USER}"', 'user = "root"').replace("sudo = true\n", "")
    root = lab_dir / "cluster-root.toml"
    root.write_text(text)
    return root


def one_round(cluster_file: Path, samples: int) -> tuple[float, float, int, int, str]:
    out = Path(tempfile.mkdtemp(prefix="bench-out-"))
    t0 = time.monotonic()
    plan = PlanOptions(samples=samples, stack_dumps=min(samples, 3))  # as `capture --samples N`
    outcome = run_capture(load_cluster_file(cluster_file), CaptureOptions(out_dir=out, plan=plan))
    ours = time.monotonic() - t0
    manifest = json.loads((outcome.bundle / "manifest.json").read_text())
    seq, n = sequential_ssh(cluster_file, manifest)
    return ours, seq, len(manifest["results"]), n, outcome.status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--login", choices=("root", "ops", "both"), default="both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=3,
                    help="/metrics samples and py-spy dumps (1: the user's quick check)")
    args = ap.parse_args()
    lab_dir = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    lab_up(lab_dir, fault="transfer-stuck", ssh=True, base_port=BASE_PORT, sudo_user=OPS_USER)
    try:
        logins = ("ops", "root") if args.login == "both" else (args.login,)
        for login in logins:
            cluster_file = ops_cluster_file(lab_dir, login)
            ratios = []
            for i in range(args.rounds):
                ours, seq, results, n, status = one_round(cluster_file, args.samples)
                ratios.append(seq / ours)
                print(f"[{login}] round {i + 1}: pdforensics capture {ours:.2f} s ({results} results, "
                      f"{status}); sequential ssh loop {seq:.2f} s ({n} commands); ratio {seq / ours:.1f}x",
                      flush=True)
            print(f"[{login}] median ratio (sequential / ours): {statistics.median(ratios):.1f}x "
                  "(the capture includes its 2 x 2 s /metrics sampling interval)")
    finally:
        lab_down(lab_dir)


if __name__ == "__main__":
    main()
