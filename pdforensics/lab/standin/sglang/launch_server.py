"""`python -m sglang.launch_server`: the lab's stand-in SGLang server."""

from __future__ import annotations

import sys

from sglang.srt.entrypoints.http_server import launch_server
from sglang.srt.server_args import parse_server_args

if __name__ == "__main__":
    launch_server(parse_server_args(sys.argv[1:]))
