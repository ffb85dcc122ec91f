"""Flag parity over the click tree: capture, snapshot, watch and doctor offer the same output
and target flags, spelled the same way; the evidence-window and scope flags are where the
docs say they are."""

from __future__ import annotations

import click
import pytest

from pdforensics.cli import main

PARITY = ("capture", "snapshot", "watch", "doctor")
#: flag -> its spellings, the same on every command that has it
FLAGS = {"quiet": ("-q", "--quiet"), "verbose": ("-v", "--verbose"), "json": ("--json",),
         "markdown": ("--markdown",), "k8s": ("--k8s",), "slurm_job": ("--slurm-job",)}
SINCE = ("capture", "snapshot", "watch", "triage", "analyze", "report")
SCOPE = ("capture", "snapshot", "watch", "doctor")


def _spellings(cmd: click.Command) -> set[tuple[str, ...]]:
    return {tuple(sorted(p.opts)) for p in cmd.params if isinstance(p, click.Option)}


def _command(name: str) -> click.Command:
    assert isinstance(main, click.Group)
    cmd = main.commands[name]
    assert isinstance(cmd, click.Command)
    return cmd


@pytest.mark.parametrize("name", PARITY)
def test_output_and_target_flags_on_every_capturing_command(name: str) -> None:
    have = _spellings(_command(name))
    for flag, spelled in FLAGS.items():
        assert tuple(sorted(spelled)) in have, f"{name} lacks {' / '.join(spelled)} ({flag})"


def test_every_flag_means_one_thing_everywhere() -> None:
    """An option spelled the same on two commands has the same spellings (no -q meaning
    --quick somewhere) and the same kind (a switch is a switch everywhere)."""
    assert isinstance(main, click.Group)
    seen: dict[str, tuple[tuple[str, ...], bool]] = {}
    for name, cmd in main.commands.items():
        for p in cmd.params:
            if not isinstance(p, click.Option):
                continue
            key = (tuple(sorted(p.opts)), bool(p.is_flag))
            for opt in p.opts:
                if opt in seen:
                    assert seen[opt] == key, (name, opt, seen[opt], key)
                seen[opt] = key


@pytest.mark.parametrize("name", SINCE)
def test_since_is_offered(name: str) -> None:
    assert ("--since",) in _spellings(_command(name))


@pytest.mark.parametrize("name", ("analyze", "triage"))
def test_the_markdown_switch_is_the_same_on_the_readers(name: str) -> None:
    """`--markdown FILE` everywhere a summary can be written (analyze keeps --format markdown)."""
    assert ("--markdown",) in _spellings(_command(name))


@pytest.mark.parametrize("name", SCOPE)
def test_scope_flags_are_offered(name: str) -> None:
    have = _spellings(_command(name))
    assert {("--port",), ("--service",), ("--all-users",)} <= have


def test_help_of_every_command_names_the_flags() -> None:
    from click.testing import CliRunner

    for name in PARITY:
        out = CliRunner().invoke(main, [name, "--help"]).output
        for spelled in FLAGS.values():
            assert spelled[-1] in out, (name, spelled)
    watch_help = CliRunner().invoke(main, ["watch", "--help"]).output
    for var in ("PDFX_BUNDLE", "PDFX_ARCHIVE", "PDFX_VERDICT", "PDFX_SINCE", "PDFX_MITIGATE",
                "PDFX_STATUS", "PDFX_SUMMARY", "PDFX_TRIGGER", "PDFX_SUSPECTS", "PDFX_CLUSTER"):
        assert var in watch_help, var
