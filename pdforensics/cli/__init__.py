"""Thin click commands: parse options, one core call, print, exit code.

Each command lives in its own module and imports only `cli.errors`; this module builds the
group from them, so there is no import circle.
"""

from __future__ import annotations

import click

from pdforensics import __version__
from pdforensics.cli.analysis import analyze, stacks, triage, verify
from pdforensics.cli.capture import capture
from pdforensics.cli.catalog import catalog
from pdforensics.cli.doctor import doctor
from pdforensics.cli.explain import explain
from pdforensics.cli.lab import lab
from pdforensics.cli.recover import recover
from pdforensics.cli.report import report
from pdforensics.cli.store import STORE_COMMANDS
from pdforensics.cli.watch import watch


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="pdforensics")
@click.option("--traceback", is_flag=True, help="Show Python tracebacks on errors (debugging).")
@click.pass_context
def main(ctx: click.Context, traceback: bool) -> None:
    """Evidence-first forensics for SGLang prefill-decode clusters.

    capture during a wedge, analyze/report a bundle, lab to rehearse.
    """
    import gc
    import os

    from pdforensics.terminal import install

    # a command reads up to hundreds of MB of text into many small objects: the modules loaded
    # by now are never garbage (frozen: a full collection no longer walks them), and collecting
    # every 700 new objects cost a tenth of a large triage (49k keeps it to a few per second)
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)

    install()  # host text never reaches the terminal with its control characters
    if ctx.invoked_subcommand != "lab":
        # every file and directory the tool writes (bundles, store, index, reports, summaries,
        # temporary files) holds host text: owner-only, whatever the user's umask. The lab is left
        # alone: its servers and sshd hosts may run as other users that read its files.
        os.umask(0o077)



for _command in (capture, doctor, analyze, triage, verify, stacks, lab, catalog, report, recover, watch,
                 explain, *STORE_COMMANDS):
    main.add_command(_command)

__all__ = ["main"]
