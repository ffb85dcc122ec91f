"""Options shared by several commands: durations, --fail-on, -q/--quiet, where the cluster
file comes from. One definition each, so every command reads them the same way."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pdforensics.errors import ConfigError, ExitStatus

F = TypeVar("F", bound=Callable[..., Any])

CLUSTER_ENV = "PDFORENSICS_CLUSTER"
#: the cluster file used when neither -c, HOST arguments, --local nor $PDFORENSICS_CLUSTER say
DEFAULT_CLUSTER_FILE = Path("/etc/pdforensics/cluster.toml")


class Duration(click.ParamType):  # type: ignore[type-arg]
    """30s, 10m, 2h, 1h30m, or seconds; always > 0."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from pdforensics.prometheus.api import parse_duration

        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        try:
            return parse_duration(str(value))
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)


DURATION = Duration()


class SinceType(click.ParamType):  # type: ignore[type-arg]
    """--since: a duration before the capture (30m, 2h) or a time (2026-12-04T16:47:00Z)."""

    name = "duration|time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from pdforensics.views.window import Since, parse_since

        if isinstance(value, Since):
            return value
        try:
            return parse_since(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


SINCE = SinceType()
SINCE_HELP = ("Evidence window start: a duration before the capture (30m, 2h) or a time "
              "(2026-12-04T16:47:00Z, UTC unless it says). Older log lines, breaker transitions "
              "and Xids are shown as history and never set the verdict. Default: the later of each "
              "server's start and 10 min before the capture.")


def since_option(fn: F) -> F:
    return click.option("--since", "since", type=SINCE, metavar="DURATION|TIME", help=SINCE_HELP)(fn)

# -- --fail-on ----------------------------------------------------------------------------------
FAIL_LEVELS = ("DEGRADED", "WEDGED", "OUTAGE")
#: how bad each verdict is; UNKNOWN (the tool could not tell) counts as DEGRADED; an OUTAGE
#: (every request fails now) is worse than a wedge
_RANK = {"HEALTHY": 0, "UNKNOWN": 1, "DEGRADED": 1, "WEDGED": 2, "OUTAGE": 3}


def fail_on_option(fn: F) -> F:
    return click.option(
        "--fail-on", "fail_on", type=click.Choice(FAIL_LEVELS, case_sensitive=False),
        help=f"Exit {int(ExitStatus.VERDICT)} when the verdict is this bad or worse, "
             f"{int(ExitStatus.OUTAGE)} when it is OUTAGE (UNKNOWN counts as DEGRADED); without "
             "it the verdict never sets the exit code.")(fn)


def fails(verdict: str | None, fail_on: str | None) -> bool:
    """True when --fail-on was given and the verdict reaches it."""
    if fail_on is None or verdict is None:
        return False
    return _RANK.get(verdict, 1) >= _RANK[fail_on.upper()]


def verdict_exit(verdict: str | None, fail_on: str | None) -> ExitStatus | None:
    """The exit status --fail-on asks for: 8 for an OUTAGE, 4 for another verdict that
    reaches the level, None when it does not (or --fail-on was not given)."""
    if not fails(verdict, fail_on):
        return None
    return ExitStatus.OUTAGE if verdict == "OUTAGE" else ExitStatus.VERDICT


def quiet_option(fn: F) -> F:
    return click.option("-q", "--quiet", is_flag=True,
                        help="No progress and no summary: only the result line(s).")(fn)


def verbose_option(fn: F) -> F:
    return click.option("-v", "--verbose", is_flag=True,
                        help="Say more: every gap, skipped rule and history line.")(fn)


# -- the cluster file ---------------------------------------------------------------------------
def configured_cluster_file(explicit: str | None) -> str | None:
    """-c FILE, else $PDFORENSICS_CLUSTER, else /etc/pdforensics/cluster.toml when it exists.

    A configured file that does not exist is an error later (load_cluster_file), never a
    silent fall back to the local machine."""
    if explicit:
        return explicit
    if os.environ.get(CLUSTER_ENV):
        return os.environ[CLUSTER_ENV]
    return str(DEFAULT_CLUSTER_FILE) if DEFAULT_CLUSTER_FILE.exists() else None


def cluster_help(what: str = "Cluster file (TOML)") -> str:
    return f"{what} [${CLUSTER_ENV}, else {DEFAULT_CLUSTER_FILE} if it exists]."


# -- scope on shared nodes ---------------------------------------------------------------------
def scope_options(fn: F) -> F:
    """--port, --service, --all-users: which SGLang services of a host are captured."""
    fn = click.option("--all-users", is_flag=True,
                      help="Also capture SGLang services of other users on a shared node (without "
                           "a cluster file they are listed, not captured).")(fn)
    fn = click.option("--service", "services", multiple=True, metavar="ROLE:PORT",
                      help="Capture only this service on each host without declared services "
                           "(router|prefill|decode|unified:PORT; repeatable), like "
                           "[[hosts.services]].")(fn)
    return click.option("--port", "ports", multiple=True, type=click.IntRange(1, 65535),
                        help="Capture only SGLang services listening on this port (repeatable); "
                             "the others found are listed, not captured.")(fn)


def apply_scope(cluster: Any, ports: tuple[int, ...], services: tuple[str, ...], all_users: bool,
                from_file: bool) -> Any:
    """The cluster with the scope set on each host that declares no services: `--service`
    declares them, `--port` limits discovery, and without a cluster file another user's
    services are listed, not captured, unless --all-users."""
    from dataclasses import replace

    from pdforensics.model import ServiceSpec

    declared = tuple(_service_spec(s) for s in services)
    hosts = []
    for h in cluster.hosts:
        if h.services:
            hosts.append(h)
            continue
        hosts.append(replace(h, services=declared or h.services, scope_ports=tuple(ports),
                             all_users=all_users or from_file))
    assert all(isinstance(s, ServiceSpec) for s in declared)
    return replace(cluster, hosts=tuple(hosts))


def _service_spec(text: str) -> Any:
    from pdforensics.model import ServiceSpec

    role, _, port = text.partition(":")
    if role not in ("router", "prefill", "decode", "unified") or not port.isdigit():
        raise click.BadParameter(f"{text!r}: use ROLE:PORT, ROLE router|prefill|decode|unified",
                                 param_hint="--service")
    return ServiceSpec(role=role, port=int(port))  # type: ignore[arg-type]
