"""A real single-node Slurm for tests: munged, slurmctld and slurmd from Debian's slurm-wlm,
started on this machine with a private config, key, spool and state in a temp dir.

`SlurmCluster.start(dir)` writes the munge key and slurm.conf, starts the three daemons
(SLURM_CONF points at the private config), waits until the node is idle and returns the
cluster; `stop()` kills the daemons and removes their state. When a daemon cannot start,
`SlurmUnavailable` carries the reason read from its log."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import ports

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("srun", "sbatch", "scontrol", "squeue", "scancel")
IDLE_TIMEOUT_S = 30.0


class SlurmUnavailable(RuntimeError):
    """Slurm could not be started here; the message says why (from the daemons' logs)."""


def missing_tools() -> list[str]:
    """The Slurm/munge programs this machine lacks (scripts/setup.sh --test installs them)."""
    out = [d for d in DAEMONS if not os.access(d, os.X_OK)]
    return out + [c for c in CLIENTS if shutil.which(c) is None]


def _memory_mb() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return max(1, int(line.split()[1]) // 1024 - 512)
    return 1024


def _slurm_conf(d: Path, node: str, ctl_port: int, slurmd_port: int) -> str:
    cpus = os.cpu_count() or 1
    return "\n".join([
        "ClusterName=pdfx",
        f"SlurmctldHost={node}(127.0.0.1)",
        "SlurmUser=root", "SlurmdUser=root",
        f"SlurmctldPort={ctl_port}", f"SlurmdPort={slurmd_port}",
        "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={d / 'munge.socket'}",
        "MpiDefault=none",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SchedulerType=sched/builtin", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU", "ReturnToService=2",
        f"PlugStackConfig={d / 'plugstack.conf'}",
        f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d / 'slurmd.pid'}",
        f"SlurmctldLogFile={d / 'slurmctld.log'}", f"SlurmdLogFile={d / 'slurmd.log'}",
        "SlurmctldDebug=info", "SlurmdDebug=info",
        "MaxStepCount=1000", "KillWait=2", "InactiveLimit=0", "MinJobAge=300",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_memory_mb()} State=UNKNOWN",
        f"PartitionName=debug Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES",
        "",
    ])


def _tail(path: Path, n: int = 4) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    useful = [ln for ln in lines if "error" in ln.lower() or "fatal" in ln.lower()] or lines
    return " | ".join(useful[-n:])


@dataclass
class SlurmCluster:
    """A started single-node Slurm: its directory, node name and the env its clients need."""

    dir: Path
    node: str
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    started_in_s: float = 0.0

    @property
    def env(self) -> dict[str, str]:
        """Environment for srun/sbatch/scontrol (and pdforensics) to reach this Slurm."""
        return {**os.environ, "SLURM_CONF": str(self.dir / "slurm.conf")}

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @classmethod
    def start(cls, d: Path) -> SlurmCluster:
        """Write the config and key, start the daemons and wait until the node is idle."""
        if missing := missing_tools():
            raise SlurmUnavailable(f"not installed: {', '.join(missing)} (scripts/setup.sh --test)")
        t0 = time.monotonic()
        d.mkdir(parents=True, exist_ok=True)
        for sub in ("state", "spool", "munge"):
            (d / sub).mkdir(exist_ok=True)
        node = socket.gethostname().split(".")[0]
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (d / "plugstack.conf").write_text("")
        (d / "slurm.conf").write_text(_slurm_conf(d, node, ports.port(), ports.port()))
        cluster = cls(dir=d, node=node)
        try:
            cluster._start_daemons()
            cluster._wait_idle()
        except BaseException:
            cluster.stop()
            raise
        cluster.started_in_s = time.monotonic() - t0
        return cluster

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / f"{name}.out", "ab")
        with log:
            self.procs[name] = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL,
                                                stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)

    def _start_daemons(self) -> None:
        d = self.dir
        self._spawn("munged", ["/usr/sbin/munged", "-F", "--force", f"--key-file={d / 'munge.key'}",
                               f"--socket={d / 'munge.socket'}", f"--pid-file={d / 'munge' / 'pid'}",
                               f"--log-file={d / 'munge.log'}", f"--seed-file={d / 'munge' / 'seed'}"])
        self._wait(lambda: (d / "munge.socket").exists(), "munged", d / "munge.log", 10.0)
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-f", str(self.conf)])

    def _wait(self, check: object, name: str, log: Path, timeout_s: float) -> None:
        assert callable(check)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if check():
                return
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                break
            time.sleep(0.2)
        raise SlurmUnavailable(f"{name} did not start: {_tail(log)} {_tail(self.dir / (name + '.out'), 2)}")

    def node_state(self) -> str:
        out = self.run(["sinfo", "-h", "-n", self.node, "-o", "%T"], check=False)
        return out.stdout.strip()

    def _wait_idle(self) -> None:
        def idle() -> bool:
            return self.node_state().rstrip("*") in ("idle", "mixed", "allocated")

        for name in ("slurmctld", "slurmd"):
            proc = self.procs[name]
            if proc.poll() is not None:
                raise SlurmUnavailable(f"{name} exited: {_tail(self.dir / (name + '.log'))}")
        try:
            self._wait(idle, "slurmd", self.dir / "slurmd.log", IDLE_TIMEOUT_S)
        except SlurmUnavailable:
            raise SlurmUnavailable(
                f"node {self.node} not idle within {IDLE_TIMEOUT_S:.0f} s (state "
                f"{self.node_state() or '?'}): slurmctld: {_tail(self.dir / 'slurmctld.log')}; "
                f"slurmd: {_tail(self.dir / 'slurmd.log')}") from None

    def run(self, argv: list[str], check: bool = True, timeout: float = 30.0,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(argv, env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout, check=check)

    def cancel_all(self) -> None:
        self.run(["scancel", "--full", "-u", "root"], check=False)

    def stop(self) -> None:
        """Cancel every job, kill the daemons (and any step left), remove the state."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.cancel_all()
            time.sleep(1.0)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _kill_stepds(self.dir)
        shutil.rmtree(self.dir / "state", ignore_errors=True)
        shutil.rmtree(self.dir / "spool", ignore_errors=True)


def _kill_stepds(d: Path) -> None:
    """slurmstepd processes of this cluster that outlived slurmd (they run in their own session)."""
    conf = str(d / "slurm.conf")
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        try:
            env = (pid_dir / "environ").read_bytes().split(b"\0")
            comm = (pid_dir / "comm").read_text().strip()
        except OSError:
            continue
        if comm == "slurmstepd" and f"SLURM_CONF={conf}".encode() in env:
            try:
                os.kill(int(pid_dir.name), signal.SIGKILL)
            except ProcessLookupError:
                pass
