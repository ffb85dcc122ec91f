"""What doctor says: one Check per (key, subject), and the report over all of them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["ok", "warn", "fail"]
#: the subject of checks about the machine pdforensics runs on (disk room for bundles)
THIS_MACHINE = "(this machine)"
#: the subject of checks that compare hosts with each other
CLUSTER = "(cluster)"
_RANK = {"ok": 0, "warn": 1, "fail": 2}


@dataclass(frozen=True)
class Check:
    """One readiness check on one host (or server): key is stable (docs/doctor.md)."""

    key: str
    host: str  # a host name, THIS_MACHINE or CLUSTER
    status: Status
    evidence: str
    fix: str = ""
    subject: str = ""  # the server ("prefill:30000") when the check is per server

    @property
    def where(self) -> str:
        return f"{self.host} {self.subject}".strip()

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def ok(key: str, host: str, evidence: str, subject: str = "") -> Check:
    return Check(key, host, "ok", evidence, "", subject)


def warn(key: str, host: str, evidence: str, fix: str, subject: str = "") -> Check:
    return Check(key, host, "warn", evidence, fix, subject)


def fail(key: str, host: str, evidence: str, fix: str, subject: str = "") -> Check:
    return Check(key, host, "fail", evidence, fix, subject)


@dataclass(frozen=True)
class DoctorReport:
    """Every check of one doctor run, with the bundle it read."""

    cluster: str
    checks: tuple[Check, ...]
    bundle: str | None = None
    duration_s: float = 0.0

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "fail")

    @property
    def warned(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "warn")

    @property
    def ready(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        """One line: how many checks would leave the next capture blind, and which."""
        n, bad = len(self.checks), self.failed
        if not bad:
            extra = f", {len(self.warned)} warning(s)" if self.warned else ""
            return f"all {n} checks pass{extra}: the next capture should see everything"
        keys = sorted({c.key for c in bad})
        return (f"{len(bad)} of {n} checks would leave the next capture blind: " + ", ".join(keys)
                + (f" ({len(self.warned)} more warn)" if self.warned else ""))

    def to_json(self) -> dict[str, Any]:
        return {"cluster": self.cluster, "ready": self.ready, "summary": self.summary(),
                "bundle": self.bundle, "duration_s": round(self.duration_s, 2),
                "counts": {s: sum(c.status == s for c in self.checks) for s in _RANK},
                "checks": [c.to_json() for c in self.checks]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> DoctorReport:
        checks = tuple(Check(**{k: str(c.get(k, "")) for k in
                                ("key", "host", "status", "evidence", "fix", "subject")})  # type: ignore[arg-type]
                       for c in doc.get("checks", []) if isinstance(c, dict))
        return cls(str(doc.get("cluster", "")), checks, doc.get("bundle"),
                   float(doc.get("duration_s", 0.0)))


def worse(a: Status, b: Status) -> bool:
    """True when status b is worse than a."""
    return _RANK[b] > _RANK[a]


def ordered(checks: Iterable[Check]) -> tuple[Check, ...]:
    """Grouped by host (this machine first, the cluster last), fails first within a host."""
    def host_rank(c: Check) -> tuple[int, str]:
        return (0 if c.host == THIS_MACHINE else 2 if c.host == CLUSTER else 1, c.host)
    return tuple(sorted(checks, key=lambda c: (host_rank(c), -_RANK[c.status], c.key, c.subject)))
