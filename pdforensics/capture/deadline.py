"""The capture's deadline: one object, made once from --deadline, that every part of a capture
asks (the hosts' channels, the connection, the retry, the request-log window, the sidecars, the
wait for the hosts) and that keeps every safety margin in one place.

The margins, from the end backwards: a job's own timeout ends JOB_MARGIN_S before the deadline
(the remote `timeout -k 2` kill and the transfer of what arrived); no job or sidecar query starts
in the last CLOSING_S; a retry needs its timeout plus RETRY_MARGIN_S; the request-log window
leaves REQUEST_LOG_RESERVE_S for the restore and the log reads; a pod's kubectl read keeps
SIDECAR_MARGIN_S; the capture waits JOIN_GRACE_S past the end for its hosts to stop, and, in
its finally, up to RESTORE_WAIT_S for a request-log switch already in flight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

CLOSING_S = 1.0
JOB_MARGIN_S = 4.0
RETRY_MARGIN_S = JOB_MARGIN_S + 4.0
REQUEST_LOG_RESERVE_S = 16.0  # the restore (7 s at most), then the log reads
REQUEST_LOG_SLACK_S = 4.0  # what --request-log must leave beyond that, checked before the capture
SIDECAR_MARGIN_S = 3.0
JOIN_GRACE_S = 1.0
RESTORE_WAIT_S = 8.0  # past the end: a request-log switch-on or restore already in flight
MIN_TIMEOUT_S = 1.0  # no command runs with less time than this


@dataclass(frozen=True)
class Deadline:
    """When the capture must be over, on the monotonic clock, and the budget it was given."""

    end: float
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def left(self) -> float:
        """Seconds until the end (negative once past it)."""
        return self.end - time.monotonic()

    def closed(self) -> bool:
        """No new job or query starts any more (the last CLOSING_S)."""
        return self.left() <= CLOSING_S

    def start_by(self) -> float:
        """The monotonic time by which anything that must start (a host's session runner) has."""
        return self.end - CLOSING_S

    def connect_timeout(self, wanted: float) -> float:
        """A host's connection: its own timeout, within what is left before closing."""
        return max(MIN_TIMEOUT_S, min(wanted, self.left() - CLOSING_S))

    def job_timeout(self, wanted: float) -> float:
        """A job's timeout: its source's own, cut so that it ends JOB_MARGIN_S before the end."""
        return max(MIN_TIMEOUT_S, min(wanted, self.left() - JOB_MARGIN_S))

    def allows_retry(self, timeout_s: float) -> bool:
        """Room for one more run of a job with this timeout, and the margin after it."""
        return self.left() >= timeout_s + RETRY_MARGIN_S

    def sidecar_timeout(self) -> float:
        """What a sidecar's next query may take (below MIN_TIMEOUT_S: do not start it)."""
        return self.left() - SIDECAR_MARGIN_S

    def window_left(self) -> float:
        """How long a request-log window may still last (the restore and log reads after it)."""
        return self.left() - REQUEST_LOG_RESERVE_S

    def wait_until(self) -> float:
        """How long (monotonic) the capture waits for its hosts to stop."""
        return self.end + JOIN_GRACE_S


def window_fits(window_s: float, deadline_s: float) -> bool:
    """Whether a --request-log window fits a --deadline, its restore and log reads included."""
    return window_s + REQUEST_LOG_RESERVE_S + REQUEST_LOG_SLACK_S <= deadline_s
