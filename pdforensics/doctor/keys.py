"""Every doctor check key: what it guards (when it fails or warns) and the fix. The keys are
stable (`--json`, `snapshot --doctor` diffs, `pdforensics explain`); a test walks the doctor's
sources and fails on a key emitted without an entry here. Safeguard keys come from the
catalog's safeguard table (`safeguard.<key>`)."""

from __future__ import annotations

from pdforensics.catalog.safeguard_table import SPECS

#: key -> (when it fails or warns: what the next capture would miss, the fix)
CHECKS: dict[str, tuple[str, str]] = {
    "ssh_login": ("fail: no SSH session (address, user, key, known_hosts)",
                  "make `ssh -i KEY USER@HOST true` work without a prompt"),
    "sudo": ("fail: the cluster file asks for `sudo = true` and `sudo -n` refuses",
             "NOPASSWD sudo for the capture user (timeout, py-spy, python3, nvidia-smi), or "
             "capture as root"),
    "host_probe": ("fail: the host probe did not run (no `python3`)",
                   "install python3 (doctor and the version collector need it)"),
    "capture_tools": ("fail: `timeout`, `ps` or `ss` not on the login PATH",
                      "install coreutils, procps, iproute2"),
    "curl": ("warn: `curl` missing (endpoints are read through it when sshd refuses port "
             "forwarding)", "install curl"),
    "ssh_max_sessions": ("warn: sshd's MaxSessions is at or below the capture's 6 channels",
                         "`MaxSessions 10` or more, reload sshd"),
    "clock_offset": ("warn: the host's clock is more than 1 s off this machine's",
                     "chrony / systemd-timesyncd (`timedatectl set-ntp true`)"),
    "pyspy_present": ("fail: py-spy (the cluster file's `py_spy`, default `py-spy`) is not found "
                      "for the login user", "install py-spy on the login PATH, or set "
                      "`py_spy = \"/path/to/py-spy\"` for the host"),
    "pyspy_attach": ("fail: py-spy cannot attach to the servers (ptrace_scope, CAP_SYS_PTRACE, "
                     "another uid, a container without SYS_PTRACE)",
                     "capture as root or with `sudo = true`, `setcap cap_sys_ptrace+ep` on "
                     "py-spy, `--cap-add SYS_PTRACE`, or a lower ptrace_scope"),
    "pyspy_native": ("warn: `py-spy dump --native` failed",
                     "a py-spy build with unwinding (the pip wheels for x86_64/aarch64 Linux)"),
    "gpu_readable": ("fail: nvidia-smi gave no GPU rows",
                     "install the driver utilities or set `nvidia_smi`; in containers mount the "
                     "driver (`NVIDIA_DRIVER_CAPABILITIES=utility`)"),
    "gpu_persistence": ("warn: persistence mode off on a GPU",
                        "`nvidia-smi -pm 1` or nvidia-persistenced"),
    "metrics_enabled": ("fail: the server runs without `--enable-metrics`, or its `/metrics` "
                        "gave no samples", "add `--enable-metrics`"),
    "router_metrics": ("fail: no router metrics port known, or it gave no samples",
                       "`--prometheus-port` on the router and `metrics_port` in the cluster file"),
    "log_source": ("fail: no log file or systemd unit known, or the log could not be read; "
                   "warn: the log reaches back less than 1 h (rotated)",
                   "`log_file` in the cluster file or a systemd unit; larger logrotate / "
                   "journald retention"),
    "request_logging": ("warn: `--log-requests` off (a stuck request's rid cannot be followed)",
                        "`--log-requests --log-requests-level 1` (rid and bootstrap room, not "
                        "the prompt)"),
    "same_sglang_version": ("fail: servers of one role, or prefill and decode, run different "
                            "sglang", "one release everywhere"),
    "same_torch_version": ("fail: servers run different torch", "one torch build"),
    "same_nccl_version": ("fail: servers run different `nvidia-nccl-*`", "one NCCL"),
    "same_driver_version": ("fail: hosts run different NVIDIA drivers", "one driver"),
    "pd_page_size": ("fail: `--page-size` differs between prefill and decode",
                     "the same value on both"),
    "pd_kv_dtype": ("fail: `--kv-cache-dtype` differs between prefill and decode",
                    "the same value on both"),
    "pd_transfer_backend": ("fail: `--disaggregation-transfer-backend` differs",
                            "the same backend on both"),
    "pd_parallel_layout": ("warn: `--tp-size`/`--dp-size` differ between prefill and decode",
                           "check the transfer backend supports the pairing"),
    "disk_room": ("fail under 1 GiB, warn under 5 GiB free where bundles and the store go",
                  "free space, move them, or lower retention"),
}
#: safeguards doctor leaves to another check (doctor/safeguards_check.COVERED)
_COVERED = frozenset({"log_requests", "log_requests_level"})


def all_checks() -> dict[str, tuple[str, str]]:
    """Every key doctor can emit, safeguards included."""
    out = dict(CHECKS)
    for spec in SPECS:
        if spec.key not in _COVERED:
            out[f"safeguard.{spec.key}"] = (
                f"{spec.title} ({spec.name}) switched off, too long, or not armed for this "
                "server's sglang release", f"set {spec.name} as `pdforensics catalog safeguards` "
                "shows for the release (doctor's evidence names the exact value)")
    return out
