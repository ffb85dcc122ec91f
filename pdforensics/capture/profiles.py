"""The capture profiles: what `capture`, `snapshot`, `watch` and `doctor` collect by default.

One table, read by the four commands (their option defaults) and by the workflows that run
them (app/); a command line changes a profile only through ``Collect``, the options every
capturing command shares. The manifest records the profile's name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pdforensics.capture.planner import PlanOptions
    from pdforensics.capture.run import CaptureOptions

ProfileName = Literal["full", "snapshot", "watch", "doctor"]
#: py-spy dumps per process when a profile does not fix it: as many as samples, at most 3
MAX_DEFAULT_DUMPS = 3


@dataclass(frozen=True)
class Collect:
    """What one capture collects: a profile's defaults, as the command line changed them."""

    deadline_s: float
    samples: int
    interval_s: float
    stacks: bool
    stack_dumps: int | None  # None: as many as samples, at most MAX_DEFAULT_DUMPS
    probes: bool  # /health_generate on every server

    @property
    def dumps(self) -> int:
        return self.stack_dumps or min(self.samples, MAX_DEFAULT_DUMPS)


@dataclass(frozen=True)
class Profile:
    """One kind of capture: its defaults, and whether doctor's probes run with it."""

    name: ProfileName
    defaults: Collect
    doctor: bool = False  # doctor's host probes (collectors/doctor.py)
    purpose: str = ""

    def collect(self, **changes: Any) -> Collect:
        """The profile's defaults with the given fields changed (None: keep the default)."""
        given = {k: v for k, v in changes.items() if v is not None}
        return dataclasses.replace(self.defaults, **given)

    def plan(self, collect: Collect | None = None, **more: Any) -> PlanOptions:
        """The planner's options for this profile (``more``: PlanOptions fields beyond Collect)."""
        from pdforensics.capture.planner import PlanOptions

        c = collect or self.defaults
        return PlanOptions(samples=max(1, c.samples), interval_s=c.interval_s, stacks=c.stacks,
                           stack_dumps=c.dumps, probes=c.probes,
                           doctor=more.pop("doctor", self.doctor), **more)

    def options(self, out_dir: Path, collect: Collect | None = None, *, archive: bool = False,
                accept_new_host_keys: bool = False, **plan: Any) -> CaptureOptions:
        """The capture's options: where it goes, its deadline, its plan, the profile's name."""
        from pdforensics.capture.run import CaptureOptions

        c = collect or self.defaults
        return CaptureOptions(out_dir=out_dir, deadline_s=c.deadline_s, profile=self.name,
                              archive=archive, accept_new_host_keys=accept_new_host_keys,
                              plan=self.plan(c, **plan))


PROFILES: dict[ProfileName, Profile] = {p.name: p for p in (
    Profile("full", Collect(deadline_s=60.0, samples=3, interval_s=2.0, stacks=True,
                            stack_dumps=None, probes=True),
            purpose="`capture` during a wedge: everything, 3 dumps spanning >= 10 s per process"),
    Profile("snapshot", Collect(deadline_s=60.0, samples=2, interval_s=1.5, stacks=False,
                                stack_dumps=1, probes=True),
            purpose="`snapshot` from cron: light, no stacks unless asked, filed into the store"),
    Profile("watch", Collect(deadline_s=60.0, samples=3, interval_s=2.0, stacks=True,
                             stack_dumps=None, probes=True),
            purpose="the capture `watch` takes once a wedge holds: the full capture"),
    Profile("doctor", Collect(deadline_s=45.0, samples=1, interval_s=1.0, stacks=False,
                              stack_dumps=1, probes=True), doctor=True,
            purpose="`doctor`: one /metrics sample, no stacks of the servers, doctor's probes"),
)}
