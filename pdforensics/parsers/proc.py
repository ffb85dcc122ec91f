"""`ps` rows and /proc files (cmdline, environ, cgroup) -> typed values."""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics.errors import ParseError

PS_ARGV = ("ps", "-eww", "-o", "pid=,ppid=,stat=,etimes=,nlwp=,rss=,uid=,args=")


@dataclass(frozen=True)
class PsRow:
    pid: int
    ppid: int
    stat: str
    elapsed_s: int
    threads: int
    rss_kb: int
    args: str
    uid: int | None = None  # the process's effective uid (None: a bundle from before it was read)

    @property
    def state(self) -> str:
        return self.stat[:1]


@dataclass(frozen=True)
class PsTable:
    rows: tuple[PsRow, ...]
    bad_lines: tuple[str, ...] = ()

    def by_pid(self) -> dict[int, PsRow]:
        return {r.pid: r for r in self.rows}


def parse_ps(text: str) -> PsTable:
    """Parse `ps -eww -o pid=,ppid=,stat=,etimes=,nlwp=,rss=,uid=,args=` (and the older form
    without uid, of bundles taken before it: a seventh field of digits only, followed by more,
    is the uid); bad lines are kept aside."""
    rows = []
    bad = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split(None, 7)
        try:
            pid, ppid, stat, etimes, nlwp, rss = parts[:6]
            uid: int | None = None
            rest = parts[6:]
            if len(rest) == 2 and rest[0].isdigit():
                uid, rest = int(rest[0]), rest[1:]
            elif len(rest) == 1 and rest[0].isdigit() and len(line.split()) == 7:
                uid, rest = int(rest[0]), []  # a uid and empty args (a zombie)
            args = " ".join(rest) if len(rest) < 2 else line.split(None, 6)[6]
            rows.append(PsRow(int(pid), int(ppid), stat, int(etimes), int(nlwp), int(rss),
                              args, uid))
        except ValueError:
            if parts and parts[0] == "PID":  # a header line from a ps without '='
                continue
            bad.append(line[:300])
    return PsTable(tuple(rows), tuple(bad))


def parse_cmdline(text: str) -> tuple[str, ...]:
    """/proc/PID/cmdline: NUL-separated argv (a trailing NUL is normal)."""
    if not text:
        return ()
    parts = text.split("\0")
    if parts and parts[-1] == "":
        parts.pop()
    return tuple(parts)


def parse_environ(text: str) -> tuple[tuple[str, str], ...]:
    """/proc/PID/environ: NUL-separated NAME=value pairs, in order."""
    out = []
    for entry in text.split("\0"):
        if not entry:
            continue
        name, sep, value = entry.partition("=")
        if not sep:
            raise ParseError("environ entry without '='", line=entry)
        out.append((name, value))
    return tuple(out)


def parse_cgroup_unit(text: str) -> str | None:
    """The systemd unit a process belongs to, from /proc/PID/cgroup (v1 or v2)."""
    for line in text.splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        if fields[1] not in ("", "name=systemd"):
            continue
        for segment in reversed(fields[2].split("/")):
            if segment.endswith((".service", ".scope")) and not segment.startswith("session-"):
                return segment
    return None
