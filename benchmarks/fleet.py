"""N loopback SSH hosts, each a stock sshd plus one lab stand-in SGLang server, for the benchmarks.

Host i (1..N) listens on 127.0.1.i: sshd on FLEET_SSH_PORT, its server on 41000+i (prefill hosts
also bind their bootstrap port 41100+i). Odd hosts run a prefill server, even hosts a decode
server, each `python -m sglang.launch_server ... --tp-size T` from the lab's stand-ins (an HTTP
process, T scheduler ranks, a detokenizer) with the lab's fake nvidia-smi. Every host has its own
lab directory (fault file, rank state, logs), so hosts do not share state. Only ports 41000-41999.

Reuses the lab's internals (sshd.prepare / sshd_argv / ensure_sudo_user, servers.server_argv /
server_env / install_nvidia_smi, procs.spawn / kill_all). Every process is killed on exit:
`with fleet(...)` (try/finally), plus an atexit hook and SIGTERM turned into SystemExit.
"""

from __future__ import annotations

import atexit
import json
import os
import pwd
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pdforensics.lab import sshd
from pdforensics.lab.cluster_file import _py_spy
from pdforensics.lab.core import _http_ok
from pdforensics.lab.layout import LabHost, Ports
from pdforensics.lab.procs import LAB_DIR_ENV, check_port_free, kill_all, spawn
from pdforensics.lab.servers import install_nvidia_smi, server_argv, server_env

FLEET_SSH_PORT = 41900
SERVER_PORT0 = 41000
BOOTSTRAP_PORT0 = 41100
MAX_HOSTS = 99
READY_TIMEOUT_S = 180.0
# What a GPU host's login shell costs: conda's or pyenv's init in the rc file runs a Python
# process (`conda shell.bash hook`) for every command sshd starts, about 0.2 CPU-s.
LOGIN_RC_CPU_S = 0.2
LOGIN_RC = """# ~/.bashrc: Debian's bash sources it for every command sshd starts; this burns what a
# conda-initialised rc burns (`eval "$(conda shell.bash hook)"`)
/usr/bin/python3 -I -S -c 'import time
end = time.process_time() + {cpu_s}
while time.process_time() < end: pass'
"""
# The ops user whose ~/.bashrc burns it: the fleet's own account (created and removed with the
# fleet), so the lab's shared `pdfx` keeps its cheap shell for everyone else's tests.
RC_USER = "pdfxgpu"
DEBIAN_SFTP_SERVER = "/usr/lib/openssh/sftp-server"  # run through the login shell, as stock sshd does


@dataclass(frozen=True)
class FleetHost:
    name: str
    role: str
    bind: str
    port: int
    lab_dir: Path  # this host's own lab directory (PDFX_LAB_DIR of its server)
    tp: int


@dataclass
class Fleet:
    """A running fleet: its directory, hosts, cluster file and every process it started."""

    dir: Path
    hosts: tuple[FleetHost, ...]
    cluster_file: Path
    user: str
    procs: dict[str, psutil.Process] = field(default_factory=dict)

    def sshd_pid(self, host: FleetHost) -> int:
        return self.procs[f"sshd:{host.name}"].pid

    def sshd_cpu(self, host: FleetHost) -> float | None:
        """CPU seconds the host's sshd and everything it started used so far (sessions, shells,
        sudo, the commands), from its cpuacct cgroup: exact even where a process exits before
        its parent reaps it (a process tree's reaped-children times miss those); None without."""
        try:
            return int((_cgroup(self.dir, host) / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def server_pid(self, host: FleetHost) -> int:
        return self.procs[f"server:{host.name}"].pid

    def subset(self, n: int, user: str | None = None) -> Path:
        """A cluster file naming the first n hosts only, logging in as user (default: the fleet's)."""
        user = user or self.user
        return write_cluster(self, self.hosts[:n], self.dir / f"cluster-{n}-{user}.toml", user)


def fleet_hosts(root: Path, n: int, tp: int) -> tuple[FleetHost, ...]:
    if not 1 <= n <= MAX_HOSTS:
        raise ValueError(f"1 <= n <= {MAX_HOSTS}")
    out = []
    for i in range(1, n + 1):
        role = "prefill" if i % 2 else "decode"
        name = f"{role}-{i:02d}"
        out.append(FleetHost(name, role, f"127.0.1.{i}", SERVER_PORT0 + i, root / "hosts" / name, tp))
    return tuple(out)


def _lab_host(h: FleetHost) -> LabHost:
    return LabHost(h.name, h.role, h.bind, h.bind, tuple(range(h.tp)))


def _ports(h: FleetHost) -> Ports:
    i = h.port - SERVER_PORT0
    return Ports(prefill=h.port, decode=h.port, bootstrap=BOOTSTRAP_PORT0 + i, router=0, router_metrics=0,
                 ssh=FLEET_SSH_PORT)


def _argv(h: FleetHost) -> list[str]:
    argv = server_argv(_lab_host(h), _ports(h))
    argv[argv.index("--tp-size") + 1] = str(h.tp)
    return argv


def write_cluster(f: Fleet, hosts: tuple[FleetHost, ...], path: Path, user: str) -> Path:
    """Cluster file for `hosts`, logging in as user (a non-root user gets sudo = true)."""
    py_spy = _py_spy()
    lines = ["[cluster]", f'name = "fleet{len(hosts)}"', ""]
    for h in hosts:
        nvsmi = h.lab_dir / "hosts" / h.name / "bin" / "nvidia-smi"
        lines += ["[[hosts]]", f"name = {json.dumps(h.name)}", f"address = {json.dumps(h.bind)}",
                  f"port = {FLEET_SSH_PORT}", f"user = {json.dumps(user)}",
                  f"identity = {json.dumps(str(f.dir / 'keys' / 'id_ed25519'))}",
                  f"known_hosts = {json.dumps(str(f.dir / 'keys' / 'known_hosts'))}",
                  f"nvidia_smi = {json.dumps(str(nvsmi))}", "simulated_gpu = true"]
        if user != "root":
            lines.append("sudo = true")
        if py_spy:
            lines.append(f"py_spy = {json.dumps(py_spy)}")
        lines += ["", "[[hosts.services]]", f"role = {json.dumps(h.role)}", f"port = {h.port}",
                  f"log_file = {json.dumps(str(h.lab_dir / 'logs' / (h.role + '.log')))}", ""]
    path.write_text("\n".join(lines))
    return path


def _ready(h: FleetHost) -> bool:
    ranks = all((h.lab_dir / "run" / h.role / f"rank{r}.json").exists() for r in range(h.tp))
    return ranks and sshd.banner_ready(h.bind, FLEET_SSH_PORT) and _http_ok(f"http://{h.bind}:{h.port}/health")


def fleet_down(f: Fleet) -> None:
    """Kill every process of the fleet: recorded roots, their descendants, and any process
    whose environment or sshd config names the fleet directory; then revoke the ops user. Idempotent."""
    found: dict[int, psutil.Process] = {}
    for proc in f.procs.values():
        try:
            if proc.is_running():
                found[proc.pid] = proc
                for child in proc.children(recursive=True):
                    found[child.pid] = child
        except psutil.Error:
            pass
    root, me = str(f.dir), os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if proc.pid in found or proc.pid == me:
            continue
        try:
            if any(a.startswith(root + os.sep) for a in proc.info["cmdline"] or []) \
                    or proc.environ().get(LAB_DIR_ENV, "").startswith(root + os.sep):
                found[proc.pid] = proc
        except psutil.Error:
            continue
    try:
        left = kill_all(list(found.values()))
    finally:
        sshd.revoke_sudo_user(f.dir)  # the ops user's account (if made here) and sudoers drop-in
        _drop_cgroups(f.dir)
    if left:
        raise RuntimeError(f"fleet: could not stop {', '.join(str(p.pid) for p in left)}")


def login_rc(user: str, cpu_s: float) -> Path:
    """Write the fleet user's ~/.bashrc (its account is the fleet's own: userdel -r removes it)."""
    entry = pwd.getpwnam(user)
    path = Path(entry.pw_dir) / ".bashrc"
    path.write_text(LOGIN_RC.format(cpu_s=cpu_s))
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _cgroup(root: Path, host: FleetHost) -> Path:
    return CPUACCT / f"pdfx-fleet-{root.name}" / host.name


def _account(root: Path, host: FleetHost, pid: int) -> None:
    """Put the host's sshd in its own cpuacct cgroup (its children inherit it), if there is one."""
    try:
        group = _cgroup(root, host)
        group.mkdir(parents=True, exist_ok=True)
        (group / "cgroup.procs").write_text(f"{pid}\n")
    except OSError:
        pass


def _drop_cgroups(root: Path) -> None:
    base = CPUACCT / f"pdfx-fleet-{root.name}"
    for group in (base.iterdir() if base.is_dir() else []):
        try:
            group.rmdir()
        except OSError:
            pass
    try:
        base.rmdir()
    except OSError:
        pass


def _sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def fleet(root: Path, n: int, tp: int = 1, fault: str = "transfer-stuck", user: str | None = None,
          login_rc_cpu_s: float = LOGIN_RC_CPU_S) -> Iterator[Fleet]:
    """Bring up n hosts under root, yield the Fleet, kill everything on the way out. Every
    command's login shell (and the SFTP server's) first burns login_rc_cpu_s (0: a bare shell,
    logging in as the lab's `pdfx`; else as RC_USER, whose ~/.bashrc burns it)."""
    root = Path(root).resolve()
    user = user or (RC_USER if login_rc_cpu_s > 0 else "pdfx")
    hosts = fleet_hosts(root, n, tp)
    for h in hosts:
        for port in (FLEET_SSH_PORT, h.port) + ((_ports(h).bootstrap,) if h.role == "prefill" else ()):
            check_port_free(h.bind, port)
    sshd.require_tools()
    f = Fleet(root, hosts, root / "cluster.toml", user)
    signal.signal(signal.SIGTERM, _sigterm)
    atexit.register(fleet_down, f)
    try:
        sshd.prepare(root, tuple(_lab_host(h) for h in hosts), FLEET_SSH_PORT)
        for h in hosts:  # say why a connection ended (client close, signal, error) in logs/sshd-<host>.log
            conf = root / "sshd" / f"{h.name}.conf"
            text = conf.read_text() + "LogLevel VERBOSE\n"
            if os.path.exists(DEBIAN_SFTP_SERVER):
                text = text.replace("Subsystem sftp internal-sftp", f"Subsystem sftp {DEBIAN_SFTP_SERVER}")
            conf.write_text(text)
        if user != "root":
            sshd.ensure_sudo_user(user, root)
            if user == RC_USER:
                grant = sshd.sudo_user.read_grant(root)
                if grant is None or not grant.created:
                    raise RuntimeError(f"fleet: user {user} existed before the fleet; its ~/.bashrc "
                                       "is not the fleet's to write")
                login_rc(user, login_rc_cpu_s)
                os.chmod(root, 0o711)  # the services' logs are the login user's to read, as often
        for h in hosts:
            for sub in ("logs", "run"):
                (h.lab_dir / sub).mkdir(parents=True, exist_ok=True)
            (h.lab_dir / "fault").write_text(fault + "\n")
            (h.lab_dir / "lab.json").write_text(json.dumps(
                {"hosts": [{"name": h.name, "role": h.role, "gpus": list(range(tp))}]}))
            install_nvidia_smi(h.lab_dir, _lab_host(h))
            f.procs[f"sshd:{h.name}"] = spawn(sshd.sshd_argv(root, _lab_host(h)), dict(os.environ),
                                              root / "logs" / f"sshd-{h.name}.log", root)
            _account(root, h, f.procs[f"sshd:{h.name}"].pid)
            f.procs[f"server:{h.name}"] = spawn(_argv(h), server_env(h.lab_dir, _lab_host(h), None),
                                                h.lab_dir / "logs" / f"{h.role}.log", h.lab_dir)
        end = time.monotonic() + READY_TIMEOUT_S
        waiting = list(hosts)
        while waiting and time.monotonic() < end:
            waiting = [h for h in waiting if not _ready(h)]
            time.sleep(0.3)
        if waiting:
            raise RuntimeError(f"fleet: {len(waiting)} host(s) not ready in {READY_TIMEOUT_S:.0f} s, e.g. "
                               f"{waiting[0].name}; see {waiting[0].lab_dir / 'logs'}")
        write_cluster(f, hosts, f.cluster_file, user)
        yield f
    finally:
        fleet_down(f)
        atexit.unregister(fleet_down)


def main() -> None:
    """`python benchmarks/fleet.py N`: bring a fleet up, print its cluster file, wait for Ctrl-C."""
    import sys
    import tempfile

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    with fleet(Path(tempfile.mkdtemp(prefix="pdfx-fleet-")), n) as f:
        print(f.cluster_file, flush=True)
        try:
            while True:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
