"""The Events table of ``kubectl describe pod`` (Type, Reason, Age, From, Message): what the
kubelet and the scheduler did to a server's pod.

- ``Evicted`` (kubelet): the node took the pod away for a resource it ran out of, or a limit
  the pod passed (an EmptyDir volume over its size, ephemeral storage, memory pressure): the
  host's side, the cause of what follows.
- ``FailedScheduling``, ``FailedMount``, ``FailedCreatePodSandBox``, ``FailedAttachVolume``:
  the pod could not start on the node: the host's side, at start-up.
- ``Killing`` ("Stopping container x"), ``BackOff`` ("Back-off restarting failed container"):
  what follows from a failure (an eviction, a failed probe, a crash): consequences.
- A pod not running (``kubectl get pods``: Pending, CrashLoopBackOff, ...; describe's condition
  ``PodScheduled False``): a consequence, at start-up while it was never scheduled.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with, has_any, marks

#: a row: Type, Reason, Age (5s, 3m2s, <unknown>, "2m (x3 over 5m)"), From, Message
_ROW = linear.compile(r"^\s{0,8}(Warning|Normal)\s{1,20}([A-Za-z]{3,40})\s{1,20}(?:\S{1,20}"
                      r"(?: \(x\d{1,6} over \S{1,20}\))?)\s{1,20}(\S{1,80})\s{2,}(\S.{0,1000})$")
_HOST_CAUSES = ("Evicted", "FailedScheduling", "FailedMount", "FailedCreatePodSandBox",
                "FailedAttachVolume")
_STARTING = ("FailedScheduling", "FailedMount", "FailedCreatePodSandBox", "FailedAttachVolume")
_FOLLOWS = ("Killing", "BackOff")
_MARKS = marks(*(f" {r} " for r in (*_HOST_CAUSES, *_FOLLOWS)), "PodScheduled", " Pending ",
               "CrashLoopBackOff")
#: a pod not running: ``kubectl get pods``' row ("name  0/1  Pending  0  15m"), describe's
#: "PodScheduled   False" condition
_NOT_RUNNING = linear.compile(r"^\S{1,253}\s{1,40}\d{1,3}/\d{1,3}\s{1,40}(Pending|CrashLoopBackOff|"
                              r"Error|ContainerCreating|Init:\S{1,40})\s{1,40}\d")
_UNSCHEDULED = linear.compile(r"^\s{1,8}PodScheduled\s{1,40}False\s*$")
_MAX_ROWS = 200


@reader("k8s_events")
def k8s_event_clues(src: Source) -> Iterator[Clue]:
    """Causes on the host (evicted, not scheduled, a volume not mounted) and what followed."""
    if not src.text or src.kind in ("metrics", "server_info", "load", "stacks", "goroutines"):
        return
    if not has_any(src.text, _MARKS):
        return
    yield from _not_running(src)
    for no, line in first_lines_with(src.text, ("Warning", "Normal"), _MAX_ROWS):
        m = _ROW.match(line)
        if m is None:
            continue
        kind, reason, source, message = m.groups()
        if reason in _HOST_CAUSES and kind == "Warning":
            yield Clue(key=f"K8S_{reason.upper()}", label="cause", text=line.strip(),
                       source=src.path, line=no, host=src.host, role=src.role, side="host",
                       stage="startup" if reason in _STARTING else None, wedge=False,
                       strength=3, why=f"{source}: {reason}: the node's own report of what it "
                                       "did to the pod, and why")
        elif reason in _FOLLOWS:
            yield Clue(key=f"K8S_{reason.upper()}", label="consequence", text=line.strip(),
                       source=src.path, line=no, host=src.host, role=src.role, side="host",
                       wedge=False, strength=1,
                       why=f"{source}: {reason}: a container stopped or restarted because of "
                           "what failed before it")


def _not_running(src: Source) -> Iterator[Clue]:
    """A pod that is not running (pending, crash-looping) or not scheduled: a consequence, at
    start-up while it was never scheduled or still pending."""
    for no, line in first_lines_with(src.text, ("PodScheduled", " Pending ", "CrashLoopBackOff",
                                                " Error ", "ContainerCreating", " Init:"),
                                     _MAX_ROWS):
        m = _NOT_RUNNING.match(line)
        unscheduled = _UNSCHEDULED.match(line) is not None
        if m is None and not unscheduled:
            continue
        starting = unscheduled or m is not None and m.group(1) != "CrashLoopBackOff" \
            and m.group(1) != "Error"
        yield Clue(key="K8S_POD_NOT_RUNNING", label="consequence", text=line.strip(),
                   source=src.path, line=no, host=src.host, role=src.role,
                   stage="startup" if starting else None, wedge=False, strength=1,
                   why="the pod is not running" + (" (never scheduled, or still starting): "
                                                   "the scheduler's or kubelet's events say why"
                                                   if starting else ": its container failed"))


#: an operator's ``kubectl logs [-f] [-n NS] [-c C] POD`` pasted before the pod's log
_LOGS_OF = linear.compile(r"kubectl (?:-n \S{1,63} )?logs (?:(?:-f|--follow|-p|--previous|"
                          r"-[nc] \S{1,63}|--(?:namespace|container|tail|since)[= ]\S{1,63}) )*"
                          r"(?:pod/)?([a-z0-9][a-z0-9.-]{0,252})")


@reader("kubectl_logs_of")
def logs_of_pod(src: Source) -> Iterator[Clue]:
    """The pod whose log follows a pasted ``kubectl logs`` command (noise: it names where the
    lines after it come from, the suspect of a failure among them)."""
    for no, line in first_lines_with(src.text, ("kubectl logs", "kubectl -n "), 20):
        m = _LOGS_OF.search(line)
        if m is not None and m.group(1) not in ("f", "n", "c", "p"):
            yield Clue(key="LOGS_OF_POD", label="noise", text=line.strip()[:300],
                       source=src.path, line=no, host=src.host, suspect=m.group(1), strength=1,
                       why=f"the lines after it are the log of pod {m.group(1)}")
