"""The CLI's option groups: every command stays small, the four capturing commands take their
defaults from the one profile table, and an option a command does not offer keeps its default."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import click
import pytest
from click.testing import CliRunner

from pdforensics.app.targets import Where
from pdforensics.capture.profiles import PROFILES, Collect
from pdforensics.cli import main
from pdforensics.cli.options import Output, collect_options, k8s_options, output_options, where_options

MAX_PARAMETERS = 20
CAPTURING = {"capture": "full", "snapshot": "snapshot", "watch": "watch", "doctor": "doctor"}


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, cmd in group.commands.items():
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", cmd


def _unwrapped(fn: Any) -> Any:
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


@pytest.mark.parametrize("name,cmd", sorted(_commands(main)), ids=lambda v: v if isinstance(v, str) else "")
def test_no_command_function_takes_more_than_20_parameters(name: str, cmd: click.Command) -> None:
    assert cmd.callback is not None
    params = inspect.signature(_unwrapped(cmd.callback)).parameters
    assert len(params) <= MAX_PARAMETERS, f"{name}: {len(params)} parameters: {list(params)}"


@pytest.mark.parametrize("command,profile", sorted(CAPTURING.items()))
def test_capturing_commands_take_their_defaults_from_the_profile_table(command: str, profile: str) -> None:
    cmd = main.commands[command]
    defaults = PROFILES[profile].defaults  # type: ignore[index]
    deadline = next(p for p in cmd.params if p.name == "deadline")
    assert deadline.type.convert(deadline.default, None, None) == defaults.deadline_s  # type: ignore[union-attr]
    samples = next((p for p in cmd.params if p.name == "samples"), None)
    if samples is not None:
        assert samples.default == defaults.samples


def _probe() -> click.Command:
    """A command with the groups, recording what it was called with."""
    seen: dict[str, Any] = {}

    @click.command()
    @where_options("Probe")
    @collect_options("snapshot", "deadline", "samples")
    @output_options("json")
    def probe(where: Where, collect: Collect, out: Output) -> None:
        seen.update(where=where, collect=collect, out=out)

    probe.seen = seen  # type: ignore[attr-defined]
    return probe


def test_a_group_hands_one_value_and_options_not_offered_keep_their_defaults() -> None:
    probe = _probe()
    res = CliRunner().invoke(probe, ["h1", "--samples", "5", "--json", "--sudo"])
    assert res.exit_code == 0, res.output
    seen = probe.seen  # type: ignore[attr-defined]
    assert seen["where"].hosts == ("h1",) and seen["where"].sudo and not seen["where"].use_k8s
    snap = PROFILES["snapshot"].defaults
    assert seen["collect"] == Collect(snap.deadline_s, 5, snap.interval_s, snap.stacks, snap.stack_dumps,
                                      snap.probes)
    assert seen["out"] == Output(as_json=True)
    res = CliRunner().invoke(probe, ["--stacks"])  # not offered by this command
    assert res.exit_code == 2 and "No such option" in res.output


def test_adding_an_option_group_is_one_line() -> None:
    """--k8s on a command that lacked it: one decorator, and its Where carries the values."""
    seen: dict[str, Where] = {}

    @click.command()
    @where_options("Probe")
    @k8s_options
    def probe(where: Where) -> None:
        seen["where"] = where

    res = CliRunner().invoke(probe, ["--k8s", "-n", "inference"])
    assert res.exit_code == 0, res.output
    assert seen["where"].use_k8s and seen["where"].namespace == "inference"
