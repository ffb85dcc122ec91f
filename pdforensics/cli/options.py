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

# -- --fail-on ----------------------------------------------------------------------------------
FAIL_LEVELS = ("DEGRADED", "WEDGED")
#: how bad each verdict is; UNKNOWN (the tool could not tell) counts as DEGRADED
_RANK = {"HEALTHY": 0, "UNKNOWN": 1, "DEGRADED": 1, "WEDGED": 2}


def fail_on_option(fn: F) -> F:
    return click.option(
        "--fail-on", "fail_on", type=click.Choice(FAIL_LEVELS, case_sensitive=False),
        help=f"Exit {int(ExitStatus.VERDICT)} when the verdict is this bad or worse "
             "(UNKNOWN counts as DEGRADED); without it the verdict never sets the exit code.")(fn)


def fails(verdict: str | None, fail_on: str | None) -> bool:
    """True when --fail-on was given and the verdict reaches it."""
    if fail_on is None or verdict is None:
        return False
    return _RANK.get(verdict, 1) >= _RANK[fail_on.upper()]


def quiet_option(fn: F) -> F:
    return click.option("-q", "--quiet", is_flag=True,
                        help="No progress and no summary: only the result line(s).")(fn)


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
