"""Score a Diagnosis against a sidecar's ``expect.reading`` (the schema decided for issues
30/31: /work/coord/corpus-schema.md, tests/data/field/README.md).

- ``stage``, ``side``: equal (``not_established`` is a value the tool must give itself);
- ``suspect``: a substring (case-insensitive) of the diagnosis's suspect;
  ``not_established``: the diagnosis names no suspect;
- ``causes`` / ``consequences``: each substring is in the text of a clue with that label,
  and in no clue with the other label (a line is never both);
- ``root_cause``: ``not_established``: the diagnosis names none;
- ``wedge``: equal to the diagnosis's (True / False; None, "cannot tell", meets neither);
- ``control``: true: no wedge reading, no WEDGED verdict and no critical finding.
"""

from __future__ import annotations

from typing import Any

from pdforensics import linear
from pdforensics.analysis.findings import Analysis
from pdforensics.analysis.pdpath.model import NOT_ESTABLISHED, Clue, Diagnosis

READING_KEYS = ("stage", "side", "suspect", "causes", "consequences", "root_cause", "wedge",
                "control")
_WS = linear.compile(r"\s+")


def _norm(s: str) -> str:
    return _WS.sub(" ", s).strip().lower()


def _found(needle: str, clues: tuple[Clue, ...]) -> bool:
    n = _norm(needle)
    return any(n in _norm(c.text) for c in clues)


def check_reading(reading: dict[str, Any], analysis: Analysis | None,
                  diagnosis: Diagnosis | None = None) -> list[tuple[str, object, object]]:
    """(key, expected, got) for every ``reading`` key the analysis (or, where no rule could
    read the file, the diagnosis alone) does not meet."""
    d = analysis.diagnosis if analysis is not None else diagnosis
    misses: list[tuple[str, object, object]] = []
    if d is None:
        return [(f"reading.{k}", v, None) for k, v in reading.items() if k in READING_KEYS
                and not (k == "control" and not v)]
    for key in ("stage", "side"):
        if key in reading and getattr(d, key) != reading[key]:
            misses.append((f"reading.{key}", reading[key], getattr(d, key)))
    if "suspect" in reading:
        want = str(reading["suspect"])
        ok = (d.suspect is None) if want == NOT_ESTABLISHED else (
            d.suspect is not None and want.lower() in d.suspect.lower())
        if not ok:
            misses.append(("reading.suspect", want, d.suspect))
    for key, label, other in (("causes", "cause", "consequence"),
                              ("consequences", "consequence", "cause")):
        wrong = [s for s in reading.get(key, ())
                 if not _found(s, d.labelled(label)) or _found(s, d.labelled(other))]  # type: ignore[arg-type]
        if wrong:
            got = [c.text[:120] for c in d.labelled(label)][:4]  # type: ignore[arg-type]
            misses.append((f"reading.{key}", wrong, got))
    if reading.get("root_cause") == NOT_ESTABLISHED and d.root_cause != NOT_ESTABLISHED:
        misses.append(("reading.root_cause", NOT_ESTABLISHED, d.root_cause))
    if "wedge" in reading and d.wedge is not reading["wedge"]:
        misses.append(("reading.wedge", reading["wedge"], d.wedge))
    if reading.get("control"):
        alarms = control_alarms(analysis)
        if alarms:
            misses.append(("reading.control", "no wedge, no critical", alarms))
    return misses


def control_alarms(analysis: Analysis | None) -> list[str]:
    """What a control case must never get: a wedge reading, a WEDGED verdict, a critical."""
    if analysis is None:
        return []
    out = [f"critical {f.key}" for f in analysis.findings if f.severity == "critical"]
    if analysis.verdict == "WEDGED":
        out.append("verdict WEDGED")
    if analysis.diagnosis is not None and analysis.diagnosis.wedge:
        out.append("diagnosis: wedge")
    return out


def invented_root_cause(reading: dict[str, Any], diagnosis: Diagnosis | None) -> bool:
    """The thread left the root cause open (or the case is a control) and the tool named one."""
    if diagnosis is None:
        return False
    open_ = reading.get("root_cause") == NOT_ESTABLISHED or bool(reading.get("control"))
    return open_ and diagnosis.root_cause != NOT_ESTABLISHED
