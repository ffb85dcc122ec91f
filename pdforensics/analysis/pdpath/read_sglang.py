"""SGLang server logs -> clues: every log signature line placed on the request path, with the
label SGLang's own code gives the message (catalog/log_spec.py, from its source), and the
lines around a failure that tell cause from consequence (a traceback's exception line, the
launcher's SIGQUIT, a bare ``Killed``, "from another rank").
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pdforensics.analysis.pdpath.model import Clue, Label, Stage
from pdforensics.analysis.pdpath.place import KEY_PLACE, NOISE_KEYS, role_of_line, sglang_role
from pdforensics.analysis.pdpath.sources import Source, lines, reader
from pdforensics.parsers.journal import iter_signature_lines, parse_log_timestamp, parse_rank
from pdforensics.parsers.requests import parse_request_lines

_ROOM = re.compile(r"bootstrap_room=(-?\d{1,40})|Request (-?\d{1,40}) timed out")
_RID = re.compile(r"""(?<![\w.])(?:req\.)?rid=['"]?([\w.:-]{1,200})""")
_MAX_TEXT = 500


def _ids(line: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    rids = tuple(dict.fromkeys(m.group(1) for m in _RID.finditer(line[:4000])))
    rooms = tuple(dict.fromkeys(int(m.group(1) or m.group(2)) for m in _ROOM.finditer(line[:4000])))
    return rids, rooms


@reader("sglang_signatures")
def signature_clues(src: Source) -> Iterator[Clue]:
    """Lines of SGLang's catalogued messages (and the software inside a PD server)."""
    if not src.text or src.kind in ("metrics", "server_info", "load"):
        return
    role = src.role
    for hit in iter_signature_lines(src.text):
        line = hit.line
        rids, rooms = _ids(line)
        for sig in hit.matched:
            place = KEY_PLACE.get(sig.key)
            label: Label = ("progress" if sig.key == "BATCH_STATS" else
                            "noise" if sig.key in NOISE_KEYS else sig.kind)
            line_role = role_of_line(line) or role
            stage: Stage | None = place.stage if place else None
            if sig.key == "BATCH_STATS":
                stage = "decode_forward" if "decode batch" in line.lower() else "prefill_forward"
            yield Clue(key=sig.key, label=label, text=line[:_MAX_TEXT], source=src.path,
                       line=hit.no, time=hit.time, stage=stage,
                       side=place.side if place else None, role=line_role, host=src.host,
                       rank=parse_rank(line), rids=rids, rooms=rooms,
                       wedge=place.wedge if place else None,
                       strength=place.strength if place else 1,
                       why=place.why if place else sig.description)


#: a traceback's last line: "SomeError: message" (module-qualified, after a log prefix or not)
_EXC_LINE = re.compile(r"^(?:\[[^\]]{1,80}\]\s*)?((?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|"
                       r"Interrupt|Exit|Failure|Timeout))(?::\s+(.{1,800}))?\s*$")
_TB_HEAD = "Traceback (most recent call last)"


def _exception_lines(src: Source) -> Iterator[tuple[int, str, float | None]]:
    """(line number, line, time) of each traceback's exception line: the first line after a
    traceback's frames that is not a frame or source line."""
    in_tb = False
    seen_frame = False
    when: float | None = None
    for no, line in lines(src):
        t = parse_log_timestamp(line)
        if t is not None:
            when = t
        if _TB_HEAD in line:
            in_tb, seen_frame = True, False
            continue
        if not in_tb:
            continue
        s = line.strip()
        if s.startswith("File \"") or (seen_frame and (line.startswith("    ") or not s
                                                        or set(s) <= set("^~ "))):
            seen_frame = seen_frame or s.startswith("File \"")
            continue
        if s.startswith(("During handling", "The above exception")):
            continue
        in_tb = False
        if _EXC_LINE.match(s):
            yield no, s, when


@reader("python_exceptions")
def exception_clues(src: Source) -> Iterator[Clue]:
    """A traceback's exception line: what the failing code raised (a cause)."""
    if _TB_HEAD not in src.text:
        return
    for no, line, when in _exception_lines(src):
        rids, rooms = _ids(line)
        yield Clue(key="PYTHON_EXCEPTION", label="cause", text=line[:_MAX_TEXT], source=src.path,
                   line=no, time=when, role=src.role, host=src.host, rids=rids, rooms=rooms,
                   wedge=False, strength=3,
                   why="the exception a traceback ends with: what the failing code raised")


_CONTEXT: tuple[tuple[str, Label, str, Stage | None, bool | None, int, str], ...] = (
    # (key, label, literal, stage, wedge, strength, why)
    ("FROM_ANOTHER_RANK", "consequence", "from another rank", None, None, 2,
     "sglang disaggregation/common/conn.py failure_exception: KVTransferError("
     "is_from_another_rank=True) when this rank recorded no failure of its own"),
    ("LAUNCHER_SIGQUIT", "consequence", "sigquit", None, False, 2,
     "sglang's launcher kills the server when a child process dies (SIGQUIT from the child)"),
    ("SERVER_READY", "progress", "the server is fired up and ready to roll", "startup", False, 1,
     "sglang http_server: the warm-up request finished"),
)
_KILLED = re.compile(r"^\s*(?:\S+:\s*)?Killed\s*$")


@reader("sglang_context")
def context_clues(src: Source) -> Iterator[Clue]:
    """Lines that place other evidence: "from another rank", the launcher's SIGQUIT, a bare
    ``Killed``, the server becoming ready, the server's PD role."""
    if not src.text or src.kind in ("metrics", "server_info", "load"):
        return
    low = src.text.lower()
    wanted = [c for c in _CONTEXT if c[2] in low]
    killed = "killed" in low
    role_seen = False
    when: float | None = None
    for no, line in lines(src):
        ll = line.lower()
        if not role_seen and (r := sglang_role(line)) is not None:
            role_seen = True
            yield Clue(key="SERVER_ROLE", label="noise", text=line[:_MAX_TEXT], source=src.path,
                       line=no, role=r, host=src.host, why="the server's --disaggregation-mode")
        hit = [c for c in wanted if c[2] in ll]
        is_killed = killed and _KILLED.match(line) is not None
        if not hit and not is_killed:
            continue
        when = parse_log_timestamp(line) or when
        for key, label, _lit, stage, wedge, strength, why in hit:
            yield Clue(key=key, label=label, text=line[:_MAX_TEXT], source=src.path, line=no,
                       time=when, stage=stage, role=role_of_line(line) or src.role,
                       host=src.host, rank=parse_rank(line), wedge=wedge, strength=strength,
                       why=why)
        if is_killed:
            yield Clue(key="PROCESS_KILLED", label="consequence", text=line.strip(),
                       source=src.path, line=no, time=when, host=src.host, wedge=False,
                       strength=2, why="the shell reports the process was killed (SIGKILL): "
                                       "what ended it, not why it hung")


@reader("request_lines")
def request_clues(src: Source) -> Iterator[Clue]:
    """--log-requests lines (Receive/Finish) and the router's request lines: progress, joined
    to the failures by rid and bootstrap room."""
    if "Receive: obj=" not in src.text and "Finish: obj=" not in src.text \
            and "processing request" not in src.text:
        return
    for ev in parse_request_lines(src.text).events:
        if ev.event not in ("received", "finished", "router_start", "router_finish"):
            continue  # failure lines are read as signatures
        stage: Stage = "router_dispatch" if ev.event.startswith("router") else "stream_back"
        if ev.event == "received":
            stage = "prefill_bootstrap" if src.role == "prefill" else "decode_prealloc"
        yield Clue(key=f"REQUEST_{ev.event.upper()}", label="progress", text=ev.text,
                   source=src.path, line=ev.line_no, time=ev.at, stage=stage, role=src.role,
                   host=src.host, rank=ev.rank, rids=(ev.rid,) if ev.rid else (),
                   rooms=(ev.room,) if ev.room is not None else (),
                   why="a request-level log line (--log-requests / the router's span)")
