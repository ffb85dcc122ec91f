"""Which LLM serving engine wrote a text: a failure in a serving engine's evidence is on a
request path even where nothing says which stage ("not_established", not "not_applicable").

The engine is named by its words anywhere in the text (a logger's name, a path, vLLM's Ray
worker class in a line prefix the readers strip), not only in the lines that fail.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_line_with, marks

#: (engine, its words as printed)
_ENGINES = (("vllm", ("vllm/", "vllm.", "RayWorkerVllm", "RayWorkerWrapper", "VllmWorker",
                      "EngineCore", "vLLM", "shm_broadcast.py")),
            ("sglang", ("sglang/", "sglang.", "sglang::", "SGLang")),
            ("tensorrt_llm", ("tensorrt_llm",)), ("lmdeploy", ("lmdeploy",)),
            # NVIDIA Dynamo's runtime and workers (not torch._dynamo: "/_dynamo/", "._dynamo")
            ("dynamo", ("/dynamo/", "dynamo.runtime", "dynamo.llm", "dynamo_runtime")),
            ("text-generation-inference", ("text_generation_server", "text_generation_router",
                                           "text_generation_launcher")))
#: every engine's words, for a reader that only asks whether a serving engine wrote a text
ENGINE_MARKS = marks(*(w for _e, words in _ENGINES for w in words))


@reader("serving_engine")
def serving_engine(src: Source) -> Iterator[Clue]:
    """One noise clue naming the serving engine whose words the text holds."""
    if not src.text or src.kind in ("metrics", "server_info", "load"):
        return
    found = first_line_with(src.text, ENGINE_MARKS)
    if found is None:
        return
    no, line = found
    engine = next((e for e, words in _ENGINES if any(w in line for w in words)), "?")
    yield Clue(key="SERVING_ENGINE", label="noise", text=f"written by {engine}: {line.strip()[:200]}",
               source=src.path, line=no, role=src.role, host=src.host, strength=1,
               why="the words of an LLM serving engine: the evidence is a server's")
