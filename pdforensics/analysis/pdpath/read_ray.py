"""Ray's report of an actor that died (ray.exceptions.RayActorError, ActorDiedError, and a task
error wrapping one; ray python/ray/exceptions.py ActorDiedError): the exception line says the
task's actor died; after the actor's fields (class_name, actor_id, pid, name, ...) the line
"The actor is dead because ..." says why (killed by ``ray.kill``, its worker process died, with
Ray's exit type and detail). That line is the cause, the exception line its consequence; the
actor's ``name`` (else its ``pid``) is the one to look at.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.linescan import first_lines_with, split_lines
from pdforensics.parsers.logprefix import strip_prefixes

_BECAUSE = "The actor is dead because"
_DIED = ("RayActorError", "ActorDiedError")
_FIELD = linear.compile(r"^\s*(name|pid): (\S{1,200})\s*$")
_ABOVE = 16  # the exception line is at most this many lines above the reason
_MAX = 5


@reader("ray_actor_died")
def ray_clues(src: Source) -> Iterator[Clue]:
    """Each actor's reason for dying (a cause) and the exception that reported it."""
    if _BECAUSE not in src.text:
        return
    lines = split_lines(src.text)
    for no, line in first_lines_with(src.text, (_BECAUSE,), _MAX):
        above = [(k, strip_prefixes(lines[k - 1]).text) for k in range(max(1, no - _ABOVE), no)]
        fields: dict[str, str] = {m.group(1): m.group(2) for _k, t in above
                                  if (m := _FIELD.match(t)) is not None}
        died = next(((k, t) for k, t in reversed(above) if any(d in t for d in _DIED)), None)
        yield Clue(key="RAY_ACTOR_DEAD", label="cause", text=strip_prefixes(line).text.strip()[:500],
                   source=src.path, line=no, role=src.role, host=src.host, wedge=False,
                   suspect=fields.get("name") or (f"pid {fields['pid']}" if "pid" in fields
                                                   else None), strength=3,
                   why="Ray says why the actor died (killed, or its worker process gone)")
        if died is not None:
            yield Clue(key="RAY_ACTOR_DIED", label="consequence", text=died[1].strip()[:500],
                       source=src.path, line=died[0], role=src.role, host=src.host,
                       wedge=False, strength=2,
                       why="Ray's exception for a task whose actor died: the reason it gives "
                           f"below (line {no}) is the cause")
