"""``ss -Hltnp`` and ``ss -Htn state established`` (with or without header, -p) -> sockets.

Line-oriented and lenient: a line that is not a socket row is recorded in ``bad_lines``
and the others are kept; non-empty text where no line is a socket row raises ParseError.
Addresses: ``127.0.0.1:30000``, ``[::1]:30000``, ``*:8000``, ``0.0.0.0:*``, ``[::]:*``,
old iproute2's ``:::22`` and ``127.0.0.53%lo:53``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.errors import ParseError

_STATES = {"LISTEN", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT",
           "CLOSE-WAIT", "LAST-ACK", "CLOSING", "CLOSED", "UNCONN", "UNKNOWN"}
_NETIDS = {"tcp", "udp", "raw", "u_str", "u_dgr", "u_seq", "sctp", "mptcp"}
_USER_RE = linear.compile(r'\("((?:[^"\\]|\\.)*)",pid=(\d+),fd=(\d+)\)')


@dataclass(frozen=True)
class SocketProcess:
    """One ``("name",pid=N,fd=M)`` entry of ss -p."""

    name: str
    pid: int
    fd: int


@dataclass(frozen=True)
class Endpoint:
    """An address:port as ss prints it; port None for ``*``, addr "*" for any."""

    addr: str
    port: int | None
    raw: str


@dataclass(frozen=True)
class SocketRow:
    """One socket row (a listener or a connection)."""

    state: str | None  # None when ss was given a state filter (it omits the column)
    recv_q: int
    send_q: int
    local: Endpoint
    peer: Endpoint
    processes: tuple[SocketProcess, ...] = ()


@dataclass(frozen=True)
class SocketTable:
    """All rows ss printed, plus the lines it could not read."""

    rows: tuple[SocketRow, ...] = ()
    bad_lines: tuple[tuple[int, str], ...] = ()

    def ports(self) -> tuple[int, ...]:
        """Local ports, sorted, each once."""
        return tuple(sorted({r.local.port for r in self.rows if r.local.port is not None}))

    def by_port(self, port: int) -> tuple[SocketRow, ...]:
        """Rows whose local port is ``port``."""
        return tuple(r for r in self.rows if r.local.port == port)


def parse_endpoint(text: str) -> Endpoint:
    """``[::1]:30000`` -> Endpoint("::1", 30000, ...); raises ParseError when malformed."""
    raw = text
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or text[close + 1:close + 2] != ":":
            raise ParseError("bad bracketed address", line=raw)
        addr, port_text = text[1:close], text[close + 2:]
    else:
        addr, sep, port_text = text.rpartition(":")
        if not sep or not addr:
            raise ParseError("address without port", line=raw)
    addr = addr.split("%", 1)[0] or addr
    if port_text == "*":
        return Endpoint(addr, None, raw)
    if not port_text.isascii() or not port_text.isdigit() or int(port_text) > 65535:
        raise ParseError("bad port", line=raw)
    return Endpoint(addr, int(port_text), raw)


def _parse_row(line: str) -> SocketRow | None:
    """One row, or None when the line is not a socket row."""
    head, _, users = line.partition("users:(")
    words = head.split()
    if words and words[0] in _NETIDS:
        words = words[1:]
    state: str | None = None
    if words and words[0] in _STATES:
        state, words = words[0], words[1:]
    if len(words) < 4 or not all(w.isascii() and w.isdigit() for w in words[:2]):
        return None
    try:
        local, peer = parse_endpoint(words[2]), parse_endpoint(words[3])
    except ParseError:
        return None
    procs = tuple(SocketProcess(n, int(p), int(f)) for n, p, f in _USER_RE.findall(users))
    return SocketRow(state, int(words[0]), int(words[1]), local, peer, procs)


def _parse_table(text: str) -> SocketTable:
    rows: list[SocketRow] = []
    bad: list[tuple[int, str]] = []
    for lineno, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if line.split()[0] in ("State", "Netid", "Recv-Q"):
            continue  # header
        row = _parse_row(line)
        if row is None:
            bad.append((lineno, line))
        else:
            rows.append(row)
    if bad and not rows:
        raise ParseError("not ss output", line=bad[0][1], lineno=bad[0][0])
    return SocketTable(tuple(rows), tuple(bad))


def parse_listening(text: str) -> SocketTable:
    """Parse ``ss -Hltnp`` (or ``ss -ltnp`` with its header)."""
    return _parse_table(text)


def parse_established(text: str) -> SocketTable:
    """Parse ``ss -Htn state established`` (the State column is then absent; -p allowed)."""
    return _parse_table(text)


def established_per_port(table: SocketTable, ports: tuple[int, ...] | None = None
                         ) -> dict[int, int]:
    """Count connections per local port (only ``ports`` when given: the server's side)."""
    counts = Counter(r.local.port for r in table.rows if r.local.port is not None
                     and (ports is None or r.local.port in ports))
    return dict(sorted(counts.items()))
