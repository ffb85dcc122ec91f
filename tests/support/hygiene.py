"""Does a test session leave the machine as it found it? What it may leave behind: the lab's
ops account, a sudoers drop-in, a lab process (servers, ranks, router, sshd, fake servers),
a listening socket. `Machine.now()` at the start, `leftovers(start, workdir)` at the end."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from pathlib import Path

import psutil

from pdforensics.lab.procs import LAB_DIR_ENV
from pdforensics.lab.sudo_user import RECORD, SUDOERS_DIR, SUDOERS_PREFIX

LAB_USERS = ("pdfx", "pdfxtest")  # the ops accounts the tests and benchmarks ask the lab for


@dataclass(frozen=True)
class Machine:
    accounts: frozenset[str]
    drop_ins: frozenset[str]

    @classmethod
    def now(cls) -> Machine:
        try:
            drop_ins = frozenset(p.name for p in SUDOERS_DIR.iterdir() if p.name.startswith(SUDOERS_PREFIX))
        except OSError:
            drop_ins = frozenset()
        return cls(frozenset(e.pw_name for e in pwd.getpwall()), drop_ins)


def _under(text: str, root: str) -> bool:
    return text == root or text.startswith(root + os.sep)


def _ours(proc: psutil.Process, root: str, descendants: set[int]) -> bool:
    """Started by this session: a descendant still attached, or working in / naming its workdir."""
    if proc.pid in descendants:
        return True
    try:
        return (_under(proc.cwd(), root) or any(_under(a, root) for a in proc.cmdline())
                or _under(proc.environ().get(LAB_DIR_ENV, ""), root))
    except psutil.Error:
        return False


def leftover_processes(workdir: Path) -> list[psutil.Process]:
    me = psutil.Process()
    descendants = {p.pid for p in me.children(recursive=True)}
    root = str(workdir.resolve())
    return [p for p in psutil.process_iter() if p.pid != me.pid and _ours(p, root, descendants)]


def listening(pids: set[int]) -> list[str]:
    """host:port of every TCP listener held by one of pids."""
    out = []
    for c in psutil.net_connections(kind="tcp"):
        if c.status == psutil.CONN_LISTEN and c.pid in pids and c.laddr:
            out.append(f"{c.laddr.ip}:{c.laddr.port} (pid {c.pid})")
    return out


def leftovers(start: Machine, workdir: Path) -> list[str]:
    """What this session left: one line each; empty when the machine is as it was."""
    end = Machine.now()
    problems = [f"account {u!r} created during the session is still there"
                for u in sorted(end.accounts - start.accounts) if u in LAB_USERS]
    problems += [f"sudoers drop-in {SUDOERS_DIR / n} created during the session is still there"
                 for n in sorted(end.drop_ins - start.drop_ins)]
    problems += [f"lab ops user not revoked: {p}" for p in sorted(workdir.rglob(RECORD))]
    procs = leftover_processes(workdir)
    for p in procs:
        try:
            problems.append(f"process {p.pid} still running: {' '.join(p.cmdline()) or p.name()}")
        except psutil.Error:
            continue
    problems += [f"still listening: {x}" for x in listening({p.pid for p in procs} | {os.getpid()})]
    return problems
