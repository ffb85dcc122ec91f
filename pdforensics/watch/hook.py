"""The --on-capture hook: a command run after each capture, told about it in its env."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pdforensics.errors import ConfigError

ENV_PREFIX = "PDFX_"
#: what the hook finds in its environment (watch --help shows this text)
HOOK_VARS = (
    ("PDFX_BUNDLE", "absolute path of the bundle (in the store)"),
    ("PDFX_ARCHIVE", "BUNDLE.tar.gz beside it, the one file to attach (empty with --no-archive)"),
    ("PDFX_REPORT", "the bundle's report.html"),
    ("PDFX_MARKDOWN", "the Markdown summary written with --markdown (else empty)"),
    ("PDFX_VERDICT", "OUTAGE, WEDGED, DEGRADED, HEALTHY or UNKNOWN"),
    ("PDFX_SINCE", "since when, ISO UTC, from the evidence of the findings (may be empty)"),
    ("PDFX_MITIGATE", "the mitigate-now line"),
    ("PDFX_STATUS", "complete or partial"),
    ("PDFX_CLUSTER", "the cluster name"),
    ("PDFX_SUMMARY", "the analysis summary line"),
    ("PDFX_TRIGGER", "the rule keys that held, comma separated"),
    ("PDFX_SUSPECTS", "the suspected servers, comma separated"),
)
HOOK_HELP = ("Command run after each capture (split like a shell line, no shell runs it; "
             "`sh -c '...'` for pipes). Its environment: "
             + "; ".join(f"{name}: {what}" for name, what in HOOK_VARS) + ".")


@dataclass(frozen=True)
class HookResult:
    argv: tuple[str, ...]
    exit_status: int | None
    duration_s: float
    output: str  # last lines of stdout+stderr
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None and self.exit_status == 0


def hook_argv(command: str) -> tuple[str, ...]:
    """Split CMD like a shell would, without running one (use `sh -c '...'` for pipes)."""
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise ConfigError(f"--on-capture {command!r}: {exc}") from None
    if not argv:
        raise ConfigError("--on-capture needs a command")
    return argv


def hook_env(info: Mapping[str, str]) -> dict[str, str]:
    """The environment of the hook: ours plus PDFX_BUNDLE, PDFX_VERDICT, ..."""
    env = dict(os.environ)
    env.update({ENV_PREFIX + k.upper(): v for k, v in info.items()})
    return env


def run_hook(argv: tuple[str, ...], info: Mapping[str, str], timeout_s: float = 60.0) -> HookResult:
    """Run the hook to completion (killed after timeout_s); never raises."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, env=hook_env(info), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else ""
        return HookResult(argv, None, time.monotonic() - t0, _tail(out),
                          f"killed after {timeout_s:g}s")
    except OSError as exc:
        return HookResult(argv, None, time.monotonic() - t0, "",
                          f"cannot run {argv[0]}: {exc.strerror or exc}")
    out = proc.stdout.decode("utf-8", "replace")
    err = None if proc.returncode == 0 else f"exit status {proc.returncode}"
    return HookResult(argv, proc.returncode, time.monotonic() - t0, _tail(out), err)


def _tail(text: str, lines: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])[-2000:]
