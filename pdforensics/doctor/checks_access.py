"""Capture access: SSH login, `sudo -n`, sshd MaxSessions, the tools every capture runs,
the host's clock, and room for evidence on this machine."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from pdforensics.capture.host_run import DEFAULT_CHANNELS
from pdforensics.doctor.inputs import DoctorInput, Probe
from pdforensics.doctor.model import THIS_MACHINE, Check, fail, ok, warn
from pdforensics.doctor.probes import DOCTOR_ATTACH, DOCTOR_HOST

#: tools without which a capture loses everything (timeout wraps every command) or a family
REQUIRED_TOOLS = {"timeout": "every remote command runs under `timeout -k`",
                  "ps": "discovery reads the process table", "ss": "discovery maps ports to pids"}
CLOCK_WARN_S = 1.0
DISK_FAIL_B = 1 << 30
DISK_WARN_B = 5 << 30


def access_checks(d: DoctorInput) -> Iterator[Check]:
    for h in d.hosts:
        if not h.reachable:
            yield fail("ssh_login", h.name, f"cannot log in: {h.error}",
                       "check the address, user, key and known_hosts in the cluster file "
                       "(`ssh -i KEY USER@HOST true` must work without a prompt)")
            continue
        yield ok("ssh_login", h.name, f"logged in ({h.address})")
        spec = d.spec(h.name)
        attach = d.probe(h.name, DOCTOR_ATTACH.name)
        if spec is not None and spec.sudo:
            yield _sudo(h.name, attach)
        info = d.probe(h.name, DOCTOR_HOST.name)
        if info is None or info.doc is None:
            why = info.failure if info is not None else "not run"
            yield fail("host_probe", h.name, f"the host probe (python3 -I -S) did not answer: {why}",
                       "install python3 on the host: doctor and the version collector need it")
            continue
        yield from _tools(h.name, info)
        yield _max_sessions(h.name, info)
        yield _clock(h.name, info)


def _sudo(host: str, attach: Probe | None) -> Check:
    if attach is not None and not attach.entry.ok and "sudo" in attach.entry.stderr:
        return fail("sudo", host, f"`sudo -n` refused: {attach.failure}",
                    "grant the capture user passwordless sudo for timeout, py-spy, python3, "
                    "nvidia-smi (NOPASSWD in /etc/sudoers.d), or set sudo = false and run as root")
    if attach is None:
        return warn("sudo", host, "not checked (the probe did not run)", "rerun doctor with a longer --deadline")
    return ok("sudo", host, "`sudo -n` runs without a password")


def _tools(host: str, info: Probe) -> Iterator[Check]:
    assert info.doc is not None
    tools = info.doc.get("tools") or {}
    missing = [t for t in REQUIRED_TOOLS if not tools.get(t)]
    if missing:
        yield fail("capture_tools", host, "not on the login PATH: " + ", ".join(
                   f"{t} ({REQUIRED_TOOLS[t]})" for t in missing),
                   "install coreutils (timeout), procps (ps) and iproute2 (ss) on the host")
    else:
        yield ok("capture_tools", host, "timeout, ps, ss on PATH")
    if not tools.get("curl"):
        yield warn("curl", host, "curl is not on the login PATH",
                   "install curl: endpoints are read through it when sshd refuses port forwarding")
    else:
        yield ok("curl", host, f"curl at {tools['curl']}")


def _max_sessions(host: str, info: Probe) -> Check:
    assert info.doc is not None
    conf, value = info.doc.get("sshd_config"), info.doc.get("max_sessions")
    if not info.doc.get("sshd_readable"):
        return ok("ssh_max_sessions", host, f"{conf} not readable by the login user; "
                  "sshd's default (10) assumed")
    try:
        n = int(str(value)) if value is not None else 10
    except ValueError:
        return warn("ssh_max_sessions", host, f"MaxSessions {value!r} in {conf} is not a number",
                    "fix MaxSessions in sshd_config")
    if n <= DEFAULT_CHANNELS:
        return warn("ssh_max_sessions", host, f"MaxSessions {n} in {conf}: a capture uses "
                    f"{DEFAULT_CHANNELS} channels plus its probe and slows down",
                    f"set MaxSessions {DEFAULT_CHANNELS + 4} or more in {conf} and reload sshd")
    return ok("ssh_max_sessions", host, f"MaxSessions {n}" + ("" if value else " (default)")
              + f" in {conf}")


def _clock(host: str, info: Probe) -> Check:
    assert info.doc is not None
    remote = info.doc.get("clock")
    if not isinstance(remote, int | float):
        return warn("clock_offset", host, "the probe gave no clock reading", "rerun doctor")
    e = info.entry
    mid, slack = e.started_at + e.duration_s / 2, e.duration_s / 2
    offset = float(remote) - mid
    if abs(offset) - slack > CLOCK_WARN_S:
        return warn("clock_offset", host, f"clock {offset:+.1f} s from this machine's "
                    f"(+/- {slack:.1f} s): cross-host timelines will be misaligned",
                    "run chrony or systemd-timesyncd on every host (timedatectl set-ntp true)")
    return ok("clock_offset", host, f"clock within {abs(offset) + slack:.1f} s of this machine's")


def room_checks(dirs: tuple[Path, ...]) -> Iterator[Check]:
    """Free disk where bundles and the snapshot store go (on this machine)."""
    for d in dirs:
        probe = d
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            free = shutil.disk_usage(probe).free
        except OSError as exc:
            yield fail("disk_room", THIS_MACHINE, f"{d}: cannot read free space ({exc})",
                       "create the directory or point -o/--store elsewhere", subject=str(d))
            continue
        gib = free / (1 << 30)
        if free < DISK_FAIL_B:
            yield fail("disk_room", THIS_MACHINE, f"{d}: {gib:.1f} GiB free",
                       "free space or move bundles/store (a capture with stacks and logs needs "
                       "up to ~1 GiB)", subject=str(d))
        elif free < DISK_WARN_B:
            yield warn("disk_room", THIS_MACHINE, f"{d}: {gib:.1f} GiB free",
                       "free space or lower the store's retention", subject=str(d))
        else:
            yield ok("disk_room", THIS_MACHINE, f"{d}: {gib:.1f} GiB free", subject=str(d))
