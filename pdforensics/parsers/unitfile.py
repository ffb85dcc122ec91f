"""`systemctl cat UNIT` output -> the unit file and its drop-ins, each with its path."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnitFilePart:
    path: str
    text: str


@dataclass(frozen=True)
class UnitFiles:
    parts: tuple[UnitFilePart, ...] = ()

    @property
    def fragment(self) -> UnitFilePart | None:
        return self.parts[0] if self.parts else None

    @property
    def drop_ins(self) -> tuple[UnitFilePart, ...]:
        return self.parts[1:]


def parse_unit_files(text: str) -> UnitFiles:
    """Split on the `# /path/to/file` header lines systemctl cat prints before each file."""
    parts: list[UnitFilePart] = []
    path: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("# /") and (line.endswith((".service", ".conf", ".socket", ".timer"))
                                       or "/systemd/" in line):
            if path is not None:
                parts.append(UnitFilePart(path, "\n".join(lines).strip("\n")))
            path, lines = line[2:].strip(), []
        elif path is not None:
            lines.append(line)
    if path is not None:
        parts.append(UnitFilePart(path, "\n".join(lines).strip("\n")))
    return UnitFiles(tuple(parts))
