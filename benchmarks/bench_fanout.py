"""Fan-out: `pdforensics capture` of N loopback SSH hosts vs. a sequential ssh loop and parallel-ssh.

Usage: .venv/bin/python benchmarks/bench_fanout.py [--sizes 1,8,32] [--rounds 3] [--login ops|root]

Brings up a fleet (benchmarks/fleet.py) of max(sizes) hosts once: each host is a stock sshd on
127.0.1.i plus one lab stand-in server (--tp-size 1 unless --tp: HTTP process, scheduler rank,
detokenizer) in the transfer-stuck fault (mostly sleeping). For each N the first N hosts are
captured, so every N runs against the same machine state. Per N:

(a) `pdforensics capture -c cluster.toml` as a fresh process (interpreter start, collection,
    parsing, analysis and report.html included), `--rounds` times;
(b) a sequential loop: every remote command of the last capture's manifest, one `ssh host 'cmd'`
    each, in the order the capture started them (bench_capture.py's replay);
(c) parallel-ssh (Debian's pssh): the same commands, one parallel-ssh run per command slot
    (the same collector on every host: "ps", "py-spy dump of the scheduler, 2nd dump", ...),
    slots one after another, hosts of a slot at pssh's default parallelism (32). pssh runs one
    command line on all its hosts; ours name per-host PIDs and ports, so each run drives pssh's own
    Manager/Task with each host's own command line (same ssh argv as parallel-ssh builds).

Neither baseline waits the capture's /metrics interval or py-spy spacing (an advantage to them).
Printed: wall time, the tool's CPU time (user+sys of it and every process it waited for, from
wait4) and peak RSS. Ours is one process: its wait4 maxrss. A baseline is many processes (ssh
clients, pssh's Python): the peak of the sum over its process tree, sampled every 50 ms. (A
child's wait4 maxrss starts at its parent's RSS at fork, so it cannot size a 7 MB ssh client
forked from this 46 MB benchmark.)

The limit: the slowest collector's own duration in the same run plus one SSH connection set-up.
A collector is one source on one target with all its samples (e.g. /metrics of one server, 3
samples; py-spy of one process, 2 dumps); its own duration is the run time of its commands from the
capture's manifest plus the spacing the plan imposes between its samples. Connection set-up is
pdforensics' own SshTransport.connect() to one host (median of 3), measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_capture import replay_commands, ssh_argv  # noqa: E402
from bench_target_load import tree_cpu, wait_sessions_closed  # noqa: E402
from fleet import LOGIN_RC_CPU_S, Fleet, fleet  # noqa: E402

from pdforensics.capture.planner import STUCK_SPAN_S  # noqa: E402
from pdforensics.config.cluster import load_cluster_file  # noqa: E402
from pdforensics.transport import open_transport  # noqa: E402

PDFORENSICS = str(Path(sys.executable).parent / "pdforensics")
SYSTEM_PYTHON = "/usr/bin/python3"  # where Debian's psshlib lives
PSSH_DRIVER = r"""
import json, os, runpy, sys
ns = runpy.run_path("/usr/bin/parallel-ssh", run_name="pssh_bench")
spec = json.load(open(sys.argv[1]))
parser = ns["option_parser"]()
parser.set_defaults(**ns["common_defaults"](timeout=ns["_DEFAULT_TIMEOUT"]))
opts, _ = parser.parse_args(spec["options"] + ["true"])
for d in (opts.outdir, opts.errdir):
    os.makedirs(d, exist_ok=True)
manager = ns["Manager"](opts)
for host, port, user, cmdline in spec["tasks"]:  # do_pssh's loop, each host with its own command
    cmd = ["ssh", "-T", host, "-o", "NumberOfPasswordPrompts=1", "-o", "SendEnv=PSSH_NODENUM",
           "-o", "SendEnv=PSSH_NUMNODES", "-o", "SendEnv=PSSH_HOST"]
    for opt in opts.options or []:
        cmd += ["-o", opt]
    cmd += ["-l", user, "-p", port] + list(opts.extra or []) + [cmdline]
    manager.add_task(ns["Task"](host, port, user, cmd, opts, None))
statuses = manager.run()
sys.exit(0 if all(s == 0 for s in statuses) else 5)
"""


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float
    maxrss_mb: float  # largest single process (wait4)
    tree_mb: float  # peak sum of RSS over the process tree (sampled)
    rc: int


def measured(argv: Sequence[str], **kw: object) -> Run:
    """Run argv, sampling its process tree's RSS every 50 ms; CPU and maxrss from wait4."""
    t0 = time.monotonic()
    proc = subprocess.Popen(list(argv), **kw)  # type: ignore[call-overload]
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        try:
            root = psutil.Process(proc.pid)
        except psutil.Error:
            return
        while not done.is_set():
            total = 0
            try:
                for p in [root, *root.children(recursive=True)]:
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            peak = max(peak, total)
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _pid, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, peak / 1e6, proc.returncode)


def combine(runs: Sequence[Run], wall_s: float) -> Run:
    return Run(wall_s, sum(r.cpu_s for r in runs), max(r.maxrss_mb for r in runs),
               max(r.tree_mb for r in runs), max(abs(r.rc) for r in runs))


# -- (a) pdforensics ------------------------------------------------------------------------
def ours(cluster_file: Path, out: Path) -> tuple[Run, dict]:
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    with open(out / "capture.log", "ab") as log:
        run = measured([PDFORENSICS, "capture", "-c", str(cluster_file), "-o", str(out)],
                       stdout=subprocess.DEVNULL, stderr=log)
    bundle = next(p for p in out.iterdir() if p not in before and p.is_dir() and not p.name.startswith("."))
    return run, json.loads((bundle / "manifest.json").read_text())


# -- (b) sequential ssh loop -------------------------------------------------------------------
def sequential(cluster_file: Path, manifest: dict) -> tuple[Run, int]:
    commands = replay_commands(cluster_file, manifest)
    t0 = time.monotonic()
    runs = [measured(ssh_argv(h, argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for h, argv, _r in commands]
    return combine(runs, time.monotonic() - t0), len(commands)


# -- (c) parallel-ssh ------------------------------------------------------------------------
def slots(cluster_file: Path, manifest: dict) -> list[list[tuple[object, tuple[str, ...]]]]:
    """The capture's commands grouped by collector slot (the same collector on every host),
    slots in the order the capture first started them."""
    groups: dict[tuple[object, ...], list[tuple[object, tuple[str, ...]]]] = {}
    first: dict[tuple[object, ...], float] = {}
    for h, argv, r in replay_commands(cluster_file, manifest):
        t = r.get("target") or {}
        key = (r["source"], t.get("kind"), t.get("rank"), t.get("service_kind"), t.get("sample"))
        groups.setdefault(key, []).append((h, argv))
        first.setdefault(key, r["started_at"])
    return [groups[k] for k in sorted(groups, key=lambda k: first[k])]


def pssh(cluster_file: Path, manifest: dict, out: Path) -> tuple[Run, int]:
    all_slots = slots(cluster_file, manifest)
    runs = []
    t0 = time.monotonic()
    for i, slot in enumerate(all_slots):
        h0 = slot[0][0]
        spec = {"options": ["-o", str(out / f"{i:02d}" / "out"), "-e", str(out / f"{i:02d}" / "err"),
                            "-O", "BatchMode=yes", "-O", f"UserKnownHostsFile={h0.known_hosts}",  # type: ignore[attr-defined]
                            "-x", f"-i {shlex.quote(str(h0.identity))}"],  # type: ignore[attr-defined]
                "tasks": [[h.address, str(h.port), h.user, shlex.join(argv)]  # type: ignore[attr-defined]
                          for h, argv in slot]}
        path = out / f"slot{i:02d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(spec))
        runs.append(measured([SYSTEM_PYTHON, "-c", PSSH_DRIVER, str(path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return combine(runs, time.monotonic() - t0), len(all_slots)


# -- the limit -------------------------------------------------------------------------------
def collector_own_durations(manifest: dict) -> dict[str, float]:
    """Own duration of every collector (host + key without the sample suffix), from the manifest."""
    opts = manifest["options"]
    interval = float(opts["interval_s"])
    # the planner spaces py-spy dumps by max(2, interval * (samples - 1), 10.2 / (dumps - 1))
    # (HostPlanner.dump_spacing_s)
    dump_gap = max(2.0, interval * max(1, int(opts["samples"]) - 1),
                   STUCK_SPAN_S / max(1, int(opts.get("stack_dumps", 2)) - 1))
    chains: dict[str, list[tuple[int, float, str]]] = {}
    for r in manifest["results"]:
        if r["source"] == "connect" or (r.get("error") or "").startswith("not run"):
            continue
        sample = (r.get("target") or {}).get("sample")
        key = r["key"].rsplit(".s", 1)[0] if sample is not None else r["key"]
        chains.setdefault(f"{r['host']}:{key}", []).append((sample or 1, float(r["duration_s"]), r["source"]))
    own: dict[str, float] = {}
    for name, items in chains.items():
        items.sort()
        source = items[0][2]
        if source == "pyspy":  # dump k planned when dump k-1 ends, not before (k-1) * gap
            end = 0.0
            for k, d, _s in items:
                end = max((k - 1) * dump_gap, end) + d
            own[name] = end
        else:  # /metrics: sample k+1 planned when k ends, not before k's start + interval
            start = end = 0.0
            for i, (_k, d, _s) in enumerate(items):
                if i:
                    start = max(start + interval, end)
                end = start + d
            own[name] = end
    return own


def gaps(manifest: dict) -> str:
    """', N failed (error: count, ...)' for results that carry an error or a non-zero exit."""
    bad: dict[str, int] = {}
    for r in manifest["results"]:
        if r.get("error") or r.get("timed_out") or r.get("exit_status") not in (0, None):
            why = (r.get("error") or f"{r['source']} exit {r.get('exit_status')}")[:60]
            bad[why] = bad.get(why, 0) + 1
    if not bad:
        return ""
    return f", {sum(bad.values())} failed ({', '.join(f'{k}: {v}' for k, v in bad.items())})"


def connect_setup(cluster_file: Path, tries: int = 3) -> float:
    host = load_cluster_file(cluster_file).hosts[0]
    times = []
    for _ in range(tries):
        t = open_transport(host, False)
        t0 = time.monotonic()
        t.connect(10.0)
        times.append(time.monotonic() - t0)
        t.close()
    return statistics.median(times)


def target_cpu(f: Fleet, n: int, action: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """action(*args)'s result and the CPU seconds it cost the first n hosts' sshd trees together."""
    hosts = f.hosts[:n]
    before = sum(sshd_cpu(f, h) for h in hosts)
    out = action(*args)
    wait_sessions_closed(f)
    return out, sum(sshd_cpu(f, h) for h in hosts) - before


def sshd_cpu(f: Fleet, h: Any) -> float:
    """The host's sshd side: its cpuacct cgroup where the fleet made one, else the process tree."""
    exact = f.sshd_cpu(h)
    return exact if exact is not None else tree_cpu(f.sshd_pid(h))


def login_cpu(f: Fleet, cluster_file: Path, tries: int = 3) -> float:
    """What one login costs a host (`ssh host true`: sshd, the login shell and its rc), median."""
    h = load_cluster_file(cluster_file).hosts[0]
    costs = [target_cpu(f, 1, _quiet, ssh_argv(h, ["true"]))[1] for _ in range(tries)]
    return statistics.median(costs)


def _quiet(argv: list[str]) -> None:
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60, check=True)


def window_bound(n: int, login_s: float, cores: int) -> float:
    """The earliest any capture keeping the stack span can end: the last of n logins cannot end
    before n logins' CPU has run on the machine's cores, and that host's dumps then span
    STUCK_SPAN_S. A lower bound: the tool's own CPU, its start and its report come on top."""
    return n * login_s / cores + STUCK_SPAN_S


@dataclass(frozen=True)
class SizeResult:
    n: int
    ours: Run
    collect_s: float
    limit_s: float
    target_s: float
    seq: Run
    seq_target_s: float
    par: Run
    par_target_s: float
    ab: Run | None = None  # the same capture with the --ab setting on every host (see AB)
    ab_target_s: float = 0.0


AB = {  # the in-run baseline capture: (the line each host gets, what it is called)
    "per-command": ("runner = false", "one exec channel per command (runner = false)"),
    "sudo-per-command": ("runner_sudo = false",
                         "the runner as the login user, sudo -n per privileged command (runner_sudo = false)"),
}


def ab_cluster(cluster_file: Path, ab: str) -> Path:
    """The same cluster file with AB's line on every host."""
    extra, _ = AB[ab]
    lines = []
    for line in cluster_file.read_text().splitlines():
        lines.append(line)
        if line.startswith("address ="):
            lines.append(extra)
    out = cluster_file.with_name(f"{cluster_file.stem}-{ab}.toml")
    out.write_text("\n".join(lines) + "\n")
    return out


def one_size(f: Fleet, n: int, rounds_n: int, login: str, root: Path, baselines: bool = True,
             ab: str | None = "per-command") -> SizeResult:
    cluster_file = f.subset(n, "root" if login == "root" else None)
    rounds = []
    for i in range(rounds_n):
        (run, manifest), tcpu = target_cpu(f, n, ours, cluster_file, root / "bundles")
        collect = manifest["finished_epoch"] - manifest["started_epoch"]
        own = collector_own_durations(manifest)
        slowest = max(own, key=lambda k: own[k])
        rounds.append((run, collect, manifest, slowest, own[slowest], tcpu))
        print(f"[N={n}] capture round {i + 1}: wall {run.wall_s:.2f} s (collection {collect:.2f} s), "
              f"CPU {run.cpu_s:.2f} s, peak RSS {run.maxrss_mb:.0f} MB, {manifest['status']}, "
              f"{len(manifest['results'])} results{gaps(manifest)}; target CPU (SSH side, all {n} hosts) "
              f"{tcpu:.1f} s; {load()}", flush=True)
    rounds.sort(key=lambda r: r[0].wall_s)
    run, collect, manifest, slowest, own_s, tcpu = rounds[len(rounds) // 2]
    setup = connect_setup(cluster_file)
    limit = own_s + setup
    print(f"[N={n}] limit: slowest collector {slowest} {own_s:.2f} s + connection set-up {setup:.3f} s "
          f"= {limit:.2f} s; median capture wall = {run.wall_s / limit:.2f}x the limit "
          f"(collection alone {collect / limit:.2f}x)", flush=True)
    ab_run, ab_t = None, 0.0
    if ab is not None:
        (ab_run, ab_manifest), ab_t = target_cpu(f, n, ours, ab_cluster(cluster_file, ab),
                                                root / f"bundles-{ab}")
        print(f"[N={n}] baseline, {AB[ab][1]}: wall "
              f"{ab_run.wall_s:.2f} s, {ab_manifest['status']}, {len(ab_manifest['results'])} results"
              f"{gaps(ab_manifest)}; target CPU {ab_t:.1f} s ({ab_t / n:.2f} s/host) against "
              f"{tcpu:.1f} s ({tcpu / n:.2f} s/host) as configured: {ab_t / max(tcpu, 1e-9):.2f}x; "
              f"{load()}", flush=True)
    cores = os.cpu_count() or 1
    bound = (run.cpu_s + tcpu) / cores
    print(f"[N={n}] this machine's CPU bound: (tool {run.cpu_s:.1f} s + targets {tcpu:.1f} s) CPU / {cores} cores "
          f"= {bound:.2f} s of wall time (the hosts share its cores)", flush=True)
    login_s = login_cpu(f, cluster_file)
    window = window_bound(n, login_s, cores)
    print(f"[N={n}] window bound: {n} logins x {login_s:.3f} CPU-s (`ssh host true`, in this run) / {cores} cores "
          f"+ the {STUCK_SPAN_S:g} s stack span = {window:.2f} s: no capture keeping that span ends sooner "
          f"here; wall / window bound {run.wall_s / window:.2f}x, window bound / CPU bound "
          f"{window / bound:.2f}x", flush=True)
    if not baselines:  # --baselines-up-to: a large N's loops take minutes on a shared machine
        none = Run(0.0, 0.0, 0.0, 0.0, 0)
        return SizeResult(n, run, collect, limit, tcpu, none, 0.0, none, 0.0, ab_run, ab_t)
    (seq, n_cmds), seq_t = target_cpu(f, n, sequential, cluster_file, manifest)
    print(f"[N={n}] sequential ssh loop: wall {seq.wall_s:.2f} s ({n_cmds} commands), CPU {seq.cpu_s:.2f} s, "
          f"peak RSS {seq.tree_mb:.0f} MB, target CPU {seq_t:.1f} s; {load()}", flush=True)
    (par, n_slots), par_t = target_cpu(f, n, pssh, cluster_file, manifest, root / f"pssh-{n}")
    print(f"[N={n}] parallel-ssh: wall {par.wall_s:.2f} s ({n_slots} runs), CPU {par.cpu_s:.2f} s, "
          f"peak RSS {par.tree_mb:.0f} MB (process tree), target CPU {par_t:.1f} s; {load()}", flush=True)
    print(f"[N={n}] parallel-ssh / window bound = {par.wall_s / window:.2f}x: the most any capture "
          f"keeping the stack span can reach against parallel-ssh here", flush=True)
    return SizeResult(n, run, collect, limit, tcpu, seq, seq_t, par, par_t, ab_run, ab_t)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--rounds", type=int, default=3, help="pdforensics captures per size (median reported)")
    ap.add_argument("--login", choices=("ops", "root"), default="ops")
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--fault", default="transfer-stuck")
    ap.add_argument("--baselines-up-to", type=int, default=10**6,
                    help="run the sequential and parallel-ssh baselines only for N up to this")
    ap.add_argument("--login-rc-cpu", type=float, default=LOGIN_RC_CPU_S,
                    help="CPU-s every login shell burns first (conda init on a GPU host; 0: bare sh)")
    ap.add_argument("--no-ab", action="store_true", help="skip the in-run baseline capture")
    ap.add_argument("--ab", choices=sorted(AB), default="per-command",
                    help="the in-run baseline capture: one exec channel per command (default), or "
                         "the runner as the login user with sudo -n per privileged command")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="pdfx-fanout-"))
    print(f"machine: {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.1f} GiB; {load()}")
    table = []
    t_up = time.monotonic()
    with fleet(root, max(sizes), tp=args.tp, fault=args.fault, login_rc_cpu_s=args.login_rc_cpu) as f:
        print(f"fleet: {max(sizes)} hosts up in {time.monotonic() - t_up:.1f} s (tp {args.tp}, {args.fault}, "
              f"login {args.login}); {load()}", flush=True)
        for n in sizes:
            table.append(one_size(f, n, args.rounds, args.login, root, n <= args.baselines_up_to,
                                  None if args.no_ab else args.ab))
    base = next((r.ours.wall_s for r in table if r.n == 1), None)
    cores = os.cpu_count() or 1
    print("\n| N | capture wall | collection | limit | wall / limit | tool CPU | peak RSS | target CPU | "
          "sequential ssh | seq / capture | parallel-ssh | pssh / capture | wall / 1-host wall | "
          "target CPU / host | wall / CPU bound | in-run baseline capture: wall, target CPU / host |")
    print("|" + "---|" * 16)
    for r in table:
        rel = f"{r.ours.wall_s / base:.2f}x" if base else "-"
        print(f"| {r.n} | {r.ours.wall_s:.2f} s | {r.collect_s:.2f} s | {r.limit_s:.2f} s | "
              f"{r.ours.wall_s / r.limit_s:.2f}x | {r.ours.cpu_s:.2f} s | {r.ours.maxrss_mb:.0f} MB | "
              f"{r.target_s:.1f} s | {r.seq.wall_s:.1f} s (CPU {r.seq.cpu_s:.1f} s, target {r.seq_target_s:.1f} s) | "
              f"{r.seq.wall_s / r.ours.wall_s:.1f}x | {r.par.wall_s:.1f} s (CPU {r.par.cpu_s:.1f} s, "
              f"RSS {r.par.tree_mb:.0f} MB, target {r.par_target_s:.1f} s) | "
              f"{r.par.wall_s / r.ours.wall_s:.1f}x | {rel} | {r.target_s / r.n:.2f} s | "
              f"{r.ours.wall_s / max(1e-9, (r.ours.cpu_s + r.target_s) / cores):.2f}x | "
              + (f"{r.ab.wall_s:.2f} s, {r.ab_target_s / r.n:.2f} s |"
                 if r.ab else "- |"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
