"""py-spy dumps of scheduler ranks, tokenizer and detokenizer (last: it pauses the target)."""

from __future__ import annotations

import os

from pdforensics.collectors.base import MIB, STACKS, Repeat, Runs, Source, Switch, Target, register
from pdforensics.collectors.feeds import Feed, stack_dump
from pdforensics.model import HostSpec
from pdforensics.sglang.discovery import Discovery

PYSPY_TIMEOUT_S = 20
# py-spy keeps its process stopped while it reads the stacks: at a higher priority than the
# host's busy threads (ranks spinning in a collective, our own commands) it spends less of that
# time waiting for a core. Only as root: anyone else's `nice` prints "cannot set niceness:
# Permission denied", which would read as py-spy's own failure.
PRIORITY = ("nice", "-n", "-10")


def runs_as_root(host: HostSpec) -> bool:
    """Whether the host's commands run as root: through sudo, a root login, or root here."""
    return host.sudo or host.user == "root" or (host.is_local and os.geteuid() == 0)


def build_dump(host: HostSpec, t: Target) -> tuple[str, ...]:
    assert t.process is not None
    argv = [*(PRIORITY if runs_as_root(host) else ()), host.py_spy, "dump", "--pid", str(t.process.pid)]
    # py-spy pauses the process to read it; a D/T-state process may never answer ptrace
    if t.process.state in ("D", "T", "t"):
        argv.append("--nonblocking")
    return tuple(argv)


# which processes of a service get a dump
DUMPED_KINDS = ("scheduler", "detokenizer", "tokenizer", "server", "router")


def dumped(host: HostSpec, d: Discovery, t: Target) -> bool:
    """The processes py-spy dumps: SGLang's own (their titles hide the interpreter), and a
    router that runs in Python."""
    p = t.process
    if p is None or p.kind not in DUMPED_KINDS:
        return False
    if p.kind in ("scheduler", "detokenizer", "tokenizer", "server"):
        return True
    first = p.args.split()[0].rsplit("/", 1)[-1] if p.args.split() else ""
    return "python" in first


PYSPY_DUMP = register(Source(
    name="pyspy", description="Python stacks of one process (py-spy dump)",
    scope="process", build=build_dump, timeout_s=PYSPY_TIMEOUT_S, max_bytes=4 * MIB,
    priority=STACKS, parser="pyspy:parse_pyspy_text", sample="pyspy_basic.txt",
    privileged=True, feeds=Feed("process.stacks", stack_dump),
    runs=Runs.PER_PROCESS, switch=Switch.STACKS, only=dumped, repeats=Repeat.DUMPS,
))
