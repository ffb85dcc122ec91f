"""Prefill and decode must agree on model, transfer backend, KV layout and version."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pdforensics.analysis.findings import Evidence, Finding, Need, rule
from pdforensics.analysis.rules.context import Context
from pdforensics.catalog.cmdline import flag_value
from pdforensics.errors import ParseError
from pdforensics.parsers.ss import parse_listening
from pdforensics.views.loaded import ServiceView

# (what, flag, server_info key, SGLang default, critical when different)
CHECKS: tuple[tuple[str, str, str, str | None, bool], ...] = (
    ("model path", "--model-path", "model_path", None, True),
    ("model revision", "--revision", "revision", None, True),
    ("transfer backend", "--disaggregation-transfer-backend",
     "disaggregation_transfer_backend", "mooncake", True),
    ("page size", "--page-size", "page_size", "1", True),
    ("kv cache dtype", "--kv-cache-dtype", "kv_cache_dtype", "auto", True),
    ("tp size", "--tp-size", "tp_size", "1", False),
    ("dp size", "--dp-size", "dp_size", "1", False),
)
DEFAULT_BOOTSTRAP_PORT = 8998


def _value(svc: ServiceView, flag: str, key: str, default: str | None) -> tuple[str | None, str]:
    info = svc.server_info()
    if isinstance(info, dict) and info.get(key) is not None:
        return str(info[key]), "/server_info"
    argv = svc.cmdline
    v = flag_value(argv, flag)
    if v is None and flag == "--tp-size":
        v = flag_value(argv, "--tp")
    if v is not None:
        return v, "cmdline"
    return (default, "default") if argv else (None, "")


def _version(ctx: Context, svc: ServiceView) -> tuple[str | None, str]:
    v = svc.version()
    if v:
        return v, "/server_info"
    host = next((h for h in ctx.capture.hosts if h.name == svc.host), None)
    if host is not None and host.packages.get("sglang"):
        return host.packages["sglang"], "pip freeze"
    return None, ""


def _listening(ctx: Context, host: str) -> set[int] | None:
    entry = next((e for e in ctx.capture.results if e.host == host and e.source == "ss_listen"
                  and e.ok), None)
    if entry is None:
        return None
    try:
        table = parse_listening(ctx.capture.bundle.text(entry))
    except ParseError:
        return None
    return {r.local.port for r in table.rows if r.local.port is not None}


def _bootstrap_trouble(pre: ServiceView, dec: ServiceView) -> list[Evidence | str]:
    """Signs that bootstrapping fails: failed-bootstrap counters, bootstrap timeouts."""
    out: list[Evidence | str] = []
    for svc in (pre, dec):
        if svc.good_samples and svc.good_samples[-1].snapshot is not None:
            v = svc.good_samples[-1].snapshot.value_sum("sglang:num_bootstrap_failed_reqs_total")
            if v:
                out.append(Evidence(svc.host, f"{svc.role}:{svc.port} /metrics",
                                    f"num_bootstrap_failed_reqs_total {v:g}"))
        for h in svc.log_hits:
            if h.key in ("KV_BOOTSTRAP_TIMEOUT", "PREFILL_BOOTSTRAP_FAILED"):
                out.append(Evidence(svc.host, f"{svc.role} log", f"{h.key} x{h.count}"))
    return out


#: Spellings SGLang itself turns into another value: 0.5.23 starts a `mooncake_tcp` server as
#: `mooncake` with MC_FORCE_TCP=1 ("disaggregation transfer backend 'mooncake_tcp' -> mooncake"),
#: and its /server_info says mooncake; the other side's command line still says mooncake_tcp.
ALIASES = {"mooncake_tcp": "mooncake"}


def _same(a: str, b: str) -> bool:
    def canon(v: str) -> str:
        v = v.strip().rstrip("/").lower()
        return ALIASES.get(v, v)

    return canon(a) == canon(b)


@rule("PD_CONFIG_MISMATCH", needs=(Need.PD,), rank=70)
def pd_config_mismatch(ctx: Context) -> Iterator[Finding]:
    """Prefill and decode disagree where they must agree."""
    listening_on: dict[str, set[int] | None] = {}  # host -> its listening ports, read once
    for pre in ctx.servers("prefill"):
        if pre.cmdline and pre.host not in listening_on:
            listening_on[pre.host] = _listening(ctx, pre.host)
        for dec in ctx.servers("decode"):
            ev: list[Evidence | str] = []
            critical = False
            rows: list[tuple[str, Any, Any, bool]] = []
            for what, flag, key, default, crit in CHECKS:
                (pv, ps), (dv, ds) = (_value(pre, flag, key, default),
                                      _value(dec, flag, key, default))
                if pv is None or dv is None or _same(pv, dv):
                    continue
                rows.append((what, f"{pv} ({ps})", f"{dv} ({ds})", crit))
            (pv, ps), (dv, ds) = _version(ctx, pre), _version(ctx, dec)
            if pv and dv and pv != dv:
                rows.append(("sglang version", f"{pv} ({ps})", f"{dv} ({ds})", False))
            for what, a, b, crit in rows:
                critical = critical or crit
                ev.append(f"{what}: prefill {pre.label} {a} vs decode {dec.label} {b}")
            port = flag_value(pre.cmdline, "--disaggregation-bootstrap-port")
            try:
                bport = int(port) if port else DEFAULT_BOOTSTRAP_PORT
            except ValueError:
                bport = DEFAULT_BOOTSTRAP_PORT
            listening = listening_on[pre.host] if pre.cmdline else None
            closed = listening is not None and bport not in listening
            trouble = _bootstrap_trouble(pre, dec) if closed else []
            if closed and trouble:
                critical = True
                ev.append(Evidence(pre.host, "ss -ltn",
                                   f"bootstrap port {bport} is not listening on the prefill "
                                   "host: decode cannot bootstrap"))
                ev.extend(trouble)
            if not ev:
                if closed:
                    yield Finding(
                        "PD_CONFIG_MISMATCH", "info",
                        f"prefill {pre.label}: bootstrap port {bport} not seen listening",
                        (Evidence(pre.host, "ss -ltn", f"no listener on port {bport} in the "
                                  "host's network namespace; no bootstrap failure is recorded, "
                                  "so it may listen in another namespace (container)"),),
                        "Check that decode reaches the prefill bootstrap port "
                        f"(curl http://{pre.address}:{bport}/ from the decode host).",
                        section="config")
                continue
            yield Finding(
                "PD_CONFIG_MISMATCH", "critical" if critical else "warning",
                f"prefill {pre.label} and decode {dec.label} disagree: "
                + ", ".join([r[0] for r in rows[:4]] + (["bootstrap port"] if critical
                                                          and closed and trouble else [])),
                tuple(ev),
                "Start prefill and decode with the same model, revision, transfer backend, "
                "page size and KV dtype (and the same sglang version); make the prefill "
                "bootstrap port reachable from decode.",
                section="config")
