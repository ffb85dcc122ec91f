"""Check an installed pdforensics against the source tree it was built from.

Run with the installed interpreter in isolated mode from outside the checkout
(scripts/test_wheel.sh does): `python -I wheel_check.py SOURCE_TREE`. It fails (exit 1,
one line per problem) when a file of the source tree is missing from the installed copy,
when a module does not import from the installed copy, when a command's --help fails, or
when the version is not the one the wheel was built with.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

# Files run as separate programs by the lab, never imported as pdforensics modules.
NOT_IMPORTED = ("lab/standin/",)


def source_files(tree: Path) -> list[str]:
    """Every file of the package's source tree, relative to it (caches left out)."""
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def module_names(files: list[str]) -> list[str]:
    names = []
    for rel in files:
        if not rel.endswith(".py") or rel.startswith(NOT_IMPORTED) or rel.endswith("__main__.py"):
            continue
        parts = rel[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(["pdforensics", *parts]))
    return names


def missing_files(tree: Path, installed: Path) -> list[str]:
    return [f"missing from the installed copy: {rel}" for rel in source_files(tree)
            if not (installed / rel).is_file()]


def import_problems(names: list[str], installed: Path, checkout: Path) -> list[str]:
    problems = []
    for name in names:
        try:
            mod = importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - every failure is a finding here
            problems.append(f"import {name}: {type(e).__name__}: {e}")
            continue
        where = Path(getattr(mod, "__file__", "") or "").resolve()
        if checkout in where.parents or installed not in where.parents:
            problems.append(f"import {name}: came from {where}, not the installed copy")
    return problems


def command_paths() -> list[list[str]]:
    """Every command and subcommand of the click tree, as argv prefixes."""
    import click

    from pdforensics.cli import main

    out: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        out.append(path)
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, [*path, name])

    walk(main, [])
    return out


def help_problems(exe: str) -> tuple[int, list[str]]:
    def run(path: list[str]) -> str | None:
        p = subprocess.run([exe, *path, "--help"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or "Usage:" not in p.stdout:
            return f"{' '.join(['pdforensics', *path, '--help'])}: exit {p.returncode}: {p.stderr.strip()[-300:]}"
        return None

    paths = command_paths()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        found = [r for r in pool.map(run, paths) if r]
    return len(paths), found


def version_problems(exe: str, expected: str) -> list[str]:
    problems = []
    for argv in ([exe, "--version"], [sys.executable, "-m", "pdforensics", "--version"]):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or expected not in p.stdout:
            problems.append(f"{' '.join(argv[-3:])}: expected version {expected}, got {p.stdout.strip()!r} "
                            f"(exit {p.returncode})")
    return problems


def main() -> int:
    tree = Path(sys.argv[1]).resolve() / "pdforensics"
    expected_version = sys.argv[2]
    import pdforensics

    installed = Path(pdforensics.__file__).resolve().parent
    checkout = tree.parent
    if checkout in installed.parents:
        print(f"pdforensics imports from the checkout ({installed}), not an installed copy")
        return 1
    exe = shutil.which("pdforensics")
    if exe is None or Path(exe).parent != Path(sys.executable).parent:
        print(f"the installed pdforensics command is not beside {sys.executable} (found {exe})")
        return 1
    problems = missing_files(tree, installed)
    names = module_names(source_files(tree))
    problems += import_problems(names, installed, checkout)
    n_commands, bad_help = help_problems(exe)
    problems += bad_help
    problems += version_problems(exe, expected_version)
    for p in problems:
        print(p)
    print(f"wheel check: {len(source_files(tree))} files, {len(names)} modules imported, "
          f"{n_commands} commands' --help, version {expected_version}: "
          f"{'FAILED' if problems else 'ok'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
