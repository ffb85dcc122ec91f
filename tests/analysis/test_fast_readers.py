"""The readers that read only the lines that can matter in a large text (issue 30's
throughput) give the clues the walk over every line gave: the walks as they were before
(commit e672474) are kept here as the reference, and both run on every file of tests/data and
on generated texts made of the lines each reader looks for."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.place import frames_role, frames_stage, role_of_line, sglang_role
from pdforensics.analysis.pdpath.read_python import (
    _MAX_TEXT,
    _NEAR,
    _cut_at_end,
    _exception,
    _exception_ahead,
    _side,
    exception_clues,
)
from pdforensics.analysis.pdpath.read_sglang import (
    _CONTEXT,
    _KILLED,
    _NOT_CONTEXT,
    _NOT_LOGS,
    _SHELL_CRASH,
    _STACK_FRAME,
    _sglang_mark,
    context_clues,
    ids,
)
from pdforensics.analysis.pdpath.sources import Source, lines
from pdforensics.analysis.pdpath.traceback_lines import CANCELLED_WHY as _CANCELLED_WHY
from pdforensics.analysis.pdpath.traceback_lines import CARET as _CARET
from pdforensics.analysis.pdpath.traceback_lines import CHAIN_CUT_WHY as _CHAIN_CUT_WHY
from pdforensics.analysis.pdpath.traceback_lines import CHAIN_WHY as _CHAIN_WHY
from pdforensics.analysis.pdpath.traceback_lines import CHAINED as _CHAINED
from pdforensics.analysis.pdpath.traceback_lines import EXC_LINE as _EXC_LINE
from pdforensics.analysis.pdpath.traceback_lines import EXC_QUALIFIED, MP_PROCESS
from pdforensics.analysis.pdpath.traceback_lines import FRAME as _FRAME
from pdforensics.analysis.pdpath.traceback_lines import IMPORT_ERRORS as _IMPORT_ERRORS
from pdforensics.analysis.pdpath.traceback_lines import INTERRUPT_WHY as _INTERRUPT_WHY
from pdforensics.analysis.pdpath.traceback_lines import TIMEOUT_WHY as _TIMEOUT_WHY
from pdforensics.parsers.journal import parse_log_timestamp, parse_rank
from pdforensics.parsers.logprefix import strip_prefixes
from pdforensics.parsers.ray_prefix import process_at
from pdforensics.parsers.settings import in_setting_name

DATA = Path(__file__).resolve().parent.parent / "data"


def old_exception_clues(src: Source) -> Iterator[Clue]:
    """Each traceback's exception line (a cause): the frames and code above it say where."""
    if ("File \"" not in src.text and "^^^" not in src.text and "~~~" not in src.text) \
            or src.kind in ("metrics", "server_info", "load"):
        return
    funcs: list[str] = []
    code: list[str] = []
    last_frame = -_NEAR - 1
    when: float | None = None
    recent: list[str] = []  # the line before a traceback's tail (its failing code)
    every = src.text.split("\n")
    innermost: tuple[int, str] | None = None
    run_head = ""
    head_rank: str | None = None
    ahead: tuple[int, str, str] | None = None
    said: set[int] = set()
    for no, raw in lines(src):
        t = parse_log_timestamp(raw) if raw[:1] == "[" or raw[:1].isdigit() else None
        when = t if t is not None else when
        line = strip_prefixes(raw).text
        if _CARET.match(line):  # a traceback's caret line: its tail even without a frame line
            last_frame = max(last_frame, no - 1)
        fm = _FRAME.match(line)
        if fm is not None:
            if no - last_frame > _NEAR + 8:
                funcs, code = [], []
            if not funcs:
                run_head = " ".join(every[max(0, no - 4):no - 1])
                head_rank = parse_rank(every[no - 2]) if no >= 2 else None
                ahead = _exception_ahead(every, no)
            funcs.insert(0, fm.group(2))
            last_frame = no
            innermost = (no, line.strip())
            continue
        if no - last_frame > _NEAR or not line.strip():
            recent = [line.strip()]
            continue
        m = _EXC_LINE.match(line.strip()) or EXC_QUALIFIED.match(line.strip())
        if m is None:
            code.insert(0, line.strip())
            continue
        code.extend(recent)
        role = frames_role(funcs) or src.role
        exc = line.strip()
        if m.group(2) is None:  # a bare "AssertionError": the failing code says what failed
            failing = next((x for x in code if x and _CARET.match(x) is None), None)
            exc = f"{exc} ({failing})" if failing else exc
        rids, rooms = ids(exc)
        chain = _CHAINED.search(run_head) is not None  # (a later exception of a chain...)
        chained = chain and bool(said)  # (...whose earlier one the text holds)
        name = exc.split(":", 1)[0].split(" ", 1)[0]
        cancelled = name.endswith("CancelledError")
        timeout = not cancelled and name.rsplit(".", 1)[-1] == "TimeoutError"
        interrupt = name == "KeyboardInterrupt"
        said.add(no)
        yield Clue(key="PYTHON_EXCEPTION",
                   label="consequence" if chained or cancelled or timeout or interrupt
                   else "cause",
                   text=exc[:_MAX_TEXT], source=src.path,
                   line=no, time=when, stage=frames_stage(funcs, code, role) or (
                       "startup" if name.rsplit(".", 1)[-1] in _IMPORT_ERRORS else None),
                   side=_side(exc, role), role=role, host=src.host,
                   rank=parse_rank(raw) or head_rank, rids=rids, rooms=rooms, wedge=timeout,
                   suspect=None if parse_rank(raw) or head_rank
                   else process_at(src.processes, no) if src.processes
                   else mp.group(1) if (mp := MP_PROCESS.search(run_head)) else None,
                   strength=3,
                   why="the exception a traceback ends with: what the failing code raised"
                   + (_CANCELLED_WHY if cancelled else _TIMEOUT_WHY if timeout
                      else _INTERRUPT_WHY if interrupt else _CHAIN_WHY if chained
                      else _CHAIN_CUT_WHY if chain else ""))
        funcs, code, last_frame = [], [], -_NEAR - 1
    # the text ends inside a traceback (its frames in "line N, in f" form, not a sample's)
    if funcs and innermost is not None and len(every) - last_frame <= _NEAR \
            and ", in " in innermost[1] and "most recent call first" not in run_head:
        after = strip_prefixes(every[innermost[0]]).text.strip() if innermost[0] < len(every) else ""
        if after and _FRAME.match(after) is None and _CARET.match(after) is None:
            innermost = (innermost[0], f"{innermost[1]}: {after}")
        if ahead is not None and ahead[0] not in said:  # its exception printed above it
            role = frames_role(funcs) or src.role
            t = None
            for k in range(ahead[0], 0, -1):  # the newest stamp at or before it
                line_k = every[k - 1]
                t = parse_log_timestamp(line_k) if line_k[:1] == "[" or line_k[:1].isdigit() else None
                if t is not None:
                    break
            yield _exception(src, ahead[1], ahead[0], t, frames_stage(funcs, code, role), role,
                             ahead[2], run_head, head_rank, bool(said))
            return
        cut = _cut_at_end(src, innermost, funcs, code, head_rank)
        if _CHAINED.search(run_head) is None:
            yield cut
        elif said:
            yield replace(cut, label="consequence", why=cut.why + _CHAIN_WHY)
        else:
            yield replace(cut, why=cut.why + _CHAIN_CUT_WHY)


def old_context_clues(src: Source) -> Iterator[Clue]:
    """Lines that place other evidence: "from another rank", the launcher's SIGQUIT, a bare
    ``Killed``, warm-up and readiness, the server's PD role, SGLang's own endpoints, and the
    last time the log shows (how long it ran on after its last batch)."""
    if not src.text or src.kind in _NOT_LOGS:
        return
    low = src.text.lower()
    wanted = [c for c in _CONTEXT if any(lit in low for lit in c[2])]
    killed = "killed" in low
    role_seen = marked = False
    when: float | None = None
    last: tuple[int, float] | None = None
    for no, line in lines(src):
        ll = line.lower()
        t = parse_log_timestamp(line) if line[:1] in "[0123456789" or "|" in line[:40] else None
        if t is not None:
            when, last = t, (no, t)
        if not role_seen and (r := sglang_role(line)) is not None:
            role_seen = True
            yield Clue(key="SERVER_ROLE", label="noise", text=line[:_MAX_TEXT], source=src.path,
                       line=no, role=r, host=src.host, why="the server's --disaggregation-mode")
        if not marked and _sglang_mark(ll):
            marked = True
            yield Clue(key="SGLANG_SERVER", label="noise", text=line[:_MAX_TEXT],
                       source=src.path, line=no, time=when, host=src.host,
                       why="a line only an SGLang server writes (its endpoints, titles, paths)")
        hit = [c for c in wanted if any(lit in ll and not in_setting_name(ll, lit) for lit in c[2])
               ] if _STACK_FRAME.match(line) is None and not any(
                   w in ll for w in _NOT_CONTEXT) else []
        if hit:
            for key, label, _lit, stage, wedge, strength, why in hit[:1]:
                yield Clue(key=key, label=label, text=line[:_MAX_TEXT], source=src.path,
                           line=no, time=when, stage=stage, role=role_of_line(line) or src.role,
                           host=src.host, rank=parse_rank(line), wedge=wedge,
                           strength=strength, why=why)
        elif killed and _KILLED.match(line) is not None:
            yield Clue(key="PROCESS_KILLED", label="consequence", text=line.strip(),
                       source=src.path, line=no, time=when, host=src.host, wedge=False,
                       strength=2, why="the shell reports the process was killed (SIGKILL): "
                                       "what ended it, not why it hung")
        elif _SHELL_CRASH.match(line) is not None:
            yield Clue(key="PROCESS_SIGNALLED", label="consequence", text=line.strip(),
                       source=src.path, line=no, time=when, host=src.host, wedge=False,
                       strength=2, why="the shell reports the signal that ended the process: "
                                       "how it ended, not why")
    if last is not None:
        yield Clue(key="LOG_END", label="noise", text=f"the log's last time stamp (line {last[0]})",
                   source=src.path, line=last[0], time=last[1], role=src.role, host=src.host,
                   why="where the evidence of this log ends")


PIECES = ["[2026-01-29 13:12:37 TP0] ", "2026-01-29T13:12:37Z ", "Traceback (most recent call last):",
          '  File "/sglang/srt/managers/scheduler.py", line 12, in event_loop_normal',
          '  File "/x.py", line 3, in recv_requests', "    self.recv()", "    ^^^^^^^^^",
          "    ~~~~^^^", "RuntimeError: boom", "torch.distributed.DistBackendError: NCCL error",
          "ValueError", "Killed", "  Killed  ", "Received sigquit from a child process",
          "SIGQUIT received. signum=3", "The server is fired up and ready to roll!", "warmup",
          "disaggregation_mode='decode'", "GET /health_generate HTTP/1.1", "sglang::scheduler",
          "", " ", "plain text", "| x", "1 |", "\u212a"]


def _clues(fn: object, text: str) -> list[Clue]:
    src = Source("f.log", "log", "h", None, text)
    return list(fn(src))  # type: ignore[operator]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.integers(0, 40))
def test_on_generated_text(parts: list[str], pad: int) -> None:
    text = "\n".join(parts[: len(parts) // 2] + ["filler"] * pad + parts[len(parts) // 2:])
    for t in (text, "filler\n" * 9400 + text):  # small, and past linescan.SMALL
        assert _clues(exception_clues, t) == _clues(old_exception_clues, t)
        assert _clues(context_clues, t) == _clues(old_context_clues, t)


def test_on_every_file_of_tests_data() -> None:
    n = 0
    for path in sorted(DATA.rglob("*")):
        if not path.is_file() or path.stat().st_size > 4_000_000:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        assert _clues(exception_clues, text) == _clues(old_exception_clues, text), path
        assert _clues(context_clues, text) == _clues(old_context_clues, text), path
        n += 1
    assert n > 500


def test_a_stamped_prefix_alone_before_a_traceback_is_no_failing_code() -> None:
    # hypothesis found it: the fast path took the line before a frame with its log prefix on
    text = ("[2026-01-29 13:12:37 TP0] \n"
            '  File "/sglang/srt/managers/scheduler.py", line 12, in event_loop_normal\n'
            "ValueError")
    for t in (text, "filler\n" * 9400 + text):
        got = _clues(exception_clues, t)
        assert got == _clues(old_exception_clues, t)
        assert [c.text for c in got] == ["ValueError"]
