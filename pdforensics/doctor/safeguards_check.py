"""Self-healing and hooks: each server's safeguards judged against the defaults of its sglang
version (`catalog.safeguards.judge_safeguards`, the same judge SAFEGUARDS_DISABLED uses)."""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.catalog.safeguards import judge_safeguards
from pdforensics.doctor.inputs import DoctorInput
from pdforensics.doctor.model import Check, Status
from pdforensics.views.loaded import HostView, ServiceView

#: a safeguard switched off or too long fails (the next wedge will not heal); an unarmed
#: hook, a setting the version lacks, or a value that cannot be read is a warning
STATUS: dict[str, Status] = {"ok": "ok", "disabled": "fail", "too_long": "fail",
                             "unarmed": "warn", "absent": "warn", "unknown": "warn"}
#: safeguards another check already judges per server: request logging is `request_logging`
#: (one line, one advice), not three lines with two different levels
COVERED = frozenset({"log_requests", "log_requests_level"})


def server_version(host: HostView, s: ServiceView) -> str | None:
    """The server's sglang version: /server_info, else its interpreter's packages."""
    return s.version() or host.packages.get("sglang")


def safeguard_checks(d: DoctorInput) -> Iterator[Check]:
    for h in d.hosts:
        for s in h.services:
            if s.kind == "router" or not s.cmdline:
                continue
            version = server_version(h, s)
            for sg in judge_safeguards(version, s.cmdline, s.environ):
                if sg.key in COVERED:
                    continue
                state = str(sg.state)
                value = "unset" if sg.value is None else repr(sg.value)
                if sg.source == "default":
                    value += " (default)"
                evidence = (f"{sg.name} = {value}; {sg.default_note}: {sg.default}; "
                            f"{state.replace('_', ' ')}" + (f" ({sg.detail})" if sg.detail else ""))
                yield Check(f"safeguard.{sg.key}", h.name, STATUS.get(state, "warn"), evidence,
                            "" if state == "ok" else str(sg.fix), f"{s.role}:{s.port}")
