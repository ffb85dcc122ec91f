"""Score triage's reading of field artifacts against their sidecars (tests/data/field).

Each ``<slug>.meta.json`` names what a correct reading of ``<slug>.<ext>`` is (see
tests/data/field/README.md); ``score_artifact`` reads the artifact alone, as `triage`
would, and says which ``expect`` keys were met, with expected and got for each miss.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pdforensics.analysis.findings import Analysis
from pdforensics.analysis.pdpath.model import Diagnosis
from pdforensics.analysis.stacks import analyze_stacks
from pdforensics.analysis.stacks_classify import blocked_frame, blocked_in
from pdforensics.analysis.stacks_model import LabelledDump, StackReport
from pdforensics.parsers.frames import Frame, ProcessDump
from pdforensics.parsers.journal import match_log_signatures
from pdforensics.parsers.pyspy import classify_pyspy_error
from pdforensics.triage.read import Artifact, read_path
from pdforensics.triage.score_reading import check_reading, control_alarms, invented_root_cause

_ANALYSIS_KEYS = ("verdict", "findings", "not_findings", "no_critical", "reading")


@dataclass(frozen=True)
class Miss:
    key: str
    expected: object
    got: object

    def __str__(self) -> str:
        return f"{self.key}: expected {self.expected!r}, got {self.got!r}"


@dataclass(frozen=True)
class Score:
    """One artifact: its family, whether it parsed, and the expect keys it missed."""

    meta: Path
    artifact: Path | None
    family: str
    empty: bool
    parsed: bool
    misses: tuple[Miss, ...]
    control: bool = False  # the sidecar's reading says: a control case
    control_alarm: bool = False  # ... and it got a wedge or a critical finding
    invented: bool = False  # the tool named a root cause the thread left open

    @property
    def expected(self) -> bool:
        return self.artifact is not None and not self.misses


def find_sidecars(root: Path) -> list[Path]:
    return sorted(root.rglob("*.meta.json"))


def artifact_of(meta: Path) -> Path | None:
    """``x.meta.json`` -> the one other file named ``x.<ext>`` beside it."""
    slug = meta.name[: -len(".meta.json")]
    found = sorted(p for p in meta.parent.iterdir()
                   if p != meta and p.is_file() and p.name.startswith(slug + ".")
                   and not p.name.endswith(".meta.json"))
    return found[0] if found else None


def _report(art: Artifact) -> StackReport | None:
    dumps: Sequence[ProcessDump] = art.dumps
    if art.kind == "goroutines":
        dumps = (ProcessDump("goroutines", art.goroutines),)
    usable = [LabelledDump(d, source=art.path) for d in dumps if d.threads]
    return analyze_stacks(usable) if usable else None


def _leaves(art: Artifact, rep: StackReport | None) -> list[str]:
    """Where the stacks that matter wait (libc, interpreter and bare-address frames of
    `--native` dumps skipped): the odd rank's, every rank's stuck frame, suspect buckets,
    the faulthandler current thread; else every bucket's."""
    if rep is None:
        return []
    out: list[Frame | None] = []
    for o in rep.outliers:
        out.extend(blocked_in(b.frames) for b in rep.buckets if o.member in b.members)
    out.extend(a.frame for a in rep.all_stuck)
    out.extend(blocked_in(b.frames) for b in rep.buckets if b.suspect)
    out.extend(blocked_frame(t) for d in art.dumps for t in d.threads if t.current)
    if not any(out):  # nothing stands out: every bucket, and goroutines waiting for minutes
        out.extend(blocked_in(b.frames) for b in rep.buckets)
        out.extend(blocked_frame(t) for t in art.goroutines if (t.wait_minutes or 0) >= 1)
    return list(dict.fromkeys(f.function for f in out if f is not None))


def _pyspy_reasons(art: Artifact) -> list[str]:
    out = [art.pyspy_failure.reason] if art.pyspy_failure is not None else []
    for d in art.dumps:
        if d.error:
            f = classify_pyspy_error(d.error, 1)
            out.append(f.reason if f is not None else "unknown")
    return out


def _result_as(art: Artifact, kind: str | None) -> int:
    """How much of what the sidecar says the file is came out: threads for stacks,
    goroutines, samples, log lines, JSON keys, a classified py-spy failure."""
    if kind == "stacks":
        return art.threads
    if kind == "goroutines":
        return sum(g.count for g in art.goroutines)
    if kind == "log":
        return sum(1 for ln in art.log_text.split("\n") if ln.strip())
    if kind == "pyspy_error":
        return len(_pyspy_reasons(art))
    if art.kind != kind and kind in art.beneath_kinds:  # a layer beneath SGLang the file holds
        return _beneath_size(art, kind)
    return art.result_size if art.kind == kind else 0


def _beneath_size(art: Artifact, kind: str) -> int:
    """How many records of one layer beneath SGLang came out of the file."""
    b = art.beneath
    if kind == "gdb":  # threads, kernels, or the debugger's "no stack" read as such
        return art.threads + (len(b.cuda) + (b.debugger_no_stack is not None) if b is not None else 0)
    if b is None:
        return 0
    return {"kernel": len(b.kernel), "nccl": len(b.watchdog) + len(b.nccl) + (b.ras is not None),
            "transfer_engine": len(b.transfer), "flight_recorder": len(b.fr_trace)}.get(kind, 0)


def _check_reading(art: Artifact, expect: dict[str, Any]) -> list[Miss]:
    misses: list[Miss] = []
    threads = (sum(g.count for g in art.goroutines) if art.kind == "goroutines"
               else art.threads)
    needs_stacks = any(k in expect for k in ("blocked_frame", "odd_rank"))
    rep = _report(art) if needs_stacks else None
    # every signature read, noise included (batch lines match, they just never make a finding)
    hits = {h.key for h in match_log_signatures(art.log_text)} if art.log_text else set()
    if "threads" in expect and threads != expect["threads"]:
        misses.append(Miss("threads", expect["threads"], threads))
    if "min_threads" in expect and threads < expect["min_threads"]:
        misses.append(Miss("min_threads", expect["min_threads"], threads))
    if "blocked_frame" in expect:
        leaves = _leaves(art, rep)
        if not any(str(expect["blocked_frame"]) in f for f in leaves):
            misses.append(Miss("blocked_frame", expect["blocked_frame"], leaves[:5]))
    if "odd_rank" in expect:
        ranks = sorted({o.member.rank or o.member.label() for o in rep.outliers} if rep else set())
        if expect["odd_rank"] not in ranks:
            misses.append(Miss("odd_rank", expect["odd_rank"], ranks))
    if "long_waits" in expect:
        waits = sum(g.count for g in art.goroutines if (g.wait_minutes or 0) >= 1)
        if waits != expect["long_waits"]:
            misses.append(Miss("long_waits", expect["long_waits"], waits))
    if "pyspy_error" in expect:
        reasons = _pyspy_reasons(art)
        if expect["pyspy_error"] not in reasons:
            misses.append(Miss("pyspy_error", expect["pyspy_error"], reasons))
    if "signatures" in expect:
        lacking = sorted(set(expect["signatures"]) - hits)
        if lacking:
            misses.append(Miss("signatures", lacking, sorted(hits)))
    if "not_signatures" in expect:
        wrong = sorted(set(expect["not_signatures"]) & hits)
        if wrong:
            misses.append(Miss("not_signatures", [], wrong))
    return misses


def _check_analysis(art: Artifact, expect: dict[str, Any]
                    ) -> tuple[list[Miss], Analysis | None, Diagnosis | None]:
    from pdforensics.triage.run import triage_artifacts

    result = triage_artifacts([art])
    a = result.analysis
    verdict = a.verdict if a is not None else None
    keys = {f.key for f in a.findings} if a is not None else set()
    crit = sorted({f.key for f in a.findings if f.severity == "critical"}) if a else []
    misses: list[Miss] = []
    if "verdict" in expect and verdict != expect["verdict"]:
        misses.append(Miss("verdict", expect["verdict"], verdict))
    if "findings" in expect and not set(expect["findings"]) <= keys:
        misses.append(Miss("findings", sorted(expect["findings"]), sorted(keys)))
    if "not_findings" in expect and set(expect["not_findings"]) & keys:
        misses.append(Miss("not_findings", [], sorted(set(expect["not_findings"]) & keys)))
    if expect.get("no_critical") and crit:
        misses.append(Miss("no_critical", [], crit))
    if isinstance(expect.get("reading"), dict):
        misses.extend(Miss(k, e, g) for k, e, g in check_reading(expect["reading"], a,
                                                                 result.diagnosis))
    return misses, a, result.diagnosis


def score_artifact(meta: Path) -> Score:
    """Read the artifact of ``meta`` alone and check every ``expect`` key of its sidecar."""
    family = meta.parent.name
    side = json.loads(meta.read_text(encoding="utf-8"))
    path = artifact_of(meta)
    if path is None:
        return Score(meta, None, family, True, False, (Miss("artifact", "a file beside it", None),))
    art = read_path(str(path))
    empty = art.size == 0
    parsed = art.usable and _result_as(art, side.get("kind") or art.kind) > 0
    misses: list[Miss] = []
    if side.get("kind") and side["kind"] not in art.kinds:
        misses.append(Miss("kind", side["kind"], sorted(art.kinds)))
    expect = dict(side.get("expect") or {})
    if "read_error" in expect:  # the right reading is a refusal that says why
        if art.usable or str(expect["read_error"]) not in (art.error or ""):
            misses.append(Miss("read_error", expect["read_error"], art.error))
    elif not art.usable:
        misses.append(Miss("read", "no error", art.error))
    misses.extend(_check_reading(art, expect))
    got = expect.get("reading")
    reading: dict[str, Any] = got if isinstance(got, dict) else {}
    control = bool(reading.get("control"))
    alarm = invented = False
    if any(k in expect for k in _ANALYSIS_KEYS):
        found, analysis, diagnosis = _check_analysis(art, expect)
        misses.extend(found)
        alarm = control and bool(control_alarms(analysis))
        invented = invented_root_cause(reading, diagnosis)
    return Score(meta, path, family, empty, parsed, tuple(misses), control, alarm, invented)


@dataclass(frozen=True)
class Tally:
    name: str
    total: int
    non_empty: int
    parsed: int
    expected: int

    @property
    def parse_rate(self) -> float:
        return 100.0 * self.parsed / self.non_empty if self.non_empty else 100.0

    @property
    def expected_rate(self) -> float:
        return 100.0 * self.expected / self.total if self.total else 100.0


def tally(name: str, scores: Iterable[Score]) -> Tally:
    s = list(scores)
    return Tally(name, len(s), sum(not x.empty for x in s),
                 sum(x.parsed for x in s if not x.empty), sum(x.expected for x in s))


def by_family(scores: Sequence[Score]) -> list[Tally]:
    fams = sorted({s.family for s in scores})
    return [tally(f, [s for s in scores if s.family == f]) for f in fams]
