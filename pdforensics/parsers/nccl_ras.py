"""NCCL RAS client output (``ncclras``, NCCL >= 2.24), text format.

The report has a job summary, a table of communicator groups (``Status``: RUNNING, INIT,
FINALIZE, ABORT, NOCOMM; ``Errors``: OK, INCOMPLETE, MISMATCH, ERROR), then ``Errors`` and
``Warnings`` sections whose entries start with a title line (``INCOMPLETE``, ``DEAD``,
``#0-0 (fa93daea854b060b) MISMATCH``) and list, indented, what RAS found: missing
processes or ranks, dead processes, ranks whose status or per-collective operation counts
differ (``30 ranks have launched up to operation 640`` / ``2 ranks have launched up to
operation 641`` followed by the outlier ranks it names).

Reading op counts takes care: ranks that launched *more* operations are ahead, waiting for
the others to launch theirs; they are not stragglers. The ranks behind are those with the
lowest count, and they are a suspect only when they are a minority. A report that contradicts
itself (more missing ranks than the job has processes) is not evidence of who is missing.
Never raises on arbitrary text.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdforensics import linear
from pdforensics.parsers.linescan import has_any, marks

_VERSION = linear.compile(r"^NCCL version (\S{1,40})")
_TABLE_ROW = linear.compile(r"^\s{0,8}(\d{1,5})\s{1,12}(\d{1,9})\s{1,12}(\d{1,9})\s{1,12}(\S{1,12})\s{1,12}"
                        r"(\d{1,9})\s{1,12}(\d{1,9})\s{1,12}([A-Z]{2,12})\s{1,12}([A-Z,]{2,40})\s*$")
_TITLE = linear.compile(r"^(?:#(\d{1,5})-(\d{1,5}) \(([0-9a-f]{1,16})\) )?(INCOMPLETE|DEAD|MISMATCH|ERROR|"
                    r"TIMEOUT)\s*$")
_MISSING = linear.compile(r"^\s{1,8}Missing communicator data from (\d{1,9}) (rank|job process)")
_DEAD = linear.compile(r"^\s{1,8}(\d{1,9}) job process(?:es are| is) considered dead")
_RANK = linear.compile(r"^\s{1,8}Rank (\d{1,9})(?: has (?:launched up to operation (\d{1,20})|"
                   r"(not launched any operations)|status (\w{1,20})))?(?: -- (.*))?$")
_PROCESS = linear.compile(r"^\s{1,8}Process (\d{1,10}) on node (\S{1,255}) managing GPUs? (.*)$")
_COUNTS = linear.compile(r"^\s{1,8}Communicator ranks have different (\w{1,40}) operation counts")
_GROUP_COUNT = linear.compile(r"^\s{1,8}(\d{1,9}) ranks have (?:launched up to operation (\d{1,20})|"
                          r"(not launched any operations)|status (\w{1,20}))")
_JOB_TOTAL = linear.compile(r"^\s{0,8}(\d{1,6})\s{1,12}(\d{1,9})\s{1,12}(\d{1,9})(?:\s{1,12}(\d{1,9})"
                        r"\s{1,12}(\d{1,9}))?\s*$")


@dataclass(frozen=True)
class RasGroup:
    """One row of the communicators table."""

    group: int
    comms: int
    nodes: int
    ranks_per_comm: int
    ranks_in_group: int
    status: str  # RUNNING | INIT | FINALIZE | ABORT | NOCOMM
    errors: str  # OK | INCOMPLETE | MISMATCH | ERROR | combinations


@dataclass(frozen=True)
class RasCount:
    """Ranks of one communicator that share an operation count (or a status)."""

    ranks: int  # how many
    value: int | None  # launched up to this operation (None: none launched, or a status)
    status: str | None  # "ABORT", ... for a status breakdown
    named: tuple[int, ...]  # the ranks RAS listed for this count (outliers only)


@dataclass(frozen=True)
class RasEntry:
    """One entry of the Errors / Warnings sections."""

    lineno: int
    title: str  # INCOMPLETE | DEAD | MISMATCH | ERROR | TIMEOUT
    comm: str | None  # "#0-0 (fa93daea854b060b)"; None for job-wide entries
    lines: tuple[str, ...]  # the entry's lines as found
    missing: int | None = None  # "Missing communicator data from N ranks/processes"
    missing_ranks: tuple[int, ...] = ()
    processes: tuple[tuple[int, str], ...] = ()  # (pid, node) RAS names
    op: str | None = None  # the collective whose counts differ (AllGather, ...)
    counts: tuple[RasCount, ...] = ()


@dataclass(frozen=True)
class RasReport:
    version: str | None
    processes: int | None  # job total
    groups: tuple[RasGroup, ...]
    entries: tuple[RasEntry, ...]
    outlier_nodes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Every communicator RUNNING with no error, and no entry."""
        return bool(self.groups) and not self.entries and all(
            g.status == "RUNNING" and g.errors == "OK" for g in self.groups)

    @property
    def consistent(self) -> bool:
        """No entry claims more missing ranks than the job has processes."""
        if self.processes is None:
            return True
        return all(e.missing is None or e.missing <= self.processes for e in self.entries)


def looks_like_ras(text: str) -> bool:
    return has_any(text, _COMMUNICATORS) or (has_any(text, _SUMMARY)
                                             and has_any(text, _VERSION_MARK))


_COMMUNICATORS = marks("Communicators...")
_SUMMARY = marks("Job summary")
_VERSION_MARK = marks("NCCL version")


def _job_total(lines: list[str]) -> int | None:
    """The job's process total: the summary table row under "(total)"."""
    for i, line in enumerate(lines):
        if "(total)" in line and "Processes" in lines[i - 1] if i else False:
            for row in lines[i + 1:i + 4]:
                m = _JOB_TOTAL.match(row)
                if m is not None:
                    # "Nodes Processes-per-node GPUs-per-process [Processes GPUs] (total)" or
                    # "Nodes Processes GPUs (total)": the process total is the 4th or 2nd column
                    return int(m.group(4) if m.group(4) is not None else m.group(2))
    return None


def _outliers(lines: list[str]) -> tuple[str, ...]:
    out = []
    for i, line in enumerate(lines):
        if line.startswith("The outlier node"):
            for row in lines[i + 1:i + 20]:
                s = row.strip()
                if not s.startswith("Node "):
                    break
                out.append(s.split()[1])
    return tuple(out)


def _entry(lineno: int, title: linear.Match[str], body: list[str]) -> RasEntry:
    comm = f"#{title.group(1)}-{title.group(2)} ({title.group(3)})" if title.group(1) else None
    missing = None
    ranks: list[int] = []
    procs: list[tuple[int, str]] = []
    op = None
    counts: list[RasCount] = []
    for line in body:
        if (m := _MISSING.match(line)) is not None:
            missing = int(m.group(1))
        elif (m := _DEAD.match(line)) is not None:
            missing = int(m.group(1))
        elif (m := _COUNTS.match(line)) is not None:
            op = m.group(1)
        elif (m := _GROUP_COUNT.match(line)) is not None:
            counts.append(RasCount(int(m.group(1)), int(m.group(2)) if m.group(2) else None,
                                   m.group(4), ()))
        elif (m := _RANK.match(line)) is not None:
            rank = int(m.group(1))
            if m.group(2) or m.group(3) or m.group(4):  # a single rank with its own count
                counts.append(RasCount(1, int(m.group(2)) if m.group(2) else None, m.group(4),
                                       (rank,)))
            elif counts:  # listed under the count line above it
                c = counts[-1]
                counts[-1] = RasCount(c.ranks, c.value, c.status, c.named + (rank,))
            else:
                ranks.append(rank)
        elif (m := _PROCESS.match(line)) is not None:
            procs.append((int(m.group(1)), m.group(2)))
    return RasEntry(lineno, title.group(4), comm, tuple(body), missing, tuple(ranks),
                    tuple(procs), op, tuple(counts))


def parse_ras(text: str) -> RasReport | None:
    """The RAS report in ``text`` (any lines before it are skipped); None when there is none."""
    if not looks_like_ras(text):
        return None
    lines = [ln.rstrip("\r") for ln in text.split("\n")]
    version = next((m.group(1) for ln in lines if (m := _VERSION.match(ln))), None)
    groups = tuple(RasGroup(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(5)),
                            int(m.group(6)), m.group(7), m.group(8))
                   for ln in lines if (m := _TABLE_ROW.match(ln)))
    entries: list[RasEntry] = []
    section = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() in ("Errors", "Warnings"):
            section = True
        title = _TITLE.match(line) if section else None
        if title is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].startswith((" ", "\t")) and lines[j].strip():
            j += 1
        entries.append(_entry(i + 1, title, [line] + lines[i + 1:j]))
        i = j
    return RasReport(version, _job_total(lines), groups, tuple(entries), _outliers(lines))


@dataclass(frozen=True)
class RasReading:
    """What the report says about ranks: who is missing, who is behind, who is ahead."""

    missing: tuple[str, ...]  # "Rank 1 (#0-0)", "process 60004 on 10.0.0.1"
    behind: tuple[str, ...]  # minority ranks with the lowest operation count
    ahead: tuple[str, ...]  # ranks RAS lists with a higher count than the rest: not stragglers
    errors: tuple[RasEntry, ...]  # entries that are failures
    reliable: bool  # False: the report contradicts itself; name nobody from it


def read_ras(report: RasReport) -> RasReading:
    """Missing, behind and ahead ranks of a RAS report (see the module docstring)."""
    missing: list[str] = []
    behind: list[str] = []
    ahead: list[str] = []
    errors: list[RasEntry] = []
    for e in report.entries:
        where = f" ({e.comm})" if e.comm else ""
        if e.title in ("INCOMPLETE", "DEAD", "ERROR", "MISMATCH"):
            errors.append(e)
        missing += [f"Rank {r}{where}" for r in e.missing_ranks]
        missing += [f"process {pid} on {node}" for pid, node in e.processes]
        launched = [c for c in e.counts if c.status is None]
        if len(launched) < 2:
            continue
        low = min(c.value if c.value is not None else -1 for c in launched)
        total = sum(c.ranks for c in launched)
        for c in launched:
            v = c.value if c.value is not None else -1
            names = [f"Rank {r}{where}" for r in c.named]
            if v == low and c.ranks * 2 < total:
                behind += names
            elif v > low:
                ahead += names
    return RasReading(tuple(dict.fromkeys(missing)), tuple(dict.fromkeys(behind)),
                      tuple(dict.fromkeys(ahead)), tuple(errors), report.consistent)
