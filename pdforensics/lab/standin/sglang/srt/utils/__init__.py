"""Stand-in of sglang.srt.utils."""

from sglang.srt.utils.common import broadcast_pyobj

__all__ = ["broadcast_pyobj"]
