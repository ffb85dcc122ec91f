"""Durations as an operator types them (``90s``, ``10m``, ``1h30m``): --since, --history."""

from __future__ import annotations

from pdforensics import linear
from pdforensics.errors import ConfigError

__all__ = ["parse_duration"]

_DURATION = linear.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> float:
    """``2h``, ``90m``, ``1h30m``, ``45s`` or a plain number of seconds -> seconds."""
    s = text.strip().lower()
    try:
        value = float(s)
    except ValueError:
        pos, value = 0, 0.0
        for m in _DURATION.finditer(s):
            if m.start() != pos:
                break
            value += float(m.group(1)) * _UNIT_S[m.group(2)]
            pos = m.end()
        if pos != len(s) or not s:
            raise ConfigError(f"bad duration {text!r}: use e.g. 30s, 10m, 2h, 1h30m") from None
    if value <= 0:
        raise ConfigError(f"duration {text!r} must be > 0")
    return value
