"""`catalog`: SGLang flags, env vars and metric names read from sglang's source."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pdforensics.cli.errors import handles_errors

F = TypeVar("F", bound=Callable[..., Any])


@click.group()
def catalog() -> None:
    """SGLang flags, env vars and metric names, read from sglang's own source."""


@catalog.command("build")
@click.option("--from", "src", required=True,
              help="sglang wheel, source tree, site-packages/sglang, or a bundle captured with --with-sglang-source.")
@click.option("-o", "--out", help="Output JSON file.")
@handles_errors
def catalog_build(src: str, out: str | None) -> None:
    """Build a catalog JSON from an sglang wheel or source tree (read with ast, never imported)."""
    from pdforensics.catalog import cli_build

    click.echo(str(cli_build(src, out)))


def releases_options(out_file: str) -> Callable[[F], F]:
    """--from (repeatable sglang wheels or source trees) and -o, for the tables built from
    several sglang releases."""

    def deco(fn: F) -> F:
        fn = click.option("-o", "--out", help=f"Output JSON file (default ./{out_file}).")(fn)
        return click.option("--from", "srcs", multiple=True,
                            help="sglang wheel or source tree (repeat; default: download the "
                                 "pinned releases).")(fn)

    return deco


@catalog.command("log-signatures")
@releases_options("log_signatures.json")
@handles_errors
def catalog_log_signatures(srcs: tuple[str, ...], out: str | None) -> None:
    """Build the log signature table from sglang's log and exception messages (by AST)."""
    from pdforensics.catalog.log_table import cli_log_signatures

    click.echo(str(cli_log_signatures(list(srcs), out)))


@catalog.command("safeguards")
@releases_options("safeguard_defaults.json")
@click.option("--build", is_flag=True,
              help="Build the table again from sglang releases (--from, else the pinned ones, "
                   "downloaded when not cached) instead of showing the shipped one.")
@click.option("--json", "as_json", is_flag=True, help="Print the shipped table as JSON.")
@handles_errors
def catalog_safeguards(srcs: tuple[str, ...], out: str | None, build: bool, as_json: bool) -> None:
    """Show the per-release defaults of the PD timeouts, watchdogs and dump hooks (the shipped
    table, read from each release's source by AST). --build (or --from/-o) builds it again."""
    from pdforensics.catalog.safeguard_table import cli_safeguards, load_shipped_table

    if build or srcs or out:
        click.echo(str(cli_safeguards(list(srcs), out)))
        return
    table = load_shipped_table()
    if as_json:
        click.echo(json.dumps(table, indent=1, sort_keys=True))
        return
    click.echo(safeguard_text(table), nl=False)


def safeguard_text(table: dict[str, Any]) -> str:
    """One row per safeguard: its flag or env var, then its default in each release."""
    from pdforensics.catalog.safeguard_table import version_key

    versions = sorted(table["versions"], key=version_key)
    rows = [["safeguard", "set by", *versions]]
    for key, spec in sorted(table["specs"].items()):
        cells = []
        for v in versions:
            got = table["versions"][v].get("safeguards", {}).get(key, {})
            if not got.get("present", False):
                cells.append("absent")
            else:
                d = got.get("default")
                cells.append("unset" if d is None else str(d))
        rows.append([key, str(spec["name"]), *cells])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]]) + "\n"
