"""`pdforensics explain KEY`: a rule, doctor check or log signature key, explained."""

from __future__ import annotations

import json
import sys

import click

from pdforensics.cli.errors import handles_errors
from pdforensics.errors import ExitStatus


@click.command("explain")
@click.argument("key", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (or a list with --all).")
@click.option("--all", "list_all", is_flag=True, help="List every key with its kind and meaning.")
@handles_errors
def explain(key: str | None, as_json: bool, list_all: bool) -> None:
    """What KEY means (a rule such as DECODE_PREALLOC_STUCK, a doctor check such as
    pyspy_attach, a log signature such as KV_WAITING_TIMEOUT): the evidence it needs, what to
    do, and the docs. Exit 1 when the key is unknown (the nearest known keys are named)."""
    from pdforensics.explain.registry import lookup, near, registry
    from pdforensics.terminal import field

    if list_all or key is None:
        entries = sorted(registry().values(), key=lambda e: (e.kind, e.key))
        if as_json:
            click.echo(json.dumps([e.to_json() for e in entries], indent=1))
        else:
            for entry in entries:
                click.echo(f"{entry.key:34} {entry.kind:13} {entry.meaning[:90]}")
        return
    e = lookup(key)
    if e is None:
        hint = near(key)
        click.echo(f"pdforensics: error: unknown key {field(key)!r}"
                   + (f"; did you mean {', '.join(hint)}?" if hint else
                      " (pdforensics explain --all lists every key)"), err=True)
        sys.exit(ExitStatus.ERROR)
    if as_json:
        click.echo(json.dumps(e.to_json(), indent=1))
        return
    click.echo(f"{e.key} ({e.kind})")
    click.echo(f"  meaning:  {e.meaning}")
    click.echo(f"  evidence: {e.evidence}")
    click.echo(f"  do:       {e.action}")
    click.echo(f"  docs:     {e.docs}")
