"""A store filled with synthetic snapshots (see tests.support.fleet)."""

from __future__ import annotations

from pathlib import Path

from pdforensics.store.filing import file_into
from pdforensics.store.index import Snapshot, open_index
from tests.support.bundles import T0
from tests.support.fleet import SynthHost, SynthService, write_capture

__all__ = ["T0", "add", "cluster"]
BASE_FLAGS = ("--model-path", "/models/DeepSeek-V3", "--disaggregation-mode", "decode",
              "--tp-size", "2", "--port", "30001", "--enable-metrics")
BASE_ENV = (("SGLANG_DISAGGREGATION_WAITING_TIMEOUT", "300"), ("PATH", "/usr/bin"))


def cluster(flags: tuple[str, ...] = (), env: tuple[tuple[str, str], ...] = (),
            decode_reachable: bool = True) -> list[SynthHost]:
    router = SynthService("router", 8000, ("--pd-disaggregation",), (("PATH", "/usr/bin"),),
                          version=None, tp=1)
    prefill = SynthService("prefill", 30000, tuple(x.replace("decode", "prefill").replace(
        "30001", "30000") for x in BASE_FLAGS), BASE_ENV)
    decode = SynthService("decode", 30001, (*BASE_FLAGS, *flags), (*BASE_ENV, *env))
    return [SynthHost("router-0", (router,)), SynthHost("prefill-0", (prefill,)),
            SynthHost("decode-0", (decode,), reachable=decode_reachable)]


def add(store: Path, at: float, verdict: str | None, flags: tuple[str, ...] = (),
        env: tuple[tuple[str, str], ...] = (), name: str | None = None,
        decode_reachable: bool = True, cluster_name: str = "synth") -> Snapshot:
    """Write one synthetic capture into the store's bundles/ and index it."""
    with open_index(store) as index:
        path = write_capture(index.bundles, cluster(flags, env, decode_reachable), at,
                             cluster=cluster_name, verdict=verdict, name=name)
        return file_into(index, path, "snapshot")[0]
