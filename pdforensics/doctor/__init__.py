"""`pdforensics doctor`: is the cluster ready to be diagnosed when the next wedge comes?

A light capture (the snapshot profile plus a few probes, see probes.py) runs through the
capture's own transport, discovery and planner; the checks (checks_*.py) then read the
bundle, and each says ok, warn or fail with its evidence and fix (model.py)."""

from pdforensics.doctor.model import Check, DoctorReport

__all__ = ["Check", "DoctorReport"]
