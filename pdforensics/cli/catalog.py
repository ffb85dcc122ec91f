"""`catalog`: SGLang flags, env vars and metric names read from sglang's source."""

from __future__ import annotations

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
@handles_errors
def catalog_safeguards(srcs: tuple[str, ...], out: str | None) -> None:
    """Build the per-release table of PD timeouts, watchdogs and dump hooks (by AST)."""
    from pdforensics.catalog.safeguard_table import cli_safeguards

    click.echo(str(cli_safeguards(list(srcs), out)))
