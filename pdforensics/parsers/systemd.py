"""``systemctl show UNIT`` (key=value lines) -> UnitState.

Lenient per line: a line without ``=`` (say, cut by the byte cap) is recorded in
``bad_lines`` and the rest is kept; text where no line is key=value raises ParseError.
Timestamps keep the raw string and get an epoch when the zone is known (UTC and a few
common abbreviations, or ``@epoch`` from ``--timestamp=unix``).
"""

from __future__ import annotations

import calendar
import shlex
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.errors import ParseError

_KEY = linear.compile(r"[A-Za-z][A-Za-z0-9_]*")

_ZONES = {"UTC": 0, "GMT": 0, "Z": 0, "CET": 3600, "CEST": 7200, "EET": 7200, "EEST": 10800,
          "EST": -18000, "EDT": -14400, "CST": -21600, "CDT": -18000, "MST": -25200,
          "MDT": -21600, "PST": -28800, "PDT": -25200, "JST": 32400, "KST": 32400}
_TS_RE = linear.compile(
    r"^(?:[A-Z][a-z]{2} )?(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?"
    r"(?: ([A-Za-z]{1,5}|[+-]\d\d:?\d\d))?$"
)
_EXEC_FIELD_SEP = linear.compile(r"\s;\s")
_EXEC_FIELD_KEY = linear.compile(r"[a-z_]+(?:\[\])?=")


def _exec_fields(text: str) -> list[str]:
    """`{ path=... ; argv[]=a ; b ; ignore_errors=no }` -> its fields: a ` ; ` starts a field
    only where a `key=` follows it (an argv word may be a lone `;`)."""
    parts, start = [], 0
    for m in _EXEC_FIELD_SEP.finditer(text):
        if m.start() >= start and _EXEC_FIELD_KEY.match(text[m.end():m.end() + 64]):
            parts.append(text[start:m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


@dataclass(frozen=True)
class Timestamp:
    """A systemd timestamp: the raw text and its epoch when it could be read."""

    raw: str
    epoch: float | None


@dataclass(frozen=True)
class ExecCommand:
    """One ``{ path=... ; argv[]=... ; ... }`` entry of ExecStart."""

    path: str | None
    argv: tuple[str, ...]
    fields: tuple[tuple[str, str], ...]  # everything, as printed

    def field(self, key: str) -> str | None:
        """A raw field (``pid``, ``status``, ``start_time`` ...) or None."""
        return dict(self.fields).get(key)


@dataclass(frozen=True)
class UnitState:
    """What systemd says about one unit."""

    id: str | None
    load_state: str | None
    active_state: str | None
    sub_state: str | None
    result: str | None
    main_pid: int | None  # None when systemd says 0 (no main process)
    n_restarts: int | None
    active_enter: Timestamp | None
    exec_main_start: Timestamp | None
    inactive_enter: Timestamp | None
    state_change: Timestamp | None
    exec_start: tuple[ExecCommand, ...]
    environment: tuple[tuple[str, str], ...]
    fragment_path: str | None
    drop_in_paths: tuple[str, ...]
    properties: tuple[tuple[str, str], ...]  # every key=value, in order
    bad_lines: tuple[tuple[int, str], ...] = ()

    @property
    def found(self) -> bool:
        """False when systemd does not know the unit (LoadState=not-found)."""
        return self.load_state not in (None, "not-found")

    def get(self, key: str) -> str | None:
        """A raw property value, or None when absent."""
        for k, v in self.properties:
            if k == key:
                return v
        return None


def parse_timestamp(raw: str) -> Timestamp | None:
    """``Wed 2026-12-02 10:20:28 UTC`` / ``@1764670828`` -> Timestamp; empty or n/a -> None."""
    text = raw.strip()
    if not text or text.lower() == "n/a" or text == "0":
        return None
    if text.startswith("@"):
        try:
            return Timestamp(raw, float(text[1:]))
        except ValueError:
            return Timestamp(raw, None)
    m = _TS_RE.match(text)
    if m is None:
        return Timestamp(raw, None)
    y, mo, d, h, mi, s, frac, zone = m.groups()
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31 and int(h) < 24 and int(mi) < 60
            and int(s) <= 60):
        return Timestamp(raw, None)
    offset: int | None
    if zone is None:
        offset = None
    elif zone[0] in "+-":
        digits = zone[1:].replace(":", "")
        offset = (1 if zone[0] == "+" else -1) * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    else:
        offset = _ZONES.get(zone.upper())
    if offset is None:
        return Timestamp(raw, None)
    epoch = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s), 0, 0, 0))
    return Timestamp(raw, epoch - offset + (int(frac) / 10 ** len(frac) if frac else 0.0))


def _split_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def parse_exec(value: str) -> tuple[ExecCommand, ...]:
    """Parse ExecStart's ``{ path=... ; argv[]=... ; ... }`` entries (several allowed)."""
    out: list[ExecCommand] = []
    pos = 0
    while True:
        start = value.find("{ ", pos)
        if start < 0:
            break
        end = value.find(" }", start)
        end = len(value) if end < 0 else end
        body = value[start + 2:end]
        fields: list[tuple[str, str]] = []
        for part in _exec_fields(" " + body.strip() + " "):
            key, sep, val = part.strip().partition("=")
            if sep:
                fields.append((key, val.strip()))
        d = dict(fields)
        out.append(ExecCommand(d.get("path"), tuple(_split_words(d.get("argv[]", ""))),
                               tuple(fields)))
        pos = end + 2
    return tuple(out)


def parse_environment(value: str) -> tuple[tuple[str, str], ...]:
    """``A=1 "B=two words"`` -> (("A", "1"), ("B", "two words"))."""
    out: list[tuple[str, str]] = []
    for word in _split_words(value):
        key, sep, val = word.partition("=")
        if sep and key:
            out.append((key, val))
    return tuple(out)


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v.strip())
    except ValueError:
        return None


def parse_systemctl_show(text: str) -> UnitState:
    """Parse one unit's ``systemctl show`` output (the first unit when several)."""
    props: list[tuple[str, str]] = []
    bad: list[tuple[int, str]] = []
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            if props:
                break  # a blank line separates units
            continue
        key, sep, value = line.partition("=")
        if not sep or not key or not _KEY.fullmatch(key):
            bad.append((lineno, line))
            continue
        props.append((key, value))
    if not props and bad:
        raise ParseError("not systemctl show output", line=bad[0][1], lineno=bad[0][0])
    d: dict[str, str] = {}
    for k, v in props:
        d.setdefault(k, v)
    main_pid = _int(d.get("MainPID"))
    return UnitState(
        id=d.get("Id"),
        load_state=d.get("LoadState"),
        active_state=d.get("ActiveState"),
        sub_state=d.get("SubState"),
        result=d.get("Result"),
        main_pid=main_pid if main_pid else None,
        n_restarts=_int(d.get("NRestarts")),
        active_enter=parse_timestamp(d.get("ActiveEnterTimestamp", "")),
        exec_main_start=parse_timestamp(d.get("ExecMainStartTimestamp", "")),
        inactive_enter=parse_timestamp(d.get("InactiveEnterTimestamp", "")),
        state_change=parse_timestamp(d.get("StateChangeTimestamp", "")),
        exec_start=parse_exec(d.get("ExecStart", "")),
        environment=tuple(e for k, v in props if k == "Environment"
                          for e in parse_environment(v)),
        fragment_path=d.get("FragmentPath") or None,
        drop_in_paths=tuple(_split_words(d.get("DropInPaths", ""))),
        properties=tuple(props),
        bad_lines=tuple(bad),
    )
