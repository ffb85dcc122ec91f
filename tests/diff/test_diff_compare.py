"""Semantic diff of two synthetic captures: what counts as a change, ranking, catalog notes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pdforensics.catalog import load_shipped_catalog
from pdforensics.diff import diff_bundles, diff_json, format_diff_text
from tests.support.fleet import SynthHost, SynthService, write_capture

T0 = 1_800_000_000.0
PREFILL = ("--model-path", "/models/DeepSeek-V3", "--disaggregation-mode", "prefill",
           "--tp-size", "2", "--port", "30000", "--mem-fraction-static", "0.85",
           "--enable-metrics")
ENV = (("SGLANG_DISAGGREGATION_WAITING_TIMEOUT", "300"), ("NCCL_DEBUG", "WARN"),
       ("PATH", "/usr/bin"), ("HF_TOKEN", "<redacted:0123456789>"))
PKGS = (("sglang", "0.5.23"), ("torch", "2.9.1"), ("requests", "2.32.3"))
UNIT = """# /etc/systemd/system/sglang-prefill.service
[Service]
ExecStart=/usr/bin/python3 -m sglang.launch_server
"""
CATALOG = load_shipped_catalog()


def host(flags=PREFILL, env=ENV, packages=PKGS, version="0.5.23", tp=2, unit_file=UNIT,
         port=30000, **kw) -> tuple[SynthHost, SynthHost]:
    svc = SynthService("prefill", port, tuple(flags), tuple(env), version=version, tp=tp,
                       unit="sglang-prefill.service", unit_file=unit_file)
    router = SynthService("router", 8000, ("--pd-disaggregation", "--policy", "cache_aware"),
                          (("PATH", "/usr/bin"),), version=None, tp=1)
    return SynthHost("prefill-0", (svc,), tuple(packages), **kw), SynthHost("router-0", (router,))


class Pair:
    def __init__(self, root: Path):
        self.root = root
        self.n = 0

    def __call__(self, a: tuple[SynthHost, ...], b: tuple[SynthHost, ...], **kw):
        self.n += 1
        pa = write_capture(self.root, a, T0, name=f"a{self.n}")
        pb = write_capture(self.root, b, T0 + 600, name=f"b{self.n}", first_pid=5000)
        return diff_bundles(pa, pb, **kw)


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    return Pair(tmp_path)


def one(d, kind: str, key: str):
    found = [c for c in d.changes if c.kind == kind and c.key == key]
    assert len(found) == 1, [(c.kind, c.key) for c in d.changes]
    return found[0]


def test_same_config_different_pids_and_times_is_no_change(pair: Pair) -> None:
    d = pair(host(), host())
    assert d.changes == ()
    assert set(d.unchanged_hosts) == {"prefill-0", "router-0"}


def test_volatile_env_is_ignored(pair: Pair) -> None:
    env_b = (*ENV, ("INVOCATION_ID", "abc"), ("SYSTEMD_EXEC_PID", "77"), ("OLDPWD", "/tmp"))
    d = pair(host(), host(env=env_b))
    assert d.changes == ()


def test_reordered_and_reformatted_flags_are_no_change(pair: Pair) -> None:
    b = ("--enable-metrics", "--mem-fraction-static=0.85", "--port=30000", "--tp-size", "2",
         "--disaggregation-mode", "prefill", "--model-path", "/models/DeepSeek-V3")
    assert pair(host(), host(flags=b)).changes == ()


def test_flag_changed_added_removed(pair: Pair) -> None:
    b = tuple(x if x != "0.85" else "0.9" for x in PREFILL if x != "--enable-metrics")
    b += ("--schedule-policy", "lpm")
    d = pair(host(), host(flags=b))
    mem = one(d, "flag", "--mem-fraction-static")
    assert (mem.before, mem.after, mem.change) == ("0.85", "0.9", "changed")
    assert mem.scope == "prefill-0/prefill" and mem.relevance == "high"
    flag = CATALOG.flag("--mem-fraction-static")
    assert flag is not None and mem.default == flag.default and mem.help == flag.help
    pol = one(d, "flag", "--schedule-policy")
    assert (pol.before, pol.after, pol.change) == (None, "lpm", "added")
    met = one(d, "flag", "--enable-metrics")
    assert (met.before, met.after, met.change) == (True, None, "removed")


def test_env_added_removed_changed_with_catalog_default(pair: Pair) -> None:
    env_b = [(k, "600" if k == "SGLANG_DISAGGREGATION_WAITING_TIMEOUT" else v) for k, v in ENV
             if k != "NCCL_DEBUG"] + [("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "512")]
    d = pair(host(), host(env=env_b))
    wt = one(d, "env", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT")
    assert (wt.before, wt.after, wt.default) == ("300", "600", 300)
    new = one(d, "env", "SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES")
    assert new.change == "added" and new.default == 0 and "Mooncake" in (new.help or "")
    nccl = one(d, "env", "NCCL_DEBUG")
    assert (nccl.before, nccl.after, nccl.change) == ("WARN", None, "removed")
    assert all(c.relevance == "high" for c in (wt, new, nccl))


def test_redacted_values_compare_by_marker(pair: Pair) -> None:
    same = pair(host(), host())
    assert not [c for c in same.changes if c.key == "HF_TOKEN"]
    env_b = [(k, "<redacted:abcdefabcd>" if k == "HF_TOKEN" else v) for k, v in ENV]
    tok = one(pair(host(), host(env=env_b)), "env", "HF_TOKEN")
    assert (tok.before, tok.after) == ("<redacted:0123456789>", "<redacted:abcdefabcd>")


def test_unknown_names_are_marked(pair: Pair) -> None:
    d = pair(host(), host(flags=(*PREFILL, "--chunked-prefil-size", "4096"),
                          env=(*ENV, ("SGLANG_NO_SUCH_KNOB", "1"))))
    typo = one(d, "flag", "--chunked-prefil-size")
    assert typo.note == f"unknown to sglang {CATALOG.version}" and typo.default is None
    env = one(d, "env", "SGLANG_NO_SUCH_KNOB")
    assert env.note == f"unknown to sglang {CATALOG.version}"


def test_setting_written_out_at_its_default_ranks_low(pair: Pair) -> None:
    d = pair(host(), host(flags=(*PREFILL, "--log-level", "info"),
                          env=(*ENV, ("SGLANG_DISAGGREGATION_HEARTBEAT_MAX_FAILURE", "2"))))
    for c in d.changes:
        assert c.note == "same as sglang's default" and c.relevance == "low", c


def test_ranking_puts_transfer_env_above_log_level(pair: Pair) -> None:
    d = pair(host(), host(flags=(*PREFILL, "--log-level", "debug"),
                          env=(*ENV, ("SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "512"))))
    assert [c.key for c in d.changes] == ["SGLANG_MOONCAKE_MAX_TRANSFER_BATCH_INDICES", "--log-level"]
    assert d.changes[0].relevance == "high" and d.changes[1].relevance == "low"


def test_packages_versions_kernel_driver(pair: Pair) -> None:
    pk = (("sglang", "0.5.24"), ("torch", "2.9.1"), ("requests", "2.32.4"), ("numpy", "2.1.0"))
    d = pair(host(), host(packages=pk, version="0.5.24", kernel="6.1.0-30-amd64",
                          driver="575.51.03", cuda="12.9"))
    assert one(d, "package", "sglang").after == "0.5.24"
    assert one(d, "package", "numpy").change == "added"
    assert one(d, "package", "requests").relevance == "low"
    assert one(d, "sglang_version", "sglang").before == "0.5.23"
    assert one(d, "kernel", "kernel").after == "6.1.0-30-amd64"
    assert one(d, "driver", "driver").after == "575.51.03"
    assert one(d, "cuda", "cuda").after == "12.9"
    ranked = [c.kind for c in d.changes]
    assert ranked.index("sglang_version") < ranked.index("driver") < ranked.index("kernel")
    # B runs another sglang than the catalog: the diff says so
    assert any("0.5.24" in n and CATALOG.version in n for n in d.notes)


def test_no_version_note_when_catalog_matches(pair: Pair) -> None:
    assert not [n for n in pair(host(), host()).notes if "catalog" in n]


def test_version_from_pip_freeze_when_server_info_hangs(pair: Pair) -> None:
    pk = (("sglang", "0.5.24"), ("torch", "2.9.1"), ("requests", "2.32.3"))
    d = pair(host(), host(version=None, packages=pk))
    assert one(d, "sglang_version", "sglang").after == "0.5.24"


def test_unit_dropin_with_env_is_high(pair: Pair) -> None:
    dropin = UNIT + ("# /etc/systemd/system/sglang-prefill.service.d/override.conf\n[Service]\n"
                     "Environment=SGLANG_DISAGGREGATION_WAITING_TIMEOUT=900\n")
    d = pair(host(), host(unit_file=dropin))
    c = one(d, "unit", "/etc/systemd/system/sglang-prefill.service.d/override.conf")
    assert c.change == "added" and "WAITING_TIMEOUT=900" in c.after


def test_layout_tp_size_and_missing_rank(pair: Pair) -> None:
    flags = tuple("4" if x == "2" else x for x in PREFILL)
    d = pair(host(), host(flags=flags, tp=4))
    assert one(d, "layout", "tp_size").after == 4
    assert one(d, "flag", "--tp-size").after == "4"
    assert one(d, "layout", "ranks").after == "TP0,TP1,TP2,TP3"


def test_service_moved_port(pair: Pair) -> None:
    d = pair(host(), host(port=30010))
    assert one(d, "layout", "port").after == 30010


def test_unreachable_host_is_a_note_not_removals(pair: Pair) -> None:
    p, r = host()
    d = pair((p, r), (replace(p, reachable=False), r))
    assert d.changes == ()
    assert any("prefill-0" in n and "unreachable" in n for n in d.notes)


def test_host_added(pair: Pair) -> None:
    p, r = host()
    extra = SynthHost("decode-1", (SynthService("decode", 30001, ("--disaggregation-mode", "decode")),))
    d = pair((p, r), (p, r, extra))
    assert one(d, "host", "decode-1").change == "added"


def test_env_not_captured_is_a_note(pair: Pair) -> None:
    d = pair(host(), host(env=()))
    assert not [c for c in d.changes if c.kind == "env"]
    assert any("environment not captured in B" in n for n in d.notes)


def test_json_shape(pair: Pair) -> None:
    d = pair(host(), host(flags=(*PREFILL, "--log-level", "debug")))
    doc = json.loads(json.dumps(diff_json(d)))
    assert {"a", "b", "changes"} <= set(doc)
    assert doc["a"].endswith("a1") and doc["b"].endswith("b1")
    change = doc["changes"][0]
    assert {"scope", "kind", "key", "before", "after", "relevance"} <= set(change)
    assert change == {**change, "scope": "prefill-0/prefill", "kind": "flag", "key": "--log-level",
                      "before": None, "after": "debug", "relevance": "low"}


def test_text_output_shows_before_after_default_help(pair: Pair) -> None:
    b = tuple(x if x != "0.85" else "0.9" for x in PREFILL)
    text = format_diff_text(pair(host(flags=(*PREFILL, "--watchdog-timeout", "300")),
                                 host(flags=(*b, "--watchdog-timeout", "60"))))
    assert "prefill-0/prefill" in text
    assert "[high] flag --mem-fraction-static: 0.85 -> 0.9" in text
    flag = CATALOG.flag("--mem-fraction-static")
    assert flag is not None and flag.help is not None and flag.help[:40] in text
    assert "flag --watchdog-timeout: 300 -> 60" in text and "default 300" in text


def test_no_changes_text(pair: Pair) -> None:
    assert "no configuration changes" in format_diff_text(pair(host(), host()))
