"""Stacks: py-spy present (and its version), can it attach to the servers, `--native`.

Attach is judged from facts (uid, CAP_SYS_PTRACE, yama ptrace_scope, the servers' owners)
plus a real dump of a throwaway process the probe starts and kills: never of a server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pdforensics.doctor.inputs import DoctorInput
from pdforensics.doctor.model import Check, fail, ok, warn
from pdforensics.doctor.probes import DOCTOR_ATTACH, DOCTOR_HOST

INSTALL_FIX = ("install py-spy where the login user finds it (`pip install py-spy` into a "
               "directory on PATH), or set py_spy = \"/path/to/py-spy\" for this host in the "
               "cluster file")
PRIV_FIX = ("capture as root, or set sudo = true for this host with passwordless sudo, or give "
            "py-spy CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep $(which py-spy))")


def stack_checks(d: DoctorInput) -> Iterator[Check]:
    for h in d.hosts:
        info = d.probe(h.name, DOCTOR_HOST.name)
        if not h.reachable or info is None or info.doc is None:
            continue
        spec = d.spec(h.name)
        wanted = spec.py_spy if spec is not None else "py-spy"
        found = info.doc.get("py_spy")
        if not found:
            yield fail("pyspy_present", h.name, f"{wanted!r} not found on the login PATH: "
                       "the next capture gets no Python stacks", INSTALL_FIX)
            continue
        version = info.doc.get("py_spy_version") or "version unknown"
        yield ok("pyspy_present", h.name, f"{found} ({version})")
        attach = d.probe(h.name, DOCTOR_ATTACH.name)
        if attach is None or attach.doc is None:
            why = attach.failure if attach is not None else "not run"
            yield fail("pyspy_attach", h.name, f"the attach probe did not run: {why}", PRIV_FIX)
            continue
        yield _attach(h.name, attach.doc, info.doc.get("container") or [])
        native = attach.doc.get("native") or {}
        if native.get("ok"):
            yield ok("pyspy_native", h.name, "py-spy dump --native works")
        else:
            yield warn("pyspy_native", h.name, f"py-spy dump --native failed: {native.get('err') or '?'}",
                       "use a py-spy build with unwinding support (pip wheels for x86_64/aarch64 "
                       "Linux have it); without it C/CUDA frames of a hung rank stay hidden")


def _attach(host: str, doc: dict[str, Any], container: list[str]) -> Check:
    uid, cap = doc.get("uid"), bool(doc.get("cap_sys_ptrace"))
    scope = str(doc.get("ptrace_scope") or "0")  # no file: no Yama LSM, classic ptrace rules
    privileged = uid == 0 or cap
    owners = [u for u in doc.get("server_uids") or [] if u != uid]
    facts = (f"uid {uid}, CAP_SYS_PTRACE {'yes' if cap else 'no'}, ptrace_scope "
             + (scope if doc.get("ptrace_scope") else "n/a (no Yama)"))
    if container:
        facts += ", container (" + ", ".join(container) + ")"
    dump = doc.get("dump") or {}
    if scope == "3":
        return fail("pyspy_attach", host, f"{facts}: yama forbids every ptrace until reboot",
                    "set kernel.yama.ptrace_scope=1 (or 0) in /etc/sysctl.d and reboot")
    if not privileged and owners:
        return fail("pyspy_attach", host, f"{facts}: the servers run as uid "
                    f"{', '.join(map(str, owners))}, which this user cannot trace", PRIV_FIX)
    if not privileged and scope != "0":
        return fail("pyspy_attach", host, f"{facts}: yama only lets a non-root user trace "
                    "its own children", "sysctl kernel.yama.ptrace_scope=0, or " + PRIV_FIX)
    if scope == "2" and not cap:
        return fail("pyspy_attach", host, f"{facts}: ptrace_scope 2 needs CAP_SYS_PTRACE",
                    "add CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE; k8s securityContext "
                    "capabilities.add) or set ptrace_scope to 1")
    if not dump.get("ok"):
        fix = ("run the container with --cap-add SYS_PTRACE (k8s: securityContext.capabilities.add)"
               if container else PRIV_FIX)
        return fail("pyspy_attach", host, f"{facts}: a throwaway process could not be dumped: "
                    f"{dump.get('err') or 'no output'}", fix)
    return ok("pyspy_attach", host, f"{facts}: a throwaway process was dumped")
