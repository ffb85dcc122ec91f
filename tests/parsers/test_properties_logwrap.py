"""Real dumps wrapped in random log prefixes and cut at random points.

Wrapped: every line of a real dump behind one prefix style (docker compose, kubectl --prefix,
journald, ISO timestamps, SGLang's `[ts TPn]`, or two of them stacked) reads exactly like the
bare dump. Cut: the text never crashes the loader (a ParseError at most), and every thread
that ended before the cut comes out with the same frames.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.analysis.stacks_load import parse_stack_text
from pdforensics.errors import ParseError
from pdforensics.parsers.frames import ProcessDump

pytestmark = pytest.mark.property

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
SAMPLES = [
    "pyspy/vllm-50835-enginecore.txt", "pyspy/deepspeed-6524-threads-without-frames.txt",
    "pyspy/gen-pyspy043-locals-python-c.txt", "pyspy/ray-3417-pyspy01-tab-frames.txt",
    "sglang_log/sglang-31178-dump-with-command.log", "faulthandler/genesis-2-no-python-frame.txt",
    "faulthandler/gen-py311-dump-traceback-later.txt", "go/kube-batch-406-persistconn-minutes.txt",
    "go/satpulse-66-sigquit-gp-m.txt", "go/requests-go-23-spaces-in-goroutine.txt",
    "go/unbounded-guide-debug1-leaky.txt", "pystack/gen-pystack172-remote-native.txt",
    "traceback/gen-py311-chained-cause.txt", "traceback/docker-distributed-2-plain.txt",
]
TEXTS = {name: (FIELD / name).read_text() for name in SAMPLES}
# the line that opens each thread, by format: its id is the thread id
_HEADER = re.compile(r"^(?:Thread (?P<a>0[xX][0-9A-Fa-f]+|\d+) \(|(?:Current thread|Thread) "
                     r"(?P<b>0x[0-9a-f]+) |goroutine (?P<c>\d+) |Traceback for thread (?P<d>\d+) )")

MONTHS = ["Jan", "Feb", "Mar", "Dec", "Dez", "Okt"]
_name = st.from_regex(r"[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,6})?", fullmatch=True)


@st.composite
def prefixes(draw: st.DrawFn) -> list[str]:
    """One to two prefix layers, fixed per stream (timestamps may vary per line)."""
    svc, pod, host, ident = draw(_name), draw(_name), draw(_name), draw(_name)
    pid, rank = draw(st.integers(1, 99999)), draw(st.sampled_from(["TP0", "DP1 TP3", "PP2 TP1"]))
    month = draw(st.sampled_from(MONTHS))
    styles = {
        "compose": f"{svc}-1{' ' * draw(st.integers(1, 12))}| ",
        "kubectl": f"[pod/{pod}/{svc}] ",
        "journald": f"{month} {draw(st.integers(1, 28)):2d} 06:43:{draw(st.integers(0, 59)):02d} "
                    f"{host} {ident}[{pid}]: ",
        "iso": f"2025-06-19T08:18:{draw(st.integers(0, 59)):02d}.{draw(st.integers(0, 999999))}Z ",
        "sglang": f"[2025-08-02 19:24:{draw(st.integers(0, 59)):02d} {rank}] ",
    }
    outer = draw(st.sampled_from(["compose", "kubectl", "journald", "iso", "sglang"]))
    inner = draw(st.sampled_from(["", "iso", "sglang"]))
    if outer in ("iso", "sglang") or inner == outer:
        inner = ""
    return [styles[outer] + (styles[inner] if inner else "")]


def _threads(dumps: tuple[ProcessDump, ...]) -> list[tuple[str, tuple[str, ...]]]:
    return [(t.thread_id, tuple(f.function for f in t.frames)) for d in dumps for t in d.threads]


def _wrap(text: str, prefix: str) -> str:
    return "".join(prefix + ln + "\n" for ln in text.split("\n")[:-1])


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(SAMPLES), layers=prefixes())
def test_wrapped_reads_like_bare(name: str, layers: list[str]) -> None:
    bare = _threads(parse_stack_text(TEXTS[name]))
    assert bare
    assert _threads(parse_stack_text(_wrap(TEXTS[name], layers[0]))) == bare


def _complete_before(text: str, cut: int, bare: list[tuple[str, tuple[str, ...]]]
                     ) -> list[tuple[str, tuple[str, ...]]]:
    """The threads of ``bare`` whose next thread's header line starts before ``cut``."""
    starts = []
    pos = 0
    for ln in text.split("\n"):
        m = _HEADER.match(ln)
        if m is not None:
            starts.append((pos, next(g for g in m.groups() if g is not None)))
        pos += len(ln) + 1
    ids = [tid for _, tid in starts]
    done: list[tuple[str, tuple[str, ...]]] = []
    for i, (_, tid) in enumerate(starts[:-1]):
        if starts[i + 1][0] < cut and ids.count(tid) == 1:
            done.extend(t for t in bare if t[0] == tid)
    return done


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(SAMPLES), where=st.floats(0, 1), layers=st.one_of(st.none(), prefixes()))
def test_cut_keeps_the_threads_before_the_cut(name: str, where: float,
                                              layers: list[str] | None) -> None:
    text = TEXTS[name] if layers is None else _wrap(TEXTS[name], layers[0])
    bare = _threads(parse_stack_text(TEXTS[name]))
    cut = int(len(text) * where)
    try:
        got = _threads(parse_stack_text(text[:cut]))
    except ParseError:
        got = []
    for t in _complete_before(text, cut, bare):
        assert t in got, (t[0], cut)
