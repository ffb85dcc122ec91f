"""Secrets out of a pod's JSON before it is written: env values and command-line flag values
go through the same allowlist as /proc environ and cmdline."""

from __future__ import annotations

import json
from typing import Any

from pdforensics.redact.redactor import Redactor


def scrub_pod_json(data: bytes, redactor: Redactor) -> bytes:
    """The pod (or pod list) JSON with env values and flag values redacted; unreadable JSON
    is returned as it is (the writer's text detectors still run on it)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    if not isinstance(doc, dict):
        return data
    items: list[Any] = doc["items"] if isinstance(doc.get("items"), list) else [doc]
    for item in items:
        spec = item.get("spec") if isinstance(item, dict) else None
        if not isinstance(spec, dict):
            continue
        for key in ("containers", "initContainers", "ephemeralContainers"):
            for c in spec.get(key) or []:
                if isinstance(c, dict):
                    _scrub_container(c, redactor)
    return json.dumps(doc, indent=1).encode()


def _scrub_container(c: dict[str, Any], redactor: Redactor) -> None:
    for env in c.get("env") or []:
        if isinstance(env, dict) and isinstance(env.get("value"), str) and isinstance(env.get("name"), str):
            block = redactor.environ(f"{env['name']}={env['value']}".encode())
            env["value"] = block.decode("utf-8", "replace").partition("=")[2]
    for key in ("command", "args"):
        argv = c.get(key)
        if isinstance(argv, list) and all(isinstance(a, str) for a in argv) and argv:
            joined = redactor.cmdline("\0".join(argv).encode())
            c[key] = joined.decode("utf-8", "replace").split("\0")
