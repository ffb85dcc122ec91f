"""`systemctl cat` text -> unit file and drop-ins, each as `[Section] Key=Value` directives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnitFile:
    """One file of a unit (the unit itself or a drop-in) as its directives, in order."""

    path: str
    directives: tuple[str, ...]  # "Service.ExecStart=/usr/bin/x --y 1"

    @property
    def is_dropin(self) -> bool:
        return ".d/" in self.path


def parse_unit_cat(text: str) -> tuple[UnitFile, ...]:
    """Split `systemctl cat` output at its `# /path` headers; empty input -> ().

    Comment and blank lines are dropped, continuation lines (trailing backslash) joined,
    so a reformatted file with the same directives compares equal.
    """
    files: list[UnitFile] = []
    path: str | None = None
    section = ""
    directives: list[str] = []
    pending = ""

    def close() -> None:
        if path is not None or directives:
            files.append(UnitFile(path or "(unit)", tuple(directives)))

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# /") and not pending:
            close()
            path, section, directives = line[2:].strip(), "", []
            continue
        if not line or line[0] in "#;":
            if not pending:
                continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line, pending = (pending + line).strip(), ""
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        key, sep, value = line.partition("=")
        if sep:
            directives.append(f"{section}.{key.strip()}={value.strip()}")
        else:
            directives.append(f"{section}.{line}")
    if pending.strip():
        directives.append(f"{section}.{pending.strip()}")
    close()
    return tuple(files)
