"""Consistency across the cluster: the same sglang, torch, NCCL and driver on every host
of a role (and between prefill and decode), and the prefill/decode settings that must agree."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pdforensics.catalog.cmdline import flag_value
from pdforensics.doctor.checks_gpu import host_driver
from pdforensics.doctor.inputs import DoctorInput
from pdforensics.doctor.model import CLUSTER, Check, fail, ok, warn
from pdforensics.doctor.safeguards_check import server_version
from pdforensics.views.loaded import HostView, ServiceView

PD_ROLES = ("prefill", "decode")
# setting key, flag, SGLang's default when absent, must it agree (fail) or only should (warn)
PD_SETTINGS = (
    ("pd_page_size", "--page-size", "1", True),
    ("pd_kv_dtype", "--kv-cache-dtype", "auto", True),
    ("pd_transfer_backend", "--disaggregation-transfer-backend", "mooncake", True),
    ("pd_parallel_layout", None, None, False),
)
Getter = Callable[[HostView, ServiceView], str | None]


def _package(name: str) -> Getter:
    def get(h: HostView, s: ServiceView) -> str | None:
        return next((v for k, v in h.packages.items() if k.lower().startswith(name)), None)
    return get


def consistency_checks(d: DoctorInput) -> Iterator[Check]:
    getters: tuple[tuple[str, str, Getter], ...] = (
        ("same_sglang_version", "sglang", server_version),
        ("same_torch_version", "torch", _package("torch")),
        ("same_nccl_version", "NCCL", _package("nvidia-nccl")),
        ("same_driver_version", "driver", lambda h, s: host_driver(d, h.name)),
    )
    for key, what, get in getters:
        check = _same(d, key, what, get)
        if check is not None:
            yield check
    yield from _pd_settings(d)


def _servers(d: DoctorInput) -> Iterator[tuple[HostView, ServiceView]]:
    for h in d.hosts:
        for s in h.services:
            if s.kind != "router" and s.role in (*PD_ROLES, "unified"):
                yield h, s


def _same(d: DoctorInput, key: str, what: str, get: Getter) -> Check | None:
    """One check per key: every server of a role, and prefill against decode, run the same."""
    seen = {(h.name, s.role): v for h, s in _servers(d) if (v := get(h, s)) is not None}
    if not seen:
        return None
    listing = ", ".join(f"{host} ({role}) {v}" for (host, role), v in sorted(seen.items()))
    for role in {r for _, r in seen}:
        values = {v for (_, r), v in seen.items() if r == role}
        if len(values) > 1:
            return fail(key, CLUSTER, f"{role} hosts run different {what} versions: {listing}",
                        f"deploy one {what} version to every {role} host")
    pd = {v for (_, r), v in seen.items() if r in PD_ROLES}
    if len(pd) > 1:
        return fail(key, CLUSTER, f"prefill and decode run different {what} versions: {listing}",
                    f"deploy the same {what} version to prefill and decode: KV transfer between "
                    "releases is not guaranteed to be compatible")
    return ok(key, CLUSTER, f"one {what} version: {listing}")


def _layout(s: ServiceView) -> str:
    return f"tp {flag_value(s.cmdline, '--tp-size') or '1'}, dp {flag_value(s.cmdline, '--dp-size') or '1'}"


def _pd_settings(d: DoctorInput) -> Iterator[Check]:
    by_role: dict[str, list[tuple[str, ServiceView]]] = {}
    for h, s in _servers(d):
        if s.role in PD_ROLES and s.cmdline:
            by_role.setdefault(s.role, []).append((h.name, s))
    if not all(by_role.get(r) for r in PD_ROLES):
        return
    for key, flag, default, must in PD_SETTINGS:
        values = {(host, s.role): (_layout(s) if flag is None else flag_value(s.cmdline, flag) or default)
                  for r in PD_ROLES for host, s in by_role[r]}
        listing = ", ".join(f"{host} ({role}) {v}" for (host, role), v in sorted(values.items()))
        name = flag or "--tp-size/--dp-size"
        if len(set(values.values())) <= 1:
            yield ok(key, CLUSTER, f"{name} agrees: {listing}")
        elif must:
            yield fail(key, CLUSTER, f"{name} differs between prefill and decode: {listing}",
                       f"give prefill and decode the same {name}: KV pages cannot be transferred "
                       "between different layouts")
        else:
            yield warn(key, CLUSTER, f"{name} differs between prefill and decode: {listing}",
                       "make sure the transfer backend supports this heterogeneous TP/DP pairing "
                       "(older releases need equal layouts)")
