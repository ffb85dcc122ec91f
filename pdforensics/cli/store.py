"""Store commands: snapshot, baseline set/show/clear, diff, timeline (registered in cli.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pdforensics.app.store import StoreAt
from pdforensics.app.targets import Where
from pdforensics.capture.profiles import Collect
from pdforensics.cli.errors import handles_errors
from pdforensics.cli.options import (
    CLUSTER_ENV,
    Output,
    cluster_help,
    collect_options,
    configured_cluster_file,
    fail_on_option,
    output_options,
    packs,
    slurm_options,
    where_options,
)
from pdforensics.errors import ExitStatus

F = TypeVar("F", bound=Callable[..., Any])

STORE_ENV = "PDFORENSICS_STORE"


def store_option(fn: F) -> F:
    return click.option("--store", envvar=STORE_ENV, type=click.Path(file_okay=False),
                        help=f"Store directory [${STORE_ENV}, else the cluster file's `store`, "
                             "else the user data dir].")(fn)


def _store_at(cluster_file: str | None = None, **given: Any) -> StoreAt:
    return StoreAt(configured_cluster_file(cluster_file), **given)


def store_options(name: bool = True) -> Callable[[F], F]:
    """-c, --store and (``name``) --name -> ``at: StoreAt``."""

    def deco(fn: F) -> F:
        if name:
            fn = click.option("--name", "cluster_name",
                              help="Cluster name in the store [the cluster file's, else the newest "
                                   "snapshot's].")(fn)
        fn = store_option(fn)
        fn = click.option("-c", "--cluster", "cluster_file", envvar=CLUSTER_ENV,
                          type=click.Path(dir_okay=False),
                          help=cluster_help("Cluster file (TOML), for the store and cluster name"))(fn)
        return packs("at", ("cluster_file", "store", "cluster_name"), _store_at)(fn)

    return deco


# -- snapshot ---------------------------------------------------------------------------------
@click.command()
@where_options("Snapshot", hosts=False, cluster_what="Cluster file (TOML), for the store and cluster name")
@store_option
@collect_options("snapshot")
@click.option("--keep-last", type=int, help="Retention: keep the newest N [cluster file, else 96].")
@click.option("--keep-days", type=int, help="Retention: one per day for D days [cluster file, else 30].")
@output_options("verbose", "json", verbose="Say what happened even when healthy.",
                json="Print one JSON object (snapshot, verdict, status).")
@fail_on_option
@click.option("--keep-env", "keep_env", multiple=True, metavar="NAME",
              help="Keep this env var's (or flag's) value readable too (repeatable; recorded in the manifest).")
@click.option("--doctor", "with_doctor", is_flag=True,
              help="Also run `doctor`'s checks; kept with the snapshot, so `diff` shows readiness getting worse.")
@slurm_options
@handles_errors
def snapshot(where: Where, store: str | None, collect: Collect, keep_last: int | None,
             keep_days: int | None, out: Output, fail_on: str | None, keep_env: tuple[str, ...],
             with_doctor: bool) -> None:
    """Take a light capture into the store, for cron or a systemd timer.

    Silent while HEALTHY (or -v); one line when not. Exit codes: 0 the snapshot was taken
    (whatever the verdict), 3 partial, 6 nothing collected, 4 the verdict reached --fail-on,
    1 failed to snapshot (also when the snapshot has no verdict), 5 another snapshot still
    holds the store's lock, 2 usage or cluster-file error. Without a cluster file it
    snapshots this machine.
    """
    from pdforensics.app.snapshot import snapshot_of
    from pdforensics.cli.store_text import format_snapshot_text

    outcome = snapshot_of(where, store, collect, keep_last, keep_days, keep_env, with_doctor)
    if out.as_json:
        from pdforensics.cli.store_text import snapshot_json

        click.echo(json.dumps(snapshot_json(outcome), indent=1))
    else:
        click.echo(format_snapshot_text(outcome, out.verbose), nl=False)
    sys.exit(snapshot_exit(outcome, fail_on))


def snapshot_exit(outcome: Any, fail_on: str | None) -> ExitStatus:
    """The capture table (6 nothing collected, 4 --fail-on, 3 partial), 1 when no verdict."""
    from pdforensics.capture.completeness import NOTHING_COLLECTED
    from pdforensics.cli.options import fails

    if outcome.partial_reasons[:1] and outcome.partial_reasons[0] == NOTHING_COLLECTED:
        return ExitStatus.NOTHING_COLLECTED
    if outcome.verdict.verdict is None:
        return ExitStatus.ERROR
    if fails(outcome.verdict.verdict, fail_on):
        return ExitStatus.VERDICT
    return ExitStatus.OK if outcome.capture_status == "complete" else ExitStatus.PARTIAL


# -- baseline ---------------------------------------------------------------------------------
@click.group()
def baseline() -> None:
    """The snapshot `diff` compares with: set explicitly, else the newest HEALTHY one."""


@baseline.command("set")
@click.argument("bundle")
@store_options(name=False)
@handles_errors
def baseline_set(bundle: str, at: StoreAt) -> None:
    """Make BUNDLE (a bundle path or a snapshot name) its cluster's baseline.

    A bundle outside the store is copied into it first.
    """
    from pdforensics.app.store import set_baseline

    snap = set_baseline(at, bundle)
    click.echo(f"baseline of cluster {snap.cluster}: {snap.name} ({snap.verdict or 'no verdict'})")
    if not snap.healthy:
        click.echo(f"note: its verdict is {snap.verdict or 'unknown'}, not HEALTHY", err=True)


@baseline.command("show")
@store_options()
@output_options("json", json="Print JSON.")
@handles_errors
def baseline_show(at: StoreAt, out: Output) -> None:
    """Show the baseline and whether it was set or is the newest HEALTHY snapshot."""
    from pdforensics.app.store import show_baseline
    from pdforensics.cli.store_text import format_baseline_text

    name, base = show_baseline(at)
    if out.as_json:
        doc = {"cluster": name, "baseline": base.snapshot.to_json() if base else None,
               "explicit": base.explicit if base else False}
        click.echo(json.dumps(doc, indent=1))
    else:
        click.echo(format_baseline_text(name, base), nl=False)


@baseline.command("clear")
@store_options()
@handles_errors
def baseline_clear(at: StoreAt) -> None:
    """Forget the explicit baseline (the newest HEALTHY snapshot is used again)."""
    from pdforensics.app.store import clear_baseline

    name, had = clear_baseline(at)
    click.echo(f"cluster {name}: " + ("explicit baseline cleared" if had else "no explicit baseline"))


# -- diff -------------------------------------------------------------------------------------
@click.command()
@click.argument("a", required=False)
@click.argument("b", required=False)
@store_options()
@output_options("json", json="Print JSON.")
@handles_errors
def diff(a: str | None, b: str | None, at: StoreAt, out: Output) -> None:
    """What changed from A to B: flags, env vars, packages, versions, units, layout.

    A and B are bundle paths, snapshot names, `baseline` or `newest`. No arguments:
    baseline -> newest snapshot. One argument: baseline -> that bundle.
    """
    from pdforensics.app.store import diff_refs
    from pdforensics.diff import diff_json, format_diff_text

    result = diff_refs(at, a, b)
    if out.as_json:
        click.echo(json.dumps(diff_json(result), indent=1, default=str))
    else:
        click.echo(format_diff_text(result), nl=False)


# -- timeline ---------------------------------------------------------------------------------
@click.command()
@store_options()
@output_options("json", json="Print JSON.")
@handles_errors
def timeline(at: StoreAt, out: Output) -> None:
    """The last HEALTHY and first not-healthy snapshot, and the changes between them, ranked.

    Changes are counted from the explicit baseline when one is set before the incident,
    else from the start of the last healthy run; a change already present in a HEALTHY
    snapshot ranks below those that appeared with the incident. The snapshots it names
    are pinned: retention never removes them.
    """
    from pdforensics.app.store import timeline_of
    from pdforensics.cli.store_text import format_timeline_text
    from pdforensics.store.timeline import timeline_json

    t = timeline_of(at)
    if out.as_json:
        click.echo(json.dumps(timeline_json(t), indent=1, default=str))
    else:
        click.echo(format_timeline_text(t), nl=False)


# -- store maintenance ------------------------------------------------------------------------
@click.group("store")
def store_group() -> None:
    """Maintain the snapshot store."""


@store_group.command("reindex")
@store_options(name=False)
@handles_errors
def store_reindex(at: StoreAt) -> None:
    """Rebuild the store's index from the bundles on disk (after it was lost or corrupted).

    The old index is kept beside the new one; baselines and pins it still holds are carried
    over. Exit 1 when no bundle could be indexed.
    """
    from pdforensics.app.store import reindex_store
    from pdforensics.store.reindex import format_reindex_text

    outcome = reindex_store(at)
    click.echo(format_reindex_text(outcome), nl=False)
    if outcome.skipped and not outcome.indexed:
        sys.exit(ExitStatus.ERROR)


STORE_COMMANDS = (snapshot, baseline, diff, timeline, store_group)
