"""systemd state and unit files; where systemd is absent, /proc start times stand in."""

from __future__ import annotations

from pdforensics.collectors.base import CHEAP, KIB, NORMAL, Runs, Source, register
from pdforensics.collectors.feeds import Feed, first_ok, first_ok_text

SHOW_PROPERTIES = (
    "Id,LoadState,ActiveState,SubState,Result,ActiveEnterTimestamp,ExecMainStartTimestamp,"
    "ExecMainPID,MainPID,NRestarts,ExecStart,Environment,EnvironmentFiles,FragmentPath,"
    "DropInPaths,InactiveExitTimestamp,StateChangeTimestamp"
)


SYSTEMCTL_SHOW = register(Source(
    name="systemctl_show", description="unit state: restarts, start times, MainPID, ExecStart",
    scope="unit",
    build=lambda host, t: ("systemctl", "show", "--no-pager", f"--property={SHOW_PROPERTIES}",
                           "--", t.unit_name),
    timeout_s=5, max_bytes=256 * KIB, priority=CHEAP, parser="systemd:parse_systemctl_show",
    sample="systemd_show_running.txt", feeds=Feed("service.systemd", first_ok), runs=Runs.PER_UNIT,
))

UNIT_FILE = register(Source(
    name="unit_file", description="unit file text with its drop-ins (systemctl cat)",
    scope="unit", build=lambda host, t: ("systemctl", "cat", "--no-pager", "--", t.unit_name),
    timeout_s=5, max_bytes=256 * KIB, priority=NORMAL, parser="unitfile:parse_unit_files",
    sample="systemd_cat_decode.txt", feeds=Feed("service.unit_file", first_ok_text),
    runs=Runs.PER_UNIT, config=True,
))
