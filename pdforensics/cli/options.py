"""Options shared by several commands, one definition each so every command reads them the
same way: durations, --fail-on, where the cluster file comes from, and the option groups.

An option group adds its options to a command and hands them to the command as one value:
``where_options`` (HOST args, -c, --local, ssh keys) -> ``where: Where``, with
``slurm_options`` and ``k8s_options`` adding to the same ``Where``; ``collect_options(PROFILE)``
(--deadline, --samples, ... with the profile's defaults) -> ``collect: Collect``;
``output_options(...)`` (-q, -v, --json, --markdown) -> ``out: Output``. A command offers a
group's option by naming it; the options it does not offer keep their defaults.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar

import click

from pdforensics.app.targets import Where
from pdforensics.capture.profiles import PROFILES, Collect, ProfileName
from pdforensics.errors import ConfigError, ExitStatus

F = TypeVar("F", bound=Callable[..., Any])

CLUSTER_ENV = "PDFORENSICS_CLUSTER"
#: the cluster file used when neither -c, HOST arguments, --local nor $PDFORENSICS_CLUSTER say
DEFAULT_CLUSTER_FILE = Path("/etc/pdforensics/cluster.toml")


class Duration(click.ParamType):  # type: ignore[type-arg]
    """30s, 10m, 2h, 1h30m, or seconds; always > 0."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from pdforensics.durations import parse_duration

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


# -- option groups ------------------------------------------------------------------------------
def packs(param: str, names: Iterable[str], make: Callable[..., Any]) -> Callable[[F], F]:
    """Wrap a command so that the keyword arguments in ``names`` it was given arrive as one
    value ``param = make(**those)`` (what the command does not offer keeps make's default)."""
    wanted = frozenset(names)

    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kw: Any) -> Any:
            given = {n: kw.pop(n) for n in wanted if n in kw}
            return fn(*args, **{param: make(**given)}, **kw)

        return wrapper  # type: ignore[return-value]

    return deco


def _add(fn: F, *options: Callable[[F], F]) -> F:
    """Apply click options so that --help lists them in the order given."""
    for option in reversed(options):
        fn = option(fn)
    return fn


def _where(**given: Any) -> Where:
    explicit = given.get("cluster_file")
    return Where(**given, configured_file=configured_cluster_file(explicit))


def where_options(verb: str, hosts: bool = True,
                  cluster_what: str = "Cluster file (TOML)") -> Callable[[F], F]:
    """The targets: HOST arguments, -c, --local, --identity, --known-hosts, --sudo and
    --accept-new-host-keys (``hosts=False``: only -c) -> ``where: Where``. slurm_options and
    k8s_options add their options to the same Where."""

    def deco(fn: F) -> F:
        cluster = click.option("-c", "--cluster", "cluster_file", envvar=None if hosts else CLUSTER_ENV,
                               type=click.Path(dir_okay=False), help=cluster_help(cluster_what))
        if not hosts:
            return packs("where", _WHERE_FIELDS, _where)(cluster(fn))
        return packs("where", _WHERE_FIELDS, _where)(_add(
            fn, click.argument("hosts", nargs=-1), cluster,
            click.option("--local", is_flag=True,
                         help=f"{verb} this machine (the default with no hosts and no cluster file)."),
            click.option("-i", "--identity", type=click.Path(dir_okay=False), help="SSH key for HOST args."),
            click.option("--known-hosts", type=click.Path(dir_okay=False), help="known_hosts for HOST args."),
            click.option("--sudo", is_flag=True, help="Run privileged collectors through `sudo -n` (HOST args)."),
            click.option("--accept-new-host-keys", is_flag=True,
                         help="Trust unknown host keys (never changed ones).")))

    return deco


def slurm_options(fn: F) -> F:
    """--slurm-job, --slurm-container and --slurm-ssh (into the command's Where)."""
    return _add(
        fn,
        click.option("--slurm-job", metavar="JOBID",
                     help="Capture the servers of this running Slurm job: its nodes from "
                          "scontrol, every collector run with `srun --overlap` into it."),
        click.option("--slurm-container", metavar="NAME",
                     help="With --slurm-job: the Pyxis container name the servers' steps use "
                          "(srun --container-name), so py-spy runs where the servers are."),
        click.option("--slurm-ssh", is_flag=True, default=None,
                     help="With --slurm-job: SSH to each node instead of srun into the job."))


def scope_options(fn: F) -> F:
    """--port, --service, --all-users: which SGLang services of a shared node are captured
    (into the command's Where)."""
    return _add(
        fn,
        click.option("--port", "ports", multiple=True, type=click.IntRange(1, 65535),
                     help="Capture only SGLang services listening on this port (repeatable); the "
                          "others found are listed, not captured."),
        click.option("--service", "services", multiple=True, metavar="ROLE:PORT",
                     help="Capture only this service on each host without declared services "
                          "(router|prefill|decode|unified:PORT; repeatable), like [[hosts.services]]."),
        click.option("--all-users", is_flag=True,
                     help="Also capture SGLang services of other users on a shared node (without a "
                          "cluster file they are listed, not captured)."))


def k8s_options(fn: F) -> F:
    """--k8s, -n, -l, --context, --k8s-debug and --k8s-debug-image (into the command's Where)."""
    return _add(
        fn,
        click.option("--k8s", "use_k8s", is_flag=True,
                     help="Capture SGLang pods through your kubectl and kubeconfig (docs/kubernetes.md)."),
        click.option("-n", "--namespace", help="--k8s: the pods' namespace (default: the context's)."),
        click.option("-l", "--selector", help="--k8s: label selector, or a preset: lws, rbg, ome, gateway-pd."),
        click.option("--context", help="--k8s: kubeconfig context."),
        click.option("--k8s-debug", is_flag=True,
                     help="--k8s: add an ephemeral debug container per pod for py-spy (changes the pod; "
                          "it cannot be removed, it exits after the deadline)."),
        click.option("--k8s-debug-image", help="--k8s-debug: image with py-spy (default python:3.12-slim)."))


_WHERE_FIELDS = tuple(f.name for f in fields(Where) if f.name != "configured_file")
COLLECT_OPTIONS = ("deadline", "samples", "interval", "stacks", "stack_dumps", "probes")


def collect_options(profile: ProfileName, *offered: str) -> Callable[[F], F]:
    """What a capture collects, with the profile's defaults (capture/profiles.py): --deadline,
    --samples, --interval, --stacks/--no-stacks, --stack-dumps, --probes/--no-probes (or only
    those ``offered``) -> ``collect: Collect``."""
    p = PROFILES[profile]
    d = p.defaults
    options = {
        "deadline": click.option("--deadline", default=f"{d.deadline_s:g}s", show_default=True,
                                 type=DURATION, help="How long the whole capture may take (60s, 2m, ...)."),
        "samples": click.option("--samples", default=d.samples, show_default=True, type=click.IntRange(min=1),
                                help="/metrics samples per server (and py-spy dumps per process, unless "
                                     "--stack-dumps says otherwise)."),
        "interval": click.option("--interval", default=f"{d.interval_s:g}s", show_default=True,
                                 type=DURATION, help="Time between /metrics samples."),
        "stacks": click.option("--stacks/--no-stacks", default=d.stacks, show_default=True,
                               help="Take py-spy dumps of the servers' processes."),
        "stack_dumps": click.option(
            "--stack-dumps", type=click.IntRange(min=1),
            help="py-spy dumps per process, spread over >= 10 s (3 tell stuck from busy); default: "
                 + (f"{d.stack_dumps}." if d.stack_dumps else "as many as --samples, at most 3 "
                    "(--samples 1: one quick dump).")),
        "probes": click.option("--probes/--no-probes", default=d.probes, show_default=True,
                               help="The /health_generate probe (one tiny generation per server)."),
    }
    chosen = offered or COLLECT_OPTIONS

    def make(deadline: float | None = None, interval: float | None = None, **given: Any) -> Collect:
        return p.collect(deadline_s=deadline, interval_s=interval, **given)

    def deco(fn: F) -> F:
        return packs("collect", COLLECT_OPTIONS, make)(_add(fn, *(options[n] for n in chosen)))

    return deco


@dataclass(frozen=True)
class Output:
    """How a command prints: -q, -v, --json, --markdown FILE."""

    quiet: bool = False
    verbose: bool = False
    as_json: bool = False
    markdown_file: str | None = None


OUTPUT_HELP = {
    "quiet": "No progress and no summary: only the result line(s).",
    "verbose": "Say more: also what passed, and what happened when all is well.",
    "json": "Print one JSON object instead of text.",
    "markdown": "Also write a short Markdown summary to paste into a ticket (- for stdout).",
}


def output_options(*offered: str, **help_for: str) -> Callable[[F], F]:
    """-q/--quiet, -v/--verbose, --json, --markdown FILE (those ``offered``; ``help_for``
    words one for this command) -> ``out: Output``."""
    text = {**OUTPUT_HELP, **help_for}
    options = {
        "quiet": click.option("-q", "--quiet", is_flag=True, help=text["quiet"]),
        "verbose": click.option("-v", "--verbose", is_flag=True, help=text["verbose"]),
        "json": click.option("--json", "as_json", is_flag=True, help=text["json"]),
        "markdown": _markdown(text["markdown"]),
    }

    def deco(fn: F) -> F:
        return packs("out", ("quiet", "verbose", "as_json", "markdown_file"), Output)(
            _add(fn, *(options[n] for n in offered)))

    return deco


def _markdown(help_text: str) -> Callable[[F], F]:
    return click.option("--markdown", "markdown_file", help=help_text,
                        type=click.Path(dir_okay=False, allow_dash=True))


def markdown_option(fn: F) -> F:
    """--markdown FILE as a plain option (for commands without an Output group)."""
    return _markdown(OUTPUT_HELP["markdown"])(fn)


def verbose_option(fn: F) -> F:
    """-v/--verbose as a plain flag (for commands without an Output group)."""
    return click.option("-v", "--verbose", is_flag=True,
                        help="Say more: every skipped rule and history line.")(fn)
