"""The one mapping from errors to exit codes and one-line messages, for every command."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from pdforensics.errors import ExitStatus, PdforensicsError
from pdforensics.terminal import field

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Map PdforensicsError to its exit code with a one-line message; no traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        try:
            return fn(*args, **kwargs)
        except PdforensicsError as exc:
            if ctx.find_root().params.get("traceback"):
                raise
            click.echo(f"pdforensics: error: {field(exc)}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("pdforensics: interrupted", err=True)
            ctx.exit(ExitStatus.INTERRUPTED)
        except OSError as exc:  # disk full, permissions: the file and the reason, one line
            if ctx.find_root().params.get("traceback"):
                raise
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"pdforensics: error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(ExitStatus.ERROR)

    return wrapper  # type: ignore[return-value]
