"""Process table and /proc reads: the cheap evidence, read first."""

from __future__ import annotations

from pdforensics.collectors.base import CHEAP, DISCOVERY, MIB, Runs, Source, Target, register
from pdforensics.collectors.feeds import CAPTURE_LEVEL, Feed, first_ok
from pdforensics.parsers.proc import PS_ARGV
from pdforensics.sglang.discovery import Discovery


def _unitless_root(d: Discovery, t: Target) -> bool:
    """The root process of a service no systemd unit is known for: its cgroup may name one."""
    return any(s.root_pid == t.pid and not s.unit for s in d.services)


PS = register(Source(
    name="ps", description="process table: pid, ppid, state, age, threads, RSS, args",
    scope="host", build=lambda host, t: PS_ARGV, timeout_s=5, max_bytes=8 * MIB,
    priority=DISCOVERY, parser="proc:parse_ps", sample="proc_ps.txt",
    feeds=Feed(f"{CAPTURE_LEVEL}.discovery"),  # parsed/<host>/discovery.json
    retried=True,
))

CMDLINE = register(Source(
    name="cmdline", description="exact argv of an SGLang process (/proc/PID/cmdline)",
    scope="process", build=lambda host, t: ("cat", f"/proc/{t.pid}/cmdline"),
    reads=lambda host, t: f"/proc/{t.pid}/cmdline",
    timeout_s=5, max_bytes=1 * MIB, priority=CHEAP, parser="proc:parse_cmdline",
    sample="proc_cmdline.bin", extension="bin", redaction="argv", feeds=Feed("process.cmdline", first_ok),
    runs=Runs.PER_PROCESS, retried=True, config=True,
))

ENVIRON = register(Source(
    name="environ", description="environment of an SGLang process, secrets redacted",
    scope="process", build=lambda host, t: ("cat", f"/proc/{t.pid}/environ"),
    reads=lambda host, t: f"/proc/{t.pid}/environ",
    timeout_s=5, max_bytes=2 * MIB, priority=CHEAP, parser="proc:parse_environ",
    sample="proc_environ.bin", privileged=True, extension="bin", redaction="environ",
    feeds=Feed("process.environ", first_ok), runs=Runs.PER_PROCESS, retried=True, config=True,
))

CGROUP = register(Source(
    name="cgroup", description="cgroup of a server/router root process (its systemd unit)",
    scope="process", build=lambda host, t: ("cat", f"/proc/{t.pid}/cgroup"),
    reads=lambda host, t: f"/proc/{t.pid}/cgroup",
    timeout_s=5, max_bytes=64 * 1024, priority=CHEAP, parser="proc:parse_cgroup_unit",
    sample="proc_cgroup_systemd.txt", feeds=Feed(f"{CAPTURE_LEVEL}.discovery"),
    runs=Runs.PER_PROCESS, only=lambda host, d, t: _unitless_root(d, t), retried=True,
))
