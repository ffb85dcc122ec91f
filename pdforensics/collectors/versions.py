"""Versions: the server interpreter's packages, kernel."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, NORMAL, SLOW, Source, Target, register

# importlib.metadata lists distributions without importing them (no torch, no CUDA),
# in pip-freeze format, several times cheaper than `python -m pip freeze`.
FREEZE_SCRIPT = (
    "import importlib.metadata as m\n"
    "seen=set()\n"
    "for d in sorted(m.distributions(), key=lambda d: (d.metadata['Name'] or '').lower()):\n"
    "    n=d.metadata['Name']\n"
    "    if n and n.lower() not in seen:\n"
    "        seen.add(n.lower()); print(f'{n}=={d.version}')\n"
)


def _python(t: Target) -> str:
    assert t.process is not None
    first = t.process.args.split()[0] if t.process.args.split() else "python3"
    return first if "python" in first.rsplit("/", 1)[-1] else "python3"


PIP_FREEZE = register(Source(
    name="pip_freeze", description="packages of the server's own interpreter (pip freeze form)",
    scope="process", build=lambda host, t: (_python(t), "-c", FREEZE_SCRIPT),
    timeout_s=15, max_bytes=2 * MIB, priority=SLOW, parser="versions:parse_pip_freeze",
    sample="pip_freeze_sglang_host.txt", privileged=True,  # the service's venv is often not ours to read
))

UNAME = register(Source(
    name="uname", description="kernel version", scope="host",
    build=lambda host, t: ("uname", "-a"), timeout_s=5, max_bytes=64 * 1024, priority=NORMAL,
    parser="versions:parse_uname", sample="pip_uname_a.txt",
))
