"""vLLM's own words when its engine stops answering or dies (vllm/engine, v1/engine/core.py,
v1/executor/multiproc_executor.py, distributed/device_communicators/shm_broadcast.py).

- "No available shared memory broadcast block found in 60 seconds": the engine's writer waits
  for its workers to read the last step's message; said again each minute, a worker is held
  (a hang). A consequence: the held worker's own evidence says why.
- "Waiting for output from MQLLMEngine." (the V0 API server's client, each 10 s): the server
  waits for its engine; said again and again, the engine is held. A consequence.
- "Engine core proc X died unexpectedly" / "Worker proc X died unexpectedly": the engine found
  a process of it gone: a weak cause, X the one to look at (what it died of, printed before
  it, is the cause where the text holds it).
- "EngineCore encountered a fatal error." and "WorkerProc hit an exception.": the headers
  vLLM logs before the traceback of what failed: consequences of that exception.
Where requests stop is not said by any of them (the stage is the engine's: not established).
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with, has_any, marks
from pdforensics.parsers.logtime import parse_log_timestamp

_SHM = "No available shared memory broadcast block found in"
_MQ = "Waiting for output from MQLLMEngine"
_WAITS = (_SHM, _MQ)
_HEADERS = ("EngineCore encountered a fatal error", "WorkerProc hit an exception")
#: the engine's client or executor finding a process of it gone (core_client.py,
#: multiproc_executor.py): "Engine core proc EngineCore_DP1 died unexpectedly, shutting down
#: client.", "Worker proc VllmWorker-0 died unexpectedly, shutting down executor."
_DIED = linear.compile(r"(?:Engine core|Worker) proc (\S{1,60}) died unexpectedly")
_DIED_WORDS = "died unexpectedly"
_MARKS = marks(*_WAITS, *_HEADERS, _DIED_WORDS)
_HELD = 2  # said this many times: the wait goes on
_MAX = 50


@reader("vllm_engine")
def vllm_engine_clues(src: Source) -> Iterator[Clue]:
    """vLLM's engine waits that go on (held) and its failure headers (see the docstring)."""
    if src.kind in ("metrics", "server_info", "load") or not has_any(src.text, _MARKS):
        return
    found = first_lines_with(src.text, (*_WAITS, *_HEADERS, _DIED_WORDS), _MAX)
    said = {w: sum(w in line for _no, line in found) for w in _WAITS}
    first: set[str] = set()
    for no, line in found:
        wait = next((w for w in _WAITS if w in line), None)
        if wait is not None:
            if wait in first:
                continue  # (one clue per wait: the count says how long)
            first.add(wait)
            held = said[wait] >= _HELD
            yield Clue(key="VLLM_SHM_WAIT" if wait == _SHM else "VLLM_ENGINE_WAIT",
                       label="consequence", text=line.strip()[:500], source=src.path, line=no,
                       time=parse_log_timestamp(line), role=src.role, host=src.host,
                       stage=NOT_ESTABLISHED, wedge=True if held else None, strength=2,
                       why=(f"said {said[wait]} times: " if held else "") + (
                           "vLLM's engine waits for its workers to read the last step: a "
                           "worker is held" if wait == _SHM else "vLLM's API server waits for "
                           "its engine's output: the engine is held"))
            continue
        if (d := _DIED.search(line)) is not None:
            yield Clue(key="VLLM_PROC_DIED", label="cause", text=line.strip()[:500],
                       source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                       host=src.host, suspect=d.group(1), wedge=False, strength=1,
                       why="vLLM found a process of its engine gone: what it died of, printed "
                           "by it before, is the cause where the text holds it")
            continue
        if _DIED_WORDS in line:
            continue
        yield Clue(key="VLLM_FAILURE_HEADER", label="consequence", text=line.strip()[:500],
                   source=src.path, line=no, time=parse_log_timestamp(line), role=src.role,
                   host=src.host, wedge=False, strength=1,
                   why="vLLM's header before the traceback of what failed: that exception "
                       "is the cause")
