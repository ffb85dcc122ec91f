"""Capture wall time of the 3-host SSH lab vs. the same commands run one `ssh` each, in sequence.

Usage: .venv/bin/python benchmarks/bench_capture.py [LAB_DIR]
Starts an SSH lab (unless LAB_DIR holds a running one), captures it with pdforensics, then
replays every command from the capture's manifest through the OpenSSH client one at a time
(what people script by hand), and prints both wall times and the ratio.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdforensics.capture import CaptureOptions, run_capture
from pdforensics.config import load_cluster_file
from pdforensics.lab import lab_down, lab_up


def sequential_ssh(cluster_file: Path, manifest: dict) -> tuple[float, int]:
    cluster = {h.name: h for h in load_cluster_file(cluster_file).hosts}
    t0 = time.monotonic()
    n = 0
    for r in manifest["results"]:
        argv = r.get("argv")
        if not argv or r["source"] == "connect":
            continue
        h = cluster[r["host"]]
        cmd = ["ssh", "-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={h.known_hosts}",
               "-i", str(h.identity), "-p", str(h.port), f"{h.user}@{h.address}", shlex.join(argv)]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        n += 1
    return time.monotonic() - t0, n


def main() -> None:
    own = len(sys.argv) < 2
    lab_dir = Path(sys.argv[1]) if not own else Path(tempfile.mkdtemp(prefix="bench-lab-"))
    if own:
        lab_up(lab_dir, ssh=True, base_port=46000)
    try:
        cluster_file = lab_dir / "cluster.toml"
        out = Path(tempfile.mkdtemp(prefix="bench-out-"))
        t0 = time.monotonic()
        outcome = run_capture(load_cluster_file(cluster_file), CaptureOptions(out_dir=out))
        ours = time.monotonic() - t0
        manifest = json.loads((outcome.bundle / "manifest.json").read_text())
        seq, n = sequential_ssh(cluster_file, manifest)
        # the /metrics sampling interval is a floor for our capture, not for the loop: report it
        print(f"pdforensics capture: {ours:.2f} s for {len(manifest['results'])} results "
              f"(status {outcome.status}; includes 2 x 2 s /metrics sampling interval)")
        print(f"sequential ssh loop: {seq:.2f} s for {n} commands")
        print(f"ratio (sequential / ours): {seq / ours:.1f}x")
    finally:
        if own:
            lab_down(lab_dir)


if __name__ == "__main__":
    main()
