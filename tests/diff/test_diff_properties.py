"""Properties: a config never differs from itself; A->B is B->A reversed; flags never crash."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pdforensics.catalog import load_shipped_catalog
from pdforensics.diff import diff_states, parse_flags
from pdforensics.diff.state import ConfigState, HostConfig, ServiceConfig

CATALOG = load_shipped_catalog()
NAMES = st.sampled_from(["--tp-size", "--log-level", "--mem-fraction-static", "--enable-metrics",
                         "--chunked-prefil-size", "--schedule-policy", "--watchdog-timeout"])
VALUES = st.one_of(st.none(), st.sampled_from(["1", "2", "0.85", "info", "debug", "lpm", "300"]))
ENVS = st.sampled_from(["SGLANG_DISAGGREGATION_WAITING_TIMEOUT", "NCCL_DEBUG", "PATH",
                        "SGLANG_NO_SUCH", "CUDA_VISIBLE_DEVICES", "HOME"])


def state(flags: dict[str, str | None], env: dict[str, str], packages: dict[str, str]) -> ConfigState:
    svc = ServiceConfig(scope="h/decode", host="h", role="decode", kind="server", port=30001,
                        metrics_port=None, tp_size=2, dp_size=1, ranks=("TP0", "TP1"), flags=flags,
                        env=env, sglang_version="0.5.23", unit=None, unit_files=None)
    host = HostConfig(name="h", reachable=True, kernel="6.1", driver="570", cuda="12.8",
                      packages=packages, services=(svc,))
    return ConfigState(bundle="x", cluster="c", taken_at=0.0, hosts=(host,))


configs = st.builds(state, st.dictionaries(NAMES, VALUES, max_size=6),
                    st.dictionaries(ENVS, st.sampled_from(["0", "1", "300", "WARN"]), max_size=5),
                    st.dictionaries(st.sampled_from(["sglang", "torch", "numpy"]),
                                    st.sampled_from(["1.0", "2.0"]), max_size=3))


@settings(max_examples=150, deadline=None)
@given(configs)
def test_no_change_against_itself(s: ConfigState) -> None:
    assert diff_states(s, s, CATALOG).changes == ()


@settings(max_examples=150, deadline=None)
@given(configs, configs)
def test_reverse_diff_swaps_before_and_after(a: ConfigState, b: ConfigState) -> None:
    ab = {c.ident: c for c in diff_states(a, b, CATALOG).changes}
    ba = {c.ident: c for c in diff_states(b, a, CATALOG).changes}
    assert set(ab) == set(ba)
    for ident, c in ab.items():
        r = ba[ident]
        assert (c.before, c.after) == (r.after, r.before)
        assert (c.score, c.note) == (r.score, r.note)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=12))
def test_parse_flags_never_crashes(argv: list[str]) -> None:
    flags = parse_flags(argv, CATALOG)
    assert all(k.startswith("-") for k in flags)
